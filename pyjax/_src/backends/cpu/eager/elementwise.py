"""Eager NumPy implementations of the elementwise primitives, with XLA's semantics where
NumPy differs: integer division and remainder (x/0, INT_MIN/-1), shifts by >= the bit
width, float->int conversion (saturating, NaN -> 0), NaN and signed-zero handling in
max/min, complex division and reciprocal (C99 Annex G corner cases), branch cuts of the
complex inverse functions (a -0.0 imaginary part is treated as +0.0, as XLA does), and the
domains of the special functions (digamma, lgamma, igamma, zeta, polygamma, ...).

Half-precision and float8 inputs are computed in float32 and rounded once, as XLA:CPU
does.  One known difference: XLA:CPU flushes denormal inputs and results to zero; NumPy
keeps them.

NumPy's floating-point warnings are silenced for this package by a filter installed in
``eager/registry.py`` (XLA never warns), so the implementations need no ``np.errstate``.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import scipy.special as sp

from pyjax._src.backends.cpu.eager.registry import impls, register
from pyjax._src.runtime import dispatch as _dispatch

_bf16 = np.dtype(ml_dtypes.bfloat16)
_half = {_bf16, np.dtype(np.float16)}
_f32 = np.dtype(np.float32)
_f64 = np.dtype(np.float64)
# floating types narrower than float32: computed in float32 and rounded once, as XLA:CPU
# does (a set, so the check on every eager call is one hash look-up)
_SMALL_FLOATS = frozenset(
    [_bf16, np.dtype(np.float16)]
    + [np.dtype(getattr(ml_dtypes, n)) for n in dir(ml_dtypes)
       if n.startswith(("float8_", "float6_", "float4_"))])
_FLOATS = _SMALL_FLOATS | {_f32, _f64}


def _is_small_float(d):
  return d in _SMALL_FLOATS


def _up(x):
  """Compute half/float8 types in float32 (as XLA does); others unchanged."""
  if x.dtype in _SMALL_FLOATS:
    return x.astype(np.float32)
  return x


def _is_float(d):
  return d in _FLOATS


def _complex_from(re, im, dtype):
  """A complex array from real and imaginary parts, without NumPy's (0 * inf) artefacts."""
  re, im = np.broadcast_arrays(re, im)
  out = np.empty(re.shape, dtype)
  out.real = re
  out.imag = im
  return out


def _real_dtype(d):
  return _f32 if d == np.complex64 else _f64


def _canon_zero(x):
  """-0.0 parts become +0.0 (XLA's complex inverse functions ignore the sign of zero)."""
  return x + np.zeros((), x.dtype)


# --- unary ------------------------------------------------------------------------------
def _unary(name, fn, upcast=True, complex_fn=None):
  def impl(x):
    if x.dtype.kind == "c" and complex_fn is not None:
      return complex_fn(x)
    return fn(_up(x) if upcast else x)
  impl.__name__ = f"_{name}"
  impls[name] = impl


# np.negative/np.floor/... on NumPy arrays are exact for every dtype: register them bare
impls["neg"] = np.negative
impls["floor"] = np.floor
impls["ceil"] = np.ceil
impls["is_finite"] = np.isfinite
impls["real"] = np.real
impls["imag"] = np.imag


@register("square")
def _square(x):
  if x.dtype.kind == "c":
    # XLA: (a - b)(a + b) + 2ab i, which overflows later than a*a - b*b
    a, b = x.real, x.imag
    ab = a * b
    return _complex_from((a - b) * (a + b), ab + ab, x.dtype)
  return np.square(x)
impls["conj"] = lambda x, input_dtype=None: np.conjugate(x)
impls["cbrt"] = lambda x: np.cbrt(_up(x))

def _cexp(z):
  """exp(a + ib) = e^a cos b + i e^a sin b, as XLA computes it (so inf * 0 gives NaN where
  C99 special-cases it); a zero imaginary part gives (e^a, +0).  complex64 is computed in
  float64, complex128 with e^(a/2) twice to avoid an intermediate overflow."""
  a, b = z.real, z.imag
  if z.dtype == np.complex64:
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    e = np.exp(a64)
    re, im = e * np.cos(b64), e * np.sin(b64)
  else:
    e = np.exp(a)
    eh = np.exp(a * 0.5)
    re, im = eh * (eh * np.cos(b)), eh * (eh * np.sin(b))
  b0 = b == 0
  re = np.where(b0, e, re)
  im = np.where(b0, 0.0, im)
  return _complex_from(re, im, z.dtype)


def _nan_both(fn, keep_if=None):
  """A complex function whose result is (NaN, NaN) whenever NumPy's has a NaN part (XLA's
  formulas propagate NaN to both parts), except where ``keep_if(z)`` holds."""
  def f(z):
    out = fn(z)
    nan = np.isnan(out.real) | np.isnan(out.imag)
    if nan.any():
      if keep_if is not None:
        nan &= ~keep_if(z)
      out = np.where(nan, np.array(complex(np.nan, np.nan), out.dtype), out)
    return out
  return f


