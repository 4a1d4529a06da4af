"""``bcoo_conv_general_dilated``: ``lax.conv_general_dilated`` for the 1-D case JAX's sparse
module supports (one batch and one feature: operands of shape ``(1, 1, n)``; unit strides
and dilations; padding), with either operand BCOO or dense.

The result is a BCOO of shape ``(1, 1, out)`` with two batch dimensions and one stored
element per pair of stored operand elements (``nse = lhs.nse * rhs.nse``), as JAX lays it
out: the pair (lhs element at ``p``, kernel element at ``q``) lands at ``p - q + pad_low``
(cross-correlation); pairs landing before 0 become zero data at index 0, pairs past the end
stay out of range (padding).
"""
from __future__ import annotations

from pyjax._src.sparse.bcoo_array import BCOO

__all__ = ["bcoo_conv_general_dilated"]


def _as_1d(mat, index_dtype):
  """(data[n], indices[n, 1], length) of a ``(1, 1, length)`` BCOO or dense operand."""
  from pyjax import lax
  from pyjax import numpy as jnp
  if isinstance(mat, BCOO):
    mat = mat.update_layout(n_batch=2, n_dense=0)
    data = lax.squeeze(mat.data, (0, 1))
    idx = lax.squeeze(mat.indices, (0, 1))
    return jnp.where(idx[:, 0] < mat.shape[-1], data, 0), idx, mat.shape[-1]
  if hasattr(mat, "shape") and hasattr(mat, "dtype"):
    data = lax.squeeze(jnp.asarray(mat), (0, 1))
    return data, lax.broadcasted_iota(index_dtype, (data.shape[0], 1), 0), data.shape[0]
  raise TypeError(f"bcoo_conv_general_dilated: input of type {type(mat)} not recognized.")


def bcoo_conv_general_dilated(lhs, rhs, *, window_strides, padding, lhs_dilation=None,
                              rhs_dilation=None, dimension_numbers=None,
                              feature_group_count=1, batch_group_count=1, precision=None,
                              preferred_element_type=None, out_sharding=None):
  """Sparse ``lax.conv_general_dilated`` for 1-D signals of shape ``(1, 1, n)`` (JAX's
  supported case; others raise its NotImplementedError messages)."""
  from pyjax import lax
  from pyjax import numpy as jnp
  from pyjax._src.api import ShapeDtypeStruct, make_jaxpr

  def conv(x, y):
    return lax.conv_general_dilated(
        x, y, window_strides=window_strides, padding=padding, lhs_dilation=lhs_dilation,
        rhs_dilation=rhs_dilation, dimension_numbers=dimension_numbers,
        feature_group_count=feature_group_count, batch_group_count=batch_group_count,
        precision=precision, preferred_element_type=preferred_element_type)
  closed = make_jaxpr(conv)(ShapeDtypeStruct(lhs.shape, lhs.dtype),
                            ShapeDtypeStruct(rhs.shape, rhs.dtype))
  p = closed.jaxpr.eqns[-1].params
  nd = len(lhs.shape) - 2
  if tuple(p["lhs_dilation"]) != (1,) * nd:
    raise NotImplementedError("bcoo convolution with lhs_dilation.")
  if tuple(p["rhs_dilation"]) != (1,) * nd:
    raise NotImplementedError("bcoo convolution with lhs_dilation.")
  if tuple(p["window_strides"]) != (1,) * nd:
    raise NotImplementedError("bcoo convolution with non-unit window_strides.")
  if p["batch_group_count"] != 1 or p["feature_group_count"] != 1:
    raise NotImplementedError("bcoo convolution with non-unit group counts.")
  if tuple(lhs.shape[:2]) != (1, 1) or tuple(rhs.shape[:2]) != (1, 1) or nd != 1:
    raise NotImplementedError("bcoo convolution with leading dimensions other than (1, 1)")
  index_dtype = next((m.indices.dtype for m in (lhs, rhs) if isinstance(m, BCOO)),
                     jnp.dtype("int32"))
  (lo, hi), = p["padding"]
  ld, li, ln = _as_1d(lhs, index_dtype)
  rd, ri, rn = _as_1d(rhs, index_dtype)
  data = (ld[:, None] * rd[None, :]).reshape(-1)
  pos = (li[:, 0][:, None] + (int(lo) - ri[:, 0])[None, :]).reshape(-1).astype(index_dtype)
  before = pos < 0
  pos = jnp.where(before, 0, pos)
  data = jnp.where(before, 0, data)
  size = max(0, ln + int(lo) + int(hi) - rn + 1)
  return BCOO((data[None, None], pos[None, None, :, None]), shape=(1, 1, size))
