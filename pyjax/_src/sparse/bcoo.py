"""BCOO primitives: ``bcoo_todense``, ``bcoo_fromdense``, ``bcoo_extract``,
``bcoo_transpose``, ``bcoo_sort_indices``, ``bcoo_sum_duplicates``, ``bcoo_dot_general``,
``bcoo_dot_general_sampled`` and ``bcoo_spdot_general``, each with its abstract-eval rule,
JVP, transpose (for the linear ones) and batching rule, named and parametrized as JAX
0.10 names them so jaxprs print alike.  The NumPy implementations live in
``pyjax/_src/backends/cpu/eager/sparse.py`` (O(nse) memory).

Differentiation never densifies the sparse operand: the cotangent of ``data`` in a
sparse-dense product is a sampled product at the stored indices
(``bcoo_dot_general_sampled``), and the cotangents of the dense operands of a sampled
product are sparse-dense products (JAX densifies there).
"""
from __future__ import annotations

import numpy as np

from pyjax._src import core, dtypes
from pyjax._src.avals import ShapedArray
from pyjax._src.interpreters import ad
from pyjax._src.interpreters import batching
from pyjax._src.lax import dot as _dot
from pyjax._src.lax import elementwise as _ew
from pyjax._src.lax import shapes as _shapes
from pyjax._src.sparse.util import SparseInfo, validate_bcoo, validate_bcoo_indices

__all__ = ["bcoo_todense_p", "bcoo_fromdense_p", "bcoo_extract_p", "bcoo_transpose_p",
           "bcoo_sort_indices_p", "bcoo_sum_duplicates_p", "bcoo_dot_general_p",
           "bcoo_dot_general_sampled_p", "bcoo_spdot_general_p"]


def _aval(x):
  return x.aval if ad.is_undefined_primal(x) else core.get_aval(x)


def _remaining(n, *removed):
  gone = set().union(*map(set, removed))
  return [d for d in range(n) if d not in gone]


def _batch_to_front(data, indices, dims, spinfo, size):
  """(data, indices) with the vmapped axis as a new leading batch dimension (an unmapped
  operand gets a size-1 one, which BCOO broadcasts), and the spinfo that goes with it."""
  dd, di = dims
  data = _shapes.expand_dims(data, (0,)) if dd is None else batching.moveaxis(data, dd, 0)
  indices = (_shapes.expand_dims(indices, (0,)) if di is None
             else batching.moveaxis(indices, di, 0))
  n_batch = core.get_aval(indices).ndim - 2
  for d in dims:
    if d is not None and d > n_batch - 1:
      raise NotImplementedError("batch_dims must be None or satisfy 0 < dim < n_batch. "
                                f"Got batch_dims={tuple(dims)} for n_batch={n_batch}.")
  return data, indices, SparseInfo((size,) + tuple(spinfo.shape), spinfo.indices_sorted,
                                   spinfo.unique_indices)


def _size(args, dims):
  return next(core.get_aval(x).shape[d] for x, d in zip(args, dims) if d is not None)


def _linear_in_data_jvp(prim):
  """JVP of a (data, indices) -> (data, indices) primitive linear in ``data``: the
  primitive applied to the tangent data with the same indices."""
  def jvp(primals, tangents, **params):
    data, indices = primals
    g, _ = tangents
    out = prim.bind(data, indices, **params)
    if type(g) is ad.Zero:
      t = ad.Zero.from_primal_value(out[0])
    else:
      t = prim.bind(g, indices, **params)[0]
    return out, [t, ad.Zero.from_primal_value(out[1])]
  ad.primitive_jvps[prim] = jvp


def _data_transpose(prim, rule):
  """Transpose of such a primitive: ``rule(ct_data, data_aval, indices, **params)`` gives
  the data cotangent (summed back over broadcast batch dimensions here)."""
  def transpose(ct, data, indices, **params):
    ct_data, _ = ct
    if ad.is_undefined_primal(indices):
      raise ValueError("Cannot transpose with respect to sparse indices")
    if type(ct_data) is ad.Zero:
      return [ad.Zero(data.aval), None]
    out = rule(ct_data, data.aval, indices, **params)
    if core.get_aval(out).shape != data.aval.shape:
      out = ad.unbroadcast(data.aval, out)
    return [out, None]
  ad.primitive_transposes[prim] = transpose


