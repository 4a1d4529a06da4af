"""``random_bcoo``: a BCOO with random indices and values (``jax.experimental.sparse``);
the same key gives JAX's array (its key usage, ``choice`` and generator calls)."""
from __future__ import annotations

import math
import operator

import numpy as np

from pyjax._src import dtypes
from pyjax._src.sparse.bcoo_array import BCOO

__all__ = ["random_bcoo"]


def random_bcoo(key, shape, *, dtype=None, indices_dtype=None, nse=0.2, n_batch=0,
                n_dense=0, unique_indices=True, sorted_indices=False, generator=None,
                **kwds):
  """A random BCOO of ``shape``: ``nse`` stored elements per batch (a fraction of the
  sparse size when ``0 < nse < 1``) at indices drawn with ``random.choice`` (without
  replacement when ``unique_indices``), values from ``generator(key, shape=, dtype=)``
  (default ``random.uniform``)."""
  from pyjax import numpy as jnp
  from pyjax import random
  from pyjax._src.api_vmap import vmap
  shape = tuple(map(operator.index, shape))
  n_batch, n_dense = operator.index(n_batch), operator.index(n_dense)
  if n_batch < 0 or n_dense < 0 or n_batch + n_dense > len(shape):
    raise ValueError(f"Invalid n_batch={n_batch}, n_dense={n_dense} for shape={shape}")
  n_sparse = len(shape) - n_batch - n_dense
  batch_shape = shape[:n_batch]
  sparse_shape = shape[n_batch:n_batch + n_sparse]
  dense_shape = shape[n_batch + n_sparse:]
  sparse_size = math.prod(sparse_shape)
  if not 0 <= nse < sparse_size:
    raise ValueError(f"got nse={nse}, expected to be between 0 and {sparse_size}")
  if 0 < nse < 1:
    nse = int(math.ceil(nse * sparse_size))
  nse = operator.index(nse)
  dtype = np.float64 if dtype is None else dtype   # (the generator canonicalizes, and warns)
  indices_dtype = dtypes.canonicalize_dtype(np.int64 if indices_dtype is None
                                            else indices_dtype)
  if sparse_size > np.iinfo(indices_dtype).max:
    raise ValueError(f"indices_dtype={indices_dtype} does not have enough range to generate "
                     f"sparse indices of size {sparse_size}.")
  generator = random.uniform if generator is None else generator

  def one_batch(k):
    if not sparse_shape:
      return jnp.zeros((nse, n_sparse), indices_dtype)
    flat = random.choice(k, sparse_size, shape=(nse,),
                         replace=not unique_indices).astype(indices_dtype)
    return jnp.column_stack(jnp.unravel_index(flat, sparse_shape))

  keys = random.split(key, math.prod(batch_shape) + 1)
  data = generator(keys[0], shape=batch_shape + (nse,) + dense_shape, dtype=dtype, **kwds)
  indices = vmap(one_batch)(keys[1:]).reshape(batch_shape + (nse, n_sparse))
  mat = BCOO((data, indices), shape=shape)
  return mat.sort_indices() if sorted_indices else mat
