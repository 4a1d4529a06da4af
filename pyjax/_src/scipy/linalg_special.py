"""jax.scipy.linalg special matrices: toeplitz, hankel, circulant, leslie, companion,
fiedler, fiedler_companion, convolution_matrix, hilbert, invhilbert, pascal, invpascal,
helmert, hadamard and dft.  Leading dimensions of the vector arguments batch, as in JAX."""
from __future__ import annotations

import math
import operator
from functools import partial

import numpy as np

from pyjax._src import dtypes
from pyjax._src.api import jit
from pyjax._src.lax import lax_api as lax
from pyjax._src.numpy.util import check_arraylike, promote_args_inexact, promote_dtypes
from pyjax._src.scipy.special import comb
import pyjax.numpy as jnp

__all__ = ["circulant", "companion", "convolution_matrix", "dft", "fiedler",
           "fiedler_companion", "hadamard", "hankel", "helmert", "hilbert", "invhilbert",
           "invpascal", "leslie", "pascal", "toeplitz"]


def _bcast_vectors(c, r):
  batch = jnp.broadcast_shapes(c.shape[:-1], r.shape[:-1])
  return (jnp.broadcast_to(c, batch + c.shape[-1:]), jnp.broadcast_to(r, batch + r.shape[-1:]),
          batch)


def _gather_last(v, idx):
  """``v[..., idx]`` for a 2-D integer index array."""
  return jnp.take(v, idx, axis=-1)


def toeplitz(c, r=None):
  """The Toeplitz matrix with first column ``c`` and first row ``r`` (``r[0]`` ignored;
  default ``conj(c)``)."""
  if r is None:
    check_arraylike("toeplitz", c)
    r = jnp.conjugate(jnp.asarray(c))
  else:
    check_arraylike("toeplitz", c, r)
  c = jnp.atleast_1d(jnp.asarray(c))
  r = jnp.atleast_1d(jnp.asarray(r))
  c, r, batch = _bcast_vectors(c, r)
  m, n = c.shape[-1], r.shape[-1]
  if m == 0 or n == 0:
    return jnp.empty(batch + (m, n), dtype=jnp.promote_types(c.dtype, r.dtype))
  elems = jnp.concatenate((jnp.flip(c, -1), r[..., 1:]), axis=-1)
  idx = (m - 1) - np.arange(m)[:, None] + np.arange(n)[None, :]
  return _gather_last(elems, idx)


def hankel(c, r=None):
  """The Hankel matrix with first column ``c`` and last row ``r`` (default zeros)."""
  if r is None:
    check_arraylike("hankel", c)
    c = jnp.asarray(c)
    r = jnp.zeros_like(c)
  else:
    check_arraylike("hankel", c, r)
    c, r = jnp.asarray(c), jnp.asarray(r)
  if c.ndim == 0:
    raise ValueError("hankel: c must be at least 1-dimensional, got a scalar.")
  if r.ndim == 0:
    raise ValueError("hankel: r must be at least 1-dimensional, got a scalar.")
  c, r, batch = _bcast_vectors(c, r)
  m, n = c.shape[-1], r.shape[-1]
  if m == 0 or n == 0:
    return jnp.empty(batch + (m, n), dtype=jnp.result_type(c, r))
  v = jnp.concatenate((c, r[..., 1:]), axis=-1)
  return _gather_last(v, np.arange(m)[:, None] + np.arange(n)[None, :])


def circulant(c):
  """The circulant matrix whose first column is ``c``."""
  check_arraylike("circulant", c)
  c = jnp.atleast_1d(jnp.asarray(c))
  n = c.shape[-1]
  return _gather_last(c, (np.arange(n)[:, None] - np.arange(n)[None, :]) % n)


def leslie(f, s):
  """The Leslie matrix: fecundities ``f`` in the first row, survival rates ``s`` on the
  subdiagonal."""
  check_arraylike("leslie", f, s)
  f, s = jnp.atleast_1d(f), jnp.atleast_1d(s)
  if f.shape[-1] < 2:
    raise ValueError(f"The length of f along the last axis must be at least 2; got shape "
                     f"{f.shape}.")
  if s.shape[-1] != f.shape[-1] - 1:
    raise ValueError("Incorrect lengths for f and s. The length of s along the last axis must "
                     f"be one less than the length of f; got f shape {f.shape} and s shape "
                     f"{s.shape}.")
  f, s = promote_dtypes(f, s)
  f, s, batch = _bcast_vectors(f, s)
  n = f.shape[-1]
  i = np.arange(n)[:, None]
  j = np.arange(n)[None, :]
  sub = jnp.where(i == j + 1, _gather_last(s, np.minimum(j, n - 2) + 0 * i), 0)
  return jnp.where(i == 0, f[..., None, :], sub).astype(f.dtype)


