"""Elementwise jax.numpy functions (NumPy's ufuncs) on lax primitives, with NumPy-style
broadcasting and JAX's type promotion."""
from __future__ import annotations

import numpy as np

from pyjax._src import dtypes
from pyjax._src.lax import elementwise as lax
from pyjax._src.numpy.util import (promote_args, promote_args_inexact, promote_args_numeric,
                                   check_arraylike, promote_dtypes_inexact, asarray_weak,
                                   promote_shapes, promote_dtypes)

__all__ = []


def _export(f):
  __all__.append(f.__name__)
  return f


def _one_to_one_unop(name, lax_fn, inexact=False):
  if inexact:
    def f(x, /):
      check_arraylike(name, x)
      x, = promote_dtypes_inexact(x)
      return lax_fn(x)
  else:
    def f(x, /):
      check_arraylike(name, x)
      x, = promote_dtypes(x)
      return lax_fn(x)
  f.__name__ = name
  f.__qualname__ = name
  f.__doc__ = f"jnp.{name}: elementwise, as numpy.{name}."
  __all__.append(name)
  return f


def _one_to_one_binop(name, lax_fn, inexact=False):
  promote = promote_args_inexact if inexact else promote_args

  def f(x, y, /):
    x, y = promote(name, x, y)
    return lax_fn(x, y)
  f.__name__ = name
  f.__qualname__ = name
  f.__doc__ = f"jnp.{name}: elementwise with broadcasting, as numpy.{name}."
  __all__.append(name)
  return f


fabs = _one_to_one_unop("fabs", lax.abs, True)
floor_ = None
exp = _one_to_one_unop("exp", lax.exp, True)
exp2 = _one_to_one_unop("exp2", lax.exp2, True)
log = _one_to_one_unop("log", lax.log, True)
expm1 = _one_to_one_unop("expm1", lax.expm1, True)
log1p = _one_to_one_unop("log1p", lax.log1p, True)
sin = _one_to_one_unop("sin", lax.sin, True)
cos = _one_to_one_unop("cos", lax.cos, True)
tan = _one_to_one_unop("tan", lax.tan, True)
arcsin = _one_to_one_unop("arcsin", lax.asin, True)
arccos = _one_to_one_unop("arccos", lax.acos, True)
arctan = _one_to_one_unop("arctan", lax.atan, True)
sinh = _one_to_one_unop("sinh", lax.sinh, True)
cosh = _one_to_one_unop("cosh", lax.cosh, True)
tanh = _one_to_one_unop("tanh", lax.tanh, True)
arcsinh = _one_to_one_unop("arcsinh", lax.asinh, True)
arccosh = _one_to_one_unop("arccosh", lax.acosh, True)
arctanh = _one_to_one_unop("arctanh", lax.atanh, True)
sqrt = _one_to_one_unop("sqrt", lax.sqrt, True)
cbrt = _one_to_one_unop("cbrt", lax.cbrt, True)
asin, acos, atan, asinh, acosh, atanh = arcsin, arccos, arctan, arcsinh, arccosh, arctanh
__all__ += ["asin", "acos", "atan", "asinh", "acosh", "atanh"]
add = _one_to_one_binop("add", lax.add)
multiply = _one_to_one_binop("multiply", lax.mul)
nextafter = _one_to_one_binop("nextafter", lax.nextafter, True)
arctan2 = _one_to_one_binop("arctan2", lax.atan2, True)
atan2 = arctan2
__all__.append("atan2")
equal = _one_to_one_binop("equal", lax.eq)
not_equal = _one_to_one_binop("not_equal", lax.ne)
less = _one_to_one_binop("less", lax.lt)
less_equal = _one_to_one_binop("less_equal", lax.le)
greater = _one_to_one_binop("greater", lax.gt)
greater_equal = _one_to_one_binop("greater_equal", lax.ge)
maximum = _one_to_one_binop("maximum", lax.max)
minimum = _one_to_one_binop("minimum", lax.min)
del floor_


