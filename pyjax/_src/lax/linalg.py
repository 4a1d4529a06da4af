"""lax.linalg: the linear-algebra primitives and their public functions.

Every primitive works on stacks of matrices: operands have shape ``[..., m, n]`` and the
leading dimensions batch (so a vmap rule only moves the batch dimension to the front).
Each primitive has its abstract-eval rule (JAX's shape/dtype errors), a JVP rule (JAX's
formulas), and ``triangular_solve`` / ``tridiagonal_solve`` have transpose rules in their
right-hand side.  The CPU implementations (LAPACK through NumPy/SciPy) live in
``pyjax/_src/backends/cpu/eager/linalg.py``, keyed by primitive name.

Differences from JAX: ``eigh(subset_by_index=...)`` works on CPU (JAX raises
NotImplementedError there); ``qdwh`` runs its iterations unrolled (no while_loop), with
converged iterations masked, so its traced jaxpr differs.
"""
from __future__ import annotations

import enum
import operator

import numpy as np

from pyjax._src import core, dtypes
from pyjax._src.avals import ShapedArray
from pyjax._src.interpreters import ad as _ad
from pyjax._src.lax import dot as _dot
from pyjax._src.lax import elementwise as _ew
from pyjax._src.lax import reductions as _red
from pyjax._src.lax import shapes as _shapes
from pyjax._src.lax import utils

__all__ = ["EigImplementation", "EighImplementation", "SvdAlgorithm",
           "cholesky", "cholesky_p", "cholesky_update", "cholesky_update_p",
           "eig", "eig_p", "eigh", "eigh_p", "hessenberg", "hessenberg_p",
           "householder_product", "householder_product_p", "lu", "lu_p",
           "lu_pivots_to_permutation", "lu_pivots_to_permutation_p", "ormqr", "ormqr_p",
           "qdwh", "qr", "qr_p", "schur", "schur_p", "svd", "svd_p",
           "symmetric_product", "symmetric_product_p", "triangular_solve",
           "triangular_solve_p", "tridiagonal", "tridiagonal_p", "tridiagonal_solve",
           "tridiagonal_solve_p"]


class EigImplementation(enum.Enum):
  """Which eig implementation to use (only LAPACK exists on the CPU backend)."""
  CUSOLVER = "cusolver"
  MAGMA = "magma"
  LAPACK = "lapack"


class EighImplementation(enum.Enum):
  """Which eigh algorithm to use (all run LAPACK's syevd on the CPU backend)."""
  QR = "qr"
  JACOBI = "jacobi"
  QDWH = "qdwh"


class SvdAlgorithm(enum.Enum):
  """Which SVD algorithm to use (all run LAPACK's gesdd on the CPU backend)."""
  DEFAULT = "default"
  QR = "QR"
  JACOBI = "Jacobi"
  POLAR = "polar"
  DIVIDE_AND_CONQUER = "divide_and_conquer"


# --- shared checks ------------------------------------------------------------------------
def _check_rank(name, aval, pos=0, rank=2):
  if aval.ndim < rank:
    raise TypeError(f"Input {pos} to {name} must have rank at least {rank}, but got "
                    f"shape={aval.shape}")


def _check_inexact(name, aval, pos=0):
  utils.check_dtype(name, utils.inexact, aval.dtype, position=pos)


def _check_matrix(name, aval, pos=0):
  _check_rank(name, aval, pos)
  _check_inexact(name, aval, pos)


def _real_dtype(d):
  return np.finfo(d).dtype if dtypes.is_complex(d) else d


def _complex_dtype(d):
  return dtypes.to_complex_dtype(d)


def _aval(x):
  return core.get_aval(x)


def _asarray(x):
  """Python scalars / NumPy values as arrays; arrays and tracers unchanged."""
  if isinstance(x, (core.Tracer,)) or type(x).__name__ == "ArrayImpl":
    return x
  if isinstance(x, (list, tuple)):
    raise TypeError(f"Value {x!r} of type {type(x)} is not a valid JAX type")
  aval = core.get_aval(x)
  return _ad.scalar_const(x, aval.dtype, aval.weak_type) if not aval.shape else \
      _ew._convert_element_type(np.asarray(x, aval.dtype), aval.dtype, aval.weak_type)


# --- matrix helpers used by the rules (all built from transposable lax primitives) -----------
def _const(x, val):
  a = _aval(x)
  return _ad.scalar_const(val, a.dtype)


def _T(x):
  nd = _aval(x).ndim
  return _shapes.transpose(x, tuple(range(nd - 2)) + (nd - 1, nd - 2))


def _H(x):
  x = _T(x)
  return _ew.conj(x) if dtypes.is_complex(_aval(x).dtype) else x


def _conj(x):
  return _ew.conj(x) if dtypes.is_complex(_aval(x).dtype) else x


def _mask(shape, k, op):
  """bool[shape] with True where ``op(row + k, col)`` on the last two dimensions."""
  r = _shapes.broadcasted_iota(np.int32, shape, len(shape) - 2)
  r = _ew.add(r, _ad.scalar_const(k, np.dtype(np.int32)))
  c = _shapes.broadcasted_iota(np.int32, shape, len(shape) - 1)
  return op(r, c)


def _zeros(aval):
  return _shapes.broadcast_in_dim(_ad.scalar_const(0, aval.dtype), aval.shape, ())


def _tril(x, k=0):
  """Zero above the k-th diagonal of the last two dimensions."""
  a = _aval(x)
  return _ew.select_n(_mask(a.shape, k, _ew.ge), _zeros(a), x)


def _triu(x, k=0):
  """Zero below the k-th diagonal of the last two dimensions."""
  a = _aval(x)
  return _ew.select_n(_mask(a.shape, k, _ew.le), _zeros(a), x)


def _eye(dtype, shape):
  """Identity matrices of ``shape`` (``[..., m, n]``)."""
  return _ew.convert_element_type(_mask(tuple(shape), 0, _ew.eq), dtype)


def _matmul(a, b):
  """Batched matrix product over equal leading dimensions, at HIGHEST precision."""
  nd = _aval(a).ndim
  batch = tuple(range(nd - 2))
  return _dot.dot_general(a, b, (((nd - 1,), (nd - 2,)), (batch, batch)),
                          precision=_dot.Precision.HIGHEST)


def _diagonal(x):
  """The main diagonal of the last two dimensions, ``[..., min(m, n)]``."""
  a = _aval(x)
  m, n = a.shape[-2:]
  k = min(m, n)
  if m != k or n != k:
    x = _shapes.slice(x, (0,) * (a.ndim - 2) + (0, 0), a.shape[:-2] + (k, k))
  x = _ew.mul(x, _eye(a.dtype, a.shape[:-2] + (k, k)))
  return _red.reduce_sum(x, (a.ndim - 2,))


def _diag_embed(v, dtype=None):
  """``[..., k]`` -> ``[..., k, k]`` diagonal matrices."""
  a = _aval(v)
  k = a.shape[-1]
  shape = a.shape + (k,)
  vb = _shapes.broadcast_in_dim(v, shape, tuple(range(a.ndim - 1)) + (a.ndim,))
  return _ew.mul(vb, _eye(a.dtype, shape))


def _row_vec(v):
  """``[..., k]`` -> ``[..., 1, k]``."""
  a = _aval(v)
  return _shapes.reshape(v, a.shape[:-1] + (1, a.shape[-1]))


def _col_vec(v):
  a = _aval(v)
  return _shapes.reshape(v, a.shape + (1,))


def _bcast(x, shape):
  """Broadcast an operand with size-1 dims (same rank) to ``shape``."""
  a = _aval(x)
  if a.shape == tuple(shape):
    return x
  keep = tuple(i for i, d in enumerate(a.shape) if d == shape[i])
  squeezed = _shapes.reshape(x, tuple(a.shape[i] for i in keep))
  return _shapes.broadcast_in_dim(squeezed, tuple(shape), keep)


