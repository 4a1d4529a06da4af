"""``BCSR``: batched compressed-sparse-row arrays (two sparse dimensions).

``fromdense``, ``todense``, ``bcsr_extract`` and products with a dense right operand bind
JAX's ``bcsr_*`` primitives (``bcsr_prims.py``), so their jaxprs print as JAX's; the other
operations (``sum_duplicates``, ``@`` with a sparse operand, ``to_bcoo``) go through BCOO,
as JAX's do.
"""
from __future__ import annotations

import math
import operator

import numpy as np

from pyjax._src import tree_util
from pyjax._src.sparse import bcoo_array as _bcoo
from pyjax._src.sparse import bcsr_prims
from pyjax._src.sparse.bcsr_prims import csr_rows as _csr_rows
from pyjax._src.sparse.util import SparseInfo, vmapped_shape

__all__ = ["BCSR", "bcsr_fromdense", "bcsr_todense", "bcsr_extract", "bcsr_dot_general",
           "bcsr_sum_duplicates"]


def _jnp():
  from pyjax import numpy as jnp
  return jnp


def _validate(data, indices, indptr, shape):
  n_batch = indices.ndim - 1
  n_dense = data.ndim - indices.ndim
  shape = tuple(shape)
  if len(shape) != n_batch + 2 + n_dense:
    raise ValueError(f"Invalid shape={shape} for BCSR with n_batch={n_batch}, "
                     f"n_dense={n_dense}: BCSR has two sparse dimensions")
  nse = indices.shape[-1]
  if tuple(data.shape[n_batch:]) != (nse,) + shape[n_batch + 2:]:
    raise ValueError(f"Invalid data.shape={tuple(data.shape)} for nse={nse}, "
                     f"n_batch={n_batch}, n_dense={n_dense}")
  if tuple(indptr.shape[n_batch:]) != (shape[n_batch] + 1,):
    raise ValueError(f"indptr shape must match the matrix shape plus 1; got "
                     f"indptr.shape={tuple(indptr.shape)} for shape={shape}")


