"""jax.numpy.linalg on the lax.linalg primitives.

Inputs are promoted to an inexact dtype (integers to the default float) as in JAX;
leading dimensions batch.  ``solve``, ``det``, ``slogdet`` and ``pinv`` carry custom JVP
rules (JAX's formulas), so their derivatives do not go through the pivoted factorization
and ``det``'s derivative stays finite for singular matrices of rank n-1.
"""
from __future__ import annotations

import builtins
import math
import operator
from typing import NamedTuple

import numpy as np

from pyjax._src import core, dtypes
from pyjax._src.api_ad import custom_jvp
from pyjax._src.lax import lax_api as lax
from pyjax._src.lax import linalg as lax_linalg
from pyjax._src.numpy import creation as _creation
from pyjax._src.numpy import linalg_ops as _ops
from pyjax._src.numpy import manipulation as _manip
from pyjax._src.numpy import reductions as _red
from pyjax._src.numpy import ufuncs as _uf
from pyjax._src.numpy.util import library_function as _library_function
from pyjax._src.numpy.util import check_arraylike, promote_dtypes_inexact

__all__ = ["cholesky", "cond", "cross", "det", "diagonal", "eig", "eigh", "eigvals",
           "eigvalsh", "inv", "lstsq", "matmul", "matrix_norm", "matrix_power", "matrix_rank",
           "matrix_transpose", "multi_dot", "norm", "outer", "pinv", "qr", "slogdet", "solve",
           "svd", "svdvals", "tensordot", "tensorinv", "tensorsolve", "trace", "vecdot",
           "vector_norm"]

_max, _min = builtins.max, builtins.min


class EighResult(NamedTuple):
  eigenvalues: object
  eigenvectors: object


class EigResult(NamedTuple):
  eigenvalues: object
  eigenvectors: object


class QRResult(NamedTuple):
  Q: object
  R: object


class SlogdetResult(NamedTuple):
  sign: object
  logabsdet: object


class SVDResult(NamedTuple):
  U: object
  S: object
  Vh: object


# --- helpers ---------------------------------------------------------------------------------
def _arr(name, a):
  check_arraylike(name, a)
  return _red._asarray(name, a)


def _inexact(name, *args):
  check_arraylike(name, *args)
  return promote_dtypes_inexact(*[_red._asarray(name, a) for a in args])


def _T(x):
  return lax_linalg._T(x)


def _H(x):
  return lax_linalg._H(x)


def _square_check(name, a):
  if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
    raise ValueError(f"Argument to {name} must have shape [..., n, n], got {a.shape}.")


def _bmm(a, b):
  """Batched matrix product (leading dims broadcast), HIGHEST precision."""
  return _ops.matmul(a, b, precision=lax.Precision.HIGHEST)


def _broadcast_batch(a, b, a_core, b_core):
  """Broadcast the leading (batch) dimensions of a and b against each other."""
  ab, bb = a.shape[:a.ndim - a_core], b.shape[:b.ndim - b_core]
  batch = _red._broadcast_shapes_or_error(ab, bb)
  a = _red._broadcast_to(a, batch + a.shape[a.ndim - a_core:])
  b = _red._broadcast_to(b, batch + b.shape[b.ndim - b_core:])
  return a, b


def _eye_like(x, n):
  """Identity matrices [..., n, n] with x's batch shape and dtype."""
  batch = x.shape[:-2]
  e = _creation.eye(n, dtype=x.dtype)
  return _red._broadcast_to(e, batch + (n, n))


# --- cholesky / eig / eigh / svd / qr --------------------------------------------------------
def cholesky(a, *, upper=False, symmetrize_input=True):
  """Cholesky factor: lower ``L`` with ``a = L L^H`` (``upper``: ``U = L^H``); NaN where
  ``a`` is not positive definite."""
  a, = _inexact("jnp.linalg.cholesky", a)
  L = lax_linalg.cholesky(a, symmetrize_input=symmetrize_input)
  return _H(L) if upper else L


def eig(a):
  """Eigenvalues and right eigenvectors of general square matrices (complex results;
  eigenvectors normalized to unit norm).  Only the eigenvalues are differentiable, as in
  JAX."""
  a, = _inexact("jnp.linalg.eig", a)
  w, v = lax_linalg.eig(a, compute_left_eigenvectors=False)
  return EigResult(w, v)


def eigvals(a):
  """Eigenvalues of general square matrices (complex)."""
  a, = _inexact("jnp.linalg.eigvals", a)
  return lax_linalg.eig(a, compute_left_eigenvectors=False, compute_right_eigenvectors=False)[0]


def eigh(a, UPLO=None, symmetrize_input=True):
  """Eigenvalues (ascending) and eigenvectors of Hermitian matrices."""
  a, = _inexact("jnp.linalg.eigh", a)
  if UPLO is None or UPLO == "L":
    lower = True
  elif UPLO == "U":
    lower = False
  else:
    raise ValueError(f"UPLO must be one of None, 'L', or 'U', got {UPLO}")
  v, w = lax_linalg.eigh(a, lower=lower, symmetrize_input=symmetrize_input)
  return EighResult(w, v)


