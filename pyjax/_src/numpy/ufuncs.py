"""Elementwise jax.numpy functions (NumPy's ufuncs) on lax primitives, with NumPy-style
broadcasting and JAX's type promotion.

Each function is written as the same composition of lax primitives that JAX uses, so
results (NaN and signed-zero handling included), dtypes, weak types and error messages
match JAX.  Constants that JAX creates strongly typed (``_const``) are strong here too,
which is what decides the weak type of results such as ``jnp.isinf(1.0)``.
"""
from __future__ import annotations

import operator

import numpy as np

from pyjax._src import core, dtypes
from pyjax._src.lax import elementwise as lax
from pyjax._src.runtime.array import ArrayImpl
from pyjax._src.numpy.util import (promote_args, promote_args_inexact, promote_args_numeric,
                                   check_arraylike, promote_dtypes_inexact, asarray_weak,
                                   promote_shapes, promote_dtypes, promote_dtypes_numeric)
from pyjax._src.numpy.util import library_function as _library_function

__all__ = []

_RM = lax.RoundingMethod


def _export(f):
  __all__.append(f.__name__)
  return f


_py_type = {"b": bool, "i": int, "u": int, "f": float, "c": complex}


def _const(x, value):
  """A constant like x, as JAX's ``lax._const`` makes it: a Python scalar (so weakly typed)
  when x is a weakly typed 0-d value of its kind's default dtype, else a strongly typed
  NumPy scalar of x's dtype.  This is what makes e.g. ``jnp.hypot(3, 4)`` weakly typed."""
  aval = core.get_aval(x)
  d = aval.dtype
  if aval.weak_type and not aval.shape:
    py = _py_type.get(d.kind)
    if py is not None and dtypes.python_scalar_dtype(py) == d:
      return py(value)
  return np.array(value, d)


def _constant_like(x, value):
  """A strongly typed constant of x's dtype (JAX's ``_constant_like``)."""
  return np.array(value, _dtype(x))


def _weak_const(x, value):
  """A weakly typed constant of x's dtype: what a Python scalar becomes in a jnp-level
  expression such as ``x - 1``."""
  d = _dtype(x)
  py = _py_type.get(d.kind)
  if py is not None and dtypes.python_scalar_dtype(py) == d:
    return py(value)
  return lax._convert_element_type(np.array(value, d), d, True)


def _dtype(x):
  return x.dtype if hasattr(x, "dtype") else core.get_aval(x).dtype


def _full_like(x, value, dtype=None):
  from pyjax._src.lax import shapes as lax_s
  return lax_s.full_like(x, value, dtype)


def _is_bool(x):
  return _dtype(x) == dtypes.bool_


def _is_int(x):
  return dtypes.is_int(_dtype(x))


def _is_complex(x):
  return dtypes.is_complex(_dtype(x))


def _is_float(x):
  return dtypes.is_float(_dtype(x))


def _where(c, x, y):
  """jnp.where for operands of equal rank (or rank 0): promotes x and y (Python scalars
  are weak) and broadcasts size-1 and rank-0 operands."""
  x, y = promote_dtypes(x, y)
  sc, sx, sy = np.shape(c), np.shape(x), np.shape(y)
  if sx != sy or (sc and sc != sx):
    from pyjax._src.lax import shapes as lax_s
    try:
      shape = np.broadcast_shapes(sc, sx, sy)
    except ValueError:
      raise ValueError("Incompatible shapes for broadcasting: shapes="
                       f"{[tuple(sc), tuple(sx), tuple(sy)]}") from None
    c, x, y = (lax_s.broadcast_in_dim(v, shape, tuple(range(len(shape) - len(s), len(shape))))
               for v, s in ((c, sc), (x, sx), (y, sy)))
  return lax.select(c, x, y)


# --- one-to-one wrappers ----------------------------------------------------------------
_INEXACT = frozenset(d for d in dtypes.all_dtypes if dtypes.is_inexact(d))


def _ufunc_kwargs(name, out, where):
  """JAX's error for ``out=``/``where=`` given to a ``jnp.ufunc`` (only None is accepted)."""
  what = "out" if out is not None else "where"
  raise NotImplementedError(f"{what} argument of <jnp.ufunc '{name}'>")


def _one_to_one_unop(name, lax_fn, inexact=False, ufunc=False):
  # fast path: a concrete Array that needs no promotion goes straight to lax
  if inexact:
    def f(x, /):
      if type(x) is ArrayImpl and x.aval.dtype in _INEXACT:
        return lax_fn(x)
      check_arraylike(name, x)
      x, = promote_dtypes_inexact(x)
      return lax_fn(x)
  elif ufunc:   # (jnp.negative: a jnp.ufunc object calls this)
    def f(x, /, *, out=None, where=None):
      if out is not None or where is not None:
        _ufunc_kwargs(name, out, where)
      if type(x) is ArrayImpl:
        return lax_fn(x)
      check_arraylike(name, x)
      x, = promote_dtypes(x)
      return lax_fn(x)
  else:
    def f(x, /):
      if type(x) is ArrayImpl:
        return lax_fn(x)
      check_arraylike(name, x)
      x, = promote_dtypes(x)
      return lax_fn(x)
  f.__name__ = name
  f.__qualname__ = name
  f.__doc__ = f"jnp.{name}: elementwise, as numpy.{name}."
  __all__.append(name)
  return f