_real_zero = lambda z: z.real == 0  # noqa: E731
_imag_zero = lambda z: z.imag == 0  # noqa: E731
_unary("exp", np.exp, complex_fn=_cexp)
_unary("exp2", np.exp2, complex_fn=lambda z: _cexp(z * np.array(complex(np.log(2), 0), z.dtype)))
_unary("log", np.log, complex_fn=_nan_both(np.log))
_unary("log1p", np.log1p, complex_fn=_nan_both(np.log1p))
_unary("sin", np.sin, complex_fn=_nan_both(np.sin, _real_zero))
_unary("cos", np.cos, complex_fn=_nan_both(np.cos, _real_zero))
_unary("tan", np.tan, complex_fn=_nan_both(np.tan, _real_zero))
_unary("sinh", np.sinh, complex_fn=_nan_both(np.sinh, _imag_zero))
_unary("cosh", np.cosh, complex_fn=_nan_both(np.cosh, _imag_zero))
_unary("tanh", np.tanh, complex_fn=_nan_both(np.tanh, _imag_zero))
_unary("atan", np.arctan)
_unary("atanh", np.arctanh)


def _nan_in_nan_out(fn):
  """A complex function whose result is (NaN, NaN) whenever an input part is NaN (XLA's
  complex sqrt: sqrt(NaN + inf j) is NaN + NaN j, not C99's inf + inf j)."""
  def f(z):
    out = fn(z)
    nan = np.isnan(z.real) | np.isnan(z.imag)
    if nan.any():
      out = np.where(nan, np.array(complex(np.nan, np.nan), out.dtype), out)
    return out
  return f


def _nan_spreads_to_finite(fn):
  """A complex function whose result is (NaN, NaN) where NumPy's has one NaN part and one
  finite part (XLA's inverse trigonometric formulas: asin(0 + NaN j) is NaN + NaN j); a NaN
  beside an infinite part is kept, as XLA does."""
  def f(z):
    out = fn(z)
    re, im = out.real, out.imag
    nr, ni = np.isnan(re), np.isnan(im)
    bad = (nr & np.isfinite(im)) | (ni & np.isfinite(re))
    if bad.any():
      out = np.where(bad, np.array(complex(np.nan, np.nan), out.dtype), out)
    return out
  return f


_unary("sqrt", np.sqrt, complex_fn=_nan_in_nan_out(lambda x: np.sqrt(_canon_zero(x))))
_unary("asin", np.arcsin, complex_fn=_nan_spreads_to_finite(lambda x: np.arcsin(_canon_zero(x))))
_unary("acos", np.arccos, complex_fn=_nan_spreads_to_finite(lambda x: np.arccos(_canon_zero(x))))
_unary("asinh", np.arcsinh,
       complex_fn=_nan_spreads_to_finite(lambda x: np.arcsinh(_canon_zero(x))))
_unary("acosh", np.arccosh,
       complex_fn=_nan_spreads_to_finite(lambda x: np.arccosh(_canon_zero(x))))
_unary("erf", sp.erf)
_unary("erfc", sp.erfc)
_unary("bessel_i0e", sp.i0e)
# XLA's float32 erf_inv: Giles' single-precision polynomials in w = -log1p(-x*x), each
# step a fused multiply-add (emulated exactly enough in float64); float64 uses SciPy.
_GILES_LO = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
             -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_GILES_HI = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
             -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)


def _giles_poly(coeffs, w):
  w64 = w.astype(np.float64)
  p = np.full(w.shape, np.float32(coeffs[0]), np.float32)
  for c in coeffs[1:]:
    p = (p.astype(np.float64) * w64 + np.float64(np.float32(c))).astype(np.float32)
  return p


def _erf_inv(x):
  if x.dtype == np.float64:
    return _odd(sp.erfinv, x)
  xf = np.asarray(_up(x), np.float32)
  with np.errstate(all="ignore"):
    w0 = -np.log1p(-(xf * xf))
    small = _giles_poly(_GILES_LO, (w0 - np.float32(2.5)).astype(np.float32))
    large = _giles_poly(_GILES_HI, (np.sqrt(w0) - np.float32(3)).astype(np.float32))
    r = np.where(w0 < 5, small, large) * xf
  return np.where(np.abs(xf) == 1, np.copysign(np.float32(np.inf), xf), r).astype(np.float32)


impls["erf_inv"] = _erf_inv
impls["bessel_i1e"] = lambda x: _odd(sp.i1e, x)


def _odd(fn, x):
  """An odd function that keeps the sign of zero (SciPy returns +0.0 for -0.0)."""
  xu = _up(x)
  return np.where(xu == 0, xu, fn(xu))