def eigvalsh(a, UPLO="L", *, symmetrize_input=True):
  """Eigenvalues (ascending) of Hermitian matrices."""
  return eigh(a, UPLO, symmetrize_input).eigenvalues


def svd(a, full_matrices=True, compute_uv=True, hermitian=False, subset_by_index=None):
  """Singular value decomposition ``a = U @ diag(S) @ Vh`` (``S`` descending);
  ``hermitian`` uses the eigendecomposition."""
  a, = _inexact("jnp.linalg.svd", a)
  if hermitian:
    v, w = lax_linalg.eigh(a, subset_by_index=subset_by_index)
    s = lax.abs(w)
    if not compute_uv:
      return lax.rev(lax.sort(s, dimension=-1), (s.ndim - 1,))
    sign = lax.sign(w)
    idxs = lax.broadcasted_iota(dtypes.default_int_dtype(), s.shape, s.ndim - 1)
    s, idxs, sign = lax.sort((s, idxs, sign), dimension=-1, num_keys=1)
    s = lax.rev(s, (s.ndim - 1,))
    idxs = lax.rev(idxs, (idxs.ndim - 1,))
    sign = lax.rev(sign, (sign.ndim - 1,))
    u = _take_cols(v, idxs)
    vh = _H(lax.mul(u, lax.convert_element_type(
        lax.broadcast_in_dim(sign, u.shape, tuple(range(u.ndim - 2)) + (u.ndim - 1,)), u.dtype)))
    return SVDResult(u, s, vh)
  if compute_uv:
    u, s, vh = lax_linalg.svd(a, full_matrices=full_matrices, compute_uv=True,
                              subset_by_index=subset_by_index)
    return SVDResult(u, s, vh)
  return lax_linalg.svd(a, full_matrices=full_matrices, compute_uv=False,
                        subset_by_index=subset_by_index)


def _take_cols(v, idx):
  """v[..., :, idx] for idx [..., k] (batch dims shared)."""
  from pyjax._src.lax import sorting as _sorting
  shape = v.shape[:-1] + (idx.shape[-1],)
  i = lax.broadcast_in_dim(idx, shape, tuple(range(v.ndim - 2)) + (v.ndim - 1,))
  return _sorting._take_along(v, i, v.ndim - 1)


def svdvals(x, /):
  """Singular values, descending."""
  return svd(x, compute_uv=False, hermitian=False)


def qr(a, mode="reduced"):
  """QR decomposition.  ``mode``: 'reduced' (default), 'complete', 'r' (R only) or 'raw'
  (LAPACK's packed Householder form, transposed as NumPy returns it, and the taus)."""
  a, = _inexact("jnp.linalg.qr", a)
  if mode == "raw":
    h, taus = lax_linalg.geqrf(a)
    return QRResult(_T(h), taus)
  if mode in ("reduced", "r", "full"):
    full_matrices = False
  elif mode == "complete":
    full_matrices = True
  else:
    raise ValueError(f"Unsupported QR decomposition mode '{mode}'")
  q, r = lax_linalg.qr(a, pivoting=False, full_matrices=full_matrices)
  if mode == "r":
    return r
  return QRResult(q, r)


# --- solve / inv -----------------------------------------------------------------------------
@custom_jvp
def _solve_matrix(a, b):
  lu_, _, perm = lax_linalg.lu(a)
  return lax_linalg._lu_solve(lu_, perm, b)


@_solve_matrix.defjvp
def _solve_matrix_jvp(primals, tangents):
  a, b = primals
  da, db = tangents
  lu_, _, perm = lax_linalg.lu(a)
  x = lax_linalg._lu_solve(lu_, perm, b)
  rhs = lax.sub(db, _bmm(da, x))
  return x, lax_linalg._lu_solve(lu_, perm, rhs)


def solve(a, b):
  """Solve ``a @ x = b``.  ``b`` is a vector when 1-D, else a stack of matrices
  ``[..., n, k]``; leading dimensions broadcast (JAX >= 0.5 semantics)."""
  check_arraylike("jnp.linalg.solve", a, b)
  a, b = promote_dtypes_inexact(_red._asarray("solve", a), _red._asarray("solve", b))
  if a.ndim < 2:
    raise ValueError(f"left hand array must be at least two dimensional; got a.shape={a.shape}")
  if (b.ndim > 1 and a.ndim == b.ndim + 1 and a.shape[-1] == b.shape[-1]
      and a.shape[-1] != b.shape[-2]):
    raise ValueError(f"Invalid shapes for solve: {a.shape}, {b.shape}. Prior to JAX v0.5.0, "
                     "this would have been treated as a batched 1-dimensional solve. To "
                     "recover this behavior, use solve(a, b[..., None]).squeeze(-1).")
  if a.shape[-1] != a.shape[-2]:
    sig = "(m,m),(m)->(m)" if b.ndim == 1 else "(m,m),(m,n)->(m,n)"
    raise ValueError(f"inconsistent size for core dimension 'm': {a.shape[-1]} vs "
                     f"{a.shape[-2]} on vectorized function with excluded=frozenset() and "
                     f"signature='{sig}'")
  m = a.shape[-1]
  if b.ndim == 1:
    if b.shape[0] != m:
      raise ValueError(f"inconsistent size for core dimension 'm': {b.shape[0]} vs {m} on "
                       "vectorized function with excluded=frozenset() and "
                       "signature='(m,m),(m)->(m)'")
    a, b2 = _broadcast_batch(a, lax.reshape(b, (m, 1)), 2, 2)
    return lax.squeeze(_solve_matrix(a, b2), (b2.ndim - 1,))
  if b.shape[-2] != m:
    raise ValueError(f"inconsistent size for core dimension 'm': {b.shape[-2]} vs {m} on "
                     "vectorized function with excluded=frozenset() and "
                     "signature='(m,m),(m,n)->(m,n)'")
  a, b = _broadcast_batch(a, b, 2, 2)
  return _solve_matrix(a, b)


