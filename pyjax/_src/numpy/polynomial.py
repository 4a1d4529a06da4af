"""Polynomial routines of jax.numpy (coefficients highest power first): poly, polyval,
polyfit, polyder, polyint, polyadd, polysub, polymul, polydiv, roots and vander.

Differs from JAX: ``polyval`` evaluates Horner's rule unrolled in Python (JAX uses a
scan; ``unroll`` is accepted and ignored), so its traced program grows with the degree.
"""
from __future__ import annotations

import operator

import numpy as np

from pyjax._src import core, dtypes
from pyjax._src.lax import lax_api as lax
from pyjax._src.numpy import creation as _creation
from pyjax._src.numpy import linalg as _linalg
from pyjax._src.numpy import linalg_ops as _ops
from pyjax._src.numpy import manipulation as _manip
from pyjax._src.numpy import reductions as _red
from pyjax._src.numpy import ufuncs as _uf
from pyjax._src.numpy.array_constructors import array as _array
from pyjax._src.numpy.util import check_arraylike, promote_dtypes, promote_dtypes_inexact
from pyjax._src.numpy.util import library_function as _library_function

__all__ = ["poly", "polyval", "polyfit", "polyder", "polyint", "polyadd", "polysub",
           "polymul", "polydiv", "roots", "vander"]


def _arrs(name, *xs):
  check_arraylike(name, *xs)
  return [_red._asarray(name, x) for x in xs]


def vander(x, N=None, increasing=False):
  """Vandermonde matrix: columns are powers of ``x`` (decreasing unless ``increasing``)."""
  x, = _arrs("vander", x)
  if x.ndim != 1:
    raise ValueError("x must be a one-dimensional array")
  N = x.shape[0] if N is None else core.concrete_or_error(operator.index, N,
                                                          "'N' argument of jnp.vander()")
  if N < 0:
    raise ValueError("N must be nonnegative")
  iota = lax.iota(x.dtype, N)
  if not increasing:
    iota = lax.sub(np.array(N - 1, x.dtype), iota)
  return _uf.power(x[..., None], iota[None, :])


def _companion_roots(p):
  if p.size < 2:
    return _array([], dtype=dtypes.to_complex_dtype(p.dtype))
  n = p.shape[0] - 1
  A = _creation.diag(lax.full((n - 1,), 1, p.dtype), -1)
  A = A.at[0, :].set(lax.neg(lax.div(p[1:], p[0])))
  return _linalg.eigvals(A)


def roots(p, *, strip_zeros=True):
  """Roots of the polynomial with coefficients ``p`` (eigenvalues of the companion
  matrix, complex).  With ``strip_zeros=False`` (jit-compatible) leading zeros give NaN
  roots instead of being stripped."""
  p, = _arrs("roots", p)
  p, = promote_dtypes_inexact(p)
  p = _manip.atleast_1d(p)
  if p.ndim != 1:
    raise ValueError("Input must be a rank-1 array.")
  if p.size < 2:
    return _array([], dtype=dtypes.to_complex_dtype(p.dtype))
  is_zero = lax.eq(p, np.array(0, p.dtype))
  n_lead = _red._where(_red.all(is_zero), p.shape[0], _red.argmin(is_zero))
  if strip_zeros:
    n_lead = core.concrete_or_error(
        int, n_lead, "The error occurred in the jnp.roots() function. To use this within a "
        "JIT-compiled context, pass strip_zeros=False, but be aware that leading zeros will "
        "result in some returned roots being set to NaN.")
    return _companion_roots(p[n_lead:])
  p = _red._where(lax.eq(n_lead, p.shape[0]), np.array(1, p.dtype), p)
  r = _companion_roots(_manip.roll(p, lax.neg(n_lead)))
  r = lax.sort_key_val(lax.eq(r, np.array(0, r.dtype)), r)[1]
  keep = lax.lt(lax.iota(n_lead.dtype, r.shape[0]), lax.sub(np.array(r.shape[0], n_lead.dtype),
                                                             n_lead))
  return _red._where(keep, r, np.array(complex(np.nan, np.nan), r.dtype))