# --- bcoo_todense ---------------------------------------------------------------------------
bcoo_todense_p = core.Primitive("bcoo_todense")


@bcoo_todense_p.def_abstract_eval
def _todense_abstract(data, indices, *, spinfo):
  validate_bcoo(data, indices, spinfo.shape)
  return ShapedArray(tuple(spinfo.shape), data.dtype, data.weak_type)


def _todense_transpose(ct, data, indices, *, spinfo):
  if ad.is_undefined_primal(indices):
    raise ValueError("Cannot transpose with respect to sparse indices")
  if type(ct) is ad.Zero:
    return [ad.Zero(data.aval), None]
  out = bcoo_extract_p.bind(indices, ct, assume_unique=True)
  da = data.aval
  if core.get_aval(out).shape != da.shape:    # data broadcast along batch dims
    out = ad.unbroadcast(da, out)
  return [out, None]


ad.defjvp(bcoo_todense_p,
          lambda g, data, indices, *, spinfo: bcoo_todense_p.bind(g, indices, spinfo=spinfo),
          None)
ad.primitive_transposes[bcoo_todense_p] = _todense_transpose


def _todense_batch(args, dims, *, spinfo):
  data, indices, info = _batch_to_front(*args, dims, spinfo, _size(args, dims))
  return bcoo_todense_p.bind(data, indices, spinfo=info), 0


batching.primitive_batchers[bcoo_todense_p] = _todense_batch


# --- bcoo_fromdense -------------------------------------------------------------------------
bcoo_fromdense_p = core.Primitive("bcoo_fromdense")
bcoo_fromdense_p.multiple_results = True


@bcoo_fromdense_p.def_abstract_eval
def _fromdense_abstract(mat, *, nse, n_batch, n_dense, index_dtype):
  n_sparse = mat.ndim - n_batch - n_dense
  if n_sparse < 0 or n_batch < 0 or n_dense < 0:
    raise ValueError(f"Invalid n_batch={n_batch}, n_dense={n_dense} for array of "
                     f"shape {mat.shape}")
  data_shape = mat.shape[:n_batch] + (nse,) + mat.shape[n_batch + n_sparse:]
  index_shape = mat.shape[:n_batch] + (nse, n_sparse)
  return [ShapedArray(data_shape, mat.dtype, mat.weak_type),
          ShapedArray(index_shape, dtypes.canonicalize_dtype(index_dtype))]


def _fromdense_jvp(primals, tangents, **params):
  mat, = primals
  g, = tangents
  data, indices = bcoo_fromdense_p.bind(mat, **params)
  if type(g) is ad.Zero:
    t = ad.Zero.from_primal_value(data)
  else:
    t = bcoo_extract_p.bind(indices, g, assume_unique=True)
  return [data, indices], [t, ad.Zero.from_primal_value(indices)]


ad.primitive_jvps[bcoo_fromdense_p] = _fromdense_jvp
# JAX's jaxprs show the index dtype as the NumPy scalar type ("<class 'numpy.int32'>")
bcoo_fromdense_p.param_printer = lambda params: dict(
    params, index_dtype=repr(np.dtype(params["index_dtype"]).type))


def _fromdense_batch(args, dims, *, nse, n_batch, n_dense, index_dtype):
  mat, = args
  d, = dims
  if not 0 <= d <= n_batch:
    raise ValueError(f"Expected 0 < bdim <= n_batch; got bdim={d}, n_batch={n_batch}")
  out = bcoo_fromdense_p.bind(mat, nse=nse, n_batch=n_batch + 1, n_dense=n_dense,
                              index_dtype=index_dtype)
  return out, [d, d]


batching.primitive_batchers[bcoo_fromdense_p] = _fromdense_batch


# --- bcoo_extract ---------------------------------------------------------------------------
bcoo_extract_p = core.Primitive("bcoo_extract")


@bcoo_extract_p.def_abstract_eval
def _extract_abstract(indices, arr, *, assume_unique):
  n_batch, _, n_dense, nse = validate_bcoo_indices(indices, arr.shape)
  out_shape = arr.shape[:n_batch] + (nse,) + arr.shape[arr.ndim - n_dense:]
  return ShapedArray(out_shape, arr.dtype, arr.weak_type)


