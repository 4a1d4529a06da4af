"""jax.scipy.special: gamma/beta family, error functions, logs and entropies, normal
distribution helpers, Bessel I0/I1, zeta/polygamma, logsumexp and softmax.

The algorithms are JAX's (lax's special-function primitives, the same series, rational
approximations and custom derivatives), so values and gradients agree with JAX.  The
exponential integrals, Fresnel/Dawson/Faddeeva functions and Owen's T are in
``special_expint.py``; hypergeometric functions, Bessel J, spherical harmonics and the
Bernoulli numbers in ``special_hyp.py``.
"""
from __future__ import annotations

import operator
from functools import partial

import numpy as np

from pyjax._src import core, dtypes
from pyjax._src.api import jit
from pyjax._src.api_ad import custom_jvp, jvp
from pyjax._src.lax import lax_api as lax
from pyjax._src.numpy.util import (
    check_arraylike, promote_args_inexact, promote_dtypes_complex, promote_shapes)
from pyjax._src.scipy import _loops
from pyjax._src.scipy import _custom
import pyjax.numpy as jnp

__all__ = [
    "beta", "betainc", "betaln", "boxcox", "boxcox1p", "comb", "digamma", "entr", "erf",
    "erfc", "erfinv", "expit", "factorial", "gamma", "gammainc", "gammaincc", "gammaln",
    "gammasgn", "i0", "i0e", "i1", "i1e", "kl_div", "log_ndtr", "log_softmax", "loggamma",
    "logit", "logsumexp", "multigammaln", "ndtr", "ndtri", "poch", "polygamma", "rel_entr",
    "softmax", "xlog1py", "xlogy", "zeta",
]


# --- helpers ------------------------------------------------------------------------------
from pyjax._src.numpy.util import constant as _weak_constant  # noqa: E402


def _c(x, v):
  """``v`` as a 0-d constant of ``x``'s dtype, weakly typed when ``x`` is (as JAX's
  ``lax._const``, which gives a Python scalar for a weakly typed example)."""
  if getattr(x, "weak_type", False):
    return _weak_constant(v, x.dtype, True)
  return np.array(v, dtype=x.dtype)


def _is_complex(x):
  return dtypes.issubdtype(x.dtype, np.complexfloating)


def _no_complex(name, x):
  if _is_complex(x):
    raise ValueError(f"{name} does not support complex-valued inputs.")


def promote_args_complex(fun_name, *args):
  check_arraylike(fun_name, *args)
  return promote_shapes(fun_name, *promote_dtypes_complex(*args))


def _polyval(coeffs, x):
  """Horner's rule from a zero start (as jnp.polyval), highest degree first."""
  y = jnp.zeros_like(x)
  for c in coeffs:        # the coefficients are strongly typed (a NumPy array in JAX)
    y = y * x + np.array(c, dtype=x.dtype)
  return y


def _piecewise(x, condlist, funclist, **kw):
  """jnp.piecewise for arrays of equal shape: a later true condition wins; one extra
  function is the default (else 0).  Every function is evaluated on all of ``x``."""
  if len(funclist) == len(condlist) + 1:
    default, funclist = funclist[-1], funclist[:-1]
  else:
    default = 0

  def ev(f):
    v = f(x, **kw) if callable(f) else f
    return jnp.broadcast_to(jnp.asarray(v).astype(x.dtype), x.shape)

  out = ev(default)
  for cond, f in zip(condlist, funclist):
    out = jnp.where(cond, ev(f), out)
  return out


# --- gamma family -------------------------------------------------------------------------
def gammaln(x):
  """``log|Gamma(x)|`` (``lax.lgamma``)."""
  x, = promote_args_inexact("gammaln", x)
  return lax.lgamma(x)