def polyfit(x, y, deg, rcond=None, full=False, w=None, cov=False):
  """Least-squares polynomial fit of degree ``deg`` (columns of ``y`` fitted
  separately); ``full`` also returns (residuals, rank, singular values, rcond), ``cov``
  the coefficients' covariance."""
  if w is None:
    x, y = _arrs("polyfit", x, y)
  else:
    x, y, w = _arrs("polyfit", x, y, w)
  deg = core.concrete_or_error(int, deg, "deg must be int")
  order = deg + 1
  if deg < 0:
    raise ValueError("expected deg >= 0")
  if x.ndim != 1:
    raise TypeError("expected 1D vector for x")
  if x.size == 0:
    raise TypeError("expected non-empty vector for x")
  if y.ndim < 1 or y.ndim > 2:
    raise TypeError("expected 1D or 2D array for y")
  if x.shape[0] != y.shape[0]:
    raise TypeError("expected x and y to have same length")
  if rcond is None:
    rcond = x.shape[0] * float(np.finfo(dtypes.to_inexact_dtype(x.dtype)).eps)
  rcond = core.concrete_or_error(float, rcond, "rcond must be float")
  lhs = vander(x, order)
  rhs = y
  if w is not None:
    w, = promote_dtypes_inexact(w)
    if w.ndim != 1:
      raise TypeError("expected a 1-d array for weights")
    if w.shape[0] != y.shape[0]:
      raise TypeError("expected w and y to have the same length")
    lhs = _uf.multiply(lhs, w[:, None])
    rhs = _uf.multiply(rhs, w[:, None] if rhs.ndim == 2 else w)
  scale = _uf.sqrt(_red.sum(_uf.multiply(lhs, lhs), axis=0))
  lhs = _uf.true_divide(lhs, scale[None, :])
  c, resids, rank, s = _linalg.lstsq(lhs, rhs, rcond)
  if c.ndim > 1:
    c = _uf.true_divide(c, scale[:, None])
  else:
    c = _uf.true_divide(c, scale)
  if full:
    return c, resids, rank, s, _red._asarray("polyfit", rcond)
  if cov:
    Vbase = _linalg.inv(_ops.dot(lhs.T, lhs))
    Vbase = _uf.true_divide(Vbase, _ops.outer(scale, scale))
    if cov == "unscaled":
      fac = _array(1.0)
    else:
      if x.shape[0] <= order:
        raise ValueError("the number of data points must exceed order to scale the "
                         "covariance matrix")
      fac = _uf.true_divide(resids, x.shape[0] - order)
    if y.ndim == 1:
      return c, _uf.multiply(Vbase, _manip.atleast_1d(fac)[None])
    return c, _uf.multiply(Vbase[:, :, None], _manip.atleast_1d(fac)[None, None, :])
  return c


def poly(seq_of_zeros):
  """Coefficients of the monic polynomial with the given roots (or with the eigenvalues
  of a square matrix)."""
  z, = _arrs("poly", seq_of_zeros)
  z, = promote_dtypes_inexact(z)
  z = _manip.atleast_1d(z)
  sh = z.shape
  if len(sh) == 2 and sh[0] == sh[1] and sh[0] != 0:
    z = _linalg.eigvals(z)
  if z.ndim != 1:
    raise ValueError("input must be 1d or non-empty square 2d array.")
  dt = z.dtype
  if z.shape[0] == 0:
    return lax.full((), 1, dt)
  a = lax.full((1,), 1, dt)
  for k in range(z.shape[0]):
    a = _ops.convolve(a, _manip.stack([lax.full((), 1, dt), lax.neg(z[k])]), mode="full")
  return a


@_library_function(jit=('polyval', ('unroll',)))
def polyval(p, x, *, unroll=16):
  """Evaluate the polynomial ``p`` at ``x`` (Horner's rule); ``p`` may carry trailing
  batch dimensions that broadcast with ``x``."""
  p, x = _arrs("polyval", p, x)
  p, x = promote_dtypes(p, x)
  shape = lax.broadcast_shapes(p.shape[1:], x.shape)
  y = _red._broadcast_to(lax.full((), 0, x.dtype), shape)
  for i in range(p.shape[0]):
    y = _uf.add(_uf.multiply(y, x), p[i])
  return y