def inv(a):
  """Matrix inverse (a solve against the identity)."""
  a, = _inexact("jnp.linalg.inv", a)
  if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
    raise ValueError(f"Argument to inv must have shape [..., n, n], got {a.shape}.")
  return solve(a, _eye_like(a, a.shape[-1]))


# --- det / slogdet ---------------------------------------------------------------------------
def _lu_parity(pivots, n):
  iota = lax.broadcasted_iota(pivots.dtype, pivots.shape, pivots.ndim - 1)
  return _red.count_nonzero(lax.ne(pivots, iota), axis=-1)


def _slogdet_lu(a):
  dtype = a.dtype
  n = a.shape[-1]
  lu_, pivots, _ = lax_linalg.lu(a)
  diag = _ops.diagonal(lu_, axis1=-2, axis2=-1)
  is_zero = _red.any(lax.eq(diag, np.array(0, dtype)), axis=-1)
  parity = _lu_parity(pivots, n)
  if dtypes.is_complex(dtype):
    sign = _red.prod(lax.div(diag, lax.convert_element_type(lax.abs(diag), dtype)), axis=-1)
  else:
    sign = np.array(1, dtype)
    parity = lax.add(parity, _red.count_nonzero(lax.lt(diag, np.array(0, dtype)), axis=-1))
  pm = lax.convert_element_type(lax.add(lax.mul(np.array(-2, parity.dtype),
                                                _uf.remainder(parity, 2)),
                                        np.array(1, parity.dtype)), dtype)
  sign = _red._where(is_zero, np.array(0, dtype), lax.mul(sign, pm))
  logabs = _red.sum(lax.log(lax.abs(diag)), axis=-1)
  rd = logabs.dtype
  logdet = _red._where(is_zero, np.array(-np.inf, rd), logabs)
  return SlogdetResult(sign, logdet)


def _slogdet_qr(a):
  if dtypes.is_complex(a.dtype):
    raise NotImplementedError("slogdet method='qr' not implemented for complex inputs")
  n = a.shape[-1]
  h, taus = lax_linalg.geqrf(a)
  diag = _ops.diagonal(h, axis1=-2, axis2=-1)
  log_abs_det = _red.sum(lax.log(lax.abs(diag)), axis=-1)
  sign_diag = _red.prod(lax.sign(diag), axis=-1)
  # each Householder reflector actually applied (tau != 0) has determinant -1
  t = taus[..., :_max(n - 1, 0)]
  flips = _red._where(lax.ne(t, np.array(0, t.dtype)), np.array(-1, a.dtype),
                      np.array(1, a.dtype))
  sign_taus = _red.prod(flips, axis=-1)
  return SlogdetResult(lax.mul(sign_diag, sign_taus), log_abs_det)


@custom_jvp
def _slogdet(a, method):
  if method is None or method == "lu":
    return _slogdet_lu(a)
  return _slogdet_qr(a)


_slogdet = custom_jvp(_slogdet.fun, nondiff_argnums=(1,))


@_slogdet.defjvp
def _slogdet_jvp(method, primals, tangents):
  x, = primals
  g, = tangents
  sign, logdet = _slogdet(x, method)
  # (the solve must not be a custom_jvp function here: it acts on the tangent)
  lu_, _, perm = lax_linalg.lu(x)
  t = _ops.trace(lax_linalg._lu_solve(lu_, perm, g), axis1=-1, axis2=-2)
  if dtypes.is_complex(x.dtype):
    sign_dot = lax.mul(lax.sub(t, lax.convert_element_type(lax.real(t), t.dtype)), sign)
    logdet_dot = lax.real(t)
  else:
    sign_dot = lax.full_like(sign, 0)
    logdet_dot = t
  return SlogdetResult(sign, logdet), SlogdetResult(sign_dot, logdet_dot)


