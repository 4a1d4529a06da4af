"""jax.scipy.linalg: factorizations and solvers on the lax.linalg primitives, the matrix
exponential (Pade with scaling and squaring) and its Frechet derivative, block_diag.

Matrix functions (sqrtm, funm, polar, rsf2csf, hessenberg, eigh_tridiagonal,
solve_sylvester) are in ``linalg_funcs.py``; special matrices (toeplitz, hankel, pascal,
dft, ...) in ``linalg_special.py``.  SciPy's ``overwrite_*`` and ``check_finite``
arguments are accepted and ignored (as in JAX)."""
from __future__ import annotations

import warnings
from functools import partial

import numpy as np

from pyjax._src import dtypes
from pyjax._src.api import jit
from pyjax._src.api_ad import custom_jvp, jvp
from pyjax._src.lax import lax_api as lax
from pyjax._src.lax import linalg as lax_linalg
from pyjax._src.numpy import linalg as jnp_linalg
from pyjax._src.numpy.util import promote_dtypes, promote_dtypes_inexact
from pyjax._src.scipy import _custom
import pyjax.numpy as jnp

__all__ = ["block_diag", "cho_factor", "cho_solve", "cholesky", "det", "eigh", "expm",
           "expm_frechet", "inv", "lu", "lu_factor", "lu_solve", "qr", "qr_multiply", "schur",
           "solve", "solve_triangular", "svd"]


def _mT(x):
  return jnp.swapaxes(x, -1, -2)


# --- batched triangular solves ------------------------------------------------------------
def _is_vector_rhs(name, a, b):
  """JAX's rule for ``b``: 1-D is a vector; ``a.ndim == b.ndim + 1`` with matching last
  dims is a (deprecated) batch of vectors; otherwise a matrix."""
  if b.ndim == 1:
    return True
  if a.ndim == b.ndim + 1 and a.shape[-1] == b.shape[-1]:
    first = {"cho_solve": "c_and_lower", "lu_solve": "lu_and_piv"}.get(name, "a")
    warnings.warn(f"jax.scipy.linalg.{name}: batched 1D solves with b.ndim > 1 are "
                  "deprecated, and in the future will be treated as a batched 2D solve. Use "
                  f"{name}({first}, b[..., None]).squeeze(-1) to avoid this warning.",
                  FutureWarning, stacklevel=4)
    return True
  return False


def _broadcast_batch(a, b, a_core, b_core):
  batch = jnp.broadcast_shapes(a.shape[:a.ndim - a_core], b.shape[:b.ndim - b_core])
  return (jnp.broadcast_to(a, batch + a.shape[a.ndim - a_core:]),
          jnp.broadcast_to(b, batch + b.shape[b.ndim - b_core:]))


def _tri_solve(a, b, vec, **kw):
  if vec:
    b = b[..., None]
  a, b = _broadcast_batch(a, b, 2, 2)
  x = lax_linalg.triangular_solve(a, b, left_side=True, **kw)
  return x[..., 0] if vec else x


# --- Cholesky -----------------------------------------------------------------------------
@partial(jit, static_argnames=("lower",))
def _cholesky(a, lower):
  a, = promote_dtypes_inexact(jnp.asarray(a))
  l = lax_linalg.cholesky(a if lower else jnp.conj(_mT(a)), symmetrize_input=False)
  return l if lower else jnp.conj(_mT(l))


def cholesky(a, lower=False, overwrite_a=False, check_finite=True):
  """The Cholesky factor of a Hermitian positive-definite matrix (upper by default; the
  input is not symmetrized and only its ``lower``/upper triangle is read)."""
  del overwrite_a, check_finite
  return _cholesky(a, lower)


def cho_factor(a, lower=False, overwrite_a=False, check_finite=True):
  """``(cholesky(a, lower), lower)``, the argument ``cho_solve`` expects."""
  del overwrite_a, check_finite
  return cholesky(a, lower=lower), lower