def _mul_b(x, y):
  """Elementwise product broadcasting size-1 dims of equal-rank operands."""
  shape = tuple(max(p, q) for p, q in zip(_aval(x).shape, _aval(y).shape))
  return _ew.mul(_bcast(x, shape), _bcast(y, shape))


def _div_b(x, y):
  shape = tuple(max(p, q) for p, q in zip(_aval(x).shape, _aval(y).shape))
  return _ew.div(_bcast(x, shape), _bcast(y, shape))


def _add_b(x, y):
  shape = tuple(max(p, q) for p, q in zip(_aval(x).shape, _aval(y).shape))
  return _ew.add(_bcast(x, shape), _bcast(y, shape))


def _sub_b(x, y):
  shape = tuple(max(p, q) for p, q in zip(_aval(x).shape, _aval(y).shape))
  return _ew.sub(_bcast(x, shape), _bcast(y, shape))


def _cast(x, dtype):
  if _aval(x).dtype == dtype:
    return x
  return _ew.convert_element_type(x, dtype)


def _symmetrize(x):
  """(x + x^H) / 2, as JAX's lax.linalg does before cholesky/eigh (integers become the
  default float)."""
  x = _asarray(x)
  a = _aval(x)
  if not dtypes.is_inexact(a.dtype):
    x = _ew._convert_element_type(x, dtypes.canonicalize_dtype(dtypes.to_inexact_dtype(a.dtype)),
                                  a.weak_type)
  if a.ndim < 2:
    raise TypeError("transpose permutation isn't a permutation of operand dimensions, got "
                    f"permutation (0, -1) for operand shape {a.shape}.")
  return _ew.div(_ew.add(x, _H(x)), _ad.scalar_const(2, _aval(x).dtype, weak_type=True))


def _permute_rows(x, perm):
  """``x[..., perm, :]`` for int ``perm`` of shape ``[..., m]`` (a gather: linear in x)."""
  from pyjax._src.lax import sorting as _sorting
  a = _aval(x)
  p = _shapes.broadcast_in_dim(perm, a.shape, tuple(range(a.ndim - 1)))
  return _sorting._take_along(x, p, a.ndim - 2)


def _inverse_permutation(perm):
  from pyjax._src.lax import sorting as _sorting
  pa = _aval(perm)
  iota = _shapes.broadcasted_iota(pa.dtype, pa.shape, pa.ndim - 1)
  return _sorting.sort_key_val(perm, iota, dimension=pa.ndim - 1)[1]


def _lu_solve(lu_, perm, b, trans=False):
  """Solve ``a x = b`` (or ``a^T x = b``) from the packed LU factors of ``a``; linear in
  ``b`` ([..., m, k], same batch dimensions as ``lu_``)."""
  if not trans:
    x = _permute_rows(b, perm)
    x = triangular_solve(lu_, x, left_side=True, lower=True, unit_diagonal=True)
    return triangular_solve(lu_, x, left_side=True, lower=False)
  x = triangular_solve(lu_, b, left_side=True, lower=False, transpose_a=True)
  x = triangular_solve(lu_, x, left_side=True, lower=True, transpose_a=True, unit_diagonal=True)
  return _permute_rows(x, _inverse_permutation(perm))


def _solve(a, b):
  lu_, _, perm = lu_p.bind(a)
  return _lu_solve(lu_, perm, b)


def _concrete_int(x, what):
  return int(core.concrete_or_error(operator.index, x, f"The {what} argument must be concrete."))


# --- cholesky --------------------------------------------------------------------------------
cholesky_p = core.Primitive("cholesky")
cholesky_p.arg_names = ("x",)


@cholesky_p.def_abstract_eval
def _cholesky_abstract(x):
  _check_matrix("cholesky", x)
  if x.shape[-1] != x.shape[-2]:
    raise ValueError(f"The input to cholesky must be a square matrix. Got shape {x.shape}.")
  return ShapedArray(x.shape, x.dtype, x.weak_type)


def cholesky(x, *, symmetrize_input=True):
  """Lower Cholesky factor ``L`` of Hermitian positive-definite ``x`` (``x = L L^H``);
  NaN-filled (lower triangle) where the factorization fails, as on JAX's CPU backend."""
  x = _asarray(x)
  if symmetrize_input:
    x = _symmetrize(x)
  return _tril(cholesky_p.bind(x))


def _cholesky_jvp(primals, tangents):
  x, = primals
  sigma_dot, = tangents
  L = _tril(cholesky_p.bind(x))
  if type(sigma_dot) is _ad.Zero:
    return L, _ad.Zero.from_primal_value(L)
  a = _aval(L)
  # Murray (2016), arXiv:1602.07527: L_dot = L phi(L^{-1} sigma_dot L^{-H})
  tmp = triangular_solve(L, sigma_dot, left_side=False, transpose_a=True, conjugate_a=True,
                         lower=True)
  inner = triangular_solve(L, tmp, left_side=True, transpose_a=False, lower=True)
  half_diag = _ew.add(_eye(a.dtype, a.shape), _ad.scalar_const(1, a.dtype))
  phi = _ew.div(_tril(inner), half_diag)
  return L, _matmul(L, phi)


_ad.primitive_jvps[cholesky_p] = _cholesky_jvp


# --- cholesky_update -------------------------------------------------------------------------
cholesky_update_p = core.Primitive("cholesky_update")
cholesky_update_p.arg_names = ("r_matrix", "w_vector")


@cholesky_update_p.def_abstract_eval
def _cholesky_update_abstract(r, w):
  _check_matrix("cholesky_update", r, 0)
  _check_inexact("cholesky_update", w, 1)
  if r.ndim != 2 or r.shape[0] != r.shape[1] or w.shape != r.shape[:1]:
    raise ValueError("Rank-1 update to Cholesky decomposition takes a square matrix and a "
                     f"vector of the same size as input. Got shapes {r.shape}, {w.shape}")
  if r.dtype != w.dtype:
    raise TypeError("Rank-1 update to Cholesky decomposition requires arguments of the same "
                    f"dtype, got {r.dtype.name} and {w.dtype.name}")
  return ShapedArray(r.shape, r.dtype, r.weak_type)


def cholesky_update(r_matrix, w_vector):
  """Given upper-triangular ``R`` with ``A = R^T R``, the upper Cholesky factor of
  ``A + w w^T``."""
  return cholesky_update_p.bind(_asarray(r_matrix), _asarray(w_vector))


def _cholesky_update_jvp(primals, tangents):
  # R'^H R' = R^H R + w w^H: differentiate through the Cholesky factorization of the update
  r, w = primals
  dr, dw = tangents
  out = cholesky_update_p.bind(r, w)
  dr = _ad.instantiate_zeros(dr)
  dw = _ad.instantiate_zeros(dw)
  wc = _col_vec(w)
  dwc = _col_vec(dw)
  # d(A') = dR^H R + R^H dR + dw w^H + w dw^H
  dA = _ew.add(_ew.add(_matmul(_H(dr), r), _matmul(_H(r), dr)),
               _ew.add(_matmul(dwc, _H(wc)), _matmul(wc, _H(dwc))))
  L = _H(out)
  tmp = triangular_solve(L, dA, left_side=False, transpose_a=True, conjugate_a=True, lower=True)
  inner = triangular_solve(L, tmp, left_side=True, transpose_a=False, lower=True)
  a = _aval(out)
  half_diag = _ew.add(_eye(a.dtype, a.shape), _ad.scalar_const(1, a.dtype))
  dL = _matmul(L, _ew.div(_tril(inner), half_diag))
  return out, _H(dL)


_ad.primitive_jvps[cholesky_update_p] = _cholesky_update_jvp


# --- eigh ------------------------------------------------------------------------------------
eigh_p = core.Primitive("eigh")
eigh_p.multiple_results = True
eigh_p.arg_names = ("operand",)


def _subset_size(subset_by_index, n):
  if subset_by_index is None:
    return n
  lo, hi = subset_by_index
  return hi - lo