def slogdet(a, *, method=None):
  """Sign and natural log of the absolute determinant (``method``: None/'lu' or 'qr')."""
  a, = _inexact("jnp.linalg.slogdet", a)
  if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
    raise ValueError(f"Argument to slogdet() must have shape [..., n, n], got {a.shape}")
  if method not in (None, "lu", "qr"):
    raise ValueError(f"Unknown slogdet method '{method}'. Supported methods are 'lu' "
                     "(`None`), and 'qr'.")
  return SlogdetResult(*_slogdet(a, method))


def _elem(a, i, j):
  return a[..., i, j]


def _det_2x2(a):
  return lax.sub(lax.mul(_elem(a, 0, 0), _elem(a, 1, 1)),
                 lax.mul(_elem(a, 0, 1), _elem(a, 1, 0)))


def _det_3x3(a):
  e = lambda i, j: _elem(a, i, j)  # noqa: E731
  m = lax.mul
  r = lax.add(m(m(e(0, 0), e(1, 1)), e(2, 2)), m(m(e(0, 1), e(1, 2)), e(2, 0)))
  r = lax.add(r, m(m(e(0, 2), e(1, 0)), e(2, 1)))
  r = lax.sub(r, m(m(e(0, 2), e(1, 1)), e(2, 0)))
  r = lax.sub(r, m(m(e(0, 0), e(1, 2)), e(2, 1)))
  return lax.sub(r, m(m(e(0, 1), e(1, 0)), e(2, 2)))


def _cofactor_solve(a, b):
  """(det(a), det(a) * solve(a, b)), finite also for singular ``a``: for rank n-1 the
  last pivot of U is replaced so the triangular solves succeed and the result is the
  adjugate times b; for lower rank the result is zero (the determinant's derivative)."""
  dtype = a.dtype
  n = a.shape[-1]
  lu_, pivots, perm = lax_linalg.lu(a)
  diag = _ops.diagonal(lu_, axis1=-2, axis2=-1)
  parity = _lu_parity(pivots, n)
  pm = lax.convert_element_type(lax.add(lax.mul(np.array(-2, parity.dtype),
                                                _uf.remainder(parity, 2)),
                                        np.array(1, parity.dtype)), dtype)
  partial = lax.mul(_red.cumprod(diag, axis=-1), pm[..., None])
  # U[-1, -1] <- 1 / (det(U) / u_nn): the last row of the solve then gives adj entries
  lu_ = lu_.at[..., -1, -1].set(lax.div(np.array(1, dtype), partial[..., -2]))
  ones = lax.full(lu_.shape[:-1], 1, dtype)
  d = lax_linalg.triangular_solve(lu_, ones, left_side=True, lower=False)
  bad = _red.any(_uf.logical_or(_uf.isnan(d), _uf.isinf(d)), axis=-1)
  bad = _red._broadcast_to(bad[..., None, None], b.shape)
  zeros = lax.full_like(b, 0)
  x = _red._where(bad, zeros, b)
  x = lax_linalg._permute_rows(x, perm)
  x = lax_linalg.triangular_solve(lu_, x, left_side=True, lower=True, unit_diagonal=True)
  det_full = partial[..., -1]
  x = _manip.concatenate([lax.mul(x[..., :-1, :], det_full[..., None, None]), x[..., -1:, :]],
                         axis=-2)
  x = lax_linalg.triangular_solve(lu_, x, left_side=True, lower=False)
  x = _red._where(bad, zeros, x)
  return det_full, x


def _det_impl(a):
  n = a.shape[-1]
  if n == 2:
    return _det_2x2(a)
  if n == 3:
    return _det_3x3(a)
  sign, logdet = _slogdet_lu(a)
  return lax.mul(sign, lax.convert_element_type(lax.exp(logdet), sign.dtype))


@custom_jvp
def _det(a):
  return _det_impl(a)


@_det.defjvp
def _det_jvp(primals, tangents):
  x, = primals
  g, = tangents
  if x.shape[-1] == 0:
    return _det_impl(x), lax.full(x.shape[:-2], 0, x.dtype)
  y, z = _cofactor_solve(x, g)
  return y, _ops.trace(z, axis1=-1, axis2=-2)


def det(a):
  """Determinant (2x2 and 3x3 by explicit formulas, larger via LU, as in JAX); its
  derivative is the adjugate's trace product, finite for singular matrices."""
  a, = _inexact("jnp.linalg.det", a)
  if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
    raise ValueError(f"Argument to _det() must have shape [..., n, n], got {a.shape}")
  return _det(a)


# --- norms -----------------------------------------------------------------------------------
def _abs2sum(x, axis, keepdims):
  return _red.sum(_uf.real(lax.mul(x, _uf.conj(x))) if dtypes.is_complex(x.dtype)
                  else lax.mul(x, x), axis=axis, keepdims=keepdims)