@jit
def gammasgn(x):
  """The sign of ``Gamma(x)``: NaN at non-positive integers and NaN, -1 where Gamma < 0
  (including ``-0.0``), else +1."""
  x, = promote_args_inexact("gammasgn", x)
  _no_complex("gammasgn", x)
  fl = lax.floor(x)
  neg = x < 0
  nan_case = (neg & (x == fl)) | jnp.isnan(x)
  minus = (neg & (fl % 2 != 0)) | ((x == 0) & jnp.signbit(x))
  t = x.dtype.type
  return jnp.select([nan_case, minus], [t(np.nan), t(-1.0)], t(1.0))


# Lanczos approximation (g = 7, nine coefficients) for complex log-gamma.
_LANCZOS_G = 7.0
_LANCZOS = np.array([
    0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
    -176.61502916214059, 12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6,
    1.5056327351493116e-7])


def _lanczos_loggamma(z):
  """log Gamma(z) for complex z by Lanczos, reflected for Re z < 0.5."""
  reflect = jnp.real(z) < 0.5
  w = jnp.where(reflect, 1.0 - z, z) - 1.0
  coeffs = jnp.asarray(_LANCZOS, dtype=z.dtype)
  ks = jnp.arange(1, 9, dtype=z.dtype)
  series = coeffs[0] + jnp.sum(coeffs[1:] / (w[..., None] + ks), axis=-1)
  t = w + _LANCZOS_G + 0.5
  lg = (jnp.asarray(0.5 * np.log(2.0 * np.pi), dtype=z.dtype) + (w + 0.5) * jnp.log(t) - t
        + jnp.log(series))
  z_refl = jnp.where(reflect, z, jnp.full_like(z, 0.5))
  refl = jnp.log(jnp.asarray(np.pi, dtype=z.dtype)) - jnp.log(jnp.sin(np.pi * z_refl)) - lg
  return jnp.where(reflect, refl, lg)


def _complex_pole_or_nan(z):
  re = jnp.real(z)
  pole = (jnp.imag(z) == 0) & (re == jnp.floor(re)) & (re <= 0)
  return pole | jnp.isnan(z)


def _complex_gamma(z):
  bad = _complex_pole_or_nan(z)
  safe = jnp.where(bad, jnp.ones_like(z), z)
  nan = jnp.array(complex(np.nan, np.nan), dtype=z.dtype)
  return jnp.where(bad, nan, jnp.exp(_lanczos_loggamma(safe)))


def _complex_loggamma_principal(z):
  """SciPy's principal branch: shift into Re z >= 0.5 with the recurrence
  ``loggamma(z) = loggamma(z + n) - sum_k log(z + k)`` so the only cut is (-inf, 0]."""
  bad = _complex_pole_or_nan(z)
  safe = jnp.where(bad, jnp.ones_like(z), z)
  n = jnp.maximum(0, jnp.ceil(0.5 - jnp.real(safe)).astype(int))

  def active(s):
    return s[0] < n

  def body(s):
    k, acc = s
    return k + 1, acc + jnp.log(safe + k)

  k0 = jnp.zeros(n.shape, n.dtype)
  _, acc = _loops.masked_while(active, body, (k0, jnp.zeros_like(safe)))
  out = _lanczos_loggamma(safe + n) - acc
  return jnp.where(bad, jnp.array(complex(np.nan, np.nan), dtype=z.dtype), out)


def loggamma(x):
  """Principal branch of ``log Gamma``: real inputs give NaN for ``x <= 0``; complex
  inputs follow SciPy's single branch cut on the negative real axis."""
  x, = promote_args_inexact("loggamma", x)
  if _is_complex(x):
    return _complex_loggamma_principal(x)
  return jnp.where(x > 0, lax.lgamma(x), np.nan)


def gamma(x):
  """The gamma function, ``gammasgn(x) * exp(lgamma(x))`` (Lanczos for complex ``x``)."""
  x, = promote_args_inexact("gamma", x)
  if _is_complex(x):
    return _complex_gamma(x)
  return gammasgn(x) * lax.exp(lax.lgamma(x))


