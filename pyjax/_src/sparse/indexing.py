"""BCOO shape and indexing operations beyond slicing: ``bcoo_broadcast_in_dim``,
``bcoo_dynamic_slice``, ``bcoo_rev`` and ``bcoo_gather`` (``jax.experimental.sparse``),
plus ``bcsr_broadcast_in_dim`` and ``bcsr_concatenate``.  Layouts (``n_batch``, ``nse``,
padding) are JAX 0.10's: out-of-range elements are padding (index = the dimension's size)
and ``bcoo_dynamic_slice`` sums duplicates down to the slice's size when ``nse`` exceeds it.
"""
from __future__ import annotations

import math
import operator

import numpy as np


from pyjax._src.sparse import bcoo
from pyjax._src.sparse.bcoo_array import BCOO, bcoo_reshape, bcoo_squeeze, bcoo_transpose
from pyjax._src.sparse.util import SparseInfo

__all__ = ["bcoo_broadcast_in_dim", "bcoo_dynamic_slice", "bcoo_rev", "bcoo_gather",
           "bcsr_broadcast_in_dim", "bcsr_concatenate"]


def _jnp():
  from pyjax import numpy as jnp
  return jnp


def _lax():
  from pyjax import lax
  return lax


def _check_dense(fn, mat, *args, **kw):
  """Validate the arguments as the dense ``lax`` function would (its errors)."""
  from pyjax._src.api import ShapeDtypeStruct, eval_shape
  return eval_shape(lambda x, *a: fn(x, *a, **kw), ShapeDtypeStruct(mat.shape, mat.dtype), *args)


def bcoo_broadcast_in_dim(mat, *, shape, broadcast_dimensions, sharding=None):
  """Sparse ``lax.broadcast_in_dim``: new leading dimensions become batch dimensions,
  new trailing ones dense dimensions; sparse dimensions may only gain size-1 neighbours."""
  lax = _lax()
  shape = tuple(operator.index(s) for s in shape)
  bdims = tuple(operator.index(d) for d in broadcast_dimensions)
  if len(mat.shape) != len(bdims):
    raise ValueError(f"spinfo.shape={mat.shape} and broadcast_dimensions={bdims} must have "
                     "the same length")
  nb, ns, nd = mat.n_batch, mat.n_sparse, mat.n_dense
  b_dims, s_dims, d_dims = bdims[:nb], bdims[nb:nb + ns], bdims[nb + ns:]
  if max(b_dims, default=0) > min(s_dims, default=len(shape)):
    raise ValueError("Cannot mix batch and sparse dimensions during broadcast_in_dim")
  if max(s_dims, default=0) > min(d_dims, default=len(shape)):
    raise ValueError("Cannot mix sparse and dense dimensions during broadcast_in_dim")
  new_nb = min(bdims[nb:], default=len(shape))
  new_nd = len(shape) - min(d_dims) if nd else 0
  new_ns = len(shape) - new_nb - new_nd
  if math.prod(mat.shape[nb:nb + ns]) != math.prod(shape[new_nb:new_nb + new_ns]):
    raise NotImplementedError("Adding sparse dimensions with lengths != 1")
  data, indices = mat.data, mat.indices
  if (new_nb, new_nd) != (nb, nd):
    data = lax.broadcast_in_dim(
        data, (*shape[:new_nb], mat.nse, *shape[new_nb + new_ns:]),
        (*b_dims, new_nb, *(d + 1 - new_ns for d in d_dims)))
    indices = lax.broadcast_in_dim(indices, (*shape[:new_nb], mat.nse, ns),
                                   (*b_dims, new_nb, new_nb + 1))
  if new_ns != ns:
    jnp = _jnp()
    cols = np.asarray(s_dims, np.int64) - new_nb
    full = jnp.zeros((*indices.shape[:-1], new_ns), indices.dtype)
    indices = full.at[..., cols].set(indices) if ns else full
  return BCOO((data, indices), shape=shape)