def _one_to_one_binop(name, lax_fn, inexact=False, numeric=False, ufunc=False):
  promote = promote_args_inexact if inexact else promote_args_numeric if numeric else promote_args

  if ufunc:   # (a jnp.ufunc object calls this: out=None and where=None are accepted)
    def f(x, y, /, *, out=None, where=None):
      if out is not None or where is not None:
        _ufunc_kwargs(name, out, where)
      x, y = promote(name, x, y)
      return lax_fn(x, y)
  else:
    def f(x, y, /):
      x, y = promote(name, x, y)
      return lax_fn(x, y)
  f.__name__ = name
  f.__qualname__ = name
  f.__doc__ = f"jnp.{name}: elementwise with broadcasting, as numpy.{name}."
  __all__.append(name)
  return f


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
# the array-API names are functions of their own (JAX's errors name them)
asin = _one_to_one_unop("asin", lax.asin, True)
acos = _one_to_one_unop("acos", lax.acos, True)
atan = _one_to_one_unop("atan", lax.atan, True)
asinh = _one_to_one_unop("asinh", lax.asinh, True)
acosh = _one_to_one_unop("acosh", lax.acosh, True)
atanh = _one_to_one_unop("atanh", lax.atanh, True)
sqrt = _one_to_one_unop("sqrt", lax.sqrt, True)
cbrt = _one_to_one_unop("cbrt", lax.cbrt, True)
sign = _one_to_one_unop("sign", lax.sign)
negative = _one_to_one_unop("negative", lax.neg, ufunc=True)

subtract = _one_to_one_binop("subtract", lax.sub, ufunc=True)
nextafter = _one_to_one_binop("nextafter", lax.nextafter, inexact=True)
arctan2 = _one_to_one_binop("arctan2", lax.atan2, inexact=True)


@_export
def atan2(x1, x2, /):
  """jnp.atan2: arctan2 after NumPy-style promotion of both arguments (so a Python int
  next to a uint8 array wraps to uint8 first, as in JAX)."""
  return arctan2(*promote_args("atan2", x1, x2))


equal = _one_to_one_binop("equal", lax.eq)
not_equal = _one_to_one_binop("not_equal", lax.ne)


def _key_comparison(f, negate):
  """``f`` (equal / not_equal) that also compares typed PRNG key arrays, key by key (as
  JAX: both operands keys of one implementation, else JAX's TypeError)."""
  def g(x, y, /):
    kx = dtypes.has_extended_dtype(x)
    ky = dtypes.has_extended_dtype(y)
    if not (kx or ky):
      return f(x, y)
    if not (kx and ky) or x.dtype != y.dtype:
      names = ", ".join(str(getattr(v, "dtype", None) or core.get_aval(v).dtype)
                        for v in (x, y))
      raise TypeError(f"{f.__name__} does not accept dtypes {names}.")
    eq = x._eq(y)
    return lax.bitwise_not(eq) if negate else eq
  g.__name__ = g.__qualname__ = f.__name__
  g.__doc__ = f.__doc__ + " Typed PRNG key arrays compare key by key."
  return g


equal = _key_comparison(equal, False)
not_equal = _key_comparison(not_equal, True)


def _ordering(name, lax_fn):
  """Comparisons; complex operands compare lexicographically (real part, then imaginary),
  handled when lax rejects the dtype so the hot path is one lax call."""
  def f(x, y, /):
    x, y = promote_args(name, x, y)
    try:
      return lax_fn(x, y)
    except TypeError:
      if _is_complex(x):
        return _complex_or_real_cmp(x, y, lax_fn)
      raise
  f.__name__ = f.__qualname__ = name
  f.__doc__ = f"jnp.{name}: elementwise comparison with broadcasting, as numpy.{name}."
  __all__.append(name)
  return f


less = _ordering("less", lax.lt)
less_equal = _ordering("less_equal", lax.le)
greater = _ordering("greater", lax.gt)
greater_equal = _ordering("greater_equal", lax.ge)
maximum = _one_to_one_binop("maximum", lax.max, ufunc=True)
minimum = _one_to_one_binop("minimum", lax.min, ufunc=True)
float_power = _one_to_one_binop("float_power", lax.pow, inexact=True)
true_divide = _one_to_one_binop("true_divide", lax.div, inexact=True)
divide = true_divide
__all__.append("divide")

# add/multiply of booleans are logical or/and (as in NumPy and JAX).  The bool case is
# handled when lax rejects the dtype, so the hot path for numbers is one lax call.
@_export
def add(x, y, /, *, out=None, where=None):
  """jnp.add: elementwise x + y with broadcasting; booleans give logical or."""
  if out is not None or where is not None:
    _ufunc_kwargs("add", out, where)
  x, y = promote_args("add", x, y)
  try:
    return lax.add(x, y)
  except TypeError:
    if _dtype(x) == dtypes.bool_:
      return lax.bitwise_or(x, y)
    raise


@_export
def multiply(x, y, /, *, out=None, where=None):
  """jnp.multiply: elementwise x * y with broadcasting; booleans give logical and."""
  if out is not None or where is not None:
    _ufunc_kwargs("multiply", out, where)
  x0, y0 = x, y
  x, y = promote_args("multiply", x, y)
  if (x is not x0 or y is not y0) and (_boolish(x0) or _boolish(y0)):
    out = _pred_product(x0, y0, x, y)
    if out is not None:
      return out
  try:
    return lax.mul(x, y)
  except TypeError:
    if _dtype(x) == dtypes.bool_:
      return lax.bitwise_and(x, y)
    raise


_PRED_PRODUCT_DTYPES = frozenset(np.dtype(d) for d in (np.float16, np.float32, np.float64,
                                                       np.complex64, np.complex128))


def _boolish(v):
  return type(v) is bool or getattr(v, "dtype", None) == np.bool_


def _pred_product(x0, y0, x, y):
  """An eager product of a boolean array and a float/complex one as JAX computes it: XLA
  turns ``mul(convert(p), a)`` into ``select(p, a, 0)`` (so ``[True, False] * nan`` is
  ``[nan, 0.]``) when the boolean has the product's shape (see
  ``backends/cpu/pred_mul.py``, which does the same in jitted code).  None when that
  does not apply (traced operands: the backends see the pattern in the jaxpr)."""
  if isinstance(x0, core.Tracer) or isinstance(y0, core.Tracer):
    return None
  if x.dtype not in _PRED_PRODUCT_DTYPES or isinstance(x, core.Tracer) or isinstance(
      y, core.Tracer):
    return None
  shape = np.broadcast_shapes(np.shape(x), np.shape(y))
  for p, o in ((x0, y), (y0, x)):
    if _is_bool(p) and np.shape(p) == shape:
      from pyjax._src.lax import shapes as lax_s
      if np.shape(o) != shape:
        o = lax_s.broadcast_in_dim(o, shape, tuple(range(len(shape) - np.ndim(o), len(shape))))
      return lax.select_n(p, _full_like(o, 0), o)
  return None


