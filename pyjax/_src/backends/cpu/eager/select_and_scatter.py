"""Eager implementation of the general ``select_and_scatter`` primitive
(``lax/select_and_scatter.py``): the select and scatter jaxprs run window by window.
"""
from __future__ import annotations

import numpy as np

from pyjax._src.backends.cpu.eager.registry import register


# --- select_and_scatter ---------------------------------------------------------------------
@register("select_and_scatter")
def _select_and_scatter(operand, source, init_value, *, select_jaxpr, select_consts,
                        scatter_jaxpr, scatter_consts, window_dimensions, window_strides,
                        padding):
  import itertools
  from pyjax._src.backends.cpu.eager.control_flow import run_jaxpr
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
