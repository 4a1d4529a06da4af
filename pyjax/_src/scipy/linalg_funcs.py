"""jax.scipy.linalg matrix functions and reductions: sqrtm, funm, rsf2csf, polar,
hessenberg, eigh_tridiagonal and solve_sylvester (JAX's algorithms)."""
from __future__ import annotations

from functools import partial

import numpy as np

from pyjax._src import dtypes
from pyjax._src.api import jit
from pyjax._src.lax import lax_api as lax
from pyjax._src.lax import linalg as lax_linalg
from pyjax._src.numpy import linalg as jnp_linalg
from pyjax._src.numpy.util import promote_dtypes_complex, promote_dtypes_inexact
from pyjax._src.scipy._vectorize import vectorize
from pyjax._src.scipy.linalg import inv, schur, solve
import pyjax.numpy as jnp

__all__ = ["eigh_tridiagonal", "funm", "hessenberg", "polar", "rsf2csf", "solve_sylvester",
           "sqrtm"]


# --- square root --------------------------------------------------------------------------
@jit
def _sqrtm_triu(T):
  """The upper-triangular square root of upper-triangular ``T`` (column by column)."""
  diag = jnp.sqrt(jnp.diag(T))
  n = diag.size
  U = jnp.diag(diag)

  def i_loop(l, data):
    j, U = data
    i = j - 1 - l
    s = lax.fori_loop(i + 1, j, lambda k, v: v + U[i, k] * U[k, j], jnp.zeros((), U.dtype))
    val = jnp.where(T[i, j] == s, 0.0, (T[i, j] - s) / (diag[i] + diag[j]))
    return j, U.at[i, j].set(val)

  def j_loop(j, U):
    return lax.fori_loop(0, j, i_loop, (j, U))[1]

  return lax.fori_loop(0, n, j_loop, U)


@jit
def _sqrtm(A):
  T, Z = schur(A, output="complex")
  R = _sqrtm_triu(T)
  return jnp.matmul(jnp.matmul(Z, R, precision=lax.Precision.HIGHEST), jnp.conj(Z.T),
                    precision=lax.Precision.HIGHEST)


def sqrtm(A, blocksize=1):
  """The principal matrix square root, via the complex Schur form (complex output)."""
  if blocksize > 1:
    raise NotImplementedError("Blocked version is not implemented yet.")
  return _sqrtm(A)


# --- real to complex Schur form -----------------------------------------------------------
@jit
def _rsf2csf_2d(T, Z):
  T, Z = promote_dtypes_complex(T, Z)
  eps = float(dtypes.finfo(T.dtype).eps)
  N = T.shape[0]
  if N == 1:
    return T, Z

  def update(m, T, Z):
    mu = jnp_linalg.eigvals(lax.dynamic_slice(T, (m - 1, m - 1), (2, 2))) - T[m, m]
    r = jnp_linalg.norm(jnp.array([mu[0], T[m, m - 1]])).astype(T.dtype)
    c = mu[0] / r
    s = T[m, m - 1] / r
    G = jnp.array([[c.conj(), s], [-s, c]], dtype=T.dtype)
    rows = lax.dynamic_slice_in_dim(T, m - 1, 2, axis=0)
    cmask = jnp.arange(N) >= m - 1
    rows_new = jnp.where(~cmask, rows, G @ jnp.where(cmask, rows, 0))
    T = lax.dynamic_update_slice_in_dim(T, rows_new, m - 1, axis=0)
    cols = lax.dynamic_slice_in_dim(T, m - 1, 2, axis=1)
    rmask = jnp.arange(N)[:, np.newaxis] < m + 1
    cols_new = jnp.where(~rmask, cols, jnp.where(rmask, cols, 0) @ G.conj().T)
    T = lax.dynamic_update_slice_in_dim(T, cols_new, m - 1, axis=1)
    zc = lax.dynamic_slice_in_dim(Z, m - 1, 2, axis=1)
    Z = lax.dynamic_update_slice_in_dim(Z, zc @ G.conj().T, m - 1, axis=1)
    return T, Z

  def body(i, TZ):
    m = N - i
    T, Z = TZ
    big = jnp.abs(T[m, m - 1]) > eps * (jnp.abs(T[m - 1, m - 1]) + jnp.abs(T[m, m]))
    T, Z = lax.cond(big, update, lambda m, T, Z: (T, Z), m, T, Z)
    return T.at[m, m - 1].set(0.0), Z

  return lax.fori_loop(1, N, body, (T, Z))