# --- unary functions that are not one primitive -----------------------------------------
@_export
def positive(x, /):
  """jnp.positive: returns x (as an array)."""
  check_arraylike("positive", x)
  return asarray_weak(x)


@_export
def absolute(x, /):
  """jnp.absolute: |x|; unsigned and bool inputs are returned unchanged."""
  check_arraylike("absolute", x)
  x = asarray_weak(x)
  d = _dtype(x)
  if d == dtypes.bool_ or dtypes.is_unsigned(d):
    return x
  return lax.abs(x)


abs = absolute  # noqa: A001
__all__.append("abs")


@_export
def fabs(x, /):
  """jnp.fabs: |x| as a float; complex inputs are a TypeError."""
  check_arraylike("fabs", x)
  if _is_complex(x):
    raise TypeError("ufunc 'fabs' does not support complex dtypes")
  x, = promote_dtypes_inexact(x)
  return lax.abs(x)


def _floor_like(name, lax_fn):
  def f(x, /):
    check_arraylike(name, x)
    x = asarray_weak(x)
    if _is_int(x) or _is_bool(x):
      return x
    return lax_fn(x)
  f.__name__ = f.__qualname__ = name
  f.__doc__ = f"jnp.{name}: integer and bool inputs are returned unchanged."
  __all__.append(name)
  return f


floor = _floor_like("floor", lax.floor)
ceil = _floor_like("ceil", lax.ceil)
trunc = _floor_like("trunc", lambda x: _where(lax.lt(x, _const(x, 0)), lax.ceil(x), lax.floor(x)))
fix = trunc  # not exported: jax.numpy.fix was removed in JAX 0.10 (use trunc)


@_export
def rint(x, /):
  """jnp.rint: round half to even; integer and bool inputs become the default float."""
  check_arraylike("rint", x)
  x = asarray_weak(x)
  if _is_int(x) or _is_bool(x):  # the default float (float64 with x64), as JAX
    return lax._convert_element_type(x, dtypes.default_float_dtype(), False)
  if _is_complex(x):
    return lax.complex(rint(lax.real(x)), rint(lax.imag(x)))
  return lax.round(x, _RM.TO_NEAREST_EVEN)


@_export
@_library_function(jit=('round', ('decimals', 'out')))
def round(a, decimals=0, out=None):  # noqa: A001
  """jnp.round: half to even, like NumPy; floats are scaled by 10**decimals."""
  if out is not None:
    raise ValueError("The 'out' argument to jnp.round is not supported.")
  check_arraylike("round", a)
  decimals = operator.index(decimals)
  a = asarray_weak(a)
  d = _dtype(a)
  if d == dtypes.bool_:
    raise ValueError(f"data type {np.bool_!r} not inexact")
  if dtypes.is_int(d):
    if decimals < 0:
      raise NotImplementedError("integer np.round not implemented for decimals < 0")
    return a
  if dtypes.is_complex(d):
    return lax.complex(_round_float(lax.real(a), decimals), _round_float(lax.imag(a), decimals))
  return _round_float(a, decimals)


def _round_float(x, decimals):
  if decimals == 0:
    return lax.round(x, _RM.TO_NEAREST_EVEN)
  d = _dtype(x)
  xw = lax._convert_element_type(x, dtypes.float32, x.weak_type) if d == dtypes.float16 else x
  factor = _const(xw, 10.0 ** decimals)
  out = lax.div(lax.round(lax.mul(xw, factor), _RM.TO_NEAREST_EVEN), factor)
  return lax._convert_element_type(out, d, x.weak_type) if d == dtypes.float16 else out


around = round
__all__.append("around")


@_export
def square(x, /):
  """jnp.square: x * x; booleans are promoted to the default integer."""
  check_arraylike("square", x)
  x, = promote_dtypes_numeric(x)
  return lax.square(x)


@_export
def reciprocal(x, /):
  """jnp.reciprocal: 1 / x (integers are promoted to floats)."""
  check_arraylike("reciprocal", x)
  x, = promote_dtypes_inexact(x)
  return lax.integer_pow(x, -1)


@_export
def log2(x, /):
  """jnp.log2: base-2 logarithm, computed as log(x) / log(2) like JAX."""
  check_arraylike("log2", x)
  x, = promote_dtypes_inexact(x)
  if _is_complex(x):
    r = lax.log(x)
    ln2 = lax.log(_constant_like(lax.real(r), 2))
    return lax.complex(lax.div(lax.real(r), ln2), lax.div(lax.imag(r), ln2))
  return lax.div(lax.log(x), lax.log(_constant_like(x, 2)))


@_export
def log10(x, /):
  """jnp.log10: base-10 logarithm, computed as log(x) * log10(e) like JAX."""
  check_arraylike("log10", x)
  x, = promote_dtypes_inexact(x)
  r = lax.log(x)
  if _is_complex(x):
    re, im = lax.real(r), lax.imag(r)
    c = _constant_like(re, np.log10(np.e))
    return lax.complex(lax.mul(re, c), lax.mul(im, c))
  return lax.mul(r, _constant_like(r, np.log10(np.e)))


@_export
def deg2rad(x, /):
  """jnp.deg2rad (jnp.radians): x * pi / 180."""
  check_arraylike("deg2rad", x)
  x, = promote_dtypes_inexact(x)
  return lax.mul(x, _const(x, np.pi / 180))


@_export
def rad2deg(x, /):
  """jnp.rad2deg (jnp.degrees): x * 180 / pi."""
  check_arraylike("rad2deg", x)
  x, = promote_dtypes_inexact(x)
  return lax.mul(x, _const(x, 180 / np.pi))


radians, degrees = deg2rad, rad2deg
__all__ += ["radians", "degrees"]