@_export
def subtract(x, y, /):
  x, y = promote_args("subtract", x, y)
  if x.dtype == dtypes.bool_:
    raise TypeError("numpy boolean subtract, the `-` operator, is not supported, use the "
                    "bitwise_xor, the `^` operator, or the logical_xor function instead.")
  return lax.sub(x, y)


def _is_bool(x):
  return x.dtype == dtypes.bool_


def _is_int(x):
  return dtypes.is_int(x.dtype)


@_export
def negative(x, /):
  check_arraylike("negative", x)
  x, = promote_dtypes(x)
  if _is_bool(x):
    raise TypeError("The numpy boolean negative, the `-` operator, is not supported, use "
                    "the `~` operator or the logical_not function instead.")
  return lax.neg(x)


@_export
def positive(x, /):
  check_arraylike("positive", x)
  x, = promote_dtypes(x)
  if _is_bool(x):
    raise TypeError("The numpy boolean positive is not supported")
  return x


@_export
def absolute(x, /):
  check_arraylike("absolute", x)
  x, = promote_dtypes(x)
  if _is_bool(x) or dtypes.is_unsigned(x.dtype):
    return x
  return lax.abs(x)


abs = absolute  # noqa: A001
__all__.append("abs")


@_export
def sign(x, /):
  check_arraylike("sign", x)
  x, = promote_dtypes(x)
  if _is_bool(x):
    return x
  return lax.sign(x)


def _floor_like(name, lax_fn):
  def f(x, /):
    check_arraylike(name, x)
    x, = promote_dtypes(x)
    if _is_bool(x) or _is_int(x):
      return lax._convert_element_type(x, x.dtype, x.weak_type)
    if dtypes.is_complex(x.dtype):
      raise ValueError(f"jnp.{name} is not well defined for complex-valued inputs.")
    return lax_fn(x)
  f.__name__ = name
  __all__.append(name)
  return f


floor = _floor_like("floor", lax.floor)
ceil = _floor_like("ceil", lax.ceil)
rint = _floor_like("rint", lambda x: lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN))
trunc = _floor_like("trunc", lambda x: lax.select(lax.lt(x, lax._convert_element_type(0, x.dtype)), lax.ceil(x), lax.floor(x)))
fix = trunc
__all__.append("fix")


@_export
def round(a, decimals=0, out=None):
  """jnp.round: ties to even, like NumPy."""
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.round is not supported.")
  check_arraylike("round", a)
  a, = promote_dtypes(a)
  decimals = int(decimals)
  if _is_bool(a) or _is_int(a):
    if decimals >= 0:
      return a
    factor = lax._convert_element_type(10 ** (-decimals), a.dtype)
    return lax.mul(_round_float(lax.div(lax._convert_element_type(a, dtypes.default_float_dtype()), lax._convert_element_type(factor, dtypes.default_float_dtype())), 0).astype(a.dtype), factor)
  if dtypes.is_complex(a.dtype):
    return lax.complex(_round_float(lax.real(a), decimals), _round_float(lax.imag(a), decimals))
  return _round_float(a, decimals)


def _round_float(x, decimals):
  if decimals == 0:
    return lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN)
  d = x.dtype
  work = d if d in (dtypes.float32, dtypes.float64) else dtypes.float32
  xw = lax._convert_element_type(x, work)
  factor = lax._convert_element_type(10.0 ** decimals, work)
  out = lax.div(lax.round(lax.mul(xw, factor), lax.RoundingMethod.TO_NEAREST_EVEN), factor)
  return lax._convert_element_type(out, d, x.weak_type)


around = round
__all__.append("around")


@_export
def true_divide(x, y, /):
  x, y = promote_args_inexact("true_divide", x, y)
  return lax.div(x, y)


divide = true_divide
__all__.append("divide")