@_library_function
def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
  """Vector norm over ``axis`` (all axes flattened for None)."""
  x, = _inexact("jnp.linalg.vector_norm", x)
  if axis is None:
    result = norm(_manip.ravel(x), ord=ord)
    if keepdims:
      result = lax.expand_dims(result, tuple(range(x.ndim)))
    return result
  if ord is None or (not isinstance(ord, str) and ord == 2):
    return lax.sqrt(_abs2sum(x, axis, keepdims))
  if isinstance(ord, str):
    msg = f"Invalid order '{ord}' for vector norm."
    if ord == "inf":
      msg += "Use 'jax.numpy.inf' instead."
    if ord == "-inf":
      msg += "Use '-jax.numpy.inf' instead."
    raise ValueError(msg)
  if ord == np.inf:
    return _red.amax(_uf.abs(x), axis=axis, keepdims=keepdims, initial=0)
  if ord == -np.inf:
    return _red.amin(_uf.abs(x), axis=axis, keepdims=keepdims)
  if ord == 0:
    return _red.sum(lax.ne(x, np.array(0, x.dtype)), dtype=np.finfo(x.dtype).dtype, axis=axis,
                    keepdims=keepdims)
  if ord == 1:
    return _red.sum(_uf.abs(x), axis=axis, keepdims=keepdims)
  abs_x = _uf.abs(x)
  ord_arr = np.array(ord, abs_x.dtype)
  ord_inv = np.array(1. / ord_arr, abs_x.dtype)
  out = _red.sum(_uf.power(abs_x, ord_arr), axis=axis, keepdims=keepdims)
  return _uf.power(out, ord_inv)


@_library_function(jit=('norm', ('ord', 'axis', 'keepdims')))
def norm(x, ord=None, axis=None, keepdims=False):
  """Vector (one axis) or matrix (two axes) norm; with ``axis=None`` and ``ord=None`` the
  2-norm of the flattened array for any rank (NumPy's behaviour)."""
  x, = _inexact("jnp.linalg.norm", x)
  ndim = x.ndim
  if axis is None:
    if ord is None:
      return lax.sqrt(_abs2sum(x, None, keepdims))
    axis = tuple(range(ndim))
  elif isinstance(axis, tuple):
    axis = tuple(_red._canonicalize_axis(a, ndim) for a in axis)
  else:
    axis = (_red._canonicalize_axis(axis, ndim),)
  if len(axis) == 1:
    return vector_norm(x, ord=2 if ord is None else ord, axis=axis, keepdims=keepdims)
  if len(axis) != 2:
    raise ValueError(f"Improper number of axes for norm: axis={axis!r}. Pass one axis to "
                     "compute a vector-norm, or two axes to compute a matrix-norm.")
  row_axis, col_axis = axis
  if ord is None or ord in ("f", "fro"):
    return lax.sqrt(_abs2sum(x, axis, keepdims))
  if isinstance(ord, str) and ord != "nuc":
    raise ValueError(f"Invalid order '{ord}' for matrix norm.")
  if ord == 1 or ord == -1:
    if not keepdims and col_axis > row_axis:
      col_axis -= 1
    s = _red.sum(_uf.abs(x), axis=row_axis, keepdims=keepdims)
    if ord == 1:
      return _red.amax(s, axis=col_axis, keepdims=keepdims, initial=0)
    return _red.amin(s, axis=col_axis, keepdims=keepdims)
  if ord == np.inf or ord == -np.inf:
    if not keepdims and row_axis > col_axis:
      row_axis -= 1
    s = _red.sum(_uf.abs(x), axis=col_axis, keepdims=keepdims)
    if ord == np.inf:
      return _red.amax(s, axis=row_axis, keepdims=keepdims, initial=0)
    return _red.amin(s, axis=row_axis, keepdims=keepdims)
  if ord in ("nuc", 2, -2):
    x = _manip.moveaxis(x, axis, (-2, -1))
    s = svd(x, compute_uv=False)
    if ord == 2:
      y = _red.amax(s, axis=-1, initial=0)
    elif ord == -2:
      y = _red.amin(s, axis=-1)
    else:
      y = _red.sum(s, axis=-1)
    if keepdims:
      y = _manip.expand_dims(y, axis)
    return y
  raise ValueError(f"Invalid order '{ord}' for matrix norm.")


@_library_function
def matrix_norm(x, /, *, keepdims=False, ord="fro"):
  """Matrix norm over the last two axes."""
  x, = _inexact("jnp.linalg.matrix_norm", x)
  return norm(x, ord=ord, keepdims=keepdims, axis=(-2, -1))


# --- powers, rank, pinv, lstsq, cond ---------------------------------------------------------
def matrix_power(a, n):
  """``a`` raised to the integer power ``n`` by repeated squaring (``n < 0`` inverts)."""
  a = _arr("jnp.linalg.matrix_power", a)
  if a.ndim < 2:
    raise TypeError(f"{a.ndim}-dimensional array given. Array must be at least "
                    "two-dimensional")
  if a.shape[-2] != a.shape[-1]:
    raise TypeError("Last 2 dimensions of the array must be square")
  try:
    n = operator.index(n)
  except TypeError as err:
    raise TypeError(f"exponent must be an integer, got {n}") from err
  if n == 0:
    return _red._broadcast_to(_creation.eye(a.shape[-2], dtype=a.dtype), a.shape)
  if n < 0:
    a = inv(a)
    n = -n
  if n == 1:
    return a
  if n == 2:
    return _ops.matmul(a, a)
  if n == 3:
    return _ops.matmul(_ops.matmul(a, a), a)
  z = result = None
  while n > 0:
    z = a if z is None else _ops.matmul(z, z)
    n, bit = divmod(n, 2)
    if bit:
      result = z if result is None else _ops.matmul(result, z)
  return result


