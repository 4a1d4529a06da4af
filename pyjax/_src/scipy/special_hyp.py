"""jax.scipy.special, part 3: confluent and Gauss hypergeometric functions, Bessel J_n,
spherical harmonics and the Bernoulli numbers.

JAX evaluates these per element (``vectorize``) with ``while_loop`` series; here the same
series run on whole arrays with element-wise termination (``_loops.masked_while``), which
gives the same values as JAX's vmapped loops.  Derivatives are JAX's custom JVPs."""
from __future__ import annotations

import operator
from functools import partial

import numpy as np

from pyjax._src import core, dtypes
from pyjax._src.api import jit
from pyjax._src.api_ad import custom_jvp
from pyjax._src.lax import lax_api as lax
from pyjax._src.numpy.util import promote_args_inexact, promote_dtypes_inexact
from pyjax._src.scipy import _loops
from pyjax._src.scipy.special import _is_complex, digamma, gamma
from pyjax._src.scipy import _custom
import pyjax.numpy as jnp

__all__ = ["bernoulli", "bessel_jn", "hyp1f1", "hyp2f1", "sph_harm_y"]


def _eps(x):
  return float(dtypes.finfo(x.dtype).eps)


def _series(a_active, init_term, ratio, weight=None, start=None, ks_dtype=None, rel=True):
  """Sum ``sum_k term_k * weight(k)`` with ``term_{k+1} = term_k * ratio(k)`` (k from 1),
  stopping element-wise at 250 terms or when ``|term| <= eps * |sum|``.  ``start`` is the
  initial sum (1 for the series themselves, 0 for the derivative series)."""
  x = init_term
  eps = _eps(x)
  k0 = jnp.ones(x.shape, np.int32)
  s0 = jnp.full_like(x, start)

  def active(s):
    serie, k, term = s
    if rel:
      go = lax.abs(term) / lax.abs(serie) > eps
    else:
      go = lax.abs(term) > eps * lax.abs(serie)
    return a_active & (k < 250) & go

  def body(s):
    serie, k, term = s
    w = term if weight is None else term * weight(k)
    kf = k.astype(x.dtype)
    return serie + w, k + 1, term * ratio(kf)

  return _loops.masked_while(active, body, (s0, k0, x))[0]


# --- 1F1 ----------------------------------------------------------------------------------
def _hyp1f1_serie(a, b, x, act):
  return _series(act, a / b * x, lambda k: (a + k) / (b + k) * x / (k + 1), start=1)


def _hyp1f1_asymptotic(a, b, x, act):
  s = _series(act, (b - a) * (1 - a) / x, lambda k: (b - a + k) * (1 - a + k) / (k + 1) / x,
              start=1)
  return gamma(b) / gamma(a) * lax.exp(x) * x ** (a - b) * s


def _hyp1f1_da(a, b, x):
  return _series(jnp.ones(x.shape, bool), a / b * x,
                 lambda k: (a + k) / (b + k) * x / (k + 1),
                 weight=lambda k: digamma(a + k.astype(a.dtype)) - digamma(a), start=0)


def _hyp1f1_db(a, b, x):
  return _series(jnp.ones(x.shape, bool), a / b * x,
                 lambda k: (a + k) / (b + k) * x / (k + 1),
                 weight=lambda k: digamma(b) - digamma(b + k.astype(b.dtype)), start=0)


@custom_jvp
def _hyp1f1(a, b, x):
  a, b, x = jnp.broadcast_arrays(a, b, x)
  small = lax.abs(x) < 100
  one = jnp.ones_like(x)
  r1 = _hyp1f1_serie(a, b, x, small)
  r2 = _hyp1f1_asymptotic(jnp.where(small, one, a), jnp.where(small, one, b),
                          jnp.where(small, 100 * one, x), ~small)
  result = jnp.where(small, r1, r2)
  index = ((a == 0) * 1 + ((a == b) & (a != 0)) * 2 + ((b == 0) & (a != 0)) * 3)
  return lax.select_n(index.astype(np.int32), result, jnp.ones_like(x), jnp.exp(x),
                      jnp.full_like(x, np.inf))


_custom.defjvps(_hyp1f1, lambda ad, ans, a, b, x: _hyp1f1_da(a, b, x) * ad,
                lambda bd, ans, a, b, x: _hyp1f1_db(a, b, x) * bd,
                lambda xd, ans, a, b, x: a / b * _hyp1f1(a + 1, b + 1, x) * xd)


