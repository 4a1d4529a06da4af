"""Eager NumPy/SciPy (LAPACK) implementations of the lax.linalg primitives.

Every implementation takes stacks of matrices ``[..., m, n]``: NumPy's batched routines
are used where they exist, otherwise the leading dimensions are looped over.  Failures
follow XLA's CPU behaviour instead of raising: a Cholesky factorization or eigen/singular
value decomposition that does not succeed fills that matrix's outputs with NaN, and a
singular triangular or tridiagonal solve produces inf/NaN.  float16/bfloat16 operands are
rejected as XLA's CPU backend does (``NotImplementedError``).
"""
from __future__ import annotations

import math

import numpy as np
import scipy.linalg
from scipy.linalg import blas as _blas
from scipy.linalg import lapack as _lapack

from pyjax._src.backends.cpu.eager.registry import register

_supported = {np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.complex64),
              np.dtype(np.complex128)}


def _check(x):
  if x.dtype not in _supported:
    raise NotImplementedError(f"Unsupported dtype {x.dtype.name}.")


def _batched(x, core_ndim=2):
  """(x reshaped to [B, ...core], batch shape)."""
  batch = x.shape[:x.ndim - core_ndim]
  return x.reshape((math.prod(batch),) + x.shape[x.ndim - core_ndim:]), batch


def _nan_like(shape, dtype):
  return np.full(shape, np.nan, dtype)


# --- cholesky --------------------------------------------------------------------------------
@register("cholesky")
def cholesky(x):
  _check(x)
  if x.size == 0:
    return np.zeros(x.shape, x.dtype)
  try:
    return np.linalg.cholesky(x)
  except np.linalg.LinAlgError:
    pass
  xb, batch = _batched(x)
  out = np.empty_like(xb)
  for i in range(xb.shape[0]):
    try:
      out[i] = np.linalg.cholesky(xb[i])
    except np.linalg.LinAlgError:
      out[i] = np.nan
  return out.reshape(x.shape)


@register("cholesky_update")
def cholesky_update(r, w):
  _check(r)
  r = np.array(r, dtype=np.result_type(r.dtype, np.float32), copy=True)
  w = np.array(w, dtype=r.dtype, copy=True)
  n = r.shape[0]
  for k in range(n):
    rkk = r[k, k]
    rad = np.sqrt(np.abs(rkk) ** 2 + np.abs(w[k]) ** 2)
    c = rad / rkk
    s = w[k] / rkk
    r[k, k] = rad
    if k + 1 < n:
      r[k, k + 1:] = (r[k, k + 1:] + np.conj(s) * w[k + 1:]) / c
      w[k + 1:] = c * w[k + 1:] - s * r[k, k + 1:]
  return r


# --- eigh ------------------------------------------------------------------------------------
@register("eigh")
def eigh(x, *, lower, sort_eigenvalues, subset_by_index, algorithm=None):
  _check(x)
  n = x.shape[-1]
  rd = np.finfo(x.dtype).dtype
  if x.size == 0:
    k = n if subset_by_index is None else subset_by_index[1] - subset_by_index[0]
    return [np.zeros(x.shape[:-1] + (k,), x.dtype), np.zeros(x.shape[:-2] + (k,), rd)]
  uplo = "L" if lower else "U"
  try:
    w, v = np.linalg.eigh(x, UPLO=uplo)
  except np.linalg.LinAlgError:
    xb, batch = _batched(x)
    w = np.empty(xb.shape[:-1], rd)
    v = np.empty_like(xb)
    for i in range(xb.shape[0]):
      try:
        w[i], v[i] = np.linalg.eigh(xb[i], UPLO=uplo)
      except np.linalg.LinAlgError:
        w[i] = np.nan
        v[i] = np.nan
    w = w.reshape(x.shape[:-1])
    v = v.reshape(x.shape)
  bad = ~np.isfinite(x).all(axis=(-2, -1))
  if bad.any():  # LAPACK may return garbage rather than fail on NaN/inf input
    w[bad] = np.nan
    v[bad] = np.nan
  if subset_by_index is not None:
    lo, hi = subset_by_index
    w = w[..., lo:hi]
    v = v[..., lo:hi]
  return [v, w]


# --- eig -------------------------------------------------------------------------------------
def _normalize_geev(v):
  """Unit-norm columns (as LAPACK's geev returns them)."""
  nrm = np.linalg.norm(v, axis=-2, keepdims=True)
  nrm = np.where(nrm == 0, 1, nrm)
  return v / nrm


