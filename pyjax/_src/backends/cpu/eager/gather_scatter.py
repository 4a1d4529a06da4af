"""Eager NumPy implementations of gather and the scatter family, for general XLA dimension
numbers (batching dimensions included) and every out-of-bounds mode.

The mode arrives as JAX's ``GatherScatterMode`` enum; this module only reads its
``name`` (CLIP / FILL_OR_DROP / PROMISE_IN_BOUNDS / ONE_HOT), so it imports nothing from
``lax``.  Semantics (XLA's on CPU): gathers clamp start indices unless the mode is
FILL_OR_DROP (then partly out-of-bounds slices are filled); scatters drop partly
out-of-bounds windows unless the mode is CLIP (then start indices are clamped).
Duplicate scatter indices accumulate; for a plain scatter the last update wins.
"""
from __future__ import annotations

import numpy as np

from pyjax._src.backends.cpu.eager.registry import impls, register


def _mode_name(mode):
  return getattr(mode, "name", str(mode))


def _as_index(a):
  """Indices as int64 (uint64 values above int64's range saturate; they are out of
  bounds of any array anyway)."""
  if a.dtype == np.uint64:
    return np.minimum(a, np.uint64(np.iinfo(np.int64).max)).astype(np.int64)
  return a.astype(np.int64, copy=False)


def _batch_iota(batch_shape, axis):
  shape = [1] * len(batch_shape)
  shape[axis] = batch_shape[axis]
  return np.arange(batch_shape[axis], dtype=np.int64).reshape(shape)


def _starts(operand_shape, idx, index_map, operand_batching_dims, indices_batching_dims,
            window, clamp):
  """Per operand dimension, the start index of each window (an array broadcastable to
  the indices' batch shape, or 0), and a mask of windows wholly in bounds."""
  batch_shape = idx.shape[:-1]
  starts = [0] * len(operand_shape)
  in_bounds = None
  for k, d in enumerate(index_map):
    s = idx[..., k]
    hi = operand_shape[d] - window[d]
    ok = (s >= 0) & (s <= hi)
    in_bounds = ok if in_bounds is None else in_bounds & ok
    if clamp:
      s = np.clip(s, 0, max(hi, 0))
    starts[d] = s
  for d, bd in zip(operand_batching_dims, indices_batching_dims):
    starts[d] = _batch_iota(batch_shape, bd)
  return starts, in_bounds


def _window_indices(starts, window, nb, full_dims=()):
  """Index arrays (batch dims, then window dims of the non-full operand dims)."""
  dims = [d for d in range(len(starts)) if d not in full_dims]
  nw = len(dims)
  out = []
  for j, d in enumerate(dims):
    s = np.asarray(starts[d], dtype=np.int64)
    if s.ndim == 0:
      s = s.reshape((1,) * nb)
    s = s.reshape(s.shape + (1,) * nw)
    w = np.arange(window[d], dtype=np.int64).reshape((1,) * nb + tuple(-1 if i == j else 1 for i in range(nw)))
    out.append(s + w)
  return dims, out


@register("gather")
def _gather(operand, indices, *, dimension_numbers, slice_sizes, mode, fill_value,
            unique_indices=False, indices_are_sorted=False):
  dn = dimension_numbers
  nb = indices.ndim - 1
  batch_shape = indices.shape[:-1]
  n = operand.ndim
  offset_dims = dn.offset_dims
  kept = [d for d in range(n) if d not in dn.collapsed_slice_dims and d not in dn.operand_batching_dims]
  out_rank = nb + len(offset_dims)
  # output shape
  bs, ws = iter(batch_shape), iter(slice_sizes[d] for d in kept)
  out_shape = tuple(next(ws) if o in offset_dims else next(bs) for o in range(out_rank))
  if 0 in out_shape:
    return np.zeros(out_shape, operand.dtype)
  mname = _mode_name(mode)
  fill = mname == "FILL_OR_DROP"
  idx = _as_index(indices)
  starts, in_bounds = _starts(operand.shape, idx, dn.start_index_map, dn.operand_batching_dims,
                              dn.start_indices_batching_dims, slice_sizes, clamp=True)
  # dims taken whole need no index arrays: move them last and index the rest
  full_dims = tuple(d for d in range(n) if d not in dn.start_index_map
                    and d not in dn.operand_batching_dims and slice_sizes[d] == operand.shape[d])
  dims, arrays = _window_indices(starts, slice_sizes, nb, full_dims)
  src = operand
  if full_dims:
    perm = dims + list(full_dims)
    if perm != list(range(n)):
      src = operand.transpose(perm)
    g = src[tuple(arrays) + (Ellipsis,)] if arrays else src.reshape((1,) * nb + src.shape)
    # g: batch (maybe broadcast), windows of `dims`, then full dims; back to operand order
    order = dims + list(full_dims)
    inv = [nb + order.index(d) for d in range(n)]
    g = g.transpose(list(range(nb)) + inv)
  else:
    g = src[tuple(arrays)] if arrays else src.reshape((1,) * nb + src.shape)
  g = np.broadcast_to(g, tuple(batch_shape) + tuple(slice_sizes))
  g = g.reshape(tuple(batch_shape) + tuple(slice_sizes[d] for d in kept))
  # batch dims first, window dims after -> output order
  perm, b, w = [], 0, 0
  for o in range(out_rank):
    if o in offset_dims:
      perm.append(nb + w)
      w += 1
    else:
      perm.append(b)
      b += 1
  g = g.transpose(perm)
  if fill and in_bounds is not None and not in_bounds.all():
    if fill_value is None:
      fill_value = _default_fill(operand.dtype)
    m = in_bounds.reshape(tuple(batch_shape) + (1,) * len(kept)).transpose(perm)
    g = np.where(m, g, _cast_scalar(fill_value, operand.dtype))
  return np.array(g)


