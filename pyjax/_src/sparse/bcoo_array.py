"""The ``BCOO`` array (a pytree of ``data`` and ``indices``) and the public ``bcoo_*``
functions of ``jax.experimental.sparse`` built on the primitives of ``bcoo.py``.

Differs from JAX: ``vmap`` over a BCOO maps its leading batch dimension through the
pytree (pyjax has no ``register_vmappable``): ``tree_unflatten`` drops or adds leading
dimensions of ``shape`` when the leaves' ranks say a batch dimension was removed or
added, so ``in_axes=0`` / ``out_axes=0`` work; other axes are not supported.
"""
from __future__ import annotations

import math
import operator

import numpy as np

from pyjax._src import core, dtypes
from pyjax._src import tree_util
from pyjax._src.lax import dot as _dot
from pyjax._src.sparse import bcoo
from pyjax._src.sparse.util import SparseInfo, validate_bcoo, vmapped_shape

__all__ = ["BCOO", "bcoo_todense", "bcoo_fromdense", "bcoo_extract", "bcoo_transpose",
           "bcoo_dot_general", "bcoo_dot_general_sampled", "bcoo_sum_duplicates",
           "bcoo_sort_indices", "bcoo_reduce_sum", "bcoo_multiply_dense",
           "bcoo_eliminate_zeros", "bcoo_reshape", "bcoo_slice", "bcoo_squeeze"]

_TRACED_NSE_ERROR = """
The error arose for the nse argument of bcoo_fromdense. In order for
BCOO.fromdense() to be used in traced/compiled code, you must pass a concrete
value to the nse (number of stored elements) argument.
"""


def _jnp():
  from pyjax import numpy as jnp
  return jnp


