"""The older ``COO`` sparse matrix (2-D, ``data``/``row``/``col``) and its primitives
``coo_todense``, ``coo_fromdense``, ``coo_matvec`` and ``coo_matmat``
(``jax.experimental.sparse``), with abstract-eval, JVP and transpose rules named and
parametrized as JAX 0.10's.

Index semantics follow JAX's implementations: a stored element reads the dense operand at
its (negative-wrapped, clamped) index and writes the output at its (negative-wrapped)
index, dropped when out of range.  Products accumulate in storage order; the NumPy
kernels are in ``backends/cpu/eager/sparse_coo.py`` and the compiled tier's C kernels in
``backends/cpu/compiler/sparse_c.py`` (same bits).

Differs from JAX: no batching rules (JAX has none for these primitives either), and the
``data`` cotangent of a product is formed at the stored elements (JAX's is the same
values).
"""
from __future__ import annotations

import operator
from typing import NamedTuple

import numpy as np

from pyjax._src import core, tree_util
from pyjax._src.avals import ShapedArray
from pyjax._src.interpreters import ad
from pyjax._src.sparse.base import JAXSparse

__all__ = ["COO", "COOInfo", "coo_todense", "coo_todense_p", "coo_fromdense",
           "coo_fromdense_p", "coo_matvec", "coo_matvec_p", "coo_matmat", "coo_matmat_p"]


def _jnp():
  from pyjax import numpy as jnp
  return jnp


class COOInfo(NamedTuple):
  shape: tuple
  rows_sorted: bool = False
  cols_sorted: bool = False


def promote(data, other):
  """``data`` and ``other`` cast to their common dtype (as ``jnp`` promotes)."""
  jnp = _jnp()
  other = jnp.asarray(other)
  dt = jnp.result_type(data, other)
  return data.astype(dt), other.astype(dt)


class COO(JAXSparse):
  """2-D coordinate-format sparse matrix: ``COO((data, row, col), shape=shape)``.

  Experimental in JAX too; duplicate coordinates are summed.  Supports ``fromdense``,
  ``todense``, ``transpose``/``.T``, ``@`` with a dense vector or matrix, and pytrees."""

  def __init__(self, args, *, shape, rows_sorted=False, cols_sorted=False):
    jnp = _jnp()
    self.data, self.row, self.col = map(jnp.asarray, args)
    self._rows_sorted = rows_sorted
    self._cols_sorted = cols_sorted
    super().__init__(args, shape=shape)

  @property
  def _info(self):
    return COOInfo(self.shape, self._rows_sorted, self._cols_sorted)

  @property
  def _bufs(self):
    return (self.data, self.row, self.col)

  @classmethod
  def fromdense(cls, mat, *, nse=None, index_dtype=np.int32):
    """A COO matrix holding the non-zeros of 2-D ``mat`` (``nse`` slots)."""
    return coo_fromdense(mat, nse=nse, index_dtype=index_dtype)

  def _sort_indices(self):
    """A copy sorted by row, then column (``self`` when rows are already sorted)."""
    if self._rows_sorted:
      return self
    from pyjax import lax
    row, col, data = lax.sort((self.row, self.col, self.data), num_keys=2)
    return type(self)((data, row, col), shape=self.shape, rows_sorted=True)

  @classmethod
  def _empty(cls, shape, *, dtype=None, index_dtype="int32"):
    """A COO matrix with no stored elements (public form: ``sparse.empty``)."""
    jnp = _jnp()
    shape = tuple(shape)
    if len(shape) != 2:
      raise ValueError(f"COO must have ndim=2; got shape={shape}")
    data = jnp.empty(0, dtype)
    row = col = jnp.empty(0, index_dtype)
    return cls((data, row, col), shape=shape, rows_sorted=True, cols_sorted=True)

  @classmethod
  def _eye(cls, N, M, k, *, dtype=None, index_dtype="int32"):
    """Ones on diagonal ``k`` (public form: ``sparse.eye``)."""
    jnp = _jnp()
    size = min(N, M - k) if k > 0 else min(N + k, M)
    if size <= 0:
      return cls._empty((N, M), dtype=dtype, index_dtype=index_dtype)
    idx = jnp.arange(size, dtype=index_dtype)
    row = idx + max(-k, 0)
    col = idx + max(k, 0)
    return cls((jnp.ones(size, dtype), row.astype(index_dtype), col.astype(index_dtype)),
               shape=(N, M), rows_sorted=True, cols_sorted=True)

  def todense(self):
    return coo_todense(self)

  def transpose(self, axes=None):
    if axes is not None:
      raise NotImplementedError("axes argument to transpose()")
    return COO((self.data, self.col, self.row), shape=self.shape[::-1],
               rows_sorted=self._cols_sorted, cols_sorted=self._rows_sorted)

  def tree_flatten(self):
    return (self.data, self.row, self.col), self._info._asdict()

  @classmethod
  def tree_unflatten(cls, aux_data, children):
    obj = object.__new__(cls)
    obj.data, obj.row, obj.col = children
    if aux_data.keys() != {"shape", "rows_sorted", "cols_sorted"}:
      raise ValueError(f"COO.tree_unflatten: invalid aux_data={aux_data}")
    obj.shape = aux_data["shape"]
    obj._rows_sorted = aux_data["rows_sorted"]
    obj._cols_sorted = aux_data["cols_sorted"]
    return obj

  def __matmul__(self, other):
    if isinstance(other, JAXSparse):
      raise NotImplementedError("matmul between two sparse objects.")
    data, other = promote(self.data, other)
    mat = COO((data, self.row, self.col), **self._info._asdict())
    if other.ndim == 1:
      return coo_matvec(mat, other)
    if other.ndim == 2:
      return coo_matmat(mat, other)
    raise NotImplementedError(f"matmul with object of shape {other.shape}")