@partial(jit, static_argnames=("lower",))
def _cho_solve(c, b, lower):
  c, b = promote_dtypes_inexact(jnp.asarray(c), jnp.asarray(b))
  vec = _is_vector_rhs("cho_solve", c, b)
  b = _tri_solve(c, b, vec, lower=lower, transpose_a=not lower, conjugate_a=not lower)
  return _tri_solve(c, b, vec, lower=lower, transpose_a=lower, conjugate_a=lower)


def cho_solve(c_and_lower, b, overwrite_b=False, check_finite=True):
  """Solve ``A x = b`` from ``cho_factor(A)``'s result."""
  del overwrite_b, check_finite
  c, lower = c_and_lower
  return _cho_solve(c, b, lower)


# --- SVD, eigh, Schur, det, inv -----------------------------------------------------------
@partial(jit, static_argnames=("full_matrices", "compute_uv"))
def _svd(a, *, full_matrices, compute_uv):
  a, = promote_dtypes_inexact(jnp.asarray(a))
  return lax_linalg.svd(a, full_matrices=full_matrices, compute_uv=compute_uv)


def svd(a, full_matrices=True, compute_uv=True, overwrite_a=False, check_finite=True,
        lapack_driver="gesdd"):
  """Singular value decomposition: ``(u, s, vh)`` or ``s``."""
  del overwrite_a, check_finite, lapack_driver
  return _svd(a, full_matrices=full_matrices, compute_uv=compute_uv)


def det(a, overwrite_a=False, check_finite=True):
  """The determinant (``jnp.linalg.det``)."""
  del overwrite_a, check_finite
  return jnp_linalg.det(a)


@partial(jit, static_argnames=("lower", "eigvals_only", "eigvals", "type"))
def _eigh(a, b, lower, eigvals_only, eigvals, type):
  if b is not None:
    raise NotImplementedError("Only the b=None case of eigh is implemented")
  if type != 1:
    raise NotImplementedError("Only the type=1 case of eigh is implemented.")
  if eigvals is not None:
    raise NotImplementedError("Only the eigvals=None case of eigh is implemented.")
  a, = promote_dtypes_inexact(jnp.asarray(a))
  v, w = lax_linalg.eigh(a, lower=lower)
  return w if eigvals_only else (w, v)


def eigh(a, b=None, lower=True, eigvals_only=False, overwrite_a=False, overwrite_b=False,
         turbo=True, eigvals=None, type=1, check_finite=True):
  """Eigenvalues (ascending) and eigenvectors of a Hermitian matrix (only ``b=None``,
  ``type=1``, ``eigvals=None``, as in JAX)."""
  del overwrite_a, overwrite_b, turbo, check_finite
  return _eigh(a, b, lower, eigvals_only, eigvals, type)


@partial(jit, static_argnames=("output",))
def _schur(a, output):
  if output == "complex":
    a = a.astype(dtypes.to_complex_dtype(a.dtype))
  return lax_linalg.schur(a)


def schur(a, output="real"):
  """Schur decomposition ``a = Z T Z^H``: ``(T, Z)`` (real Schur form unless
  ``output='complex'``)."""
  if output not in ("real", "complex"):
    raise ValueError(f"Expected 'output' to be either 'real' or 'complex', got "
                     f"output={output!r}.")
  return _schur(a, output)


def inv(a, overwrite_a=False, check_finite=True):
  """The matrix inverse (``jnp.linalg.inv``)."""
  del overwrite_a, check_finite
  return jnp_linalg.inv(a)


# --- LU -----------------------------------------------------------------------------------
@partial(jit, static_argnames=("overwrite_a", "check_finite"))
def lu_factor(a, overwrite_a=False, check_finite=True):
  """Packed LU factors and LAPACK pivots ``(lu, piv)``."""
  del overwrite_a, check_finite
  a, = promote_dtypes_inexact(jnp.asarray(a))
  lu_, piv, _ = lax_linalg.lu(a)
  return lu_, piv