def _extract_transpose(ct, indices, arr, *, assume_unique):
  if ad.is_undefined_primal(indices):
    raise ValueError("Cannot transpose with respect to sparse indices")
  if not assume_unique:
    raise NotImplementedError("transpose of bcoo_extract with assume_unique=False")
  if type(ct) is ad.Zero:
    return [None, ad.Zero(arr.aval)]
  return [None, bcoo_todense_p.bind(ct, indices, spinfo=SparseInfo(arr.aval.shape))]


ad.defjvp(bcoo_extract_p, None,
          lambda g, indices, arr, *, assume_unique:
          bcoo_extract_p.bind(indices, g, assume_unique=assume_unique))
ad.primitive_transposes[bcoo_extract_p] = _extract_transpose


def _extract_batch(args, dims, *, assume_unique):
  indices, arr = args
  di, da = dims
  if di is None:
    indices = _shapes.expand_dims(indices, (da,))
    bdim = da
  elif da is None:
    bdim = di
    a = core.get_aval(arr)
    shape = list(a.shape)
    shape.insert(bdim, core.get_aval(indices).shape[bdim])
    arr = _shapes.broadcast_in_dim(arr, tuple(shape),
                                   tuple(i for i in range(len(shape)) if i != bdim))
  else:
    if di != da:
      raise NotImplementedError("bcoo_extract with unequal batch dimensions.")
    bdim = di
  if bdim >= core.get_aval(indices).ndim - 2:
    raise ValueError(f"batch_dims={tuple(dims)} out of range for indices")
  return bcoo_extract_p.bind(indices, arr, assume_unique=assume_unique), bdim


batching.primitive_batchers[bcoo_extract_p] = _extract_batch


# --- bcoo_transpose -------------------------------------------------------------------------
bcoo_transpose_p = core.Primitive("bcoo_transpose")
bcoo_transpose_p.multiple_results = True


def validate_permutation(data, indices, permutation, shape):
  """(batch_perm, sparse_perm, dense_perm); NotImplementedError when the permutation
  mixes batch, sparse and dense dimensions (JAX's message)."""
  if not isinstance(permutation, (tuple, list, np.ndarray)):
    raise TypeError(f"transpose permutation must be a tuple/list/ndarray, got {type(permutation)}.")
  if tuple(sorted(permutation)) != tuple(range(len(shape))):
    raise TypeError("transpose permutation isn't a permutation of operand dimensions, "
                    f"got permutation {tuple(permutation)} for shape {tuple(shape)}.")
  n_batch, n_sparse, n_dense, _ = validate_bcoo(data, indices, shape)
  batch_perm = tuple(permutation[:n_batch])
  sparse_perm = tuple(p - n_batch for p in permutation[n_batch:n_batch + n_sparse])
  dense_perm = tuple(p - n_sparse - n_batch for p in permutation[n_batch + n_sparse:])
  if n_batch and tuple(sorted(batch_perm)) != tuple(range(n_batch)):
    raise NotImplementedError("Cannot transpose a batch dimension with a non-batch dimension; "
                              f"got permutation={tuple(permutation)}, n_batch={n_batch}.")
  if n_dense and tuple(sorted(dense_perm)) != tuple(range(n_dense)):
    raise NotImplementedError("Cannot transpose a dense dimension with a non-dense dimension; "
                              f"got permutation={tuple(permutation)}, n_dense={n_dense}.")
  return batch_perm, sparse_perm, dense_perm


@bcoo_transpose_p.def_abstract_eval
def _transpose_abstract(data, indices, *, permutation, spinfo):
  batch_perm, _, dense_perm = validate_permutation(data, indices, permutation, spinfo.shape)
  n_batch = len(batch_perm)
  data_shape = (tuple(data.shape[p] for p in batch_perm) + (data.shape[n_batch],)
                + tuple(data.shape[n_batch + 1 + p] for p in dense_perm))
  index_shape = tuple(indices.shape[p] for p in batch_perm) + tuple(indices.shape[n_batch:])
  return [ShapedArray(data_shape, data.dtype, data.weak_type),
          ShapedArray(index_shape, indices.dtype, indices.weak_type)]


