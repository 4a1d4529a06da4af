"""Eager NumPy implementations of the ragged and scaled contractions (``lax/ragged.py``):
``ragged_dot_general`` and ``scaled_dot``.
"""
from __future__ import annotations

import numpy as np

from pyjax._src.backends.cpu.eager.registry import register


# --- ragged_dot_general, scaled_dot -----------------------------------------------------------
def _dot(lhs, rhs, dimension_numbers, precision, preferred_element_type):
  from pyjax._src.backends.cpu.eager.registry import impls
  return impls["dot_general"](lhs, rhs, dimension_numbers=dimension_numbers,
                              precision=precision,
                              preferred_element_type=preferred_element_type)


def _group_mask(gs, n):
  """mask[..., g, i] = group g covers position i (groups are consecutive runs)."""
  ends = np.cumsum(gs.astype(np.int64), axis=-1)
  starts = ends - gs
  i = np.arange(n)
  return (starts[..., None] <= i) & (i < ends[..., None])


def _expand_ragged(x, gs, dim, prefix):
  """x with a leading group axis g: entries of other groups along ``dim`` zeroed.  ``gs``
  has shape [x.shape[p] for p in prefix] + [g]."""
  g = gs.shape[-1]
  mask = _group_mask(gs, x.shape[dim])                # prefix... + (g, n)
  mask = np.moveaxis(mask, -2, 0)                     # (g, prefix..., n)
  # place the prefix axes and the ragged axis at their positions in x
  full = [1] * (x.ndim + 1)
  full[0] = g
  src_axes = [0] + [p + 1 for p in prefix] + [dim + 1]
  order = np.argsort(src_axes)
  mask = np.transpose(mask, order)
  shp = [1] * (x.ndim + 1)
  for k, ax in enumerate(sorted(src_axes)):
    shp[ax] = mask.shape[k]
  mask = mask.reshape(shp)
  return np.where(mask, x[None], np.zeros((), x.dtype))


@register("ragged_dot_general")
def _ragged_dot_general(lhs, rhs, gs, *, ragged_dot_dimension_numbers, precision,
                        preferred_element_type, group_offset, out_sharding=None):
  if group_offset is not None:
    raise NotImplementedError("Unimplemented group_offset support.")
  from pyjax._src.shape_rules import (CONTRACTING, NONCONTRACTING, ragged_mode_and_dim as
                                      mode_and_dim, ragged_prefix_dims as prefix_dims)
  rdn = ragged_dot_dimension_numbers
  mode, ragged = mode_and_dim(lhs.ndim, rdn.dot_dimension_numbers, rdn.lhs_ragged_dimensions)
  (lc, rc), (lb, rb) = rdn.dot_dimension_numbers
  pre = prefix_dims(mode, lhs.ndim, ragged, lb, lc)
  if gs.ndim == 1:
    gs = np.broadcast_to(gs, tuple(lhs.shape[i] for i in pre) + gs.shape)
  inc = lambda ds: tuple(d + 1 for d in ds)
  if mode == NONCONTRACTING:
    x = _expand_ragged(lhs, gs, ragged, pre)
    dn = ((inc(lc) + (0,), tuple(rc) + (rdn.rhs_group_dimensions[0],)), (inc(lb), tuple(rb)))
    return _dot(x, rhs, dn, precision, preferred_element_type)
  if mode == CONTRACTING:
    rr = rc[list(lc).index(ragged)]
    rpre = prefix_dims(mode, rhs.ndim, rr, rb, rc)
    x = _expand_ragged(lhs, gs, ragged, pre)
    y = _expand_ragged(rhs, gs, rr, rpre)
    dn = ((inc(lc), inc(rc)), ((0,) + inc(lb), (0,) + inc(rb)))
    return _dot(x, y, dn, precision, preferred_element_type)
  return _dot(lhs, rhs, rdn.dot_dimension_numbers, precision, preferred_element_type)


def _scale_broadcast(scale, shape, contracting):
  for i in contracting:
    if scale.shape[i] != shape[i]:
      scale = np.repeat(scale, shape[i] // scale.shape[i], axis=i)
  return scale


@register("scaled_dot")
def _scaled_dot(lhs, rhs, lhs_scale, rhs_scale, *, dimension_numbers,
                preferred_element_type=None):
  import ml_dtypes
  bf16 = np.dtype(ml_dtypes.bfloat16)
  (lc, rc), _ = dimension_numbers

  def scaled(x, s, c):
    s = _scale_broadcast(s, x.shape, c).astype(np.float32).astype(bf16)
    x = x.astype(np.float32).astype(bf16)
    return (x.astype(np.float32) * s.astype(np.float32)).astype(bf16)
  return _dot(scaled(lhs, lhs_scale, lc), scaled(rhs, rhs_scale, rc), dimension_numbers,
              None, preferred_element_type)
