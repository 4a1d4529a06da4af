"""Operators, properties and NumPy-style methods of Array and Tracer.

The runtime's Array (and the core's Tracer) know nothing of jax.numpy; this module
attaches the methods once, when ``pyjax.numpy`` is imported (as JAX does).  Methods look
their jnp function up by name, so every jnp module may define the function it owns.
"""
from __future__ import annotations

import numpy as np

from pyjax._src import core, dtypes
from pyjax._src.numpy import ufuncs
from pyjax._src.runtime.array import ArrayImpl

_jnp = None


def _np_mod():
  global _jnp
  if _jnp is None:
    import pyjax.numpy as jnp
    _jnp = jnp
  return _jnp


def _defer(name, swap=False):
  if swap:
    def op(self, other):
      return getattr(_np_mod(), name)(other, self)
  else:
    def op(self, *args, **kwargs):
      return getattr(_np_mod(), name)(self, *args, **kwargs)
  op.__name__ = name
  return op


_scalar_types = dtypes.python_scalar_types


def _operand(other):
  """The other operand of an operator: as it is when it is an array or a scalar, its
  array when it stands for one (``__jax_array__``: an nnx Variable, as JAX's operators
  convert it), else NotImplemented (Python then tries the other operand's method)."""
  t = type(other)
  if (t is ArrayImpl or t in _scalar_types
      or isinstance(other, (core.Tracer, ArrayImpl, np.ndarray, np.generic))
      or isinstance(other, (int, float, complex))):   # (ArrayImpl: a sharded one stays so)
    return other
  if hasattr(other, "__jax_array__"):
    return other.__jax_array__()
  return NotImplemented


def _binop(fn, swap=False):
  if swap:
    def op(self, other):
      other = _operand(other)
      if other is NotImplemented:
        return NotImplemented
      return fn(other, self)
  else:
    def op(self, other):
      other = _operand(other)
      if other is NotImplemented:
        return NotImplemented
      return fn(self, other)
  return op


_binary_ops = {
    "add": ufuncs.add, "sub": ufuncs.subtract, "mul": ufuncs.multiply,
    "truediv": ufuncs.true_divide, "floordiv": ufuncs.floor_divide, "mod": ufuncs.remainder,
    "pow": ufuncs.power, "and": ufuncs.bitwise_and, "or": ufuncs.bitwise_or,
    "xor": ufuncs.bitwise_xor, "lshift": ufuncs.left_shift, "rshift": ufuncs.right_shift,
    "divmod": ufuncs.divmod,
}

_comparisons = {"eq": ufuncs.equal, "ne": ufuncs.not_equal, "lt": ufuncs.less,
                "le": ufuncs.less_equal, "gt": ufuncs.greater, "ge": ufuncs.greater_equal}

_methods = ["all", "any", "argmax", "argmin", "argpartition", "argsort", "choose", "clip",
            "compress", "conj", "conjugate", "cumprod", "cumsum", "diagonal", "dot", "max",
            "mean", "min", "nonzero", "prod", "ptp", "ravel", "repeat", "reshape", "round",
            "searchsorted", "sort", "squeeze", "std", "sum", "swapaxes", "take", "trace",
            "transpose", "var", "flatten", "nanargmax", "nanargmin"]


def _astype(self, dtype, copy=False, device=None):
  if copy or device is not None or dtype is None or dtypes.is_complex(self.dtype):
    return _np_mod().astype(self, dtype, copy=copy, device=device)  # complex->bool is != 0
  from pyjax._src.lax import elementwise as lax
  d = dtypes.check_user_dtype(dtype, "astype")
  return lax._convert_element_type(self, d, False)


def _reshape(self, *args, order="C", **kwargs):
  if not kwargs and args:
    return _np_mod().reshape(self, args[0] if len(args) == 1 else args, order=order)
  shape = kwargs.pop("shape", kwargs.pop("newshape", None))
  if shape is None:
    shape = args[0] if len(args) == 1 else args
  return _np_mod().reshape(self, shape, order=order)