@_export
@_library_function(jit=('sinc', ()))
def sinc(x, /):
  """jnp.sinc: sin(pi x) / (pi x), and 1 at x == 0."""
  check_arraylike("sinc", x)
  x, = promote_dtypes_inexact(x)
  eq_zero = lax.eq(x, _const(x, 0))
  pi_x = lax.mul(_const(x, np.pi), x)
  safe = _where(eq_zero, _full_like(x, 1), pi_x)
  return _where(eq_zero, _full_like(x, 1), lax.div(lax.sin(safe), safe))


@_export
def i0(x):
  """jnp.i0: modified Bessel function of order 0 (real inputs only)."""
  check_arraylike("i0", x)
  x, = promote_dtypes_inexact(x)
  if _is_complex(x):
    raise ValueError(f"Unsupported input type to jax.numpy.i0: {_dtype(x)}")
  return _i0_custom()(x)


def _i0(x):
  ax = lax.abs(x)
  return lax.mul(lax.exp(ax), lax.bessel_i0e(ax))


def _i0_jvp(primals, tangents):
  """JAX's rule: differentiate exp(|x|)*i0e(|x|), but with tangent 0 at x == 0 (where abs's
  subgradient would give 1 times the tangent; i0 is even, so its derivative is 0 there)."""
  from pyjax._src.api_ad import jvp
  x, = primals
  primal_out, tangent_out = jvp(_i0, primals, tangents)
  return primal_out, _where(lax.eq(x, _const(x, 0)), 0.0, tangent_out)


_i0_cache = []


def _i0_custom():
  """The custom_jvp function behind jnp.i0 (built on first use: api_ad imports lax)."""
  if not _i0_cache:
    from pyjax._src.api_ad import custom_jvp
    f = custom_jvp(_i0)
    f.defjvp(_i0_jvp)
    _i0_cache.append(f)
  return _i0_cache[0]


# --- classification ---------------------------------------------------------------------
@_export
def isfinite(x, /):
  """jnp.isfinite: True where x is neither infinite nor NaN (always for integers)."""
  check_arraylike("isfinite", x)
  x = asarray_weak(x)
  if _is_float(x):
    return lax.is_finite(x)
  if _is_complex(x):
    return lax.bitwise_and(lax.is_finite(lax.real(x)), lax.is_finite(lax.imag(x)))
  return _full_like(x, True, dtypes.bool_)


def _isinf(x):
  if _is_float(x):
    return lax.eq(lax.abs(x), _constant_like(x, np.inf))
  if _is_complex(x):
    return lax.bitwise_or(_isinf(lax.real(x)), _isinf(lax.imag(x)))
  return _full_like(x, False, dtypes.bool_)


@_export
def isinf(x, /):
  """jnp.isinf: True where x is +inf or -inf (complex: either part)."""
  check_arraylike("isinf", x)
  return _isinf(asarray_weak(x))


def _isnan(x):
  return lax.ne(x, x)


@_export
def isnan(x, /):
  """jnp.isnan: True where x is NaN (x != x)."""
  check_arraylike("isnan", x)
  return _isnan(asarray_weak(x))


def _isposneginf(name, value):
  def f(x, /):
    check_arraylike(name, x)
    x = asarray_weak(x)
    if _is_complex(x):
      raise ValueError("isposinf/isneginf are not well defined for complex types")
    if _is_float(x):
      return lax.eq(x, _constant_like(x, value))
    return _full_like(x, False, dtypes.bool_)
  f.__name__ = f.__qualname__ = name
  __all__.append(name)
  return f


isposinf = _isposneginf("isposinf", np.inf)
isposinf.__doc__ = "jnp.isposinf: True where x is +inf (False for integers)."
isneginf = _isposneginf("isneginf", -np.inf)
isneginf.__doc__ = "jnp.isneginf: True where x is -inf (False for integers)."


def _signbit(x):
  d = _dtype(x)
  if dtypes.is_int(d):
    return lax.lt(x, _constant_like(x, 0))
  if d == dtypes.bool_:
    return _full_like(x, False, dtypes.bool_)
  if dtypes.is_complex(d):
    raise ValueError(f"jax.numpy.signbit is not well defined for {d}")
  bits = d.itemsize * 8
  int_t = np.dtype(f"int{bits}")
  i = lax.bitcast_convert_type(x, int_t)
  return lax.convert_element_type(lax.shift_right_arithmetic(i, _constant_like(i, bits - 1)),
                                  dtypes.bool_)


@_export
def signbit(x, /):
  """jnp.signbit: True where the sign bit is set (-0.0 included); complex is an error."""
  check_arraylike("signbit", x)
  return _signbit(asarray_weak(x))


@_export
def copysign(x1, x2, /):
  """jnp.copysign: |x1| with the sign bit of x2."""
  x1, x2 = promote_args_inexact("copysign", x1, x2)
  if _is_complex(x1):
    raise TypeError("copysign does not support complex-valued inputs")
  return _where(_signbit(x2), lax.neg(lax.abs(x1)), lax.abs(x1))


# --- complex parts ----------------------------------------------------------------------
@_export
def real(val, /):
  """jnp.real: the real part (real inputs are returned as arrays)."""
  check_arraylike("real", val)
  val = asarray_weak(val)
  return lax.real(val) if _is_complex(val) else val


@_export
def imag(val, /):
  """jnp.imag: the imaginary part (zeros for real inputs)."""
  check_arraylike("imag", val)
  val = asarray_weak(val)
  return lax.imag(val) if _is_complex(val) else _full_like(val, 0)


@_export
def conjugate(x, /):
  """jnp.conjugate (jnp.conj): complex conjugate; real inputs are returned unchanged."""
  check_arraylike("conjugate", x)
  x = asarray_weak(x)
  return lax.conj(x) if _is_complex(x) else x


conj = conjugate
__all__.append("conj")