def _algdiv(a, b):
  """``lgamma(b) - lgamma(a + b)`` for ``b >= 8`` (``a <= b``), from the cdflib series."""
  h = a / b
  c = h / (1 + h)
  x = c
  d = b + (a - 0.5)
  x2 = x * x
  s3 = 1.0 + (x + x2)
  s5 = 1.0 + (x + x2 * s3)
  s7 = 1.0 + (x + x2 * s5)
  s9 = 1.0 + (x + x2 * s7)
  s11 = 1.0 + (x + x2 * s9)
  t = (1.0 / b) ** 2
  w = ((((-0.165322962780713e-02 * s11 * t + 0.837308034031215e-03 * s9) * t
         - 0.595202931351870e-03 * s7) * t + 0.793650666825390e-03 * s5) * t
       - 0.277777777760991e-02 * s3) * t + 0.833333333333333e-01
  w = w * (c / b)
  u = d * lax.log1p(a / b)
  v = a * (lax.log(b) - 1.0)
  return jnp.where(u <= v, (w - v) - u, (w - u) - v)


def _betaln(a, b):
  a, b = jnp.minimum(a, b), jnp.maximum(a, b)
  small = lax.lgamma(a) + (lax.lgamma(b) - lax.lgamma(a + b))
  large = lax.lgamma(a) + _algdiv(a, b)
  return jnp.where(b < 8, small, large)


def betaln(a, b):
  """``log|B(a, b)|``, with the cdflib ``algdiv`` correction when ``max(a, b) >= 8``."""
  a, b = promote_args_inexact("betaln", a, b)
  return _betaln(a, b)


def factorial(n, exact: bool = False):
  """``Gamma(n + 1)`` (0 for negative ``n``); ``exact=True`` is not supported (as JAX)."""
  if exact:
    raise NotImplementedError("factorial with exact=True")
  n, = promote_args_inexact("factorial", n)
  return jnp.where(n < 0, 0, lax.exp(lax.lgamma(n + 1)))


def comb(N, k, *, repetition: bool = False):
  """``N choose k`` through ``gammaln`` (0 outside ``0 <= k <= N``)."""
  N, k = promote_args_inexact("comb", N, k)
  if repetition:
    return jnp.where((k == 0) & (N >= 0), 1.0, comb(N + k - 1, k, repetition=False))
  ok = (k <= N) & (N >= 0) & (k >= 0)
  sN = jnp.where(ok, N, 0.0)
  sk = jnp.where(ok, k, 0.0)
  val = lax.exp(gammaln(sN + 1) - gammaln(sk + 1) - gammaln(sN + 1 - sk))
  return jnp.where(ok, val, 0.0)


def beta(a, b):
  """The beta function ``Gamma(a) Gamma(b) / Gamma(a + b)``."""
  a, b = promote_args_inexact("beta", a, b)
  _no_complex("beta", a)
  sign = gammasgn(a) * gammasgn(b) * gammasgn(a + b)
  return sign * lax.exp(betaln(a, b))


def betainc(a, b, x):
  """The regularized incomplete beta function ``I_x(a, b)``."""
  a, b, x = promote_args_inexact("betainc", a, b, x)
  _no_complex("betainc", x)
  return lax.betainc(a, b, x)


def digamma(x):
  """The digamma function ``d/dx log Gamma(x)``."""
  x, = promote_args_inexact("digamma", x)
  return lax.digamma(x)


def gammainc(a, x):
  """The regularized lower incomplete gamma function ``P(a, x)``."""
  a, x = promote_args_inexact("gammainc", a, x)
  return lax.igamma(a, x)


def gammaincc(a, x):
  """The regularized upper incomplete gamma function ``Q(a, x) = 1 - P(a, x)``."""
  a, x = promote_args_inexact("gammaincc", a, x)
  return lax.igammac(a, x)


