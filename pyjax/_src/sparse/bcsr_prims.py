"""BCSR primitives: ``bcsr_fromdense``, ``bcsr_todense``, ``bcsr_extract`` and
``bcsr_dot_general``, named and parametrized as JAX 0.10 names them (so jaxprs of BCSR
code print the same equations), each with its abstract-eval rule, JVP, transpose and
batching rule.  The NumPy implementations live in
``pyjax/_src/backends/cpu/eager/sparse_bcsr.py``: they recover the row of each stored
element from ``indptr`` and run the BCOO kernels (O(nse) memory).

A BCSR operand is ``data[*batch, nse, *dense]``, column ``indices[*batch, nse]`` and row
pointers ``indptr[*batch, n_rows + 1]``; batch dimensions of size 1 broadcast.
"""
from __future__ import annotations

from pyjax._src import core, dtypes
from pyjax._src.avals import ShapedArray
from pyjax._src.interpreters import ad
from pyjax._src.interpreters import batching
from pyjax._src.lax import dot as _dot
from pyjax._src.lax import shapes as _shapes
from pyjax._src.sparse import bcoo as _bcoo
from pyjax._src.sparse.util import SparseInfo

__all__ = ["bcsr_fromdense_p", "bcsr_todense_p", "bcsr_extract_p", "bcsr_dot_general_p",
           "csr_rows", "validate_bcsr_indices", "validate_bcsr"]


def _compatible(a, b):
  return all(x in (1, y) for x, y in zip(a, b))


def validate_bcsr_indices(indices, indptr, shape):
  """(n_batch, n_dense, nse) of BCSR ``indices``/``indptr`` for an array of ``shape``;
  ``ValueError`` (JAX's messages) when they do not fit."""
  shape = tuple(shape)
  nse = indices.shape[-1]
  n_batch = indices.ndim - 1
  n_dense = len(shape) - n_batch - 2
  if n_dense < 0:
    raise ValueError(f"Invalid shape={shape} for BCSR indices of shape {indices.shape}")
  if not _compatible(indices.shape[:n_batch], shape[:n_batch]):
    raise ValueError(f"indices batch dimensions not compatible for "
                     f"indices.shape={indices.shape}, shape={shape}")
  if not _compatible(indptr.shape[:n_batch], shape[:n_batch]):
    raise ValueError(f"indptr batch dimensions not compatible for "
                     f"indptr.shape={indptr.shape}, shape={shape}")
  if tuple(indptr.shape[n_batch:]) != (shape[n_batch] + 1,):
    raise ValueError("indptr shape must match the matrix shape plus 1.")
  return n_batch, n_dense, nse


def validate_bcsr(data, indices, indptr, shape):
  """As ``validate_bcsr_indices``, also checking ``data``'s shape."""
  n_batch, n_dense, nse = validate_bcsr_indices(indices, indptr, shape)
  shape = tuple(shape)
  if not _compatible(data.shape[:n_batch], shape[:n_batch]):
    raise ValueError(f"data batch dimensions not compatible for "
                     f"data.shape={data.shape}, shape={shape}")
  if tuple(data.shape[-(n_dense + 1):]) != (nse,) + shape[n_batch + 2:]:
    raise ValueError(f"Invalid data.shape={data.shape} for nse={nse}, n_batch={n_batch}, "
                     f"n_dense={n_dense}")
  return n_batch, n_dense, nse


def csr_rows(indices, indptr):
  """Row of each stored element, traced as jnp ops (``n_rows`` for entries past
  ``indptr[-1]``, JAX's padding): a scatter-add of ones at the row pointers and a
  cumulative sum, vmapped over the batch dimensions."""
  from pyjax import numpy as jnp
  from pyjax._src.api_vmap import vmap

  def rows(ind, ptr):
    hits = jnp.zeros(ind.shape, ind.dtype).at[ptr].add(1, mode="drop")
    return jnp.cumsum(hits).astype(ind.dtype) - 1

  for _ in range(indices.ndim - 1):
    rows = vmap(rows)
  return rows(indices, indptr)


def _bcoo_indices(indices, indptr):
  from pyjax import numpy as jnp
  return jnp.stack([csr_rows(indices, indptr), indices], axis=-1)


def _batch_to_front(args, dims, spinfo, size=None):
  """(data, indices, indptr) with the vmapped axis as a new leading batch dimension (size 1
  for an unmapped buffer) and the matching spinfo."""
  n_batch = core.get_aval(args[1]).ndim - 1 + int(dims[1] is None)
  if not all(d is None or 0 <= d < n_batch for d in dims):
    raise NotImplementedError("batch_dims must be None or satisfy 0 < dim < n_batch. "
                              f"Got batch_dims={tuple(dims)} for n_batch={n_batch}.")
  out = [_shapes.expand_dims(x, (0,)) if d is None else batching.moveaxis(x, d, 0)
         for x, d in zip(args, dims)]
  if size is None:
    size = next(core.get_aval(x).shape[d] for x, d in zip(args, dims) if d is not None)
  info = SparseInfo((size,) + tuple(spinfo.shape), spinfo.indices_sorted,
                    spinfo.unique_indices)
  return (*out, info)