def _transpose_transpose(ct_data, data_aval, indices, *, permutation, spinfo):
  n_batch = _aval(indices).ndim - 2
  n_sparse = _aval(indices).shape[-1]
  dense_perm = [p - n_batch - n_sparse for p in permutation[n_batch + n_sparse:]]
  data_perm = list(permutation[:n_batch]) + [n_batch] + [n_batch + 1 + p for p in dense_perm]
  return _shapes.transpose(ct_data, tuple(int(i) for i in np.argsort(data_perm)))


_linear_in_data_jvp(bcoo_transpose_p)
_data_transpose(bcoo_transpose_p, _transpose_transpose)


def _transpose_batch(args, dims, *, permutation, spinfo):
  data, indices, info = _batch_to_front(*args, dims, spinfo, _size(args, dims))
  perm = (0,) + tuple(p + 1 for p in permutation)
  d, i = bcoo_transpose_p.bind(data, indices, permutation=perm, spinfo=info)
  return [d, i], [0, 0 if dims[1] is not None else 0]


batching.primitive_batchers[bcoo_transpose_p] = _transpose_batch


# --- bcoo_dot_general -----------------------------------------------------------------------
bcoo_dot_general_p = core.Primitive("bcoo_dot_general")


@bcoo_dot_general_p.def_abstract_eval
def _dot_abstract(lhs_data, lhs_indices, rhs, *, dimension_numbers, lhs_spinfo,
                  preferred_element_type):
  validate_bcoo(lhs_data, lhs_indices, lhs_spinfo.shape)
  shape = _dot._dot_general_shape(tuple(lhs_spinfo.shape), tuple(rhs.shape), dimension_numbers)
  dtype = _dot.dot_result_dtype(lhs_data.dtype, rhs.dtype, preferred_element_type)
  return ShapedArray(shape, dtype, lhs_data.weak_type and rhs.weak_type)


def _ranges_like(*xs):
  start = 0
  for x in xs:
    yield list(range(start, start + len(x)))
    start += len(x)


def _dot_transpose(ct, lhs_data, lhs_indices, rhs, *, dimension_numbers, lhs_spinfo,
                   preferred_element_type):
  if ad.is_undefined_primal(lhs_indices):
    raise ValueError("Cannot transpose with respect to sparse indices")
  (lc, rc), (lb, rb) = dimension_numbers
  lhs_ndim = len(lhs_spinfo.shape)
  rhs_ndim = _aval(rhs).ndim
  lhs_kept = _remaining(lhs_ndim, lc, lb)
  rhs_kept = _remaining(rhs_ndim, rc, rb)
  ans_batch, ans_lhs, ans_rhs = _ranges_like(lb, lhs_kept, rhs_kept)
  if type(ct) is ad.Zero:
    return [ad.Zero(lhs_data.aval) if ad.is_undefined_primal(lhs_data) else None, None,
            ad.Zero(rhs.aval) if ad.is_undefined_primal(rhs) else None]
  if ad.is_undefined_primal(lhs_data):
    dims = ((tuple(ans_rhs), tuple(rhs_kept)), (tuple(ans_batch), tuple(rb)))
    perm = list(lb) + lhs_kept + [lc[i] for i in np.argsort(rc)]
    out_axes = tuple(int(i) for i in np.argsort(perm))
    ia = core.get_aval(lhs_indices)
    n_batch = ia.ndim - 2
    place_shape = tuple(ia.shape[:n_batch]) + (1,) * ia.shape[-1]
    place_aval = ShapedArray(tuple(ia.shape[:n_batch + 1]), np.dtype(np.float32))
    try:
      validate_permutation(place_aval, ia, perm, place_shape)
      efficient = True
    except NotImplementedError:
      efficient = False
    identity = tuple(perm) == tuple(range(len(perm)))
    if efficient and identity:
      res = bcoo_dot_general_sampled_p.bind(ct, rhs, lhs_indices, dimension_numbers=dims)
    elif efficient:   # sampled product at the un-transposed indices, then transposed back
      place = ad.zeros_like_aval(place_aval)
      _, idx_t = bcoo_transpose_p.bind(place, lhs_indices, permutation=tuple(perm),
                                       spinfo=SparseInfo(place_shape))
      res_t = bcoo_dot_general_sampled_p.bind(ct, rhs, idx_t, dimension_numbers=dims)
      res, _ = bcoo_transpose_p.bind(res_t, idx_t, permutation=out_axes,
                                     spinfo=SparseInfo(tuple(place_shape[i] for i in perm)))
    else:           # batch dims mixed with others: densify the cotangent product (as JAX)
      dense_t = _dot.dot_general(ct, rhs, dims)
      res = bcoo_extract_p.bind(lhs_indices, _shapes.transpose(dense_t, out_axes),
                                assume_unique=True)
    if core.get_aval(res).shape != lhs_data.aval.shape:
      res = ad.unbroadcast(lhs_data.aval, res)
    return [res, None, None]
  dims = ((tuple(lhs_kept), tuple(ans_lhs)), (tuple(lb), tuple(ans_batch)))
  rc_by_l = [rc[i] for i in np.argsort(lc)]
  out_axes = tuple(int(i) for i in np.argsort(list(rb) + rc_by_l + rhs_kept))
  res = bcoo_dot_general_p.bind(lhs_data, lhs_indices, ct, dimension_numbers=dims,
                                lhs_spinfo=lhs_spinfo,
                                preferred_element_type=preferred_element_type)
  return [None, None, _shapes.transpose(res, out_axes)]


