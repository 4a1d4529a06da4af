"""Elementwise primitives: arithmetic, transcendental and special functions, comparisons,
bitwise ops, conversions, select_n and clamp.

Shape rule: operands of equal rank broadcast over size-1 dimensions and rank-0 operands
broadcast everywhere (lax's rule); dtypes must be equal (lax does no promotion); the
result is weakly typed only if every operand is.  JVP, transpose and batching rules are
registered at the end of this module.
"""
from __future__ import annotations

import enum
import math

import numpy as np

from pyjax._src import core, dtypes
from pyjax._src.avals import ShapedArray
from pyjax._src.lax import utils
from pyjax._src.lax.utils import unop, binop
from pyjax._src.runtime.array import Array

__all__ = ["neg", "sign", "floor", "ceil", "is_finite", "exp", "exp2", "log", "expm1", "log1p", "tanh", "logistic", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "sqrt", "rsqrt", "cbrt", "square", "abs", "real", "imag", "conj", "erf", "erfc", "erf_inv", "lgamma", "digamma", "bessel_i0e", "bessel_i1e", "bitwise_not", "population_count", "clz", "add", "sub", "mul", "div", "rem", "max", "min", "atan2", "nextafter", "bitwise_and", "bitwise_or", "bitwise_xor", "shift_left", "shift_right_arithmetic", "shift_right_logical", "eq", "ne", "lt", "le", "gt", "ge", "igamma", "igammac", "igamma_grad_a", "random_gamma_grad", "polygamma", "zeta", "complex", "pow", "integer_pow", "reciprocal", "round", "regularized_incomplete_beta", "betainc", "convert_element_type", "bitcast_convert_type", "reduce_precision", "select_n", "select", "clamp", "RoundingMethod", "stop_gradient", "mulhi", "mulhi_p", "eq_to_p", "le_to_p", "lt_to_p", "dtype", "Tolerance", "AccuracyMode"]

_real_of = lambda d: {dtypes.complex64: dtypes.float32, dtypes.complex128: dtypes.float64}.get(d, d)
_to_bool = lambda d: dtypes.bool_

# --- unary math -------------------------------------------------------------------------
neg_p = unop("neg", utils.numeric)
sign_p = unop("sign", utils.numeric)
floor_p = unop("floor", utils.floating)
ceil_p = unop("ceil", utils.floating)
round_p = unop("round", utils.floating)
is_finite_p = unop("is_finite", utils.floating, _to_bool)
exp_p = unop("exp", utils.inexact)
exp2_p = unop("exp2", utils.inexact)
log_p = unop("log", utils.inexact)
expm1_p = unop("expm1", utils.inexact)
log1p_p = unop("log1p", utils.inexact)
tanh_p = unop("tanh", utils.inexact)
logistic_p = unop("logistic", utils.inexact)
sin_p = unop("sin", utils.inexact)
cos_p = unop("cos", utils.inexact)
tan_p = unop("tan", utils.inexact)
asin_p = unop("asin", utils.inexact)
acos_p = unop("acos", utils.inexact)
atan_p = unop("atan", utils.inexact)
sinh_p = unop("sinh", utils.inexact)
cosh_p = unop("cosh", utils.inexact)
asinh_p = unop("asinh", utils.inexact)
acosh_p = unop("acosh", utils.inexact)
atanh_p = unop("atanh", utils.inexact)
sqrt_p = unop("sqrt", utils.inexact)
rsqrt_p = unop("rsqrt", utils.inexact)
cbrt_p = unop("cbrt", utils.floating)
square_p = unop("square", utils.numeric)
abs_p = unop("abs", utils.float_complex_signed, _real_of)
real_p = unop("real", (utils._complex,), _real_of)
imag_p = unop("imag", (utils._complex,), _real_of)
conj_p = unop("conj", utils.float32_complex_float64, lambda d: d if dtypes.is_complex(d) else dtypes.to_complex_dtype(d))
erf_p = unop("erf", utils.floating)
erfc_p = unop("erfc", utils.floating)
erf_inv_p = unop("erf_inv", utils.floating)
lgamma_p = unop("lgamma", utils.floating)
digamma_p = unop("digamma", utils.floating)
bessel_i0e_p = unop("bessel_i0e", utils.floating)
bessel_i1e_p = unop("bessel_i1e", utils.floating)
not_p = unop("not", utils.int_or_bool)
population_count_p = unop("population_count", utils.integer)
clz_p = unop("clz", utils.integer)

# --- binary math ------------------------------------------------------------------------
add_p = binop("add", utils.numeric)
sub_p = binop("sub", utils.numeric)
mul_p = binop("mul", utils.numeric)
div_p = binop("div", utils.numeric)
rem_p = binop("rem", utils.float_or_int)
max_p = binop("max", utils.any_)
min_p = binop("min", utils.any_)
atan2_p = binop("atan2", utils.inexact)
nextafter_p = binop("nextafter", utils.floating)
complex_p = binop("complex", utils.float32_float64, dtypes.to_complex_dtype)
and_p = binop("and", utils.int_or_bool)
or_p = binop("or", utils.int_or_bool)
xor_p = binop("xor", utils.int_or_bool)
shift_left_p = binop("shift_left", utils.integer)
shift_right_arithmetic_p = binop("shift_right_arithmetic", utils.integer)
shift_right_logical_p = binop("shift_right_logical", utils.integer)
eq_p = binop("eq", utils.any_, _to_bool)
ne_p = binop("ne", utils.any_, _to_bool)
lt_p = binop("lt", utils.int_float_bool, _to_bool)
le_p = binop("le", utils.int_float_bool, _to_bool)
gt_p = binop("gt", utils.int_float_bool, _to_bool)
ge_p = binop("ge", utils.int_float_bool, _to_bool)
igamma_p = binop("igamma", utils.floating)
igammac_p = binop("igammac", utils.floating)
igamma_grad_a_p = binop("igamma_grad_a", utils.floating)
random_gamma_grad_p = binop("random_gamma_grad", utils.floating)
polygamma_p = binop("polygamma", utils.floating)
zeta_p = binop("zeta", utils.floating)

# pow: x inexact; y of x's dtype or an integer
pow_p = core.Primitive("pow")
pow_p.arg_names = ("x", "y")