@register("expm1")
def _expm1(x):
  if x.dtype.kind != "c":
    return np.expm1(_up(x))
  # NumPy's expm1(a + ib) = expm1(a) cos(b) - 2 sin(b/2)^2 rounds each term: in complex64
  # its real part is off by ulps where the terms cancel (XLA's is correctly rounded there,
  # and the derivative expm1(x) + 1 amplifies the difference): complex64 runs in complex128
  out = np.expm1(x.astype(np.complex128)).astype(x.dtype) if x.dtype == np.complex64 \
      else np.expm1(x)
  im = x.imag
  if (im == 0).any():  # XLA keeps a zero imaginary part (NumPy makes inf * 0 = nan)
    out = np.where(im == 0, _complex_from(np.expm1(x.real), im, x.dtype), out)
  return out


@register("logistic")
def _logistic(x):
  if x.dtype.kind == "c":
    return _cdiv(np.ones((), x.dtype), 1 + _cexp(-x))
  return sp.expit(_up(x))


@register("rsqrt")
def _rsqrt(x):
  if x.dtype.kind == "c":
    # XLA's polar form: |z|^(-1/2) * (cos t + i sin t), t = -arg(z)/2, so rsqrt(-1) has
    # the real part cos(pi/2) rounded (-4.4e-8 in complex64), not 0
    a, b = x.real, x.imag
    r = 1 / np.sqrt(np.hypot(a, b))
    t = np.arctan2(b, a) * np.array(-0.5, a.dtype)
    out = _complex_from(r * np.cos(t), r * np.sin(t), x.dtype)
    zero = (a == 0) & (b == 0)
    inf = np.isinf(a) | np.isinf(b)
    if zero.any() or inf.any():
      out = np.where(zero, np.array(complex(np.inf, np.nan), x.dtype), out)
      out = np.where(inf, _complex_from(np.zeros_like(a), np.copysign(np.zeros_like(b), -b),
                                        x.dtype), out)
    return out
  x = _up(x)
  return 1 / np.sqrt(x)


@register("abs")
def _abs(x):
  if x.dtype.kind == "c":
    # XLA's complex abs propagates NaN even when the other part is infinite
    out = np.abs(x)
    nan = np.isnan(x.real) | np.isnan(x.imag)
    return np.where(nan, np.array(np.nan, out.dtype), out)
  return np.abs(x)


@register("sign")
def _sign(x):
  d = x.dtype
  if _is_float(d):
    # keeps -0.0 and NaN like XLA
    return np.where(x == 0, x, np.sign(_up(x)))
  if d.kind == "c":
    a = _abs(x)
    zero = a == 0
    a = np.where(zero, np.ones((), a.dtype), a)
    return np.where(zero, np.zeros((), d), _complex_from(x.real / a, x.imag / a, d))
  return np.sign(x)


@register("round")
def _round(x, rounding_method=0):
  xu = _up(x)
  if int(rounding_method) == 1:
    return np.rint(xu)
  # half away from zero: trunc(x + copysign(0.5, x)) is wrong for 0.49999997; use |x|
  a = np.abs(xu)
  r = np.floor(a)
  r = np.where(a - r >= 0.5, r + 1, r)
  return np.copysign(r, xu)


@register("not")
def _not(x):
  return np.invert(x)  # logical for bool, bitwise for integers


def _as_unsigned(x):
  d = x.dtype
  if d.kind == "u":
    return x
  return x.view(np.dtype(f"u{d.itemsize}"))


@register("population_count")
def _popcount(x):
  return np.bitwise_count(_as_unsigned(x)).astype(x.dtype)


@register("clz")
def _clz(x):
  bits = x.dtype.itemsize * 8
  v = _as_unsigned(x).astype(np.uint64)
  n = np.zeros(x.shape, np.int64)  # index of the highest set bit
  for s in (32, 16, 8, 4, 2, 1):
    if s >= bits:
      continue
    m = v >= (np.uint64(1) << np.uint64(s))
    n = np.where(m, n + s, n)
    v = np.where(m, v >> np.uint64(s), v)
  return np.where(_as_unsigned(x) != 0, bits - 1 - n, bits).astype(x.dtype)


@register("lgamma")
def _lgamma(x):
  xu = _up(x)
  out = sp.gammaln(xu)
  return np.where(xu == -np.inf, np.array(np.inf, out.dtype), out)


@register("digamma")
def _digamma(x):
  xu = _up(x)
  out = sp.psi(xu)
  pole = (xu <= 0) & (xu == np.floor(xu))  # 0, negative integers and -inf
  return np.where(pole, np.array(np.nan, out.dtype), out)


# --- binary -----------------------------------------------------------------------------
impls["add"] = np.add
impls["sub"] = np.subtract
impls["mul"] = np.multiply
impls["eq"] = np.equal
impls["ne"] = np.not_equal
impls["lt"] = np.less
impls["le"] = np.less_equal
impls["gt"] = np.greater
impls["ge"] = np.greater_equal
impls["and"] = np.bitwise_and  # logical on bool
impls["or"] = np.bitwise_or
impls["xor"] = np.bitwise_xor