ad.defjvp(bcoo_dot_general_p,
          lambda g, d, i, r, **kw: bcoo_dot_general_p.bind(g, i, r, **kw), None,
          lambda g, d, i, r, **kw: bcoo_dot_general_p.bind(d, i, g, **kw))
ad.primitive_transposes[bcoo_dot_general_p] = _dot_transpose


def batched_dot_dims(dimension_numbers, rd):
  """(dimension numbers, output batch dim) of a sparse-dense product whose sparse operand
  got a new leading batch dimension and whose dense operand is mapped along ``rd``
  (``None``: unmapped).  Shared with the BCSR product's batching rule."""
  (lc, rc), (lb, rb) = dimension_numbers
  lc = tuple(d + 1 for d in lc)
  lb = tuple(d + 1 for d in lb)
  if rd is None:
    return ((lc, rc), (lb, rb)), len(lb)
  rc = tuple(d + (d >= rd) for d in rc)
  rb = tuple(d + (d >= rd) for d in rb)
  return ((lc, rc), ((0,) + lb, (rd,) + rb)), 0


def _dot_batch(args, dims, *, dimension_numbers, lhs_spinfo, preferred_element_type):
  size = _size(args, dims)
  data, indices, info = _batch_to_front(args[0], args[1], dims[:2], lhs_spinfo, size)
  rhs, rd = args[2], dims[2]
  dn, out_dim = batched_dot_dims(dimension_numbers, rd)
  out = bcoo_dot_general_p.bind(data, indices, rhs, dimension_numbers=dn, lhs_spinfo=info,
                                preferred_element_type=preferred_element_type)
  return out, out_dim


batching.primitive_batchers[bcoo_dot_general_p] = _dot_batch


# --- bcoo_dot_general_sampled ---------------------------------------------------------------
bcoo_dot_general_sampled_p = core.Primitive("bcoo_dot_general_sampled")


@bcoo_dot_general_sampled_p.def_abstract_eval
def _sampled_abstract(a, b, indices, *, dimension_numbers):
  shape = _dot._dot_general_shape(tuple(a.shape), tuple(b.shape), dimension_numbers)
  dtype = _dot.dot_result_dtype(a.dtype, b.dtype)
  return _extract_abstract(indices, ShapedArray(shape, dtype, a.weak_type and b.weak_type),
                           assume_unique=True)


