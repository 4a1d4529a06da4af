"""dtype objects of jax.numpy: scalar types (``jnp.float32(1.5)`` makes a 0-d array),
abstract types, ``dtype``, ``promote_types``, ``result_type``, ``finfo``, ``iinfo``,
``issubdtype``, ``can_cast``."""
from __future__ import annotations

import numpy as np

from pyjax._src import dtypes

__all__ = ["dtype", "promote_types", "result_type", "finfo", "iinfo", "issubdtype",
           "can_cast", "bool_", "bool", "int8", "int16", "int32", "int64", "uint8",
           "uint16", "uint32", "uint64", "float16", "float32", "float64", "bfloat16",
           "complex64", "complex128", "int4", "uint4", "float8_e4m3fn", "float8_e5m2",
           "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e4m3b11fnuz", "float8_e3m4",
           "float8_e4m3", "float8_e8m0fnu", "float4_e2m1fn", "int_", "uint", "float_",
           "complex_", "cdouble", "csingle", "double", "single", "half",
           "generic", "number", "integer", "signedinteger", "unsignedinteger", "inexact",
           "floating", "complexfloating", "character", "flexible", "object_", "isdtype",
           ]


class _ScalarMeta(type):
  def __hash__(cls):
    return hash(cls.dtype.type)

  def __eq__(cls, other):
    if other is cls:
      return True
    try:
      return cls.dtype == dtypes.to_numpy_dtype(other) and not isinstance(other, type(None))
    except TypeError:
      return False

  def __ne__(cls, other):
    return not cls == other

  def __call__(cls, x=0):
    from pyjax._src.numpy.array_constructors import asarray
    return asarray(x, dtype=cls.dtype)

  def __instancecheck__(cls, instance):
    return isinstance(instance, cls.dtype.type)

  def __repr__(cls):
    return f"<class 'jax.numpy.{cls.__name__}'>"


def _make_scalar_type(name, d):
  t = _ScalarMeta(name, (), {"dtype": d, "_pyjax_dtype": d})
  t.__module__ = "pyjax.numpy"
  return t


bool_ = _make_scalar_type("bool", dtypes.bool_)
bool = bool_  # noqa: A001
int8, int16, int32, int64 = (_make_scalar_type(n, getattr(dtypes, n)) for n in ("int8", "int16", "int32", "int64"))
uint8, uint16, uint32, uint64 = (_make_scalar_type(n, getattr(dtypes, n)) for n in ("uint8", "uint16", "uint32", "uint64"))
float16, float32, float64 = (_make_scalar_type(n, getattr(dtypes, n)) for n in ("float16", "float32", "float64"))
complex64, complex128 = (_make_scalar_type(n, getattr(dtypes, n)) for n in ("complex64", "complex128"))
bfloat16 = _make_scalar_type("bfloat16", dtypes.bfloat16)
int4 = _make_scalar_type("int4", dtypes.int4)
uint4 = _make_scalar_type("uint4", dtypes.uint4)
import ml_dtypes as _ml  # noqa: E402
for _n in ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz",
           "float8_e4m3b11fnuz", "float8_e3m4", "float8_e4m3", "float8_e8m0fnu", "float4_e2m1fn"):
  globals()[_n] = _make_scalar_type(_n, np.dtype(getattr(_ml, _n))) if hasattr(_ml, _n) else None
int_ = int64
uint = uint64
float_ = float64
complex_ = complex128
cdouble, csingle, double, single, half = complex128, complex64, float64, float32, float16

generic, number, integer = np.generic, np.number, np.integer
signedinteger, unsignedinteger, inexact = np.signedinteger, np.unsignedinteger, np.inexact
floating, complexfloating, character, flexible = np.floating, np.complexfloating, np.character, np.flexible
object_ = np.object_


# As in JAX, ``jnp.dtype`` *is* NumPy's dtype class (so ``jnp.dtype | np.dtype`` and
# ``isinstance(d, jnp.dtype)`` work); pyjax's scalar types carry a ``dtype`` attribute,
# which ``np.dtype`` understands (``jnp.dtype(jnp.bfloat16)`` is bfloat16).
dtype = np.dtype


def promote_types(a, b):
  return dtypes.promote_types(a, b)


def result_type(*args, return_weak_type_flag=False):
  """The dtype of promoting ``args`` (arrays, dtypes, scalars) with JAX's lattice.  As in
  JAX, the Python types ``int``, ``float`` and ``complex`` count as weakly typed (like a
  Python scalar of that type), so ``result_type(complex, np.complex64)`` is complex64."""
  return dtypes.result_type(*map(_canonical_arg, args),
                            return_weak_type_flag=return_weak_type_flag)


def _canonical_arg(a):
  """A result_type argument as JAX sees it: Python types as weak scalars, everything else
  as its x64-canonicalized dtype (so with x64 off, uint64 and int8 give int32)."""
  if a is int or a is float or a is complex:
    return a()
  if type(a) in dtypes.python_scalar_types:
    return a
  if dtypes.has_extended_dtype(a):
    return a   # a key array: dtypes.result_type gives its extended dtype
  d, weak = dtypes._dtype_and_weak(a)
  return dtypes.canonicalize_dtype(d), weak


finfo = dtypes.finfo   # classes (ml_dtypes'), as JAX's
iinfo = dtypes.iinfo


def issubdtype(arg1, arg2):
  return dtypes.issubdtype(arg1, arg2)


def can_cast(from_, to, casting="safe"):
  f = dtypes.to_numpy_dtype(getattr(from_, "dtype", from_))
  t = dtypes.to_numpy_dtype(to)
  try:
    return np.can_cast(f, t, casting=casting)
  except TypeError:
    if casting == "safe":
      return dtypes.promote_types(f, t) == t
    return True


def isdtype(dtype_, kind):
  d = dtypes.to_numpy_dtype(dtype_)
  kinds = kind if isinstance(kind, tuple) else (kind,)
  for k in kinds:
    if isinstance(k, str):
      if k == "bool" and d == dtypes.bool_:
        return True
      if k == "signed integer" and d in dtypes.signed_int_dtypes:
        return True
      if k == "unsigned integer" and d in dtypes.unsigned_int_dtypes:
        return True
      if k == "integral" and dtypes.is_int(d):
        return True
      if k == "real floating" and dtypes.is_float(d):
        return True
      if k == "complex floating" and dtypes.is_complex(d):
        return True
      if k == "numeric" and (dtypes.is_int(d) or dtypes.is_inexact(d)):
        return True
      if k not in ("bool", "signed integer", "unsigned integer", "integral", "real floating",
                   "complex floating", "numeric"):
        raise ValueError(f"Unrecognized {kind=}")
    elif dtypes.to_numpy_dtype(k) == d:
      return True
  return False