@pow_p.def_abstract_eval
def _pow_abstract(x, y):
  shape = utils.broadcasting_shape("pow", [x.shape, y.shape])  # shape errors first, as JAX
  utils.check_dtype("pow", utils.inexact, x.dtype, 0)
  utils.check_dtype("pow", (utils._int, utils._float, utils._complex), y.dtype, 1)
  if not dtypes.is_int(y.dtype) and y.dtype != x.dtype:
    raise TypeError("the first argument to pow must have an inexact dtype (float or complex), "
                    "and the second argument must have an inexact or integer dtype, and two "
                    "inexact dtypes must match, but got "
                    f"{x.dtype.name} and {y.dtype.name} respectively.")
  return ShapedArray(shape, x.dtype, x.weak_type and y.weak_type)


# regularized incomplete beta: (a, b, x)
regularized_incomplete_beta_p = core.Primitive("regularized_incomplete_beta")


@regularized_incomplete_beta_p.def_abstract_eval
def _betainc_abstract(a, b, x):
  shape, weak = utils.naryop_avals("regularized_incomplete_beta", (utils.floating,) * 3, (a, b, x))
  return ShapedArray(shape, a.dtype, weak)


# integer_pow: y is a static Python int
integer_pow_p = core.Primitive("integer_pow")


@integer_pow_p.def_abstract_eval
def _integer_pow_abstract(x, *, y):
  utils.check_dtype("integer_pow", utils.numeric, x.dtype)
  if y < 0 and dtypes.is_int(x.dtype):
    raise TypeError(f"Integers cannot be raised to negative powers, got "
                    f"integer_pow({'~' if x.weak_type else ''}{x.str_short(short_dtypes=False)}, {y})")
  return x


class RoundingMethod(enum.IntEnum):
  AWAY_FROM_ZERO = 0
  TO_NEAREST_EVEN = 1

  def __str__(self):
    return str(int(self))


# --- conversions ------------------------------------------------------------------------
convert_element_type_p = core.Primitive("convert_element_type")
convert_element_type_p.param_printer = lambda p: {k: v for k, v in p.items()
                                                  if not (k == "sharding" and v is None)}


@convert_element_type_p.def_abstract_eval
def _convert_abstract(x, *, new_dtype, weak_type=False, sharding=None):
  return ShapedArray(x.shape, new_dtype, weak_type)


bitcast_convert_type_p = core.Primitive("bitcast_convert_type")


def _bit_width(d):
  if d in _sub_byte_bits:
    return _sub_byte_bits[d]
  return d.itemsize * 8


_sub_byte_bits = {d: b for d, b in ((dtypes.int4, 4), (dtypes.uint4, 4), (dtypes.int2, 2),
                                    (dtypes.uint2, 2)) if d is not None}
_sub_byte_bits.update({d: 4 for d in dtypes.float8_dtypes if d.name == "float4_e2m1fn"})