class BCOO:
  """Batched-coordinate sparse array: ``BCOO((data, indices), shape=shape)``.

  ``data`` has shape ``[*batch, nse, *dense]``; ``indices`` has shape
  ``[*batch, nse, n_sparse]``; duplicate indices are summed and out-of-bounds ones
  (padding) ignored.  The positional form ``BCOO(shape, data, indices)`` is not valid
  (TypeError, as in JAX); see docs/sparse.md.
  """
  __hash__ = None
  __array_priority__ = 2000

  def __init__(self, args, *, shape, indices_sorted=False, unique_indices=False):
    jnp = _jnp()
    self.data, self.indices = map(jnp.asarray, args)
    self.indices_sorted = indices_sorted
    self.unique_indices = unique_indices
    self.shape = tuple(operator.index(s) for s in shape)
    validate_bcoo(self.data, self.indices, self.shape)

  # --- attributes
  @property
  def _info(self):
    return SparseInfo(self.shape, self.indices_sorted, self.unique_indices)

  @property
  def nse(self):
    return self.indices.shape[-2]

  @property
  def dtype(self):
    return self.data.dtype

  @property
  def n_batch(self):
    return self.indices.ndim - 2

  @property
  def n_sparse(self):
    return self.indices.shape[-1]

  @property
  def n_dense(self):
    return self.data.ndim - 1 - self.n_batch

  @property
  def ndim(self):
    return len(self.shape)

  @property
  def size(self):
    return math.prod(self.shape)

  def __len__(self):
    return self.shape[0]

  def __repr__(self):
    name = type(self).__name__
    try:
      extra = f", nse={self.nse}"
      if self.n_batch:
        extra += f", n_batch={self.n_batch}"
      if self.n_dense:
        extra += f", n_dense={self.n_dense}"
      r = f"{name}({self.dtype}{list(self.shape)}{extra})"
    except Exception:  # noqa: BLE001 - repr of a broken object
      r = f"{name}(<invalid>)"
    if isinstance(self.data, core.Tracer):
      r = f"{type(self.data).__name__}[{r}]"
    return r

  # --- pytree
  def tree_flatten(self):
    """Children (the buffers) and aux data (shape and index flags), as JAX's."""
    return (self.data, self.indices), self._info._asdict()

  @classmethod
  def tree_unflatten(cls, aux_data, children):
    obj = object.__new__(cls)
    obj.data, obj.indices = children
    if aux_data.keys() != {"shape", "indices_sorted", "unique_indices"}:
      raise ValueError(f"BCOO.tree_unflatten: invalid aux_data={aux_data}")
    obj.__dict__.update(**aux_data)
    d, i = children
    if hasattr(d, "ndim") and hasattr(i, "ndim") and hasattr(i, "shape") and i.ndim >= 2:
      want = (i.ndim - 2) + i.shape[-1] + (d.ndim - i.ndim + 1)
      lead = tuple(max(a, b) for a, b in zip(d.shape, i.shape[:-2]))
      obj.shape = vmapped_shape(obj.shape, want, lead)
    return obj

  # --- conversions
  @classmethod
  def fromdense(cls, mat, *, nse=None, index_dtype=np.int32, n_dense=0, n_batch=0):
    """Create a BCOO array from a dense array."""
    return bcoo_fromdense(mat, nse=nse, index_dtype=index_dtype, n_dense=n_dense,
                          n_batch=n_batch)

  @classmethod
  def from_scipy_sparse(cls, mat, *, index_dtype=None, n_dense=0, n_batch=0):
    """Create a BCOO array from a ``scipy.sparse`` array (indices kept as stored)."""
    if n_dense != 0 or n_batch != 0:
      raise NotImplementedError("BCOO.fromscipy with nonzero n_dense/n_batch")
    jnp = _jnp()
    mat = mat.tocoo()
    data = jnp.asarray(mat.data)
    indices = jnp.asarray(np.column_stack((mat.row, mat.col))).astype(index_dtype or np.int32)
    return cls((data, indices), shape=mat.shape, indices_sorted=False, unique_indices=False)

  def todense(self):
    """Create a dense version of the array."""
    return bcoo_todense(self)

  def block_until_ready(self):
    """Wait for every buffer; returns ``self``."""
    for x in (self.data, self.indices):
      x.block_until_ready()
    return self

  def astype(self, dtype):
    """A copy with ``data`` converted to ``dtype`` (indices unchanged)."""
    return BCOO((self.data.astype(dtype), self.indices), shape=self.shape,
                indices_sorted=self.indices_sorted, unique_indices=self.unique_indices)

  def sum_duplicates(self, nse=None, remove_zeros=True):
    """Sum duplicate indices (sorting them); with ``remove_zeros`` explicit zeros are
    dropped too.  ``nse`` must be given under ``jit``."""
    if remove_zeros:
      return bcoo_eliminate_zeros(self, nse=nse)
    return bcoo_sum_duplicates(self, nse=nse)

  def update_layout(self, *, n_batch=None, n_dense=None, on_inefficient="error"):
    """Change ``n_batch`` / ``n_dense`` (``bcoo_update_layout``)."""
    from pyjax._src.sparse.layout import bcoo_update_layout
    return bcoo_update_layout(self, n_batch=n_batch, n_dense=n_dense,
                              on_inefficient=on_inefficient)

  def sort_indices(self):
    """A copy with indices sorted lexicographically (per batch)."""
    return bcoo_sort_indices(self)

  def transpose(self, axes=None):
    """Permute the dimensions (batch, sparse and dense dimensions stay in their groups)."""
    perm = list(range(self.ndim)[::-1] if axes is None else axes)
    out = bcoo_transpose(self, permutation=perm)
    sparse_perm = [p - self.n_batch for p in perm[self.n_batch:self.n_batch + self.n_sparse]]
    is_sorted = self.indices_sorted and tuple(sparse_perm) == tuple(range(self.n_sparse))
    return BCOO((out.data, out.indices), shape=out.shape, indices_sorted=is_sorted,
                unique_indices=self.unique_indices)

  @property
  def T(self):
    return self.transpose()

  def __getitem__(self, idx):
    """Integer and slice indexing (positive steps): ``bcoo_slice`` then ``bcoo_squeeze``
    of the integer-indexed dimensions; the result keeps ``nse`` entries (those outside
    the slice are moved out of bounds), as JAX's.  One integer-array index (with
    adjacent integers and any slices) goes through ``bcoo_gather``."""
    if not isinstance(idx, tuple):
      idx = (idx,)
    if len(idx) > self.ndim:
      raise IndexError(f"Too many indices for array: {len(idx)} non-None/Ellipsis indices "
                       f"for dim {self.ndim}.")
    starts, limits, strides, squeeze = [], [], [], []
    for d, size in enumerate(self.shape):
      i = idx[d] if d < len(idx) else slice(None)
      if isinstance(i, slice):
        start, stop, step = i.indices(size)
        if step <= 0:
          raise NotImplementedError("BCOO indexing with a negative step")
        starts.append(start)
        limits.append(max(start, stop))
        strides.append(step)
        continue
      try:
        i = operator.index(i)
      except TypeError:
        if getattr(i, "ndim", 0) > 0:   # an integer array: bcoo_gather
          from pyjax._src.sparse.indexing import bcoo_getitem_array
          return bcoo_getitem_array(self, idx)
        raise NotImplementedError(f"BCOO indexing with {type(i).__name__} indices "
                                  "(integers, slices and one integer array)") from None
      if not -size <= i < size:
        raise IndexError(f"index {i} is out of bounds for axis {d} with size {size}")
      i %= size
      starts.append(i)
      limits.append(i + 1)
      strides.append(1)
      squeeze.append(d)
    out = bcoo_slice(self, start_indices=starts, limit_indices=limits, strides=strides)
    return bcoo_squeeze(out, dimensions=squeeze) if squeeze else out

  def reshape(self, *args, **kwargs):
    """Reshape (like ``Array.reshape``; one ``-1`` allowed) keeping batch, sparse and dense
    dimensions apart."""
    shape = args[0] if len(args) == 1 and not isinstance(args[0], int) else args
    shape = kwargs.pop("shape", shape)
    if kwargs:
      raise TypeError(f"reshape() got unexpected keyword arguments {sorted(kwargs)}")
    shape = [operator.index(d) for d in shape]
    if shape.count(-1) == 1:
      rest = math.prod(d for d in shape if d != -1)
      shape[shape.index(-1)] = self.size // rest if rest else 0
    return bcoo_reshape(self, new_sizes=tuple(shape))

  def sum(self, axis=None):
    """Sum over ``axis`` (all by default): a BCOO, or a dense scalar when every axis is
    summed (as JAX's)."""
    axes = tuple(range(self.ndim) if axis is None else (
        (axis,) if isinstance(axis, int) else axis))
    out = bcoo_reduce_sum(self, axes=axes)
    return out.todense() if out.ndim == 0 else out

  # --- arithmetic
  def _scaled(self, data):
    return BCOO((data, self.indices), shape=self.shape, indices_sorted=self.indices_sorted,
                unique_indices=self.unique_indices)

  def __neg__(self):
    return self._scaled(-self.data)

  def __pos__(self):
    return self

  def __mul__(self, other):
    if _is_scalar(other):
      return self._scaled(self.data * other)
    if isinstance(other, BCOO):
      from pyjax._src.sparse.layout import bcoo_multiply_sparse
      return bcoo_multiply_sparse(self, other)
    return self._scaled(bcoo_multiply_dense(self, other))

  __rmul__ = __mul__

  def __truediv__(self, other):
    if _is_scalar(other):
      return self._scaled(self.data / other)
    return NotImplemented

  def __pow__(self, other):
    if _is_scalar(other) and not isinstance(other, core.Tracer) and float(other) > 0:
      return self._scaled(self.data ** other)
    return NotImplemented

  def __add__(self, other):
    """BCOO + BCOO of the same shape and layout: the stored elements of both (as JAX,
    no summation); BCOO + dense array of the same shape: a dense array."""
    jnp = _jnp()
    if isinstance(other, BCOO):
      if (other.shape != self.shape or other.n_batch != self.n_batch
          or other.n_dense != self.n_dense):
        raise NotImplementedError("Addition of BCOO arrays with different shapes or layouts "
                                  f"({self!r} + {other!r})")
      nb = self.n_batch
      data = jnp.concatenate([self.data, other.data.astype(self.dtype)
                              if other.dtype != self.dtype else other.data], axis=nb)
      indices = jnp.concatenate([self.indices, other.indices.astype(self.indices.dtype)],
                                axis=nb)
      return BCOO((data, indices), shape=self.shape)
    if _is_scalar(other) or tuple(getattr(other, "shape", ())) != self.shape:
      raise NotImplementedError(
          "Addition between a sparse array X and a dense array Y is not implemented when "
          "the output shape is larger than Y.shape. This is to prevent silent densification "
          "of a large sparse array. If this is your intent, you can explicitly cast the "
          "sparse array to a dense matrix.")
    return self.todense() + jnp.asarray(other)

  __radd__ = __add__

  def __sub__(self, other):
    return self + (-other)

  def __rsub__(self, other):
    return (-self) + other

  def __matmul__(self, other):
    if isinstance(other, BCOO):
      return _bcoo_spdot(self, other, ((self.ndim - 1,), (0,)))
    jnp = _jnp()
    other = jnp.asarray(other)
    if self.ndim == 0 or other.ndim == 0:
      raise ValueError("matmul: inputs must have at least one dimension")
    rc = 0 if other.ndim == 1 else other.ndim - 2
    return bcoo_dot_general(self, other, dimension_numbers=(((self.ndim - 1,), (rc,)), ((), ())))

  def __rmatmul__(self, other):
    jnp = _jnp()
    other = jnp.asarray(other)
    if self.ndim == 0 or other.ndim == 0:
      raise ValueError("matmul: inputs must have at least one dimension")
    lc = 0 if self.ndim == 1 else self.ndim - 2
    return bcoo_dot_general(other, self,
                            dimension_numbers=(((other.ndim - 1,), (lc,)), ((), ())))