def polyadd(a1, a2):
  """Sum of two polynomials (aligned at the lowest power)."""
  a1, a2 = _arrs("polyadd", a1, a2)
  a1, a2 = promote_dtypes(a1, a2)
  if a2.shape[0] <= a1.shape[0]:
    return a1.at[-a2.shape[0]:].add(a2) if a2.shape[0] else a1
  return a2.at[-a1.shape[0]:].add(a1) if a1.shape[0] else a2


def polysub(a1, a2):
  """Difference of two polynomials."""
  a1, a2 = _arrs("polysub", a1, a2)
  a1, a2 = promote_dtypes(a1, a2)
  return polyadd(a1, _uf.negative(a2))


def polyint(p, m=1, k=None):
  """``m``-th antiderivative of ``p`` with integration constants ``k``."""
  m = core.concrete_or_error(operator.index, m, "'m' argument of jnp.polyint")
  k = 0 if k is None else k
  p, k = _arrs("polyint", p, k)
  p, k = promote_dtypes_inexact(p, k)
  if m < 0:
    raise ValueError("Order of integral must be positive (see polyder)")
  k = _manip.atleast_1d(k)
  if k.shape[0] == 1:
    k = _red._broadcast_to(k[0], (m,))
  if k.shape != (m,):
    raise ValueError("k must be a scalar or a rank-1 array of length 1 or m.")
  if m == 0:
    return p
  grid = np.arange(p.shape[0] + m)[None, :] - np.arange(m)[:, None]
  coeff = np.maximum(1, grid).prod(0)[::-1].astype(np.float64)
  return _uf.true_divide(_manip.concatenate([p, k]), _array(coeff, dtype=p.dtype))


def polyder(p, m=1):
  """``m``-th derivative of ``p``."""
  p, = _arrs("polyder", p)
  m = core.concrete_or_error(operator.index, m, "'m' argument of jnp.polyder")
  p, = promote_dtypes_inexact(p)
  if m < 0:
    raise ValueError("Order of derivative must be positive")
  if m == 0:
    return p
  coeff = (np.arange(m, p.shape[0])[None, :] - np.arange(m)[:, None]).prod(0)[::-1]
  return _uf.multiply(p[:-m], _array(coeff.astype(np.float64), dtype=p.dtype))


def polymul(a1, a2, *, trim_leading_zeros=False):
  """Product of two polynomials (a full convolution)."""
  a1, a2 = _arrs("polymul", a1, a2)
  a1, a2 = promote_dtypes_inexact(a1, a2)
  if trim_leading_zeros and (a1.shape[0] > 1 or a2.shape[0] > 1):
    a1, a2 = _manip.trim_zeros(a1, trim="f"), _manip.trim_zeros(a2, trim="f")
  if a1.shape[0] == 0:
    a1 = lax.full((1,), 0, a2.dtype)
  if a2.shape[0] == 0:
    a2 = lax.full((1,), 0, a1.dtype)
  return _ops.convolve(a1, a2, mode="full")


def polydiv(u, v, *, trim_leading_zeros=False):
  """Quotient and remainder of polynomial division (the remainder keeps ``u``'s length
  unless ``trim_leading_zeros``, which needs concrete values)."""
  u, v = _arrs("polydiv", u, v)
  u, v = promote_dtypes_inexact(u, v)
  m = u.shape[0] - 1
  n = v.shape[0] - 1
  scale = _uf.true_divide(1., v[0])
  q = lax.full((max(m - n + 1, 1),), 0, u.dtype)
  for k in range(0, m - n + 1):
    d = _uf.multiply(scale, u[k])
    q = q.at[k].set(d)
    u = u.at[k:k + n + 1].add(_uf.multiply(lax.neg(d), v))
  if trim_leading_zeros:
    tol = float(np.sqrt(np.finfo(u.dtype).eps))
    uc = core.concrete_or_error(np.asarray, u, "The error occurred in jnp.polydiv() with "
                                "trim_leading_zeros=True.")
    nz = np.nonzero(np.abs(uc) > tol)[0]
    u = u[nz[0]:] if nz.size else u[:0]
  return q, u