def _sampled_transpose(ct, a, b, indices, *, dimension_numbers):
  """The cotangents of the dense operands as sparse-dense products of the sampled
  cotangent (JAX densifies it first)."""
  if ad.is_undefined_primal(indices):
    raise ValueError("Cannot transpose with respect to sparse indices")
  (ca, cb), (ba, bb) = dimension_numbers
  aa, ab = _aval(a), _aval(b)
  a_kept = _remaining(aa.ndim, ca, ba)
  b_kept = _remaining(ab.ndim, cb, bb)
  ans_batch, ans_a, ans_b = _ranges_like(ba, a_kept, b_kept)
  out_shape = _dot._dot_general_shape(aa.shape, ab.shape, dimension_numbers)
  info = SparseInfo(out_shape)
  def cotangent(x_aval, other, kept_other, ans_other, batch_x, batch_other, c_x, c_other):
    # ct (sparse) contracted with the other operand over its kept dims, then reordered
    if type(ct) is ad.Zero:
      return ad.Zero(x_aval)
    dn = ((tuple(ans_other), tuple(kept_other)), (tuple(ans_batch), tuple(batch_other)))
    r = bcoo_dot_general_p.bind(ct, indices, other, dimension_numbers=dn, lhs_spinfo=info,
                                preferred_element_type=x_aval.dtype)
    kept_x = _remaining(x_aval.ndim, c_x, batch_x)
    src = list(batch_x) + kept_x + [c_x[i] for i in np.argsort(c_other)]
    return _shapes.transpose(r, tuple(int(i) for i in np.argsort(src)))

  res = [None, None, None]
  if ad.is_undefined_primal(a):
    res[0] = cotangent(aa, b, b_kept, ans_b, ba, bb, ca, cb)
  if ad.is_undefined_primal(b):
    res[1] = cotangent(ab, a, a_kept, ans_a, bb, ba, cb, ca)
  return res


ad.defjvp(bcoo_dot_general_sampled_p,
          lambda g, a, b, i, **kw: bcoo_dot_general_sampled_p.bind(g, b, i, **kw),
          lambda g, a, b, i, **kw: bcoo_dot_general_sampled_p.bind(a, g, i, **kw), None)
ad.primitive_transposes[bcoo_dot_general_sampled_p] = _sampled_transpose


def _sampled_batch(args, dims, *, dimension_numbers):
  size = _size(args, dims)
  a, b, indices = (batching.bdim_at_front(x, d, size) for x, d in zip(args, dims))
  (ca, cb), (ba, bb) = dimension_numbers
  sh = lambda t: tuple(d + 1 for d in t)  # noqa: E731
  dn = ((sh(ca), sh(cb)), ((0,) + sh(ba), (0,) + sh(bb)))
  return bcoo_dot_general_sampled_p.bind(a, b, indices, dimension_numbers=dn), 0


batching.primitive_batchers[bcoo_dot_general_sampled_p] = _sampled_batch


# --- bcoo_spdot_general ---------------------------------------------------------------------
bcoo_spdot_general_p = core.Primitive("bcoo_spdot_general")
bcoo_spdot_general_p.multiple_results = True


@bcoo_spdot_general_p.def_abstract_eval
def _spdot_abstract(lhs_data, lhs_indices, rhs_data, rhs_indices, *, lhs_spinfo, rhs_spinfo,
                    dimension_numbers, preferred_element_type):
  out_shape = _dot._dot_general_shape(tuple(lhs_spinfo.shape), tuple(rhs_spinfo.shape),
                                      dimension_numbers)
  dtype = _dot.dot_result_dtype(lhs_data.dtype, rhs_data.dtype, preferred_element_type)
  lhs = validate_bcoo(lhs_data, lhs_indices, lhs_spinfo.shape)
  rhs = validate_bcoo(rhs_data, rhs_indices, rhs_spinfo.shape)
  (lc, rc), (lb, rb) = dimension_numbers
  if lhs.n_dense or rhs.n_dense:
    raise NotImplementedError("bcoo_spdot_general with dense dimensions.")
  if lhs.n_batch or rhs.n_batch or lb:
    raise NotImplementedError("bcoo_spdot_general: pyjax supports unbatched operands only "
                              "(n_batch=0, no batch dimensions).")
  out_nse = ((lhs.nse if lhs.n_sparse > len(lc) else 1)
             * (rhs.nse if rhs.n_sparse > len(rc) else 1))
  out_nse = min(out_nse, int(np.prod(out_shape, dtype=np.int64)))
  n_out = lhs.n_sparse + rhs.n_sparse - 2 * len(lc)
  return [ShapedArray((out_nse,), dtype), ShapedArray((out_nse, n_out), lhs_indices.dtype)]