def multigammaln(a, d):
  """The log of the multivariate gamma function of dimension ``d`` (a concrete int)."""
  d = core.concrete_or_error(int, d, "d argument of multigammaln")
  a, d_ = promote_args_inexact("multigammaln", a, d)
  const = lax.mul(lax.mul(lax.mul(_c(a, 0.25), d_), lax.sub(d_, _c(a, 1))),
                  lax.log(_c(a, np.pi)))
  b = lax.div(jnp.arange(d, dtype=d_.dtype), _c(a, 2))
  res = jnp.sum(gammaln(jnp.expand_dims(a, axis=-1)
                        - jnp.expand_dims(b, axis=tuple(range(a.ndim)))), axis=-1)
  return res + const


def poch(z, m):
  """The Pochhammer symbol ``Gamma(z + m) / Gamma(z)`` (1 where ``m == 0``)."""
  z, m = promote_args_inexact("poch", z, m)
  if _is_complex(z):
    raise ValueError("jnp.poch does not support complex-valued inputs.")
  return _poch(z, m)


@custom_jvp
def _poch(z, m):
  z, m = jnp.asarray(z), jnp.asarray(m)
  return jnp.where(m == 0., jnp.array(1, dtype=z.dtype), gamma(z + m) / gamma(z))


_custom.defjvps(_poch, 
    lambda zd, ans, z, m: (digamma(z + m) - digamma(z)) * _poch(z, m) * zd,
    lambda md, ans, z, m: digamma(z + m) * _poch(z, m) * md)


# --- error functions ----------------------------------------------------------------------
def erf(x):
  """The error function."""
  x, = promote_args_inexact("erf", x)
  return lax.erf(x)


def erfc(x):
  """The complementary error function ``1 - erf(x)``."""
  x, = promote_args_inexact("erfc", x)
  return lax.erfc(x)


def erfinv(x):
  """The inverse error function."""
  x, = promote_args_inexact("erfinv", x)
  return lax.erf_inv(x)


# --- logistic, logs, entropies ------------------------------------------------------------
@custom_jvp
def logit(x):
  """``log(x / (1 - x))``."""
  x, = promote_args_inexact("logit", x)
  return lax.log(lax.div(x, lax.sub(_c(x, 1), x)))


_custom.defjvps(logit, lambda g, ans, x: lax.div(g, lax.mul(x, lax.sub(_c(x, 1), x))))


def expit(x):
  """The logistic sigmoid ``1 / (1 + exp(-x))``."""
  x, = promote_args_inexact("expit", x)
  return lax.logistic(x)


def _axes(axis, ndim):
  if axis is None:
    return tuple(range(ndim))
  if isinstance(axis, (tuple, list)):
    axes = tuple(operator.index(a) for a in axis)
  else:
    axes = (operator.index(axis),)
  out = []
  for a in axes:
    if not -ndim <= a < ndim:
      raise ValueError(f"axis {a} is out of bounds for array of dimension {ndim}")
    out.append(a % ndim)
  if len(set(out)) != len(out):
    raise ValueError(f"duplicate value in 'axis': {axis}")
  return tuple(out)


def logsumexp(a, axis=None, b=None, keepdims: bool = False, return_sign: bool = False,
              where=None):
  """``log(sum(b * exp(a)))`` over ``axis``, computed stably by shifting by the maximum.
  With ``return_sign`` returns ``(log|sum|, sign)``; a negative sum without it is NaN."""
  if where is not None:
    a = jnp.where(where, a, 0)
  if b is not None:
    a, b_arr = promote_args_inexact("logsumexp", a, b)
    a = jnp.where(b_arr != 0, a, -np.inf)
  else:
    a, = promote_args_inexact("logsumexp", a)
    b_arr = a
  dims = _axes(axis, a.ndim)
  amax = jnp.max(jnp.real(a), axis=dims, keepdims=keepdims, where=where, initial=-np.inf)
  amax = lax.stop_gradient(lax.select(jnp.isfinite(amax), amax, lax.full_like(amax, 0)))
  amax_b = amax if keepdims else lax.expand_dims(amax, dims)
  e = lax.exp(lax.sub(a, amax_b.astype(a.dtype)))
  if b is not None:
    e = lax.mul(e, b_arr)
  s = jnp.sum(e, axis=dims, keepdims=keepdims, where=where)
  sign = lax.sign(s)
  if return_sign or not _is_complex(a):
    s = jnp.abs(s)
  out = lax.add(lax.log(s), amax.astype(s.dtype))
  if return_sign:
    return out, sign
  if b is not None and not _is_complex(out):
    out = jnp.where(sign < 0, jnp.array(np.nan, dtype=out.dtype), out)
  return out