def _cdiv(x, y):
  """Complex division as XLA does it: Smith's algorithm, then C99 Annex G's fix-ups where
  the result is (NaN, NaN): zero denominators give infinities, infinite numerators over
  finite denominators give infinities, finite numerators over infinite denominators give
  zeros."""
  dtype = np.result_type(x.dtype, y.dtype)
  a, b = x.real, x.imag
  c, d = y.real, y.imag
  small_c = np.abs(c) < np.abs(d)
  r1 = c / d
  den1 = d + c * r1
  r2 = d / c
  den2 = c + d * r2
  re = np.where(small_c, (a * r1 + b) / den1, (a + b * r2) / den2)
  im = np.where(small_c, (b * r1 - a) / den1, (b - a * r2) / den2)
  both_nan = np.isnan(re) & np.isnan(im)
  if both_nan.any():
    rd = re.dtype
    inf, one, zero = np.array(np.inf, rd), np.array(1, rd), np.array(0, rd)
    inf_num = both_nan & (np.isinf(a) | np.isinf(b)) & np.isfinite(c) & np.isfinite(d)
    a1 = np.copysign(np.where(np.isinf(a), one, zero), a)
    b1 = np.copysign(np.where(np.isinf(b), one, zero), b)
    re = np.where(inf_num, inf * (a1 * c + b1 * d), re)
    im = np.where(inf_num, inf * (b1 * c - a1 * d), im)
    inf_den = both_nan & (np.isinf(c) | np.isinf(d)) & np.isfinite(a) & np.isfinite(b)
    c1 = np.copysign(np.where(np.isinf(c), one, zero), c)
    d1 = np.copysign(np.where(np.isinf(d), one, zero), d)
    re = np.where(inf_den, zero * (a * c1 + b * d1), re)
    im = np.where(inf_den, zero * (b * c1 - a * d1), im)
    zero_den = both_nan & (c == 0) & (d == 0) & ~(np.isnan(a) & np.isnan(b))
    s = np.copysign(inf, c)
    re = np.where(zero_den, s * a, re)
    im = np.where(zero_den, s * b, im)
  return _complex_from(re, im, dtype)


def _max_min(x, y, is_max):
  d = x.dtype
  if d.kind == "c":
    # lexicographic on (real, imag); a comparison with NaN is false, so the second operand wins
    xr, yr, xi, yi = x.real, y.real, x.imag, y.imag
    if is_max:
      pick_x = (xr > yr) | ((xr == yr) & (xi > yi))
    else:
      pick_x = (xr < yr) | ((xr == yr) & (xi < yi))
    return np.where(pick_x, x, y)
  r = np.maximum(x, y) if is_max else np.minimum(x, y)  # NaN-propagating, like XLA
  if _is_float(d):
    # XLA orders -0.0 below +0.0; NumPy returns either zero
    z = (x == 0) & (y == 0)
    if z.any():
      both = (x + y) if is_max else -((-x) + (-y))
      r = np.where(z, both, r)
  return r


@register("max")
def _max(x, y):
  return _max_min(x, y, True)


@register("min")
def _min(x, y):
  return _max_min(x, y, False)


@register("atan2")
def _atan2(y, x):
  if x.dtype.kind == "c":
    return -1j * np.log(_cdiv(x + 1j * y, np.sqrt(x * x + y * y)))
  return np.arctan2(_up(y), _up(x))


@register("nextafter")
def _nextafter(x, y):
  return np.where(x == y, y, np.nextafter(x, y))  # nextafter(x, x) is x's twin y (C99)


def _trunc_div(x, y):
  """Integer division rounding toward zero (NumPy's // rounds toward -inf)."""
  q = np.floor_divide(x, y)
  if x.dtype.kind == "u":
    return q
  r = x - q * y
  fix = (r != 0) & ((x < 0) != (y < 0))
  return q + fix.astype(q.dtype)


@register("div")
def _div(x, y):
  d = x.dtype
  if d.kind in "iu":
    x, y = np.broadcast_arrays(x, y)
    zero = y == 0
    ys = np.where(zero, np.ones((), d), y)
    if d.kind == "i":
      overflow = (x == np.iinfo(d).min) & (ys == -1)  # INT_MIN / -1 wraps to INT_MIN
      ys = np.where(overflow, np.ones((), d), ys)
      q = _trunc_div(x, ys)
      return np.where(zero, np.array(-1, d), q)  # x / 0 == -1 (all bits set)
    q = x // ys
    return np.where(zero, np.array(np.iinfo(d).max, d), q)
  if d.kind == "c":
    return _cdiv(x, y)
  return np.divide(_up(x), _up(y))


@register("rem")
def _rem(x, y):
  d = x.dtype
  if d.kind in "iu":
    x, y = np.broadcast_arrays(x, y)
    zero = y == 0
    ys = np.where(zero, np.ones((), d), y)
    if d.kind == "i":
      ys = np.where(ys == -1, np.ones((), d), ys)  # x % -1 == 0; avoids INT_MIN % -1
    r = np.fmod(x, ys)
    return np.where(zero, x, r)  # x % 0 == x
  return np.fmod(_up(x), _up(y))


