"""jax.scipy.sparse.linalg: the Krylov solvers cg, bicgstab and gmres on pytrees, as JAX's
(same iterations), wrapped in ``lax.custom_linear_solve`` so they differentiate implicitly.
``A`` and ``M`` are matrices or functions (linear operators on pytrees like ``b``); the
returned ``info`` is None (cg, bicgstab) or 0/-1 (gmres), as in JAX."""
from __future__ import annotations

import operator
from functools import partial

import numpy as np

from pyjax._src import dtypes
from pyjax._src.lax import lax_api as lax
from pyjax._src.runtime.array import Array
from pyjax._src.scipy.linalg import solve as _solve_dense, solve_triangular
from pyjax._src.tree_util import Partial, tree_leaves, tree_map, tree_reduce, tree_structure
import pyjax.numpy as jnp

__all__ = ["bicgstab", "cg", "gmres"]

_HI = lax.Precision.HIGHEST


def _dot(a, b):
  return jnp.dot(a, b, precision=_HI)


def _vdot(a, b):
  return jnp.vdot(a, b, precision=_HI)


def _vdot_real_part(x, y):
  """``Re <x, y>`` without forming complex products of real parts twice."""
  out = _vdot(x.real, y.real)
  if jnp.iscomplexobj(x) or jnp.iscomplexobj(y):
    out = out + _vdot(x.imag, y.imag)
  return out


def _vdot_real_tree(x, y):
  return sum(tree_leaves(tree_map(_vdot_real_part, x, y)))


def _vdot_tree(x, y):
  return sum(tree_leaves(tree_map(_vdot, x, y)))


def _norm(x):
  xs = tree_leaves(x)
  return jnp.sqrt(sum(map(_vdot_real_part, xs, xs)))


def _mul(scalar, tree):
  return tree_map(partial(operator.mul, scalar), tree)


def _add(a, b):
  return tree_map(operator.add, a, b)


def _sub(a, b):
  return tree_map(operator.sub, a, b)


@Partial
def _identity(x):
  return x


def _as_matvec(f):
  if callable(f):
    return f
  if isinstance(f, (np.ndarray, Array)):
    if f.ndim != 2 or f.shape[0] != f.shape[1]:
      raise ValueError(f"linear operator must be a square matrix, but has shape: {f.shape}")
    return partial(_dot, f)
  if hasattr(f, "__matmul__"):
    if hasattr(f, "shape") and len(f.shape) != 2 or f.shape[0] != f.shape[1]:
      raise ValueError(f"linear operator must be a square matrix, but has shape: {f.shape}")
    return partial(operator.matmul, f)
  raise TypeError(f"linear operator must be either a function or ndarray: {f}")


# --- conjugate gradients and BiCGSTAB -----------------------------------------------------
def _cg_solve(A, b, x0=None, *, maxiter, tol=1e-5, atol=0.0, M=_identity):
  bs = _vdot_real_tree(b, b)
  atol2 = jnp.maximum(jnp.square(tol) * bs, jnp.square(atol))

  def cond(v):
    _, r, gamma, _, k = v
    rs = gamma.real if M is _identity else _vdot_real_tree(r, r)
    return (rs > atol2) & (k < maxiter)

  def body(v):
    x, r, gamma, p, k = v
    Ap = A(p)
    alpha = gamma / _vdot_real_tree(p, Ap).astype(dtype)
    x = _add(x, _mul(alpha, p))
    r = _sub(r, _mul(alpha, Ap))
    z = M(r)
    gamma_new = _vdot_real_tree(r, z).astype(dtype)
    p = _add(z, _mul(gamma_new / gamma, p))
    return x, r, gamma_new, p, k + 1

  r0 = _sub(b, A(x0))
  p0 = z0 = M(r0)
  dtype = dtypes.result_type(*tree_leaves(p0))
  gamma0 = _vdot_real_tree(r0, z0).astype(dtype)
  return lax.while_loop(cond, body, (x0, r0, gamma0, p0, 0))[0]