def bcoo_dynamic_slice(mat, start_indices, slice_sizes):
  """Sparse ``lax.dynamic_slice`` (starts may be traced; sizes static).  Starts are
  clamped as ``lax.dynamic_slice`` clamps them; elements outside the slice become padding
  and, when ``nse`` exceeds the slice's sparse size, duplicates are summed to that size."""
  jnp, lax = _jnp(), _lax()
  if not isinstance(mat, BCOO):
    raise TypeError(f"bcoo_slice: input should be BCOO array, got type(mat)={type(mat)}")
  slice_sizes = tuple(operator.index(i) for i in slice_sizes)
  _check_dense(lambda x, *s: lax.dynamic_slice(x, s, slice_sizes), mat, *start_indices)
  starts = [jnp.asarray(i) for i in start_indices]
  nb, ns = mat.n_batch, mat.n_sparse
  zero = jnp.zeros((), starts[0].dtype if starts else np.int32)
  d_start, d_size, i_start, i_size = [], [], [], []
  for k in range(nb):
    db = mat.data.shape[k] != mat.shape[k]
    ib = mat.indices.shape[k] != mat.shape[k]
    d_start.append(zero if db else starts[k])
    d_size.append(1 if db else slice_sizes[k])
    i_start.append(zero if ib else starts[k])
    i_size.append(1 if ib else slice_sizes[k])
  d_start.append(zero)
  d_size.append(mat.nse)
  d_start.extend(starts[nb + ns:])
  d_size.extend(slice_sizes[nb + ns:])
  i_start.extend([zero, zero])
  i_size.extend([mat.nse, ns])
  data = lax.dynamic_slice(mat.data, d_start, d_size)
  indices = lax.dynamic_slice(mat.indices, i_start, i_size)
  if ns:
    idt = indices.dtype
    sp_shape = jnp.asarray(np.asarray(mat.shape[nb:nb + ns]), idt)
    sizes = jnp.asarray(np.asarray(slice_sizes[nb:nb + ns]), idt)
    st = jnp.stack([jnp.asarray(s).astype(idt) for s in starts[nb:nb + ns]])
    st = jnp.clip(jnp.where(st < 0, st + sp_shape, st), 0, sp_shape - sizes)
    keep = jnp.all((indices >= st) & (indices < st + sizes), -1, keepdims=True)
    indices = jnp.where(keep, indices - st, sizes)
    kd = keep[..., 0].reshape(keep.shape[:-1] + (1,) * mat.n_dense)
    data = jnp.where(kd, data, jnp.zeros((), data.dtype))
    cap = math.prod(slice_sizes[nb:nb + ns])
    if mat.nse > cap:
      data, indices = bcoo.bcoo_sum_duplicates_p.bind(
          data, indices, spinfo=SparseInfo(slice_sizes), nse=cap)
  return BCOO((data, indices), shape=slice_sizes)


def bcoo_rev(operand, dimensions):
  """Sparse ``lax.rev``: batch and dense dimensions reverse their buffers, sparse ones
  their indices (padding stays padding)."""
  jnp, lax = _jnp(), _lax()
  dimensions = tuple(operator.index(d) for d in dimensions)
  _check_dense(lambda x: lax.rev(x, dimensions), operand)
  nb, ns = operand.n_batch, operand.n_sparse
  bd = [d for d in dimensions if d < nb]
  sd = [d - nb for d in dimensions if nb <= d < nb + ns]
  dd = [d + 1 - ns for d in dimensions if d >= nb + ns]
  data, indices = operand.data, operand.indices
  if bd:
    indices = lax.rev(indices, bd)
  if bd or dd:
    data = lax.rev(data, bd + dd)
  if sd:
    shp = np.asarray(operand.shape[nb:nb + ns], np.int64)
    flip = np.zeros(ns, bool)
    flip[sd] = True
    size = jnp.asarray(shp.astype(indices.dtype))
    rev = jnp.where(jnp.asarray(flip), size - 1 - indices, indices)
    indices = jnp.where(rev < 0, size, rev)
  return BCOO((data, indices), shape=operand.shape)