def hyp1f1(a, b, x):
  """The confluent hypergeometric function ``1F1(a; b; x)`` (series for ``|x| < 100``,
  asymptotic expansion beyond)."""
  a, b, x = promote_args_inexact("hyp1f1", a, b, x)
  if _is_complex(x):
    raise ValueError("hyp1f1 does not support complex-valued inputs.")
  a, b, x = jnp.broadcast_arrays(a, b, x)
  return _hyp1f1(a, b, x)


# --- 2F1 ----------------------------------------------------------------------------------
def _hyp2f1_terminal(a, b, c, x, act):
  """The terminating series when ``a`` (or ``b``) is a non-positive integer."""
  eps = _eps(x) * 50
  ib = jnp.round(b)
  swap = (b < a) & (jnp.abs(b - ib) < eps) & ~((c % 1 == 0) & (c <= 0) & (c > b))
  a, b = jnp.where(swap, b, a), jnp.where(swap, a, b)
  a = jnp.abs(a)
  one = jnp.ones_like(x)

  def active(s):
    i, _, _ = s
    return act & (i < a + 1)

  def body(s):
    i, serie, term = s
    term = term * (-(a - i + 1) / (c + i - 1) * (b + i - 1) / i * x)
    return i + 1, serie + term, term

  return _loops.masked_while(active, body, (one, one, one))[1]


def _hyp2f1_serie(a, b, c, x, act):
  return _series(act, jnp.ones_like(x), lambda k: (a + k - 1) * (b + k - 1) / (c + k - 1) / k
                 * x, start=0, rel=False)


def _hyp2f1_digamma_transform(a, b, c, x, act):
  """The 1 - x transformation when c - a - b is an integer (Abramowitz & Stegun 15.3.10-12,
  as in Cephes)."""
  rtol = _eps(x)
  d = c - a - b
  s = 1 - x
  rd = jnp.round(d)
  zero = jnp.zeros_like(d)
  e = jnp.where(rd >= 0, d, -d)
  d1 = jnp.where(rd >= 0, d, zero)
  d2 = jnp.where(rd >= 0, zero, d)
  ard = jnp.where(rd >= 0, rd, -rd).astype(np.int32)
  ax = jnp.log(s)
  y = digamma(1.0) + digamma(1.0 + e) - digamma(a + d1) - digamma(b + d1) - ax
  y = y / gamma(e + 1.0)
  p = (a + d1) * (b + d1) * s / gamma(e + 2.0)

  def active(st):
    _, q, t, y = st
    return act & (t < 250) & (jnp.abs(q) >= rtol * jnp.abs(y))

  def body(st):
    p, q, t, y = st
    r = (digamma(1.0 + t) + digamma(1.0 + t + e) - digamma(a + t + d1) - digamma(b + t + d1)
         - ax)
    q = p * r
    y = y + q
    p = p * (s * (a + t + d1) / (t + 1.0))
    p = p * ((b + t + d1) / (t + 1.0 + e))
    return p, q, t + 1.0, y

  p_end, q, _, y = _loops.masked_while(active, body, (p, y, jnp.ones_like(x), y))
  del p_end

  # finite sum of |rd| - 1 terms
  def fin_active(st):
    i, _, _, _ = st
    return act & (i < ard)

  def fin_body(st):
    i, p1, t1, y1 = st
    r = 1.0 - e + t1
    p1 = p1 * (s * (a + t1 + d2) * (b + t1 + d2) / r)
    t1 = t1 + 1.0
    p1 = p1 / t1
    return i + 1, p1, t1, y1 + p1

  y1 = _loops.masked_while(fin_active, fin_body, (jnp.ones(x.shape, np.int32),
                                                  jnp.ones_like(x), jnp.zeros_like(x),
                                                  jnp.ones_like(x)))[3]
  gc = gamma(c)
  y1 = y1 * (gamma(e) * gc / (gamma(a + d1) * gamma(b + d1)))
  yy = y * (gc / (gamma(a + d2) * gamma(b + d2)))
  yy = jnp.where(ard & 1 != 0, -yy, yy)
  q = s ** rd
  summed = jnp.where(rd > 0, yy * q + y1, yy + y1 * q)
  return jnp.where(rd == 0, y * gamma(c) / (gamma(a) * gamma(b)), summed)


