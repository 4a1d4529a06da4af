"""NumPy implementations of the BCSR primitives (``pyjax/_src/sparse/bcsr_prims.py``).

Each kernel recovers the row of every stored element from the row pointers (one
``np.searchsorted`` over all batches, O(nse + rows)) and runs the BCOO kernel of
``sparse.py`` on the resulting ``(row, column)`` indices, so memory stays O(nse) (except
``bcsr_todense``, whose output is dense by definition).
"""
from __future__ import annotations

import math

import numpy as np

from pyjax._src.backends.cpu.eager import sparse as _coo
from pyjax._src.backends.cpu.eager.registry import register


def _rows(indices, indptr):
  """Row of each stored element, ``indices``-shaped; elements past ``indptr[-1]`` get
  ``n_rows`` (out of bounds: JAX's padding, dropped by the BCOO kernels).  The row of
  position ``p`` is the number of pointers ``<= p`` minus one (JAX's scatter-add of ones
  at the pointers followed by a cumulative sum)."""
  n_batch = indices.ndim - 1
  bshape = tuple(np.broadcast_shapes(indices.shape[:n_batch], indptr.shape[:n_batch]))
  nse = indices.shape[-1]
  n_ptr = indptr.shape[-1]
  nb = math.prod(bshape)
  ptr = np.broadcast_to(indptr, bshape + (n_ptr,)).reshape(nb, n_ptr).astype(np.int64)
  ptr = np.where(ptr < 0, ptr + nse, ptr)      # a negative pointer counts from the end
  ptr = np.clip(ptr, 0, nse)                   # pointers >= nse never count
  ptr = np.sort(ptr, axis=1)                   # counting is order-free
  off = np.arange(nb, dtype=np.int64)[:, None] * (nse + 1)
  pos = (np.arange(nse, dtype=np.int64)[None, :] + off).ravel()
  rows = np.searchsorted((ptr + off).ravel(), pos, side="right").reshape(nb, nse)
  rows = rows - np.arange(nb, dtype=np.int64)[:, None] * n_ptr - 1
  return rows.reshape(bshape + (nse,)), bshape


def _coo_indices(indices, indptr):
  rows, bshape = _rows(indices, indptr)
  cols = np.broadcast_to(indices, bshape + indices.shape[-1:])
  return np.stack([rows, cols], axis=-1).astype(indices.dtype, copy=False)


@register("bcsr_todense")
def bcsr_todense(data, indices, indptr, *, spinfo):
  return _coo.bcoo_todense(data, _coo_indices(indices, indptr), spinfo=spinfo)


@register("bcsr_extract")
def bcsr_extract(indices, indptr, mat):
  return _coo.bcoo_extract(_coo_indices(indices, indptr), mat, assume_unique=True)


@register("bcsr_fromdense")
def bcsr_fromdense(mat, *, nse, n_batch, n_dense, index_dtype):
  data, coo = _coo.bcoo_fromdense(mat, nse=nse, n_batch=n_batch, n_dense=n_dense,
                                  index_dtype=index_dtype)
  n_rows = mat.shape[n_batch]
  bshape = mat.shape[:n_batch]
  nb = math.prod(bshape)
  rows = coo[..., 0].reshape(nb, nse).astype(np.int64)
  # count the in-bounds rows of each batch (padding rows == n_rows are dropped)
  lin = rows + np.arange(nb, dtype=np.int64)[:, None] * (n_rows + 1)
  counts = np.bincount(lin.ravel(), minlength=nb * (n_rows + 1)).reshape(nb, n_rows + 1)
  indptr = np.zeros((nb, n_rows + 1), np.int64)
  np.cumsum(counts[:, :n_rows], axis=1, out=indptr[:, 1:])
  return [data, coo[..., 1], indptr.reshape(bshape + (n_rows + 1,)).astype(index_dtype)]


@register("bcsr_dot_general")
def bcsr_dot_general(lhs_data, lhs_indices, lhs_indptr, rhs, *, dimension_numbers,
                     preferred_element_type, lhs_spinfo):
  return _coo.bcoo_dot_general(lhs_data, _coo_indices(lhs_indices, lhs_indptr), rhs,
                               dimension_numbers=dimension_numbers, lhs_spinfo=lhs_spinfo,
                               preferred_element_type=preferred_element_type)
