"""jax.scipy.fft: the type-2 discrete cosine transform (dct, dctn) and its inverse (idct,
idctn), computed with one complex FFT of the even/odd-interleaved input (Makhoul's
algorithm, as JAX).  Only ``type=2`` and ``norm`` None/'backward'/'ortho' are supported, as
in JAX."""
from __future__ import annotations

import functools
import math
import operator

import numpy as np

from pyjax._src import dtypes
from pyjax._src.lax import lax_api as lax
from pyjax._src.numpy import fft as jnp_fft
from pyjax._src.numpy.util import canonicalize_axis, check_arraylike, promote_dtypes_complex, \
    promote_dtypes_inexact
import pyjax.numpy as jnp

__all__ = ["dct", "dctn", "idct", "idctn"]


def _arr(name, x):
  check_arraylike(name, x)
  return jnp.asarray(x)


def _check(name, type, norm):
  if type != 2:
    raise NotImplementedError("Only DCT type 2 is implemented.")
  if norm is not None and norm not in ["backward", "ortho"]:
    raise ValueError(f"jax.scipy.fft.{name}: norm={norm!r} is not implemented")


def _W4(N, k):
  N, k = promote_dtypes_complex(N, k)
  return jnp.exp(-.5j * np.pi * k / N)


def _interleave(x, axis):
  """``[x0, x2, x4, ..., x5, x3, x1]`` along ``axis``."""
  evens = lax.slice_in_dim(x, None, None, 2, axis)
  odds = lax.rev(lax.slice_in_dim(x, 1, None, 2, axis), (axis,))
  return lax.concatenate([evens, odds], axis)


def _deinterleave(x, axis):
  """The inverse of ``_interleave``."""
  n = x.shape[axis]
  half = math.ceil(n / 2)
  v0 = lax.slice_in_dim(x, 0, half, 1, axis)
  v1 = lax.rev(lax.slice_in_dim(x, half, n, 1, axis), (axis,))
  idx = [slice(None)] * x.ndim
  out = jnp.zeros(x.shape, dtype=x.dtype)
  idx[axis] = slice(None, None, 2)
  out = out.at[tuple(idx)].set(v0)
  idx[axis] = slice(1, None, 2)
  return out.at[tuple(idx)].set(v1)


def _ortho_norm(out, axis):
  n = out.shape[axis]
  factor = lax.concatenate([lax.full((1,), 4, out.dtype), lax.full((n - 1,), 2, out.dtype)], 0)
  factor = lax.expand_dims(factor, [a for a in range(out.ndim) if a != axis])
  return out / lax.sqrt(factor * n)


def _pad_to(x, axis, n):
  return lax.pad(x, jnp.array(0, x.dtype),
                 [(0, n - x.shape[axis] if a == axis else 0, 0) for a in range(x.ndim)])


def _expand(v, ndim, axis):
  return lax.expand_dims(v, [a for a in range(ndim) if a != axis])


def _real_transform(fn):
  """Shared argument handling of the DCTs: ``x`` array-like, type 2 and a known ``norm``;
  a complex input is transformed as its real and imaginary parts."""
  name = fn.__name__

  @functools.wraps(fn)
  def transform(x, type=2, *args, norm=None, **kw):
    x = _arr(name, x)
    _check(name, type, norm)
    if dtypes.issubdtype(x.dtype, np.complexfloating):
      return lax.complex(transform(x.real, type, *args, norm=norm, **kw),
                         transform(x.imag, type, *args, norm=norm, **kw))
    return fn(x, type, *args, norm=norm, **kw)
  return transform


@_real_transform
def dct(x, type=2, n=None, axis=-1, norm=None):
  """The type-2 DCT along ``axis`` (zero-padded or truncated to ``n``)."""
  axis = canonicalize_axis(axis, x.ndim)
  if n is not None:
    x = _pad_to(x, axis, n)
  N = x.shape[axis]
  V = jnp_fft.fft(_interleave(x, axis), axis=axis)
  k = _expand(jnp.arange(N, dtype=V.real.dtype), x.ndim, axis)
  out = 2 * (V * _W4(N, k)).real
  return _ortho_norm(out, axis) if norm == "ortho" else out