def _bicgstab_solve(A, b, x0=None, *, maxiter, tol=1e-5, atol=0.0, M=_identity):
  bs = _vdot_real_tree(b, b)
  atol2 = jnp.maximum(jnp.square(tol) * bs, jnp.square(atol))

  def cond(v):
    x, r, *_, k = v
    return (_vdot_real_tree(r, r) > atol2) & (k < maxiter) & (k >= 0)

  def body(v):
    x, r, rhat, alpha, omega, rho, p, q, k = v
    rho_ = _vdot_tree(rhat, r)
    beta = rho_ / rho * alpha / omega
    p_ = _add(r, _mul(beta, _sub(p, _mul(omega, q))))
    phat = M(p_)
    q_ = A(phat)
    alpha_ = rho_ / _vdot_tree(rhat, q_)
    s = _sub(r, _mul(alpha_, q_))
    early = _vdot_real_tree(s, s) < atol2
    shat = M(s)
    t = A(shat)
    omega_ = _vdot_tree(t, s) / _vdot_tree(t, t)
    x_ = tree_map(partial(jnp.where, early), _add(x, _mul(alpha_, phat)),
                  _add(x, _add(_mul(alpha_, phat), _mul(omega_, shat))))
    r_ = tree_map(partial(jnp.where, early), s, _sub(s, _mul(omega_, t)))
    k_ = jnp.where((omega_ == 0) | (alpha_ == 0), -11, k + 1)
    k_ = jnp.where(rho_ == 0, -10, k_)
    return x_, r_, rhat, alpha_, omega_, rho_, p_, q_, k_

  r0 = _sub(b, A(x0))
  dt, weak = dtypes.lattice_result_type(*[(np.dtype(v.dtype), getattr(v, "weak_type", False))
                                          for v in tree_leaves(b)])
  one = lax._convert_element_type(1, dt, weak)
  return lax.while_loop(cond, body, (x0, r0, r0, one, one, one, r0, r0, 0))[0]


def _shapes(tree):
  return list(map(np.shape, tree_leaves(tree)))


def _isolve(solve_fn, A, b, x0=None, *, tol=1e-5, atol=0.0, maxiter=None, M=None,
            check_symmetric=False):
  if x0 is None:
    x0 = tree_map(jnp.zeros_like, b)
  b = tree_map(jnp.asarray, b)
  x0 = tree_map(jnp.asarray, x0)
  if maxiter is None:
    maxiter = 10 * sum(bi.size for bi in tree_leaves(b))
  M = _identity if M is None else _as_matvec(M)
  A = _as_matvec(A)
  if tree_structure(x0) != tree_structure(b):
    raise ValueError("x0 and b must have matching tree structure: "
                     f"{tree_structure(x0)} vs {tree_structure(b)}")
  if _shapes(x0) != _shapes(b):
    raise ValueError(f"arrays in x0 and b must have matching shapes: {_shapes(x0)} vs "
                     f"{_shapes(b)}")
  solve = partial(solve_fn, x0=x0, tol=tol, atol=atol, maxiter=maxiter, M=M)
  symmetric = (all(not dtypes.issubdtype(x.dtype, np.complexfloating) for x in tree_leaves(b))
               if check_symmetric else False)
  x = lax.custom_linear_solve(A, b, solve=solve, transpose_solve=solve, symmetric=symmetric)
  return x, None


def cg(A, b, x0=None, *, tol=1e-5, atol=0.0, maxiter=None, M=None):
  """Conjugate gradients for Hermitian positive-definite ``A``: ``(x, None)``."""
  return _isolve(_cg_solve, A=A, b=b, x0=x0, tol=tol, atol=atol, maxiter=maxiter, M=M,
                 check_symmetric=True)


def bicgstab(A, b, x0=None, *, tol=1e-5, atol=0.0, maxiter=None, M=None):
  """Stabilized biconjugate gradients for general ``A``: ``(x, None)``."""
  return _isolve(_bicgstab_solve, A=A, b=b, x0=x0, tol=tol, atol=atol, maxiter=maxiter, M=M)


# --- GMRES --------------------------------------------------------------------------------
def _safe_normalize(x, thresh=None):
  norm = _norm(x)
  dt, weak = dtypes.lattice_result_type(*[(np.dtype(v.dtype), getattr(v, "weak_type", False))
                                          for v in tree_leaves(x)])
  if thresh is None:
    thresh = jnp.asarray(float(dtypes.finfo(norm.dtype).eps), norm.dtype)
  thresh = jnp.asarray(thresh).astype(dt).real
  use = norm > thresh
  norm_c = lax._convert_element_type(norm, dt, weak)
  out = tree_map(lambda y: jnp.where(use, y / norm_c, 0.0), x)
  return out, jnp.where(use, norm, 0.0)


