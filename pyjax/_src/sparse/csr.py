"""The older ``CSR`` and ``CSC`` sparse matrices (2-D, ``data``/``indices``/``indptr``)
and the primitives ``csr_todense``, ``csr_fromdense``, ``csr_matvec`` and ``csr_matmat``
(``jax.experimental.sparse``), named and parametrized as JAX 0.10's.

A CSC matrix stores the CSR buffers of its transpose.  Each stored element's row comes
from ``indptr`` by JAX's rule (a running count of the ``indptr`` entries at or before its
position, minus one), then the COO semantics of ``coo.py`` apply (reads clamp, writes
drop).  Products accumulate in storage order (NumPy: ``backends/cpu/eager/sparse_coo.py``;
compiled: ``backends/cpu/compiler/sparse_c.py``, same bits).
"""
from __future__ import annotations


import numpy as np

from pyjax._src import core, tree_util
from pyjax._src.avals import ShapedArray
from pyjax._src.interpreters import ad
from pyjax._src.sparse.base import JAXSparse
from pyjax._src.sparse.coo import _nse, define_product, promote

__all__ = ["CSR", "CSC", "csr_todense", "csr_todense_p", "csr_fromdense", "csr_fromdense_p",
           "csr_matvec", "csr_matvec_p", "csr_matmat", "csr_matmat_p"]


def _jnp():
  from pyjax import numpy as jnp
  return jnp


def csr_to_rows(indices, indptr):
  """The row of each stored element (traceable; rows past ``indptr[-1]`` are ``n_rows``)."""
  jnp = _jnp()
  hits = jnp.zeros(indices.shape, indices.dtype).at[indptr].add(1, mode="drop")
  return jnp.cumsum(hits).astype(indices.dtype) - 1


class _CompressedBase(JAXSparse):
  def __init__(self, args, *, shape):
    jnp = _jnp()
    self.data, self.indices, self.indptr = map(jnp.asarray, args)
    super().__init__(args, shape=shape)

  def tree_flatten(self):
    return (self.data, self.indices, self.indptr), {"shape": self.shape}

  @classmethod
  def tree_unflatten(cls, aux_data, children):
    obj = object.__new__(cls)
    obj.data, obj.indices, obj.indptr = children
    if aux_data.keys() != {"shape"}:
      raise ValueError(f"{cls.__name__}.tree_unflatten: invalid aux_data={aux_data}")
    obj.shape = aux_data["shape"]
    return obj

  def _product(self, other, shape, transpose):
    if isinstance(other, JAXSparse):
      raise NotImplementedError("matmul between two sparse objects.")
    data, other = promote(self.data, other)
    if other.ndim == 1:
      return csr_matvec_p.bind(data, self.indices, self.indptr, other, shape=shape,
                               transpose=transpose)
    if other.ndim == 2:
      return csr_matmat_p.bind(data, self.indices, self.indptr, other, shape=shape,
                               transpose=transpose)
    raise NotImplementedError(f"matmul with object of shape {other.shape}")


class CSR(_CompressedBase):
  """Compressed-sparse-row matrix: ``CSR((data, indices, indptr), shape=shape)``.

  Supports ``fromdense``, ``todense``, ``.T`` (a ``CSC``), ``@`` with dense vectors and
  matrices, pytrees; ``sparse.empty``/``sparse.eye`` with ``sparse_format='csr'``."""

  @classmethod
  def fromdense(cls, mat, *, nse=None, index_dtype=np.int32):
    """A CSR matrix of 2-D ``mat``'s non-zeros (``nse`` slots, padding at the end)."""
    return csr_fromdense(mat, nse=nse, index_dtype=index_dtype)

  @classmethod
  def _empty(cls, shape, *, dtype=None, index_dtype="int32"):
    jnp = _jnp()
    shape = tuple(shape)
    if len(shape) != 2:
      raise ValueError(f"CSR must have ndim=2; got shape={shape}")
    return cls((jnp.empty(0, dtype), jnp.empty(0, index_dtype),
                jnp.zeros(shape[0] + 1, index_dtype)), shape=shape)

  @classmethod
  def _eye(cls, N, M, k, *, dtype=None, index_dtype="int32"):
    jnp = _jnp()
    size = min(N, M - k) if k > 0 else min(N + k, M)
    if size <= 0:
      return cls._empty((N, M), dtype=dtype, index_dtype=index_dtype)
    first = max(-k, 0)     # the first row with an element
    rows = np.arange(N + 1)
    indptr = np.clip(rows - first, 0, size).astype(index_dtype)
    indices = jnp.arange(size, dtype=index_dtype) + max(k, 0)
    return cls((jnp.ones(size, dtype), indices.astype(index_dtype), jnp.asarray(indptr)),
               shape=(N, M))

  def todense(self):
    return csr_todense(self)

  def transpose(self, axes=None):
    if axes is not None:
      raise NotImplementedError("axes argument to transpose()")
    return CSC((self.data, self.indices, self.indptr), shape=self.shape[::-1])

  def __matmul__(self, other):
    return self._product(other, self.shape, False)


