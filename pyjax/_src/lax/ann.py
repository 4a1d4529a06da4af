"""Approximate top-k: ``approx_max_k`` / ``approx_min_k`` (the ``approx_top_k``
primitive).

On CPU XLA computes these exactly (a sort and a slice), and so does pyjax: values in
descending (max) or ascending (min) IEEE total order -- NaN is the largest value,
``+0 > -0`` -- with ties broken by the lower index.  With ``aggregate_to_topk=False``
the reduction dimension keeps XLA's approximate output size (the formula XLA uses to
size the TPU algorithm's output) and holds the best candidates in order.  Differs from
JAX: with ``aggregate_to_topk=False`` NaNs are ordered by total order (XLA's CPU
fallback places them inconsistently).
"""
from __future__ import annotations

import numpy as np

from pyjax._src import core, dtypes, shape_rules
from pyjax._src.avals import ShapedArray
from pyjax._src.interpreters import ad
from pyjax._src.interpreters import batching

__all__ = ["approx_max_k", "approx_min_k", "approx_top_k_p"]

reduction_output_size = shape_rules.approx_top_k_output_size


approx_top_k_p = core.Primitive("approx_top_k")
approx_top_k_p.multiple_results = True


@approx_top_k_p.def_abstract_eval
def _approx_top_k_abstract(x, *, k, reduction_dimension, recall_target, is_max_k,
                           reduction_input_size_override, aggregate_to_topk):
  if k <= 0:
    raise ValueError(f"k must be positive, got {k}")
  if not x.shape:
    raise TypeError(f"approx_top_k operand must have >= 1 dimension, got {x.shape}")
  dims = list(x.shape)
  if dims[reduction_dimension] < k:
    raise ValueError(f"k must be smaller than the size of reduction_dim "
                     f"{dims[reduction_dimension]}, got {k}")
  if not dtypes.is_float(x.dtype):
    raise ValueError("operand must be a floating type")
  dims[reduction_dimension] = reduction_output_size(
      dims[reduction_dimension], len(dims), k, recall_target, aggregate_to_topk,
      reduction_input_size_override)[0]
  return [ShapedArray(tuple(dims), x.dtype, x.weak_type),
          ShapedArray(tuple(dims), np.dtype(np.int32), False)]


def _bind(operand, k, reduction_dimension, recall_target, is_max_k,
          reduction_input_size_override, aggregate_to_topk):
  return approx_top_k_p.bind(
      operand, k=k, reduction_dimension=reduction_dimension, recall_target=recall_target,
      is_max_k=is_max_k, reduction_input_size_override=reduction_input_size_override,
      aggregate_to_topk=aggregate_to_topk)


def approx_max_k(operand, k, reduction_dimension=-1, recall_target=0.95,
                 reduction_input_size_override=-1, aggregate_to_topk=True):
  """The ``k`` largest values along ``reduction_dimension`` and their int32 indices, as a
  list ``[values, indices]``.  Exact on CPU (see the module docstring for the order)."""
  return _bind(operand, k, reduction_dimension, recall_target, True,
               reduction_input_size_override, aggregate_to_topk)


def approx_min_k(operand, k, reduction_dimension=-1, recall_target=0.95,
                 reduction_input_size_override=-1, aggregate_to_topk=True):
  """The ``k`` smallest values along ``reduction_dimension`` and their int32 indices, as
  a list ``[values, indices]``.  Exact on CPU (see the module docstring for the
  order)."""
  return _bind(operand, k, reduction_dimension, recall_target, False,
               reduction_input_size_override, aggregate_to_topk)


def _approx_top_k_jvp(primals, tangents, *, k, reduction_dimension, recall_target,
                      is_max_k, reduction_input_size_override, aggregate_to_topk):
  x, = primals
  t, = tangents
  vals, idx = _bind(x, k, reduction_dimension, recall_target, is_max_k,
                    reduction_input_size_override, aggregate_to_topk)
  if type(t) is ad.Zero:
    t_out = ad.Zero.from_primal_value(vals)
  else:
    from pyjax._src.numpy import indexing   # the library jnp.take_along_axis (as JAX)
    axis = reduction_dimension % len(core.get_aval(idx).shape)
    t_out = indexing.take_along_axis(t, idx, axis=axis)
  return [vals, idx], [t_out, ad.Zero.from_primal_value(idx)]


def _approx_top_k_batch(args, dims, *, reduction_dimension, **params):
  x, = args
  d, = dims
  nd = len(core.get_aval(x).shape)
  dim_map = [i for i in range(nd) if i != d]
  outs = approx_top_k_p.bind(x, reduction_dimension=dim_map[reduction_dimension], **params)
  return outs, [d, d]


ad.primitive_jvps[approx_top_k_p] = _approx_top_k_jvp
batching.primitive_batchers[approx_top_k_p] = _approx_top_k_batch