@_export
def angle(z, deg=False):
  """jnp.angle: the argument of z (atan2(imag, real)), in degrees if ``deg``.  Integer and
  bool inputs, and (as in JAX) 0-d real floating inputs, give the default float dtype."""
  check_arraylike("angle", z)
  z = asarray_weak(z)
  d = _dtype(z)
  if _is_complex(z):
    re, im = lax.real(z), lax.imag(z)
  else:
    re, im = z, _full_like(z, 0)
  if not dtypes.is_inexact(d) or (dtypes.is_float(d) and not np.shape(z)):
    f = dtypes.default_float_dtype()
    re = lax.convert_element_type(re, f)
    im = lax.convert_element_type(im, f)
  out = lax.atan2(im, re)
  return lax.mul(out, _const(out, 180 / np.pi)) if deg else out


# --- logical and bitwise ----------------------------------------------------------------
def _to_bool(x):
  return x if _is_bool(x) else lax.ne(x, _const(x, 0))


def _logical_binop(name, lax_fn):
  def f(x1, x2, /, *, out=None, where=None):
    if out is not None or where is not None:
      _ufunc_kwargs(name, out, where)
    x1, x2 = promote_args(name, x1, x2)
    return lax_fn(_to_bool(x1), _to_bool(x2))
  f.__name__ = f.__qualname__ = name
  f.__doc__ = f"jnp.{name}: elementwise, on the truth values (x != 0) of the arguments."
  __all__.append(name)
  return f


logical_and = _logical_binop("logical_and", lax.bitwise_and)
logical_or = _logical_binop("logical_or", lax.bitwise_or)
logical_xor = _logical_binop("logical_xor", lax.bitwise_xor)


@_export
def logical_not(x, /):
  """jnp.logical_not: not x, for any dtype (x != 0)."""
  check_arraylike("logical_not", x)
  return lax.bitwise_not(_to_bool(asarray_weak(x)))


bitwise_and = _one_to_one_binop("bitwise_and", lax.bitwise_and, ufunc=True)
bitwise_or = _one_to_one_binop("bitwise_or", lax.bitwise_or, ufunc=True)
bitwise_xor = _one_to_one_binop("bitwise_xor", lax.bitwise_xor, ufunc=True)


def _bitwise_not(name):
  def f(x, /):
    check_arraylike(name, x)
    return lax.bitwise_not(asarray_weak(x))
  f.__name__ = f.__qualname__ = name
  f.__doc__ = f"jnp.{name}: bitwise not of integers, logical not of booleans."
  __all__.append(name)
  return f


bitwise_not = _bitwise_not("bitwise_not")
invert = _bitwise_not("invert")
bitwise_invert = _bitwise_not("bitwise_invert")


def _left_shift(name):
  def f(x1, x2, /):
    x1, x2 = promote_args_numeric(name, x1, x2)
    return lax.shift_left(x1, x2)
  f.__name__ = f.__qualname__ = name
  f.__doc__ = (f"jnp.{name}: x1 << x2 (booleans become int32); shifts by the bit width "
               "or more give 0.")
  __all__.append(name)
  return f


left_shift = _left_shift("left_shift")
bitwise_left_shift = _left_shift("bitwise_left_shift")


@_export
def right_shift(x1, x2, /):
  """jnp.right_shift: arithmetic for signed integers, logical for unsigned ones."""
  x1, x2 = promote_args_numeric("right_shift", x1, x2)
  if dtypes.is_unsigned(_dtype(x1)):
    return lax.shift_right_logical(x1, x2)
  return lax.shift_right_arithmetic(x1, x2)


bitwise_right_shift = right_shift
__all__ += ["bitwise_right_shift"]


@_export
def bitwise_count(x, /):
  """jnp.bitwise_count: the number of set bits of |x|, as uint8."""
  check_arraylike("bitwise_count", x)
  x, = promote_dtypes_numeric(x)
  if not dtypes.is_unsigned(_dtype(x)):
    x = lax.abs(x)
  return lax.convert_element_type(lax.population_count(x), dtypes.uint8)


# --- division, remainder, powers --------------------------------------------------------
def _int_floor_divide(x1, x2):
  q = lax.div(x1, x2)
  if dtypes.is_unsigned(_dtype(x1)):
    return q
  select = lax.bitwise_and(lax.ne(lax.sign(x1), lax.sign(x2)),
                           lax.ne(lax.rem(x1, x2), _weak_const(x1, 0)))
  return _where(select, lax.sub(q, _weak_const(q, 1)), q)


def _float_divmod(x1, x2):
  mod = lax.rem(x1, x2)
  div = lax.div(_where(lax.eq(x2, _weak_const(x2, 0)), x1, lax.sub(x1, mod)), x2)
  ind = lax.bitwise_and(lax.ne(mod, _weak_const(mod, 0)), lax.ne(lax.sign(x2), lax.sign(mod)))
  mod = _where(ind, lax.add(mod, x2), mod)
  div = _where(ind, lax.sub(div, _weak_const(div, 1)), div)
  return lax.round(div), mod


@_export
def floor_divide(x1, x2, /):
  """jnp.floor_divide: x1 // x2 (integer x // 0 follows XLA: -1 for signed types, the
  maximum for unsigned ones)."""
  x1, x2 = promote_args_numeric("floor_divide", x1, x2)
  d = _dtype(x1)
  if dtypes.is_int(d):
    return _int_floor_divide(x1, x2)
  if dtypes.is_complex(d):
    raise TypeError("floor_divide does not support complex-valued inputs")
  return _float_divmod(x1, x2)[0]


@_export
def remainder(x1, x2, /):
  """jnp.remainder: x1 % x2 with the sign of x2; integer x % 0 is 0."""
  x1, x2 = promote_args_numeric("remainder", x1, x2)
  zero = _const(x1, 0)
  if _is_int(x1):
    x2 = _where(lax.eq(x2, zero), _full_like(x2, 1), x2)
  trunc_mod = lax.rem(x1, x2)
  do_plus = lax.bitwise_and(lax.ne(lax.lt(trunc_mod, zero), lax.lt(x2, zero)),
                            lax.ne(trunc_mod, zero))
  return _where(do_plus, lax.add(trunc_mod, x2), trunc_mod)