def _spdot_jvp(primals, tangents, **kw):
  ld, li, rd, ri = primals
  gld, _, grd, _ = tangents
  out = bcoo_spdot_general_p.bind(*primals, **kw)
  t = None
  if type(gld) is not ad.Zero:
    t = bcoo_spdot_general_p.bind(gld, li, rd, ri, **kw)[0]
  if type(grd) is not ad.Zero:
    t2 = bcoo_spdot_general_p.bind(ld, li, grd, ri, **kw)[0]
    t = t2 if t is None else ad.add_tangents(t, t2)
  t = ad.Zero.from_primal_value(out[0]) if t is None else t
  return out, [t, ad.Zero.from_primal_value(out[1])]


ad.primitive_jvps[bcoo_spdot_general_p] = _spdot_jvp


# --- bcoo_sort_indices / bcoo_sum_duplicates ------------------------------------------------
# Both are linear in ``data`` for fixed indices, so the tangent is the primitive applied to
# the tangent data (the same permutation / the same summation).  Their transposes gather
# the output cotangent back to the input entries through the permutation / the mapping of
# each entry to its output slot, computed from the indices with ``sort`` (traceable, so it
# works under ``jit`` and ``vmap``).
bcoo_sort_indices_p = core.Primitive("bcoo_sort_indices")
bcoo_sort_indices_p.multiple_results = True
bcoo_sum_duplicates_p = core.Primitive("bcoo_sum_duplicates")
bcoo_sum_duplicates_p.multiple_results = True


@bcoo_sort_indices_p.def_abstract_eval
def _sort_abstract(data, indices, *, spinfo):
  props = validate_bcoo(data, indices, spinfo.shape)
  nb = props.n_batch
  bshape = tuple(max(a, b) for a, b in zip(data.shape[:nb], indices.shape[:nb]))
  return [ShapedArray(bshape + tuple(data.shape[nb:]), data.dtype, data.weak_type),
          ShapedArray(bshape + tuple(indices.shape[nb:]), indices.dtype, indices.weak_type)]


@bcoo_sum_duplicates_p.def_abstract_eval
def _sum_dup_abstract(data, indices, *, spinfo, nse):
  if nse is None:
    raise ValueError("bcoo_sum_duplicates: nse must be specified when using the function "
                     "within jit, vmap, and other transformations requiring abstract "
                     "evaluation.")
  props = validate_bcoo(data, indices, spinfo.shape)
  nb = props.n_batch
  bshape = tuple(max(a, b) for a, b in zip(data.shape[:nb], indices.shape[:nb]))
  return [ShapedArray(bshape + (nse,) + tuple(data.shape[nb + 1:]), data.dtype,
                      data.weak_type),
          ShapedArray(tuple(indices.shape[:nb]) + (nse, props.n_sparse), indices.dtype,
                      indices.weak_type)]


_linear_in_data_jvp(bcoo_sort_indices_p)
_linear_in_data_jvp(bcoo_sum_duplicates_p)


def _data_indices_batch(prim):
  def rule(args, dims, **params):
    data, indices, info = _batch_to_front(*args, dims, params["spinfo"], _size(args, dims))
    d, i = prim.bind(data, indices, **dict(params, spinfo=info))
    if dims[1] is None and core.get_aval(i).shape[0] == 1:
      return [d, _shapes.squeeze(i, (0,))], [0, None]
    return [d, i], [0, 0]
  batching.primitive_batchers[prim] = rule


_data_indices_batch(bcoo_sort_indices_p)
_data_indices_batch(bcoo_sum_duplicates_p)


def _spdot_batch(args, dims, **params):
  """One unbatched product per batch element, stacked (every element has the same
  output nse): the batched result is a BCOO with one more leading batch dimension."""
  size = _size(args, dims)
  outs = []
  for k in range(size):
    ex = [x if d is None else _shapes.index_in_dim(x, k, d, keepdims=False)
          for x, d in zip(args, dims)]
    outs.append(bcoo_spdot_general_p.bind(*ex, **params))
  return [_shapes.concatenate([_shapes.expand_dims(o[j], (0,)) for o in outs], 0)
          for j in range(2)], [0, 0]