def _is_scalar(x):
  return isinstance(x, (int, float, complex, np.number)) or (
      hasattr(x, "shape") and not isinstance(x, BCOO) and tuple(x.shape) == ())


tree_util.register_pytree_node(BCOO, BCOO.tree_flatten, BCOO.tree_unflatten)


# --- public functions -----------------------------------------------------------------------
def bcoo_todense(mat):
  """The dense array a BCOO represents (duplicates summed, padding ignored)."""
  return bcoo.bcoo_todense_p.bind(mat.data, mat.indices, spinfo=mat._info)


def _count_stored(mat, n_batch, n_dense):
  m = np.asarray(mat) != 0
  if n_dense:
    m = m.any(axis=tuple(range(m.ndim - n_dense, m.ndim)))
  m = m.reshape(m.shape[:n_batch] + (-1,))
  return int(m.sum(axis=-1).max()) if m.size else 0


def bcoo_fromdense(mat, *, nse=None, n_batch=0, n_dense=0, index_dtype=np.int32):
  """Create a BCOO from a dense array; ``nse`` must be concrete (given under ``jit``).
  Unused slots are padded with zeros at out-of-bounds indices, as JAX does."""
  jnp = _jnp()
  mat = jnp.asarray(mat)
  if nse is None:
    nse = core.concrete_or_error(lambda m: _count_stored(m, n_batch, n_dense), mat,
                                 _TRACED_NSE_ERROR)
  nse = core.concrete_or_error(operator.index, nse, _TRACED_NSE_ERROR)
  index_dtype = np.dtype(index_dtype).type
  data, indices = bcoo.bcoo_fromdense_p.bind(mat, nse=nse, n_batch=n_batch, n_dense=n_dense,
                                          index_dtype=index_dtype)
  return BCOO((data, indices), shape=mat.shape, indices_sorted=True, unique_indices=True)