@eigh_p.def_abstract_eval
def _eigh_abstract(x, *, lower, sort_eigenvalues, subset_by_index, algorithm=None):
  _check_matrix("eigh", x)
  if x.shape[-1] != x.shape[-2]:
    raise ValueError("Argument to symmetric eigendecomposition must have shape [..., n, n], "
                     f"got shape {x.shape}")
  n = x.shape[-1]
  if subset_by_index is not None:
    lo, hi = subset_by_index
    if not 0 <= lo < hi <= n:
      raise ValueError(f"subset_by_index must satisfy 0 <= lo < hi <= n, got "
                       f"{subset_by_index} for n={n}")
  k = _subset_size(subset_by_index, n)
  v = ShapedArray(x.shape[:-1] + (k,), x.dtype, x.weak_type)
  w = ShapedArray(x.shape[:-2] + (k,), _real_dtype(x.dtype), x.weak_type)
  return [v, w]


def eigh(x, *, lower=True, symmetrize_input=True, sort_eigenvalues=True,
         subset_by_index=None, implementation=None):
  """Eigendecomposition of Hermitian matrices: ``(v, w)`` with ``x @ v = v * w`` and
  eigenvalues ``w`` ascending.  Only the ``lower`` (or upper) triangle is read when
  ``symmetrize_input`` is False."""
  x = _asarray(x)
  if symmetrize_input:
    x = _symmetrize(x)
  if subset_by_index is not None:
    subset_by_index = tuple(int(i) for i in subset_by_index)
    if subset_by_index == (0, _aval(x).shape[-1]):
      subset_by_index = None
  v, w = eigh_p.bind(x, lower=bool(lower), sort_eigenvalues=bool(sort_eigenvalues),
                     subset_by_index=subset_by_index, algorithm=implementation)
  return v, w


def _eigh_jvp(primals, tangents, *, lower, sort_eigenvalues, subset_by_index, algorithm=None):
  a, = primals
  a_dot, = tangents
  v, w_real = eigh_p.bind(a, lower=lower, sort_eigenvalues=sort_eigenvalues,
                          subset_by_index=subset_by_index, algorithm=algorithm)
  if subset_by_index is not None:
    raise NotImplementedError("Derivatives not defined for partial eigen decomposition.")
  aval = _aval(a)
  n = aval.shape[-1]
  # for complex numbers we need eigenvalues to be full dtype of v, a:
  w = _cast(w_real, aval.dtype)
  eye_n = _eye(aval.dtype, (n, n))
  eye_b = _shapes.broadcast_in_dim(eye_n, aval.shape, (aval.ndim - 2, aval.ndim - 1))
  diffs = _sub_b(_row_vec(w), _col_vec(w))          # w_j - w_i
  Fmat = _ew.sub(_ew.reciprocal(_ew.add(eye_b, diffs)), eye_b)
  vdag_adot_v = _matmul(_matmul(_H(v), a_dot), v)
  dv = _matmul(v, _ew.mul(Fmat, vdag_adot_v))
  dw = _ew.real(_diagonal(vdag_adot_v)) if dtypes.is_complex(aval.dtype) else _diagonal(vdag_adot_v)
  return [v, w_real], [dv, dw]


_ad.primitive_jvps[eigh_p] = _eigh_jvp


# --- eig -------------------------------------------------------------------------------------
eig_p = core.Primitive("eig")
eig_p.multiple_results = True
eig_p.arg_names = ("operand",)


@eig_p.def_abstract_eval
def _eig_abstract(x, *, compute_left_eigenvectors, compute_right_eigenvectors,
                  enable_eigvec_derivs=False, implementation=None):
  _check_matrix("eig", x)
  if x.shape[-1] != x.shape[-2]:
    raise ValueError(f"The input to eig must be a square matrix. Got shape {x.shape}.")
  cd = _complex_dtype(x.dtype)
  n = x.shape[-1]
  outs = [ShapedArray(x.shape[:-2] + (n,), cd, x.weak_type)]
  if compute_left_eigenvectors:
    outs.append(ShapedArray(x.shape, cd, x.weak_type))
  if compute_right_eigenvectors:
    outs.append(ShapedArray(x.shape, cd, x.weak_type))
  return outs


def eig(x, *, compute_left_eigenvectors=True, compute_right_eigenvectors=True,
        enable_eigvec_derivs=False, implementation=None, use_magma=None):
  """Eigendecomposition of general square matrices: ``[w, vl, vr]`` (the requested
  eigenvectors only), complex, eigenvectors normalized to unit norm as LAPACK's geev."""
  x = _asarray(x)
  return eig_p.bind(x, compute_left_eigenvectors=bool(compute_left_eigenvectors),
                    compute_right_eigenvectors=bool(compute_right_eigenvectors),
                    enable_eigvec_derivs=bool(enable_eigvec_derivs),
                    implementation=implementation)


def _eig_vec_jvp(w, v, da):
  """(dw, dv) for right eigenvectors ``v`` (unit norm, largest-magnitude component real,
  as LAPACK's geev returns them) by nondegenerate perturbation theory (Giles 2008, 3.1);
  the free multiple of v_j in dv_j is fixed by differentiating both normalizations."""
  av = _aval(v)
  nd = av.ndim
  n = av.shape[-1]
  cd = av.dtype
  rd = _real_dtype(cd)
  eye_b = _shapes.broadcast_in_dim(_eye(cd, (n, n)), av.shape, (nd - 2, nd - 1))
  Fmat = _ew.sub(_ew.reciprocal(_ew.add(eye_b, _sub_b(_row_vec(w), _col_vec(w)))), eye_b)
  P = _matmul(_solve(v, da), v)
  dw = _diagonal(P)
  U = _matmul(v, _ew.mul(Fmat, P))
  k = _red.argmax(_ew.abs(v), nd - 2, dtypes.int32)
  rows = _shapes.broadcasted_iota(dtypes.int32, av.shape, nd - 2)
  kb = _shapes.broadcast_in_dim(k, av.shape, tuple(i for i in range(nd) if i != nd - 2))
  mask = _ew.convert_element_type(_ew.eq(rows, kb), cd)
  re = _ew.neg(_ew.real(_red.reduce_sum(_ew.mul(_ew.conj(v), U), (nd - 2,))))
  im = _ew.div(_ew.neg(_ew.imag(_red.reduce_sum(_ew.mul(mask, U), (nd - 2,)))),
               _ew.real(_red.reduce_sum(_ew.mul(mask, v), (nd - 2,))))
  c = _ew.complex(re, im) if rd == _aval(re).dtype else _ew.complex(_cast(re, rd), _cast(im, rd))
  return dw, _ew.add(U, _mul_b(v, _row_vec(c)))


def _eig_jvp(primals, tangents, *, compute_left_eigenvectors, compute_right_eigenvectors,
             enable_eigvec_derivs=False, implementation=None):
  a, = primals
  da, = tangents
  if (compute_left_eigenvectors or compute_right_eigenvectors) and not enable_eigvec_derivs:
    raise NotImplementedError(
        "Derivatives of non-symmetric eigenvectors are only valid under assumptions on the "
        "input that JAX cannot check (see the enable_eigvec_derivs argument to "
        "jax.lax.linalg.eig). Pass enable_eigvec_derivs=True to jax.lax.linalg.eig to opt "
        "in. See https://github.com/jax-ml/jax/issues/2748 for discussion.")
  outs = eig_p.bind(a, compute_left_eigenvectors=compute_left_eigenvectors,
                    compute_right_eigenvectors=True,
                    enable_eigvec_derivs=enable_eigvec_derivs, implementation=implementation)
  w, vr = outs[0], outs[-1]
  da = _cast(_ad.instantiate_zeros(da), _aval(vr).dtype)
  if not (compute_left_eigenvectors or compute_right_eigenvectors):
    # eigenvalues: diag(V^{-1} dA V) (eq. 4.60 of arXiv:1701.00392)
    return [w], [_diagonal(_matmul(_solve(vr, da), vr))]
  dw, dvr = _eig_vec_jvp(w, vr, da)
  p_out, t_out = [w], [dw]
  if compute_left_eigenvectors:
    _, dvl = _eig_vec_jvp(_ew.conj(w), outs[1], _H(da))
    p_out.append(outs[1])
    t_out.append(dvl)
  if compute_right_eigenvectors:
    p_out.append(vr)
    t_out.append(dvr)
  return p_out, t_out