batching.primitive_batchers[bcoo_spdot_general_p] = _spdot_batch


def _entry_slots(indices, shape, unique):
  """For each stored entry (along axis ``n_batch``): its position after a stable
  lexicographic sort of the index rows, or with ``unique`` the slot of its distinct index
  (out-of-bounds rows share the slot after the in-bounds ones)."""
  from pyjax import numpy as jnp
  from pyjax._src.lax import sorting as _sorting
  ia = core.get_aval(indices)
  n_batch = ia.ndim - 2
  nse, n_sparse = ia.shape[-2:]
  keys = [indices[..., j] for j in range(n_sparse)]
  if unique:
    fill = [np.asarray(shape[n_batch + j], ia.dtype) for j in range(n_sparse)]
    oob = None
    for k, f in zip(keys, fill):
      bad = (k < 0) | (k >= f)
      oob = bad if oob is None else oob | bad
    keys = [jnp.where(oob, f, k) for k, f in zip(keys, fill)]
  iota = _shapes.broadcasted_iota(np.int32, tuple(ia.shape[:-1]), n_batch)
  if not n_sparse:
    return iota if not unique else jnp.zeros_like(iota)
  *sorted_keys, perm = _sorting.sort(keys + [iota], dimension=n_batch, num_keys=n_sparse)
  if not unique:
    return perm
  new = None
  for k in sorted_keys:
    d = k[..., 1:] != k[..., :-1]
    new = d if new is None else new | d
  first = jnp.ones(tuple(ia.shape[:n_batch]) + (1,), bool)
  pos = jnp.cumsum(jnp.concatenate([first, new], axis=-1).astype(np.int32), axis=-1) - 1
  _, slot = _sorting.sort([perm, pos], dimension=n_batch, num_keys=1)
  return slot


def _gather_entries(ct, where, n_batch, valid=None):
  """``ct`` gathered along axis ``n_batch`` at ``where`` (zero where not ``valid``)."""
  from pyjax import numpy as jnp
  ca = core.get_aval(ct)
  extra = ca.ndim - (n_batch + 1)
  idx = jnp.reshape(where, tuple(core.get_aval(where).shape) + (1,) * extra)
  bshape = tuple(max(a, b) for a, b in zip(ca.shape[:n_batch], core.get_aval(idx).shape))
  idx = jnp.broadcast_to(idx, bshape + core.get_aval(idx).shape[n_batch:])
  ct = jnp.broadcast_to(ct, bshape + ca.shape[n_batch:])
  out = jnp.take_along_axis(ct, jnp.clip(idx, 0, ca.shape[n_batch] - 1), axis=n_batch)
  if valid is not None:
    v = jnp.reshape(valid, tuple(core.get_aval(valid).shape) + (1,) * extra)
    out = jnp.where(v, out, jnp.zeros((), out.dtype))
  return out


def _sort_transpose(ct_data, data_aval, indices, *, spinfo):
  from pyjax._src.lax import sorting as _sorting
  n_batch = core.get_aval(indices).ndim - 2
  perm = _entry_slots(indices, spinfo.shape, unique=False)
  iota = _shapes.broadcasted_iota(np.int32, tuple(core.get_aval(perm).shape), n_batch)
  _, inv = _sorting.sort([perm, iota], dimension=n_batch, num_keys=1)
  return _gather_entries(ct_data, inv, n_batch)


def _sum_dup_transpose(ct_data, data_aval, indices, *, spinfo, nse):
  ia = core.get_aval(indices)
  n_batch = ia.ndim - 2
  if ia.shape[-1] == 0:   # all entries were summed into one slot
    from pyjax import numpy as jnp
    return jnp.broadcast_to(ct_data, tuple(core.get_aval(ct_data).shape[:n_batch])
                            + (ia.shape[-2],) + tuple(data_aval.shape[n_batch + 1:]))
  slot = _entry_slots(indices, spinfo.shape, unique=True)
  return _gather_entries(ct_data, slot, n_batch, valid=slot < nse)


_data_transpose(bcoo_sort_indices_p, _sort_transpose)
_data_transpose(bcoo_sum_duplicates_p, _sum_dup_transpose)