@register("pow")
def _pow(x, y):
  if x.dtype.kind == "c":
    return _cpow(x, y)
  xu = _up(x)
  if y.dtype.kind in "iu":   # an integer exponent is first converted to x's own dtype, as
    y = y.astype(x.dtype)    # XLA does (bfloat16: 65535 -> 65536, so (-2)**65535 is +inf)
  return np.power(xu, _up(y))


def _cpow(x, y):
  """XLA's complex power: |x|^c e^(-d arg x) (cos q + i sin q) with q = c arg x +
  d log|x| for y = c + d i; y == 0 or x == 1 give 1; x == 0 gives 0 for real y > 0,
  else NaN.  |x| is ``hypot(a, b)`` (no underflow of a*a + b*b for |x| near 1e-30 in
  float32, whose power with a negative exponent is finite), and subnormal parts count as
  zero, as on XLA's CPU backend (flush-to-zero)."""
  dt = x.dtype
  x, y = np.broadcast_arrays(x, y)
  if y.dtype.kind in "iu":
    y = y.astype(dt)
  a, b, c, d = x.real, x.imag, y.real, y.imag
  tiny = np.finfo(a.dtype).tiny
  a = np.where(np.abs(a) < tiny, a * 0, a)
  b = np.where(np.abs(b) < tiny, b * 0, b)
  with np.errstate(all="ignore"):
    r = np.hypot(a, b)
    arg = np.arctan2(b, a)
    coeff = np.power(r, c) * np.exp(-d * arg)
    q = np.where(d == 0, c * arg, c * arg + d * np.log(r))
    out = _complex_from(coeff * np.cos(q), coeff * np.sin(q), dt)
  nan = np.array(complex(np.nan, np.nan), dt)
  one, zero = np.ones((), dt), np.zeros((), dt)
  x0 = (a == 0) & (b == 0)
  if x0.any():
    out = np.where(x0, np.where((c > 0) & (d == 0), zero, nan), out)
  return np.where(((c == 0) & (d == 0)) | ((a == 1) & (b == 0)), one, out)


@register("integer_pow")
def _integer_pow(x, y):
  if x.dtype.kind in "iu":
    return np.power(x, y, dtype=x.dtype)
  if y == 0:
    return np.ones_like(x)
  acc = _int_pow_by_squaring(x, abs(y))  # each product rounded to x's dtype, like XLA
  if y < 0:
    if x.dtype.kind == "c":
      return _cdiv(np.ones((), x.dtype), acc)
    return np.divide(np.ones((), x.dtype), acc)
  return acc


def _int_pow_by_squaring(x, y):
  acc = None
  base = x
  while y:
    if y & 1:
      acc = base if acc is None else acc * base
    y >>= 1
    if y:
      base = base * base
  return acc


@register("complex")
def _complex(x, y):
  d = np.complex64 if x.dtype == np.float32 else np.complex128
  return _complex_from(x, y, d)


def _shift_amount(x, y):
  bits = x.dtype.itemsize * 8
  yu = _as_unsigned(y) if y.dtype.kind == "i" else y  # negative amounts count as huge
  big = yu >= bits
  return bits, np.where(big, np.zeros((), yu.dtype), yu).astype(x.dtype), big


@register("shift_left")
def _shl(x, y):
  bits, s, big = _shift_amount(x, y)
  return np.where(big, np.zeros((), x.dtype), np.left_shift(x, s))


@register("shift_right_logical")
def _shrl(x, y):
  bits, s, big = _shift_amount(x, y)
  if x.dtype.kind == "i":
    u = np.dtype(f"u{x.dtype.itemsize}")
    r = np.right_shift(_as_unsigned(x), s.astype(u)).astype(x.dtype)
  else:
    r = np.right_shift(x, s)
  return np.where(big, np.zeros((), x.dtype), r)


@register("shift_right_arithmetic")
def _shra(x, y):
  bits, s, big = _shift_amount(x, y)
  s = np.where(big, np.array(bits - 1, s.dtype), s)
  if x.dtype.kind == "i":
    return np.right_shift(x, s)
  # unsigned: the top bit acts as the sign bit
  xs = x.view(np.dtype(f"i{x.dtype.itemsize}"))
  return np.right_shift(xs, s.astype(xs.dtype)).view(x.dtype)


# --- special functions of two or three arguments ----------------------------------------
def _nan_where(cond, out):
  return np.where(cond, np.array(np.nan, out.dtype), out)