def bcoo_extract(sparr, arr, *, assume_unique=None):
  """A BCOO with ``sparr``'s indices holding the values of dense ``arr`` there (with
  ``assume_unique=False`` repeated indices after the first get zero)."""
  jnp = _jnp()
  if not isinstance(sparr, BCOO):
    raise TypeError(f"First argument to bcoo_extract should be a BCOO array. Got {type(sparr)=}")
  arr = jnp.asarray(arr)
  if arr.shape != sparr.shape:
    raise ValueError(f"shape mismatch: {sparr.shape=} {arr.shape=}")
  if assume_unique is None:
    assume_unique = sparr.unique_indices
  data = bcoo.bcoo_extract_p.bind(sparr.indices, arr, assume_unique=bool(assume_unique))
  return BCOO((data, sparr.indices), shape=sparr.shape, indices_sorted=sparr.indices_sorted,
              unique_indices=sparr.unique_indices)


def bcoo_transpose(mat, *, permutation):
  """Permute the dimensions of a BCOO (batch, sparse and dense groups kept apart)."""
  permutation = tuple(int(p) for p in permutation)
  data, indices = bcoo.bcoo_transpose_p.bind(mat.data, mat.indices, permutation=permutation,
                                          spinfo=mat._info)
  return BCOO((data, indices), shape=tuple(mat.shape[p] for p in permutation))