@_export
def floor_divide(x, y, /):
  x, y = promote_args_numeric("floor_divide", x, y)
  d = x.dtype
  if dtypes.is_int(d):
    zero = lax._convert_element_type(0, d)
    q = lax.div(x, y)
    if dtypes.is_unsigned(d):
      return q
    r = lax.rem(x, y)
    fix_ = lax.bitwise_and(lax.ne(r, zero), lax.ne(lax.lt(r, zero), lax.lt(y, zero)))
    return lax.select(fix_, lax.sub(q, lax._convert_element_type(1, d)), q)
  if dtypes.is_complex(d):
    raise TypeError("floor_divide does not support complex-valued inputs.")
  return _float_divmod(x, y)[0]


def _float_divmod(x, y):
  mod = lax.rem(x, y)
  div = lax.div(lax.sub(x, mod), y)
  zero = lax._convert_element_type(0, x.dtype)
  ind = lax.bitwise_and(lax.ne(mod, zero), lax.ne(lax.lt(y, zero), lax.lt(mod, zero)))
  mod = lax.select(ind, lax.add(mod, y), mod)
  div = lax.select(ind, lax.sub(div, lax._convert_element_type(1, x.dtype)), div)
  return lax.round(div), mod


@_export
def remainder(x, y, /):
  x, y = promote_args_numeric("remainder", x, y)
  d = x.dtype
  if dtypes.is_complex(d):
    raise TypeError("remainder does not support complex-valued inputs.")
  zero = lax._convert_element_type(0, d)
  trunc_mod = lax.rem(x, y)
  if dtypes.is_unsigned(d):
    return trunc_mod
  do_plus = lax.bitwise_and(lax.ne(lax.lt(trunc_mod, zero), lax.lt(y, zero)), lax.ne(trunc_mod, zero))
  return lax.select(do_plus, lax.add(trunc_mod, y), trunc_mod)


mod = remainder
__all__.append("mod")


@_export
def fmod(x1, x2, /):
  x1, x2 = promote_args_numeric("fmod", x1, x2)
  return lax.rem(x1, x2)


@_export
def divmod(x1, x2, /):  # noqa: A001
  x1, x2 = promote_args_numeric("divmod", x1, x2)
  if dtypes.is_int(x1.dtype):
    return floor_divide(x1, x2), remainder(x1, x2)
  return _float_divmod(x1, x2)


@_export
def power(x1, x2, /):
  """jnp.power: integer exponents use repeated multiplication like JAX."""
  check_arraylike("power", x1, x2)
  from pyjax._src import core
  if type(x2) is int and not isinstance(x1, (int, float, complex)):
    x1, = promote_dtypes(x1)
    if _is_bool(x1):
      x1 = lax._convert_element_type(x1, dtypes.default_int_dtype())
    return lax.integer_pow(x1, x2)
  x1, x2 = promote_args_numeric("power", x1, x2)
  d = x1.dtype
  if dtypes.is_int(d):
    return _int_power(x1, x2)
  return lax.pow(x1, x2)


def _int_power(x, y):
  from pyjax._src.numpy.util import promote_shapes as _ps
  d = x.dtype
  # exponentiation by squaring over the bits of y (negative exponents give 0 like JAX, except 1/-1)
  one = lax._convert_element_type(1, d)
  zero = lax._convert_element_type(0, d)
  bits = 8 * d.itemsize
  acc = lax.add(lax.mul(x, zero), lax.add(lax.mul(y, zero), one))
  base = lax.add(x, lax.mul(y, zero))
  yy = lax.add(y, lax.mul(x, zero))
  for _ in range(bits):
    acc = lax.select(lax.ne(lax.bitwise_and(yy, one), zero), lax.mul(acc, base), acc)
    base = lax.mul(base, base)
    yy = lax.shift_right_logical(yy, one)
  if not dtypes.is_unsigned(d):
    neg = lax.lt(y, zero)
    acc = lax.select(neg, lax.select(lax.eq(x, one), one, lax.select(lax.eq(x, lax.neg(one)), lax.select(lax.eq(lax.bitwise_and(y, one), one), lax.neg(one), one), zero)), acc)
  return acc