@register("igamma")
def _igamma(a, x):
  a, x = _up(a), _up(x)
  out = sp.gammainc(a, x)
  one, zero = np.ones((), out.dtype), np.zeros((), out.dtype)
  out = np.where((x == np.inf) & (a >= 0), one, out)
  # XLA's edge cases (its series, used for x < 1 or x <= a, gives NaN for a == 0 and 0 for
  # a == inf; its continued fraction gives 1 for a == 0 and NaN for a == inf)
  out = np.where((a == 0) & (x >= 1), one, out)
  out = np.where((a == np.inf) & (x < 1), zero, out)
  return _nan_where((a < 0) | (x < 0) | ((a == 0) & (x < 1))
                    | ((a == np.inf) & (x >= 1) & (x < np.inf)), out)


@register("igammac")
def _igammac(a, x):
  a, x = _up(a), _up(x)
  out = sp.gammaincc(a, x)
  one, zero = np.ones((), out.dtype), np.zeros((), out.dtype)
  out = np.where((a == 0) & (x > 0), zero, out)
  out = np.where((x == np.inf) & (a >= 0), zero, out)
  out = np.where((a == np.inf) & (x < 1), one, out)  # XLA's edge cases, as in igamma
  return _nan_where((a < 0) | (x < 0) | ((a == 0) & (x == 0))
                    | ((a == np.inf) & (x >= 1) & (x < np.inf)), out)


def _dP_da(a, x):
  """d/da of the regularized lower incomplete gamma P(a, x), in float64 (central
  differences with one step of Richardson extrapolation)."""
  a64, x64 = a.astype(np.float64), x.astype(np.float64)
  h = 1e-3 * np.maximum(1.0, np.abs(a64))
  h = np.minimum(h, 0.5 * np.abs(a64))

  def central(step):
    return (sp.gammainc(a64 + step, x64) - sp.gammainc(a64 - step, x64)) / (2 * step)
  return (4 * central(h / 2) - central(h)) / 3


@register("igamma_grad_a")
def _igamma_grad_a(a, x):
  out = _dP_da(a, x)
  a64, x64 = a.astype(np.float64), x.astype(np.float64)
  out = np.where((x64 == 0) & (a64 > 0), 0.0, out)
  return _nan_where((a64 <= 0) | (x64 < 0) | np.isinf(x64) | (np.isinf(a64) & (x64 > 0)), out)


@register("random_gamma_grad")
def _random_gamma_grad(a, x):
  # d sample / d alpha for a Gamma(alpha, 1) sample x (implicit reparameterization):
  # -(dP/da) / (dP/dx), with P the regularized lower incomplete gamma function.
  a64, x64 = a.astype(np.float64), x.astype(np.float64)
  log_pdf = (a64 - 1) * np.log(x64) - x64 - sp.gammaln(a64)
  out = -_dP_da(a, x) / np.exp(log_pdf)
  out = np.where((x64 == 0) & (a64 > 0), 0.0, out)
  return _nan_where((a64 <= 0) | (x64 < 0) | np.isinf(x64) | (np.isinf(a64) & (x64 > 0)), out)


def _is_int_valued(v):
  return v == np.floor(v)


@register("polygamma")
def _polygamma(n, x):
  n, x = _up(n), _up(x)
  n, x = np.broadcast_arrays(n, x)
  n_ok = (n >= 0) & _is_int_valued(n) & np.isfinite(n)
  ni = np.where(n_ok, n, 0).astype(np.int64)
  out = np.asarray(sp.polygamma(ni, x), x.dtype)
  odd = (ni % 2) == 1
  pole = (x <= 0) & _is_int_valued(x)  # includes -inf
  out = np.where(pole & (ni > 0), np.where(odd, np.array(np.inf, x.dtype), np.array(np.nan, x.dtype)), out)
  out = np.where((ni > 0) & (x == np.inf), np.array(np.nan, x.dtype), out)
  out = np.where(ni == 0, _digamma(x), out)
  return _nan_where(~n_ok, out)


@register("zeta")
def _zeta(x, q):
  x, q = _up(x), _up(q)
  x, q = np.broadcast_arrays(x, q)
  out = np.asarray(sp.zeta(x, q), x.dtype)
  even_x = _is_int_valued(x) & (np.fmod(x, 2) == 0)
  q_pole = (q <= 0) & _is_int_valued(q)
  nan = np.isnan(x) | np.isnan(q) | np.isinf(x) | (q == np.inf)
  nan |= (x < 1) | ((q < 0) & ~_is_int_valued(x))
  out = _nan_where(nan, out)
  out = np.where(q_pole, np.where(even_x, np.array(np.inf, x.dtype), np.array(np.nan, x.dtype)), out)
  return np.where(x == 1, np.array(np.inf, x.dtype), out)


@register("regularized_incomplete_beta")
def _betainc(a, b, x):
  return sp.betainc(_up(a), _up(b), _up(x))


