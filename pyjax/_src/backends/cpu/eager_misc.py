"""Eager NumPy implementations of the smaller lax primitives (``lax/misc.py``): split,
stack, unstack, tile, copy, mulhi, the total-order comparisons, empty, stage, pvary,
optimization_barrier and dce_sink.
"""
from __future__ import annotations

import numpy as np

from pyjax._src.backends.cpu.registry import register


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


@register("copy")
def _copy(x):
  return np.array(x, copy=True)


@register("stage")
def _stage(x):
  return x


@register("pvary")
def _pvary(x, *, axes):
  return x


@register("optimization_barrier")
def _optimization_barrier(*xs):
  return list(xs)


@register("dce_sink")
def _dce_sink(x, **_):
  return []


@register("empty")
def _empty(*, shape, dtype, out_sharding=None):
  return np.zeros(shape, dtype)


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


# --- tokens, composite, platform_index ---------------------------------------------------
@register("create_token")
def _create_token():
  return np.zeros((), np.bool_)


@register("after_all")
def _after_all(*tokens):
  return np.zeros((), np.bool_)


@register("composite")
def _composite(*args, jaxpr, **_):
  from pyjax._src.backends.cpu.eager_control_flow import run_jaxpr
  return run_jaxpr(jaxpr, args)


@register("pallas_call")
def _pallas_call(*args, grid_loop, **_):
  """A Pallas kernel: its grid program (the grid loop, ``pallas/interpret.py``)."""
  from pyjax._src.backends.cpu.eager_control_flow import run_jaxpr
  return run_jaxpr(grid_loop, args)


PLATFORM = "cpu"


@register("platform_index")
def _platform_index(*, platforms):
  default = None
  for i, ps in enumerate(platforms):
    if ps is None:
      default = i
    elif PLATFORM in ps:
      return np.array(i, np.int32)
  if default is None:
    raise NotImplementedError(f"MLIR translation rule for primitive 'platform_index(platforms="
                              f"{platforms})' not found for platform {PLATFORM}")
  return np.array(default, np.int32)


@register("custom_linear_solve")
def _custom_linear_solve(*args, const_lengths, jaxprs):
  from pyjax._src.backends.cpu.eager_control_flow import run_jaxpr
  n = sum(const_lengths)
  start = const_lengths[0] + const_lengths[1]
  solve_consts = args[start:start + const_lengths[2]]
  return run_jaxpr(jaxprs.solve, list(solve_consts) + list(args[n:]))


@register("approx_top_k")
def _approx_top_k(x, *, k, reduction_dimension, recall_target, is_max_k,
                  reduction_input_size_override, aggregate_to_topk):
  # XLA's CPU fallback is exact: a stable sort in total order, then a slice.
  from pyjax._src.shape_rules import approx_top_k_output_size
  axis = reduction_dimension % x.ndim
  size = approx_top_k_output_size(x.shape[axis], x.ndim, k, recall_target, aggregate_to_topk,
                               reduction_input_size_override)[0]
  key = _total_order_key(x)
  if is_max_k:
    key = ~key
  idx = np.argsort(key, axis=axis, kind="stable")
  idx = np.take(idx, np.arange(size), axis=axis)
  return [np.take_along_axis(x, idx, axis=axis), idx.astype(np.int32)]


# --- ragged_dot_general, scaled_dot -----------------------------------------------------------
def _dot(lhs, rhs, dimension_numbers, precision, preferred_element_type):
  from pyjax._src.backends.cpu.registry import impls
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


# --- placement (one device per computation: identities) ----------------------------------------
@register("sharding_constraint")
def _sharding_constraint(x, **_):
  return x


@register("device_put")
def _device_put(*xs, devices, srcs, copy_semantics):
  return [np.array(x, copy=True) if getattr(c, "name", "") == "ALWAYS_COPY" else x
          for x, c in zip(xs, copy_semantics)]


# --- select_and_scatter ---------------------------------------------------------------------
@register("select_and_scatter")
def _select_and_scatter(operand, source, init_value, *, select_jaxpr, select_consts,
                        scatter_jaxpr, scatter_consts, window_dimensions, window_strides,
                        padding):
  import itertools
  from pyjax._src.backends.cpu.eager_control_flow import run_jaxpr
  from pyjax._src.core import ClosedJaxpr
  sel = ClosedJaxpr(select_jaxpr, list(select_consts))
  sca = ClosedJaxpr(scatter_jaxpr, list(scatter_consts))
  nd = operand.ndim
  lo = [p[0] for p in padding]
  padded = [d + p[0] + p[1] for d, p in zip(operand.shape, padding)]
  out_shape = tuple(max(0, (p - w) // s + 1) if p >= w else 0
                    for p, w, s in zip(padded, window_dimensions, window_strides))
  if tuple(source.shape) != out_shape:
    raise ValueError(f"select_and_scatter: source shape {source.shape} does not match the "
                     f"window grid {out_shape}")
  out = np.full(operand.shape, init_value, operand.dtype)
  if not all(out_shape):
    return out
  grid = np.indices(out_shape)                       # (nd, *out_shape)
  best = best_k = have = None
  positions = []
  for k, off in enumerate(itertools.product(*[range(w) for w in window_dimensions])):
    pos = [grid[i] * window_strides[i] + off[i] - lo[i] for i in range(nd)]
    valid = np.ones(out_shape, bool)
    for i in range(nd):
      valid &= (pos[i] >= 0) & (pos[i] < operand.shape[i])
    clipped = tuple(np.clip(pos[i], 0, max(operand.shape[i] - 1, 0)) for i in range(nd))
    cand = operand[clipped] if operand.size else np.zeros(out_shape, operand.dtype)
    positions.append(clipped)
    if best is None:
      best, best_k, have = cand, np.where(valid, k, -1), valid
      continue
    keep = np.asarray(run_jaxpr(sel, [best, cand])[0], bool)
    take = valid & (~have | ~keep)
    best = np.where(take, cand, best)
    best_k = np.where(take, k, best_k)
    have = have | valid
  for k, clipped in enumerate(positions):
    m = best_k == k
    if not m.any():
      continue
    idx = tuple(c[m] for c in clipped)   # distinct windows pick distinct positions for one k
    cur = out[idx]
    out[idx] = np.asarray(run_jaxpr(sca, [cur, source[m]])[0], out.dtype)
  return out