def _dct2(x, axes, norm):
  a1, a2 = (canonicalize_axis(a, x.ndim) for a in axes)
  N1, N2 = x.shape[a1], x.shape[a2]
  V = jnp_fft.fftn(_interleave(_interleave(x, a1), a2), axes=axes)
  k1 = _expand(jnp.arange(N1, dtype=V.dtype), x.ndim, a1)
  k2 = _expand(jnp.arange(N2, dtype=V.dtype), x.ndim, a2)
  out = _W4(N1, k1) * (_W4(N2, k2) * V
                       + _W4(N2, -k2) * jnp.roll(jnp.flip(V, axis=a2), shift=1, axis=a2))
  out = 2 * out.real
  if norm == "ortho":
    return _ortho_norm(_ortho_norm(out, a1), a2)
  return out


def _axes_and_sizes(x, s, axes):
  if s is not None:
    try:
      s = list(s)
    except TypeError:
      s = [operator.index(s)]
    if len(s) > x.ndim:
      raise ValueError(f"s must have at most x.ndim ({x.ndim}) elements, got {len(s)}")
  if axes is None:
    axes = tuple(range(x.ndim - len(s), x.ndim)) if s is not None else tuple(range(x.ndim))
  else:
    axes = tuple(canonicalize_axis(a, x.ndim) for a in axes)
    if len(set(axes)) != len(axes):
      raise ValueError(f"repeated axis in {axes}")
  return s, axes


def _pad_many(x, s, axes):
  ns = dict(zip(axes, s))
  return lax.pad(x, jnp.array(0, x.dtype),
                 [(0, ns[a] - x.shape[a] if a in ns else 0, 0) for a in range(x.ndim)])


@_real_transform
def dctn(x, type=2, s=None, axes=None, norm=None):
  """The multidimensional type-2 DCT over ``axes`` (sizes ``s``)."""
  s, axes = _axes_and_sizes(x, s, axes)
  if len(axes) == 1:
    return dct(x, n=s[0] if s is not None else None, axis=axes[0], norm=norm)
  if s is not None:
    x = _pad_many(x, s, axes)
  if len(axes) == 2:
    return _dct2(x, axes=axes, norm=norm)
  for block in [axes[i:i + 2] for i in range(0, len(axes), 2)]:
    x = dctn(x, axes=block, norm=norm)
  return x


@_real_transform
def idct(x, type=2, n=None, axis=-1, norm=None):
  """The inverse of the type-2 DCT (a scaled type-3 DCT) along ``axis``."""
  axis = canonicalize_axis(axis, x.ndim)
  if n is not None:
    x = _pad_to(x, axis, n)
  N = x.shape[axis]
  x, = promote_dtypes_inexact(x)
  if norm is None or norm == "backward":
    x = _ortho_norm(x, axis)
  x = _ortho_norm(x, axis)
  k = _expand(jnp.arange(N, dtype=x.dtype), x.ndim, axis)
  w4 = _W4(N, k)
  x = x.astype(w4.dtype) / w4
  x = x * 2 * N
  return _deinterleave(jnp_fft.ifft(x, axis=axis).real, axis)


@_real_transform
def idctn(x, type=2, s=None, axes=None, norm=None):
  """The multidimensional inverse type-2 DCT."""
  s, axes = _axes_and_sizes(x, s, axes)
  if len(axes) == 1:
    return idct(x, n=s[0] if s is not None else None, axis=axes[0], norm=norm)
  if s is not None:
    x = _pad_many(x, s, axes)
  for a in axes:
    x = idct(x, axis=a, norm=norm)
  return x