@custom_jvp
def xlogy(x, y):
  """``x * log(y)``, 0 where ``x == 0`` (unless ``y`` is NaN)."""
  x, y = promote_args_inexact("xlogy", x, y)
  return jnp.where((x != 0.0) | jnp.isnan(y), lax.mul(x, lax.log(y)), jnp.zeros_like(x))


@partial(_custom.defjvp, xlogy)
def _xlogy_jvp(primals, tangents):
  (x, y), (xd, yd) = primals, tangents
  out = xlogy(x, y)
  return out, (xd * lax.log(y) + yd * x / y).astype(out.dtype)


@custom_jvp
def xlog1py(x, y):
  """``x * log1p(y)``, 0 where ``x == 0`` (unless ``y`` is NaN)."""
  x, y = promote_args_inexact("xlog1py", x, y)
  return jnp.where((x != 0.0) | jnp.isnan(y), lax.mul(x, lax.log1p(y)), jnp.zeros_like(x))


@partial(_custom.defjvp, xlog1py)
def _xlog1py_jvp(primals, tangents):
  (x, y), (xd, yd) = primals, tangents
  out = xlog1py(x, y)
  return out, (xd * lax.log1p(y) + yd * x / (1 + y)).astype(out.dtype)


@custom_jvp
def _xlogx(x):
  return xlogy(x, x)


@partial(_custom.defjvp, _xlogx)
def _xlogx_jvp(primals, tangents):
  (x,), (xd,) = primals, tangents
  return _xlogx(x), xd * (lax.log(x) + 1)


def entr(x):
  """Elementwise entropy ``-x log x`` (0 at 0, -inf for negative ``x``)."""
  x, = promote_args_inexact("entr", x)
  _no_complex("entr", x)
  return lax.select(lax.lt(x, _c(x, 0)), lax.full_like(x, -np.inf), lax.neg(_xlogx(x)))


def rel_entr(p, q):
  """Elementwise relative entropy ``p log(p / q)`` (0 at ``p == 0, q >= 0``, else inf
  outside ``p, q > 0``)."""
  p, q = promote_args_inexact("rel_entr", p, q)
  _no_complex("rel_entr", p)
  zero = _c(p, 0.0)
  both = lax.bitwise_and(lax.gt(p, zero), lax.gt(q, zero))
  p_zero = lax.bitwise_and(lax.eq(p, zero), lax.ge(q, zero))
  sp = jnp.where(both, p, 1)
  sq = jnp.where(both, q, 1)
  val = lax.sub(_xlogx(sp), xlogy(sp, sq))
  return jnp.where(both, val, jnp.where(p_zero, zero, np.inf))


def kl_div(p, q):
  """Elementwise ``rel_entr(p, q) - p + q``."""
  p, q = promote_args_inexact("kl_div", p, q)
  _no_complex("kl_div", p)
  return rel_entr(p, q) - p + q


def boxcox(x, lmbda):
  """The Box-Cox transform ``(x**lmbda - 1) / lmbda`` (``log x`` at ``lmbda == 0``)."""
  x, lmbda = promote_args_inexact("boxcox", x, lmbda)
  zero = lmbda == 0
  sl = jnp.where(zero, jnp.ones_like(lmbda), lmbda)
  lx = jnp.log(x)
  return jnp.where(zero, lx, jnp.expm1(sl * lx) / sl)


def boxcox1p(x, lmbda):
  """The Box-Cox transform of ``1 + x``."""
  x, lmbda = promote_args_inexact("boxcox1p", x, lmbda)
  zero = lmbda == 0
  sl = jnp.where(zero, jnp.ones_like(lmbda), lmbda)
  lx = jnp.log1p(x)
  return jnp.where(zero, lx, jnp.expm1(sl * lx) / sl)