_ad.primitive_jvps[eig_p] = _eig_jvp


# --- svd -------------------------------------------------------------------------------------
svd_p = core.Primitive("svd")
svd_p.multiple_results = True
svd_p.arg_names = ("operand",)


@svd_p.def_abstract_eval
def _svd_abstract(x, *, full_matrices, compute_uv, subset_by_index=None, algorithm=None):
  _check_matrix("svd", x)
  m, n = x.shape[-2:]
  batch = x.shape[:-2]
  rank = min(m, n)
  if subset_by_index is not None:
    if full_matrices and subset_by_index != (0, rank):
      raise ValueError("full_matrices and subset_by_index cannot both be set")
    lo, hi = subset_by_index
    if not 0 <= lo < hi <= rank:
      raise ValueError(f"subset_by_index must satisfy 0 <= lo < hi <= min(m, n), got "
                       f"{subset_by_index} for shape {x.shape}")
    rank = hi - lo
  s = ShapedArray(batch + (rank,), _real_dtype(x.dtype), x.weak_type)
  if not compute_uv:
    return [s]
  u = ShapedArray(batch + (m, m if full_matrices else rank), x.dtype, x.weak_type)
  vt = ShapedArray(batch + (n if full_matrices else rank, n), x.dtype, x.weak_type)
  return [s, u, vt]


def svd(x, *, full_matrices=True, compute_uv=True, subset_by_index=None, algorithm=None):
  """Singular value decomposition: ``(u, s, vh)`` with ``x = u @ diag(s) @ vh`` and ``s``
  descending, or ``s`` alone when ``compute_uv`` is False."""
  x = _asarray(x)
  if subset_by_index is not None:
    subset_by_index = tuple(int(i) for i in subset_by_index)
    if full_matrices and subset_by_index != (0, min(_aval(x).shape[-2:])):
      raise ValueError("full_matrices and subset_by_index cannot both be set")
  if algorithm is not None and not isinstance(algorithm, SvdAlgorithm):
    raise TypeError(f"algorithm must be a SvdAlgorithm, got {algorithm!r}")
  outs = svd_p.bind(x, full_matrices=bool(full_matrices), compute_uv=bool(compute_uv),
                    subset_by_index=subset_by_index, algorithm=algorithm)
  if compute_uv:
    s, u, vt = outs
    return u, s, vt
  return outs[0]


def _svd_jvp(primals, tangents, *, full_matrices, compute_uv, subset_by_index=None,
             algorithm=None):
  A, = primals
  dA, = tangents
  aval = _aval(A)
  if compute_uv and full_matrices:
    raise NotImplementedError(
        "Singular value decomposition JVP not implemented for full matrices")
  s, U, Vt = svd_p.bind(A, full_matrices=False, compute_uv=True,
                        subset_by_index=subset_by_index, algorithm=algorithm)
  dA = _ad.instantiate_zeros(dA)
  Ut, V = _H(U), _H(Vt)
  rd = _real_dtype(aval.dtype)
  s_dim = _row_vec(s)                                   # [..., 1, k]
  dS = _matmul(_matmul(Ut, dA), V)
  ds = _diagonal(dS)
  if dtypes.is_complex(aval.dtype):
    ds = _ew.real(ds)
  if not compute_uv:
    return [s], [ds]
  s_col = _col_vec(s)
  s_diffs = _mul_b(_add_b(s_dim, s_col), _sub_b(s_dim, s_col))
  zero = _ad.scalar_const(0, rd)
  s_diffs_zeros = _ew.convert_element_type(_ew.eq(s_diffs, zero), rd)
  F = _ew.sub(_ew.reciprocal(_ew.add(s_diffs, s_diffs_zeros)), s_diffs_zeros)
  s_dim_c = _cast(s_dim, aval.dtype)
  dSS = _mul_b(s_dim_c, dS)                              # dS diag(s)
  SdS = _mul_b(_T(s_dim_c), dS)                          # diag(s) dS
  s_zeros = _ew.convert_element_type(_ew.eq(s, zero), rd)
  s_inv = _ew.sub(_ew.reciprocal(_ew.add(s, s_zeros)), s_zeros)
  s_inv_mat = _cast(_diag_embed(s_inv), aval.dtype)
  dUdV_diag = _ew.mul(_ew.mul(_ad.scalar_const(0.5, aval.dtype), _ew.sub(dS, _H(dS))), s_inv_mat)
  Fc = _cast(F, aval.dtype)
  dU = _matmul(U, _ew.add(_ew.mul(Fc, _ew.add(dSS, _H(dSS))), dUdV_diag))
  dV = _matmul(V, _ew.mul(Fc, _ew.add(SdS, _H(SdS))))
  m, n = aval.shape[-2:]
  if m > n:
    dAV = _matmul(dA, V)
    dU = _ew.add(dU, _div_b(_ew.sub(dAV, _matmul(U, _matmul(Ut, dAV))), s_dim_c))
  if n > m:
    dAHU = _matmul(_H(dA), U)
    dV = _ew.add(dV, _div_b(_ew.sub(dAHU, _matmul(V, _matmul(Vt, dAHU))), s_dim_c))
  return [s, U, Vt], [ds, dU, _H(dV)]


_ad.primitive_jvps[svd_p] = _svd_jvp


# --- qr --------------------------------------------------------------------------------------
qr_p = core.Primitive("qr")
qr_p.multiple_results = True
qr_p.arg_names = ("operand",)


@qr_p.def_abstract_eval
def _qr_abstract(x, *, pivoting, full_matrices, use_magma=None):
  _check_matrix("qr", x)
  *batch, m, n = x.shape
  batch = tuple(batch)
  k = m if full_matrices else min(m, n)
  q = ShapedArray(batch + (m, k), x.dtype, x.weak_type)
  r = ShapedArray(batch + (k, n), x.dtype, x.weak_type)
  if pivoting:
    return [q, r, ShapedArray(batch + (n,), dtypes.int32, x.weak_type)]
  return [q, r]


def qr(x, *, pivoting=False, full_matrices=True, use_magma=None):
  """QR decomposition ``x = q @ r`` (``x[..., p] = q @ r`` with column ``pivoting``):
  ``(q, r)`` or ``(q, r, p)``."""
  x = _asarray(x)
  outs = qr_p.bind(x, pivoting=bool(pivoting), full_matrices=bool(full_matrices),
                   use_magma=use_magma)
  return tuple(outs)


def _qr_jvp(primals, tangents, *, pivoting, full_matrices, use_magma=None):
  # Townsend, "Differentiating the QR decomposition" (2018)
  x, = primals
  dx, = tangents
  outs = qr_p.bind(x, pivoting=pivoting, full_matrices=False, use_magma=use_magma)
  q, r = outs[0], outs[1]
  *_, m, n = _aval(x).shape
  if m < n or (full_matrices and m != n):
    raise NotImplementedError("Unimplemented case of QR decomposition derivative")
  dx = _ad.instantiate_zeros(dx)
  if pivoting:
    # columns of dx in pivot order: dx @ P, P[i, j] = (p[j] == i)
    p = outs[2]
    xa = _aval(x)
    shape = _aval(p).shape[:-1] + (n, n)
    rows = _shapes.broadcasted_iota(dtypes.int32, shape, len(shape) - 2)
    pb = _shapes.broadcast_in_dim(p, shape, tuple(range(len(shape) - 2)) + (len(shape) - 1,))
    P = _ew.convert_element_type(_ew.eq(pb, rows), xa.dtype)
    dx = _matmul(dx, P)
  dx_rinv = triangular_solve(r, dx)   # right side solve by default
  qt_dx_rinv = _matmul(_H(q), dx_rinv)
  lower = _tril(qt_dx_rinv, -1)
  do = _ew.sub(lower, _H(lower))      # skew-symmetric
  a = _aval(qt_dx_rinv)
  if dtypes.is_complex(a.dtype):
    eye_b = _eye(a.dtype, a.shape)
    imag_part = _ew.sub(qt_dx_rinv, _cast(_ew.real(qt_dx_rinv), a.dtype))
    do = _ew.add(do, _ew.mul(eye_b, imag_part))
  dq = _ew.add(_matmul(q, _ew.sub(do, qt_dx_rinv)), dx_rinv)
  dr = _matmul(_ew.sub(qt_dx_rinv, do), r)
  t_outs = [dq, dr]
  if pivoting:
    t_outs.append(_ad.Zero.from_primal_value(outs[2]))
  return list(outs), t_outs