def _hyp2f1_terminal_or_serie(a, b, c, x, act):
  eps = _eps(x) * 50
  d = c - a - b
  neg_int_ab = (((a <= 0) & (jnp.abs(a - jnp.round(a)) < eps))
                | ((b <= 0) & (jnp.abs(b - jnp.round(b)) < eps)))
  index = jnp.where((x > 0.9) & ~neg_int_ab,
                    jnp.where(jnp.abs(d - jnp.round(d)) >= eps, 0, 1),
                    jnp.where(neg_int_ab, 2, 0))
  return lax.select_n(index.astype(np.int32),
                      _hyp2f1_serie(a, b, c, x, act & (index == 0)),
                      _hyp2f1_digamma_transform(a, b, c, x, act & (index == 1)),
                      _hyp2f1_terminal(a, b, c, x, act & (index == 2)))


def _hyp2f1_dseries(a, b, c, x, weight):
  return _series(jnp.ones(x.shape, bool), a * b / c * x,
                 lambda k: (a + k) * (b + k) / (c + k) / (k + 1) * x, weight=weight, start=0)


@custom_jvp
def _hyp2f1(a, b, c, x):
  a, b, c, x = jnp.broadcast_arrays(a, b, c, x)
  eps = _eps(x) * 50
  d = c - a - b
  s = 1 - x
  ca, cb = c - a, c - b
  idd = jnp.round(d)
  index = jnp.where(
      (x == 0) | (((a == 0) | (b == 0)) & (c != 0)), 0,
      jnp.where((c == 0) | ((c < 0) & (c % 1 == 0)), 1,
                jnp.where((d <= -1) & ~((jnp.abs(d - idd) >= eps) & (s < 0)), 2,
                          jnp.where((d <= 0) & (x == 1), 1,
                                    jnp.where((x < 1) & (b == c), 3,
                                              jnp.where((x < 1) & (a == c), 4,
                                                        jnp.where(x > 1, 1,
                                                                  jnp.where(x == 1, 5, 6))))))))
  index = index.astype(np.int32)
  return lax.select_n(index, jnp.ones_like(x), jnp.full_like(x, np.inf),
                      s ** d * _hyp2f1_terminal_or_serie(ca, cb, c, x, index == 2),
                      s ** (-a), s ** (-b), gamma(c) * gamma(d) / (gamma(ca) * gamma(cb)),
                      _hyp2f1_terminal_or_serie(a, b, c, x, index == 6))


_custom.defjvps(_hyp2f1, 
    lambda ad, ans, a, b, c, x: _hyp2f1_dseries(
        a, b, c, x, lambda k: digamma(a + k.astype(a.dtype)) - digamma(a)) * ad,
    lambda bd, ans, a, b, c, x: _hyp2f1_dseries(
        a, b, c, x, lambda k: digamma(b + k.astype(b.dtype)) - digamma(b)) * bd,
    lambda cd, ans, a, b, c, x: _hyp2f1_dseries(
        a, b, c, x, lambda k: digamma(c) - digamma(c + k.astype(c.dtype))) * cd,
    lambda xd, ans, a, b, c, x: a * b / c * _hyp2f1(a + 1, b + 1, c + 1, x) * xd)


def hyp2f1(a, b, c, x):
  """The Gauss hypergeometric function ``2F1(a, b; c; x)`` for real arguments (Cephes'
  case analysis: terminating series, power series, and the ``1 - x`` transformations)."""
  a, b, c, x = promote_args_inexact("hyp2f1", a, b, c, x)
  a, b, c, x = jnp.broadcast_arrays(a, b, c, x)
  return _hyp2f1(a, b, c, x)


# --- Bessel J_n ---------------------------------------------------------------------------
@partial(jit, static_argnames=("v", "n_iter"))
def _bessel_jn(z, *, v, n_iter):
  # Miller's backward recurrence from order n_iter, normalized with J0 + 2 sum J_{2k} = 1.
  f0 = jnp.zeros_like(z)
  f1 = jnp.full_like(z, 1e-16)
  bs = jnp.zeros_like(z)
  vals = [None] * (n_iter + 1)
  for k in range(n_iter, -1, -1):
    f = 2.0 * (k + 1.0) * f1 / z - f0
    if k % 2 == 0:
      bs = bs + 2.0 * f
    f0, f1 = f1, f
    vals[k] = f
  j = jnp.stack(vals[:v + 1])
  return j / (bs - vals[0])


def bessel_jn(z, *, v: int, n_iter: int = 50):
  """Bessel functions of the first kind ``J_0 ... J_v`` of real ``z`` (Miller's backward
  recurrence with ``n_iter`` steps); returns shape ``(v + 1,) + z.shape``."""
  z = jnp.asarray(z)
  z, = promote_dtypes_inexact(z)
  if _is_complex(z):
    raise ValueError("complex input not supported.")
  v = core.concrete_or_error(operator.index, v, "Argument v of bessel_jn.")
  n_iter = core.concrete_or_error(int, n_iter, "Argument n_iter of bessel_jn.")
  return _bessel_jn(z, v=v, n_iter=n_iter)


