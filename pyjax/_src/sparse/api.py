"""``empty`` and ``eye``: sparse arrays built from their shape (``jax.experimental.sparse``).

Every format JAX accepts works: ``empty`` for ``'bcoo'``, ``'bcsr'``, ``'coo'``, ``'csr'``,
``'csc'``; ``eye`` for ``'bcoo'``, ``'coo'``, ``'csr'``, ``'csc'`` (``'bcsr'`` raises
KeyError, as JAX's).  ``todense`` / ``todense_p``: any sparse array (or a dense one,
passed through) to dense.
"""
from __future__ import annotations

import operator

import numpy as np

from pyjax._src import core, dtypes
from pyjax._src.sparse.bcoo_array import BCOO, bcoo_fromdense
from pyjax._src.sparse.bcsr import BCSR
from pyjax._src.sparse.base import JAXSparse
from pyjax._src.sparse.coo import COO
from pyjax._src.sparse.csr import CSC, CSR

__all__ = ["empty", "eye", "todense", "todense_p"]
_OLDER = {"coo": COO, "csr": CSR, "csc": CSC}
JAXSparse.register(BCOO)
JAXSparse.register(BCSR)

_FORMATS = ("bcsr", "bcoo", "coo", "csr", "csc")


def _format(sparse_format):
  if sparse_format not in _FORMATS:
    raise ValueError(f"sparse_format={sparse_format!r} not recognized; "
                     f"must be one of {list(_FORMATS)}")


def _dtype(dtype):
  return dtypes.canonicalize_dtype(np.float32 if dtype is None else dtype)


def empty(shape, dtype=None, index_dtype="int32", sparse_format="bcoo", *, n_batch=0,
          n_dense=0, nse=0):
  """An all-zero sparse array of ``shape`` with ``nse`` padding slots (zero data at
  out-of-bounds indices)."""
  from pyjax import numpy as jnp
  _format(sparse_format)
  shape = tuple(operator.index(s) for s in shape)
  if sparse_format in _OLDER:
    return _OLDER[sparse_format]._empty(shape, dtype=_dtype(dtype), index_dtype=index_dtype)
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
  M = N if M is None else M
  N, M, k = (core.concrete_or_error(operator.index, v) for v in (N, M, k))
  if sparse_format in _OLDER:
    return _OLDER[sparse_format]._eye(N, M, k, dtype=_dtype(dtype), index_dtype=index_dtype)
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


# --- todense --------------------------------------------------------------------------------
todense_p = core.Primitive("todense")


def todense(arr):
  """The dense array of sparse ``arr`` (any format); a dense ``arr`` is returned as is."""
  from pyjax._src import tree_util
  bufs, tree = tree_util.tree_flatten(arr)
  return todense_p.bind(*bufs, tree=tree)


def _todense_impl(*bufs, tree):
  from pyjax._src import tree_util
  from pyjax._src.sparse.base import JAXSparse
  arr = tree_util.tree_unflatten(tree, bufs)
  return arr.todense() if isinstance(arr, JAXSparse) else arr


def _todense_abstract(*avals, tree):
  from pyjax._src import tree_util
  from pyjax._src.avals import ShapedArray
  arr = tree_util.tree_unflatten(tree, avals)
  if isinstance(arr, ShapedArray):
    return arr
  return ShapedArray(tuple(arr.shape), arr.data.dtype, arr.data.weak_type)


def _todense_jvp(primals, tangents, *, tree):
  from pyjax._src.interpreters import ad
  out = todense_p.bind(*primals, tree=tree)
  if type(tangents[0]) is ad.Zero:
    return out, ad.Zero.from_primal_value(out)
  return out, todense_p.bind(ad.instantiate_zeros(tangents[0]), *primals[1:], tree=tree)


def _todense_transpose(ct, *bufs, tree):
  from pyjax._src import tree_util
  from pyjax._src.interpreters import ad
  from pyjax._src.sparse.coo import gather_at
  from pyjax._src.sparse.csr import csr_to_rows
  if any(ad.is_undefined_primal(b) for b in bufs[1:]):
    raise ValueError("Cannot transpose with respect to sparse indices")
  standin = object()
  obj = tree_util.tree_unflatten(tree, [standin] * len(bufs))
  rest = [None] * (len(bufs) - 1)
  if obj is standin:
    return [ct]
  if type(ct) is ad.Zero:
    return [ad.Zero(bufs[0].aval)] + rest
  if isinstance(obj, BCOO):
    from pyjax._src.sparse import bcoo
    return [bcoo.bcoo_extract_p.bind(bufs[1], ct, assume_unique=True)] + rest
  if isinstance(obj, BCSR):
    from pyjax._src.sparse.bcsr import bcsr_extract
    return [bcsr_extract(bufs[1], bufs[2], ct)] + rest
  if isinstance(obj, COO):
    return [gather_at(ct, bufs[1], bufs[2])] + rest
  if isinstance(obj, CSR):
    return [ct[csr_to_rows(bufs[1], bufs[2]), bufs[1]]] + rest
  raise NotImplementedError(f"todense_transpose for {type(obj)}")


def _todense_batch(args, dims, *, tree):
  from pyjax._src.api_vmap import vmap
  return vmap(lambda *b: _todense_impl(*b, tree=tree), in_axes=tuple(dims))(*args), 0


def _register_todense():
  from pyjax._src.interpreters import ad, batching
  todense_p.def_impl(_todense_impl)
  todense_p.def_abstract_eval(_todense_abstract)
  ad.primitive_jvps[todense_p] = _todense_jvp
  ad.primitive_transposes[todense_p] = _todense_transpose
  batching.primitive_batchers[todense_p] = _todense_batch


_register_todense()