tree_util.register_pytree_node(COO, COO.tree_flatten, COO.tree_unflatten)


def gather_at(x, row, col):
  """``x[row, col]`` with jnp's read semantics (negatives wrap, then clamp)."""
  return x[row, col]


# --- coo_todense ----------------------------------------------------------------------------
coo_todense_p = core.Primitive("coo_todense")


def coo_todense(mat):
  """The dense matrix of COO ``mat`` (duplicates summed, out-of-range elements dropped)."""
  return coo_todense_p.bind(*mat._bufs, spinfo=mat._info)


@coo_todense_p.def_abstract_eval
def _todense_abstract(data, row, col, *, spinfo):
  return ShapedArray(tuple(spinfo.shape), data.dtype, data.weak_type)


def _todense_transpose(ct, data, row, col, *, spinfo):
  if ad.is_undefined_primal(row) or ad.is_undefined_primal(col):
    raise ValueError("Cannot transpose with respect to sparse indices")
  if type(ct) is ad.Zero:
    return [ad.Zero(data.aval), None, None]
  return [gather_at(ct, row, col), None, None]


ad.defjvp(coo_todense_p, lambda g, data, row, col, *, spinfo:
          coo_todense_p.bind(g, row, col, spinfo=spinfo), None, None)
ad.primitive_transposes[coo_todense_p] = _todense_transpose


# --- coo_fromdense --------------------------------------------------------------------------
coo_fromdense_p = core.Primitive("coo_fromdense")
coo_fromdense_p.multiple_results = True


def _nse(mat, nse, name):
  if nse is None:
    nse = int((_jnp().asarray(mat) != 0).sum())
  return core.concrete_or_error(operator.index, nse, f"{name} nse argument")


def coo_fromdense(mat, *, nse=None, index_dtype=np.int32):
  """A ``COO`` of 2-D ``mat``'s non-zeros in row-major order; ``nse`` (default: the
  number of non-zeros, which must then be concrete) slots, padding at (0, 0) with zero
  data."""
  mat = _jnp().asarray(mat)
  nse = _nse(mat, nse, "coo_fromdense")
  bufs = coo_fromdense_p.bind(mat, nse=nse, index_dtype=np.dtype(index_dtype))
  return COO(bufs, shape=mat.shape, rows_sorted=True)


@coo_fromdense_p.def_abstract_eval
def _fromdense_abstract(mat, *, nse, index_dtype):
  if mat.ndim != 2:
    raise ValueError(f"coo_fromdense: expected a 2-D matrix, got shape {mat.shape}")
  return [ShapedArray((nse,), mat.dtype, mat.weak_type), ShapedArray((nse,), index_dtype),
          ShapedArray((nse,), index_dtype)]


def _fromdense_jvp(primals, tangents, *, nse, index_dtype):
  mat, = primals
  g, = tangents
  data, row, col = coo_fromdense_p.bind(mat, nse=nse, index_dtype=index_dtype)
  t = ad.Zero.from_primal_value(data) if type(g) is ad.Zero else gather_at(g, row, col)
  return [data, row, col], [t, ad.Zero.from_primal_value(row), ad.Zero.from_primal_value(col)]


