"""Eager NumPy implementations of the elementwise primitives, with XLA's semantics where
NumPy differs (integer division and remainder, shifts, float->int conversion, NaN
propagation in max/min, rounding)."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import scipy.special as sp

from pyjax._src.backends.cpu.registry import impls, register

_half = {np.dtype(ml_dtypes.bfloat16), np.dtype(np.float16)}


class _NoErrState:
  """Floating-point warnings from this backend are filtered (XLA never warns), so
  nothing is needed at run time; kept as a context manager for readability."""

  def __enter__(self):
    return self

  def __exit__(self, *a):
    return False


_errstate = _NoErrState()


def _up(x):
  """Compute half/float8 types in float32 (as XLA does); others unchanged."""
  d = x.dtype
  if d.kind == "V" or d in _half or (d.itemsize == 1 and d.kind == "f") or d.name.startswith("float8"):
    return x.astype(np.float32)
  return x


def _quiet(fn):
  def f(*args, **kw):
    with _errstate:
      return fn(*args, **kw)
  f.__name__ = getattr(fn, "__name__", "f")
  return f


def _ufunc1(name, fn, upcast=False):
  if upcast:
    impls[name] = _quiet(lambda x: fn(_up(x)))
  else:
    impls[name] = _quiet(fn)


def _ufunc2(name, fn, upcast=False):
  if upcast:
    impls[name] = _quiet(lambda x, y: fn(_up(x), _up(y)))
  else:
    impls[name] = _quiet(fn)


for _n, _f in [("neg", np.negative), ("exp", np.exp), ("exp2", np.exp2), ("log", np.log),
               ("expm1", np.expm1), ("log1p", np.log1p), ("tanh", np.tanh), ("sin", np.sin),
               ("cos", np.cos), ("tan", np.tan), ("asin", np.arcsin), ("acos", np.arccos),
               ("atan", np.arctan), ("sinh", np.sinh), ("cosh", np.cosh),
               ("asinh", np.arcsinh), ("acosh", np.arccosh), ("atanh", np.arctanh),
               ("sqrt", np.sqrt), ("cbrt", np.cbrt), ("square", np.square),
               ("floor", np.floor), ("ceil", np.ceil), ("is_finite", np.isfinite),
               ("real", np.real), ("imag", np.imag)]:
  _ufunc1(_n, _f, upcast=_n not in ("neg", "floor", "ceil", "is_finite", "real", "imag", "square"))

_ufunc1("erf", sp.erf, True)
_ufunc1("erfc", sp.erfc, True)
_ufunc1("erf_inv", sp.erfinv, True)
_ufunc1("lgamma", sp.gammaln, True)
_ufunc1("digamma", sp.psi, True)
_ufunc1("bessel_i0e", sp.i0e, True)
_ufunc1("bessel_i1e", sp.i1e, True)
_ufunc1("logistic", sp.expit, True)
_ufunc1("abs", np.abs)
_ufunc1("conj", np.conjugate)


@register("rsqrt")
@_quiet
def _rsqrt(x):
  x = _up(x)
  return 1 / np.sqrt(x)


@register("sign")
def _sign(x):
  if x.dtype.kind == "f" or x.dtype in _half:
    with _errstate:
      # keeps -0.0 and NaN like XLA
      return np.where(x == 0, x, np.sign(_up(x))).astype(x.dtype)
  if x.dtype.kind == "c":
    with _errstate:
      a = np.abs(x)
      return np.where(a == 0, 0, x / np.where(a == 0, 1, a)).astype(x.dtype)
  return np.sign(x)


@register("round")
def _round(x, rounding_method=0):
  xu = _up(x)
  if int(rounding_method) == 1:
    return np.rint(xu)
  with _errstate:
    return np.where(np.abs(xu - np.trunc(xu)) == 0.5, np.trunc(xu) + np.sign(xu), np.rint(xu))


@register("not")
def _not(x):
  return np.logical_not(x) if x.dtype == np.bool_ else np.invert(x)


@register("population_count")
def _popcount(x):
  return np.bitwise_count(x).astype(x.dtype)


@register("clz")
def _clz(x):
  bits = x.dtype.itemsize * 8
  u = x.view(np.dtype(f"u{x.dtype.itemsize}")).astype(np.uint64)
  out = np.full(x.shape, bits, np.int64)
  # position of the highest set bit via float log2 is inexact for 64 bits: use a loop of halving
  nz = u != 0
  n = np.zeros(x.shape, np.int64)
  v = u.copy()
  for s in (32, 16, 8, 4, 2, 1):
    if s >= bits:
      continue
    m = v >= (np.uint64(1) << np.uint64(s))
    n = np.where(m, n + s, n)
    v = np.where(m, v >> np.uint64(s), v)
  out = np.where(nz, bits - 1 - n, bits)
  return out.astype(x.dtype)


_ufunc2("add", np.add)
_ufunc2("sub", np.subtract)
_ufunc2("mul", np.multiply)
_ufunc2("atan2", np.arctan2, True)
_ufunc2("nextafter", np.nextafter)
_ufunc2("eq", np.equal)
_ufunc2("ne", np.not_equal)
_ufunc2("lt", np.less)
_ufunc2("le", np.less_equal)
_ufunc2("gt", np.greater)
_ufunc2("ge", np.greater_equal)
_ufunc2("igamma", sp.gammainc, True)
_ufunc2("igammac", sp.gammaincc, True)
_ufunc2("zeta", sp.zeta, True)


@register("polygamma")
@_quiet
def _polygamma(n, x):
  n32, x32 = _up(n), _up(x)
  out = sp.polygamma(np.where(n32 == np.round(n32), n32, 0).astype(np.int64), x32)
  return np.where(n32 == np.round(n32), out, np.nan)


@register("igamma_grad_a")
@_quiet
def _igamma_grad_a(a, x):
  a64, x64 = a.astype(np.float64), x.astype(np.float64)
  h = 1e-6 * np.maximum(1.0, np.abs(a64))
  return (sp.gammainc(a64 + h, x64) - sp.gammainc(a64 - h, x64)) / (2 * h)


@register("random_gamma_grad")
@_quiet
def _random_gamma_grad(a, x):
  # d sample / d alpha for a Gamma(alpha, 1) sample x (implicit reparameterization):
  # -(dF/da) / (dF/dx) with F the regularized lower incomplete gamma function.
  a64, x64 = a.astype(np.float64), x.astype(np.float64)
  h = 1e-6 * np.maximum(1.0, np.abs(a64))
  dfda = (sp.gammainc(a64 + h, x64) - sp.gammainc(a64 - h, x64)) / (2 * h)
  logpdf = (a64 - 1) * np.log(x64) - x64 - sp.gammaln(a64)
  return -dfda / np.exp(logpdf)


@register("regularized_incomplete_beta")
@_quiet
def _betainc(a, b, x):
  return sp.betainc(_up(a), _up(b), _up(x))


@register("max")
def _max(x, y):
  if x.dtype.kind in "fc" or x.dtype in _half:
    return np.maximum(x, y)  # propagates NaN like XLA
  return np.maximum(x, y)


@register("min")
def _min(x, y):
  return np.minimum(x, y)


@register("div")
@_quiet
def _div(x, y):
  if x.dtype.kind in "iu":
    x, y = np.broadcast_arrays(x, y)
    zero = y == 0
    ys = np.where(zero, 1, y)
    if x.dtype.kind == "i":
      info = np.iinfo(x.dtype)
      overflow = (x == info.min) & (ys == -1)
      ys = np.where(overflow, 1, ys)
      q = np.trunc(x.astype(np.float64) / ys).astype(x.dtype) if x.dtype.itemsize < 8 else _trunc_div_int64(x, ys)
      q = np.where(overflow, x, q)
      return np.where(zero, np.array(-1, x.dtype), q)
    q = x // ys
    return np.where(zero, np.array(np.iinfo(x.dtype).max, x.dtype), q)
  if x.dtype == np.bool_:
    return x
  return np.divide(x, y)


def _trunc_div_int64(x, y):
  q = np.floor_divide(x, y)
  r = x - q * y
  fix = (r != 0) & ((r < 0) != (y < 0))
  return q + fix.astype(q.dtype)


@register("rem")
@_quiet
def _rem(x, y):
  if x.dtype.kind in "iu":
    x, y = np.broadcast_arrays(x, y)
    zero = y == 0
    ys = np.where(zero, 1, y)
    if x.dtype.kind == "i":
      ys = np.where(ys == -1, 1, ys)  # x % -1 == 0, avoids INT_MIN % -1 overflow
    r = np.fmod(x, ys)
    return np.where(zero, x, r)
  return np.fmod(_up(x), _up(y))


@register("pow")
@_quiet
def _pow(x, y):
  if y.dtype.kind in "iu" and x.dtype.kind in "fc" or (y.dtype.kind in "iu" and x.dtype in _half):
    return np.power(_up(x), y.astype(np.float64) if x.dtype == np.float64 else y.astype(_up(x).dtype if _up(x).dtype.kind != "c" else np.float64))
  return np.power(_up(x), _up(y))


@register("integer_pow")
@_quiet
def _integer_pow(x, y):
  if x.dtype.kind in "iu":
    return np.power(x, y, dtype=x.dtype) if y >= 0 else np.zeros_like(x)
  xu = _up(x)
  if y == 0:
    return np.ones_like(xu)
  return np.power(xu, np.array(y, xu.dtype if xu.dtype.kind == "f" else np.float64)) if y < 0 else \
      _int_pow_by_squaring(xu, y)


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
  x, y = _up(x), _up(y)
  return x + 1j * y


def _as_bool(x):
  return x.astype(bool) if x.dtype != np.bool_ else x


@register("and")
def _and(x, y):
  return np.logical_and(x, y) if x.dtype == np.bool_ else np.bitwise_and(x, y)


@register("or")
def _or(x, y):
  return np.logical_or(x, y) if x.dtype == np.bool_ else np.bitwise_or(x, y)


@register("xor")
def _xor(x, y):
  return np.logical_xor(x, y) if x.dtype == np.bool_ else np.bitwise_xor(x, y)


def _shift_amount(x, y):
  bits = x.dtype.itemsize * 8
  u = np.dtype(f"u{x.dtype.itemsize}")
  yu = y.astype(u) if y.dtype.kind == "i" else y
  big = yu >= bits
  return bits, np.where(big, 0, yu).astype(x.dtype), big


@register("shift_left")
def _shl(x, y):
  bits, s, big = _shift_amount(x, y)
  return np.where(big, np.zeros((), x.dtype), np.left_shift(x, s))


@register("shift_right_logical")
def _shrl(x, y):
  bits, s, big = _shift_amount(x, y)
  u = np.dtype(f"u{x.dtype.itemsize}")
  r = np.right_shift(x.view(u) if x.ndim else x.astype(u), s.astype(u)).astype(x.dtype) \
      if x.dtype.kind == "i" else np.right_shift(x, s)
  return np.where(big, np.zeros((), x.dtype), r)


@register("shift_right_arithmetic")
def _shra(x, y):
  bits, s, big = _shift_amount(x, y)
  if x.dtype.kind == "i":
    return np.right_shift(x, np.where(big, bits - 1, s).astype(x.dtype))
  u = x.dtype
  # unsigned: arithmetic shift uses the top bit as the sign
  xs = x.view(np.dtype(f"i{u.itemsize}")) if x.ndim else x.astype(np.dtype(f"i{u.itemsize}"))
  r = np.right_shift(xs, np.where(big, bits - 1, s).astype(xs.dtype))
  return r.astype(u)


@register("convert_element_type")
def _convert(x, new_dtype, weak_type=False, sharding=None):
  new_dtype = np.dtype(new_dtype)
  src = x.dtype
  if new_dtype == src:
    return x
  if new_dtype == np.bool_:
    return x != 0
  if src.kind == "c" and new_dtype.kind != "c":
    x = np.real(x)
    src = x.dtype
  if new_dtype.kind in "iu" and (src.kind == "f" or src in _half or src.name.startswith("float8")):
    with _errstate:
      xf = x.astype(np.float64)
      info = np.iinfo(new_dtype)
      xf = np.where(np.isnan(xf), 0, xf)
      xf = np.clip(np.trunc(xf), info.min, info.max)
      # float64 cannot represent int64 max exactly: clamp through comparisons
      out = xf.astype(new_dtype)
      if new_dtype.itemsize == 8:
        out = np.where(xf >= float(info.max), np.array(info.max, new_dtype), out)
      return out
  with _errstate:
    return x.astype(new_dtype)


@register("bitcast_convert_type")
def _bitcast(x, new_dtype):
  new_dtype = np.dtype(new_dtype)
  x = np.ascontiguousarray(x)
  oi, ni = x.dtype.itemsize, new_dtype.itemsize
  if oi == ni:
    return x.view(new_dtype)
  if oi > ni:
    return x.reshape(x.shape + (1,)).view(new_dtype).reshape(x.shape + (oi // ni,))
  return x.view(new_dtype).reshape(x.shape[:-1])


@register("reduce_precision")
def _reduce_precision(x, exponent_bits, mantissa_bits):
  xf = x.astype(np.float32) if x.dtype != np.float64 else x
  bits_t = np.uint32 if xf.dtype == np.float32 else np.uint64
  nbits = 32 if xf.dtype == np.float32 else 64
  src_mant = 23 if nbits == 32 else 52
  src_exp = 8 if nbits == 32 else 11
  b = np.ascontiguousarray(xf).view(bits_t).copy()
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
  with _errstate:
    return np.minimum(np.maximum(x, lo), hi)