def _take_rows(x, idx):
  """``x[..., idx, :]`` with batched ``idx`` of shape ``[..., m]``."""
  return jnp.take_along_axis(x, idx[..., :, None], axis=-2)


def _lu_solve_core(lu_, perm, b, trans):
  if trans == 0:
    x = _take_rows(b, perm)
    x = lax_linalg.triangular_solve(lu_, x, left_side=True, lower=True, unit_diagonal=True)
    return lax_linalg.triangular_solve(lu_, x, left_side=True, lower=False)
  if trans in (1, 2):
    conj = trans == 2
    x = lax_linalg.triangular_solve(lu_, b, left_side=True, lower=False, transpose_a=True,
                                    conjugate_a=conj)
    x = lax_linalg.triangular_solve(lu_, x, left_side=True, lower=True, unit_diagonal=True,
                                    transpose_a=True, conjugate_a=conj)
    iota = lax.broadcasted_iota(np.int32, perm.shape, perm.ndim - 1)
    _, inv_perm = lax.sort_key_val(perm, iota, dimension=perm.ndim - 1)
    return _take_rows(x, inv_perm)
  raise ValueError(f"'trans' value must be 0, 1, or 2, got {trans}")


@partial(jit, static_argnames=("trans", "overwrite_b", "check_finite"))
def lu_solve(lu_and_piv, b, trans=0, overwrite_b=False, check_finite=True):
  """Solve ``A x = b`` (``trans`` 0), ``A^T x = b`` (1) or ``A^H x = b`` (2) from
  ``lu_factor(A)``."""
  del overwrite_b, check_finite
  lu_, piv = lu_and_piv
  lu_, b = promote_dtypes_inexact(jnp.asarray(lu_), jnp.asarray(b))
  m = lu_.shape[-2]
  perm = lax_linalg.lu_pivots_to_permutation(piv, m)
  vec = _is_vector_rhs("lu_solve", lu_, b)
  if vec:
    b = b[..., None]
  batch = jnp.broadcast_shapes(lu_.shape[:-2], perm.shape[:-1], b.shape[:-2])
  lu_ = jnp.broadcast_to(lu_, batch + lu_.shape[-2:])
  perm = jnp.broadcast_to(perm, batch + perm.shape[-1:])
  b = jnp.broadcast_to(b, batch + b.shape[-2:])
  x = _lu_solve_core(lu_, perm, b, trans)
  return x[..., 0] if vec else x


@partial(jit, static_argnums=(1,))
def _lu(a, permute_l):
  a, = promote_dtypes_inexact(jnp.asarray(a))
  lu_, _, perm = lax_linalg.lu(a)
  dt = a.dtype
  m, n = a.shape[-2:]
  p = jnp.real(jnp.array(perm[..., None, :] == jnp.arange(m, dtype=perm.dtype)[:, None],
                         dtype=dt))
  k = min(m, n)
  l = jnp.tril(lu_, -1)[..., :, :k] + jnp.eye(m, k, dtype=dt)
  u = jnp.triu(lu_)[..., :k, :]
  if permute_l:
    return jnp.matmul(p, l, precision=lax.Precision.HIGHEST), u
  return p, l, u


@partial(jit, static_argnames=("permute_l", "overwrite_a", "check_finite"))
def lu(a, permute_l=False, overwrite_a=False, check_finite=True):
  """LU decomposition ``a = p @ l @ u`` (``(p @ l, u)`` with ``permute_l``)."""
  del overwrite_a, check_finite
  return _lu(a, permute_l)