# --- zeta and polygamma -------------------------------------------------------------------
# (2k)! / B_{2k} for k = 1..16: the Euler-Maclaurin tail coefficients.
_BERNOULLI_COEFS = np.array([
    12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1307674368000 / 691, 74724249600.0,
    -10670622842880000 / 3617, 5109094217170944000 / 43867,
    -802857662698291200000 / 174611, 14101100039391805440000 / 77683,
    -1693824136731743669452800000 / 236364091, 186134520519971831808000000 / 657931,
    -37893265687455865519472640000000 / 3392780147,
    759790291646040068357842010112000000 / 1723168255201,
    -134196726836183700385281186201600000000 / 7709321041217])


def _zeta_series(x, q):
  """Hurwitz zeta by Euler-Maclaurin summation (N = M = 8 terms in float32, 16 otherwise);
  used for zeta's derivatives."""
  s, a = promote_args_inexact("zeta", x, q)
  t = a.dtype.type
  N = M = t(8) if a.dtype == np.float32 else t(16)
  s_, a_ = jnp.expand_dims(s, -1), jnp.expand_dims(a, -1)
  k = jnp.expand_dims(np.arange(N, dtype=N.dtype), tuple(range(a.ndim)))
  S = jnp.sum((a_ + k) ** (-s_), -1)
  I = lax.div((a + N) ** (t(1) - s), s - t(1))
  T0 = (a + N) ** (-s)
  m = jnp.expand_dims(np.arange(2 * M, dtype=M.dtype), tuple(range(s.ndim)))
  T1 = jnp.cumprod((s_ + m) / (a_ + N), -1)[..., ::2]
  T1 = jnp.clip(T1, max=float(dtypes.finfo(t).max))
  coefs = np.expand_dims(np.array(_BERNOULLI_COEFS[:T1.shape[-1]], dtype=t),
                         tuple(range(a.ndim)))
  T = T0 * (t(0.5) + (T1 / coefs).sum(-1))
  return S + I + T


@custom_jvp
def _zeta(x, q):
  x, q = promote_args_inexact("zeta", x, q)
  return lax.zeta(x, q)


_custom.defjvp(_zeta, lambda primals, tangents: jvp(_zeta_series, primals, tangents))


def zeta(x, q=None):
  """The Hurwitz zeta function ``sum_k (k + q)**-x``; ``q=None`` (Riemann zeta) raises
  NotImplementedError, as in JAX."""
  if q is None:
    raise NotImplementedError("Riemann zeta function not implemented; pass q != None to "
                              "compute the Hurwitz Zeta function.")
  return _zeta(x, q)


def polygamma(n, x):
  """The ``n``-th derivative of digamma (``n`` must be an integer array or scalar)."""
  nd = n.dtype if hasattr(n, "dtype") else np.asarray(n).dtype
  if not dtypes.issubdtype(nd, np.integer):
    raise ValueError(f"Argument `n` to polygamma must be of integer type. Got dtype {nd}.")
  n_arr, x_arr = promote_args_inexact("polygamma", n, x)
  _no_complex("polygamma", x_arr)
  return lax.polygamma(n_arr, x_arr)


# --- the normal distribution --------------------------------------------------------------
def _check_f32_f64(x, name="x"):
  d = x.dtype
  if d not in (np.float32, np.float64):
    raise TypeError(f"{name}.dtype={d} is not supported, see docstring for supported types.")


def ndtr(x):
  """The standard normal CDF (float32/float64 only, like JAX)."""
  x = jnp.asarray(x)
  _check_f32_f64(x)
  return _ndtr(x)


def _ndtr(x):
  t = x.dtype.type
  hs2 = t(0.5) * np.sqrt(2.0, dtype=t)
  w = x * hs2
  z = lax.abs(w)
  y = lax.select(lax.lt(z, hs2), t(1.0) + lax.erf(w),
                 lax.select(lax.gt(w, t(0.0)), t(2.0) - lax.erfc(z), lax.erfc(z)))
  return t(0.5) * y