def _transpose(self, *args):
  axes = args[0] if len(args) == 1 else (args or None)
  return _np_mod().transpose(self, axes)


def _flatten(self, order="C"):
  return _np_mod().ravel(self, order=order)


def _getitem(self, idx):
  from pyjax._src.numpy import indexing
  return indexing.getitem(self, idx)


def _at(self):
  from pyjax._src.numpy import indexing
  return indexing._IndexUpdateHelper(self)


def _matmul(self, other):
  other = _operand(other)
  if other is NotImplemented:
    return NotImplemented
  return _np_mod().matmul(self, other)


def _rmatmul(self, other):
  other = _operand(other)
  if other is NotImplemented:
    return NotImplemented
  return _np_mod().matmul(other, self)


def _view(self, dtype=None, type=None):
  if type is not None:
    raise NotImplementedError("`type` argument of array.view() is not supported.")
  if dtype is None:
    return self
  from pyjax._src.lax import elementwise as lax
  from pyjax._src.lax import shapes as lax_s
  d = dtypes.to_numpy_dtype(dtype)
  old = self.dtype
  if old.itemsize == d.itemsize:
    return lax.bitcast_convert_type(self, d)
  if not self.shape:
    raise ValueError("view() of a 0-d array to a dtype of another size is not supported")
  if old.itemsize > d.itemsize:
    out = lax.bitcast_convert_type(self, d)
    return lax_s.reshape(out, self.shape[:-1] + (self.shape[-1] * (old.itemsize // d.itemsize),))
  k = d.itemsize // old.itemsize
  if self.shape[-1] % k:
    raise ValueError("When changing to a larger dtype, its size must be a divisor of the "
                     "total size in bytes of the last axis of the array.")
  x = lax_s.reshape(self, self.shape[:-1] + (self.shape[-1] // k, k))
  return lax.bitcast_convert_type(x, d)


def _item_on_tracer(self, *args):
  raise core.errors.ConcretizationTypeError(self, "The problem arose with the `item` method.")


def install():
  for cls in (ArrayImpl, core.Tracer):
    for name, fn in _binary_ops.items():
      setattr(cls, f"__{name}__", _binop(fn))
      setattr(cls, f"__r{name}__", _binop(fn, swap=True))
    for name, fn in _comparisons.items():
      setattr(cls, f"__{name}__", _binop(fn))
    cls.__neg__ = lambda self: ufuncs.negative(self)
    cls.__pos__ = lambda self: ufuncs.positive(self)
    cls.__abs__ = lambda self: ufuncs.absolute(self)
    cls.__invert__ = lambda self: ufuncs.bitwise_not(self)
    cls.__matmul__ = _matmul
    cls.__rmatmul__ = _rmatmul
    cls.__round__ = lambda self, ndigits=None: ufuncs.round(self, ndigits or 0)
    cls.__getitem__ = _getitem
    cls.at = property(_at)
    cls.T = property(lambda self: _np_mod().transpose(self))
    cls.mT = property(lambda self: _np_mod().matrix_transpose(self))
    cls.real = property(lambda self: ufuncs.real(self))
    cls.imag = property(lambda self: ufuncs.imag(self))
    cls.flat = property(lambda self: _np_mod().ravel(self))
    cls.astype = _astype
    cls.reshape = _reshape
    cls.transpose = _transpose
    cls.flatten = _flatten
    cls.view = _view
    cls.__array_namespace__ = lambda self, api_version=None: _np_mod()
    for m in _methods:
      if m not in ("reshape", "transpose", "flatten"):
        setattr(cls, m, _defer(m))
    if cls is ArrayImpl:
      cls.conj = lambda self: ufuncs.conjugate(self)
      cls.conjugate = cls.conj
  core.Tracer.copy = _tracer_copy


def _tracer_copy(self):
  """``x.copy()`` of a traced array: a ``copy`` equation, as in JAX."""
  from pyjax._src.lax.buffers import copy_p
  return copy_p.bind(self)