def _default_fill(dtype):
  if dtype.kind in "fcV" or dtype.name in ("bfloat16", "float16") or dtype.name.startswith("float8"):
    return np.nan
  if dtype.kind == "i":
    return np.iinfo(dtype).min
  if dtype.kind == "u":
    return np.iinfo(dtype).max
  return True


def _cast_scalar(v, dtype):
  with np.errstate(all="ignore"):
    return np.asarray(v).astype(dtype)


# --- scatter ----------------------------------------------------------------------------
def _scatter_targets(operand, indices, updates, dn, mode):
  """(tuple of 1-d index arrays into operand, 1-d update values) for every update element
  that lands in bounds, in the order XLA visits them."""
  n = operand.ndim
  nb = indices.ndim - 1
  batch_shape = tuple(indices.shape[:-1])
  uwd = tuple(dn.update_window_dims)
  wdims = [d for d in range(n) if d not in dn.inserted_window_dims and d not in dn.operand_batching_dims]
  window = [1] * n
  for i, d in enumerate(wdims):
    window[d] = updates.shape[uwd[i]]
  scatter_dims = [i for i in range(updates.ndim) if i not in uwd]
  u = updates.transpose(scatter_dims + list(uwd)).reshape(batch_shape + tuple(window))
  if u.size == 0 or operand.size == 0:
    return None, None
  idx = _as_index(indices)
  clip = _mode_name(mode) == "CLIP"
  starts, in_bounds = _starts(operand.shape, idx, dn.scatter_dims_to_operand_dims,
                              dn.operand_batching_dims, dn.scatter_indices_batching_dims,
                              window, clamp=clip)
  _, arrays = _window_indices(starts, window, nb)
  full = batch_shape + tuple(window)
  arrays = [np.broadcast_to(a, full) for a in arrays]
  if not clip and in_bounds is not None and not in_bounds.all():
    m = np.broadcast_to(in_bounds.reshape(batch_shape + (1,) * n), full)
    return tuple(a[m] for a in arrays), u[m]
  return tuple(a.reshape(-1) for a in arrays), u.reshape(-1)


_accumulators = {"scatter-add": np.add, "scatter-sub": np.subtract, "scatter-mul": np.multiply,
                 "scatter-min": np.minimum, "scatter-max": np.maximum}


def _half_safe_at(ufunc, out, where, vals):
  try:
    ufunc.at(out, where, vals)
  except TypeError:  # dtypes without ufunc.at loops (e.g. some ml_dtypes): sequential
    flat = out.reshape(-1)
    lin = np.ravel_multi_index(where, out.shape) if out.ndim else np.zeros(len(vals), np.int64)
    for t, v in zip(lin.tolist(), vals):
      flat[t] = ufunc(flat[t], v)


def _signed_zero_extremum(out, operand, where, vals, is_max):
  """XLA's max/min order -0.0 below +0.0 (NumPy's return either zero): a zero scatter-max
  result is +0 if the operand element or an update landing there is +0, a zero
  scatter-min result -0 if one of them is -0."""
  zero = out == 0
  if not zero.any():
    return
  win = lambda v: (v == 0) & (np.signbit(v) != is_max)   # +0 for max, -0 for min
  flag = win(np.asarray(operand)).copy()
  np.logical_or.at(flag, where, win(vals))
  out[zero & flag] = 0 if is_max else -0.0
  out[zero & ~flag] = -0.0 if is_max else 0