def matrix_rank(M, rtol=None, *, hermitian=False, tol=None):
  """Number of singular values above ``rtol`` (an absolute threshold, as in JAX; default
  ``max(s) * max(m, n) * eps``).  ``tol`` is a deprecated alias."""
  M, = _inexact("jnp.linalg.matrix_rank", M)
  if tol is not None:
    if rtol is not None:
      raise ValueError("matrix_rank: only one of tol or rtol may be specified.")
    rtol = tol
  if M.ndim < 2:
    return lax.convert_element_type(_red.any(lax.ne(M, np.array(0, M.dtype))), np.int32)
  S = svd(M, full_matrices=False, compute_uv=False, hermitian=hermitian)
  if rtol is None:
    rtol = lax.mul(_red.max(S, axis=-1),
                   np.array(_max(M.shape[-2:]) * np.finfo(S.dtype).eps, S.dtype))
  rtol = _red._asarray("matrix_rank", rtol)
  rtol = _manip.expand_dims(rtol, rtol.ndim)
  return _red.sum(_uf.greater(S, rtol), axis=-1)


@custom_jvp
def _pinv(a, rtol, hermitian):
  m, n = a.shape[-2:]
  if m == 0 or n == 0:
    return _creation.empty(a.shape[:-2] + (n, m), a.dtype)
  a = _uf.conj(a)
  if rtol is None:
    rtol = 10. * _max(m, n) * float(np.finfo(a.dtype).eps)
  rtol = _red._asarray("pinv", rtol)
  u, s, vh = svd(a, full_matrices=False, hermitian=hermitian)
  rtol = lax.expand_dims(rtol[..., None], tuple(range(s.ndim - rtol.ndim - 1)))
  cutoff = _uf.multiply(rtol, s[..., 0:1])
  s = _red._where(_uf.greater(s, cutoff), s, np.array(np.inf, s.dtype))
  s = lax.convert_element_type(s, u.dtype)
  res = _ops.matmul(_manip.matrix_transpose(vh),
                    _uf.divide(_manip.matrix_transpose(u), s[..., None]),
                    precision=lax.Precision.HIGHEST)
  return res


_pinv = custom_jvp(_pinv.fun, nondiff_argnums=(1, 2))


@_pinv.defjvp
def _pinv_jvp(rtol, hermitian, primals, tangents):
  # Golub & Pereyra (1973): the derivative of the pseudo-inverse
  a, = primals
  a_dot, = tangents
  p = _pinv(a, rtol, hermitian)
  m, n = a.shape[-2:]
  if m == 0 or n == 0:
    return p, p
  p_dot = lax.neg(_bmm(_bmm(p, a_dot), p))
  eye_m = _creation.eye(m, dtype=a.dtype)
  eye_n = _creation.eye(n, dtype=a.dtype)
  p_dot = lax.add(p_dot, _bmm(_bmm(_bmm(p, _H(p)), _H(a_dot)), _uf.subtract(eye_m, _bmm(a, p))))
  p_dot = lax.add(p_dot, _bmm(_bmm(_bmm(_uf.subtract(eye_n, _bmm(p, a)), _H(a_dot)), _H(p)), p))
  return p, p_dot


def pinv(a, rtol=None, hermitian=False, *, rcond=None):
  """Moore-Penrose pseudo-inverse via the SVD; singular values at most
  ``rtol * max(s)`` are dropped (default ``10 * max(m, n) * eps``)."""
  a, = _inexact("jnp.linalg.pinv", a)
  if rcond is not None:
    if rtol is not None:
      raise ValueError("pinv: only one of rtol and rcond may be specified.")
    rtol = rcond
  if a.ndim < 2:
    raise ValueError(f"not enough values to unpack (expected 2, got {a.ndim})")
  return _pinv(a, rtol, bool(hermitian))