# --- conversions ------------------------------------------------------------------------
@register("convert_element_type")
def _convert(x, new_dtype, weak_type=False, sharding=None):
  new_dtype = np.dtype(new_dtype)
  src = x.dtype
  if new_dtype == src:
    return x
  if src.kind == "c" and new_dtype.kind != "c":
    x = np.real(x)  # complex -> real (and -> bool, -> int) uses the real part
    src = x.dtype
  if new_dtype == np.bool_:
    return x != 0
  if new_dtype.kind in "iu" and src in _FLOATS:
    bounds = _TRUNC_BOUNDS.get((src, new_dtype))
    if bounds is not None and ((x >= bounds[0]) & (x < bounds[1])).all():
      return x.astype(new_dtype)  # every value in range (and no NaN): a plain truncation
    # saturate to the integer range; NaN -> 0
    xf = x.astype(np.float64)
    info = np.iinfo(new_dtype)
    xf = np.where(np.isnan(xf), 0.0, np.trunc(xf))
    lo_sat, hi_sat = xf <= float(info.min), xf >= float(info.max)
    xf = np.where(lo_sat | hi_sat, 0.0, xf)
    out = xf.astype(new_dtype)
    out = np.where(hi_sat, np.array(info.max, new_dtype), out)
    return np.where(lo_sat, np.array(info.min, new_dtype), out)
  return x.astype(new_dtype)


def _trunc_bounds():
  """(lo, hi) per (float32/float64 source, integer target): lo <= x < hi (both exact in the
  source type) guarantees that trunc(x) fits the target, so a plain cast is exact."""
  out = {}
  for src in (_f32, _f64):
    for t in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64):
      t = np.dtype(t)
      bits = t.itemsize * 8
      if t.kind == "i":
        lo, hi = -2.0 ** (bits - 1), 2.0 ** (bits - 1)
      else:
        lo, hi = np.nextafter(-1.0, 0.0, dtype=src), 2.0 ** bits
      out[(src, t)] = (np.array(lo, src), np.array(hi, src))
  return out


_TRUNC_BOUNDS = _trunc_bounds()

_sub_byte = {np.dtype(getattr(ml_dtypes, n)): (b, s) for n, b, s in
             (("int4", 4, True), ("uint4", 4, False), ("int2", 2, True), ("uint2", 2, False))
             if hasattr(ml_dtypes, n)}


def _bits(d):
  return _sub_byte[d][0] if d in _sub_byte else d.itemsize * 8


def _contiguous(x):
  """x as a C-contiguous array of the same shape (np.ascontiguousarray turns 0-d into 1-d)."""
  x = np.asarray(x)
  return x if x.flags.c_contiguous else x.copy()


def _raw_bits(x):
  """Unsigned integers holding x's bit patterns (sub-byte integers: the low bits)."""
  d = x.dtype
  if d in _sub_byte:
    b, _ = _sub_byte[d]
    return x.astype(np.int64).astype(np.uint64) & np.uint64((1 << b) - 1)
  return _contiguous(x).view(np.dtype(f"u{d.itemsize}"))


def _from_raw_bits(u, d):
  if d in _sub_byte:
    b, signed = _sub_byte[d]
    v = u.astype(np.int64)
    if signed:
      v = np.where(v >= (1 << (b - 1)), v - (1 << b), v)
    return v.astype(d)
  return u.astype(np.dtype(f"u{d.itemsize}")).view(d)