_ad.primitive_jvps[qr_p] = _qr_jvp


# --- geqrf (internal: Householder QR in LAPACK's packed form) --------------------------------
geqrf_p = core.Primitive("geqrf")
geqrf_p.multiple_results = True
geqrf_p.arg_names = ("operand",)


@geqrf_p.def_abstract_eval
def _geqrf_abstract(x):
  _check_matrix("geqrf", x)
  *batch, m, n = x.shape
  return [ShapedArray(x.shape, x.dtype, x.weak_type),
          ShapedArray(tuple(batch) + (min(m, n),), x.dtype, x.weak_type)]


def geqrf(x):
  """Householder QR in LAPACK's packed form: ``(a, taus)`` with R on and above the diagonal
  of ``a`` and the reflectors below it (not in JAX's public lax.linalg either)."""
  return tuple(geqrf_p.bind(_asarray(x)))


# --- lu --------------------------------------------------------------------------------------
lu_p = core.Primitive("lu")
lu_p.multiple_results = True
lu_p.arg_names = ("operand",)


@lu_p.def_abstract_eval
def _lu_abstract(x):
  _check_matrix("lu", x)
  *batch, m, n = x.shape
  batch = tuple(batch)
  return [ShapedArray(x.shape, x.dtype, x.weak_type),
          ShapedArray(batch + (min(m, n),), dtypes.int32, x.weak_type),
          ShapedArray(batch + (m,), dtypes.int32, x.weak_type)]


def lu(x):
  """LU decomposition with partial pivoting: ``(lu, pivots, permutation)``; ``lu`` packs
  unit-lower ``L`` below the diagonal and ``U`` on and above it, ``pivots`` are LAPACK's
  row swaps (0-based) and ``x[..., permutation, :] = L @ U``."""
  return tuple(lu_p.bind(_asarray(x)))


def _lu_jvp(primals, tangents):
  a, = primals
  a_dot, = tangents
  lu_, pivots, permutation = lu_p.bind(a)
  aval = _aval(a)
  *batch, m, n = aval.shape
  batch = tuple(batch)
  k = min(m, n)
  dt = aval.dtype
  x = _permute_rows(_ad.instantiate_zeros(a_dot), permutation)
  nb = len(batch)
  zero = _ad.scalar_const(0, dt)
  lk = _shapes.slice(lu_, (0,) * (nb + 2), batch + (m, k))
  l = _shapes.pad(_tril(lk, -1), zero, ((0, 0, 0),) * nb + ((0, 0, 0), (0, m - k, 0)))
  l = _ew.add(l, _shapes.broadcast_in_dim(_eye(dt, (m, m)), batch + (m, m), (nb, nb + 1)))
  uk = _shapes.slice(lu_, (0,) * (nb + 2), batch + (k, n))
  u = _shapes.pad(_triu(uk), zero, ((0, 0, 0),) * nb + ((0, n - k, 0), (0, 0, 0)))
  if n > k:
    u_eye = _shapes.pad(_eye(dt, (n - k, n - k)), zero, ((k, 0, 0), (k, 0, 0)))
    u = _ew.add(u, _shapes.broadcast_in_dim(u_eye, batch + (n, n), (nb, nb + 1)))
  la = triangular_solve(l, x, left_side=True, transpose_a=False, lower=True, unit_diagonal=True)
  lau = triangular_solve(u, la, left_side=False, transpose_a=False, lower=False)
  l_dot = _matmul(l, _tril(lau, -1))
  u_dot = _matmul(_triu(lau), u)
  lu_dot = _ew.add(l_dot, u_dot)
  return [lu_, pivots, permutation], [lu_dot, _ad.Zero.from_primal_value(pivots),
                                      _ad.Zero.from_primal_value(permutation)]


_ad.primitive_jvps[lu_p] = _lu_jvp


# --- lu_pivots_to_permutation ----------------------------------------------------------------
lu_pivots_to_permutation_p = core.Primitive("lu_pivots_to_permutation")
lu_pivots_to_permutation_p.arg_names = ("pivots",)


@lu_pivots_to_permutation_p.def_abstract_eval
def _lu_pivots_to_permutation_abstract(pivots, *, permutation_size):
  if pivots.dtype != dtypes.int32:
    raise TypeError(f"lu_pivots_to_permutation does not accept dtype {pivots.dtype.name} at "
                    "position 0. Accepted dtypes at position 0 are subtypes of int32.")
  if pivots.ndim < 1:
    raise ValueError("Argument to lu_pivots_to_permutation must have rank >= 1 and dtype "
                     f"int32. Got shape={pivots.shape} and dtype={pivots.dtype}")
  if permutation_size < pivots.shape[-1]:
    raise ValueError(f"Output permutation size {permutation_size} has to exceed the trailing "
                     f"dimension of the pivots. Got pivots size {pivots.shape[-1]}")
  return ShapedArray(pivots.shape[:-1] + (permutation_size,), dtypes.int32, pivots.weak_type)


def lu_pivots_to_permutation(pivots, permutation_size):
  """The row permutation that LAPACK's sequential ``pivots`` (row ``i`` swapped with row
  ``pivots[i]``) produce, of length ``permutation_size``."""
  size = _concrete_int(permutation_size, "permutation_size")
  return lu_pivots_to_permutation_p.bind(_asarray(pivots), permutation_size=size)


_ad.defjvp_zero(lu_pivots_to_permutation_p)


# --- triangular_solve ------------------------------------------------------------------------
triangular_solve_p = core.Primitive("triangular_solve")
triangular_solve_p.arg_names = ("a", "b")


@triangular_solve_p.def_abstract_eval
def _triangular_solve_abstract(a, b, *, left_side, lower, transpose_a, conjugate_a,
                               unit_diagonal):
  _check_rank("triangular_solve", a, 0)
  _check_rank("triangular_solve", b, 1)
  _check_inexact("triangular_solve", a, 0)
  _check_inexact("triangular_solve", b, 1)
  if a.dtype != b.dtype:
    raise TypeError("lax.triangular_solve requires arguments to have the same dtypes, got "
                    f"{a.dtype.name}, {b.dtype.name}.")
  if a.shape[-1] != a.shape[-2]:
    raise ValueError("The first input to triangular_solve must be a square matrix. Got shape "
                     f"{a.shape}.")
  common = b.shape[-2] if left_side else b.shape[-1]
  if a.shape[-1] != common:
    raise ValueError(f"Incompatible shapes for arguments to triangular_solve: "
                     f"{a.shape[-2:]} and {b.shape[-2:]}.")
  if a.ndim != b.ndim:
    raise TypeError("All inputs to triangular_solve must have the same number of batch "
                    f"dimensions, but got {[a.ndim - 2, b.ndim - 2]} batch dimensions for the "
                    "inputs.")
  for i, (p, q) in enumerate(zip(a.shape[:-2], b.shape[:-2])):
    if p != q:
      raise ValueError(f"Batching dimension {i}_{i} corresponds to two sizes: {p} and {q}")
  return ShapedArray(b.shape, b.dtype, a.weak_type and b.weak_type)


