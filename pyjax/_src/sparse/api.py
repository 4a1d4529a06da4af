"""``empty`` and ``eye``: sparse arrays built from their shape (``jax.experimental.sparse``).

Differs from JAX: only the ``'bcoo'`` and ``'bcsr'`` formats exist (``empty``) and
``'bcoo'`` (``eye``); JAX's older ``'coo'``, ``'csr'`` and ``'csc'`` raise
NotImplementedError.
"""
from __future__ import annotations

import operator

import numpy as np

from pyjax._src import core, dtypes
from pyjax._src.sparse.bcoo_array import BCOO, bcoo_fromdense
from pyjax._src.sparse.bcsr import BCSR

__all__ = ["empty", "eye"]

_FORMATS = ("bcsr", "bcoo", "coo", "csr", "csc")


def _format(sparse_format, allowed):
  if sparse_format not in _FORMATS:
    raise ValueError(f"sparse_format={sparse_format!r} not recognized; "
                     f"must be one of {list(_FORMATS)}")
  if sparse_format not in allowed:
    raise NotImplementedError(f"sparse_format={sparse_format!r} is not implemented in pyjax "
                              f"(available: {list(allowed)})")


def _dtype(dtype):
  return dtypes.canonicalize_dtype(np.float32 if dtype is None else dtype)


def empty(shape, dtype=None, index_dtype="int32", sparse_format="bcoo", *, n_batch=0,
          n_dense=0, nse=0):
  """An all-zero sparse array of ``shape`` with ``nse`` padding slots (zero data at
  out-of-bounds indices)."""
  from pyjax import numpy as jnp
  _format(sparse_format, ("bcoo", "bcsr"))
  shape = tuple(operator.index(s) for s in shape)
  n_sparse = len(shape) - n_dense - n_batch
  if n_sparse < 0 or n_dense < 0 or n_batch < 0 or nse < 0:
    raise ValueError(f"Invalid inputs: shape={shape}, n_dense={n_dense}, n_batch={n_batch}, "
                     f"nse={nse}")
  batch, sparse = shape[:n_batch], shape[n_batch:n_batch + n_sparse]
  dense = shape[n_batch + n_sparse:]
  data = jnp.zeros(batch + (nse,) + dense, _dtype(dtype))
  if sparse_format == "bcsr":
    if n_sparse != 2:
      raise ValueError("BCSR sparse.empty: must have 2 sparse dimensions.")
    indices = jnp.full(batch + (nse,), sparse[1], index_dtype)
    indptr = jnp.zeros(batch + (sparse[0] + 1,), index_dtype)
    return BCSR((data, indices, indptr), shape=shape)
  indices = jnp.broadcast_to(jnp.asarray(np.array(sparse, dtype=index_dtype)),
                             batch + (nse, n_sparse))
  return BCOO((data, indices), shape=shape, indices_sorted=True, unique_indices=True)


def eye(N, M=None, k=0, dtype=None, index_dtype="int32", sparse_format="bcoo", *,
        n_batch=0, n_dense=0):
  """A 2-D sparse matrix with ones on the ``k``-th diagonal."""
  from pyjax import numpy as jnp
  if sparse_format not in ("bcoo", "coo", "csr", "csc"):
    raise KeyError(sparse_format)
  _format(sparse_format, ("bcoo",))
  M = N if M is None else M
  N, M, k = (core.concrete_or_error(operator.index, v) for v in (N, M, k))
  if 2 - n_batch - n_dense < 0 or n_dense < 0 or n_batch < 0:
    raise ValueError(f"Invalid inputs: shape={(N, M)}, n_dense={n_dense}, n_batch={n_batch}")
  size = min(N, M - k) if k > 0 else min(N + k, M)
  if size <= 0:
    return empty((N, M), dtype=dtype, index_dtype=index_dtype, n_batch=n_batch,
                 n_dense=n_dense)
  if n_batch or n_dense:   # these layouts store the zeros explicitly
    return bcoo_fromdense(jnp.eye(N, M, k, dtype=_dtype(dtype)), n_batch=n_batch,
                          n_dense=n_dense, index_dtype=index_dtype)
  i = np.arange(size)
  idx = np.stack([i + max(-k, 0), i + max(k, 0)], axis=1).astype(index_dtype)
  return BCOO((jnp.ones(size, _dtype(dtype)), jnp.asarray(idx)), shape=(N, M),
              indices_sorted=True, unique_indices=True)
