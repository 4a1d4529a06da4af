"""Eager implementation of ``approx_top_k`` (``lax/ann.py``): exact on CPU, as XLA's CPU backend.
"""
from __future__ import annotations

import numpy as np

from pyjax._src.backends.cpu.eager.elementwise import _total_order_key
from pyjax._src.backends.cpu.eager.registry import register


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