def triangular_solve(a, b, *, left_side=False, lower=False, transpose_a=False,
                     conjugate_a=False, unit_diagonal=False):
  """Solve ``op(a) @ x = b`` (``left_side``) or ``x @ op(a) = b`` for triangular ``a``;
  ``op`` transposes and/or conjugates.  ``b`` with one dimension fewer than ``a`` is a
  batch of vectors."""
  a = _asarray(a)
  b = _asarray(b)
  conjugate_a = bool(conjugate_a) and dtypes.is_complex(_aval(a).dtype)
  singleton = _aval(b).ndim == _aval(a).ndim - 1
  if singleton:
    bd = _aval(b).ndim
    b = _shapes.expand_dims(b, (bd,) if left_side else (bd - 1,))
  out = triangular_solve_p.bind(a, b, left_side=bool(left_side), lower=bool(lower),
                                transpose_a=bool(transpose_a), conjugate_a=conjugate_a,
                                unit_diagonal=bool(unit_diagonal))
  if singleton:
    nd = _aval(out).ndim
    out = _shapes.squeeze(out, (nd - 1,) if left_side else (nd - 2,))
  return out


def _triangular_solve_jvp_a(g_a, ans, a, b, *, left_side, lower, transpose_a, conjugate_a,
                            unit_diagonal):
  m, n = _aval(b).shape[-2:]
  k = 1 if unit_diagonal else 0
  g_a = _tril(g_a, -k) if lower else _triu(g_a, k)
  g_a = _ew.neg(g_a)
  g_a = _T(g_a) if transpose_a else g_a
  g_a = _ew.conj(g_a) if conjugate_a else g_a

  def a_inverse(rhs):
    return triangular_solve_p.bind(a, rhs, left_side=left_side, lower=lower,
                                   transpose_a=transpose_a, conjugate_a=conjugate_a,
                                   unit_diagonal=unit_diagonal)
  # order the products so the cheaper one comes first
  if left_side:
    return a_inverse(_matmul(g_a, ans)) if m > n else _matmul(a_inverse(g_a), ans)
  return a_inverse(_matmul(ans, g_a)) if m < n else _matmul(ans, a_inverse(g_a))


def _triangular_solve_jvp_b(g_b, ans, a, b, **params):
  return triangular_solve_p.bind(a, g_b, **params)


def _triangular_solve_transpose(ct, a, b, *, left_side, lower, transpose_a, conjugate_a,
                                unit_diagonal):
  # linear in b only (like div in its numerator)
  if _ad.is_undefined_primal(a):
    raise ValueError("triangular_solve is not linear in its first argument")
  if type(ct) is _ad.Zero:
    return [None, _ad.Zero(_ad.tangent_aval(b.aval))]
  ct_b = triangular_solve_p.bind(a, ct, left_side=left_side, lower=lower,
                                 transpose_a=not transpose_a, conjugate_a=conjugate_a,
                                 unit_diagonal=unit_diagonal)
  return [None, ct_b]


_ad.defjvp2(triangular_solve_p, _triangular_solve_jvp_a, _triangular_solve_jvp_b)
_ad.primitive_transposes[triangular_solve_p] = _triangular_solve_transpose


# --- schur -----------------------------------------------------------------------------------
schur_p = core.Primitive("schur")
schur_p.multiple_results = True
schur_p.arg_names = ("operand",)


@schur_p.def_abstract_eval
def _schur_abstract(x, *, compute_schur_vectors, sort_eig_vals, select_callable):
  _check_matrix("schur", x)
  if x.shape[-1] != x.shape[-2]:
    raise ValueError(f"The input to schur must be a square matrix. Got shape {x.shape}.")
  t = ShapedArray(x.shape, x.dtype, x.weak_type)
  return [t, t] if compute_schur_vectors else [t]


def schur(x, *, compute_schur_vectors=True, sort_eig_vals=False, select_callable=None):
  """Schur decomposition ``x = Z T Z^H`` (real Schur form for real input): ``(T, Z)``.
  With ``sort_eig_vals``, ``select_callable`` (eigenvalue -> bool) orders the selected
  eigenvalues first."""
  x = _asarray(x)
  if sort_eig_vals and select_callable is None:
    raise ValueError("schur: sort_eig_vals=True requires a select_callable")
  outs = schur_p.bind(x, compute_schur_vectors=bool(compute_schur_vectors),
                      sort_eig_vals=bool(sort_eig_vals), select_callable=select_callable)
  return tuple(outs) if compute_schur_vectors else (outs[0],)


# --- hessenberg ------------------------------------------------------------------------------
hessenberg_p = core.Primitive("hessenberg")
hessenberg_p.multiple_results = True
hessenberg_p.arg_names = ("a",)


@hessenberg_p.def_abstract_eval
def _hessenberg_abstract(a):
  _check_matrix("hessenberg", a)
  if a.shape[-1] != a.shape[-2]:
    raise ValueError(f"Argument to Hessenberg reduction must be a square matrix, got shape "
                     f"{a.shape}")
  n = a.shape[-1]
  return [ShapedArray(a.shape, a.dtype, a.weak_type),
          ShapedArray(a.shape[:-2] + (max(n - 1, 0),), a.dtype, a.weak_type)]


def hessenberg(a):
  """Reduction to upper Hessenberg form, LAPACK's gehrd layout: ``(a_out, taus)`` with the
  Householder reflectors below the first subdiagonal of ``a_out``."""
  return tuple(hessenberg_p.bind(_asarray(a)))


# --- tridiagonal -----------------------------------------------------------------------------
tridiagonal_p = core.Primitive("tridiagonal")
tridiagonal_p.multiple_results = True
tridiagonal_p.arg_names = ("a",)


@tridiagonal_p.def_abstract_eval
def _tridiagonal_abstract(a, *, lower):
  _check_matrix("tridiagonal", a)
  if a.shape[-1] != a.shape[-2]:
    raise ValueError(f"Input must be a square matrix, got shape {a.shape}")
  n = a.shape[-1]
  rd = _real_dtype(a.dtype)
  b = a.shape[:-2]
  m1 = max(n - 1, 0)
  return [ShapedArray(a.shape, a.dtype, a.weak_type), ShapedArray(b + (n,), rd, a.weak_type),
          ShapedArray(b + (m1,), rd, a.weak_type), ShapedArray(b + (m1,), a.dtype, a.weak_type)]


def tridiagonal(a, *, lower=True):
  """Reduction of a Hermitian matrix to real symmetric tridiagonal form (LAPACK's
  sytrd/hetrd): ``(arr, d, e, taus)``: diagonal ``d``, off-diagonal ``e`` and the
  Householder reflectors packed in ``arr``."""
  return tuple(tridiagonal_p.bind(_asarray(a), lower=bool(lower)))


# --- householder_product ---------------------------------------------------------------------
householder_product_p = core.Primitive("householder_product")
householder_product_p.arg_names = ("a", "taus")


@householder_product_p.def_abstract_eval
def _householder_product_abstract(a, taus):
  _check_matrix("householder_product", a, 0)
  _check_rank("householder_product", taus, 1, 1)
  m, n = a.shape[-2:]
  if m < n:
    raise ValueError("The first argument to householder_product must have at least as many "
                     f"rows as columns, got {a.shape}")
  if a.shape[:-2] != taus.shape[:-1] or taus.shape[-1] > n:
    raise ValueError("The second argument to householder_product must not have more "
                     f"elements than the minimum of the first argument's dimensions, got "
                     f"{a.shape} and {taus.shape}")
  if a.dtype != taus.dtype:
    raise TypeError(f"householder_product requires arguments of the same dtype, got "
                    f"{a.dtype.name} and {taus.dtype.name}")
  return ShapedArray(a.shape, a.dtype, a.weak_type)


def householder_product(a, taus):
  """The product of the Householder reflectors packed in ``a`` (below its diagonal) with
  scales ``taus``: the first ``n`` columns of Q (LAPACK's orgqr/ungqr)."""
  return householder_product_p.bind(_asarray(a), _asarray(taus))


# --- ormqr -----------------------------------------------------------------------------------
ormqr_p = core.Primitive("ormqr")
ormqr_p.arg_names = ("a", "taus", "c")