mod = remainder
__all__.append("mod")


@_export
def fmod(x1, x2, /):
  """jnp.fmod: remainder with the sign of x1; integer x % 0 is 0 (boolean inputs follow
  XLA's x % 0 == x, as in JAX)."""
  check_arraylike("fmod", x1, x2)
  is_int = dtypes.is_int(dtypes.lattice_result_type(x1, x2)[0])
  x1, x2 = promote_args_numeric("fmod", x1, x2)
  if is_int:
    x2 = _where(lax.eq(x2, _const(x2, 0)), _full_like(x2, 1), x2)
  return lax.rem(x1, x2)


@_export
def divmod(x1, x2, /):  # noqa: A001
  """jnp.divmod: (floor_divide(x1, x2), remainder(x1, x2))."""
  x1, x2 = promote_args_numeric("divmod", x1, x2)
  if _is_int(x1):
    return floor_divide(x1, x2), remainder(x1, x2)
  return _float_divmod(x1, x2)


def _static_int(x):
  """The exponent as a Python int when it is concrete and usable as an index (Python ints
  and bools, NumPy integer scalars, concrete 0-d integer arrays): jnp.power then uses
  lax.integer_pow, as JAX does.  None otherwise."""
  if isinstance(x, core.Tracer):
    return None
  try:
    return operator.index(x)
  except TypeError:
    return None


@_export
def power(x1, x2, /):
  """jnp.power: x1 ** x2.

  A concrete integer exponent (Python int, NumPy integer scalar or 0-d array) becomes
  ``lax.integer_pow`` on x1 alone, whose dtype is kept; integer arrays are raised by
  repeated squaring over the low 6 bits of the exponent (like JAX); float x1 with an
  integer array x2 uses ``lax.pow`` with the integer exponent."""
  check_arraylike("power", x1, x2)
  if hasattr(x2, "__jax_array__"):
    x2 = x2.__jax_array__()
  y = _static_int(x2)
  if y is not None:
    x1, = promote_dtypes_numeric(x1)
    return lax.integer_pow(x1, y)
  x1p, x2p = promote_args_numeric("power", x1, x2)
  if dtypes.is_int(_dtype(x1p)):
    return _int_power(x1p, x2p)
  if dtypes.is_inexact(_dtype(x1)) and _is_int(x2):
    # an inexact base with an integer exponent: lax.pow on the unpromoted operands
    x1b, x2b = promote_shapes("power", asarray_weak(x1), asarray_weak(x2))
    return lax.pow(x1b, x2b)
  return lax.pow(x1p, x2p)


def _int_power(x1, x2):
  """Repeated squaring over the low 6 bits of the exponent, as JAX does for integer
  arrays (x ** 64 and beyond overflows every integer type)."""
  zero, one = _constant_like(x2, 0), _constant_like(x2, 1)  # strong, as JAX's
  acc = _where(lax.bitwise_and(lax.eq(x1, zero), lax.ne(x2, zero)), zero, one)
  for _ in range(6):
    acc = _where(lax.ne(lax.bitwise_and(x2, one), zero), lax.mul(acc, x1), acc)
    x1 = lax.mul(x1, x1)
    x2 = lax.shift_right_logical(x2, one)
  return acc


pow = power  # noqa: A001
__all__.append("pow")


@_export
def logaddexp(x1, x2, /, *, out=None, where=None):
  """jnp.logaddexp: log(exp(x1) + exp(x2)) without overflow.  As in JAX, a custom_jvp
  function (after promotion): the tangent is t1*exp(x1 - out) + t2*exp(x2 - out) with
  +inf values replaced by 0 (so equal arguments get 0.5 each, and inf/inf gets 1 each)."""
  if out is not None or where is not None:
    _ufunc_kwargs("logaddexp", out, where)
  x1, x2 = promote_args_inexact("logaddexp", x1, x2)
  return _logaddexp_custom()[0](x1, x2)


@_export
def logaddexp2(x1, x2, /, *, out=None, where=None):
  """jnp.logaddexp2: log2(2**x1 + 2**x2) without overflow (a custom_jvp function, as
  jnp.logaddexp, with 2**(x - out) weights)."""
  if out is not None or where is not None:
    _ufunc_kwargs("logaddexp2", out, where)
  x1, x2 = promote_args_inexact("logaddexp2", x1, x2)
  return _logaddexp_custom()[1](x1, x2)


def _logaddexp_impl(x1, x2, exp_fn, scale):
  if _is_complex(x1):
    return _complex_logaddexp(x1, x2, exp_fn, scale,
                              np.pi if scale is None else np.pi / np.log(2))
  amax = lax.max(x1, x2)
  delta = lax.sub(x1, x2)
  nan = _isnan(delta)
  both = lax.add(x1, x2)
  t = lax.log1p(exp_fn(lax.neg(lax.abs(delta))))
  if scale is not None:
    t = lax.mul(_const(t, scale), t)
  return _where(nan, both, lax.add(amax, t))


def _replace_posinf(x):
  """x, with 0 where (the real part of) x is +inf."""
  re = lax.real(x) if _is_complex(x) else x
  return lax.select(lax.eq(re, _const(re, np.inf)), _full_like(x, 0), x)


def _logaddexp_jvp_rule(fn, exp_fn, primals, tangents):
  x1, x2 = primals
  t1, t2 = tangents
  out = fn(x1, x2)
  d1 = lax.mul(t1, exp_fn(lax.sub(_replace_posinf(x1), _replace_posinf(out))))
  d2 = lax.mul(t2, exp_fn(lax.sub(_replace_posinf(x2), _replace_posinf(out))))
  return out, lax.add(d1, d2)


_logaddexp_cache = []


