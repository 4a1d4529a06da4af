"""Exception classes (``pyjax.errors``), named and worded as JAX's."""
from __future__ import annotations


class JAXTypeError(TypeError):
  pass


class JAXIndexError(IndexError):
  pass


class _JAXErrorMixin:
  _error_page = "https://docs.jax.dev/en/latest/errors.html"
  _module_name = "jax.errors"

  def _msg(self, message):
    name = type(self).__name__
    return f"{message}\nSee {self._error_page}#{self._module_name}.{name}"


def _describe(tracer):
  """'traced array with shape float32[3]', as JAX words it."""
  aval = getattr(tracer, "aval", None)
  if aval is None:
    return str(tracer)
  return f"traced array with shape {aval.str_short(short_dtypes=False)}"


def _shape(tracer):
  aval = getattr(tracer, "aval", None)
  return aval.str_short(short_dtypes=False) if aval is not None else "?"


class ConcretizationTypeError(_JAXErrorMixin, TypeError):
  def __init__(self, tracer=None, context=""):
    self.tracer = tracer
    super().__init__(self._msg(
        f"Abstract tracer value encountered where concrete value is expected: {_describe(tracer)}\n"
        f"{context}\n"))


class NonConcreteBooleanIndexError(_JAXErrorMixin, IndexError):
  def __init__(self, tracer=None):
    super().__init__(self._msg(
        f"Array boolean indices must be concrete; got {tracer}\n"))


class TracerArrayConversionError(_JAXErrorMixin, TypeError):
  def __init__(self, tracer=None, context=""):
    super().__init__(self._msg(
        f"The numpy.ndarray conversion method __array__() was called on {_describe(tracer)}"
        + (f"\n{context}" if context else "")))


class TracerBoolConversionError(ConcretizationTypeError):
  def __init__(self, tracer=None, context=""):
    TypeError.__init__(self, self._msg(
        f"Attempted boolean conversion of traced array with shape {_shape(tracer)}.\n{context}"))


class TracerIntegerConversionError(_JAXErrorMixin, TypeError):
  def __init__(self, tracer=None, context=""):
    super().__init__(self._msg(
        f"The __index__() method was called on traced array with shape {_shape(tracer)}\n{context}"))


class UnexpectedTracerError(_JAXErrorMixin, Exception):
  def __init__(self, msg):
    super().__init__(self._msg(msg))


class KeyReuseError(_JAXErrorMixin, RuntimeError):
  pass


class JaxRuntimeError(RuntimeError):
  """An error raised while executing a computation (also surfaces async failures)."""


def out_of_memory(exc, nbytes=None):
  """The JaxRuntimeError JAX raises when a buffer cannot be allocated (XLA's
  RESOURCE_EXHAUSTED), for the MemoryError ``exc`` NumPy raised."""
  if nbytes is None:
    shape, dtype = getattr(exc, "shape", None), getattr(exc, "dtype", None)
    if shape is not None and dtype is not None:
      n = dtype.itemsize
      for d in shape:
        n *= int(d)
      nbytes = n
  what = f"{nbytes} bytes" if nbytes is not None else "a buffer"
  err = JaxRuntimeError(f"RESOURCE_EXHAUSTED: Out of memory allocating {what}.")
  err.__cause__ = exc
  return err


class JaxprTypeError(TypeError):
  """Raised when a jaxpr fails its type check (as jax.errors.JaxprTypeError)."""


class MLIRError(Exception):
  """Named as jaxlib's ``jaxlib.mlir.ir.MLIRError``, which JAX raises when a program it
  traced cannot be lowered (e.g. a random sample shape or number of keys with a negative
  dimension: "Invalid type: ... invalid tensor dimension size").  Differs from JAX: pyjax
  has no MLIR; it raises this class with JAX's message when tracing such a program, so
  ``make_jaxpr`` of it raises too (JAX's succeeds and the error comes at lowering)."""


class InconclusiveDimensionOperation(Exception):
  """Raised for a dimension comparison that symbolic shapes cannot decide (as in JAX;
  pyjax has no symbolic shapes yet, so it is defined for ``except`` clauses that name it)."""