def _project_on_columns(Q, v):
  proj = tree_map(lambda X, y: jnp.einsum("...n,...->n", X.conj(), y, precision=_HI), Q, v)
  return tree_reduce(operator.add, proj)


def _gram_schmidt(Q, x, xnorm, max_iterations=2):
  """Iterated classical Gram-Schmidt of ``x`` against the columns of ``Q`` (re-orthogonal-
  izing while the norm drops by more than 1/sqrt(2))."""
  Q0 = tree_leaves(Q)[0]
  r = jnp.zeros(Q0.shape[-1], dtype=Q0.dtype)
  q = x
  xnorm_scaled = xnorm / jnp.sqrt(2.0)

  def body(c):
    k, q, r, qs = c
    h = _project_on_columns(Q, q)
    q = _sub(q, tree_map(lambda X: _dot(X, h), Q))
    r = _add(r, h)

    def inner_cond(ic):
      k, not_done, _, _ = ic
      return jnp.logical_and(not_done, k < max_iterations - 1)

    def inner(ic):
      k, _, q, qs = ic
      _, qn = _safe_normalize(q)
      return k, False, q, qn / jnp.sqrt(2.0)

    _, _, q, qs = lax.while_loop(inner_cond, inner, (k, True, q, qs))
    return k + 1, q, r, qs

  def cond(c):
    k, _, r, qs = c
    _, rn = _safe_normalize(r)
    return jnp.logical_and(k < max_iterations - 1, rn < qs)

  c = body((0, q, r, xnorm_scaled))
  _, q, r, _ = lax.while_loop(cond, body, c)
  return q, r


def _arnoldi_step(k, A, M, V, H):
  dt, _ = dtypes.lattice_result_type(*[(np.dtype(v.dtype), getattr(v, "weak_type", False))
                                       for v in tree_leaves(V)])
  eps = float(dtypes.finfo(dt).eps)
  v = M(A(tree_map(lambda X: X[..., k], V)))
  _, n0 = _safe_normalize(v)
  v, h = _gram_schmidt(V, v, n0, max_iterations=2)
  unit, n1 = _safe_normalize(v, thresh=eps * n0)
  V = tree_map(lambda X, y: X.at[..., k + 1].set(y), V, unit)
  h = h.at[k + 1].set(n1.astype(dt))
  return V, H.at[k, :].set(h), n1 == 0.0


def _rotate(H, i, cs, sn):
  x1, y1 = H[i], H[i + 1]
  H = H.at[i].set(cs.conj() * x1 - sn.conj() * y1)
  return H.at[i + 1].set(sn * x1 + cs * y1)


def _givens(a, b):
  b_zero = abs(b) == 0
  a_lt_b = abs(a) < abs(b)
  t = -jnp.where(a_lt_b, a, b) / jnp.where(a_lt_b, b, a)
  r = lax.rsqrt(1 + abs(t) ** 2).astype(t.dtype)
  cs = jnp.where(b_zero, 1, jnp.where(a_lt_b, r * t, r))
  sn = jnp.where(b_zero, 0, jnp.where(a_lt_b, r, r * t))
  return cs, sn


def _apply_givens(row, givens, k):
  row = lax.fori_loop(0, k, lambda i, h: _rotate(h, i, *givens[i, :]), row)
  g = _givens(row[k], row[k + 1])
  return _rotate(row, k, *g), givens.at[k, :].set(g)


def _gmres_incremental(A, b, x0, unit_residual, residual_norm, ptol, restart, M):
  V = tree_map(lambda x: jnp.pad(x[..., None], ((0, 0),) * x.ndim + ((0, restart),)),
               unit_residual)
  dt = dtypes.result_type(*tree_leaves(b))
  R = jnp.eye(restart, restart + 1, dtype=dt)
  givens = jnp.zeros((restart, 2), dtype=dt)
  beta = jnp.zeros(restart + 1, dtype=dt).at[0].set(residual_norm.astype(dt))

  def cond(c):
    k, err, *_ = c
    return jnp.logical_and(k < restart, err > ptol)

  def step(c):
    k, _, V, R, beta, givens = c
    V, H, _ = _arnoldi_step(k, A, M, V, R)
    row, givens = _apply_givens(H[k, :], givens, k)
    R = R.at[k, :].set(row)
    beta = _rotate(beta, k, *givens[k, :])
    return k + 1, abs(beta[k + 1]), V, R, beta, givens

  _, _, V, R, beta, _ = lax.while_loop(cond, step, (0, residual_norm, V, R, beta, givens))
  y = solve_triangular(R[:, :-1].T, beta[:-1])
  x = _add(x0, tree_map(lambda X: _dot(X[..., :-1], y), V))
  unit, rn = _safe_normalize(M(_sub(b, A(x))))
  return x, unit, rn