@ormqr_p.def_abstract_eval
def _ormqr_abstract(a, taus, c, *, left, transpose):
  _check_matrix("ormqr", a, 0)
  _check_rank("ormqr", taus, 1, 1)
  _check_matrix("ormqr", c, 2)
  if a.dtype != taus.dtype or a.dtype != c.dtype:
    raise TypeError("ormqr requires arguments of the same dtype, got "
                    f"{a.dtype.name}, {taus.dtype.name} and {c.dtype.name}")
  q_dim = c.shape[-2] if left else c.shape[-1]
  if a.shape[-2] != q_dim:
    raise ValueError(f"ormqr: a has {a.shape[-2]} rows but c's dimension multiplied by Q is "
                     f"{q_dim}")
  if taus.shape[-1] > min(a.shape[-2:]):
    raise ValueError(f"ormqr: too many taus ({taus.shape[-1]}) for a of shape {a.shape}")
  return ShapedArray(c.shape, c.dtype, c.weak_type)


def ormqr(a, taus, c, *, left=True, transpose=False):
  """``Q @ c`` (``left``) or ``c @ Q``, with ``Q^H`` if ``transpose``, where Q is given by
  the Householder reflectors of a ``geqrf`` factorization (``a``, ``taus``)."""
  return ormqr_p.bind(_asarray(a), _asarray(taus), _asarray(c), left=bool(left),
                      transpose=bool(transpose))


# --- tridiagonal_solve -----------------------------------------------------------------------
tridiagonal_solve_p = core.Primitive("tridiagonal_solve")
tridiagonal_solve_p.arg_names = ("dl", "d", "du", "b")


@tridiagonal_solve_p.def_abstract_eval
def _tridiagonal_solve_abstract(dl, d, du, b, *, perturb_singular=False):
  for i, x in enumerate((dl, d, du)):
    _check_rank("tridiagonal_solve", x, i, 1)
  _check_rank("tridiagonal_solve", b, 3, 2)
  for i, x in enumerate((dl, d, du, b)):
    _check_inexact("tridiagonal_solve", x, i)
  if not (dl.dtype == d.dtype == du.dtype == b.dtype):
    raise ValueError("tridiagonal_solve requires that all inputs have the same dtype, got "
                     f"{dl.dtype}, {d.dtype}, {du.dtype} and {b.dtype}")
  if not (dl.shape == d.shape == du.shape):
    raise ValueError("dl, d and du must have the same shape. Got dl.shape = "
                     f"{dl.shape}, d.shape = {d.shape}, du.shape = {du.shape}")
  if b.ndim != d.ndim + 1 or b.shape[:-1] != d.shape:
    raise ValueError("Leading dimensions of b must be equal to the shape of d, got "
                     f"b.shape = {b.shape} and d.shape = {d.shape}")
  return ShapedArray(b.shape, b.dtype, b.weak_type)


def tridiagonal_solve(dl, d, du, b, *, perturb_singular=False):
  """Solve the tridiagonal system ``A x = b``: ``d`` the diagonal, ``dl`` the subdiagonal
  (``dl[..., 0]`` ignored), ``du`` the superdiagonal (``du[..., -1]`` ignored); ``b`` is
  ``[..., m, n]``."""
  return tridiagonal_solve_p.bind(_asarray(dl), _asarray(d), _asarray(du), _asarray(b),
                                  perturb_singular=bool(perturb_singular))


def _shift(x, k):
  """Shift the last dimension right by ``k`` (> 0) or left (< 0), filling zeros."""
  a = _aval(x)
  nb = a.ndim - 1
  zero = _ad.scalar_const(0, a.dtype)
  n = a.shape[-1]
  if k > 0:
    return _shapes.pad(x, zero, ((0, 0, 0),) * nb + ((k, -k, 0),)) if n else x
  return _shapes.pad(x, zero, ((0, 0, 0),) * nb + ((k, -k, 0),)) if n else x


def _tridiag_matmul(dl, d, du, x):
  """A @ x for the tridiagonal A given by (dl, d, du); x is [..., m, n]."""
  xa = _aval(x)
  m = xa.shape[-2]
  nb = xa.ndim - 2

  def col(v):
    return _shapes.broadcast_in_dim(v, xa.shape, tuple(range(nb + 1)))
  out = _ew.mul(col(d), x)
  if m > 1:
    zero = _ad.scalar_const(0, xa.dtype)
    pad0 = ((0, 0, 0),) * nb
    # row i gets du[i] * x[i + 1] and dl[i] * x[i - 1]
    x_next = _shapes.pad(x, zero, pad0 + ((-1, 1, 0), (0, 0, 0)))
    x_prev = _shapes.pad(x, zero, pad0 + ((1, -1, 0), (0, 0, 0)))
    out = _ew.add(out, _ew.add(_ew.mul(col(du), x_next), _ew.mul(col(dl), x_prev)))
  return out


def _tridiagonal_solve_jvp(primals, tangents, *, perturb_singular=False):
  dl, d, du, b = primals
  ans = tridiagonal_solve_p.bind(dl, d, du, b, perturb_singular=perturb_singular)
  tdl, td, tdu, tb = tangents
  parts = []
  if not all(type(t) is _ad.Zero for t in (tdl, td, tdu)):
    z = [_ad.instantiate_zeros(t) for t in (tdl, td, tdu)]
    parts.append(_ew.neg(_tridiag_matmul(z[0], z[1], z[2], ans)))
  if type(tb) is not _ad.Zero:
    parts.append(tb)
  if not parts:
    return ans, _ad.Zero.from_primal_value(ans)
  rhs = parts[0] if len(parts) == 1 else _ew.add(parts[0], parts[1])
  return ans, tridiagonal_solve_p.bind(dl, d, du, rhs, perturb_singular=perturb_singular)


def _tridiagonal_solve_transpose(ct, dl, d, du, b, *, perturb_singular=False):
  if any(_ad.is_undefined_primal(x) for x in (dl, d, du)):
    raise ValueError("tridiagonal_solve is linear only in b")
  if type(ct) is _ad.Zero:
    return [None, None, None, _ad.Zero(_ad.tangent_aval(b.aval))]
  # A^T has subdiagonal du shifted right and superdiagonal dl shifted left
  dl_t = _shift(du, 1)
  du_t = _shift(dl, -1)
  return [None, None, None, tridiagonal_solve_p.bind(dl_t, d, du_t, ct,
                                                     perturb_singular=perturb_singular)]


_ad.primitive_jvps[tridiagonal_solve_p] = _tridiagonal_solve_jvp
_ad.primitive_transposes[tridiagonal_solve_p] = _tridiagonal_solve_transpose


# --- symmetric_product -----------------------------------------------------------------------
symmetric_product_p = core.Primitive("symmetric_product")
symmetric_product_p.arg_names = ("a_matrix", "c_matrix")


@symmetric_product_p.def_abstract_eval
def _symmetric_product_abstract(a, c, *, alpha, beta, symmetrize_output=False):
  _check_matrix("symmetric_product", a, 0)
  _check_matrix("symmetric_product", c, 1)
  if a.shape[:-1] + (a.shape[-2],) != c.shape:
    raise ValueError("symmetric_product requires c to have shape a.shape[:-1] + "
                     f"(a.shape[-2],), got a.shape={a.shape} and c.shape={c.shape}")
  if a.dtype != c.dtype:
    raise TypeError(f"symmetric_product requires arguments of the same dtype, got "
                    f"{a.dtype.name} and {c.dtype.name}")
  return ShapedArray(c.shape, c.dtype, c.weak_type)


def symmetric_product(a_matrix, c_matrix, *, alpha=1.0, beta=0.0, symmetrize_output=False):
  """``alpha * a @ a^T + beta * c`` (BLAS syrk); with ``symmetrize_output`` the lower
  triangle is mirrored onto the upper one."""
  return symmetric_product_p.bind(_asarray(a_matrix), _asarray(c_matrix), alpha=float(alpha),
                                  beta=float(beta), symmetrize_output=bool(symmetrize_output))