@register("eig")
def eig(x, *, compute_left_eigenvectors, compute_right_eigenvectors,
        enable_eigvec_derivs=False, implementation=None):
  _check(x)
  cd = np.result_type(x.dtype, np.complex64)
  n = x.shape[-1]
  xb, batch = _batched(x)
  B = xb.shape[0]
  w = np.empty((B, n), cd)
  vl = np.empty((B, n, n), cd)
  vr = np.empty((B, n, n), cd)
  for i in range(B):
    a = xb[i]
    if not np.isfinite(a).all():
      w[i] = vl[i] = vr[i] = np.nan
      continue
    try:
      if compute_left_eigenvectors:
        wi, vli, vri = scipy.linalg.eig(a, left=True, right=True, check_finite=False)
        vl[i] = _normalize_geev(vli)
      else:
        wi, vri = np.linalg.eig(a)
      w[i] = wi
      vr[i] = vri
    except (np.linalg.LinAlgError, ValueError):
      w[i] = vl[i] = vr[i] = np.nan
  outs = [w.reshape(batch + (n,))]
  if compute_left_eigenvectors:
    outs.append(vl.reshape(batch + (n, n)))
  if compute_right_eigenvectors:
    outs.append(vr.reshape(batch + (n, n)))
  return outs


# --- svd -------------------------------------------------------------------------------------
@register("svd")
def svd(x, *, full_matrices, compute_uv, subset_by_index=None, algorithm=None):
  _check(x)
  m, n = x.shape[-2:]
  batch = x.shape[:-2]
  k = min(m, n)
  rd = np.finfo(x.dtype).dtype
  if x.size == 0:
    s = np.zeros(batch + (k,), rd)
    if not compute_uv:
      return [s]
    ku, kv = (m, n) if full_matrices else (k, k)
    u = np.broadcast_to(np.eye(m, ku, dtype=x.dtype), batch + (m, ku)).copy()
    vt = np.broadcast_to(np.eye(kv, n, dtype=x.dtype), batch + (kv, n)).copy()
    return [s, u, vt]

  def run(a):
    if compute_uv:
      u, s, vt = np.linalg.svd(a, full_matrices=full_matrices, compute_uv=True)
      return s, u, vt
    return (np.linalg.svd(a, compute_uv=False),)
  try:
    outs = list(run(x))
  except np.linalg.LinAlgError:
    xb, _ = _batched(x)
    per = []
    for i in range(xb.shape[0]):
      try:
        per.append(run(xb[i]))
      except np.linalg.LinAlgError:
        ku = m if full_matrices else k
        kv = n if full_matrices else k
        shapes = [(k,), (m, ku), (kv, n)][:3 if compute_uv else 1]
        per.append(tuple(_nan_like(s, d) for s, d in zip(shapes, [rd, x.dtype, x.dtype])))
    outs = [np.stack([p[j] for p in per]).reshape(batch + per[0][j].shape)
            for j in range(len(per[0]))]
  bad = ~np.isfinite(x).all(axis=(-2, -1))
  if bad.any():
    for o in outs:
      o[bad] = np.nan
  if subset_by_index is not None:
    lo, hi = subset_by_index
    outs[0] = outs[0][..., lo:hi]
    if compute_uv:
      outs[1] = outs[1][..., :, lo:hi]
      outs[2] = outs[2][..., lo:hi, :]
  return outs


# --- qr --------------------------------------------------------------------------------------
@register("qr")
def qr(x, *, pivoting, full_matrices, use_magma=None):
  _check(x)
  m, n = x.shape[-2:]
  batch = x.shape[:-2]
  k = m if full_matrices else min(m, n)
  if x.size == 0:
    q = np.broadcast_to(np.eye(m, k, dtype=x.dtype), batch + (m, k)).copy()
    r = np.zeros(batch + (k, n), x.dtype)
    if pivoting:
      return [q, r, np.broadcast_to(np.arange(n, dtype=np.int32), batch + (n,)).copy()]
    return [q, r]
  mode = "complete" if full_matrices else "reduced"
  if not pivoting:
    q, r = np.linalg.qr(x, mode=mode)
    return [q, r]
  xb, _ = _batched(x)
  qs, rs, ps = [], [], []
  for i in range(xb.shape[0]):
    q, r, p = scipy.linalg.qr(xb[i], pivoting=True, mode="full" if full_matrices else "economic",
                              check_finite=False)
    qs.append(q)
    rs.append(r)
    ps.append(p.astype(np.int32))
  return [np.stack(qs).reshape(batch + (m, k)), np.stack(rs).reshape(batch + (k, n)),
          np.stack(ps).reshape(batch + (n,))]