pow = power  # noqa: A001
__all__.append("pow")


@_export
def float_power(x, y, /):
  x, y = promote_args_inexact("float_power", x, y)
  return lax.pow(x, y)


@_export
def square(x, /):
  check_arraylike("square", x)
  x, = promote_dtypes(x)
  if _is_bool(x):
    x = lax._convert_element_type(x, dtypes.default_int_dtype())
  return lax.square(x)


@_export
def reciprocal(x, /):
  check_arraylike("reciprocal", x)
  x, = promote_dtypes_inexact(x)
  return lax.integer_pow(x, -1)


@_export
def log2(x, /):
  check_arraylike("log2", x)
  x, = promote_dtypes_inexact(x)
  return lax.div(lax.log(x), lax.log(lax._convert_element_type(2, x.dtype)))


@_export
def log10(x, /):
  check_arraylike("log10", x)
  x, = promote_dtypes_inexact(x)
  return lax.div(lax.log(x), lax.log(lax._convert_element_type(10, x.dtype)))


@_export
def logaddexp(x1, x2, /):
  x1, x2 = promote_args_inexact("logaddexp", x1, x2)
  amax = lax.max(x1, x2)
  delta = lax.sub(x1, x2)
  isnan = lax.ne(delta, delta)
  out = lax.add(amax, lax.log1p(lax.exp(lax.neg(lax.abs(delta)))))
  return lax.select(isnan, lax.add(x1, x2), out)


@_export
def logaddexp2(x1, x2, /):
  x1, x2 = promote_args_inexact("logaddexp2", x1, x2)
  ln2 = lax._convert_element_type(np.log(2), x1.dtype)
  amax = lax.max(x1, x2)
  delta = lax.sub(x1, x2)
  isnan = lax.ne(delta, delta)
  out = lax.add(amax, lax.div(lax.log1p(lax.exp2(lax.neg(lax.abs(delta)))), ln2))
  return lax.select(isnan, lax.add(x1, x2), out)


@_export
def deg2rad(x, /):
  x, = promote_dtypes_inexact(x)
  return lax.mul(x, lax._convert_element_type(np.pi / 180, x.dtype))


@_export
def rad2deg(x, /):
  x, = promote_dtypes_inexact(x)
  return lax.mul(x, lax._convert_element_type(180 / np.pi, x.dtype))


radians, degrees = deg2rad, rad2deg
__all__ += ["radians", "degrees"]


@_export
def hypot(x1, x2, /):
  x1, x2 = promote_args_inexact("hypot", x1, x2)
  x1, x2 = lax.abs(x1), lax.abs(x2)
  big, small = lax.max(x1, x2), lax.min(x1, x2)
  zero = lax._convert_element_type(0, big.dtype)
  safe = lax.select(lax.eq(big, zero), lax._convert_element_type(1, big.dtype), big)
  r = lax.div(small, safe)
  out = lax.mul(big, lax.sqrt(lax.add(lax._convert_element_type(1, big.dtype), lax.mul(r, r))))
  return lax.select(lax.eq(big, zero), zero, out)


@_export
def sinc(x, /):
  check_arraylike("sinc", x)
  x, = promote_dtypes_inexact(x)
  zero = lax._convert_element_type(0, x.dtype)
  pi_x = lax.mul(lax._convert_element_type(np.pi, x.dtype), x)
  safe = lax.select(lax.eq(x, zero), lax._convert_element_type(1, x.dtype), pi_x)
  return lax.select(lax.eq(x, zero), lax._convert_element_type(1, x.dtype), lax.div(lax.sin(safe), safe))