def _symmetric_product_jvp(primals, tangents, *, alpha, beta, symmetrize_output=False):
  a, c = primals
  da, dc = tangents
  out = symmetric_product_p.bind(a, c, alpha=alpha, beta=beta,
                                 symmetrize_output=symmetrize_output)
  dt = _aval(a).dtype
  parts = []
  if type(da) is not _ad.Zero:
    prod = _ew.add(_matmul(da, _T(a)), _matmul(a, _T(da)))
    parts.append(_ew.mul(_ad.scalar_const(alpha, dt), prod))
  if type(dc) is not _ad.Zero:
    parts.append(_ew.mul(_ad.scalar_const(beta, dt), dc))
  t = parts[0] if len(parts) == 1 else _ew.add(*parts)
  if symmetrize_output:
    t = _ew.add(_tril(t), _T(_tril(t, -1)))   # the lower triangle mirrored
  return out, t


_ad.primitive_jvps[symmetric_product_p] = _symmetric_product_jvp


# --- qdwh (polar decomposition) ---------------------------------------------------------------
def qdwh(x, *, is_hermitian=False, max_iterations=None, eps=None, dynamic_shape=None):
  """Polar decomposition ``x = u @ h`` by the QR-based dynamically weighted Halley
  iteration (Nakatsukasa, Bai & Gygi 2010): ``(u, h, num_iters, is_converged)``.

  Differs from JAX: iterations run unrolled in Python (up to ``max_iterations``, default
  10), and once converged further iterations are masked out, so the traced program is
  longer than JAX's while-loop version.  ``dynamic_shape`` is not supported."""
  if dynamic_shape is not None:
    raise NotImplementedError("qdwh: dynamic_shape is not supported")
  x = _asarray(x)
  a = _aval(x)
  if a.ndim != 2:
    raise ValueError(f"The input matrix of qdwh must be 2-D, got shape {a.shape}")
  m, n = a.shape
  if m < n:
    raise ValueError(f"The input matrix of shape M x N must have M >= N. Got {a.shape}")
  _check_inexact("qdwh", a)
  dt = a.dtype
  rd = _real_dtype(dt)
  max_iterations = 10 if max_iterations is None else int(max_iterations)
  eps = float(np.finfo(rd).eps) if eps is None else float(eps)
  c = lambda v, d=rd: _ad.scalar_const(v, d)  # noqa: E731
  # scale so that ||x||_2 <= 1 using sqrt(||x||_1 ||x||_inf)
  absx = _ew.abs(x)
  one_norm = _red.reduce_max(_red.reduce_sum(absx, (0,)), (0,))
  inf_norm = _red.reduce_max(_red.reduce_sum(absx, (1,)), (0,))
  alpha_inv = _ew.mul(_ew.rsqrt(one_norm), _ew.rsqrt(inf_norm))
  alpha_inv = _ew.select_n(_ew.eq(one_norm, c(0)), alpha_inv, c(1))
  u = _ew.mul(x, _cast(alpha_inv, dt))
  l = c(eps)
  tol_l = 10.0 * eps / 2.0
  tol_norm = np.cbrt(tol_l)
  eye_n = _eye(dt, (n, n))
  converged = _ad.scalar_const(False, dtypes.bool_)
  num_iters = _ad.scalar_const(0, dtypes.int32, weak_type=True)
  for _ in range(max_iterations):
    l2 = _ew.mul(l, l)
    dd = _ew.cbrt(_ew.div(_ew.mul(c(4), _ew.sub(c(1), l2)), _ew.mul(l2, l2)))
    sqd = _ew.sqrt(_ew.add(c(1), dd))
    inner = _ew.add(_ew.sub(c(8), _ew.mul(c(4), dd)),
                    _ew.div(_ew.mul(c(8), _ew.sub(c(2), l2)), _ew.mul(l2, sqd)))
    a_ = _ew.add(sqd, _ew.mul(c(0.5), _ew.sqrt(inner)))
    b_ = _ew.div(_ew.mul(_ew.sub(a_, c(1)), _ew.sub(a_, c(1))), c(4))
    c_ = _ew.sub(_ew.add(a_, b_), c(1))
    # u_new = (b/c) u + (a - b/c)/sqrt(c) * q1 q2^H  with  [sqrt(c) u; I] = [q1; q2] r
    sc = _ew.sqrt(c_)
    stacked = _shapes.concatenate([_ew.mul(u, _cast(sc, dt)), eye_n], 0)
    q, _ = qr(stacked, full_matrices=False)
    q1 = _shapes.slice(q, (0, 0), (m, n))
    q2 = _shapes.slice(q, (m, 0), (m + n, n))
    e = _ew.div(b_, c_)
    coef = _ew.div(_ew.sub(a_, e), sc)
    u_new = _ew.add(_ew.mul(_cast(e, dt), u),
                    _ew.mul(_cast(coef, dt), _matmul(q1, _H(q2))))
    l_new = _ew.div(_ew.mul(l, _ew.add(a_, _ew.mul(b_, l2))), _ew.add(c(1), _ew.mul(c_, l2)))
    diff = _ew.sub(u_new, u)
    dnorm = _ew.sqrt(_red.reduce_sum(_ew.real(_ew.mul(_conj(diff), diff))
                                     if dtypes.is_complex(dt) else _ew.mul(diff, diff), (0, 1)))
    active = _ew.bitwise_not(converged)
    u = _ew.select_n(active, u, u_new)
    l = _ew.select_n(active, l, l_new)
    num_iters = _ew.add(num_iters, _ew._convert_element_type(active, dtypes.int32, True))
    now = _ew.bitwise_and(_ew.le(dnorm, c(tol_norm)),
                          _ew.le(_ew.abs(_ew.sub(c(1), l)), c(tol_l)))
    converged = _ew.bitwise_or(converged, now)
    if not isinstance(converged, core.Tracer) and bool(np.asarray(converged)):
      break
  # one Newton-Schulz step polishes u to unitarity
  u = _ew.sub(_ew.mul(_ad.scalar_const(1.5, dt), u),
              _ew.mul(_ad.scalar_const(0.5, dt), _matmul(u, _matmul(_H(u), u))))
  h = _matmul(_H(u), x)
  h = _ew.div(_ew.add(h, _H(h)), _ad.scalar_const(2, dt))
  return u, h, num_iters, converged


# --- batching rules (registered when the batching interpreter exists) ------------------------
def _move_to_front(x, d):
  from pyjax._src.lax import shapes as s
  if d is None or d == 0:
    return x
  nd = _aval(x).ndim
  perm = (d,) + tuple(i for i in range(nd) if i != d)
  return s.transpose(x, perm)


def _register_batching():
  from pyjax._src.interpreters import batching

  def unary(prim):
    def rule(args, dims, **params):
      x, = args
      d, = dims
      out = prim.bind(_move_to_front(x, d), **params)
      if prim.multiple_results:
        return out, [0] * len(out)
      return out, 0
    batching.primitive_batchers[prim] = rule

  for p in (cholesky_p, eigh_p, eig_p, svd_p, qr_p, lu_p, schur_p, hessenberg_p, geqrf_p,
            tridiagonal_p, lu_pivots_to_permutation_p):
    unary(p)

  def nary(prim):
    def rule(args, dims, **params):
      size = next(_aval(x).shape[d] for x, d in zip(args, dims) if d is not None)
      moved = []
      for x, d in zip(args, dims):
        if d is None:
          a = _aval(x)
          x = _shapes.broadcast_in_dim(x, (size,) + a.shape, tuple(range(1, a.ndim + 1)))
        else:
          x = _move_to_front(x, d)
        moved.append(x)
      return prim.bind(*moved, **params), 0
    batching.primitive_batchers[prim] = rule

  for p in (triangular_solve_p, householder_product_p, ormqr_p, tridiagonal_solve_p,
            symmetric_product_p):
    nary(p)


_register_batching()
