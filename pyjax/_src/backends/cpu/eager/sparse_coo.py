"""NumPy implementations of the older COO/CSR sparse primitives (``coo_*``, ``csr_*``;
``pyjax/_src/sparse/coo.py`` and ``csr.py``).

Index semantics are JAX's (its implementations index with ``jnp``): where a stored
element *reads* a dense operand (``v[col]``), a negative index counts from the end and
the result is clamped into range; where it *writes* the output (``y.at[row].add``), a
negative index counts from the end and one still out of range is dropped.

Products accumulate in the order the elements are stored, one ``y[row] += data * v[col]``
after the other in the output dtype (SciPy's COO kernels, or ``np.add.at`` for the dtypes
SciPy lacks); the compiled tier's C kernels (``compiler/sparse_c.py``) sum in the same
order, so both tiers give the same bits.  Memory is O(nse + output).
"""
from __future__ import annotations

import numpy as np

from pyjax._src.backends.cpu.eager.registry import register

try:
  import scipy.sparse as _sp
except ImportError:  # pragma: no cover - scipy is a dependency
  _sp = None

_SCIPY_KINDS = "fc"


def gather_index(idx, n):
  """Read positions: negatives count from the end, then clamp into [0, n)."""
  idx = np.asarray(idx).astype(np.int64)
  idx = np.where(idx < 0, idx + n, idx)
  return np.clip(idx, 0, max(n - 1, 0))


def scatter_index(idx, n):
  """Write positions and their validity: negatives count from the end, out of range
  (after that) dropped."""
  idx = np.asarray(idx).astype(np.int64)
  idx = np.where(idx < 0, idx + n, idx)
  return idx, (idx >= 0) & (idx < n)


def csr_rows(indices, indptr):
  """The row of each stored element of a CSR matrix (JAX's rule: a cumulative count of the
  ``indptr`` entries at or before each position, minus one)."""
  nse = indices.shape[0]
  ptr = np.asarray(indptr).astype(np.int64)
  ptr = np.where(ptr < 0, ptr + nse, ptr)
  hits = np.bincount(ptr[(ptr >= 0) & (ptr < nse)], minlength=nse)[:nse]
  return np.cumsum(hits) - 1


def coo_product(data, row, col, b, shape, transpose):
  """``A @ b`` (or ``A.T @ b``) for the COO matrix (data, row, col) of ``shape``; ``b``
  1-D or 2-D.  Stored elements are summed in storage order."""
  if transpose:
    row, col = col, row
    shape = shape[::-1]
  out_n, in_n = shape
  r, ok = scatter_index(row, out_n)
  c = gather_index(col, in_n)
  if not ok.all():
    data, r, c = data[ok], r[ok], c[ok]
  out_shape = (out_n,) + b.shape[1:]
  dt = np.result_type(data.dtype, b.dtype)
  if (_sp is not None and dt.kind in _SCIPY_KINDS and data.size and b.size and in_n):
    a = _sp.coo_matrix((data.astype(dt, copy=False), (r, c)), shape=(out_n, in_n))
    out = np.asarray(a @ b.astype(dt, copy=False))
    return out.reshape(out_shape)
  out = np.zeros(out_shape, dt)
  if data.size and in_n:
    vals = data.reshape((-1,) + (1,) * (b.ndim - 1)) * b[c]
    np.add.at(out, r, vals)
  return out


@register("coo_todense")
def coo_todense(data, row, col, *, spinfo):
  n, m = spinfo.shape
  r, okr = scatter_index(row, n)
  c, okc = scatter_index(col, m)
  ok = okr & okc
  out = np.zeros((n * m,), data.dtype)
  np.add.at(out, (r * m + c)[ok], data[ok])
  return out.reshape(n, m)


def _nonzero(mat, nse):
  r, c = np.nonzero(mat)
  nnz = min(r.size, nse)
  row = np.zeros(nse, np.int64)
  col = np.zeros(nse, np.int64)
  row[:nnz], col[:nnz] = r[:nnz], c[:nnz]
  data = np.zeros(nse, mat.dtype)
  data[:nnz] = mat[r[:nnz], c[:nnz]]
  return data, row, col, nnz


@register("coo_fromdense")
def coo_fromdense(mat, *, nse, index_dtype):
  data, row, col, _ = _nonzero(mat, nse)
  return [data, row.astype(index_dtype), col.astype(index_dtype)]


@register("coo_matvec")
def coo_matvec(data, row, col, v, *, spinfo, transpose):
  return coo_product(data, row, col, v, tuple(spinfo.shape), transpose)


@register("coo_matmat")
def coo_matmat(data, row, col, B, *, spinfo, transpose):
  return coo_product(data, row, col, B, tuple(spinfo.shape), transpose)


@register("csr_todense")
def csr_todense(data, indices, indptr, *, shape):
  from pyjax._src.sparse.coo import COOInfo
  return coo_todense(data, csr_rows(indices, indptr), indices, spinfo=COOInfo(shape))


@register("csr_fromdense")
def csr_fromdense(mat, *, nse, index_dtype):
  data, row, col, nnz = _nonzero(mat, nse)
  counts = np.bincount(row[:nnz], minlength=mat.shape[0])
  indptr = np.zeros(mat.shape[0] + 1, np.int64)
  indptr[1:] = np.cumsum(counts)
  return [data, col.astype(index_dtype), indptr.astype(index_dtype)]


@register("csr_matvec")
def csr_matvec(data, indices, indptr, v, *, shape, transpose):
  return coo_product(data, csr_rows(indices, indptr), indices, v, tuple(shape), transpose)


@register("csr_matmat")
def csr_matmat(data, indices, indptr, B, *, shape, transpose):
  return coo_product(data, csr_rows(indices, indptr), indices, B, tuple(shape), transpose)


@register("spsolve")
def spsolve(data, indices, indptr, b, *, tol, reorder):
  """SciPy's sparse direct solve of the square CSR system (JAX's CPU path)."""
  import scipy.sparse.linalg as _spla
  n = b.shape[0]
  a = _sp.csr_matrix((data, indices.astype(np.int64), indptr.astype(np.int64)), shape=(n, n))
  return np.asarray(_spla.spsolve(a, b)).astype(b.dtype)
