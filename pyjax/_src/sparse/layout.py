"""``bcoo_update_layout``: move dimensions between the batch, sparse and dense groups of a
BCOO (``BCOO.update_layout``), with JAX's efficiency errors and warnings."""
from __future__ import annotations

import math
import operator
import warnings

import numpy as np

from pyjax._src.sparse.bcoo_array import BCOO
from pyjax._src.sparse.util import SparseEfficiencyError, SparseEfficiencyWarning

__all__ = ["bcoo_update_layout", "bcoo_concatenate", "bcoo_multiply_sparse"]


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



def _set_nse(mat, nse):
  """``mat`` with ``nse`` slots: truncated, or padded with zero data at out-of-bounds
  indices."""
  from pyjax import numpy as jnp
  nb = mat.n_batch
  if nse == mat.nse:
    return mat
  if nse < mat.nse:
    return BCOO((mat.data[(slice(None),) * nb + (slice(nse),)], mat.indices[..., :nse, :]),
                shape=mat.shape, indices_sorted=mat.indices_sorted,
                unique_indices=mat.unique_indices)
  extra = nse - mat.nse
  pad_d = jnp.zeros(mat.data.shape[:nb] + (extra,) + mat.data.shape[nb + 1:], mat.dtype)
  fill = np.array(mat.shape[nb:nb + mat.n_sparse], mat.indices.dtype)
  pad_i = jnp.broadcast_to(jnp.asarray(fill), mat.indices.shape[:nb] + (extra, mat.n_sparse))
  return BCOO((jnp.concatenate([mat.data, pad_d], axis=nb),
               jnp.concatenate([mat.indices, pad_i], axis=nb)), shape=mat.shape,
              indices_sorted=mat.indices_sorted, unique_indices=mat.unique_indices)


def bcoo_concatenate(operands, *, dimension):
  """``lax.concatenate`` of BCOO arrays along a batch dimension (slots padded to the
  largest ``nse``) or a sparse one (stored elements appended, indices shifted); dense
  dimensions raise NotImplementedError (as JAX)."""
  from pyjax import numpy as jnp
  operands = list(operands)
  if not operands or not all(isinstance(op, BCOO) for op in operands):
    raise ValueError("bcoo_concatenate: expected operands to be a sequence of BCOO arrays. "
                     f"Got {operands}")
  nd = operands[0].ndim
  dimension = operator.index(dimension)
  if not 0 <= dimension < nd:
    raise ValueError(f"concatenate dimension out of bounds: dimension {dimension} for "
                     f"shapes {', '.join(str(op.shape) for op in operands)}")
  if any(op.ndim != nd or op.shape[:dimension] + op.shape[dimension + 1:]
         != operands[0].shape[:dimension] + operands[0].shape[dimension + 1:]
         for op in operands):
    raise TypeError("Cannot concatenate arrays with shapes that differ in dimensions other "
                    "than the one being concatenated: concatenating along dimension "
                    f"{dimension} for shapes {', '.join(str(op.shape) for op in operands)}.")
  if len({op.n_dense for op in operands}) > 1:
    raise ValueError("bcoo_concatenate requires inputs to have matching nse dimensions.")
  n_batches = {op.n_batch for op in operands}
  if len(n_batches) != 1 and max(n_batches) == 1:   # align x[None] with batched operands
    if all(op.shape[0] == 1 for op in operands if op.n_batch == 0):
      operands = [bcoo_update_layout(op, n_batch=1) if op.n_batch == 0 else op
                  for op in operands]
    elif all(op.shape[0] == 1 for op in operands if op.n_batch == 1):
      operands = [bcoo_update_layout(op, n_batch=0) if op.n_batch == 1 else op
                  for op in operands]
    n_batches = {op.n_batch for op in operands}
  if len(n_batches) != 1:
    raise ValueError("bcoo_concatenate requires inputs to have matching batch dimensions.")
  nb, ns = operands[0].n_batch, operands[0].n_sparse

  def others(s):
    return s[:dimension] + s[dimension + 1:] if dimension < nb else s
  if (len({others(tuple(op.indices.shape[:nb])) for op in operands}) != 1
      or len({others(tuple(op.data.shape[:nb])) for op in operands}) != 1):
    raise NotImplementedError("concatenation of arrays with broadcasted batch indices")
  dtype = np.result_type(*[op.dtype for op in operands])
  if dimension < nb:
    nse = max(op.nse for op in operands)
    operands = [_set_nse(op, nse) for op in operands]
    indices = jnp.concatenate([op.indices for op in operands], axis=dimension)
    data = jnp.concatenate([op.data.astype(dtype) for op in operands], axis=dimension)
  elif dimension < nb + ns:
    idt = operands[0].indices.dtype
    offsets = np.cumsum([0] + [op.shape[dimension] for op in operands[:-1]]).astype(idt)
    col = dimension - nb
    data = jnp.concatenate([op.data.astype(dtype) for op in operands], axis=nb)
    indices = jnp.concatenate([op.indices.astype(idt).at[..., col].add(off)
                               for op, off in zip(operands, offsets)], axis=nb)
  else:
    raise NotImplementedError("Concatenation along dense dimensions.")
  shape = list(operands[0].shape)
  shape[dimension] = sum(op.shape[dimension] for op in operands)
  return BCOO((data, indices), shape=tuple(shape))