class CSC(_CompressedBase):
  """Compressed-sparse-column matrix: ``CSC((data, indices, indptr), shape=shape)``
  (``indices`` are row numbers, ``indptr`` runs over columns)."""

  @classmethod
  def fromdense(cls, mat, *, nse=None, index_dtype=np.int32):
    """A CSC matrix of 2-D ``mat``'s non-zeros (column-major order)."""
    return csr_fromdense(_jnp().asarray(mat).T, nse=nse, index_dtype=index_dtype).T

  @classmethod
  def _empty(cls, shape, *, dtype=None, index_dtype="int32"):
    shape = tuple(shape)
    if len(shape) != 2:
      raise ValueError(f"CSC must have ndim=2; got shape={shape}")
    return CSR._empty(shape[::-1], dtype=dtype, index_dtype=index_dtype).T

  @classmethod
  def _eye(cls, N, M, k, *, dtype=None, index_dtype="int32"):
    return CSR._eye(M, N, -k, dtype=dtype, index_dtype=index_dtype).T

  def todense(self):
    return csr_todense(self.T).T

  def transpose(self, axes=None):
    if axes is not None:
      raise NotImplementedError("axes argument to transpose()")
    return CSR((self.data, self.indices, self.indptr), shape=self.shape[::-1])

  def __matmul__(self, other):
    return self._product(other, self.shape[::-1], True)


for _cls in (CSR, CSC):
  tree_util.register_pytree_node(_cls, _cls.tree_flatten, _cls.tree_unflatten)


# --- csr_todense ----------------------------------------------------------------------------
csr_todense_p = core.Primitive("csr_todense")


def csr_todense(mat):
  """The dense matrix of CSR ``mat``."""
  return csr_todense_p.bind(mat.data, mat.indices, mat.indptr, shape=mat.shape)


@csr_todense_p.def_abstract_eval
def _todense_abstract(data, indices, indptr, *, shape):
  return ShapedArray(tuple(shape), data.dtype, data.weak_type)


def _todense_transpose(ct, data, indices, indptr, *, shape):
  if ad.is_undefined_primal(indices) or ad.is_undefined_primal(indptr):
    raise ValueError("Cannot transpose with respect to sparse indices")
  if type(ct) is ad.Zero:
    return [ad.Zero(data.aval), None, None]
  return [ct[csr_to_rows(indices, indptr), indices], None, None]


ad.defjvp(csr_todense_p, lambda g, data, indices, indptr, *, shape:
          csr_todense_p.bind(g, indices, indptr, shape=shape), None, None)
ad.primitive_transposes[csr_todense_p] = _todense_transpose


# --- csr_fromdense --------------------------------------------------------------------------
csr_fromdense_p = core.Primitive("csr_fromdense")
csr_fromdense_p.multiple_results = True


def csr_fromdense(mat, *, nse=None, index_dtype=np.int32):
  """A ``CSR`` of 2-D ``mat``'s non-zeros in row-major order (``nse`` slots; padding
  after ``indptr[-1]`` with zero data and column 0)."""
  mat = _jnp().asarray(mat)
  nse = _nse(mat, nse, "csr_fromdense")
  bufs = csr_fromdense_p.bind(mat, nse=nse, index_dtype=np.dtype(index_dtype))
  return CSR(bufs, shape=mat.shape)


@csr_fromdense_p.def_abstract_eval
def _fromdense_abstract(mat, *, nse, index_dtype):
  if mat.ndim != 2:
    raise ValueError(f"csr_fromdense: expected a 2-D matrix, got shape {mat.shape}")
  return [ShapedArray((nse,), mat.dtype, mat.weak_type), ShapedArray((nse,), index_dtype),
          ShapedArray((mat.shape[0] + 1,), index_dtype)]


def _fromdense_jvp(primals, tangents, *, nse, index_dtype):
  mat, = primals
  g, = tangents
  data, indices, indptr = csr_fromdense_p.bind(mat, nse=nse, index_dtype=index_dtype)
  if type(g) is ad.Zero:
    t = ad.Zero.from_primal_value(data)
  else:
    t = g[csr_to_rows(indices, indptr), indices]
  return ([data, indices, indptr],
          [t, ad.Zero.from_primal_value(indices), ad.Zero.from_primal_value(indptr)])


def _fromdense_transpose(ct, mat, *, nse, index_dtype):
  data, indices, indptr = ct
  if type(indices) is ad.Zero or type(indptr) is ad.Zero:
    raise ValueError("Cannot transpose with respect to sparse indices")
  return [csr_todense_p.bind(data, indices, indptr, shape=mat.aval.shape)]


ad.primitive_jvps[csr_fromdense_p] = _fromdense_jvp
ad.primitive_transposes[csr_fromdense_p] = _fromdense_transpose


# --- csr_matvec / csr_matmat ----------------------------------------------------------------
csr_matvec_p = core.Primitive("csr_matvec")
csr_matmat_p = core.Primitive("csr_matmat")


def csr_matvec(mat, v, transpose=False):
  """``mat @ v`` (``mat.T @ v`` with ``transpose``) for CSR ``mat`` and 1-D ``v``."""
  return csr_matvec_p.bind(mat.data, mat.indices, mat.indptr, _jnp().asarray(v),
                           shape=mat.shape, transpose=transpose)


def csr_matmat(mat, B, *, transpose=False):
  """``mat @ B`` (``mat.T @ B`` with ``transpose``) for CSR ``mat`` and 2-D ``B``."""
  return csr_matmat_p.bind(mat.data, mat.indices, mat.indptr, _jnp().asarray(B),
                           shape=mat.shape, transpose=transpose)


def _rows_cols(indices, indptr):
  return csr_to_rows(indices, indptr), indices


define_product(csr_matvec_p, 1, lambda kw: kw["shape"], _rows_cols)
define_product(csr_matmat_p, 2, lambda kw: kw["shape"], _rows_cols)