def bcoo_dot_general(lhs, rhs, *, dimension_numbers, precision=None,
                     preferred_element_type=None, out_sharding=None):
  """General contraction where either side is a BCOO (the other dense) or both are BCOO
  (result BCOO).  ``precision`` and ``out_sharding`` are accepted and ignored."""
  jnp = _jnp()
  dn = _dot.canonicalize_dimension_numbers(dimension_numbers)
  pref = None if preferred_element_type is None else dtypes.canonicalize_dtype(
      preferred_element_type)
  if isinstance(lhs, BCOO) and isinstance(rhs, BCOO):
    return _bcoo_spdot(lhs, rhs, dn[0], dn[1], pref)
  if isinstance(lhs, BCOO):
    rhs = jnp.asarray(rhs)
    if pref is None:
      pref = _dot.dot_result_dtype(lhs.dtype, rhs.dtype)
    return bcoo.bcoo_dot_general_p.bind(lhs.data, lhs.indices, rhs, dimension_numbers=dn,
                                     lhs_spinfo=lhs._info, preferred_element_type=pref)
  if isinstance(rhs, BCOO):
    lhs = jnp.asarray(lhs)
    if pref is None:
      pref = _dot.dot_result_dtype(lhs.dtype, rhs.dtype)
    (lc, rc), (lb, rb) = dn
    # dense @ sparse: contract with the sparse operand on the left, then reorder
    res = bcoo.bcoo_dot_general_p.bind(rhs.data, rhs.indices, lhs,
                                    dimension_numbers=((rc, lc), (rb, lb)),
                                    lhs_spinfo=rhs._info, preferred_element_type=pref)
    n_b = len(lb)
    n_rfree = rhs.ndim - len(rc) - len(rb)
    n_lfree = lhs.ndim - len(lc) - len(lb)
    perm = (list(range(n_b)) + list(range(n_b + n_rfree, n_b + n_rfree + n_lfree))
            + list(range(n_b, n_b + n_rfree)))
    from pyjax._src.lax import shapes as _shapes
    return _shapes.transpose(res, tuple(perm)) if perm != sorted(perm) else res
  return _dot.dot_general(lhs, rhs, dn, preferred_element_type=pref)


def _bcoo_spdot(lhs, rhs, contracting, batch=((), ()), pref=None):
  if isinstance(contracting[0], int):
    contracting = ((contracting[0],), (contracting[1],))
  dn = (tuple(map(tuple, contracting)), tuple(map(tuple, batch)))
  data, indices = bcoo.bcoo_spdot_general_p.bind(
      lhs.data, lhs.indices, rhs.data, rhs.indices, lhs_spinfo=lhs._info,
      rhs_spinfo=rhs._info, dimension_numbers=dn, preferred_element_type=pref)
  shape = _dot._dot_general_shape(lhs.shape, rhs.shape, dn)
  return BCOO((data, indices), shape=shape)


def bcoo_dot_general_sampled(A, B, indices, *, dimension_numbers):
  """``dot_general(A, B)`` evaluated only at ``indices`` (the data of a BCOO with those
  indices); never forms the dense product."""
  dn = _dot.canonicalize_dimension_numbers(dimension_numbers)
  jnp = _jnp()
  return bcoo.bcoo_dot_general_sampled_p.bind(jnp.asarray(A), jnp.asarray(B),
                                           jnp.asarray(indices), dimension_numbers=dn)


def _count_unique(indices, shape):
  """The largest number of distinct in-bounds indices of any batch element."""
  n_batch = indices.ndim - 2
  nse, n_sparse = indices.shape[-2:]
  idx = indices.reshape(math.prod(indices.shape[:-2]), nse, n_sparse)
  bound = np.asarray(shape[n_batch:n_batch + n_sparse])
  ok = np.all((idx >= 0) & (idx < bound), axis=-1)
  return max((len(np.unique(i[k], axis=0)) for i, k in zip(idx, ok)), default=0)