# Cephes ndtri rational approximations: around the centre, and in the tails for
# z = sqrt(-2 log p) in [2, 8) and [8, inf).
_NDTRI_P0 = [-5.99633501014107895267E1, 9.80010754185999661536E1, -5.66762857469070293439E1,
             1.39312609387279679503E1, -1.23916583867381258016E0]
_NDTRI_Q0 = [1.0, 1.95448858338141759834E0, 4.67627912898881538453E0,
             8.63602421390890590575E1, -2.25462687854119370527E2, 2.00260212380060660359E2,
             -8.20372256168333339912E1, 1.59056225126211695515E1, -1.18331621121330003142E0]
_NDTRI_P1 = [4.05544892305962419923E0, 3.15251094599893866154E1, 5.71628192246421288162E1,
             4.40805073893200834700E1, 1.46849561928858024014E1, 2.18663306850790267539E0,
             -1.40256079171354495875E-1, -3.50424626827848203418E-2,
             -8.57456785154685413611E-4]
_NDTRI_Q1 = [1.0, 1.57799883256466749731E1, 4.53907635128879210584E1,
             4.13172038254672030440E1, 1.50425385692907503408E1, 2.50464946208309415979E0,
             -1.42182922854787788574E-1, -3.80806407691578277194E-2,
             -9.33259480895457427372E-4]
_NDTRI_P2 = [3.23774891776946035970E0, 6.91522889068984211695E0, 3.93881025292474443415E0,
             1.33303460815807542389E0, 2.01485389549179081538E-1, 1.23716634817820021358E-2,
             3.01581553508235416007E-4, 2.65806974686737550832E-6,
             6.23974539184983293730E-9]
_NDTRI_Q2 = [1.0, 6.02427039364742014255E0, 3.67983563856160859403E0,
             1.37702099489081330271E0, 2.16236993594496635890E-1, 1.34204006088543189037E-2,
             3.28014464682127739104E-4, 2.89247864745380683936E-6,
             6.79019408009981274425E-9]


def ndtri(p):
  """The inverse of the standard normal CDF (float32/float64 only)."""
  p = jnp.asarray(p)
  _check_f32_f64(p)
  return _ndtri(p)


def _ndtri(p):
  t = p.dtype.type
  big = p > t(-np.expm1(-2.0))
  mcp = jnp.where(big, t(1.0) - p, p)
  mcp = jnp.where(mcp == t(0.0), jnp.full(p.shape, t(0.5)), mcp)
  w = mcp - t(0.5)
  ww = lax.square(w)
  x_mid = w + w * ww * (_polyval(_NDTRI_P0, ww) / _polyval(_NDTRI_Q0, ww))
  x_mid = x_mid * -t(np.sqrt(2.0 * np.pi))
  z = lax.sqrt(t(-2.0) * lax.log(mcp))
  first = z - lax.log(z) / z
  inv = 1 / z
  x_tail8 = first - _polyval(_NDTRI_P2, inv) / _polyval(_NDTRI_Q2, inv) / z
  x_tail2 = first - _polyval(_NDTRI_P1, inv) / _polyval(_NDTRI_Q1, inv) / z
  x = jnp.where(mcp > t(np.exp(-2.0)), x_mid, jnp.where(z >= t(8.0), x_tail8, x_tail2))
  x = jnp.where(p > t(1.0 - np.exp(-2.0)), x, -x)
  inf = jnp.full(p.shape, t(np.inf))
  return jnp.where(p == t(0.0), -inf, jnp.where(p == t(1.0), inf, x))


_LOGNDTR_BOUNDS = {np.dtype(np.float64): (-20.0, 8.0), np.dtype(np.float32): (-10.0, 5.0)}