# --- spherical harmonics ------------------------------------------------------------------
def _assoc_legendre_normalized(l_max, x):
  """Orthonormal associated Legendre values ``P[m, l, i]`` (Condon-Shortley phase, factor
  ``1 / sqrt(4 pi)`` included) for ``0 <= m <= l <= l_max`` at the points ``x``."""
  dt = x.dtype
  L = l_max + 1
  init = 0.5 / jnp.sqrt(np.pi)
  rows = {}   # (m, l) -> array over x
  a = jnp.arange(1, L, dtype=dt)
  f_a = jnp.cumprod(-1 * jnp.sqrt(1.0 + 0.5 / a)) if l_max > 0 else None
  y = jnp.cumprod(jnp.broadcast_to(jnp.sqrt(1.0 - x * x), (l_max, x.shape[0])), axis=0) \
      if l_max > 0 else None
  rows[(0, 0)] = jnp.full_like(x, init)
  for m in range(1, L):
    rows[(m, m)] = init * (f_a[m - 1] * y[m - 1])
  for m in range(0, l_max):
    rows[(m, m + 1)] = (jnp.sqrt(2.0 * jnp.asarray(m, dt) + 3.0) * x) * rows[(m, m)]
  for i in range(2, L):
    for m in range(0, L - i):
      l = m + i
      lf, mf = np.array(l, dt), np.array(m, dt)
      c0, c1, c2, c3 = lf * lf, mf * mf, 2 * lf, (lf - 1) * (lf - 1)
      d0 = np.sqrt((4 * c0 - 1) / (c0 - c1))
      d1 = np.sqrt((c2 + 1) * (c3 - c1) / ((c2 - 3) * (c0 - c1)))
      rows[(m, l)] = d0 * (rows[(m, l - 1)] * x) - d1 * rows[(m, l - 2)]
  zero = jnp.zeros_like(x)
  return jnp.stack([jnp.stack([rows.get((m, l), zero) for l in range(L)]) for m in range(L)])


@partial(jit, static_argnums=(4,))
def _sph_harm(n, m, theta, phi, n_max):
  leg = _assoc_legendre_normalized(n_max, jnp.cos(theta))
  val = leg.at[abs(m), n, jnp.arange(len(n))].get(mode="clip")
  ang = abs(m) * phi
  h = lax.complex(val * jnp.cos(ang), val * jnp.sin(ang))
  return jnp.where(m < 0, (-1.0) ** abs(m) * jnp.conjugate(h), h)


def sph_harm_y(n, m, theta, phi, diff_n=None, n_max=None):
  """Spherical harmonics ``Y_n^m(theta, phi)`` (``theta`` the polar angle, ``phi`` the
  azimuth, as SciPy's ``sph_harm_y``); ``n_max`` must be static under transformations."""
  if diff_n is not None:
    raise NotImplementedError(
        "The 'diff_n' argument to jax.scipy.special.sph_harm_y is not supported.")
  if jnp.isscalar(theta):
    theta = jnp.array([theta])
  if n_max is None:
    n_max = np.max(n)
  n_max = core.concrete_or_error(
      int, n_max, "The `n_max` argument of `jnp.scipy.special.sph_harm` must be statically "
      "specified to use `sph_harm` within JAX transformations.")
  return _sph_harm(jnp.asarray(n), jnp.asarray(m), jnp.asarray(theta), jnp.asarray(phi),
                   n_max)


# --- Bernoulli numbers --------------------------------------------------------------------
def bernoulli(n: int):
  """The Bernoulli numbers ``B_0 ... B_n`` (``B_1 = -1/2``), from the zeta series for the
  even ones."""
  n = core.concrete_or_error(operator.index, n, "Argument n of bernoulli")
  if n < 0:
    raise ValueError("n must be a non-negative integer.")
  b3 = jnp.array([1, -1 / 2, 1 / 6])
  if n < 3:
    return b3[:n + 1]
  bn = jnp.zeros(n + 1).at[:3].set(b3)
  m = jnp.arange(4, n + 1, 2, dtype=bn.dtype)
  q1 = 1. / np.pi ** 2 * jnp.cumprod(-(m - 1) * m / 4 / np.pi ** 2)
  k = jnp.arange(2, 50, dtype=bn.dtype)
  q2 = jnp.sum(k[:, None] ** (-m[None, :]), axis=0)
  return bn.at[4::2].set(q1 * (1 + q2))