def _make_accumulating_impl(name):
  ufunc = _accumulators[name]

  def impl(operand, indices, updates, *, dimension_numbers, mode, update_jaxpr=None,
           update_consts=(), indices_are_sorted=False, unique_indices=False):
    out = np.array(operand, copy=True)
    where, vals = _scatter_targets(operand, indices, updates, dimension_numbers, mode)
    if where is None or vals.size == 0:
      return out
    if out.dtype.kind == "c" and name in ("scatter-max", "scatter-min"):
      # XLA compares complex values lexicographically (NaN compares false, so the update
      # wins), which is order dependent: combine in XLA's order with the max/min primitive
      combine = impls["max" if name == "scatter-max" else "min"]
      _combine_in_rounds(out, where, vals, combine)
      return out
    if operand.ndim == 0:
      for v in vals:
        out[()] = ufunc(out[()], v)
      return out
    with np.errstate(all="ignore"):
      _half_safe_at(ufunc, out, where, vals)
    if name in ("scatter-max", "scatter-min") and out.dtype.kind not in "biu":
      _signed_zero_extremum(out, operand, where, vals, name == "scatter-max")
    return out
  impl.__name__ = name.replace("-", "_")
  return impl


for _name in _accumulators:
  register(_name)(_make_accumulating_impl(_name))


@register("scatter")
def _scatter(operand, indices, updates, *, dimension_numbers, mode, update_jaxpr=None,
             update_consts=(), indices_are_sorted=False, unique_indices=False):
  out = np.array(operand, copy=True)
  where, vals = _scatter_targets(operand, indices, updates, dimension_numbers, mode)
  if where is None or vals.size == 0:
    return out
  if update_jaxpr is None:
    if operand.ndim == 0:
      out[()] = vals[-1]
    else:
      out[where] = vals  # duplicates: the last update wins
    return out
  # a general combiner (scatter_apply): apply in rounds, one occurrence per target each
  _combine_in_rounds(out, where, vals, lambda x, y: _apply_combiner(
      update_jaxpr, update_consts, x, y, out.dtype))
  return out


def _combine_in_rounds(out, where, vals, combine):
  """``out[t] = combine(out[t], v)`` for every target t and update v, in update order:
  round r combines each target's r-th update, vectorized over the targets."""
  lin = np.ravel_multi_index(where, out.shape) if out.ndim else np.zeros(len(vals), np.int64)
  order = np.argsort(lin, kind="stable")
  sorted_lin = lin[order]
  starts = np.r_[0, np.flatnonzero(np.diff(sorted_lin)) + 1] if len(lin) else np.zeros(0, np.int64)
  group_start = np.repeat(starts, np.diff(np.r_[starts, len(lin)]))
  rank = np.empty(len(lin), np.int64)
  rank[order] = np.arange(len(lin)) - group_start
  flat = out.reshape(-1)
  for r in range(int(rank.max()) + 1 if len(rank) else 0):
    sel = rank == r
    t = lin[sel]
    flat[t] = combine(flat[t], vals[sel])


def _apply_combiner(jaxpr, consts, x, y, dtype):
  try:
    r = eval_jaxpr_numpy(jaxpr, consts, x, y)[0]
    return np.broadcast_to(np.asarray(r).astype(dtype, copy=False), x.shape)
  except Exception:  # a combiner that does not vectorize: one element at a time
    return np.array([np.asarray(eval_jaxpr_numpy(jaxpr, consts, xi, yi)[0]).astype(dtype)
                     for xi, yi in zip(x, y)], dtype).reshape(x.shape)


def eval_jaxpr_numpy(jaxpr, consts, *args):
  """Evaluate a (scalar, first-order) jaxpr on NumPy arrays with this backend's impls."""
  env = {}

  def read(v):
    if type(v).__name__ == "Literal":
      return np.asarray(v.val, v.aval.dtype)
    return env[v]

  for v, c in zip(jaxpr.constvars, consts):
    env[v] = np.asarray(c)
  for v, a in zip(jaxpr.invars, args):
    env[v] = np.asarray(a)
  for eqn in jaxpr.eqns:
    impl = impls.get(eqn.primitive.name)
    if impl is None:
      raise NotImplementedError(f"no eager implementation of {eqn.primitive.name}")
    out = impl(*[read(v) for v in eqn.invars], **eqn.params)
    outs = out if eqn.primitive.multiple_results else [out]
    for v, o in zip(eqn.outvars, outs):
      env[v] = np.asarray(o).astype(v.aval.dtype, copy=False)
  return [read(v) for v in jaxpr.outvars]