@partial(jit, static_argnames=("check_finite",))
def rsf2csf(T, Z, check_finite=True):
  """Convert a real Schur form ``(T, Z)`` to the complex Schur form (upper triangular T) by
  Givens rotations."""
  del check_finite
  T, Z = jnp.asarray(T), jnp.asarray(Z)
  if T.ndim < 2 or T.shape[-1] != T.shape[-2]:
    raise ValueError("Input 'T' must be square.")
  if Z.ndim < 2 or Z.shape[-1] != Z.shape[-2]:
    raise ValueError("Input 'Z' must be square.")
  if T.shape[-1] != Z.shape[-1]:
    raise ValueError(f"Input array shapes must match: Z: {Z.shape} vs. T: {T.shape}")
  return vectorize(_rsf2csf_2d, (2, 2))(T, Z)


# --- general matrix functions (Parlett recurrence) ----------------------------------------
@jit
def _parlett(F, T):
  """Golub & Van Loan's Algorithm 11.1.1: the off-diagonal of ``f(T)`` for triangular T."""
  N = T.shape[0]
  minden = jnp.abs(T[0, 0])

  def inner(i, pFm):
    p, F, minden = pFm
    j = i + p
    s = T[i - 1, j - 1] * (F[j - 1, j - 1] - F[i - 1, i - 1])
    ind = (jnp.arange(N) >= i) & (jnp.arange(N) < j - 1)
    val = (jnp.where(ind, T[i - 1], 0) @ jnp.where(ind, F[:, j - 1], 0)
           - jnp.where(ind, F[i - 1], 0) @ jnp.where(ind, T[:, j - 1], 0))
    s = s + val
    den = T[j - 1, j - 1] - T[i - 1, i - 1]
    s = jnp.where(den != 0, s / den, s)
    return p, F.at[i - 1, j - 1].set(s), jnp.minimum(minden, jnp.abs(den))

  def outer(p, Fm):
    _, F, minden = lax.fori_loop(1, N - p + 1, inner, (p, *Fm))
    return F, minden

  return lax.fori_loop(1, N, outer, (F, minden))


def funm(A, func, disp=True):
  """The matrix function ``func(A)`` (``func`` acts elementwise on eigenvalues) by the Schur
  form and Parlett's recurrence; with ``disp=False`` also an error estimate."""
  A = jnp.asarray(A)
  if A.ndim != 2 or A.shape[0] != A.shape[1]:
    raise ValueError("expected square array_like input")
  T, Z = schur(A)
  T, Z = rsf2csf(T, Z)
  F = jnp.diag(func(jnp.diag(T))).astype(T.dtype)
  F, minden = _parlett(F, T)
  F = Z @ F @ Z.conj().T
  if disp:
    return F
  ch = F.dtype.char.lower()
  tol = float(dtypes.finfo(np.float32 if ch == "f" else np.float64).eps)
  minden = jnp.where(minden == 0.0, tol, minden)
  err = jnp.where(jnp.any(jnp.isinf(F)), np.inf,
                  jnp.minimum(1, jnp.maximum(tol, tol / minden
                                             * jnp_linalg.norm(jnp.triu(T, 1), 1))))
  return F, err


# --- polar decomposition ------------------------------------------------------------------
@partial(jit, static_argnames=("side", "method"))
def _polar_2d(a, side, method, eps, max_iterations):
  m, n = a.shape
  if method == "qdwh":
    if m >= n and side == "right":
      u, p, _, _ = lax_linalg.qdwh(a, is_hermitian=False, eps=eps)
    elif m < n and side == "left":
      u, p, _, _ = lax_linalg.qdwh(a.T.conj(), is_hermitian=False, eps=eps)
      u, p = u.T.conj(), p.T.conj()
    else:
      raise NotImplementedError("method='qdwh' only supports mxn matrices where m < n where "
                                f"side='right' and m >= n side='left', got {a.shape} with "
                                f"side={side!r}")
  elif method == "svd":
    us, s, vh = lax_linalg.svd(a, full_matrices=False)
    s = s.astype(us.dtype)
    u = us @ vh
    p = (vh.T.conj() * s[None, :] @ vh) if side == "right" else (us * s[None, :] @ us.T.conj())
  else:
    raise ValueError(f"Unknown polar decomposition method {method}.")
  return u, p