@_export
def copysign(x1, x2, /):
  x1, x2 = promote_args_inexact("copysign", x1, x2)
  if dtypes.is_complex(x1.dtype):
    raise TypeError("copysign does not support complex-valued inputs")
  signbit_ = _signbit(x2)
  return lax.select(signbit_, lax.neg(lax.abs(x1)), lax.abs(x1))


def _signbit(x):
  d = x.dtype
  if dtypes.is_int(d):
    return lax.lt(x, lax._convert_element_type(0, d))
  if d == dtypes.bool_:
    return lax.ne(x, x)
  nbits = d.itemsize * 8
  int_t = {16: dtypes.int16, 32: dtypes.int32, 64: dtypes.int64}.get(nbits, dtypes.int32)
  if nbits not in (16, 32, 64):
    x = lax._convert_element_type(x, dtypes.float32)
    int_t = dtypes.int32
  bits = lax.bitcast_convert_type(x, int_t)
  return lax.lt(bits, lax._convert_element_type(0, int_t))


@_export
def signbit(x, /):
  check_arraylike("signbit", x)
  x, = promote_dtypes(x)
  return _signbit(x)


@_export
def logical_and(x1, x2, /):
  x1, x2 = promote_args("logical_and", x1, x2)
  return lax.bitwise_and(_to_bool(x1), _to_bool(x2))


@_export
def logical_or(x1, x2, /):
  x1, x2 = promote_args("logical_or", x1, x2)
  return lax.bitwise_or(_to_bool(x1), _to_bool(x2))


@_export
def logical_xor(x1, x2, /):
  x1, x2 = promote_args("logical_xor", x1, x2)
  return lax.bitwise_xor(_to_bool(x1), _to_bool(x2))


@_export
def logical_not(x, /):
  check_arraylike("logical_not", x)
  x, = promote_dtypes(x)
  return lax.bitwise_not(_to_bool(x))


def _to_bool(x):
  if x.dtype == dtypes.bool_:
    return x
  return lax.ne(x, lax._convert_element_type(0, x.dtype))


def _bitwise_binop(name, fn):
  def f(x, y, /):
    x, y = promote_args(name, x, y)
    if not (dtypes.is_int(x.dtype) or x.dtype == dtypes.bool_):
      raise TypeError(f"{name} does not accept dtype {x.dtype.name}. Accepted dtypes are "
                      "subtypes of integer, bool.")
    return fn(x, y)
  f.__name__ = name
  __all__.append(name)
  return f


bitwise_and = _bitwise_binop("bitwise_and", lax.bitwise_and)
bitwise_or = _bitwise_binop("bitwise_or", lax.bitwise_or)
bitwise_xor = _bitwise_binop("bitwise_xor", lax.bitwise_xor)


@_export
def bitwise_not(x, /):
  check_arraylike("bitwise_not", x)
  x, = promote_dtypes(x)
  return lax.bitwise_not(x)


invert = bitwise_not
bitwise_invert = bitwise_not
__all__ += ["invert", "bitwise_invert"]


def _shift(name, fn_signed, fn_unsigned=None):
  def f(x1, x2, /):
    x1, x2 = promote_args(name, x1, x2)
    if not dtypes.is_int(x1.dtype):
      raise TypeError(f"{name} does not accept dtype {x1.dtype.name}.")
    fn = fn_unsigned if (fn_unsigned is not None and dtypes.is_unsigned(x1.dtype)) else fn_signed
    return fn(x1, x2)
  f.__name__ = name
  __all__.append(name)
  return f


left_shift = _shift("left_shift", lax.shift_left)
right_shift = _shift("right_shift", lax.shift_right_arithmetic, lax.shift_right_logical)
bitwise_left_shift, bitwise_right_shift = left_shift, right_shift
__all__ += ["bitwise_left_shift", "bitwise_right_shift"]