def _logaddexp_custom():
  """The custom_jvp functions behind jnp.logaddexp and jnp.logaddexp2 (built on first use:
  api_ad imports lax)."""
  if not _logaddexp_cache:
    from pyjax._src.api_ad import custom_jvp

    def logaddexp(x1, x2):
      return _logaddexp_impl(x1, x2, lax.exp, None)

    def logaddexp2(x1, x2):
      return _logaddexp_impl(x1, x2, lax.exp2, 1 / np.log(2))

    f, f2 = custom_jvp(logaddexp), custom_jvp(logaddexp2)

    def _logaddexp_jvp(primals, tangents):
      return _logaddexp_jvp_rule(f, lax.exp, primals, tangents)

    def _logaddexp2_jvp(primals, tangents):
      return _logaddexp_jvp_rule(f2, lax.exp2, primals, tangents)

    f.defjvp(_logaddexp_jvp)
    f2.defjvp(_logaddexp2_jvp)
    _logaddexp_cache.extend([f, f2])
  return _logaddexp_cache


def _complex_logaddexp(x1, x2, exp_fn, scale, half_period):
  amax = lax.max(x1, x2)
  t = lax.log1p(exp_fn(lax.sub(lax.add(x1, x2), lax.mul(amax, _const(amax, 2)))))
  if scale is not None:
    t = lax.mul(_const(t, scale), t)
  out = lax.add(amax, t)
  re, im = lax.real(out), lax.imag(out)
  # the imaginary part is wrapped into [-half_period, half_period)
  m = lax.rem(lax.add(im, _const(im, half_period)), _const(im, 2 * half_period))
  m = _where(lax.lt(m, _const(m, 0)), lax.add(m, _const(m, 2 * half_period)), m)
  return lax.complex(re, lax.sub(m, _const(m, half_period)))


@_export
@_library_function(jit=('hypot', ()))
def hypot(x1, x2, /):
  """jnp.hypot: sqrt(x1**2 + x2**2) without overflow; inf if either is infinite."""
  x1, x2 = promote_args_inexact("hypot", x1, x2)
  if _is_complex(x1):
    raise ValueError("jnp.hypot is not well defined for complex-valued inputs. Please "
                     "convert to real values first, such as by using abs(x)")
  x1, x2 = lax.abs(x1), lax.abs(x2)
  inf = _const(x1, np.inf)
  idx_inf = lax.bitwise_or(lax.eq(x1, inf), lax.eq(x2, inf))
  big, small = lax.max(x1, x2), lax.min(x1, x2)
  zero = lax.eq(big, _const(big, 0))
  r = lax.div(small, _where(zero, _full_like(big, 1), big))
  out = lax.mul(big, lax.sqrt(lax.add(_const(r, 1), lax.square(r))))
  out = _where(zero, big, out)
  return _where(idx_inf, _full_like(out, np.inf), out)


@_export
@_library_function(jit=('heaviside', ()))
def heaviside(x1, x2, /):
  """jnp.heaviside: 0 for x1 < 0, 1 for x1 > 0, x2 at 0 (NaN x1 gives NaN)."""
  check_arraylike("heaviside", x1, x2)
  x1, x2 = promote_dtypes_inexact(x1, x2)  # shapes broadcast in the selects, as JAX's
  zero, one = _const(x1, 0), _const(x1, 1)
  mid = _where(_isnan(x1), x1, x2)
  return _where(lax.lt(x1, zero), zero, _where(lax.gt(x1, zero), one, mid))


def _complex_or_real_cmp(x1, x2, real_cmp):
  if not _is_complex(x1):
    return real_cmp(x1, x2)
  re1, re2 = lax.real(x1), lax.real(x2)
  return lax.select(lax.eq(re1, re2), real_cmp(lax.imag(x1), lax.imag(x2)), real_cmp(re1, re2))


@_export
def fmax(x1, x2):
  """jnp.fmax: elementwise maximum that ignores NaNs (complex: lexicographic)."""
  x1, x2 = promote_args("greater", x1, x2)  # JAX's errors come from jnp.greater
  pick = lax.bitwise_or(_complex_or_real_cmp(x1, x2, lax.gt), _isnan(x2))
  return _where(pick, x1, x2)


@_export
def fmin(x1, x2):
  """jnp.fmin: elementwise minimum that ignores NaNs (complex: lexicographic)."""
  x1, x2 = promote_args("less", x1, x2)  # JAX's errors come from jnp.less
  pick = lax.bitwise_or(_complex_or_real_cmp(x1, x2, lax.lt), _isnan(x2))
  return _where(pick, x1, x2)


def _gcd(a, b):
  """Euclid's algorithm, as JAX's while loop runs it: eagerly until every b is 0, traced
  for a fixed number of steps that covers the dtype's range."""
  zero = _const(b, 0)
  weak = core.get_aval(a).weak_type and core.get_aval(b).weak_type and type(zero) is int
  steps = int(1.45 * 8 * _dtype(a).itemsize) + 2
  for _ in range(steps):
    if not isinstance(b, core.Tracer) and not np.any(np.asarray(b)):
      break
    nz = lax.ne(b, zero)
    n = _where(nz, b, a)
    q = _where(nz, lax.rem(a, b), zero)
    swap = lax.lt(n, q)
    a, b = _where(swap, q, n), _where(swap, n, q)
  if core.get_aval(a).weak_type != weak:  # the loop carry's type is the body's
    a = lax._convert_element_type(a, _dtype(a), weak)
  return a


@_export
def gcd(x1, x2):
  """jnp.gcd: greatest common divisor of integers."""
  check_arraylike("gcd", x1, x2)
  x1, x2 = promote_dtypes(x1, x2)  # the dtype check comes before any shape check
  if not _is_int(x1):
    raise ValueError("Arguments to jax.numpy.gcd must be integers.")
  a, b = absolute(x1), absolute(x2)
  try:
    shape = np.broadcast_shapes(np.shape(a), np.shape(b))
  except ValueError:
    raise ValueError("Incompatible shapes for broadcasting: shapes="
                     f"{[tuple(np.shape(a)), tuple(np.shape(b))]}") from None
  if np.shape(a) != shape or np.shape(b) != shape:
    from pyjax._src.lax import shapes as lax_s
    a = lax_s.broadcast_in_dim(a, shape, tuple(range(len(shape) - np.ndim(a), len(shape))))
    b = lax_s.broadcast_in_dim(b, shape, tuple(range(len(shape) - np.ndim(b), len(shape))))
  return _gcd(a, b)