# --- bcsr_fromdense -------------------------------------------------------------------------
bcsr_fromdense_p = core.Primitive("bcsr_fromdense")
bcsr_fromdense_p.multiple_results = True


@bcsr_fromdense_p.def_abstract_eval
def _fromdense_abstract(mat, *, nse, n_batch, n_dense, index_dtype):
  if mat.ndim - n_batch - n_dense != 2:
    raise ValueError("bcsr_fromdense: must have 2 sparse dimensions.")
  it = dtypes.canonicalize_dtype(index_dtype)
  return [ShapedArray(mat.shape[:n_batch] + (nse,) + mat.shape[n_batch + 2:], mat.dtype),
          ShapedArray(mat.shape[:n_batch] + (nse,), it),
          ShapedArray(mat.shape[:n_batch] + (mat.shape[n_batch] + 1,), it)]


def _fromdense_jvp(primals, tangents, **params):
  mat, = primals
  g, = tangents
  data, indices, indptr = bcsr_fromdense_p.bind(mat, **params)
  t = (ad.Zero.from_primal_value(data) if type(g) is ad.Zero
       else bcsr_extract_p.bind(indices, indptr, g))
  return [data, indices, indptr], [t, ad.Zero.from_primal_value(indices),
                                   ad.Zero.from_primal_value(indptr)]


def _fromdense_batch(args, dims, *, nse, n_batch, n_dense, index_dtype):
  mat, = args
  d, = dims
  if not 0 <= d <= n_batch:
    raise ValueError(f"Expected 0 < bdim <= n_batch; got bdim={d}, n_batch={n_batch}")
  out = bcsr_fromdense_p.bind(mat, nse=nse, n_batch=n_batch + 1, n_dense=n_dense,
                              index_dtype=index_dtype)
  return out, [d, d, d]


def _fromdense_transpose(ct, mat, *, nse, n_batch, n_dense, index_dtype):
  ct_data, indices, indptr = ct
  if type(indices) is ad.Zero or type(indptr) is ad.Zero:
    raise ValueError("Cannot transpose with respect to sparse indices")
  if type(ct_data) is ad.Zero:
    return [ad.Zero(mat.aval)]
  return [bcsr_todense_p.bind(ct_data, indices, indptr, spinfo=SparseInfo(mat.aval.shape))]


ad.primitive_jvps[bcsr_fromdense_p] = _fromdense_jvp
ad.primitive_transposes[bcsr_fromdense_p] = _fromdense_transpose
batching.primitive_batchers[bcsr_fromdense_p] = _fromdense_batch
bcsr_fromdense_p.param_printer = _bcoo.bcoo_fromdense_p.param_printer


# --- bcsr_todense ---------------------------------------------------------------------------
bcsr_todense_p = core.Primitive("bcsr_todense")


@bcsr_todense_p.def_abstract_eval
def _todense_abstract(data, indices, indptr, *, spinfo):
  validate_bcsr(data, indices, indptr, spinfo.shape)
  return ShapedArray(tuple(spinfo.shape), data.dtype)


def _todense_transpose(ct, data, indices, indptr, *, spinfo):
  if ad.is_undefined_primal(indices) or ad.is_undefined_primal(indptr):
    raise ValueError("Cannot transpose with respect to sparse indices")
  if type(ct) is ad.Zero:
    return [ad.Zero(data.aval), None, None]
  out = bcsr_extract_p.bind(indices, indptr, ct)
  if core.get_aval(out).shape != data.aval.shape:    # data broadcast along batch dims
    out = ad.unbroadcast(data.aval, out)
  return [out, None, None]


def _todense_batch(args, dims, *, spinfo):
  data, indices, indptr, info = _batch_to_front(args, dims, spinfo)
  return bcsr_todense_p.bind(data, indices, indptr, spinfo=info), 0


ad.defjvp(bcsr_todense_p,
          lambda g, data, indices, indptr, *, spinfo:
          bcsr_todense_p.bind(g, indices, indptr, spinfo=spinfo), None, None)
ad.primitive_transposes[bcsr_todense_p] = _todense_transpose
batching.primitive_batchers[bcsr_todense_p] = _todense_batch


# --- bcsr_extract ---------------------------------------------------------------------------
bcsr_extract_p = core.Primitive("bcsr_extract")


@bcsr_extract_p.def_abstract_eval
def _extract_abstract(indices, indptr, mat):
  n_batch, n_dense, nse = validate_bcsr_indices(indices, indptr, mat.shape)
  return ShapedArray(mat.shape[:n_batch] + (nse,) + mat.shape[mat.ndim - n_dense:],
                     mat.dtype)