def bcoo_sum_duplicates(mat, nse=None):
  """Sum duplicate indices, sorting them; ``nse`` pads (out-of-bounds indices, zero data)
  or truncates the result and must be given under ``jit``."""
  if nse is None and not isinstance(mat.indices, core.Tracer):
    nse = 1 if mat.n_sparse == 0 else _count_unique(np.asarray(mat.indices), mat.shape)
  if nse is not None:   # (None under a trace: the abstract-eval rule raises JAX's error)
    nse = core.concrete_or_error(operator.index, nse, "nse argument of bcoo_sum_duplicates.")
  data, indices = bcoo.bcoo_sum_duplicates_p.bind(mat.data, mat.indices, spinfo=mat._info,
                                               nse=nse)
  return BCOO((data, indices), shape=mat.shape, indices_sorted=True, unique_indices=True)


def bcoo_eliminate_zeros(mat, nse=None):
  """Move entries whose data is zero out of bounds, then sum duplicates."""
  jnp = _jnp()
  nb = mat.n_batch
  data, indices = mat.data, mat.indices
  mask = data == 0
  if data.ndim > nb + 1:
    mask = mask.all(axis=tuple(range(nb + 1, data.ndim)))
  fill = jnp.asarray(np.array(mat.shape[nb:nb + mat.n_sparse], dtype=indices.dtype))
  indices = jnp.where(mask[..., None], fill, indices)
  return bcoo_sum_duplicates(BCOO((data, indices), shape=mat.shape), nse=nse)


def bcoo_sort_indices(mat):
  """Sort the indices lexicographically per batch (data permuted alike)."""
  data, indices = bcoo.bcoo_sort_indices_p.bind(mat.data, mat.indices, spinfo=mat._info)
  return BCOO((data, indices), shape=mat.shape, indices_sorted=True,
              unique_indices=mat.unique_indices)


def bcoo_multiply_dense(sp_mat, v):
  """The data of ``sp_mat * v`` (``v`` dense, broadcastable to ``sp_mat.shape``)."""
  jnp = _jnp()
  v = jnp.asarray(v)
  if v.ndim == 0:
    return sp_mat.data * v
  shape = tuple(np.broadcast_shapes(sp_mat.shape, v.shape))
  if shape != sp_mat.shape:
    raise NotImplementedError("bcoo_multiply_dense: the dense operand must broadcast to "
                              f"the sparse shape {sp_mat.shape}; got {v.shape}")
  v = jnp.broadcast_to(v, shape)
  return sp_mat.data * bcoo.bcoo_extract_p.bind(sp_mat.indices, v, assume_unique=True)


def bcoo_reduce_sum(mat, *, axes):
  """Sum over ``axes``: dense axes sum the data, sparse axes drop their index column
  (the result may hold duplicates), batch axes merge into the stored elements."""
  jnp = _jnp()
  nd = mat.ndim
  axes = sorted({a % nd if nd else a for a in axes})
  nb, ns = mat.n_batch, mat.n_sparse
  data, indices = mat.data, mat.indices
  shape = list(mat.shape)
  # entries out of bounds in a dropped sparse column must not come back in bounds
  sparse_axes = [a - nb for a in axes if nb <= a < nb + ns]
  if sparse_axes:
    bound = jnp.asarray(np.array(shape[nb:nb + ns], indices.dtype))
    ok = jnp.all(indices < bound, axis=-1)
    data = jnp.where(ok.reshape(ok.shape + (1,) * (data.ndim - ok.ndim)), data,
                     jnp.zeros((), data.dtype))
    keep = [j for j in range(ns) if j not in sparse_axes]
    indices = indices[..., np.array(keep, np.int32)] if keep else indices[..., :0]
  dense_axes = [a - nb - ns + nb + 1 for a in axes if a >= nb + ns]
  if dense_axes:
    data = data.sum(axis=tuple(dense_axes))
  batch_axes = [a for a in axes if a < nb]
  for b in reversed(batch_axes):
    cur_nb = indices.ndim - 2
    data = jnp.broadcast_to(data, tuple(max(x, y) for x, y in zip(
        data.shape[:cur_nb], indices.shape[:cur_nb])) + data.shape[cur_nb:])
    full = tuple(data.shape[:cur_nb]) + indices.shape[cur_nb:]
    indices = jnp.broadcast_to(indices, full)
    data = jnp.moveaxis(data, b, cur_nb - 1)
    indices = jnp.moveaxis(indices, b, cur_nb - 1)
    data = data.reshape(data.shape[:cur_nb - 1] + (-1,) + data.shape[cur_nb + 1:])
    indices = indices.reshape(indices.shape[:cur_nb - 1] + (-1,) + indices.shape[cur_nb + 1:])
  new_shape = tuple(s for i, s in enumerate(shape) if i not in axes)
  return BCOO((data, indices), shape=new_shape)