@partial(jit, static_argnames=("side", "method"))
def polar(a, side="right", *, method="qdwh", eps=None, max_iterations=None):
  """The polar decomposition ``a = u p`` (``side='right'``) or ``a = p u`` (``'left'``) by
  QDWH or the SVD."""
  a = jnp.asarray(a)
  if a.ndim < 2:
    raise ValueError("The input `a` must be at least a 2-D array.")
  if side not in ["right", "left"]:
    raise ValueError("The argument `side` must be either 'right' or 'left'.")
  return vectorize(partial(_polar_2d, side=side, method=method, eps=eps,
                           max_iterations=max_iterations), (2,))(a)


# --- Hessenberg form ----------------------------------------------------------------------
@partial(jit, static_argnames=("calc_q", "check_finite", "overwrite_a"))
def hessenberg(a, *, calc_q=False, overwrite_a=False, check_finite=True):
  """The upper Hessenberg form ``h`` (and the unitary ``q`` with ``a = q h q^H``)."""
  del overwrite_a, check_finite
  n = np.shape(a)[-1]
  if n == 0:
    z = jnp.zeros_like(a)
    return (z, z) if calc_q else z
  a_out, taus = lax_linalg.hessenberg(a)
  h = jnp.triu(a_out, -1)
  if not calc_q:
    return h
  q = lax_linalg.householder_product(a_out[..., 1:, :-1], taus)
  b = a_out.shape[:-2]
  dt = a_out.dtype
  q = jnp.block([[jnp.ones(b + (1, 1), dt), jnp.zeros(b + (1, n - 1), dt)],
                 [jnp.zeros(b + (n - 1, 1), dt), q]])
  return h, q


# --- symmetric tridiagonal eigenproblem ---------------------------------------------------
def _nonzero_sized(mask, size):
  """Indices of the true entries of 1-D ``mask``, padded with 0 to ``size``."""
  k = mask.shape[0]
  order = jnp.argsort(jnp.logical_not(mask), stable=True)
  if size > k:
    order = jnp.concatenate([order, jnp.zeros(size - k, order.dtype)])
  order = order[:size]
  count = jnp.sum(mask)
  return jnp.where(jnp.arange(size) < count, order, 0)


def _sturm_count(alpha, beta_sq, pivmin, alpha0_pert, x):
  """The number of eigenvalues below each ``x`` (Sturm sequence, LAPACK's safeguards)."""
  n = alpha.shape[0]
  q = alpha[0] - x
  count = jnp.where(q < 0, 1, 0).astype(np.int32)
  q = jnp.where(alpha[0] == x, alpha0_pert, q)

  def step(i, qc):
    q, count = qc
    q = alpha[i] - beta_sq[i - 1] / q - x
    count = jnp.where(q <= pivmin, count + 1, count)
    q = jnp.where(q <= pivmin, jnp.minimum(q, -pivmin), q)
    return q, count

  return lax.fori_loop(1, n, step, (q, count))[1]