@register("bitcast_convert_type")
def _bitcast(x, new_dtype):
  new_dtype = np.dtype(new_dtype)
  ob, nb = _bits(x.dtype), _bits(new_dtype)
  if x.dtype not in _sub_byte and new_dtype not in _sub_byte:
    x = _contiguous(x)
    if ob == nb:
      return x.view(new_dtype)
    if ob > nb:
      return x.reshape(x.shape + (1,)).view(new_dtype).reshape(x.shape + (ob // nb,))
    return x.view(new_dtype).reshape(x.shape[:-1])
  u = _raw_bits(x).astype(np.uint64)
  if ob == nb:
    return _from_raw_bits(u, new_dtype)
  if ob > nb:  # split each element into ob // nb little-endian pieces
    k = ob // nb
    shifts = (np.arange(k, dtype=np.uint64) * np.uint64(nb))
    pieces = (u[..., None] >> shifts) & np.uint64((1 << nb) - 1)
    return _from_raw_bits(pieces, new_dtype)
  k = nb // ob  # join the trailing dimension's pieces
  shifts = (np.arange(k, dtype=np.uint64) * np.uint64(ob))
  joined = np.bitwise_or.reduce(u << shifts, axis=-1)
  return _from_raw_bits(joined, new_dtype)


@register("reduce_precision")
def _reduce_precision(x, exponent_bits, mantissa_bits):
  xf = x.astype(np.float32) if x.dtype != np.float64 else x
  bits_t = np.uint32 if xf.dtype == np.float32 else np.uint64
  nbits = 32 if xf.dtype == np.float32 else 64
  src_mant = 23 if nbits == 32 else 52
  src_exp = 8 if nbits == 32 else 11
  b = _contiguous(xf).view(bits_t).copy()
  one = bits_t(1)
  if mantissa_bits < src_mant:
    shift = bits_t(src_mant - mantissa_bits)
    last = (b >> shift) & one
    bias = (one << (shift - one)) - one + last
    b = (b + bias) & ~((one << shift) - one)
  if exponent_bits < src_exp:
    sign = b & (one << bits_t(nbits - 1))
    mag = b & ~(one << bits_t(nbits - 1))
    src_bias = (1 << (src_exp - 1)) - 1
    dst_bias = (1 << (exponent_bits - 1)) - 1
    max_exp = src_bias + dst_bias
    min_exp = src_bias - dst_bias
    exp_field = (mag >> bits_t(src_mant)).astype(np.int64)
    overflow = exp_field > max_exp
    underflow = exp_field <= min_exp
    inf_bits = bits_t(((1 << src_exp) - 1) << src_mant)
    mag = np.where(overflow, inf_bits, mag)
    mag = np.where(underflow, bits_t(0), mag)
    b = sign | mag
  out = b.view(xf.dtype)
  out = np.where(np.isnan(xf), xf, out)
  return out.astype(x.dtype)


# --- selection --------------------------------------------------------------------------
@register("select_n")
def _select_n(which, *cases):
  if len(cases) == 1:
    return cases[0]
  if which.dtype == np.bool_:
    return np.where(which, cases[1], cases[0])
  if which.ndim == 0:
    return cases[int(np.clip(which, 0, len(cases) - 1))]
  return np.choose(np.clip(which, 0, len(cases) - 1), cases)


@register("clamp")
def _clamp(lo, x, hi):
  if x.dtype.kind == "c":
    # XLA compares complex operands of clamp by their real parts
    t = np.where(x.real > lo.real, x, lo)
    return np.where(hi.real < t.real, hi, t)
  return _min(_max(x, lo), hi)


# The hot binary ops above are NumPy ufuncs registered bare (no Python wrapper), so their
# floating-point warnings are raised from the dispatcher's frame: silence those too.
_dispatch.quiet_warnings(RuntimeWarning, r"pyjax\._src\.runtime\.dispatch")


# --- mulhi --------------------------------------------------------------------------------
def _mulhi64(x, y, signed):
  """High 64 bits of 64x64-bit products, from 32-bit halves in uint64 arithmetic."""
  ux = x.astype(np.uint64)
  uy = y.astype(np.uint64)
  mask = np.uint64(0xFFFFFFFF)
  s32 = np.uint64(32)
  xl, xh = ux & mask, ux >> s32
  yl, yh = uy & mask, uy >> s32
  ll = xl * yl
  lh = xl * yh
  hl = xh * yl
  hh = xh * yh
  mid = (ll >> s32) + (lh & mask) + (hl & mask)
  hi = hh + (lh >> s32) + (hl >> s32) + (mid >> s32)
  if signed:   # two's complement correction: subtract y where x < 0 and x where y < 0
    hi = hi - np.where(x < 0, uy, np.uint64(0)) - np.where(y < 0, ux, np.uint64(0))
    return hi.view(np.int64)
  return hi


@register("mulhi")
def _mulhi(x, y):
  d = np.result_type(x, y)
  x = np.asarray(x, d)
  y = np.asarray(y, d)
  bits = d.itemsize * 8
  signed = d.kind == "i"
  with np.errstate(over="ignore"):
    if bits == 64:
      return _mulhi64(x, y, signed).astype(d)
    wide = np.int64 if signed else np.uint64
    prod = x.astype(wide) * y.astype(wide)
    return (prod >> wide(bits)).astype(d)


# --- total-order comparisons ------------------------------------------------------------------
_INT_OF_SIZE = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}


def _total_order_key(x):
  """Signed integers ordered as IEEE totalOrder orders the floats ``x``."""
  x = np.asarray(x)
  if x.dtype.kind not in "fV" and not _is_ml_float(x.dtype):
    return x
  it = _INT_OF_SIZE[x.dtype.itemsize]
  s = np.ascontiguousarray(x).view(it)
  return np.where(s < 0, s ^ np.iinfo(it).max, s)


def _is_ml_float(d):
  try:
    import ml_dtypes
    return d in (np.dtype(ml_dtypes.bfloat16),) or "float8" in d.name or "float4" in d.name
  except ImportError:   # pragma: no cover
    return False


@register("eq_to")
def _eq_to(x, y):
  if np.asarray(x).dtype.kind == "c":
    return (_total_order_key(np.real(x)) == _total_order_key(np.real(y))) & (
        _total_order_key(np.imag(x)) == _total_order_key(np.imag(y)))
  return _total_order_key(x) == _total_order_key(y)


@register("lt_to")
def _lt_to(x, y):
  return _total_order_key(x) < _total_order_key(y)


@register("le_to")
def _le_to(x, y):
  return _total_order_key(x) <= _total_order_key(y)


# the transcendental functions above run the compiler's kernels eagerly when a C compiler
# exists (the bits of jit's tiers; ``eager/kernel_calls.py``)
from pyjax._src.backends.cpu.eager import kernel_calls as _kernel_calls  # noqa: E402

_kernel_calls.install()