def lstsq(a, b, rcond=None, *, numpy_resid=False):
  """Least-squares solution of ``a @ x = b`` via the SVD: ``(x, resid, rank, s)``.
  Residuals are always returned (shape ``(k,)``) unless ``numpy_resid`` reproduces
  NumPy's empty residuals for rank-deficient or underdetermined systems."""
  a, b = _inexact("jnp.linalg.lstsq", a, b)
  if a.shape[0] != b.shape[0]:
    raise ValueError("Leading dimensions of input arrays must match")
  b_orig_ndim = b.ndim
  if b_orig_ndim == 1:
    b = b[:, None]
  if a.ndim != 2:
    raise TypeError(f"{a.ndim}-dimensional array given. Array must be two-dimensional")
  if b.ndim != 2:
    raise TypeError(f"{b.ndim}-dimensional array given. Array must be one or two-dimensional")
  m, n = a.shape
  dtype = a.dtype
  int_ = dtypes.default_int_dtype()
  if a.size == 0:
    s = _creation.empty((0,), dtype=a.dtype)
    rank = np.array(0, int_)
    rank = lax.convert_element_type(rank, int_)
    x = _creation.zeros((n,) + b.shape[1:], dtype=a.dtype)
  else:
    if rcond is None:
      rcond = float(np.finfo(dtype).eps) * _max(n, m)
    else:
      rcond = _red._where(_uf.less(_red._asarray("lstsq", rcond), 0),
                          np.array(np.finfo(dtype).eps, np.finfo(dtype).dtype), rcond)
    u, s, vt = svd(a, full_matrices=False)
    mask = _uf.greater_equal(s, _uf.multiply(lax.convert_element_type(rcond, s.dtype), s[0]))
    rank = _red.sum(mask)
    safe_s = lax.convert_element_type(_red._where(mask, s, np.array(1, s.dtype)), a.dtype)
    s_inv = _red._where(mask, _uf.divide(np.array(1, a.dtype), safe_s),
                        np.array(0, a.dtype))[:, None]
    uTb = _ops.matmul(_H(u), b, precision=lax.Precision.HIGHEST)
    x = _ops.matmul(_H(vt), _uf.multiply(s_inv, uTb), precision=lax.Precision.HIGHEST)
  if numpy_resid and (core.is_concrete(rank) and (int(rank) < n or m <= n)):
    resid = _creation.zeros((0,), dtype=np.finfo(dtype).dtype)
  else:
    b_estimate = _ops.matmul(a, x, precision=lax.Precision.HIGHEST)
    resid = _uf.square(norm(_uf.subtract(b, b_estimate), axis=0))
  if b_orig_ndim == 1:
    x = _manip.ravel(x)
  return x, resid, rank, s


def cond(x, p=None):
  """Condition number in the ``p``-norm (2-norm by default, from the singular values);
  inf for singular matrices without NaNs."""
  x, = _inexact("jnp.linalg.cond", x)
  if x.ndim < 2:
    raise ValueError(f"jnp.linalg.cond: input array must be at least 2D; got arr.shape={x.shape}")
  if x.shape[-1] == 0 or x.shape[-2] == 0:
    raise ValueError(f"jnp.linalg.cond: input array must not be empty; got arr.shape={x.shape}")
  if p is None or p == 2 or p == -2:
    s = svdvals(x)
    if p == -2:
      r = _uf.divide(s[..., -1], s[..., 0])
    else:
      r = _uf.divide(s[..., 0], s[..., -1])
  else:
    if x.shape[-2] != x.shape[-1]:
      raise ValueError(f"jnp.linalg.cond: for p={p!r}, array must be square; got "
                       f"arr.shape={x.shape}")
    r = _uf.multiply(norm(x, ord=p, axis=(-2, -1)), norm(inv(x), ord=p, axis=(-2, -1)))
  nan_in = _red.any(_uf.isnan(x), axis=(-2, -1))
  return _red._where(_uf.logical_and(_uf.isnan(r), _uf.logical_not(nan_in)),
                     np.array(np.inf, r.dtype), r)


# --- tensor solve / inverse, multi_dot -------------------------------------------------------
def tensorinv(a, ind=2):
  """Inverse of a tensor viewed as a matrix: the first ``ind`` axes against the rest."""
  arr = _arr("jnp.linalg.tensorinv", a)
  ind = operator.index(ind)
  if ind <= 0:
    raise ValueError(f"ind must be a positive integer; got ind={ind}")
  contracting, batch = arr.shape[:ind], arr.shape[ind:]
  flat = (math.prod(contracting), math.prod(batch))
  if flat[0] != flat[1]:
    raise ValueError("tensorinv is only possible when the product of the first `ind` "
                     "dimensions equals that of the remaining dimensions. got "
                     f"arr.shape={arr.shape} with ind={ind}.")
  return _manip.reshape(inv(_manip.reshape(arr, flat)), batch + contracting)


def tensorsolve(a, b, axes=None):
  """Solve ``tensordot(a, x, x.ndim) = b`` for ``x``; ``axes`` of ``a`` are moved to the
  end first."""
  check_arraylike("jnp.linalg.tensorsolve", a, b)
  a_arr, b_arr = _red._asarray("tensorsolve", a), _red._asarray("tensorsolve", b)
  if axes is not None:
    axes = tuple(axes)
    a_arr = _manip.moveaxis(a_arr, axes, len(axes) * (a_arr.ndim - 1,))
  out_shape = a_arr.shape[b_arr.ndim:]
  if a_arr.shape[:b_arr.ndim] != b_arr.shape:
    raise ValueError("After moving axes to end, leading shape of a must match shape of b. "
                     f"got a.shape={a_arr.shape}, b.shape={b_arr.shape}")
  a2 = _manip.reshape(a_arr, (b_arr.size, math.prod(out_shape)))
  return _manip.reshape(solve(a2, _manip.ravel(b_arr)), out_shape)