def companion(a):
  """The companion matrix of the polynomial with coefficients ``a`` (highest first)."""
  a, = promote_args_inexact("companion", a)
  a = jnp.atleast_1d(a)
  if a.shape[-1] < 2:
    raise ValueError(f"The length of `a` along the last axis must be at least 2; got shape "
                     f"{a.shape}.")
  first = -a[..., 1:] / a[..., :1]
  m = a.shape[-1] - 1
  eye = jnp.eye(m, m, k=-1, dtype=first.dtype)
  return jnp.where(np.arange(m)[:, None] == 0, first[..., None, :], eye)


def fiedler(a):
  """The symmetric Fiedler matrix ``|a_i - a_j|``."""
  check_arraylike("fiedler", a)
  a = jnp.atleast_1d(a)
  return jnp.abs(a[..., None] - a[..., None, :])


def fiedler_companion(a):
  """The Fiedler companion matrix (pentadiagonal) of the polynomial ``a``."""
  a, = promote_args_inexact("fiedler_companion", a)
  a = jnp.atleast_1d(a)
  if a.shape[-1] == 0:
    raise ValueError("fiedler_companion requires the last axis of 'a' to have nonzero length, "
                     f"but got an array of shape {a.shape}.")
  n = a.shape[-1] - 1
  if n == 0:
    return jnp.empty(a.shape[:-1] + (0, 0), a.dtype)
  a = a / a[..., :1]
  if n == 1:
    return -a[..., 1:].reshape(a.shape[:-1] + (1, 1))
  i = np.arange(n)[:, None]
  j = np.arange(n)[None, :]
  sup = -_gather_last(a, np.minimum(i + 2, n) + 0 * j)
  sub = -_gather_last(a, np.minimum(i + 1, n) + 0 * j)
  even, odd = i % 2 == 0, i % 2 == 1
  one = jnp.array(1, dtype=a.dtype)
  zero = jnp.array(0, dtype=a.dtype)
  a1 = -a[..., 1][..., None, None]
  conds = [(i == 0) & (j == 0), (i == 1) & (j == 0), (j == i + 1) & even, (j == i + 2) & even,
           (j == i - 1) & even & (i >= 2), (j == i - 2) & odd & (i >= 3)]
  shape = a.shape[:-1] + (n, n)
  conds = [jnp.broadcast_to(cnd, shape) for cnd in conds]
  return jnp.select(conds, [a1, one, sup, one, sub, one], default=zero)


@partial(jit, static_argnames=("n", "mode"))
def convolution_matrix(a, n, mode="full"):
  """The Toeplitz matrix ``A`` with ``A @ v == convolve(a, v, mode)`` for length-``n``
  ``v``."""
  n = operator.index(n)
  if n <= 0:
    raise ValueError(f"n must be a positive integer; got {n}.")
  check_arraylike("convolution_matrix", a)
  a = jnp.asarray(a)
  if a.ndim == 0:
    raise ValueError("convolution_matrix: a must be at least 1-dimensional, got a scalar.")
  m = a.shape[-1]
  if m < 1:
    raise ValueError(f"len(a) must be at least 1; got shape {a.shape}.")
  if mode not in ("full", "valid", "same"):
    raise ValueError(f"mode must be one of 'full', 'valid', 'same'; got {mode!r}.")
  pad = [(0, 0)] * (a.ndim - 1) + [(0, n - 1)]
  az = jnp.pad(a, pad)
  raz = jnp.pad(jnp.flip(a, axis=-1), pad)
  L = m + n - 1
  if mode == "same":
    trim = min(n, m) - 1
    tb = trim // 2
    te = trim - tb
  elif mode == "valid":
    tb = te = min(n, m) - 1
  else:
    tb = te = 0
  col0 = lax.slice_in_dim(az, tb, L - te, axis=-1)
  row0 = lax.slice_in_dim(raz, L - n - tb, L - tb, axis=-1)
  return toeplitz(col0, row0)


@partial(jit, static_argnames=("n",))
def hilbert(n):
  """The Hilbert matrix ``1 / (i + j + 1)``."""
  a = lax.broadcasted_iota(dtypes.default_float_dtype(), (n, 1), 0)
  return 1 / (a + a.T + 1)