@_export
def bitwise_count(x, /):
  check_arraylike("bitwise_count", x)
  x, = promote_dtypes(x)
  return lax._convert_element_type(lax.population_count(lax.abs(x) if not dtypes.is_unsigned(x.dtype) else x), dtypes.uint8)


def _isfinite_like(name, fn):
  def f(x, /):
    check_arraylike(name, x)
    x, = promote_dtypes(x)
    return fn(x)
  f.__name__ = name
  __all__.append(name)
  return f


def _isfinite(x):
  d = x.dtype
  if dtypes.is_float(d):
    return lax.is_finite(x)
  if dtypes.is_complex(d):
    return lax.bitwise_and(lax.is_finite(lax.real(x)), lax.is_finite(lax.imag(x)))
  return _full_bool(x, True)


def _full_bool(x, v):
  return lax.eq(x, x) if v else lax.ne(x, x)


def _isinf(x):
  d = x.dtype
  if dtypes.is_float(d):
    return lax.eq(lax.abs(x), lax._convert_element_type(np.inf, d))
  if dtypes.is_complex(d):
    return lax.bitwise_or(_isinf(lax.real(x)), _isinf(lax.imag(x)))
  return lax.ne(x, x) if d != dtypes.bool_ else lax.bitwise_and(x, lax.bitwise_not(x))


def _isnan(x):
  if dtypes.is_inexact(x.dtype):
    return lax.ne(x, x)
  return lax.ne(x, x) if x.dtype != dtypes.bool_ else lax.bitwise_and(x, lax.bitwise_not(x))


isfinite = _isfinite_like("isfinite", _isfinite)
isinf = _isfinite_like("isinf", _isinf)
isnan = _isfinite_like("isnan", _isnan)
isposinf = _isfinite_like("isposinf", lambda x: lax.bitwise_and(_isinf(x), lax.bitwise_not(_signbit(x))) if dtypes.is_float(x.dtype) else _full_bool(x, False))
isneginf = _isfinite_like("isneginf", lambda x: lax.bitwise_and(_isinf(x), _signbit(x)) if dtypes.is_float(x.dtype) else _full_bool(x, False))


@_export
def real(val, /):
  check_arraylike("real", val)
  val, = promote_dtypes(val)
  return lax.real(val) if dtypes.is_complex(val.dtype) else val


@_export
def imag(val, /):
  check_arraylike("imag", val)
  val, = promote_dtypes(val)
  if dtypes.is_complex(val.dtype):
    return lax.imag(val)
  return lax.mul(val, lax._convert_element_type(0, val.dtype, val.weak_type))


@_export
def conjugate(x, /):
  check_arraylike("conjugate", x)
  x, = promote_dtypes(x)
  return lax.conj(x) if dtypes.is_complex(x.dtype) else x


conj = conjugate
__all__.append("conj")


@_export
def angle(z, deg=False):
  z, = promote_dtypes_inexact(z)
  if dtypes.is_complex(z.dtype):
    re, im = lax.real(z), lax.imag(z)
  else:
    re, im = z, lax.mul(z, lax._convert_element_type(0, z.dtype))
  out = lax.atan2(im, re)
  return rad2deg(out) if deg else out


@_export
def heaviside(x1, x2, /):
  x1, x2 = promote_args_inexact("heaviside", x1, x2)
  zero = lax._convert_element_type(0, x1.dtype)
  one = lax._convert_element_type(1, x1.dtype)
  return lax.select(lax.lt(x1, zero), zero, lax.select(lax.gt(x1, zero), one, x2))


@_export
def fmax(x1, x2):
  x1, x2 = promote_args("fmax", x1, x2)
  return lax.select(_isnan(x2), x1, lax.select(_isnan(x1), x2, lax.max(x1, x2)))


@_export
def fmin(x1, x2):
  x1, x2 = promote_args("fmin", x1, x2)
  return lax.select(_isnan(x2), x1, lax.select(_isnan(x1), x2, lax.min(x1, x2)))