def log_ndtr(x, series_order: int = 3):
  """``log(ndtr(x))``, accurate in both tails (asymptotic series of ``series_order``
  terms below -20 in float64 / -10 in float32)."""
  if not isinstance(series_order, int):
    raise TypeError("series_order must be a Python integer.")
  if series_order < 0:
    raise ValueError("series_order must be non-negative.")
  if series_order > 30:
    raise ValueError("series_order must be <= 30.")
  x = jnp.asarray(x)
  if x.dtype not in _LOGNDTR_BOUNDS:
    raise TypeError(f"x.dtype={np.dtype(x.dtype)} is not supported.")
  return _log_ndtr(x, series_order)


@partial(custom_jvp, nondiff_argnums=(1,))
def _log_ndtr(x, series_order):
  x = jnp.asarray(x)  # custom_jvp may hand the rule a Python scalar
  lo, hi = _LOGNDTR_BOUNDS[np.dtype(x.dtype)]
  lo, hi = np.array(lo, x.dtype), np.array(hi, x.dtype)
  above = lax.gt(x, hi)
  arg = jnp.where(above, -x, lax.max(x, lo))
  r = _ndtr(arg)
  return jnp.where(above, -r, jnp.where(lax.gt(x, lo), lax.log(r),
                                        _log_ndtr_lower(lax.min(x, lo), series_order)))


@partial(_custom.defjvp, _log_ndtr)
def _log_ndtr_jvp(series_order, primals, tangents):
  (x,), (t,) = primals, tangents
  ans = _log_ndtr(x, series_order)
  return ans, lax.mul(t, lax.exp(lax.sub(_norm_logpdf(x), ans)))


def _log_ndtr_lower(x, series_order):
  t = x.dtype.type
  x2 = lax.square(x)
  log_scale = -t(0.5) * x2 - lax.log(-x) - t(0.5 * np.log(2.0 * np.pi))
  return log_scale + lax.log(_log_ndtr_series(x, series_order))


def _log_ndtr_series(x, series_order):
  t = x.dtype.type
  if series_order <= 0:
    return np.array(1, t)
  x2 = lax.square(x)
  even = jnp.zeros_like(x)
  odd = jnp.zeros_like(x)
  x2n = x2
  for n in range(1, series_order + 1):
    dfact = np.prod(np.arange(2 * n - 1, 1, -2))   # (2n - 1)!!
    y = np.array(dfact, t) / x2n
    if n % 2:
      odd = odd + y
    else:
      even = even + y
    x2n = x2n * x2
  return t(1.0) + even - odd


def _norm_logpdf(x):
  return lax.sub(lax.mul(_c(x, -0.5), lax.square(x)), _c(x, np.log(np.sqrt(2 * np.pi))))


# --- modified Bessel functions ------------------------------------------------------------
def i0e(x):
  """Exponentially scaled modified Bessel function of order 0, ``exp(-|x|) I0(x)``."""
  x, = promote_args_inexact("i0e", x)
  return lax.bessel_i0e(x)


def i0(x):
  """Modified Bessel function of order 0."""
  x, = promote_args_inexact("i0", x)
  return lax.mul(lax.exp(lax.abs(x)), lax.bessel_i0e(x))


def i1e(x):
  """Exponentially scaled modified Bessel function of order 1, ``exp(-|x|) I1(x)``."""
  x, = promote_args_inexact("i1e", x)
  return lax.bessel_i1e(x)


def i1(x):
  """Modified Bessel function of order 1."""
  x, = promote_args_inexact("i1", x)
  return lax.mul(lax.exp(lax.abs(x)), lax.bessel_i1e(x))


# --- softmax ------------------------------------------------------------------------------
def softmax(x, /, *, axis=None):
  """``exp(x) / sum(exp(x), axis)`` (``jax.nn.softmax`` with ``axis=None`` by default)."""
  from pyjax._src.nn.functions import softmax as _sm
  return _sm(x, axis=axis)


def log_softmax(x, /, *, axis=None):
  """``x - logsumexp(x, axis, keepdims=True)`` (``jax.nn.log_softmax``)."""
  from pyjax._src.nn.functions import log_softmax as _lsm
  return _lsm(x, axis=axis)
