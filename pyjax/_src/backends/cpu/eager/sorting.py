"""Eager NumPy implementations of ``sort`` and ``top_k`` with XLA/JAX ordering:

* sort: NaNs (of either sign) last, -0.0 == 0.0, complex by (real, imag), stable;
  several operands are permuted by a lexicographic sort on the first ``num_keys``.
* top_k: descending IEEE total order (NaN > inf > ... > 0.0 > -0.0 > ... > -NaN), ties
  broken by the lower index.
"""
from __future__ import annotations

import numpy as np

from pyjax._src.backends.cpu.eager.registry import register


def _float_keys(x):
  """Keys (most significant last, as np.lexsort wants) giving JAX's float order."""
  if x.dtype.kind != "f" or x.dtype.itemsize < 4:
    x = x.astype(np.float32)
  nan = np.isnan(x)
  clean = np.where(nan, 0, x) + 0.0    # + 0.0 turns -0.0 into 0.0
  return [clean, nan]


def _sort_keys(x):
  d = x.dtype
  if d.kind == "c":
    # primary real, secondary imag; each with NaN last
    return _float_keys(x.imag) + _float_keys(x.real)
  if d.kind in "biu":
    return [x]
  return _float_keys(x)


@register("sort")
def _sort(*operands, dimension, is_stable=True, num_keys=1):
  x0 = operands[0]
  if x0.size == 0:
    return list(operands)
  if len(operands) == 1:
    d = x0.dtype
    if d.kind in "biuf":
      # NumPy's stable sort already puts NaNs last and keeps -0.0/0.0 in input order
      return [np.sort(x0, axis=dimension, kind="stable")]
  keys = []
  for k in reversed(operands[:num_keys]):
    keys.extend(_sort_keys(k))
  if len(keys) == 1 and keys[0].dtype.kind in "biu":
    perm = np.argsort(keys[0], axis=dimension, kind="stable")
  else:
    perm = np.lexsort(keys, axis=dimension)
  return [np.take_along_axis(o, perm, axis=dimension) for o in operands]


_int_view = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}


def _descending_total_order_key(x):
  """An integer array whose ascending order is ``x``'s descending total order."""
  d = x.dtype
  if d.kind == "b":
    return ~x.astype(np.uint8)
  if d.kind in "iu":
    return ~x
  # floats (incl. bfloat16 / float16 / float8): map IEEE bits to a monotone signed int
  it = np.dtype(_int_view[d.itemsize])
  bits = np.ascontiguousarray(x).view(it)
  mag = np.array(np.iinfo(it).max, it)
  total = np.where(bits < 0, bits ^ mag, bits)
  return ~total


@register("top_k")
def _top_k(operand, *, k, axis):
  if k == 0 or operand.size == 0:
    shape = list(operand.shape)
    shape[axis] = k
    return [np.zeros(shape, operand.dtype), np.zeros(shape, np.int32)]
  key = _descending_total_order_key(operand)
  order = np.argsort(key, axis=axis, kind="stable")
  idx = order if k == operand.shape[axis] else np.take(order, np.arange(k), axis=axis)
  vals = np.take_along_axis(operand, idx, axis=axis)
  return [vals, idx.astype(np.int32)]