def bcoo_multiply_sparse(lhs, rhs):
  """Elementwise product of two BCOO arrays (``lhs * rhs``), with JAX's layout: one slot
  per pair of stored elements (``lhs.nse * rhs.nse`` per batch), the pairs whose indices
  match first (in row-major pair order) and the rest padding.  Like JAX's, it compares
  every pair of stored elements (O(lhs.nse * rhs.nse) memory)."""
  from pyjax import numpy as jnp
  from pyjax._src.api_vmap import vmap
  if lhs.ndim != rhs.ndim:
    raise TypeError("bcoo_multiply_sparse: arrays must have same number of dimensions, "
                    f"got {lhs.shape}, {rhs.shape}")
  if lhs.n_dense != rhs.n_dense:
    raise NotImplementedError("bcoo_multiply_sparse: arrays with differing numbers of "
                              f"dense dimensions: {lhs!r}, {rhs!r}")
  out_shape = tuple(np.broadcast_shapes(lhs.shape, rhs.shape))
  nb = min(lhs.n_batch, rhs.n_batch)
  if lhs.n_batch > nb:
    lhs = bcoo_update_layout(lhs, n_batch=nb)
  if rhs.n_batch > nb:
    rhs = bcoo_update_layout(rhs, n_batch=nb)
  lshape, rshape = lhs.shape[nb:], rhs.shape[nb:]
  ns = lhs.n_sparse
  dims = np.array([i for i in range(ns) if lshape[i] != 1 and rshape[i] != 1], np.int32)

  def one(ld, li, rd, ri):
    nse = li.shape[0] * ri.shape[0]
    mask = jnp.all(li[:, None, dims] == ri[None, :, dims], axis=-1)
    il, ir = jnp.nonzero(mask, size=nse, fill_value=(li.shape[0], ri.shape[0]))
    data = (ld.at[il].get(mode="fill", fill_value=0) * rd.at[ir].get(mode="fill", fill_value=0))
    indices = jnp.maximum(li.at[il].get(mode="fill", fill_value=max(lshape, default=0)),
                          ri.at[ir].get(mode="fill", fill_value=max(rshape, default=0)))
    return data, indices

  for _ in range(nb):
    one = vmap(one)
  ld, li, rd, ri = lhs.data, lhs.indices, rhs.data, rhs.indices
  if nb:   # broadcast size-1 batch dimensions of the buffers against each other
    bshape = tuple(out_shape[:nb])
    ld, rd = (jnp.broadcast_to(x, bshape + x.shape[nb:]) for x in (ld, rd))
    li, ri = (jnp.broadcast_to(x, bshape + x.shape[nb:]) for x in (li, ri))
  data, indices = one(ld, li, rd, ri)
  return BCOO((data, indices), shape=out_shape)