@bitcast_convert_type_p.def_abstract_eval
def _bitcast_abstract(x, *, new_dtype):
  old = x.dtype
  ob, nb = _bit_width(old), _bit_width(new_dtype)
  if ob == nb:
    shape = x.shape
  elif ob > nb:
    shape = x.shape + (ob // nb,)
  else:
    if not x.shape or x.shape[-1] * ob != nb:
      raise ValueError(f"Attempting to convert array of shape {x.shape} from {old.name} of size "
                       f"{ob} bits to {new_dtype.name} of size {nb}, bits but "
                       f"{x.shape[-1] if x.shape else 1} * {ob} != {nb}")
    shape = x.shape[:-1]
  if old != new_dtype and (old == dtypes.bool_ or new_dtype == dtypes.bool_
                           or dtypes.is_complex(old) or dtypes.is_complex(new_dtype)):
    raise TypeError("lax.bitcast_convert_type does not support bool or complex values unless the "
                    f"operand and destination types match. Got operand dtype={old.name}, "
                    f"new_dtype={new_dtype!r}. Consider using the arr.view() method instead.")
  return ShapedArray(shape, new_dtype, False)


reduce_precision_p = core.Primitive("reduce_precision")


@reduce_precision_p.def_abstract_eval
def _reduce_precision_abstract(x, *, exponent_bits, mantissa_bits):
  utils.check_dtype("reduce_precision", utils.floating, x.dtype)
  if exponent_bits < 1:
    raise ValueError(f"reduce_precision: exponent_bits must be positive; got {exponent_bits}")
  if mantissa_bits < 0:
    raise ValueError(f"reduce_precision: mantissa_bits must be non-negative; got {mantissa_bits}")
  return x


# --- selection --------------------------------------------------------------------------
select_n_p = core.Primitive("select_n")


@select_n_p.def_abstract_eval
def _select_n_abstract(which, *cases):
  if (len(cases) == 2 and which.dtype == dtypes.bool_ and cases[0] == cases[1]
      and (not which.shape or which.shape == cases[0].shape)):
    return cases[0]      # the common case (jnp.where of matching arrays), checked fast
  if not cases:
    raise ValueError("select_n() must have at least one case")
  if which.dtype != dtypes.bool_ and not dtypes.is_int(which.dtype):
    raise TypeError(f"select `which` must be boolean or integer type, got {which.dtype.name}.")
  if which.dtype == dtypes.bool_ and len(cases) > 2:
    raise TypeError("select with boolean `which` cannot have > 2 cases.")
  c0 = cases[0]
  for c in cases[1:]:
    if c.shape != c0.shape:
      raise TypeError(f"select cases must have the same shapes, got "
                      f"[{', '.join(str(c.shape) for c in cases)}].")
  for c in cases[1:]:
    if c.dtype != c0.dtype:
      raise TypeError(f"lax.select requires arguments to have the same dtypes, got "
                      f"{', '.join(c.dtype.name for c in cases)}. (Tip: jnp.where is a similar "
                      "function that does automatic type promotion on inputs).")
  if which.shape and which.shape != c0.shape:
    raise TypeError("select `which` must be scalar or have the same shape as cases, got `which` "
                    f"shape {which.shape} but case shape {c0.shape}.")
  return ShapedArray(c0.shape, c0.dtype, all(c.weak_type for c in cases))


clamp_p = core.Primitive("clamp")


@clamp_p.def_abstract_eval
def _clamp_abstract(lo, x, hi):
  for nm, a in (("min", lo), ("max", hi)):
    if a.shape and a.shape != x.shape:
      raise TypeError(f"clamp requires {nm}.shape == operand.shape or {nm}.shape == (), got "
                      f"{nm}.shape={a.shape}, operand.shape={x.shape}.")
  if lo.dtype != x.dtype or hi.dtype != x.dtype:
    raise TypeError(f"lax.clamp requires arguments to have the same dtypes, got "
                    f"{lo.dtype.name}, {x.dtype.name}, {hi.dtype.name}.")
  return ShapedArray(x.shape, x.dtype, x.weak_type and lo.weak_type and hi.weak_type)


# --- public lax functions ---------------------------------------------------------------
_DOCS = {
    "neg": "-x.  Integers wrap (neg(INT_MIN) == INT_MIN).",
    "sign": "-1, 0 or 1 by the sign of x (floats keep -0.0 and NaN; complex: x / |x|).",
    "floor": "Largest integer-valued float <= x.",
    "ceil": "Smallest integer-valued float >= x.",
    "is_finite": "True where x is neither infinite nor NaN (floating inputs only).",
    "exp": "e**x.",
    "log": "Natural logarithm.",
    "expm1": "e**x - 1, accurate near 0.",
    "log1p": "log(1 + x), accurate near 0.",
    "tanh": "Hyperbolic tangent.",
    "logistic": "1 / (1 + e**-x).",
    "sin": "Sine.", "cos": "Cosine.", "tan": "Tangent.",
    "asin": "Inverse sine.", "acos": "Inverse cosine.", "atan": "Inverse tangent.",
    "sinh": "Hyperbolic sine.", "cosh": "Hyperbolic cosine.",
    "asinh": "Inverse hyperbolic sine.", "acosh": "Inverse hyperbolic cosine.",
    "atanh": "Inverse hyperbolic tangent.",
    "sqrt": "Square root (correctly rounded for real inputs).",
    "rsqrt": "1 / sqrt(x).",
    "cbrt": "Cube root (real inputs only).",
    "square": "x * x.",
    "abs": "|x|; complex inputs give their real dtype; abs(INT_MIN) == INT_MIN.",
    "real": "Real part of a complex x.",
    "imag": "Imaginary part of a complex x.",
    "erf": "Error function.",
    "erfc": "Complementary error function 1 - erf(x).",
    "erf_inv": "Inverse error function.",
    "lgamma": "log|Gamma(x)|.",
    "digamma": "Digamma function (NaN at 0 and the negative integers, as XLA).",
    "bessel_i0e": "Exponentially scaled modified Bessel function of order 0.",
    "bessel_i1e": "Exponentially scaled modified Bessel function of order 1.",
    "bitwise_not": "~x (logical not for booleans).",
    "population_count": "Number of set bits of each integer.",
    "clz": "Number of leading zero bits of each integer.",
    "add": "x + y.  Integers wrap.",
    "sub": "x - y.  Integers wrap.",
    "mul": "x * y.  Integers wrap.",
    "div": "x / y; integer division rounds toward zero, x / 0 is -1 (unsigned: all ones) "
           "and INT_MIN / -1 is INT_MIN, as XLA.",
    "rem": "Remainder with the sign of x (C fmod); integer x % 0 is x, as XLA.",
    "max": "Elementwise maximum; NaN propagates, -0.0 < +0.0.",
    "min": "Elementwise minimum; NaN propagates, -0.0 < +0.0.",
    "atan2": "Four-quadrant inverse tangent of x / y (arguments in that order: atan2(x, y)).",
    "nextafter": "The next representable value after x in the direction of y.",
    "bitwise_and": "x & y (logical and for booleans).",
    "bitwise_or": "x | y (logical or for booleans).",
    "bitwise_xor": "x ^ y (logical xor for booleans).",
    "shift_left": "x << y; shifts by >= the bit width (or negative amounts) give 0.",
    "shift_right_arithmetic": "x >> y keeping the sign; shifts by >= the bit width give 0 or -1.",
    "shift_right_logical": "x >> y filling with zeros; shifts by >= the bit width give 0.",
    "eq": "x == y.", "ne": "x != y.", "lt": "x < y.", "le": "x <= y.", "gt": "x > y.",
    "ge": "x >= y.",
    "igamma": "Regularized lower incomplete gamma function P(a, x).",
    "igammac": "Regularized upper incomplete gamma function Q(a, x).",
    "igamma_grad_a": "d/da of igamma(a, x).",
    "random_gamma_grad": "Derivative of a Gamma(a, 1) sample x with respect to a.",
    "polygamma": "The m-th derivative of the digamma function at x.",
    "zeta": "Hurwitz zeta function zeta(x, q).",
}


def _public(p, name, nargs):
  """The public lax function binding ``p``: a plain function named ``name``."""
  if nargs == 1:
    def f(x):
      return p.bind(x)
  else:
    def f(x, y):
      return p.bind(x, y)
  f.__name__ = f.__qualname__ = name
  f.__module__ = __name__
  what = "operands must have equal dtypes" if nargs == 2 else "no type promotion"
  f.__doc__ = (f"Elementwise {_DOCS.get(name, name)}\n\nlax.{name}: {what} (Python scalars "
               "are weakly typed); see jnp for NumPy-style promotion and broadcasting.")
  return f


def _u(p, name=None):
  return _public(p, name or p.name, 1)


def _b(p, name=None):
  return _public(p, name or p.name, 2)


neg, sign, floor, ceil, is_finite = map(_u, (neg_p, sign_p, floor_p, ceil_p, is_finite_p))
exp, log, expm1, log1p, tanh, logistic = map(_u, (exp_p, log_p, expm1_p, log1p_p, tanh_p, logistic_p))
sin, cos, tan, asin, acos, atan = map(_u, (sin_p, cos_p, tan_p, asin_p, acos_p, atan_p))
sinh, cosh, asinh, acosh, atanh = map(_u, (sinh_p, cosh_p, asinh_p, acosh_p, atanh_p))
sqrt, rsqrt, cbrt, square, abs = map(_u, (sqrt_p, rsqrt_p, cbrt_p, square_p, abs_p))
real, imag = map(_u, (real_p, imag_p))
erf, erfc, erf_inv, lgamma, digamma = map(_u, (erf_p, erfc_p, erf_inv_p, lgamma_p, digamma_p))
bessel_i0e, bessel_i1e = map(_u, (bessel_i0e_p, bessel_i1e_p))
bitwise_not = _u(not_p, "bitwise_not")
population_count, clz = map(_u, (population_count_p, clz_p))
add, sub, mul, div, rem, max, min = map(_b, (add_p, sub_p, mul_p, div_p, rem_p, max_p, min_p))
atan2, nextafter = map(_b, (atan2_p, nextafter_p))
bitwise_and = _b(and_p, "bitwise_and")
bitwise_or = _b(or_p, "bitwise_or")
bitwise_xor = _b(xor_p, "bitwise_xor")
shift_left, shift_right_arithmetic, shift_right_logical = map(
    _b, (shift_left_p, shift_right_arithmetic_p, shift_right_logical_p))
eq, ne, lt, le, gt, ge = map(_b, (eq_p, ne_p, lt_p, le_p, gt_p, ge_p))
igamma, igammac, igamma_grad_a, random_gamma_grad, polygamma, zeta = map(
    _b, (igamma_p, igammac_p, igamma_grad_a_p, random_gamma_grad_p, polygamma_p, zeta_p))


def conj(x):
  """Complex conjugate; a float32/float64 operand gives complex64/complex128 (like JAX)."""
  return conj_p.bind(x, input_dtype=core.get_aval(x).dtype)


def exp2(x):
  """2**x elementwise."""
  return exp2_p.bind(x)


def complex(x, y):
  """x + 1j*y for real x, y of equal dtype."""
  return complex_p.bind(x, y)


def pow(x, y):
  """x ** y; y may be an integer array (lax.pow allows that, like JAX)."""
  return pow_p.bind(x, y)


def integer_pow(x, y):
  """x ** y for a static Python int y."""
  return integer_pow_p.bind(x, y=int(y))


def reciprocal(x):
  """1 / x, as ``integer_pow(x, -1)`` (like JAX)."""
  return integer_pow(x, -1)


def round(x, rounding_method=RoundingMethod.AWAY_FROM_ZERO):
  """Round to the nearest integer; ties away from zero unless TO_NEAREST_EVEN."""
  return round_p.bind(x, rounding_method=RoundingMethod(rounding_method))


def regularized_incomplete_beta(a, b, x):
  """Regularized incomplete beta function I_x(a, b) (floating operands of one dtype)."""
  return regularized_incomplete_beta_p.bind(a, b, x)


betainc = regularized_incomplete_beta


def convert_element_type(operand, new_dtype):
  """Cast to ``new_dtype`` (canonicalized like JAX); the result is strongly typed."""
  new_dtype = dtypes.check_user_dtype(new_dtype, "convert_element_type") if new_dtype is not None else None
  return _convert_element_type(operand, new_dtype, weak_type=False)


def _convert_element_type(operand, new_dtype=None, weak_type=False):
  if type(operand) is int and new_dtype is not None:
    info = np.iinfo(dtypes.default_int_dtype())
    if not info.min <= operand <= info.max:
      # a Python int beyond the default integer type converts on the host, like JAX's
      # (2**40 -> int32 wraps to 0; -> float32 is exact)
      operand = np.asarray(operand).astype(dtypes.canonicalize_dtype(new_dtype))
  aval = core.get_aval(operand)
  if new_dtype is None:
    new_dtype = aval.dtype
  new_dtype = dtypes.canonicalize_dtype(new_dtype)
  if new_dtype == aval.dtype and weak_type == aval.weak_type and type(operand) not in dtypes.python_scalar_types \
      and not isinstance(operand, (np.ndarray, np.generic)):
    if not isinstance(operand, (Array, core.Tracer)) and hasattr(operand, "__jax_array__"):
      return operand.__jax_array__()   # (an object standing for an array: its array)
    return operand
  return convert_element_type_p.bind(operand, new_dtype=new_dtype, weak_type=bool(weak_type),
                                     sharding=None)


def bitcast_convert_type(operand, new_dtype):
  """Reinterpret bits; a narrower target adds a trailing dimension, a wider one removes it."""
  new_dtype = dtypes.check_user_dtype(new_dtype, "bitcast_convert_type")
  return bitcast_convert_type_p.bind(operand, new_dtype=new_dtype)


def reduce_precision(operand, exponent_bits, mantissa_bits):
  """Round ``operand`` to a float format with the given exponent and mantissa widths (in
  its own dtype): round to nearest even, overflow to infinity, underflow to zero."""
  return reduce_precision_p.bind(operand, exponent_bits=int(exponent_bits),
                                 mantissa_bits=int(mantissa_bits))


def select_n(which, *cases):
  """cases[which] elementwise; bool ``which`` picks cases[0] for False."""
  return select_n_p.bind(which, *cases)


def select(pred, on_true, on_false):
  """lax.select: on_true where pred else on_false."""
  return select_n_p.bind(pred, on_false, on_true)


def clamp(min, x, max):
  """min(max(x, min), max) with lax's shape rule (min/max scalar or x's shape)."""
  return clamp_p.bind(min, x, max)


# --- differentiation rules ----------------------------------------------------------------
# JAX's formulas: symbolic zeros for non-differentiable outputs (comparisons, integer ops,
# rounding), max/min split ties evenly, abs has slope +1 at 0, the transposes of
# complex-valued linear maps use JAX's (unconjugated) convention.
from pyjax._src.interpreters import ad  # noqa: E402


def _ad_bind(p):
  return lambda *args, **params: p.bind(*args, **params)


_neg, _exp, _log, _sin, _cos = map(_ad_bind, (neg_p, exp_p, log_p, sin_p, cos_p))
_sinh, _cosh, _sqrt, _rsqrt, _square = map(_ad_bind, (sinh_p, cosh_p, sqrt_p, rsqrt_p, square_p))
_sign, _floor, _abs, _real, _imag = map(_ad_bind, (sign_p, floor_p, abs_p, real_p, imag_p))
_add, _sub, _mul, _div, _pow = map(_ad_bind, (add_p, sub_p, mul_p, div_p, pow_p))
_eq, _gt, _lt, _ge, _and = map(_ad_bind, (eq_p, gt_p, lt_p, ge_p, and_p))
_digamma, _polygamma, _bessel_i1e, _bessel_i0e = map(
    _ad_bind, (digamma_p, polygamma_p, bessel_i1e_p, bessel_i0e_p))
_lgamma, _log1p, _complex = map(_ad_bind, (lgamma_p, log1p_p, complex_p))
_igamma_grad_a = _ad_bind(igamma_grad_a_p)


def _integer_pow(x, y):
  return integer_pow_p.bind(x, y=y)


def _conj(x):
  return conj_p.bind(x, input_dtype=core.get_aval(x).dtype)


def _convert(x, dtype, weak_type=False):
  return convert_element_type_p.bind(x, new_dtype=dtype, weak_type=weak_type, sharding=None)


def _c(x, val):
  """The constant ``val`` with ``x``'s dtype and weak type (a concrete 0-d array)."""
  return ad.const_like(x, val)


def _select(pred, on_true, on_false):
  return select_n_p.bind(pred, on_false, on_true)


def _full_like(x, val):
  aval = core.get_aval(x)
  c = ad.scalar_const(val, aval.dtype, aval.weak_type)
  return ad.broadcast_to_shape(c, aval.shape) if aval.shape else c


def _zeros(x):
  return _full_like(x, 0)


def _replace_zero(x):
  return _select(_eq(x, _c(x, 0)), _full_like(x, 1), x)


for _p in (sign_p, floor_p, ceil_p, round_p, is_finite_p, not_p, population_count_p, clz_p,
           and_p, or_p, xor_p, shift_left_p, shift_right_arithmetic_p, shift_right_logical_p,
           eq_p, ne_p, lt_p, le_p, gt_p, ge_p, bitcast_convert_type_p):
  ad.defjvp_zero(_p)

ad.deflinear(neg_p, lambda t: [_neg(t)])

ad.defjvp2(exp_p, lambda g, ans, x: _mul(g, ans))
ad.defjvp2(exp2_p, lambda g, ans, x: _mul(_log(_c(x, 2)), _mul(g, ans)))
ad.defjvp(log_p, lambda g, x: _div(g, x))
ad.defjvp2(expm1_p, lambda g, ans, x: _mul(g, _add(ans, _c(ans, 1))))
ad.defjvp(log1p_p, lambda g, x: _div(g, _add(x, _c(x, 1))))
ad.defjvp2(tanh_p, lambda g, ans, x: _mul(_add(g, _mul(g, ans)), _sub(_c(x, 1), ans)))
ad.defjvp2(logistic_p, lambda g, ans, x: _mul(g, _mul(ans, _sub(_c(ans, 1), ans))))
ad.defjvp(sin_p, lambda g, x: _mul(g, _cos(x)))
ad.defjvp(cos_p, lambda g, x: _neg(_mul(g, _sin(x))))
ad.defjvp2(tan_p, lambda g, ans, x: _mul(g, _add(_c(x, 1), _square(ans))))
ad.defjvp(asin_p, lambda g, x: _mul(g, _rsqrt(_sub(_c(x, 1), _square(x)))))
ad.defjvp(acos_p, lambda g, x: _mul(g, _neg(_rsqrt(_sub(_c(x, 1), _square(x))))))
ad.defjvp(atan_p, lambda g, x: _div(g, _add(_c(x, 1), _square(x))))
ad.defjvp(sinh_p, lambda g, x: _mul(g, _cosh(x)))
ad.defjvp(cosh_p, lambda g, x: _mul(g, _sinh(x)))
ad.defjvp(asinh_p, lambda g, x: _mul(g, _rsqrt(_add(_square(x), _c(x, 1)))))
ad.defjvp(acosh_p, lambda g, x: _mul(g, _rsqrt(_mul(_sub(x, _c(x, 1)), _add(x, _c(x, 1))))))
ad.defjvp(atanh_p, lambda g, x: _mul(_integer_pow(_add(_c(x, 1), x), -1),
                                     _div(g, _sub(_c(x, 1), x))))
ad.defjvp2(sqrt_p, lambda g, ans, x: _mul(g, _div(_c(x, 0.5), ans)))
ad.defjvp2(rsqrt_p, lambda g, ans, x: _mul(g, _mul(_c(x, -0.5), _div(ans, x))))
ad.defjvp2(cbrt_p, lambda g, ans, x: _mul(g, _mul(_c(x, 1 / 3), _integer_pow(ans, -2))))
ad.defjvp(square_p, lambda g, x: _mul(g, _mul(_c(x, 2), x)))


def _abs_jvp(g, ans, x):
  if dtypes.is_complex(core.get_aval(x).dtype):
    safe = _replace_zero(_convert(ans, core.get_aval(x).dtype))
    return _real(_mul(g, _div(_conj(x), safe)))
  return _select(_ge(x, _c(x, 0)), g, _neg(g))


ad.defjvp2(abs_p, _abs_jvp)


def _real_transpose(t):
  return [_complex(t, _zeros(t))]


def _imag_transpose(t):
  return [_complex(_zeros(t), _neg(t))]


ad.deflinear(real_p, _real_transpose)
ad.deflinear(imag_p, _imag_transpose)
ad.deflinear2(complex_p, lambda t, x, y: [
    ad.unbroadcast(_aval(x), _real(t)), ad.unbroadcast(_aval(y), _neg(_imag(t)))])


def _aval(x):
  return x.aval if ad.is_undefined_primal(x) else core.get_aval(x)


def _conj_transpose(t, x, **params):
  input_dtype = params.get("input_dtype") or _aval(x).dtype
  if dtypes.is_complex(input_dtype):
    return [_conj(t)]
  return [_real(t)]


ad.deflinear2(conj_p, _conj_transpose)

_SQRT_PI = math.sqrt(math.pi)
ad.defjvp(erf_p, lambda g, x: _mul(_c(x, 2 / _SQRT_PI), _mul(g, _exp(_neg(_square(x))))))
ad.defjvp(erfc_p, lambda g, x: _mul(_c(x, -2 / _SQRT_PI), _mul(g, _exp(_neg(_square(x))))))
ad.defjvp2(erf_inv_p, lambda g, ans, x: _mul(_c(x, _SQRT_PI / 2), _mul(g, _exp(_square(ans)))))
ad.defjvp(lgamma_p, lambda g, x: _mul(g, _digamma(x)))
ad.defjvp(digamma_p, lambda g, x: _mul(g, _polygamma(_c(x, 1), x)))
ad.defjvp2(bessel_i0e_p, lambda g, y, x: _mul(g, _sub(_bessel_i1e(x), _mul(_sign(x), y))))


def _bessel_i1e_jvp(g, y, x):
  eps = float(dtypes.finfo(core.get_aval(x).dtype).eps)
  not_tiny = _gt(_abs(x), _c(x, eps))
  safe_x = _select(not_tiny, x, _full_like(x, eps))
  dy = _sub(_bessel_i0e(safe_x), _mul(y, _add(_sign(safe_x), _integer_pow(safe_x, -1))))
  dy = _select(not_tiny, dy, _full_like(x, 0.5))
  return _mul(g, dy)


ad.defjvp2(bessel_i1e_p, _bessel_i1e_jvp)


# add / sub: linear, lax broadcasting of rank-0 and size-1 operands undone on transposes
def _add_jvp(primals, tangents):
  x, y = primals
  tx, ty = tangents
  out = add_p.bind(x, y)
  shape = core.get_aval(out).shape
  if type(tx) is ad.Zero:
    return out, ad.broadcast_to_shape(ty, shape)
  if type(ty) is ad.Zero:
    return out, ad.broadcast_to_shape(tx, shape)
  return out, ad.broadcast_to_shape(_add(tx, ty), shape)


def _sub_jvp(primals, tangents):
  x, y = primals
  tx, ty = tangents
  out = sub_p.bind(x, y)
  shape = core.get_aval(out).shape
  if type(tx) is ad.Zero:
    return out, ad.broadcast_to_shape(_neg(ty), shape)
  if type(ty) is ad.Zero:
    return out, ad.broadcast_to_shape(tx, shape)
  return out, ad.broadcast_to_shape(_sub(tx, ty), shape)


def _add_transpose(t, x, y):
  return [ad.unbroadcast(x.aval, t) if ad.is_undefined_primal(x) else None,
          ad.unbroadcast(y.aval, t) if ad.is_undefined_primal(y) else None]


def _sub_transpose(t, x, y):
  return [ad.unbroadcast(x.aval, t) if ad.is_undefined_primal(x) else None,
          ad.unbroadcast(y.aval, _neg(t)) if ad.is_undefined_primal(y) else None]


ad.primitive_jvps[add_p] = _add_jvp
ad.primitive_jvps[sub_p] = _sub_jvp
ad.primitive_transposes[add_p] = _add_transpose
ad.primitive_transposes[sub_p] = _sub_transpose


def _nonlinear_error(name):
  return ValueError(f"Linearization of {name} with both operands linear is not supported")


def _mul_transpose(t, x, y):
  if ad.is_undefined_primal(x) and ad.is_undefined_primal(y):
    raise _nonlinear_error("mul")
  if ad.is_undefined_primal(x):
    return [ad.unbroadcast(x.aval, _mul(t, y)), None]
  return [None, ad.unbroadcast(y.aval, _mul(x, t))]


def _div_transpose(t, x, y):
  if ad.is_undefined_primal(y):
    raise _nonlinear_error("div")
  return [ad.unbroadcast(x.aval, _div(t, y)), None]


ad.defjvp(mul_p, lambda g, x, y: _mul(g, y), lambda g, x, y: _mul(x, g))
ad.primitive_transposes[mul_p] = _mul_transpose
ad.defjvp(div_p, lambda g, x, y: _div(g, y),
          lambda g, x, y: _mul(_mul(_neg(g), x), _integer_pow(y, -2)))
ad.primitive_transposes[div_p] = _div_transpose
ad.defjvp(rem_p, lambda g, x, y: g,
          lambda g, x, y: _mul(_neg(g), _mul(_sign(_div(x, y)), _floor(_abs(_div(x, y))))))


def _balanced_eq(x, z, y):
  """1 where x == z and y != z, 1/2 where both equal z, else 0 (dtype of z)."""
  ones, zeros = _full_like(z, 1), _full_like(z, 0)
  return _div(_select(_eq(x, z), ones, zeros), _select(_eq(y, z), _full_like(z, 2), ones))


ad.defjvp2(max_p, lambda g, ans, x, y: _mul(g, _balanced_eq(x, ans, y)),
           lambda g, ans, x, y: _mul(g, _balanced_eq(y, ans, x)))
ad.defjvp2(min_p, lambda g, ans, x, y: _mul(g, _balanced_eq(x, ans, y)),
           lambda g, ans, x, y: _mul(g, _balanced_eq(y, ans, x)))
ad.defjvp(atan2_p, lambda g, x, y: _mul(g, _div(y, _add(_square(x), _square(y)))),
          lambda g, x, y: _mul(g, _div(_neg(x), _add(_square(x), _square(y)))))


def _igamma_gradx(g, a, x):
  return _mul(g, _exp(_sub(_sub(_mul(_sub(a, _c(a, 1)), _log(x)), x), _lgamma(a))))


def _igamma_grada(g, a, x):
  return _mul(g, _igamma_grad_a(a, x))


ad.defjvp(igamma_p, _igamma_grada, _igamma_gradx)
ad.defjvp(igammac_p, lambda g, a, x: _neg(_igamma_grada(g, a, x)),
          lambda g, a, x: _neg(_igamma_gradx(g, a, x)))


def _polygamma_gradm(g, m, x):
  raise ValueError("polygamma gradient with respect to m is not supported")


ad.defjvp(polygamma_p, _polygamma_gradm,
          lambda g, m, x: _mul(g, _polygamma(_add(m, _c(m, 1)), x)))


def _betainc_grad_ab(g, a, b, x):
  raise ValueError("Betainc gradient with respect to a and b not supported.")


def _betainc_gradx(g, a, b, x):
  lbeta = _sub(_add(_lgamma(a), _lgamma(b)), _lgamma(_add(a, b)))
  partial_x = _exp(_sub(_add(_mul(_sub(b, _c(b, 1)), _log1p(_neg(x))),
                             _mul(_sub(a, _c(a, 1)), _log(x))), lbeta))
  return _mul(partial_x, g)


ad.defjvp(regularized_incomplete_beta_p, _betainc_grad_ab, _betainc_grad_ab, _betainc_gradx)


def _strong(x, dtype=None):
  """``x`` converted to ``dtype`` (default: its own) and strongly typed; concrete values
  are converted now (JAX folds these conversions)."""
  aval = core.get_aval(x)
  dtype = aval.dtype if dtype is None else dtype
  if aval.dtype == dtype and not aval.weak_type:
    return x
  if isinstance(x, core.Tracer):
    return _convert(x, dtype)
  with core.set_interpreter(core.eval_interpreter):
    out = _convert(x, dtype)
  return core.folded_host_constant(out, (x,))


def _pow_jvp_lhs(g, ans, x, y):
  xd = core.get_aval(x).dtype
  x = _strong(x)
  if dtypes.is_int(core.get_aval(y).dtype):
    y = _strong(y, xd)
    is_zero = _eq(y, _c(y, 0))
    nz = _mul(_replace_zero(y), _pow(x, _sub(y, _c(y, 1))))
    shape = core.get_aval(nz).shape
    if core.get_aval(is_zero).shape not in ((), shape):
      is_zero = ad.broadcast_to_shape(is_zero, shape)
    jac = _select(is_zero, _zeros(nz), nz)
  else:
    y = _strong(y)
    jac = _mul(y, _pow(x, _sub(y, _c(y, 1))))
  return _mul(g, jac)


def _pow_jvp_rhs(g, ans, x, y):
  return _mul(g, _mul(_log(_replace_zero(x)), ans))


ad.defjvp2(pow_p, _pow_jvp_lhs, _pow_jvp_rhs)


def _integer_pow_jvp(g, x, *, y):
  if y == 0:
    return _zeros(g)
  return _mul(g, _mul(_c(x, y), x if y == 2 else _integer_pow(x, y - 1)))


ad.defjvp(integer_pow_p, _integer_pow_jvp)


def _convert_jvp(primals, tangents, *, new_dtype, weak_type=False, sharding=None):
  x, = primals
  t, = tangents
  out = convert_element_type_p.bind(x, new_dtype=new_dtype, weak_type=weak_type,
                                    sharding=sharding)
  if ad.has_float0_tangent(core.get_aval(out)) or type(t) is ad.Zero:
    return out, ad.Zero.from_primal_value(out)
  return out, convert_element_type_p.bind(t, new_dtype=new_dtype, weak_type=weak_type,
                                          sharding=sharding)


def _convert_transpose(t, x, *, new_dtype, weak_type=False, sharding=None):
  old = x.aval
  return [convert_element_type_p.bind(t, new_dtype=old.dtype, weak_type=old.weak_type,
                                      sharding=None)]


ad.primitive_jvps[convert_element_type_p] = _convert_jvp
ad.primitive_transposes[convert_element_type_p] = _convert_transpose

ad.deflinear(reduce_precision_p, lambda t, **kw: [reduce_precision_p.bind(t, **kw)])


def _select_n_jvp(primals, tangents):
  which, *cases = primals
  _, *case_ts = tangents
  out = select_n_p.bind(which, *cases)
  if all(type(t) is ad.Zero for t in case_ts):
    return out, ad.Zero.from_primal_value(out)
  ts = [ad.instantiate_zeros(t) for t in case_ts]
  return out, select_n_p.bind(which, *ts)


def _select_n_transpose(t, which, *cases):
  if ad.is_undefined_primal(which):
    raise ValueError("select_n's predicate is not differentiable")
  zeros = _zeros(t)
  outs = [None]
  for i, c in enumerate(cases):
    if ad.is_undefined_primal(c):
      outs.append(select_n_p.bind(which, *[t if j == i else zeros for j in range(len(cases))]))
    else:
      outs.append(None)
  return outs


ad.primitive_jvps[select_n_p] = _select_n_jvp
ad.primitive_transposes[select_n_p] = _select_n_transpose


def _clamp_lo_jvp(g, lo, x, hi):
  return _select(_and(_gt(lo, x), _lt(lo, hi)), ad.broadcast_to_shape(g, _aval(x).shape),
                 _zeros(x))


def _clamp_x_jvp(g, lo, x, hi):
  return _select(_and(_gt(x, lo), _lt(x, hi)), g, _zeros(x))


def _clamp_hi_jvp(g, lo, x, hi):
  return _select(_lt(hi, x), ad.broadcast_to_shape(g, _aval(x).shape), _zeros(x))


ad.defjvp(clamp_p, _clamp_lo_jvp, _clamp_x_jvp, _clamp_hi_jvp)



def stop_gradient(x):
  """The identity with a zero derivative, applied to every leaf of the pytree ``x``
  (integer and boolean leaves are returned unchanged, as in JAX)."""
  from pyjax._src import tree_util

  def stop(v):
    if dtypes.is_inexact(core.get_aval(v).dtype):
      return ad.stop_gradient_p.bind(v)
    return v
  return tree_util.tree_map(stop, x)



# --- batching rules -------------------------------------------------------------------------
# Unary elementwise operations commute with the batch dimension; n-ary ones use lax's
# broadcasting (batching.broadcast_batcher); select_n and clamp broadcast their scalar
# operands themselves.
from pyjax._src.interpreters import batching as _batching  # noqa: E402

for _p in (neg_p, sign_p, floor_p, ceil_p, round_p, is_finite_p, exp_p, exp2_p, log_p,
           expm1_p, log1p_p, tanh_p, logistic_p, sin_p, cos_p, tan_p, asin_p, acos_p, atan_p,
           sinh_p, cosh_p, asinh_p, acosh_p, atanh_p, sqrt_p, rsqrt_p, cbrt_p, square_p,
           abs_p, real_p, imag_p, conj_p, erf_p, erfc_p, erf_inv_p, lgamma_p, digamma_p,
           bessel_i0e_p, bessel_i1e_p, not_p, population_count_p, clz_p, integer_pow_p,
           convert_element_type_p, reduce_precision_p):
  _batching.defvectorized(_p)

for _p in (add_p, sub_p, mul_p, div_p, rem_p, max_p, min_p, atan2_p, nextafter_p, complex_p,
           and_p, or_p, xor_p, shift_left_p, shift_right_arithmetic_p, shift_right_logical_p,
           eq_p, ne_p, lt_p, le_p, gt_p, ge_p, igamma_p, igammac_p, igamma_grad_a_p,
           random_gamma_grad_p, polygamma_p, zeta_p, pow_p, regularized_incomplete_beta_p):
  _batching.defbroadcasting(_p)


def _bitcast_convert_type_batch(args, dims, *, new_dtype):
  x, = args
  d, = dims
  aval = core.get_aval(x)
  if d == aval.ndim - 1:  # the trailing axis may be split or merged: keep the batch dim off it
    x, d = _batching.moveaxis(x, d, 0), 0
  return bitcast_convert_type_p.bind(x, new_dtype=new_dtype), d


_batching.primitive_batchers[bitcast_convert_type_p] = _bitcast_convert_type_batch


def _full_rank_at_front(x, d, shape, size):
  """An operand of per-example shape ``shape`` or () as a batched array of shape
  ``(size, *shape)``."""
  from pyjax._src.lax import shapes
  aval = core.get_aval(x)
  if d is _batching.not_mapped:
    if aval.shape == tuple(shape):
      return _batching.broadcast(x, size, 0)
    return shapes.broadcast_in_dim_p.bind(x, shape=(size,) + tuple(shape),
                                          broadcast_dimensions=(), sharding=None)
  x = _batching.moveaxis(x, d, 0)
  if aval.ndim - 1 == len(shape):
    return x
  return shapes.broadcast_in_dim_p.bind(x, shape=(size,) + tuple(shape),
                                        broadcast_dimensions=(0,), sharding=None)


def _per_example_shape(args, dims):
  for x, d in zip(args, dims):
    s = core.get_aval(x).shape
    if d is not _batching.not_mapped:
      return s[:d] + s[d + 1:], s[d]
  raise AssertionError


def _select_n_batch(args, dims):
  from pyjax._src.lax import shapes
  nm = _batching.not_mapped
  which, *cases = args
  wd, *cds = dims
  size = _per_example_shape(args, dims)[1]
  nd = lambda x: core.get_aval(x).ndim
  shape = lambda x: core.get_aval(x).shape
  # cheap cases: no transposes or broadcasts of the cases
  if all(wd == d for d in cds):
    if shape(which) == shape(cases[0]):
      return select_n_p.bind(which, *cases), wd
    which = shapes.broadcast_in_dim_p.bind(which, shape=shape(cases[0]),
                                           broadcast_dimensions=(wd,), sharding=None)
    return select_n_p.bind(which, *cases), wd
  if nd(which) == 0 and all(d is not nm for d in cds):
    if all(d == cds[0] for d in cds[1:]):
      return select_n_p.bind(which, *cases), cds[0]
    if all(shape(c) == shape(cases[0]) for c in cases):
      d0 = cds[0]
      return select_n_p.bind(which, cases[0], *[_batching.moveaxis(c, d, d0)
                                                for c, d in zip(cases[1:], cds[1:])]), d0
  # general case: batch dims to the front, broadcasting what is unbatched
  if shape(which):
    which = _batching.bdim_at_front(which, wd, size)
  if not all(shape(c) == () for c in cases):
    cases = [_batching.bdim_at_front(c, d, size) for c, d in zip(cases, cds)]
  if 0 < nd(which) < nd(cases[0]):   # a per-example scalar which against array cases
    which = shapes.broadcast_in_dim_p.bind(which, shape=shape(cases[0]),
                                           broadcast_dimensions=(0,), sharding=None)
  if nd(which) > nd(cases[0]):       # per-example scalar cases against a batched which
    cases = [shapes.broadcast_in_dim_p.bind(c, shape=shape(which), broadcast_dimensions=(),
                                            sharding=None) for c in cases]
  return select_n_p.bind(which, *cases), 0


_batching.primitive_batchers[select_n_p] = _select_n_batch


def _clamp_batch(args, dims):
  lo, x, hi = args
  ld, xd, hd = dims
  s = core.get_aval(x).shape
  x_shape = s if xd is _batching.not_mapped else s[:xd] + s[xd + 1:]
  size = _per_example_shape(args, dims)[1]
  if all(d == xd for d in dims) and core.get_aval(lo).shape == s == core.get_aval(hi).shape:
    return clamp_p.bind(lo, x, hi), xd
  if (xd is not _batching.not_mapped and ld is hd is _batching.not_mapped
      and not core.get_aval(lo).ndim and not core.get_aval(hi).ndim):
    return clamp_p.bind(lo, x, hi), xd
  x = _full_rank_at_front(x, xd, x_shape, size)
  bounds = []
  for b, d in ((lo, ld), (hi, hd)):
    if d is _batching.not_mapped and not core.get_aval(b).ndim:
      bounds.append(b)
    else:
      bounds.append(_full_rank_at_front(b, d, x_shape, size))
  return clamp_p.bind(bounds[0], x, bounds[1]), 0


_batching.primitive_batchers[clamp_p] = _clamp_batch


# --- mulhi and the total-order comparisons --------------------------------------------------
mulhi_p = utils.binop("mulhi", utils.integer)
ad.defjvp_zero(mulhi_p)
_batching.defbroadcasting(mulhi_p)


def mulhi(x, y, /):
  """The high N bits of the 2N-bit product of N-bit integers ``x * y`` (signed or
  unsigned, by dtype); operands of equal integer dtype, lax broadcasting."""
  return mulhi_p.bind(x, y)


_to_bool = lambda d: dtypes.bool_
# Comparisons in IEEE total order (-NaN < -inf < ... < -0 < +0 < ... < inf < NaN; equal
# only when the bits are equal), as XLA's TOTALORDER comparisons in sort comparators.
eq_to_p = utils.binop("eq_to", utils.any_, _to_bool)
le_to_p = utils.binop("le_to", utils.int_float_bool, _to_bool)
lt_to_p = utils.binop("lt_to", utils.int_float_bool, _to_bool)
for _p in (eq_to_p, le_to_p, lt_to_p):
  ad.defjvp_zero(_p)
  _batching.defbroadcasting(_p)


def dtype(x):
  """The dtype of a value or dtype-like, as ``jax.dtypes.dtype``: Python scalars and
  types give the default (x64-dependent) dtypes; NumPy types, dtypes and names are
  canonicalized with JAX's warning; Arrays keep their dtype."""
  if x is None:
    raise ValueError(f"Invalid argument to dtype: {x}.")
  if isinstance(x, type):
    if x is bool or x is int or x is float or x is complex:   # (jnp.float32 == float)
      return dtypes.canonicalize_dtype(dtypes.python_scalar_dtype(x))
    sub = getattr(x, "_pyjax_dtype", None)   # pyjax.numpy scalar types
    if sub is not None:
      return dtypes.check_user_dtype(sub, "dtype")
    if issubclass(x, np.generic):
      return _explicit(np.dtype(x), x)
  elif type(x) in (bool, int, float, complex):
    return dtypes.canonicalize_dtype(dtypes.python_scalar_dtype(type(x)))
  elif isinstance(x, (Array, core.Tracer)):
    return x.dtype
  if isinstance(x, (str, np.dtype)):
    try:
      d = dtypes.to_numpy_dtype(x) if isinstance(x, str) else x
    except TypeError:
      d = np.dtype(x)   # NumPy's own TypeError for unknown names
    return _explicit(d, x)
  d = getattr(x, "dtype", None)
  if not isinstance(d, np.dtype):
    try:
      d = np.result_type(x)
    except TypeError as err:
      raise TypeError(f"Cannot determine dtype of {x}") from err
  _check_jax_dtype(d, x)
  return dtypes.canonicalize_dtype(d)


def _check_jax_dtype(d, x):
  if d not in dtypes.all_dtypes:
    raise TypeError(f"Value '{x}' with dtype {d} is not a valid JAX array type. Only arrays "
                    "of numeric types are supported by JAX.")


def _explicit(d, x):
  _check_jax_dtype(d, x)
  return dtypes.check_user_dtype(d, "dtype")


class Tolerance:
  """Tolerances for the accuracy of a unary function's implementation: at most two of
  ``atol``, ``rtol`` and ``ulps`` (all non-negative, at least one set).  The CPU backend
  has one implementation per function, so tolerances do not change results."""

  def __init__(self, atol: float = 0.0, rtol: float = 0.0, ulps: int = 0):
    if atol < 0.0 or rtol < 0.0 or ulps < 0.0:
      raise ValueError("Tolerances must be non-negative.")
    if atol == 0.0 and rtol == 0.0 and ulps == 0:
      raise ValueError("At least one of atol, rtol, or ulps must be set.")
    self.atol = atol
    self.rtol = rtol
    self.ulps = ulps


class AccuracyMode(enum.Enum):
  """Requested accuracy of a unary function's implementation (HIGHEST or DEFAULT)."""
  HIGHEST = 1
  DEFAULT = 2