# --- QR -----------------------------------------------------------------------------------
@partial(jit, static_argnames=("mode", "pivoting"))
def _qr(a, mode, pivoting):
  if mode in ("full", "r"):
    full = True
  elif mode == "economic":
    full = False
  else:
    raise ValueError(f"Unsupported QR decomposition mode '{mode}'")
  a, = promote_dtypes_inexact(jnp.asarray(a))
  q, r, *p = lax_linalg.qr(a, pivoting=pivoting, full_matrices=full)
  if mode == "r":
    return (r, p[0]) if pivoting else (r,)
  return (q, r, p[0]) if pivoting else (q, r)


def qr(a, overwrite_a=False, lwork=None, mode="full", pivoting=False, check_finite=True):
  """QR decomposition; ``mode`` 'full', 'economic' or 'r' (a 1-tuple), with optional column
  ``pivoting`` (adds the permutation)."""
  del overwrite_a, lwork, check_finite
  return _qr(a, mode, pivoting)


def qr_multiply(a, c, mode="right", pivoting=False, conjugate=False, overwrite_a=False,
                overwrite_c=False):
  """``Q @ c`` (``mode='left'``) or ``c @ Q`` (``'right'``) for the Q of ``qr(a)`` without
  forming Q, with the triangular R: ``(cQ, r)`` or ``(cQ, r, p)``.

  Differs from JAX: with ``pivoting`` the Householder factors come from an unpivoted QR of
  the column-permuted ``a`` (no geqp3 primitive), which agrees up to rounding."""
  del overwrite_a, overwrite_c
  a, c = promote_dtypes_inexact(jnp.asarray(a), jnp.asarray(c))
  if mode not in ("right", "left"):
    raise ValueError(f"mode must be 'right' or 'left', got {mode!r}")
  onedim = c.ndim == 1
  if onedim:
    c = c[:, None] if mode == "left" else c[None, :]
  m, n = a.shape[-2:]
  k = min(m, n)
  if mode == "left":
    if c.shape[-2] != k:
      raise ValueError(f"Array shapes are not compatible for Q @ c operation: a has shape "
                       f"{tuple(a.shape)} so Q has {k} columns, but c has {c.shape[-2]} rows "
                       f"(expected {k}).")
  elif c.shape[-1] != m:
    raise ValueError(f"Array shapes are not compatible for c @ Q operation: a has shape "
                     f"{tuple(a.shape)} so Q has {m} rows, but c has {c.shape[-1]} columns "
                     f"(expected {m}).")
  batch = jnp.broadcast_shapes(a.shape[:-2], c.shape[:-2])
  a = jnp.broadcast_to(a, batch + a.shape[-2:])
  c = jnp.broadcast_to(c, batch + c.shape[-2:])
  p = None
  if pivoting:
    _, _, p = lax_linalg.qr(a, pivoting=True, full_matrices=False)
    a = jnp.take_along_axis(a, p[..., None, :], axis=-1)
  r, taus = lax_linalg.geqrf(a)
  if m > n and mode == "left":
    c = jnp.concatenate([c, jnp.zeros(c.shape[:-2] + (m - k,) + c.shape[-1:], c.dtype)], -2)
  if conjugate:
    c = jnp.swapaxes(c, -1, -2)
  left = (mode == "left") != conjugate
  cq = lax_linalg.ormqr(r, taus, c, left=left, transpose=conjugate)
  if conjugate:
    cq = jnp.swapaxes(cq, -1, -2)
  if mode == "right":
    cq = cq[..., :k]
  if onedim:
    cq = cq.ravel()
  r = jnp.triu(r[..., :k, :])
  return (cq, r, p) if pivoting else (cq, r)


# --- solvers ------------------------------------------------------------------------------
@partial(jit, static_argnames=("assume_a", "lower"))
def _solve(a, b, assume_a, lower):
  if assume_a != "pos":
    return jnp_linalg.solve(a, b)
  a, b = promote_dtypes_inexact(jnp.asarray(a), jnp.asarray(b))
  if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
    raise ValueError(f"The arguments to solve must have shapes a=[..., m, m] and b=[..., m, k] "
                     f"or b=[..., m]; got a={a.shape} and b={b.shape}")
  if a.ndim == b.ndim + 1:       # batch of vectors
    return _pos_solve(a, b[..., None], lower)[..., 0]
  return _pos_solve(a, b, lower)