# --- lu --------------------------------------------------------------------------------------
def _pivots_to_permutation(pivots, size):
  """pivots [B, k] (sequential row swaps) -> permutation [B, size]."""
  B, k = pivots.shape
  perm = np.broadcast_to(np.arange(size, dtype=np.int32), (B, size)).copy()
  rows = np.arange(B)
  for i in range(k):
    j = pivots[:, i]
    ok = (j >= 0) & (j < size)
    jj = np.where(ok, j, i)
    a = perm[rows, i].copy()
    perm[rows, i] = perm[rows, jj]
    perm[rows, jj] = a
  return perm


@register("lu")
def lu(x):
  _check(x)
  m, n = x.shape[-2:]
  batch = x.shape[:-2]
  k = min(m, n)
  xb, _ = _batched(x)
  B = xb.shape[0]
  out = np.array(xb, copy=True)
  piv = np.empty((B, k), np.int32)
  if k == 0 or B == 0:
    piv = np.zeros((B, k), np.int32)
  else:
    getrf, = _lapack.get_lapack_funcs(("getrf",), (xb[0],))
    for i in range(B):
      lu_i, p_i, _info = getrf(xb[i])
      out[i] = lu_i
      piv[i] = p_i
  perm = _pivots_to_permutation(piv, m)
  return [out.reshape(x.shape), piv.reshape(batch + (k,)), perm.reshape(batch + (m,))]


@register("lu_pivots_to_permutation")
def lu_pivots_to_permutation(pivots, *, permutation_size):
  pb, batch = _batched(np.asarray(pivots), 1)
  return _pivots_to_permutation(pb.astype(np.int64), permutation_size).reshape(
      batch + (permutation_size,)).astype(np.int32)