@partial(jit, static_argnames=("n",))
def invhilbert(n):
  """The inverse of the order-``n`` Hilbert matrix (floating point)."""
  a = jnp.arange(n, dtype=dtypes.default_float_dtype())
  i, j = a[:, None], a[None, :]
  s = i + j
  return ((-1.0) ** s * (s + 1.0) * comb(n + i, n - j - 1) * comb(n + j, n - i - 1)
          * comb(s, i) ** 2)


@jit
def _binom(n, k):
  return lax.exp(lax.lgamma(n + 1.0) - lax.lgamma(n - k + 1.0) - lax.lgamma(k + 1.0))


@partial(jit, static_argnames=("n", "kind"))
def pascal(n, kind=None):
  """The Pascal matrix ('symmetric', 'lower' or 'upper'), from binomial coefficients via
  ``lgamma`` in float32 (as in JAX)."""
  kind = "symmetric" if kind is None else kind
  valid = ["symmetric", "lower", "upper"]
  if kind not in valid:
    raise ValueError(f"Expected kind to be on of: {valid}; got {kind}")
  a = jnp.arange(n, dtype=np.float32)
  L = _binom(a[:, None], a[None, :])
  if kind == "lower":
    return L
  if kind == "upper":
    return L.T
  return jnp.dot(L, L.T)


@partial(jit, static_argnames=("n", "kind"))
def invpascal(n, kind=None):
  """The inverse of the Pascal matrix."""
  kind = "symmetric" if kind is None else kind
  valid = ["symmetric", "lower", "upper"]
  if kind not in valid:
    raise ValueError(f"Expected kind to be one of: {valid}; got {kind}")
  a = jnp.arange(n, dtype=dtypes.default_float_dtype())
  i, j = a[:, None], a[None, :]
  L_inv = (-1.0) ** (i - j) * _binom(i, j)
  if kind == "lower":
    return L_inv
  if kind == "upper":
    return L_inv.T
  return jnp.dot(L_inv.T, L_inv)


@partial(jit, static_argnames=("n", "full"))
def helmert(n, full=False):
  """The Helmert matrix (``(n-1) x n``, or ``n x n`` with ``full``)."""
  if n < 1:
    raise ValueError(f"n must be a positive integer; got {n}.")
  i = jnp.arange(n - 1)[:, None]
  j = jnp.arange(n)[None, :]
  k = i + 1
  kf = k.astype(dtypes.default_float_dtype())
  den = jnp.sqrt(kf * (kf + 1))
  H = jnp.where(j <= i, 1.0 / den, jnp.where(j == k, -kf / den, jnp.zeros_like(den)))
  if full:
    H = jnp.concatenate([jnp.full((1, n), 1.0 / jnp.sqrt(n), dtype=H.dtype), H], axis=0)
  return H


@partial(jit, static_argnames=("n", "dtype"))
def hadamard(n, dtype=int):
  """The Sylvester-construction Hadamard matrix (``n`` a power of 2)."""
  if n < 1 or not math.log2(n).is_integer():
    raise ValueError(f"n must be a positive power of 2; got {n}.")
  H = jnp.ones((1, 1), dtype=dtype)
  for _ in range(int(math.log2(n))):
    H = jnp.block([[H, H], [H, -H]])
  return H


@partial(jit, static_argnames=("n", "scale", "dtype"))
def dft(n, scale=None, *, dtype=None):
  """The discrete Fourier transform matrix ``exp(-2 pi i j k / n)`` (scaled by
  ``1/sqrt(n)`` or ``1/n``)."""
  if scale is not None and scale not in ("sqrtn", "n"):
    raise ValueError(f"scale must be None, 'sqrtn', or 'n'; got {scale!r}.")
  if dtype is None:
    dtype = dtypes.canonicalize_dtype(np.complex128)
  else:
    dtype = dtypes.canonicalize_dtype(np.dtype(dtype))
    if not dtypes.issubdtype(dtype, np.complexfloating):
      raise ValueError(f"dtype must be a complex floating-point type; got {dtype}.")
  a = jnp.arange(n, dtype=dtype)
  w = jnp.exp(-2j * np.pi * a[:, None] * a[None, :] / n)
  if scale == "sqrtn":
    w = w / jnp.sqrt(n)
  elif scale == "n":
    w = w / n
  return w