@partial(custom_jvp, nondiff_argnums=(2,))
def _pos_solve(a, b, lower):
  return cho_solve(cho_factor(lax.stop_gradient(a), lower=lower), b)


@partial(_custom.defjvp, _pos_solve)
def _pos_solve_jvp(lower, primals, tangents):
  # the derivative of x = a^-1 b through the full matrix a (as lax.custom_linear_solve
  # differentiates JAX's version), not through the triangle Cholesky reads
  (a, b), (da, db) = primals, tangents
  x = _pos_solve(a, b, lower)
  rhs = db - jnp.matmul(da, x, precision=lax.Precision.HIGHEST)
  return x, _pos_solve(a, rhs, lower)


def solve(a, b, lower=False, overwrite_a=False, overwrite_b=False, debug=False,
          check_finite=True, assume_a="gen"):
  """Solve ``a x = b``; ``assume_a='pos'`` uses a Cholesky factorization (differentiated
  like JAX's ``lax.custom_linear_solve``: through the whole matrix ``a``)."""
  del overwrite_a, overwrite_b, debug, check_finite
  valid = ["gen", "sym", "her", "pos"]
  if assume_a not in valid:
    raise ValueError(f"Expected assume_a to be one of {valid}; got {assume_a!r}")
  return _solve(a, b, assume_a, lower)


@partial(jit, static_argnames=("trans", "lower", "unit_diagonal"))
def _solve_triangular(a, b, trans, lower, unit_diagonal):
  if trans == 0 or trans == "N":
    ta, ca = False, False
  elif trans == 1 or trans == "T":
    ta, ca = True, False
  elif trans == 2 or trans == "C":
    ta, ca = True, True
  else:
    raise ValueError(f"Invalid 'trans' value {trans}")
  a, b = promote_dtypes_inexact(jnp.asarray(a), jnp.asarray(b))
  vec = _is_vector_rhs("solve_triangular", a, b)
  return _tri_solve(a, b, vec, lower=lower, transpose_a=ta, conjugate_a=ca,
                    unit_diagonal=unit_diagonal)


def solve_triangular(a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False,
                     debug=None, check_finite=True):
  """Solve ``op(a) x = b`` for triangular ``a`` (``trans`` 0/'N', 1/'T', 2/'C')."""
  del overwrite_b, debug, check_finite
  return _solve_triangular(a, b, trans, lower, unit_diagonal)


# --- the matrix exponential ---------------------------------------------------------------
def _dot(a, b):
  return jnp.dot(a, b, precision=lax.Precision.HIGHEST)


_PADE = {
    3: (120., 60., 12., 1.),
    5: (30240., 15120., 3360., 420., 30., 1.),
    7: (17297280., 8648640., 1995840., 277200., 25200., 1512., 56., 1.),
    9: (17643225600., 8821612800., 2075673600., 302702400., 30270240., 2162160., 110880.,
        3960., 90., 1.),
    13: (64764752532480000., 32382376266240000., 7771770303897600., 1187353796428800.,
         129060195264000., 10559470521600., 670442572800., 33522128640., 1323241920.,
         40840800., 960960., 16380., 182., 1.),
}


def _bdot(a, b):
  return jnp.matmul(a, b, precision=lax.Precision.HIGHEST)