def multi_dot(arrays, *, precision=None):
  """Chained matrix product in the cheapest order (opt_einsum's optimal path); the first
  and last arrays may be 1-D."""
  arrs = list(arrays)
  check_arraylike("jnp.linalg.multi_dot", *arrs)
  arrs = [_red._asarray("multi_dot", a) for a in arrs]
  if len(arrs) == 1:  # as in JAX, a single array is iterated over
    arrs = [arrs[0][i] for i in range(arrs[0].shape[0])] if arrs[0].ndim else arrs
  if len(arrs) < 2:
    raise ValueError(f"multi_dot requires at least two arrays; got len(arrays)={len(arrs)}")
  if not (arrs[0].ndim in (1, 2) and arrs[-1].ndim in (1, 2) and
          builtins.all(a.ndim == 2 for a in arrs[1:-1])):
    raise ValueError("multi_dot: input arrays must all be two-dimensional, except for the "
                     "first and last array which may be 1 or 2 dimensional. Got array shapes "
                     f"{[a.shape for a in arrs]}")
  if builtins.any(a.shape[-1] != b.shape[0] for a, b in zip(arrs[:-1], arrs[1:])):
    raise ValueError("multi_dot: last dimension of each array must match first dimension of "
                     f"following array. Got array shapes {[a.shape for a in arrs]}")
  letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
  if len(arrs) + 1 > len(letters):
    out = arrs[0]
    for a in arrs[1:]:
      out = _ops.matmul(out, a, precision=precision)
    return out
  specs = []
  for i, a in enumerate(arrs):
    specs.append(letters[i:i + 2])
  if arrs[0].ndim == 1:
    specs[0] = specs[0][1:]
  if arrs[-1].ndim == 1:
    specs[-1] = specs[-1][:1]
  out = ""
  if arrs[0].ndim == 2:
    out += letters[0]
  if arrs[-1].ndim == 2:
    out += letters[len(arrs)]
  return _ops.einsum(f"{','.join(specs)}->{out}", *arrs, optimize="auto",
                     precision=precision)


# --- array-API functions that also live in jnp -----------------------------------------------
def cross(x1, x2, /, *, axis=-1):
  """Cross product of (arrays of) 3-vectors along ``axis``."""
  check_arraylike("jnp.linalg.outer", x1, x2)
  x1, x2 = _red._asarray("cross", x1), _red._asarray("cross", x2)
  if x1.shape[axis] != 3 or x2.shape[axis] != 3:
    raise ValueError("Both input arrays must be (arrays of) 3-dimensional vectors, but they "
                     f"have x1.shape[axis]={x1.shape[axis]} and x2.shape[axis]={x2.shape[axis]}")
  return _ops.cross(x1, x2, axis=axis)


def outer(x1, x2, /):
  """Outer product of two 1-D arrays."""
  check_arraylike("jnp.linalg.outer", x1, x2)
  x1, x2 = _red._asarray("outer", x1), _red._asarray("outer", x2)
  if x1.ndim != 1 or x2.ndim != 1:
    raise ValueError("Input arrays must be one-dimensional, but they are "
                     f"x1.ndim={x1.ndim} x2.ndim={x2.ndim}")
  return _uf.multiply(x1[:, None], x2[None, :])


def matmul(x1, x2, /, *, precision=None, preferred_element_type=None):
  """Matrix product (as jnp.matmul)."""
  check_arraylike("jnp.linalg.matmul", x1, x2)
  return _ops.matmul(x1, x2, precision=precision, preferred_element_type=preferred_element_type)


def matrix_transpose(x, /):
  """Swap the last two axes."""
  x = _arr("jnp.linalg.matrix_transpose", x)
  if x.ndim < 2:
    raise ValueError(f"matrix_transpose requires at least 2 dimensions; got ndim={x.ndim}")
  return _manip.matrix_transpose(x)


def diagonal(x, /, *, offset=0):
  """Diagonals of the last two axes."""
  x = _arr("jnp.linalg.diagonal", x)
  if x.ndim < 2:
    raise ValueError("diagonal requires an array of at least two dimensions.")
  return _ops.diagonal(x, offset=offset, axis1=-2, axis2=-1)


def trace(x, /, *, offset=0, dtype=None):
  """Sum of the diagonals of the last two axes."""
  x = _arr("jnp.linalg.trace", x)
  return _ops.trace(x, offset=offset, axis1=-2, axis2=-1, dtype=dtype)


def tensordot(x1, x2, /, *, axes=2, precision=None, preferred_element_type=None,
              out_sharding=None):
  """Tensor contraction (as jnp.tensordot)."""
  check_arraylike("jnp.linalg.tensordot", x1, x2)
  return _ops.tensordot(x1, x2, axes=axes, precision=precision,
                        preferred_element_type=preferred_element_type)


def vecdot(x1, x2, /, *, axis=-1, precision=None, preferred_element_type=None):
  """Conjugated vector dot product along ``axis`` (as jnp.vecdot)."""
  check_arraylike("jnp.linalg.vecdot", x1, x2)
  return _ops.vecdot(x1, x2, axis=axis, precision=precision,
                     preferred_element_type=preferred_element_type)