class BCSR:
  """Batched CSR array: ``BCSR((data, indices, indptr), shape=shape)`` with ``data`` of
  shape ``[*batch, nse, *dense]``, column ``indices`` ``[*batch, nse]`` and row pointers
  ``indptr`` ``[*batch, n_rows + 1]``."""
  __hash__ = None
  __array_priority__ = 2000

  def __init__(self, args, *, shape, indices_sorted=False, unique_indices=False):
    jnp = _jnp()
    self.data, self.indices, self.indptr = map(jnp.asarray, args)
    self.shape = tuple(operator.index(s) for s in shape)
    self.indices_sorted = indices_sorted
    self.unique_indices = unique_indices
    _validate(self.data, self.indices, self.indptr, self.shape)

  _info = property(lambda self: SparseInfo(self.shape, self.indices_sorted,
                                           self.unique_indices))
  nse = property(lambda self: self.indices.shape[-1])
  dtype = property(lambda self: self.data.dtype)
  n_batch = property(lambda self: self.indices.ndim - 1)
  n_sparse = property(lambda self: 2)
  n_dense = property(lambda self: self.data.ndim - self.indices.ndim)
  ndim = property(lambda self: len(self.shape))
  size = property(lambda self: math.prod(self.shape))

  def __len__(self):
    return self.shape[0]

  def __repr__(self):
    return _bcoo.BCOO.__repr__(self)

  def tree_flatten(self):
    """Children (the buffers) and aux data (shape and index flags), as JAX's."""
    return (self.data, self.indices, self.indptr), self._info._asdict()

  @classmethod
  def tree_unflatten(cls, aux_data, children):
    obj = object.__new__(cls)
    obj.data, obj.indices, obj.indptr = children
    if aux_data.keys() != {"shape", "indices_sorted", "unique_indices"}:
      raise ValueError(f"BCSR.tree_unflatten: invalid aux_data={aux_data}")
    obj.__dict__.update(**aux_data)
    d, i = obj.data, obj.indices
    if hasattr(d, "ndim") and hasattr(i, "ndim"):   # vmap in/out (see bcoo_array.py)
      obj.shape = vmapped_shape(obj.shape, (i.ndim - 1) + 2 + (d.ndim - i.ndim), d.shape)
    return obj

  @classmethod
  def fromdense(cls, mat, *, nse=None, index_dtype=np.int32, n_dense=0, n_batch=0):
    """Create a BCSR array from a dense array."""
    return bcsr_fromdense(mat, nse=nse, index_dtype=index_dtype, n_dense=n_dense,
                          n_batch=n_batch)

  @classmethod
  def from_bcoo(cls, arr):
    """Convert a BCOO with two sparse dimensions (sorting its indices if needed)."""
    if arr.n_sparse != 2:
      raise NotImplementedError(f"BSCR.from_bcoo requires n_sparse=2; got arr.n_sparse={arr.n_sparse}")
    if not arr.indices_sorted:
      arr = arr.sort_indices()
    jnp = _jnp()
    from pyjax._src.api_vmap import vmap
    n_rows = arr.shape[arr.n_batch]
    dt = arr.indices.dtype

    def ptr(rows):   # the same jnp steps as JAX's, so jaxprs print alike
      return jnp.zeros(n_rows + 1, dt).at[1:].set(
          jnp.cumsum(jnp.bincount(rows, length=n_rows).astype(dt)))

    for _ in range(arr.n_batch):
      ptr = vmap(ptr)
    return cls((arr.data, arr.indices[..., 1], ptr(arr.indices[..., 0])), shape=arr.shape)

  @classmethod
  def from_scipy_sparse(cls, mat, *, index_dtype=None, n_dense=0, n_batch=0):
    """Create a BCSR array from a 2-D ``scipy.sparse`` array."""
    if n_dense != 0 or n_batch != 0:
      raise NotImplementedError("BCSR from_scipy_sparse with nonzero n_dense/n_batch.")
    if mat.ndim != 2:
      raise ValueError(f"BCSR from_scipy_sparse requires 2D array; {mat.ndim}D is given.")
    jnp = _jnp()
    mat = mat.tocsr()
    it = index_dtype or np.int32
    return cls((jnp.asarray(mat.data), jnp.asarray(mat.indices.astype(it)),
                jnp.asarray(mat.indptr.astype(it))), shape=mat.shape)

  def to_bcoo(self):
    """The same array as a BCOO (row indices recovered from ``indptr``)."""
    jnp = _jnp()
    rows = _csr_rows(self.indices, self.indptr)
    return _bcoo.BCOO((self.data, jnp.stack([rows, self.indices], axis=-1)), shape=self.shape)

  def todense(self):
    """Create a dense version of the array."""
    return bcsr_todense(self)

  def sum_duplicates(self, nse=None, remove_zeros=True):
    """Sum duplicate indices (through BCOO); ``nse`` must be given under ``jit``."""
    return BCSR.from_bcoo(self.to_bcoo().sum_duplicates(nse=nse, remove_zeros=remove_zeros))

  def block_until_ready(self):
    """Wait for every buffer; returns ``self``."""
    for x in (self.data, self.indices, self.indptr):
      x.block_until_ready()
    return self

  def transpose(self, *args, **kwargs):
    """Not implemented, as in JAX (NotImplementedError); use ``to_bcoo().T``."""
    raise NotImplementedError("Transpose is not implemented.")

  @property
  def T(self):
    return self.transpose()

  def __matmul__(self, other):
    from pyjax import Array
    from pyjax._src import core
    from pyjax._src.lax import dot as _dot
    if (self.ndim == 2 and isinstance(other, (np.ndarray, Array, core.Tracer))
        and np.ndim(other) in (1, 2)):
      # a matrix times a dense vector/matrix: ``bcsr_dot_general`` as JAX's sparsify binds it
      other = _jnp().asarray(other)
      return bcsr_dot_general(self, other, dimension_numbers=(((1,), (0,)), ((), ())),
                              preferred_element_type=_dot.dot_result_dtype(self.dtype,
                                                                           other.dtype))
    return self.to_bcoo() @ other

  def __rmatmul__(self, other):
    return other @ self.to_bcoo()