def _pade(deg, _dot=_dot):
  """The (U, V) parts of the degree-``deg`` Pade approximant: exp(A) ~ (V - U)^-1 (V + U)
  (``_dot``: the matrix product; ``_bdot`` for stacks of matrices)."""
  b = _PADE[deg]

  def f(A):
    ident = jnp.eye(A.shape[-1], dtype=A.dtype)
    A2 = _dot(A, A)
    if deg == 13:
      A4 = _dot(A2, A2)
      A6 = _dot(A4, A2)
      U = _dot(A, _dot(A6, b[13] * A6 + b[11] * A4 + b[9] * A2)
               + b[7] * A6 + b[5] * A4 + b[3] * A2 + b[1] * ident)
      V = (_dot(A6, b[12] * A6 + b[10] * A4 + b[8] * A2)
           + b[6] * A6 + b[4] * A4 + b[2] * A2 + b[0] * ident)
      return U, V
    powers = [ident, A2]
    for _ in range(2, (deg + 1) // 2):
      powers.append(_dot(powers[-1], A2))
    # U = A (b[deg] A^(deg-1) + ... + b[1] I); V = b[deg-1] A^(deg-1) + ... + b[0] I
    u = b[deg] * powers[-1]
    v = b[deg - 1] * powers[-1]
    for j in range(len(powers) - 2, 0, -1):
      u = u + b[2 * j + 1] * powers[j]
      v = v + b[2 * j] * powers[j]
    u = u + b[1] * ident
    v = v + b[0] * ident
    return _dot(A, u), v
  return f


@jit
def _calc_P_Q(A):
  if A.ndim != 2 or A.shape[0] != A.shape[1]:
    raise ValueError("expected A to be a square matrix")
  A_L1 = jnp_linalg.norm(A, 1)
  if A.dtype in (np.float64, np.complex128):
    maxnorm = 5.371920351148152
    conds = [1.495585217958292e-002, 2.539398330063230e-001, 9.504178996162932e-001,
             2.097847961257068e+000]
    branches = [_pade(3), _pade(5), _pade(7), _pade(9), _pade(13)]
  elif A.dtype in (np.float32, np.complex64):
    maxnorm = 3.925724783138660
    conds = [4.258730016922831e-001, 1.880152677804762e+000]
    branches = [_pade(3), _pade(5), _pade(7)]
  else:
    raise TypeError(f"A.dtype={A.dtype} is not supported.")
  n_sq = jnp.maximum(0, jnp.floor(jnp.log2(A_L1 / maxnorm)))
  A = A / 2 ** n_sq.astype(A.dtype)
  idx = jnp.searchsorted(jnp.array(conds, dtype=A_L1.dtype), A_L1, side="right")
  U, V = lax.switch(idx, branches, A)
  return U + V, -U + V, n_sq


@partial(jit, static_argnums=2)
def _squaring(R, n_squarings, max_squarings):
  def step(c, i):
    return lax.cond(i < n_squarings, lambda x: _dot(x, x), lambda x: x, c), None
  res, _ = lax.scan(step, R, jnp.arange(max_squarings, dtype=n_squarings.dtype))
  return res


@partial(jit, static_argnames=("upper_triangular", "max_squarings"))
def expm(A, *, upper_triangular=False, max_squarings=16):
  """The matrix exponential by Pade approximation with scaling and squaring (degree chosen
  from the 1-norm, as in JAX); NaN when more than ``max_squarings`` squarings are needed."""
  A, = promote_dtypes_inexact(A)
  if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
    raise ValueError(f"Expected A to be a (batched) square matrix, got A.shape={A.shape!r}.")
  if A.ndim > 2:
    return _expm_batched(A, upper_triangular, max_squarings)
  P, Q, n_sq = _calc_P_Q(jnp.asarray(A))

  def compute(args):
    A, P, Q = args
    R = solve_triangular(Q, P) if upper_triangular else jnp_linalg.solve(Q, P)
    return _squaring(R, n_sq, max_squarings)

  return lax.cond(n_sq > max_squarings, lambda args: jnp.full_like(args[0], np.nan), compute,
                  (A, P, Q))


def _expm_batched(A, upper_triangular, max_squarings):
  """``expm`` over leading batch dimensions: what JAX's vectorized (vmapped) version
  computes -- every Pade degree evaluated and selected per matrix, squarings masked."""
  batch, n = A.shape[:-2], A.shape[-1]
  A = jnp.reshape(A, (-1, n, n))
  A_L1 = jnp.max(jnp.sum(jnp.abs(A), axis=-2), axis=-1)
  if A.dtype in (np.float64, np.complex128):
    maxnorm = 5.371920351148152
    conds = [1.495585217958292e-002, 2.539398330063230e-001, 9.504178996162932e-001,
             2.097847961257068e+000]
    degs = [3, 5, 7, 9, 13]
  elif A.dtype in (np.float32, np.complex64):
    maxnorm = 3.925724783138660
    conds = [4.258730016922831e-001, 1.880152677804762e+000]
    degs = [3, 5, 7]
  else:
    raise TypeError(f"A.dtype={A.dtype} is not supported.")
  n_sq = jnp.maximum(0, jnp.floor(jnp.log2(A_L1 / maxnorm)))
  A = A / (2 ** n_sq.astype(A.dtype))[:, None, None]
  idx = jnp.searchsorted(jnp.array(conds, dtype=A_L1.dtype), A_L1, side="right")
  U = V = None
  for d_i, deg in enumerate(degs):
    u, v = _pade(deg, _bdot)(A)
    sel = (idx == d_i)[:, None, None]
    U = u if U is None else jnp.where(sel, u, U)
    V = v if V is None else jnp.where(sel, v, V)
  P, Q = U + V, -U + V
  R = solve_triangular(Q, P) if upper_triangular else jnp_linalg.solve(Q, P)

  def step(c, i):
    sq = _bdot(c, c)
    return jnp.where((i < n_sq)[:, None, None], sq, c), None
  R, _ = lax.scan(step, R, jnp.arange(max_squarings, dtype=n_sq.dtype))
  R = jnp.where((n_sq > max_squarings)[:, None, None], jnp.full_like(R, np.nan), R)
  return jnp.reshape(R, batch + (n, n))


@partial(jit, static_argnames=("method", "compute_expm"))
def expm_frechet(A, E, *, method=None, compute_expm=True):
  """The Frechet derivative of ``expm`` at ``A`` in direction ``E`` (a JVP of ``expm``):
  ``(expm(A), L)`` or ``L``."""
  del method
  A, E = jnp.asarray(A), jnp.asarray(E)
  if A.ndim < 2 or A.shape[-2] != A.shape[1]:
    raise ValueError(f"expected A to be a (batched) square matrix, got A.shape={A.shape}")
  if E.ndim < 2 or E.shape[-2] != E.shape[-1]:
    raise ValueError(f"expected E to be a (batched) square matrix, got E.shape={E.shape}")
  if A.shape != E.shape:
    raise ValueError(f"expected A and E to be the same shape, got A.shape={A.shape} "
                     f"E.shape={E.shape}")
  eA, L = jvp(partial(expm, upper_triangular=False, max_squarings=16), (A,), (E,))
  return (eA, L) if compute_expm else L


@jit
def block_diag(*arrs):
  """The block-diagonal matrix of the (at most 2-D) arguments."""
  if len(arrs) == 0:
    arrs = (jnp.zeros((1, 0)),)
  arrs = tuple(promote_dtypes(*arrs))
  bad = [i for i, a in enumerate(arrs) if np.ndim(a) > 2]
  if bad:
    raise ValueError("Arguments to jax.scipy.linalg.block_diag must have at most 2 "
                     f"dimensions, got {arrs[bad[0]]} at argument {bad[0]}.")
  arrs2 = [jnp.atleast_2d(a) for a in arrs]
  dt = arrs2[0].dtype
  total = sum(a.shape[1] for a in arrs2)
  rows, col = [], 0
  for a in arrs2:
    cols = a.shape[1]
    rows.append(lax.pad(a, dt.type(0), ((0, 0, 0), (col, total - cols - col, 0))))
    col += cols
  return jnp.concatenate(rows, axis=0)
