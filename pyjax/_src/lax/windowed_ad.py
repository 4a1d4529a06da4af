"""The JVP of the generic ``reduce_window`` primitive (``lax.reduce_window`` with a
computation other than add/max/min).

Each output element folds the elements of its window, in row-major window order,
starting from the init value.  The rule rewrites that fold as array operations — the
operand padded (and base-dilated) with the init value, one strided slice per window
position, and the reduction computation applied elementwise to whole slices — and
differentiates the rewrite, so forward and reverse mode both work (JAX's generic
reduce_window supports forward mode only).  Like the generic ``reduce`` rule, the
computation must be made of elementwise operations.  Kept in its own module (registered
by ``pyjax._src.api_ad``) beside ``windowed.py``, which defines the primitive.
"""
from __future__ import annotations

import itertools

from pyjax._src import core
from pyjax._src.interpreters import ad
from pyjax._src.lax import shapes
from pyjax._src.lax.windowed import reduce_window_p


def _window_fold(operands, inits, jaxpr, consts, window_dimensions, window_strides, padding,
                 base_dilation, window_dilation, out_shape):
  padded = []
  for x, init in zip(operands, inits):
    cfg = [(lo, hi, bd - 1) for (lo, hi), bd in zip(padding, base_dilation)]
    padded.append(shapes.pad(x, init, cfg))
  acc = [shapes.broadcast_in_dim(i, out_shape, ()) for i in inits]
  for pos in itertools.product(*[range(w) for w in window_dimensions]):
    start = [p * d for p, d in zip(pos, window_dilation)]
    limit = [s + (o - 1) * st + 1 for s, o, st in zip(start, out_shape, window_strides)]
    elems = [shapes.slice(p, start, limit, window_strides) for p in padded]
    acc = core.eval_jaxpr(jaxpr, consts, *acc, *elems)
  return acc


def _reduce_window_jvp(primals, tangents, *, jaxpr, consts, window_dimensions, window_strides,
                       padding, base_dilation, window_dilation):
  params = dict(jaxpr=jaxpr, consts=consts, window_dimensions=window_dimensions,
                window_strides=window_strides, padding=padding, base_dilation=base_dilation,
                window_dilation=window_dilation)
  outs = reduce_window_p.bind(*primals, **params)
  if all(type(t) is ad.Zero for t in tangents):
    return outs, [ad.Zero.from_primal_value(o) for o in outs]
  n = len(primals) // 2
  out_shape = core.get_aval(outs[0]).shape
  if 0 in out_shape:
    return outs, [ad.Zero.from_primal_value(o) for o in outs]

  def fold(*xs):
    return _window_fold(xs[:n], xs[n:], jaxpr, consts, window_dimensions, window_strides,
                        padding, base_dilation, window_dilation, out_shape)
  _, t_outs = ad.jvp_flat(fold, list(primals), list(tangents))
  return outs, t_outs


ad.primitive_jvps[reduce_window_p] = _reduce_window_jvp