@_export
def lcm(x1, x2):
  """jnp.lcm: least common multiple of integers (0 if either is 0)."""
  check_arraylike("lcm", x1, x2)
  x1, x2 = promote_dtypes(x1, x2)
  if not _is_int(x1):
    raise ValueError("Arguments to jax.numpy.lcm must be integers.")
  a, b = absolute(x1), absolute(x2)
  d = gcd(a, b)
  return _where(lax.eq(d, _const(d, 0)), 0, lax.mul(a, floor_divide(b, d)))


@_export
def frexp(x, /):
  """jnp.frexp: (mantissa, exponent) with x == mantissa * 2**exponent, 0.5 <= |m| < 1;
  the exponent is int32."""
  check_arraylike("frexp", x)
  x, = promote_dtypes_inexact(x)
  if _is_complex(x):
    raise TypeError("frexp does not support complex-valued inputs")
  return _frexp(x)


_frexp_cache = []


def _frexp(x):
  """(mantissa, exponent) as a custom_jvp function, as in JAX: the mantissa's tangent is
  ``t * 2**-e`` (so ``ldexp``, built on it, gets ``t * 2**x2``); the bit manipulation
  below has no derivative of its own."""
  if not _frexp_cache:
    from pyjax._src.api_ad import custom_jvp
    f = custom_jvp(_frexp_bits)
    f.defjvp(_frexp_jvp)
    _frexp_cache.append(f)
  return _frexp_cache[0](x)


def _frexp_jvp(primals, tangents):
  from pyjax._src.interpreters import ad
  x, = primals
  t, = tangents
  m, e = _frexp_bits(x)
  scale = lax.exp2(lax.neg(lax.convert_element_type(e, _dtype(x))))
  return (m, e), (lax.mul(t, scale), np.zeros(np.shape(e), ad.float0))


def _frexp_bits(x):
  d = _dtype(x)
  info = dtypes.finfo(d)
  nbits = d.itemsize * 8
  int_t = np.dtype(f"int{nbits}")
  nmant = int(info.nmant)
  exp_mask = (1 << (nbits - 1 - nmant)) - 1
  bias = exp_mask >> 1
  denorm = lax.lt(lax.abs(x), _const(x, info.tiny))
  x1 = _where(denorm, lax.mul(x, _const(x, 2.0 ** nmant)), x)
  e_adj = _where(denorm, _full_like(x, -nmant, int_t), _full_like(x, 0, int_t))
  bits = lax.bitcast_convert_type(x1, int_t)
  e = lax.sub(lax.bitwise_and(lax.shift_right_arithmetic(bits, _const(bits, nmant)),
                              _const(bits, exp_mask)), _const(bits, bias))
  e = lax.add(e_adj, lax.add(e, _const(e, 1)))
  clear = ~np.array(exp_mask << nmant, np.uint64).astype(int_t)  # clears the exponent field
  m_bits = lax.bitwise_or(lax.bitwise_and(bits, np.array(clear, int_t)),
                          _const(bits, (bias - 1) << nmant))
  m = lax.bitcast_convert_type(m_bits, d)
  special = lax.bitwise_or(lax.bitwise_or(_isinf(x), _isnan(x)), lax.eq(x, _const(x, 0)))
  e = _where(special, _full_like(e, 0), e)
  m = _where(special, x, m)
  if int_t != dtypes.int32:
    e = lax.convert_element_type(e, dtypes.int32)
  return m, e


@_export
def ldexp(x1, x2, /):
  """jnp.ldexp: x1 * 2**x2 without intermediate overflow.  x2 must be an integer (or
  bool); the result has x1's inexact dtype (x2 does not take part in promotion)."""
  check_arraylike("ldexp", x1, x2)
  d1, d2 = _dtype(x1), _dtype(x2)
  if dtypes.is_complex(d1) or dtypes.is_inexact(d2):
    raise ValueError(f"ldexp not supported for input types {(d1, d2)}")
  x1, = promote_dtypes_inexact(x1)
  d = _dtype(x1)
  x2 = lax.convert_element_type(asarray_weak(x2), d)
  x1b, x2 = promote_shapes("ldexp", x1, x2)
  m, e = _frexp(x1b)
  e = lax.add(lax.convert_element_type(e, d), x2)
  pos = lax.gt(e, _const(e, 0))
  m = _where(pos, lax.mul(m, _const(m, 2)), m)
  e = _where(pos, lax.sub(e, _const(e, 1)), e)
  x = lax.mul(m, lax.pow(_const(e, 2), e))
  return _where(lax.bitwise_or(_isinf(x1b), lax.eq(x1b, _const(x1b, 0))), x1, x)


@_export
def modf(x, /, out=None):
  """jnp.modf: (fractional part, integral part), both with x's sign."""
  check_arraylike("modf", x)
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.modf is not supported.")
  x, = promote_dtypes_inexact(x)
  whole = _where(lax.ge(x, _const(x, 0)), lax.floor(x), lax.ceil(x))
  return lax.sub(x, whole), whole


@_export
def spacing(x, /):
  """jnp.spacing: distance to the next representable number away from zero (float16:
  toward +inf, as in JAX)."""
  check_arraylike("spacing", x)
  x, = promote_dtypes_inexact(x)
  d = _dtype(x)
  if dtypes.is_complex(d):
    raise ValueError("jnp.spacing is not defined for complex inputs.")
  if d == dtypes.float16:
    return lax.sub(lax.nextafter(x, _where(True, _constant_like(x, np.inf), x)), x)
  sb = _signbit(x)
  t = lax.nextafter(x, _where(sb, _constant_like(x, -np.inf), _constant_like(x, np.inf)))
  u = lax.sub(t, x)
  tiny = dtypes.finfo(d).smallest_subnormal
  smallest = _where(sb, _constant_like(x, -tiny), _constant_like(x, tiny))
  return _where(lax.eq(u, _const(u, 0)), smallest, u)