def bcoo_gather(operand, start_indices, dimension_numbers, slice_sizes, *,
                unique_indices=False, indices_are_sorted=False, mode=None, fill_value=None):
  """Sparse ``lax.gather`` (mode ``promise_in_bounds`` only, as JAX): one
  ``bcoo_dynamic_slice`` per index vector (``vmap``), squeezed, reshaped and transposed to
  ``lax.gather``'s output layout."""
  from pyjax._src.api_vmap import vmap
  from pyjax._src.lax.gather_scatter import GatherScatterMode
  from pyjax._src.sparse.layout import bcoo_update_layout
  lax = _lax()
  parsed = GatherScatterMode.from_any(mode if mode is not None else "promise_in_bounds")
  if parsed != GatherScatterMode.PROMISE_IN_BOUNDS:
    raise NotImplementedError(f"bcoo_gather: mode={mode} not yet supported.")
  kw = dict(dimension_numbers=dimension_numbers, slice_sizes=tuple(slice_sizes),
            unique_indices=unique_indices, indices_are_sorted=indices_are_sorted, mode=mode,
            fill_value=fill_value)
  start_indices = _jnp().asarray(start_indices)
  out = _check_dense(lambda x, i: lax.gather(x, i, **kw), operand, start_indices)
  dn = dimension_numbers
  full = [np.int32(0)] * operand.ndim
  axes = [None] * operand.ndim
  sizes = list(operand.shape)
  for i, j in enumerate(dn.start_index_map):
    full[j] = start_indices[..., i].ravel()
    sizes[j] = slice_sizes[j]
    axes[j] = 0

  def one(starts):
    return bcoo_squeeze(bcoo_dynamic_slice(operand, starts, sizes),
                        dimensions=tuple(dn.collapsed_slice_dims))

  res = vmap(one, in_axes=(axes,))(full)
  res = bcoo_reshape(res, new_sizes=(*start_indices.shape[:-1], *res.shape[1:]),
                     dimensions=tuple(range(res.ndim)))
  if res.shape:
    batch = tuple(d for d in range(len(out.shape)) if d not in dn.offset_dims)
    perm = np.zeros(res.ndim, dtype=int)
    perm[np.array(batch + tuple(dn.offset_dims), dtype=int)] = np.arange(res.ndim)
    if set(perm[:len(batch)]) != set(range(len(batch))):
      res = bcoo_update_layout(res, n_batch=0)
    res = bcoo_transpose(res, permutation=tuple(int(p) for p in perm))
  return res.reshape(out.shape).astype(out.dtype)


def bcsr_broadcast_in_dim(mat, *, shape, broadcast_dimensions, sharding=None):
  """Sparse ``lax.broadcast_in_dim`` for BCSR (through BCOO; the result is a BCSR, so
  the two sparse dimensions must stay the last non-dense ones)."""
  from pyjax._src.sparse.bcsr import BCSR
  out = bcoo_broadcast_in_dim(mat.to_bcoo(), shape=shape,
                              broadcast_dimensions=broadcast_dimensions)
  return BCSR.from_bcoo(out)


def bcsr_concatenate(operands, *, dimension):
  """Sparse ``lax.concatenate`` for BCSR arrays (through BCOO), along a batch or sparse
  dimension."""
  from pyjax._src.sparse.bcsr import BCSR
  from pyjax._src.sparse.layout import bcoo_concatenate
  if not all(isinstance(op, BCSR) for op in operands):
    raise ValueError("bcsr_concatenate: expected operands to be a sequence of BCSR arrays. "
                     f"Got {operands}")
  out = bcoo_concatenate([op.to_bcoo() for op in operands], dimension=dimension)
  return BCSR.from_bcoo(out)




def bcoo_getitem_array(mat, idx):
  """``mat[idx]`` where ``idx`` holds one integer-array index (any rank) and otherwise
  integers and slices (``BCOO.__getitem__``'s array case): the integers and slices go
  through ``bcoo_slice``/``bcoo_squeeze``, the array through ``bcoo_gather`` (negative
  entries count from the end).  Integers not adjacent to the array (NumPy would move the
  advanced dimensions to the front) raise NotImplementedError."""
  from pyjax import lax
  jnp = _jnp()
  arrays = [d for d, i in enumerate(idx) if hasattr(i, "shape") and getattr(i, "ndim", 0) > 0]
  if len(arrays) != 1:
    raise NotImplementedError("BCOO indexing with more than one array index")
  d = arrays[0]
  ints = [k for k, i in enumerate(idx) if k != d and not isinstance(i, slice)]
  if ints and any(abs(k - d) != 1 for k in ints) or len(ints) > 1:
    raise NotImplementedError("BCOO indexing mixing an array with non-adjacent integers")
  arr = jnp.asarray(idx[d])
  if not jnp.issubdtype(arr.dtype, jnp.integer):
    raise NotImplementedError(f"BCOO indexing with {arr.dtype} array indices")
  rest = tuple(slice(None) if k == d else i for k, i in enumerate(idx))
  mat = mat[rest]
  d -= sum(1 for k in ints if k < d)     # integers before the array were squeezed away
  size = mat.shape[d]
  arr = jnp.where(arr < 0, arr + size, arr)
  n_out = mat.ndim - 1 + arr.ndim
  offset = tuple(range(d)) + tuple(range(d + arr.ndim, n_out))
  dn = lax.GatherDimensionNumbers(offset_dims=offset, collapsed_slice_dims=(d,),
                                  start_index_map=(d,))
  sizes = tuple(1 if k == d else s for k, s in enumerate(mat.shape))
  return bcoo_gather(mat, arr[..., None], dn, sizes)