@partial(jit, static_argnames=("eigvals_only", "select", "select_range"))
def eigh_tridiagonal(d, e, *, eigvals_only=False, select="a", select_range=None, tol=None,
                     key=None):
  """Eigenvalues (by Sturm bisection) and optionally eigenvectors (by inverse iteration from
  random starts, ``key`` defaulting to ``random.key(42)``) of the symmetric/Hermitian
  tridiagonal matrix with diagonal ``d`` and off-diagonal ``e``; ``select`` 'a' or 'i'."""
  from pyjax._src.random import keys as _keys
  alpha = jnp.asarray(d)
  beta = jnp.asarray(e)
  supported = (np.float32, np.float64, np.complex64, np.complex128)
  if alpha.dtype != beta.dtype:
    raise TypeError("diagonal and off-diagonal values must have same dtype, got "
                    f"{alpha.dtype} and {beta.dtype}")
  if alpha.dtype not in supported or beta.dtype not in supported:
    raise TypeError("Only float32 and float64 inputs are supported as inputs to "
                    f"jax.scipy.linalg.eigh_tridiagonal, got {alpha.dtype} and {beta.dtype}")
  n = alpha.shape[0]
  if n <= 1:
    return jnp.real(alpha) if eigvals_only else (jnp.real(alpha),
                                                 jnp.eye(n, dtype=alpha.dtype))
  if not eigvals_only and key is None:
    key = _keys.key(42)
  if dtypes.issubdtype(alpha.dtype, np.complexfloating):
    alpha = jnp.real(alpha)
    beta_sq = jnp.real(beta * jnp.conj(beta))
    beta_abs = jnp.sqrt(beta_sq)
  else:
    beta_abs = jnp.abs(beta)
    beta_sq = jnp.square(beta)
  rowsum = jnp.concatenate([beta_abs[:1], beta_abs[:-1] + beta_abs[1:], beta_abs[-1:]], 0)
  est_max = jnp.amax(alpha + rowsum)
  est_min = jnp.amin(alpha - rowsum)
  t_norm = jnp.maximum(jnp.abs(est_min), jnp.abs(est_max))
  fi = np.finfo(alpha.dtype)
  one = np.ones([], dtype=alpha.dtype)
  safemin = np.maximum(one / fi.max, (one + fi.eps) * fi.tiny)
  pivmin = safemin * jnp.maximum(1, jnp.amax(beta_sq))
  alpha0_pert = jnp.square(fi.eps * beta_abs[0])
  abs_tol = fi.eps * t_norm
  if tol is not None:
    abs_tol = jnp.maximum(tol, abs_tol)
  max_it = fi.nmant + 1
  if select == "a":
    targets = jnp.arange(n, dtype=np.int32)
  elif select == "i":
    if select_range is None:
      raise ValueError("for select='i', select_range must be specified.")
    if select_range[0] > select_range[1]:
      raise ValueError("Got empty index range in select_range.")
    targets = jnp.arange(select_range[0], select_range[1] + 1, dtype=np.int32)
  elif select == "v":
    raise NotImplementedError("eigh_tridiagonal(..., select='v') is not implemented")
  else:
    raise ValueError("'select must have a value in {'a', 'i', 'v'}.")
  fudge = 2.1
  slack = jnp.array(n, alpha.dtype) * fudge * fi.eps * t_norm
  shape = np.shape(targets)
  lower = jnp.broadcast_to(est_min - slack - 2 * fudge * pivmin, shape)
  upper = jnp.broadcast_to(est_max + slack + fudge * pivmin, shape)
  mid = 0.5 * (upper + lower)
  pivmin = jnp.broadcast_to(pivmin, shape)
  alpha0_pert = jnp.broadcast_to(alpha0_pert, shape)

  def cond(s):
    i, lo, _, hi = s
    return jnp.logical_and(jnp.less(i, max_it), jnp.less(abs_tol, jnp.amax(hi - lo)))

  def body(s):
    i, lo, mid, hi = s
    counts = _sturm_count(alpha, beta_sq, pivmin, alpha0_pert, mid)
    lo = jnp.where(counts <= targets, mid, lo)
    hi = jnp.where(counts > targets, mid, hi)
    return i + 1, lo, 0.5 * (lo + hi), hi

  _, _, mid, _ = lax.while_loop(cond, body, (0, lower, mid, upper))
  if eigvals_only:
    return mid
  vecs = _tridiag_eigenvectors(alpha, beta, mid, key)
  return mid, vecs.T


def _tridiag_eigenvectors(alpha, beta, eigvals, key):
  from pyjax._src.random import samplers as _samplers
  n = alpha.shape[0]
  k = eigvals.shape[0]
  dl = jnp.pad(jnp.conj(beta), (1, 0))
  du = jnp.pad(beta, (0, 1))
  gap = eigvals[1:] - eigvals[:-1]
  eps = np.finfo(eigvals.dtype).eps
  t_norm = jnp.maximum(jnp.abs(eigvals[0]), jnp.abs(eigvals[-1]))
  close = gap < jnp.sqrt(eps) * t_norm
  left_close = jnp.pad(close, (1, 0), constant_values=False)
  right_close = jnp.pad(close, (0, 1), constant_values=False)
  istart = jnp.logical_and(jnp.logical_not(left_close), right_close)
  iend = jnp.logical_and(left_close, jnp.logical_not(right_close))
  max_clusters = k // 2 + 1
  starts = _nonzero_sized(istart, max_clusters)
  ends = _nonzero_sized(iend, max_clusters) + 1
  num_clusters = jnp.sum(istart)
  ar = jnp.arange(k)
  solve_dtype = np.result_type(alpha.dtype, beta.dtype)
  base = np.finfo(solve_dtype).dtype
  v = _samplers.normal(key, (k, n), dtype=base).astype(solve_dtype)
  v = v / jnp_linalg.norm(v, axis=-1, keepdims=True).astype(solve_dtype)

  def ortho(ev):
    def one(i, ev):
      start, end = starts[i], ends[i]
      c = end - start
      block = lax.dynamic_slice(jnp.pad(ev, ((0, k), (0, 0))), (start, 0), (k, n))
      mask = (ar < c).astype(ev.dtype)
      Q, _ = jnp_linalg.qr((block * mask[:, None]).T)
      QT = Q.T * mask[:, None]
      upd = lax.dynamic_update_slice(jnp.zeros((2 * k, n), ev.dtype), QT, (start, 0))[:k, :]
      inside = (ar >= start) & (ar < end)
      return jnp.where(inside[:, None], upd, ev)
    return lax.fori_loop(0, num_clusters, one, ev)

  shifted = (alpha[None, :] - eigvals[:, None]).astype(solve_dtype)
  dlb = jnp.broadcast_to(dl[None, :], (k, n)).astype(solve_dtype)
  dub = jnp.broadcast_to(du[None, :], (k, n)).astype(solve_dtype)

  def step(s):
    i, v, nrm, _ = s
    w = lax_linalg.tridiagonal_solve(dlb, shifted, dub, v[:, :, None].astype(solve_dtype),
                                     perturb_singular=True)[..., 0]
    nw = jnp_linalg.norm(w, axis=-1, keepdims=True)
    w = w / nw.astype(w.dtype)
    return i + 1, ortho(w), nw[..., 0], nrm

  def go(s):
    i, _, nrm, nrm_old = s
    return jnp.logical_and(i < 5, jnp.any(nrm >= 1.1 * nrm_old))

  return lax.while_loop(go, step, (0, v, jnp.ones(k, eigvals.dtype),
                                   jnp.zeros(k, eigvals.dtype)))[1]