def bcoo_reshape(mat, *, new_sizes, dimensions=None, sharding=None):
  """``lax.reshape`` of a BCOO: batch and dense dimensions are reshaped in the buffers,
  sparse ones by re-indexing; the new shape must not mix the three groups (ValueError)."""
  jnp = _jnp()
  from pyjax._src.lax import shapes as _shapes
  new_sizes = tuple(operator.index(d) for d in new_sizes)
  if math.prod(new_sizes) != mat.size:
    raise TypeError(f"reshape total size must be unchanged, got new_sizes {new_sizes} "
                    f"for shape {mat.shape}.")
  nb, ns = mat.n_batch, mat.n_sparse
  if (tuple(mat.indices.shape[:nb]) != mat.shape[:nb]
      or tuple(mat.data.shape[:nb]) != mat.shape[:nb]):
    raise NotImplementedError("reshape of arrays with broadcasted batch dimensions.")
  perm = tuple(range(mat.ndim)) if dimensions is None else tuple(dimensions)
  batch_perm, sparse_perm, dense_perm = bcoo.validate_permutation(mat.data, mat.indices, perm,
                                                               mat.shape)
  batch_size = math.prod(mat.shape[:nb])
  sparse_size = math.prod(mat.shape[nb:nb + ns])
  cum = np.cumprod(np.array(new_sizes, dtype=np.int64)) if new_sizes else np.array([], np.int64)
  if batch_size != 1 and batch_size not in cum:
    raise ValueError("bcoo_reshape: new shape cannot mix batch and sparse dimensions; "
                     f"got shape={mat.shape} new_shape={new_sizes} with n_batch={nb}")
  if sparse_size != 1 and batch_size * sparse_size not in cum:
    raise ValueError("bcoo_reshape: new shape cannot mix sparse and dense dimensions; "
                     f"got shape={mat.shape} new_shape={new_sizes} with n_dense={mat.n_dense}")
  i1 = int(cum.searchsorted(batch_size, side="right"))
  i2 = int(cum.searchsorted(batch_size * sparse_size, side="right"))
  new_batch, new_sparse, new_dense = new_sizes[:i1], new_sizes[i1:i2], new_sizes[i2:]
  data = _shapes.reshape(mat.data, new_batch + (mat.nse,) + new_dense, dimensions=(
      *batch_perm, nb, *(p + nb + 1 for p in dense_perm)))
  indices = _shapes.reshape(mat.indices, new_batch + (mat.nse, ns),
                            dimensions=(*batch_perm, nb, nb + 1))
  if not new_sparse:
    indices = jnp.zeros(new_batch + (mat.nse, 0), indices.dtype)
  elif ns:
    old_sparse = tuple(mat.shape[nb + i] for i in sparse_perm)
    cols = tuple(indices[..., i] for i in sparse_perm)
    bound = jnp.asarray(np.array(mat.shape[nb:nb + ns], indices.dtype))
    oob = jnp.any(indices >= bound, axis=-1, keepdims=True)
    flat = jnp.ravel_multi_index(cols, old_sparse, mode="clip")
    new_cols = jnp.unravel_index(flat, new_sparse)
    indices = jnp.stack([c.astype(indices.dtype) for c in new_cols], axis=-1)
    indices = jnp.where(oob, jnp.asarray(np.array(new_sparse, indices.dtype)), indices)
  return BCOO((data, indices), shape=new_sizes)


