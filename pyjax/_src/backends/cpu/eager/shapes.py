"""Eager NumPy implementations of the structural primitives (broadcast_in_dim, reshape,
transpose, squeeze, rev, concatenate, pad, iota, slice, dynamic_slice,
dynamic_update_slice).

Results are fresh C-contiguous arrays (never read-only broadcast views, never views that
keep a larger buffer alive), except reshape and squeeze, which may view their whole,
immutable operand.  Dynamic start indices are clamped into ``[0, dim - size]`` as XLA does.
"""
from __future__ import annotations

import numpy as np

from pyjax._src.backends.cpu.eager.registry import register


@register("broadcast_in_dim")
def _broadcast_in_dim(x, *, shape, broadcast_dimensions, sharding=None):
  dims = tuple(broadcast_dimensions)
  if list(dims) != sorted(dims):  # operand dims in output order, then insert size-1 dims
    order = sorted(range(len(dims)), key=lambda i: dims[i])
    x = np.transpose(x, order)
    dims = tuple(dims[i] for i in order)
  expanded = [1] * len(shape)
  for i, d in enumerate(dims):
    expanded[d] = x.shape[i]
  out = np.empty(shape, x.dtype)
  out[...] = np.reshape(x, expanded)
  return out


@register("reshape")
def _reshape(x, *, new_sizes, dimensions=None, sharding=None):
  if dimensions is not None:
    x = np.transpose(x, dimensions)
  return np.reshape(x, new_sizes)


@register("transpose")
def _transpose(x, *, permutation):
  return np.ascontiguousarray(np.transpose(x, permutation))


@register("squeeze")
def _squeeze(x, *, dimensions):
  return np.reshape(x, tuple(s for i, s in enumerate(x.shape) if i not in set(dimensions)))


@register("rev")
def _rev(x, *, dimensions):
  if not dimensions:
    return x
  return np.ascontiguousarray(np.flip(x, tuple(dimensions)))


@register("concatenate")
def _concatenate(*xs, dimension):
  return np.concatenate(xs, axis=dimension)


@register("pad")
def _pad(x, padding_value, *, padding_config):
  out_shape = []
  dilated_shape = []
  for (lo, hi, interior), d in zip(padding_config, x.shape):
    dd = 0 if d == 0 else d + (d - 1) * interior
    dilated_shape.append(dd)
    out_shape.append(lo + hi + dd)
  value = np.asarray(padding_value, x.dtype)
  if any(interior for _, _, interior in padding_config):
    dilated = np.full(dilated_shape, value, x.dtype)
    dilated[tuple(slice(None, None, i + 1) for _, _, i in padding_config)] = x
  else:
    dilated = x
  out = np.full(out_shape, value, x.dtype)
  src, dst = [], []
  for (lo, _, _), dd, od in zip(padding_config, dilated_shape, out_shape):
    s0 = max(-lo, 0)            # first dilated element kept
    d0 = max(lo, 0)             # where it lands in the output
    n = max(min(dd - s0, od - d0), 0)
    src.append(slice(s0, s0 + n))
    dst.append(slice(d0, d0 + n))
  out[tuple(dst)] = dilated[tuple(src)]
  return out


@register("iota")
def _iota(*, dtype, shape, dimension, sharding=None):
  n = shape[dimension]
  if dtype.kind in "iub":
    line = np.arange(n, dtype=np.int64).astype(dtype)  # wraps like XLA for narrow ints
  else:
    line = np.arange(n, dtype=np.float64).astype(dtype)
  expanded = [1] * len(shape)
  expanded[dimension] = n
  out = np.empty(shape, dtype)
  out[...] = line.reshape(expanded)
  return out


@register("slice")
def _slice(x, *, start_indices, limit_indices, strides=None):
  if strides is None:
    strides = (1,) * x.ndim
  idx = tuple(slice(s, l, st) for s, l, st in zip(start_indices, limit_indices, strides))
  return np.array(x[idx], copy=True, order="C")


def _clamped_starts(shape, sizes, idx):
  return [min(max(int(i), 0), d - s) for i, d, s in zip(idx, shape, sizes)]


@register("dynamic_slice")
def _dynamic_slice(x, *idx, slice_sizes):
  starts = _clamped_starts(x.shape, slice_sizes, idx)
  sl = tuple(slice(s, s + n) for s, n in zip(starts, slice_sizes))
  return np.array(x[sl], copy=True, order="C")


@register("dynamic_update_slice")
def _dynamic_update_slice(x, update, *idx):
  starts = _clamped_starts(x.shape, update.shape, idx)
  out = np.array(x, copy=True, order="C")
  out[tuple(slice(s, s + n) for s, n in zip(starts, update.shape))] = update
  return out


@register("split")
def _split(x, *, sizes, axis):
  bounds = np.cumsum(sizes)[:-1]
  return [np.ascontiguousarray(p) for p in np.split(x, bounds, axis=axis)]


@register("stack")
def _stack(*xs, axis):
  return np.stack(xs, axis=axis)


@register("unstack")
def _unstack(x, *, axis):
  return [np.array(np.take(x, i, axis=axis)) for i in range(x.shape[axis])]


@register("tile")
def _tile(x, *, reps):
  return np.tile(x, reps) if x.ndim else np.array(x)