@_export
def gcd(x1, x2):
  x1, x2 = promote_args("gcd", x1, x2)
  if not dtypes.is_int(x1.dtype):
    raise ValueError("Arguments to jax.numpy.gcd must be integers.")
  a, b = lax.abs(x1), lax.abs(x2)
  zero = lax._convert_element_type(0, a.dtype)
  one = lax._convert_element_type(1, a.dtype)
  a, b = lax.add(a, lax.mul(b, zero)), lax.add(b, lax.mul(a, zero))
  for _ in range(8 * a.dtype.itemsize * 2):
    nz = lax.ne(b, zero)
    safe_b = lax.select(nz, b, one)
    a, b = lax.select(nz, b, a), lax.select(nz, lax.rem(a, safe_b), b)
  return a


@_export
def lcm(x1, x2):
  x1, x2 = promote_args("lcm", x1, x2)
  d = gcd(x1, x2)
  zero = lax._convert_element_type(0, d.dtype)
  one = lax._convert_element_type(1, d.dtype)
  return lax.select(lax.eq(d, zero), zero, lax.abs(lax.mul(x1, lax.div(x2, lax.select(lax.eq(d, zero), one, d)))))


@_export
def ldexp(x1, x2, /):
  check_arraylike("ldexp", x1, x2)
  x1, = promote_dtypes_inexact(x1)
  x2 = asarray_weak(x2)
  if not dtypes.is_int(x2.dtype):
    raise ValueError(f"ldexp: x2 must have integer dtype, got {x2.dtype}")
  x1, x2 = promote_shapes("ldexp", x1, x2)
  two = lax._convert_element_type(2, x1.dtype)
  return lax.mul(x1, lax.pow(two, x2))


@_export
def frexp(x, /):
  check_arraylike("frexp", x)
  x, = promote_dtypes_inexact(x)
  d = x.dtype
  work = dtypes.float64 if d == dtypes.float64 else dtypes.float32
  xw = lax._convert_element_type(x, work)
  zero = lax._convert_element_type(0, work)
  ok = lax.bitwise_and(lax.ne(xw, zero), lax.is_finite(xw))
  ax = lax.abs(lax.select(ok, xw, lax._convert_element_type(1, work)))
  e = lax.floor(lax.div(lax.log(ax), lax._convert_element_type(np.log(2), work)))
  e = lax.add(e, lax._convert_element_type(1, work))
  m = lax.div(xw, lax.pow(lax._convert_element_type(2, work), e))
  # fix rounding in log2
  big = lax.ge(lax.abs(m), lax._convert_element_type(1, work))
  m = lax.select(big, lax.div(m, lax._convert_element_type(2, work)), m)
  e = lax.select(big, lax.add(e, lax._convert_element_type(1, work)), e)
  small = lax.lt(lax.abs(m), lax._convert_element_type(0.5, work))
  m = lax.select(small, lax.mul(m, lax._convert_element_type(2, work)), m)
  e = lax.select(small, lax.sub(e, lax._convert_element_type(1, work)), e)
  m = lax.select(ok, m, xw)
  e = lax.select(ok, e, zero)
  return lax._convert_element_type(m, d), lax._convert_element_type(e, dtypes.int32)


@_export
def modf(x, /, out=None):
  check_arraylike("modf", x)
  x, = promote_dtypes_inexact(x)
  whole = trunc(x)
  return lax.sub(x, whole), whole


@_export
def spacing(x, /):
  x, = promote_dtypes_inexact(x)
  inf = lax._convert_element_type(np.inf, x.dtype)
  return lax.sub(lax.nextafter(x, lax.select(_signbit(x), lax.neg(inf), inf)), x)


@_export
def i0(x):
  check_arraylike("i0", x)
  x, = promote_dtypes_inexact(x)
  ax = lax.abs(x)
  return lax.mul(lax.exp(ax), lax.bessel_i0e(ax))