def bcoo_slice(mat, *, start_indices, limit_indices, strides=None):
  """``lax.slice`` of a BCOO: batch and dense dimensions slice the buffers; stored
  elements outside the sparse window move out of bounds (zero data), and when ``nse``
  exceeds the window's size duplicates are summed down to it (as JAX)."""
  jnp = _jnp()
  if not isinstance(mat, BCOO):
    raise TypeError(f"bcoo_slice: input should be BCOO array, got type(mat)={type(mat)}")
  starts = [operator.index(i) for i in start_indices]
  limits = [operator.index(i) for i in limit_indices]
  strides = [1] * mat.ndim if strides is None else [operator.index(i) for i in strides]
  if not len(starts) == len(limits) == mat.ndim:
    raise ValueError(f"bcoo_slice: indices must have size mat.ndim={mat.ndim}")
  if len(strides) != mat.ndim:
    raise ValueError(f"len(strides) = {len(strides)}; expected {mat.ndim}")
  if any(st <= 0 for st in strides):
    raise ValueError(f"strides must be a sequence of positive integers; got {strides}")
  if not all(0 <= a <= b <= n for a, b, n in zip(starts, limits, mat.shape)):
    raise ValueError(f"bcoo_slice: invalid indices. Got start_indices={starts}, "
                     f"limit_indices={limits} and shape={mat.shape}")
  nb, ns = mat.n_batch, mat.n_sparse
  dsl, isl = [], []
  for i in range(nb):
    sl = slice(starts[i], limits[i], strides[i])
    dsl.append(slice(None) if mat.data.shape[i] != mat.shape[i] else sl)
    isl.append(slice(None) if mat.indices.shape[i] != mat.shape[i] else sl)
  dsl.append(slice(None))
  dsl += [slice(a, b, st) for a, b, st in zip(starts[nb + ns:], limits[nb + ns:],
                                               strides[nb + ns:])]
  data = mat.data[tuple(dsl)]
  indices = mat.indices[tuple(isl) + (slice(None), slice(None))]
  new_shape = tuple((b - a + st - 1) // st for a, b, st in zip(starts, limits, strides))
  if ns:
    dt = indices.dtype
    lo = jnp.asarray(np.array(starts[nb:nb + ns], dt))
    hi = jnp.asarray(np.array(limits[nb:nb + ns], dt))
    st = jnp.asarray(np.array(strides[nb:nb + ns], dt))
    keep = jnp.all((indices >= lo) & (indices < hi) & ((indices - lo) % st == 0),
                   axis=-1, keepdims=True)
    indices = jnp.where(keep, (indices - lo + st - 1) // st, (hi - lo + st - 1) // st)
    k = keep[..., 0].reshape(keep.shape[:-1] + (1,) * mat.n_dense)
    data = jnp.where(k, data, jnp.zeros((), data.dtype))
    window = math.prod(new_shape[nb:nb + ns])
    if mat.nse > window:
      data, indices = bcoo.bcoo_sum_duplicates_p.bind(data, indices,
                                                   spinfo=SparseInfo(new_shape), nse=window)
  return BCOO((data, indices), shape=new_shape)


def bcoo_squeeze(arr, *, dimensions):
  """Remove size-1 dimensions (``lax.squeeze``) of a BCOO."""
  jnp = _jnp()
  dims = sorted({operator.index(d) % arr.ndim for d in dimensions})
  if any(arr.shape[d] != 1 for d in dims):
    raise ValueError("cannot select an axis to squeeze out which has size not equal to "
                     f"one, got shape={arr.shape} and dimensions={tuple(dimensions)}")
  nb, ns = arr.n_batch, arr.n_sparse
  batch = [d for d in dims if d < nb]
  sparse_cols = [d - nb for d in dims if nb <= d < nb + ns]
  dense = [d - nb - ns for d in dims if d >= nb + ns]
  data = jnp.squeeze(arr.data, tuple(batch) + tuple(nb + 1 + d for d in dense)) \
      if batch or dense else arr.data
  indices = jnp.squeeze(arr.indices, tuple(batch)) if batch else arr.indices
  if sparse_cols:
    keep = [j for j in range(ns) if j not in sparse_cols]
    indices = indices[..., np.array(keep, np.int32)] if keep else indices[..., :0]
  shape = tuple(s for i, s in enumerate(arr.shape) if i not in dims)
  return BCOO((data, indices), shape=shape)