def _extract_transpose(ct, indices, indptr, mat):
  if ad.is_undefined_primal(indices) or ad.is_undefined_primal(indptr):
    raise ValueError("Cannot transpose with respect to sparse indices")
  if type(ct) is ad.Zero:
    return [None, None, ad.Zero(mat.aval)]
  return [None, None, bcsr_todense_p.bind(ct, indices, indptr,
                                          spinfo=SparseInfo(mat.aval.shape))]


def _extract_batch(args, dims):
  indices, indptr, mat = args
  bdims = {d for d in dims if d is not None}
  if len(bdims) != 1:
    raise NotImplementedError("bcoo_extract with unequal batch dimensions.")
  bdim = bdims.pop()
  if dims[0] is None:
    indices = _shapes.expand_dims(indices, (bdim,))
  if dims[1] is None:
    indptr = _shapes.expand_dims(indptr, (bdim,))
  if dims[2] is None:
    shape = list(core.get_aval(mat).shape)
    shape.insert(bdim, core.get_aval(indices).shape[bdim])
    mat = _shapes.broadcast_in_dim(mat, tuple(shape),
                                   tuple(i for i in range(len(shape)) if i != bdim))
  n_batch = core.get_aval(indices).ndim - 1
  if bdim >= n_batch:
    raise ValueError(f"batch_dims={tuple(dims)} out of range for indices with "
                     f"n_batch={n_batch}")
  return bcsr_extract_p.bind(indices, indptr, mat), bdim


ad.defjvp(bcsr_extract_p, None, None,
          lambda g, indices, indptr, mat: bcsr_extract_p.bind(indices, indptr, g))
ad.primitive_transposes[bcsr_extract_p] = _extract_transpose
batching.primitive_batchers[bcsr_extract_p] = _extract_batch


# --- bcsr_dot_general -----------------------------------------------------------------------
bcsr_dot_general_p = core.Primitive("bcsr_dot_general")


@bcsr_dot_general_p.def_abstract_eval
def _dot_abstract(lhs_data, lhs_indices, lhs_indptr, rhs, *, dimension_numbers,
                  preferred_element_type, lhs_spinfo):
  (lc, _), (lb, _) = dimension_numbers
  n_batch, _, _ = validate_bcsr_indices(lhs_indices, lhs_indptr, lhs_spinfo.shape)
  shape = _dot._dot_general_shape(tuple(lhs_spinfo.shape), tuple(rhs.shape),
                                  dimension_numbers)
  dtype = _dot.dot_result_dtype(lhs_data.dtype, rhs.dtype, preferred_element_type)
  if lb and max(lb) >= n_batch:
    raise NotImplementedError(
        "bcsr_dot_general batch dimensions must be among the batch dimensions in the "
        f"sparse representtaion.\ngot lhs_batch={tuple(lb)}, props.n_batch={n_batch}")
  if any(d >= n_batch + 2 for d in lc):
    raise NotImplementedError("bcsr_dot_general: contracting over dense dimensions.")
  return ShapedArray(shape, dtype)


def _dot_transpose(ct, lhs_data, lhs_indices, lhs_indptr, rhs, *, dimension_numbers,
                   preferred_element_type, lhs_spinfo):
  if ad.is_undefined_primal(lhs_indices) or ad.is_undefined_primal(lhs_indptr):
    raise ValueError("Cannot transpose with respect to sparse indices")
  # as JAX: the rows are recovered from indptr and BCOO's transpose rule applies
  coo = _bcoo_indices(lhs_indices, lhs_indptr)
  d, _, r = _bcoo._dot_transpose(ct, lhs_data, coo, rhs, dimension_numbers=dimension_numbers,
                                 lhs_spinfo=lhs_spinfo,
                                 preferred_element_type=preferred_element_type)
  return [d, None, None, r]


def _dot_batch(args, dims, *, dimension_numbers, preferred_element_type, lhs_spinfo):
  rhs, rd = args[3], dims[3]
  data, indices, indptr, info = _batch_to_front(
      args[:3], dims[:3], lhs_spinfo,
      None if rd is None else core.get_aval(rhs).shape[rd])
  dn, out_dim = _bcoo.batched_dot_dims(dimension_numbers, rd)
  out = bcsr_dot_general_p.bind(data, indices, indptr, rhs, dimension_numbers=dn,
                                preferred_element_type=preferred_element_type,
                                lhs_spinfo=info)
  return out, out_dim


ad.defjvp(bcsr_dot_general_p,
          lambda g, d, i, p, r, **kw: bcsr_dot_general_p.bind(g, i, p, r, **kw), None, None,
          lambda g, d, i, p, r, **kw: bcsr_dot_general_p.bind(d, i, p, g, **kw))
ad.primitive_transposes[bcsr_dot_general_p] = _dot_transpose
batching.primitive_batchers[bcsr_dot_general_p] = _dot_batch
