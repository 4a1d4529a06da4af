"""Window functions of jax.numpy: bartlett, blackman, hamming, hanning and kaiser, in the
default float dtype (``M`` must be concrete)."""
from __future__ import annotations

import numpy as np

from pyjax._src import core, dtypes
from pyjax._src.lax import lax_api as lax
from pyjax._src.numpy import reductions as _red
from pyjax._src.numpy import ufuncs as _uf

__all__ = ["bartlett", "blackman", "hamming", "hanning", "kaiser"]


def _setup(name, M):
  M = core.concrete_or_error(int, M, f"M argument of jnp.{name}")
  dtype = dtypes.default_float_dtype()
  return M, dtype


def _cos_term(n, k, M, dtype):
  """cos(2 pi k n / (M - 1))"""
  return _uf.cos(_uf.true_divide(_uf.multiply(np.array(2 * k * np.pi, dtype), n),
                                 np.array(M - 1, dtype)))


def blackman(M):
  """Blackman window: 0.42 - 0.5 cos(2 pi n/(M-1)) + 0.08 cos(4 pi n/(M-1))."""
  M, dtype = _setup("blackman", M)
  if M <= 1:
    return lax.full((max(M, 0),), 1, dtype)
  n = lax.iota(dtype, M)
  return _uf.add(_uf.subtract(np.array(0.42, dtype),
                              _uf.multiply(np.array(0.5, dtype), _cos_term(n, 1, M, dtype))),
                 _uf.multiply(np.array(0.08, dtype), _cos_term(n, 2, M, dtype)))


def bartlett(M):
  """Bartlett (triangular) window: 1 - |2n + 1 - M| / (M - 1)."""
  M, dtype = _setup("bartlett", M)
  if M <= 1:
    return lax.full((max(M, 0),), 1, dtype)
  n = lax.iota(dtype, M)
  t = _uf.subtract(_uf.add(_uf.multiply(np.array(2, dtype), n), np.array(1, dtype)),
                   np.array(M, dtype))
  return _uf.subtract(np.array(1, dtype), _uf.true_divide(_uf.abs(t), np.array(M - 1, dtype)))


def hamming(M):
  """Hamming window: 0.54 - 0.46 cos(2 pi n/(M-1))."""
  M, dtype = _setup("hamming", M)
  if M <= 1:
    return lax.full((max(M, 0),), 1, dtype)
  n = lax.iota(dtype, M)
  return _uf.subtract(np.array(0.54, dtype),
                      _uf.multiply(np.array(0.46, dtype), _cos_term(n, 1, M, dtype)))


def hanning(M):
  """Hann window: 0.5 (1 - cos(2 pi n/(M-1)))."""
  M, dtype = _setup("hanning", M)
  if M <= 1:
    return lax.full((max(M, 0),), 1, dtype)
  n = lax.iota(dtype, M)
  return _uf.multiply(np.array(0.5, dtype),
                      _uf.subtract(np.array(1, dtype), _cos_term(n, 1, M, dtype)))


def kaiser(M, beta):
  """Kaiser window: I0(beta sqrt(1 - ((n - a)/a)^2)) / I0(beta), a = (M - 1)/2."""
  M, dtype = _setup("kaiser", M)
  beta = _red._asarray("kaiser", beta)
  if M <= 1:
    return lax.full((max(M, 0),), 1, dtype)
  n = lax.iota(dtype, M)
  alpha = 0.5 * (M - 1)
  r = _uf.true_divide(_uf.subtract(n, np.array(alpha, dtype)), np.array(alpha, dtype))
  arg = _uf.multiply(beta, _uf.sqrt(_uf.subtract(np.array(1, dtype), _uf.square(r))))
  return _uf.true_divide(_uf.i0(arg), _uf.i0(beta))
