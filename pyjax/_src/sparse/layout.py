"""``bcoo_update_layout``: move dimensions between the batch, sparse and dense groups of a
BCOO (``BCOO.update_layout``), with JAX's efficiency errors and warnings."""
from __future__ import annotations

import math
import operator
import warnings

import numpy as np

from pyjax._src.sparse.bcoo_array import BCOO
from pyjax._src.sparse.util import SparseEfficiencyError, SparseEfficiencyWarning

__all__ = ["bcoo_update_layout"]


def _full_batch(data, indices, nb):
  from pyjax import numpy as jnp
  bshape = tuple(max(a, b) for a, b in zip(data.shape[:nb], indices.shape[:nb]))
  return (jnp.broadcast_to(data, bshape + data.shape[nb:]),
          jnp.broadcast_to(indices, bshape + indices.shape[nb:]), bshape)


def _grid(sizes, dtype):
  """All positions of ``sizes`` in row-major order, as a (prod, len(sizes)) array."""
  if not sizes:
    return np.zeros((1, 0), dtype)
  return np.stack(np.unravel_index(np.arange(math.prod(sizes)), sizes), axis=1).astype(dtype)


def bcoo_update_layout(mat, *, n_batch=None, n_dense=None, on_inefficient="error"):
  """The same array with ``n_batch`` / ``n_dense`` changed.  Making sparse dimensions
  (of size > 1) batch or dense stores explicit zeros: SparseEfficiencyError, or a
  SparseEfficiencyWarning with ``on_inefficient='warn'`` (None: silent)."""
  from pyjax import numpy as jnp
  n_batch = mat.n_batch if n_batch is None else operator.index(n_batch)
  n_dense = mat.n_dense if n_dense is None else operator.index(n_dense)
  if (n_batch, n_dense) == (mat.n_batch, mat.n_dense):
    return mat
  if on_inefficient not in ("error", "warn", None):
    raise ValueError(f"on_inefficent={on_inefficient!r}; expected one of "
                     "['error', 'warn', None].")
  if n_batch < 0:
    raise ValueError(f"n_batch must be non-negative; got {n_batch}")
  if n_dense < 0:
    raise ValueError(f"n_dense must be non-negative; got {n_dense}")
  if mat.ndim - n_batch - n_dense < 0:
    raise ValueError(f"sum of n_batch={n_batch} and n_dense={n_dense} cannot be larger than "
                     f"mat.ndim={mat.ndim}.")

  def inefficient(msg):
    if on_inefficient == "error":
      raise SparseEfficiencyError(msg + " To disable this error, set the on_inefficient "
                                  "argument of bcoo_update_layout to 'warn' or None.")
    if on_inefficient == "warn":
      warnings.warn(msg + " To disable this warning, set the on_inefficient argument of "
                    "bcoo_update_layout to None.", SparseEfficiencyWarning, stacklevel=3)

  shape = mat.shape
  if n_dense > mat.n_dense and any(d > 1 for d in shape[-n_dense:mat.ndim - mat.n_dense]):
    inefficient(f"For matrix of shape {shape}, increasing n_dense from {mat.n_dense} to "
                f"{n_dense} results in inefficient storage.")
  if n_batch > mat.n_batch and any(d > 1 for d in shape[mat.n_batch:n_batch]):
    inefficient(f"For matrix of shape {shape}, increasing n_batch from {mat.n_batch} to "
                f"{n_batch} results in inefficient storage.")
  data, indices = mat.data, mat.indices
  nb, nd = mat.n_batch, mat.n_dense
  dt = indices.dtype
  if n_dense < nd:      # leading dense dims become sparse: one entry per dense position
    k = nd - n_dense
    moved = tuple(data.shape[nb + 1:nb + 1 + k])
    p = math.prod(moved)
    nse = indices.shape[-2]
    data = data.reshape(data.shape[:nb] + (nse * p,) + data.shape[nb + 1 + k:])
    ib = tuple(indices.shape[:nb])
    old = jnp.broadcast_to(indices[..., :, None, :], ib + (nse, p, indices.shape[-1]))
    new = jnp.broadcast_to(jnp.asarray(_grid(moved, dt)), ib + (nse, p, k))
    indices = jnp.concatenate([old, new], axis=-1).reshape(ib + (nse * p, -1))
    nd = n_dense
  if n_batch < nb:      # trailing batch dims become sparse
    k = nb - n_batch
    data, indices, bshape = _full_batch(data, indices, nb)
    nse = indices.shape[-2]
    moved = bshape[n_batch:]
    pos = jnp.broadcast_to(jnp.asarray(_grid(moved, dt)).reshape(moved + (1, k)),
                           bshape + (nse, k))
    indices = jnp.concatenate([pos, indices], axis=-1)
    m = math.prod(moved) * nse
    data = data.reshape(bshape[:n_batch] + (m,) + data.shape[nb + 1:])
    indices = indices.reshape(bshape[:n_batch] + (m, indices.shape[-1]))
    nb = n_batch
  if n_dense > nd:      # trailing sparse dims become dense (entries scattered in place)
    k = n_dense - nd
    data, indices, bshape = _full_batch(data, indices, nb)
    nse = indices.shape[-2]
    nbt = math.prod(bshape)
    moved = tuple(shape[mat.ndim - n_dense:mat.ndim - nd])
    d = data.reshape((nbt, nse) + data.shape[nb + 1:])
    i = indices.reshape(nbt, nse, indices.shape[-1])
    out = jnp.zeros((nbt, nse) + moved + data.shape[nb + 1:], data.dtype)
    where = (np.arange(nbt)[:, None], np.arange(nse)[None, :]) + tuple(
        i[..., i.shape[-1] - k + j] for j in range(k))
    data = out.at[where].set(d, mode="drop").reshape(bshape + (nse,) + out.shape[2:])
    indices = indices[..., :indices.shape[-1] - k]
    nd = n_dense
  if n_batch > nb:      # leading sparse dims become batch dims
    k = n_batch - nb
    data, indices, bshape = _full_batch(data, indices, nb)
    nse = indices.shape[-2]
    nbt = math.prod(bshape)
    moved = tuple(shape[nb:n_batch])
    d = data.reshape((nbt, nse) + data.shape[nb + 1:])
    i = indices.reshape(nbt, nse, indices.shape[-1])
    out = jnp.zeros((nbt,) + moved + (nse,) + data.shape[nb + 1:], data.dtype)
    where = ((np.arange(nbt)[:, None],) + tuple(i[..., j] for j in range(k))
             + (np.arange(nse)[None, :],))
    data = out.at[where].set(d, mode="drop").reshape(bshape + moved + (nse,)
                                                      + data.shape[nb + 1:])
    rest = indices[..., k:]
    indices = jnp.broadcast_to(rest.reshape(bshape + (1,) * k + rest.shape[nb:]),
                               bshape + moved + rest.shape[nb:])
  return BCOO((data, indices), shape=shape)