# --- Sylvester equation -------------------------------------------------------------------
def _sylvester_triangular(R, S, F):
  """Solve ``R Y + Y S = F`` for upper-triangular R and lower-triangular S, element by
  element from the bottom-right."""
  R, S, F = promote_dtypes_inexact(R, S, F)
  m, n = F.shape

  def f(Y, idx):
    i, j = idx // n, idx % n
    Y2 = Y.reshape((m, n))
    rhs = F[i, j]
    row = jnp.sum(jnp.where(jnp.arange(m) > i, R[i, :] * Y2[:, j], 0.0))
    col = jnp.sum(jnp.where(jnp.arange(n) > j, Y2[i, :] * S[:, j], 0.0))
    rhs = rhs - (row + col)
    return Y.at[i * n + j].set(rhs / (R[i, i] + S[j, j])), None

  Y, _ = lax.scan(f, jnp.zeros((m * n,), F.dtype), jnp.arange(m * n - 1, -1, -1))
  return Y.reshape((m, n))


@partial(jit, static_argnames=["method"])
def _sylvester_2d(A, B, C, *, method, tol):
  m, n = C.shape[-2:]
  if method == "schur":
    R, U = schur(A, output="complex")
    S, V = schur(B.conj().T, output="complex")
    F = U.conj().T @ C.astype(R.dtype) @ V
    Y = _sylvester_triangular(R, S.conj().T, F)
    X = U @ Y @ V.conj().T
  elif method == "eigen":
    RA, UA = jnp_linalg.eig(A)
    RB, UB = jnp_linalg.eig(B)
    F = solve(UA, C.astype(RA.dtype) @ UB)
    Y = F / (RA[:, None] + RB[None, :])
    X = UA[:m, :m] @ Y[:m, :n] @ inv(UB)[:n, :n]
  else:
    raise ValueError(f'Unrecognized method {method}. The two valid methods are either "schur" '
                     'or "eigen".')
  if not dtypes.issubdtype(C.dtype, np.complexfloating):
    X = X.real
  singular = jnp.any(jnp.abs(jnp_linalg.eigvals(A)[:, None] + jnp_linalg.eigvals(B)[None, :])
                     < tol)
  return lax.cond(singular, lambda: jnp.zeros_like(X) * np.nan, lambda: X)


@partial(jit, static_argnames=["method"])
def solve_sylvester(A, B, C, *, method="schur", tol=1e-8):
  """Solve ``A X + X B = C`` (Bartels-Stewart with ``method='schur'``, or by
  eigendecomposition); NaN when ``A`` and ``-B`` share an eigenvalue (within ``tol``)."""
  A, B, C = promote_dtypes_inexact(jnp.asarray(A), jnp.asarray(B), jnp.asarray(C))
  m, n = C.shape[-2:]
  if A.shape[-2:] != (m, m) or B.shape[-2:] != (n, n):
    raise ValueError(f"Incompatible shapes for Sylvester equation:\nA: {A.shape}\n"
                     f"B: {B.shape}\nC: {C.shape}")
  return vectorize(partial(_sylvester_2d, method=method, tol=tol), (2, 2, 2))(A, B, C)