def _gmres_batched(A, b, x0, unit_residual, residual_norm, ptol, restart, M):
  del ptol
  V = tree_map(lambda x: jnp.pad(x[..., None], ((0, 0),) * x.ndim + ((0, restart),)),
               unit_residual)
  dt, weak = dtypes.lattice_result_type(*[(np.dtype(v.dtype), getattr(v, "weak_type", False))
                                          for v in tree_leaves(b)])
  H = lax._convert_element_type(jnp.eye(restart, restart + 1, dtype=dt), dt, weak)

  def cond(c):
    _, _, breakdown, k = c
    return jnp.logical_and(k < restart, jnp.logical_not(breakdown))

  def step(c):
    V, H, _, k = c
    V, H, bd = _arnoldi_step(k, A, M, V, H)
    return V, H, bd, k + 1

  V, H, _, _ = lax.while_loop(cond, step, (V, H, False, 0))
  beta = jnp.zeros((restart + 1,), H.dtype).at[0].set(residual_norm.astype(dt))
  Ht = H.T
  y = _solve_dense(_dot(Ht.T.conj(), Ht), _dot(Ht.T.conj(), beta), assume_a="pos")
  x = _add(x0, tree_map(lambda X: _dot(X[..., :-1], y), V))
  unit, rn = _safe_normalize(M(_sub(b, A(x))))
  return x, unit, rn


def _gmres_solve(A, b, x0, atol, ptol, restart, maxiter, M, inner):
  unit, rn = _safe_normalize(M(_sub(b, A(x0))))

  def cond(v):
    _, k, _, rn = v
    return jnp.logical_and(k < maxiter, rn > atol)

  def body(v):
    x, k, unit, rn = v
    x, unit, rn = inner(A, b, x, unit, rn, ptol, restart, M)
    return x, k + 1, unit, rn

  return lax.while_loop(cond, body, (x0, 0, unit, rn))[0]


def gmres(A, b, x0=None, *, tol=1e-5, atol=0.0, restart=20, maxiter=None, M=None,
          solve_method="batched"):
  """Restarted GMRES for general ``A`` (``solve_method`` 'batched': least squares over each
  Krylov basis; 'incremental': Givens-rotation QR with early exit): ``(x, info)`` with
  ``info`` -1 when the result is NaN, else 0."""
  if x0 is None:
    x0 = tree_map(jnp.zeros_like, b)
  M = _identity if M is None else _as_matvec(M)
  A = _as_matvec(A)
  b = tree_map(jnp.asarray, b)
  x0 = tree_map(jnp.asarray, x0)
  size = sum(bi.size for bi in tree_leaves(b))
  if maxiter is None:
    maxiter = 10 * size
  restart = min(restart, size)
  if tree_structure(x0) != tree_structure(b):
    raise ValueError("x0 and b must have matching tree structure: "
                     f"{tree_structure(x0)} vs {tree_structure(b)}")
  b_norm = _norm(b)
  atol = jnp.maximum(tol * b_norm, atol)
  ptol = _norm(M(b)) * jnp.minimum(1.0, atol / b_norm)
  if solve_method == "incremental":
    inner = _gmres_incremental
  elif solve_method == "batched":
    inner = _gmres_batched
  else:
    raise ValueError(f"invalid solve_method {solve_method}, must be either 'incremental' or "
                     "'batched'")

  def _solve(A, b):
    return _gmres_solve(A, b, x0, atol, ptol, restart, maxiter, M, inner)

  x = lax.custom_linear_solve(A, b, solve=_solve, transpose_solve=_solve)
  return x, jnp.where(jnp.isnan(_norm(x)), -1, 0)