tree_util.register_pytree_node(BCSR, BCSR.tree_flatten, BCSR.tree_unflatten)


def bcsr_fromdense(mat, *, nse=None, n_batch=0, n_dense=0, index_dtype=np.int32):
  """Create a BCSR from a dense array (binds ``bcsr_fromdense``; ``nse`` must be concrete
  under ``jit``)."""
  from pyjax._src import core
  jnp = _jnp()
  mat = jnp.asarray(mat)
  if nse is None:
    nse = core.concrete_or_error(lambda m: _bcoo._count_stored(m, n_batch, n_dense), mat,
                                 _bcoo._TRACED_NSE_ERROR)
  nse = core.concrete_or_error(operator.index, nse, _bcoo._TRACED_NSE_ERROR)
  bufs = bcsr_prims.bcsr_fromdense_p.bind(mat, nse=nse, n_batch=n_batch, n_dense=n_dense,
                                          index_dtype=np.dtype(index_dtype).type)
  return BCSR(bufs, shape=mat.shape)


def bcsr_todense(mat):
  """The dense array a BCSR represents (binds ``bcsr_todense``)."""
  jnp = _jnp()
  return bcsr_prims.bcsr_todense_p.bind(jnp.asarray(mat.data), jnp.asarray(mat.indices),
                                        jnp.asarray(mat.indptr), spinfo=mat._info)


def bcsr_extract(indices, indptr, mat):
  """The values of dense ``mat`` at the BCSR positions ``(indices, indptr)`` (binds
  ``bcsr_extract``)."""
  jnp = _jnp()
  return bcsr_prims.bcsr_extract_p.bind(*map(jnp.asarray, (indices, indptr, mat)))


def bcsr_dot_general(lhs, rhs, *, dimension_numbers, precision=None,
                     preferred_element_type=None, out_sharding=None):
  """General contraction of a BCSR ``lhs`` with a dense ``rhs`` (binds
  ``bcsr_dot_general``); two dense operands give ``lax.dot_general``.  Differs from JAX:
  a BCSR ``rhs`` is accepted too (computed through BCOO) where JAX raises
  ``NotImplementedError``.  ``precision`` and ``out_sharding`` are ignored, as in JAX."""
  from pyjax._src import dtypes
  from pyjax._src.lax import dot as _dot
  jnp = _jnp()
  if not isinstance(lhs, BCSR) and not isinstance(rhs, BCSR):
    return _dot.dot_general(lhs, rhs, dimension_numbers,
                            preferred_element_type=preferred_element_type)
  if isinstance(rhs, BCSR) or not isinstance(lhs, BCSR):
    lhs = lhs.to_bcoo() if isinstance(lhs, BCSR) else lhs
    rhs = rhs.to_bcoo() if isinstance(rhs, BCSR) else rhs
    return _bcoo.bcoo_dot_general(lhs, rhs, dimension_numbers=dimension_numbers,
                                  preferred_element_type=preferred_element_type)
  dn = _dot.canonicalize_dimension_numbers(dimension_numbers)
  pref = (None if preferred_element_type is None
          else dtypes.canonicalize_dtype(preferred_element_type))
  return bcsr_prims.bcsr_dot_general_p.bind(
      jnp.asarray(lhs.data), jnp.asarray(lhs.indices), jnp.asarray(lhs.indptr),
      jnp.asarray(rhs), dimension_numbers=dn, preferred_element_type=pref,
      lhs_spinfo=lhs._info)


def bcsr_sum_duplicates(mat, nse=None):
  """Sum duplicate indices of a BCSR (explicit zeros kept)."""
  return mat.sum_duplicates(nse=nse, remove_zeros=False)