def _fromdense_transpose(ct, mat, *, nse, index_dtype):
  data, row, col = ct
  if type(row) is ad.Zero or type(col) is ad.Zero:
    raise ValueError("Cannot transpose with respect to sparse indices")
  return [coo_todense_p.bind(data, row, col, spinfo=COOInfo(mat.aval.shape))]


ad.primitive_jvps[coo_fromdense_p] = _fromdense_jvp
ad.primitive_transposes[coo_fromdense_p] = _fromdense_transpose


# --- coo_matvec / coo_matmat ----------------------------------------------------------------
coo_matvec_p = core.Primitive("coo_matvec")
coo_matmat_p = core.Primitive("coo_matmat")


def coo_matvec(mat, v, transpose=False):
  """``mat @ v`` (``mat.T @ v`` with ``transpose``) for COO ``mat`` and 1-D ``v`` of
  ``mat``'s dtype."""
  return coo_matvec_p.bind(*mat._bufs, _jnp().asarray(v), spinfo=mat._info,
                           transpose=transpose)


def coo_matmat(mat, B, *, transpose=False):
  """``mat @ B`` (``mat.T @ B`` with ``transpose``) for COO ``mat`` and 2-D ``B``."""
  return coo_matmat_p.bind(*mat._bufs, _jnp().asarray(B), spinfo=mat._info,
                           transpose=transpose)


def product_abstract(name, data, row, col, b, shape, transpose, ndim):
  """Shape/dtype rule shared by the COO and CSR products."""
  if b.ndim != ndim:
    raise ValueError(f"{name}: expected a {ndim}-D dense operand, got shape {b.shape}")
  if data.dtype != b.dtype:
    raise TypeError(f"{name}: data and dense operand must have the same dtype, got "
                    f"{data.dtype} and {b.dtype}")
  if row.dtype != col.dtype:
    raise TypeError(f"{name}: index arrays must have the same dtype")
  n_in = shape[0] if transpose else shape[1]
  if b.shape[0] != n_in:
    raise ValueError(f"{name}: dense operand has {b.shape[0]} rows, expected {n_in}")
  out = ((shape[1] if transpose else shape[0]),) + tuple(b.shape[1:])
  return ShapedArray(out, data.dtype, data.weak_type and b.weak_type)


def data_cotangent(ct, row, col, b, transpose):
  """Cotangent of ``data`` in ``y = A @ b`` at the stored elements (JAX's values:
  ``ct[row] . b[col]`` with jnp's read semantics)."""
  if transpose:
    row, col = col, row
  c, x = ct[row], b[col]
  return c * x if ct.ndim == 1 else (c * x).sum(axis=1)


def define_product(prim, ndim, shape_of, rows_cols):
  """Abstract eval, JVP and transpose of a sparse x dense product primitive binding
  ``(data, i1, i2, b)``: ``shape_of(params)`` is the matrix shape, ``rows_cols(i1, i2)``
  the stored elements' (row, col) for the ``data`` cotangent."""
  prim.def_abstract_eval(lambda data, i1, i2, b, **kw: product_abstract(
      prim.name, data, i1, i2, b, tuple(shape_of(kw)),
      kw["transpose"], ndim))

  def transpose_rule(ct, data, i1, i2, b, **kw):
    if ad.is_undefined_primal(i1) or ad.is_undefined_primal(i2):
      raise ValueError("Cannot transpose with respect to sparse indices")
    if type(ct) is ad.Zero:
      return [None, None, None, None]
    if ad.is_undefined_primal(b):
      return [None, None, None,
              prim.bind(data, i1, i2, ct, **{**kw, "transpose": not kw["transpose"]})]
    row, col = rows_cols(i1, i2)
    return [data_cotangent(ct, row, col, b, kw["transpose"]), None, None, None]

  ad.defjvp(prim, lambda g, data, i1, i2, b, **kw: prim.bind(g, i1, i2, b, **kw), None, None,
            lambda g, data, i1, i2, b, **kw: prim.bind(data, i1, i2, g, **kw))
  ad.primitive_transposes[prim] = transpose_rule


def _coo_shape(params):
  return params["spinfo"].shape


define_product(coo_matvec_p, 1, _coo_shape, lambda row, col: (row, col))
define_product(coo_matmat_p, 2, _coo_shape, lambda row, col: (row, col))
