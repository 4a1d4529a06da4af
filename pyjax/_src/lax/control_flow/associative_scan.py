"""``lax.associative_scan``: a parallel prefix scan with an associative binary function.

Not a primitive (as in JAX): Blelloch's recursive odd/even scheme written with lax slices,
pads and concatenations, so it traces, differentiates and batches like any lax code and
prints the same jaxpr as JAX.  Combine adjacent pairs (``fn(x[0::2], x[1::2])``), scan
that half-length sequence recursively (the odd outputs), then combine each odd output
with the next even input (the even outputs) and interleave the two.
"""
from __future__ import annotations

import operator

import numpy as np

from pyjax._src import core, dtypes
from pyjax._src import tree_util
from pyjax._src.lax import elementwise as ew
from pyjax._src.lax import shapes

__all__ = ["associative_scan"]


def _canonicalize_axis(axis, ndim):
  axis = operator.index(axis)
  if not -ndim <= axis < ndim:
    raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
  return axis + ndim if axis < 0 else axis


def _interleave(a, b, axis):
  """Interleave ``a`` and ``b`` (``len(a) == len(b)`` or ``len(b) + 1``) along ``axis``."""
  sa, sb = core.get_aval(a).shape, core.get_aval(b).shape
  nd = len(sa)
  equal = sa[axis] == sb[axis]
  a_pad = [(0, 0, 0)] * nd
  b_pad = [(0, 0, 0)] * nd
  a_pad[axis] = (0, 1 if equal else 0, 1)
  b_pad[axis] = (1, 0 if equal else 1, 1)
  dt = core.get_aval(a).dtype
  zero = np.array(0, dt)
  op = ew.bitwise_or if dt == dtypes.bool_ else ew.add
  return op(shapes.pad(a, zero, a_pad), shapes.pad(b, zero, b_pad))


def associative_scan(fn, elems, reverse=False, axis=0):
  """Inclusive scan of ``elems`` (a pytree of arrays sharing the ``axis`` length) with the
  associative ``fn(a, b)``: ``[x0, fn(x0, x1), fn(fn(x0, x1), x2), ...]`` (from the end
  when ``reverse``).  ``fn`` must act elementwise along ``axis``."""
  if not callable(fn):
    raise TypeError("lax.associative_scan: fn argument should be callable.")
  elems_flat, tree = tree_util.tree_flatten(elems)
  if reverse:
    elems_flat = [shapes.rev(e, [_canonicalize_axis(axis, len(core.get_aval(e).shape))])
                  for e in elems_flat]

  def combine(a_flat, b_flat):
    a = tree.unflatten(a_flat)
    b = tree.unflatten(b_flat)
    c_flat, _ = tree_util.tree_flatten(fn(a, b))
    return c_flat

  axis = _canonicalize_axis(axis, len(core.get_aval(elems_flat[0]).shape))
  num_elems = int(core.get_aval(elems_flat[0]).shape[axis])
  if not all(int(core.get_aval(e).shape[axis]) == num_elems for e in elems_flat[1:]):
    raise ValueError("Array inputs to associative_scan must have the same first dimension. "
                     f"(saw: {[core.get_aval(e).shape for e in elems_flat]})")

  def _scan(elems):
    n = core.get_aval(elems[0]).shape[axis]
    if n < 2:
      return elems
    reduced = combine(
        [shapes.slice_in_dim(e, 0, -1, stride=2, axis=axis) for e in elems],
        [shapes.slice_in_dim(e, 1, None, stride=2, axis=axis) for e in elems])
    odd = _scan(reduced)
    if n % 2 == 0:
      even = combine([shapes.slice_in_dim(e, 0, -1, axis=axis) for e in odd],
                     [shapes.slice_in_dim(e, 2, None, stride=2, axis=axis) for e in elems])
    else:
      even = combine(odd, [shapes.slice_in_dim(e, 2, None, stride=2, axis=axis)
                           for e in elems])
    even = [shapes.concatenate([shapes.slice_in_dim(e, 0, 1, axis=axis), r], axis)
            for e, r in zip(elems, even)]
    return [_interleave(e, o, axis) for e, o in zip(even, odd)]

  scans = _scan(elems_flat)
  if reverse:
    scans = [shapes.rev(s, [axis]) for s in scans]
  return tree.unflatten(scans)