# --- triangular_solve ------------------------------------------------------------------------
@register("triangular_solve")
def triangular_solve(a, b, *, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
  _check(a)
  if b.size == 0 or a.size == 0:
    return np.zeros(b.shape, b.dtype)
  ab, _ = _batched(a)
  bb, _ = _batched(b)
  trsm, = _blas.get_blas_funcs(("trsm",), (ab[0], bb[0]))
  if transpose_a:
    trans = 2 if conjugate_a else 1
  else:
    trans = 0
  out = np.empty_like(bb)
  for i in range(ab.shape[0]):
    ai = ab[i]
    if conjugate_a and not transpose_a:
      ai = np.conj(ai)
    out[i] = trsm(1.0, ai, bb[i], side=0 if left_side else 1, lower=int(lower),
                  trans_a=trans, diag=int(unit_diagonal))
  return out.reshape(b.shape)


# --- schur / hessenberg / tridiagonal --------------------------------------------------------
@register("schur")
def schur(x, *, compute_schur_vectors, sort_eig_vals, select_callable):
  _check(x)
  xb, batch = _batched(x)
  ts, zs = [], []
  output = "complex" if np.iscomplexobj(x) else "real"
  for i in range(xb.shape[0]):
    if sort_eig_vals:
      t, z, _ = scipy.linalg.schur(xb[i], output=output, sort=select_callable,
                                   check_finite=False)
    else:
      t, z = scipy.linalg.schur(xb[i], output=output, check_finite=False)
    ts.append(t)
    zs.append(z)
  if not ts:
    ts = zs = [np.zeros(x.shape[-2:], x.dtype)][:0]
    T = np.zeros(x.shape, x.dtype)
    return [T, T.copy()] if compute_schur_vectors else [T]
  T = np.stack(ts).reshape(x.shape).astype(x.dtype)
  Z = np.stack(zs).reshape(x.shape).astype(x.dtype)
  return [T, Z] if compute_schur_vectors else [T]


@register("hessenberg")
def hessenberg(a):
  _check(a)
  n = a.shape[-1]
  ab, batch = _batched(a)
  out = np.array(ab, copy=True)
  taus = np.zeros((ab.shape[0], max(n - 1, 0)), a.dtype)
  if n > 0:
    gehrd, = _lapack.get_lapack_funcs(("gehrd",), (ab[0] if len(ab) else a,))
    for i in range(ab.shape[0]):
      ht, tau, _ = gehrd(ab[i])
      out[i] = ht
      taus[i] = tau[:n - 1]
  return [out.reshape(a.shape), taus.reshape(batch + (max(n - 1, 0),))]


@register("tridiagonal")
def tridiagonal(a, *, lower):
  _check(a)
  n = a.shape[-1]
  rd = np.finfo(a.dtype).dtype
  ab, batch = _batched(a)
  B = ab.shape[0]
  out = np.array(ab, copy=True)
  d = np.zeros((B, n), rd)
  e = np.zeros((B, max(n - 1, 0)), rd)
  taus = np.zeros((B, max(n - 1, 0)), a.dtype)
  if n > 0 and B > 0:
    name = "hetrd" if np.iscomplexobj(a) else "sytrd"
    fn, = _lapack.get_lapack_funcs((name,), (ab[0],))
    for i in range(B):
      c, di, ei, tau, _ = fn(ab[i], lower=int(lower))
      out[i], d[i], e[i], taus[i] = c, di, ei, tau
  m1 = max(n - 1, 0)
  return [out.reshape(a.shape), d.reshape(batch + (n,)), e.reshape(batch + (m1,)),
          taus.reshape(batch + (m1,))]


# --- Householder products --------------------------------------------------------------------
@register("householder_product")
def householder_product(a, taus):
  _check(a)
  ab, batch = _batched(a)
  tb, _ = _batched(taus, 1)
  out = np.array(ab, copy=True)
  if a.size:
    name = "ungqr" if np.iscomplexobj(a) else "orgqr"
    fn, = _lapack.get_lapack_funcs((name,), (ab[0],))
    k = tb.shape[-1]
    n = a.shape[-1]
    for i in range(ab.shape[0]):
      tau = np.zeros(n, a.dtype)
      tau[:k] = tb[i]
      # orgqr uses len(tau) reflectors; the rest (tau = 0) are identities
      q, _, _ = fn(ab[i], tau)
      out[i] = q
  return out.reshape(a.shape)


@register("ormqr")
def ormqr(a, taus, c, *, left, transpose):
  _check(a)
  ab, batch = _batched(a)
  tb, _ = _batched(taus, 1)
  cb, _ = _batched(c)
  out = np.array(cb, copy=True)
  if c.size and a.size:
    complex_ = np.iscomplexobj(a)
    fn, = _lapack.get_lapack_funcs(("unmqr" if complex_ else "ormqr",), (ab[0],))
    trans = ("C" if complex_ else "T") if transpose else "N"
    side = "L" if left else "R"
    for i in range(ab.shape[0]):
      ai = ab[i]
      k = tb.shape[-1]
      lwork = max(1, 64 * max(cb[i].shape))
      cq, _, _ = fn(side, trans, ai[:, :k] if ai.shape[1] > k else ai, tb[i], cb[i], lwork)
      out[i] = cq
  return out.reshape(c.shape)


# --- tridiagonal_solve -----------------------------------------------------------------------
@register("tridiagonal_solve")
def tridiagonal_solve(dl, d, du, b, *, perturb_singular=False):
  _check(b)
  m = d.shape[-1]
  db, batch = _batched(d, 1)
  dlb, _ = _batched(dl, 1)
  dub, _ = _batched(du, 1)
  bb, _ = _batched(b)
  out = np.empty_like(bb)
  if b.size == 0:
    return np.zeros(b.shape, b.dtype)
  gtsv, = _lapack.get_lapack_funcs(("gtsv",), (bb[0],))
  for i in range(db.shape[0]):
    if m == 1:
      out[i] = bb[i] / db[i][0]
      continue
    *_, x, info = gtsv(dlb[i][1:], db[i], dub[i][:-1], bb[i])
    if info > 0:
      x = np.full_like(bb[i], np.nan)
    out[i] = x
  return out.reshape(b.shape)


# --- symmetric_product -----------------------------------------------------------------------
@register("symmetric_product")
def symmetric_product(a, c, *, alpha, beta, symmetrize_output=False):
  _check(a)
  aat = np.matmul(a, np.swapaxes(a, -1, -2))
  out = (alpha * aat + beta * c).astype(c.dtype)
  if symmetrize_output:
    low = np.tril(out)
    out = low + np.swapaxes(np.tril(out, -1), -1, -2)
  return out


# --- geqrf -----------------------------------------------------------------------------------
@register("geqrf")
def geqrf(x):
  _check(x)
  m, n = x.shape[-2:]
  k = min(m, n)
  xb, batch = _batched(x)
  out = np.array(xb, copy=True)
  taus = np.zeros((xb.shape[0], k), x.dtype)
  if x.size:
    fn, = _lapack.get_lapack_funcs(("geqrf",), (xb[0],))
    for i in range(xb.shape[0]):
      a, tau, _, _ = fn(xb[i])
      out[i] = a
      taus[i] = tau[:k]
  return [out.reshape(x.shape), taus.reshape(batch + (k,))]
