"""jax.scipy.optimize: ``minimize`` with BFGS (and JAX's experimental L-BFGS), using a
strong-Wolfe line search (Nocedal & Wright, Algorithms 3.5 and 3.6) -- JAX's algorithm, so
the iterates agree with JAX's."""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from pyjax._src import dtypes
from pyjax._src.api_ad import value_and_grad
from pyjax._src.lax import lax_api as lax
from pyjax._src.numpy import linalg as jnp_linalg
from pyjax._src.numpy.util import promote_dtypes_inexact
import pyjax.numpy as jnp

__all__ = ["OptimizeResults", "minimize"]


def _dot(a, b):
  return jnp.dot(a, b, precision=lax.Precision.HIGHEST)


class OptimizeResults(NamedTuple):
  """The result of ``minimize``: solution ``x``, ``success``, ``status``, objective ``fun``,
  gradient ``jac``, inverse-Hessian estimate ``hess_inv``, and the counts ``nfev``,
  ``njev`` and ``nit``."""
  x: Any
  success: Any
  status: Any
  fun: Any
  jac: Any
  hess_inv: Any
  nfev: Any
  njev: Any
  nit: Any


def minimize(fun, x0, args=(), *, method, tol=None, options=None):
  """Minimize ``fun(x, *args)`` from the 1-D ``x0``; ``method`` 'BFGS' (or JAX's
  'l-bfgs-experimental-do-not-rely-on-this').  ``options`` go to the method (``maxiter``,
  ``norm``, ``gtol``, ``line_search_maxiter``).  ``tol`` is ignored, as in JAX."""
  options = {} if options is None else options
  if not isinstance(args, tuple):
    raise TypeError(f"args argument to jax.scipy.optimize.minimize must be a tuple, got {args}")

  def f(x):
    return fun(x, *args)

  if method.lower() == "bfgs":
    r = minimize_bfgs(f, x0, **options)
    return OptimizeResults(x=r.x_k, success=r.converged & jnp.logical_not(r.failed),
                           status=r.status, fun=r.f_k, jac=r.g_k, hess_inv=r.H_k,
                           nfev=r.nfev, njev=r.ngev, nit=r.k)
  if method.lower() == "l-bfgs-experimental-do-not-rely-on-this":
    r = _minimize_lbfgs(f, x0, **options)
    return OptimizeResults(x=r.x_k, success=r.converged & jnp.logical_not(r.failed),
                           status=r.status, fun=r.f_k, jac=r.g_k, hess_inv=None,
                           nfev=r.nfev, njev=r.ngev, nit=r.k)
  raise ValueError(f"Method {method} not recognized")


# --- line search --------------------------------------------------------------------------
def _cubicmin(a, fa, fpa, b, fb, c, fc):
  """The minimizer of the cubic through (a, fa), (b, fb), (c, fc) with slope fpa at a."""
  dt = dtypes.result_type(a, fa, fpa, b, fb, c, fc)
  C = fpa
  db = b - a
  dc = c - a
  denom = (db * dc) ** 2 * (db - dc)
  d1 = jnp.array([[dc ** 2, -db ** 2], [-dc ** 3, db ** 3]], dtype=dt)
  d2 = jnp.array([fb - fa - C * db, fc - fa - C * dc], dtype=dt)
  A, B = _dot(d1, d2) / denom
  return a + (-B + jnp.sqrt(B * B - 3.0 * A * C)) / (3.0 * A)


def _quadmin(a, fa, fpa, b, fb):
  """The minimizer of the quadratic through (a, fa), (b, fb) with slope fpa at a."""
  db = b - a
  B = (fb - fa - fpa * db) / db ** 2
  return a - fpa / (2.0 * B)


def _replace_where(cond, state, **new):
  return state._replace(**{k: jnp.where(cond, v, getattr(state, k)) for k, v in new.items()})


class _ZoomState(NamedTuple):
  done: Any
  failed: Any
  j: Any
  a_lo: Any
  phi_lo: Any
  dphi_lo: Any
  a_hi: Any
  phi_hi: Any
  dphi_hi: Any
  a_rec: Any
  phi_rec: Any
  a_star: Any
  phi_star: Any
  dphi_star: Any
  g_star: Any
  nfev: Any
  ngev: Any


def _zoom(phi_dphi, wolfe_one, wolfe_two, a_lo, phi_lo, dphi_lo, a_hi, phi_hi, dphi_hi, g_0,
          pass_through):
  """Algorithm 3.6: shrink [a_lo, a_hi] by cubic/quadratic interpolation or bisection until
  the strong Wolfe conditions hold (skipped entirely where ``pass_through``)."""
  state = _ZoomState(done=False, failed=False, j=0, a_lo=a_lo, phi_lo=phi_lo,
                     dphi_lo=dphi_lo, a_hi=a_hi, phi_hi=phi_hi, dphi_hi=dphi_hi,
                     a_rec=(a_lo + a_hi) / 2., phi_rec=(phi_lo + phi_hi) / 2., a_star=1.,
                     phi_star=phi_lo, dphi_star=dphi_lo, g_star=g_0, nfev=0, ngev=0)
  delta1, delta2 = 0.2, 0.1

  def body(s):
    dalpha = s.a_hi - s.a_lo
    lo = jnp.minimum(s.a_hi, s.a_lo)
    hi = jnp.maximum(s.a_hi, s.a_lo)
    cchk = delta1 * dalpha
    qchk = delta2 * dalpha
    threshold = jnp.where(dtypes.finfo(dalpha.dtype).bits < 64, 1e-5, 1e-10)
    s = s._replace(failed=s.failed | (dalpha <= threshold))
    a_cub = _cubicmin(s.a_lo, s.phi_lo, s.dphi_lo, s.a_hi, s.phi_hi, s.a_rec, s.phi_rec)
    use_cub = (s.j > 0) & (a_cub > lo + cchk) & (a_cub < hi - cchk)
    a_quad = _quadmin(s.a_lo, s.phi_lo, s.dphi_lo, s.a_hi, s.phi_hi)
    use_quad = ~use_cub & (a_quad > lo + qchk) & (a_quad < hi - qchk)
    use_bis = ~use_cub & ~use_quad
    a_j = jnp.where(use_cub, a_cub, s.a_rec)
    a_j = jnp.where(use_quad, a_quad, a_j)
    a_j = jnp.where(use_bis, (s.a_lo + s.a_hi) / 2., a_j)
    phi_j, dphi_j, g_j = phi_dphi(a_j)
    phi_j = phi_j.astype(s.phi_lo.dtype)
    dphi_j = dphi_j.astype(s.dphi_lo.dtype)
    g_j = g_j.astype(s.g_star.dtype)
    s = s._replace(nfev=s.nfev + 1, ngev=s.ngev + 1)
    hi_to_j = wolfe_one(a_j, phi_j) | (phi_j >= s.phi_lo)
    star_to_j = wolfe_two(dphi_j) & ~hi_to_j
    hi_to_lo = (dphi_j * (s.a_hi - s.a_lo) >= 0.) & ~hi_to_j & ~star_to_j
    lo_to_j = ~hi_to_j & ~star_to_j
    s = _replace_where(hi_to_j, s, a_hi=a_j, phi_hi=phi_j, dphi_hi=dphi_j, a_rec=s.a_hi,
                       phi_rec=s.phi_hi)
    s = _replace_where(star_to_j, s._replace(done=star_to_j | s.done), a_star=a_j,
                       phi_star=phi_j, dphi_star=dphi_j, g_star=g_j)
    s = _replace_where(hi_to_lo, s, a_hi=s.a_lo, phi_hi=s.phi_lo, dphi_hi=s.dphi_lo,
                       a_rec=s.a_hi, phi_rec=s.phi_hi)
    s = _replace_where(lo_to_j & ~hi_to_lo, s, a_rec=s.a_lo, phi_rec=s.phi_lo)
    s = _replace_where(lo_to_j, s, a_lo=a_j, phi_lo=phi_j, dphi_lo=dphi_j)
    s = s._replace(j=s.j + 1)
    return s._replace(failed=s.failed | (s.j >= 30))

  return lax.while_loop(lambda s: ~s.done & ~pass_through & ~s.failed, body, state)


class _LineSearchState(NamedTuple):
  done: Any
  failed: Any
  i: Any
  a_i1: Any
  phi_i1: Any
  dphi_i1: Any
  nfev: Any
  ngev: Any
  a_star: Any
  phi_star: Any
  dphi_star: Any
  g_star: Any


class _LineSearchResults(NamedTuple):
  failed: Any
  nit: Any
  nfev: Any
  ngev: Any
  k: Any
  a_k: Any
  f_k: Any
  g_k: Any
  status: Any


def line_search(f, xk, pk, old_fval=None, old_old_fval=None, gfk=None, c1=1e-4, c2=0.9,
                maxiter=20):
  """A step length along ``pk`` from ``xk`` satisfying the strong Wolfe conditions
  (Algorithm 3.5); ``status`` 0 success, 1 zoom failed, 3 too many iterations."""
  xk, pk = promote_dtypes_inexact(xk, pk)

  def phi_dphi(t):
    t = jnp.array(t, dtype=pk.dtype)
    phi, g = value_and_grad(f)(xk + t * pk)
    return phi, jnp.real(_dot(g, pk)), g

  if old_fval is None or gfk is None:
    phi_0, dphi_0, gfk = phi_dphi(0)
  else:
    phi_0 = old_fval
    dphi_0 = jnp.real(_dot(gfk, pk))
  if old_old_fval is not None:
    cand = 1.01 * 2 * (phi_0 - old_old_fval) / dphi_0
    start = jnp.where(cand > 1, 1.0, cand)
  else:
    start = 1

  def wolfe_one(a_i, phi_i):
    return phi_i > phi_0 + c1 * a_i * dphi_0

  def wolfe_two(dphi_i):
    return jnp.abs(dphi_i) <= -c2 * dphi_0

  n0 = 1 if old_fval is None or gfk is None else 0
  state = _LineSearchState(done=jnp.array(False, dtype=bool),
                           failed=jnp.array(False, dtype=bool), i=1, a_i1=0., phi_i1=phi_0,
                           dphi_i1=dphi_0, nfev=n0, ngev=n0, a_star=0., phi_star=phi_0,
                           dphi_star=dphi_0, g_star=gfk)
  keys = ("a_star", "phi_star", "dphi_star", "g_star")

  def body(s):
    a_i = jnp.where(s.i == 1, start, s.a_i1 * 2.)
    phi_i, dphi_i, g_i = phi_dphi(a_i)
    s = s._replace(nfev=s.nfev + 1, ngev=s.ngev + 1)
    to_zoom1 = wolfe_one(a_i, phi_i) | ((phi_i >= s.phi_i1) & (s.i > 1))
    to_i = wolfe_two(dphi_i) & ~to_zoom1
    to_zoom2 = (dphi_i >= 0.) & ~to_zoom1 & ~to_i
    z1 = _zoom(phi_dphi, wolfe_one, wolfe_two, s.a_i1, s.phi_i1, s.dphi_i1, a_i, phi_i,
               dphi_i, gfk, ~to_zoom1)
    s = s._replace(nfev=s.nfev + z1.nfev, ngev=s.ngev + z1.ngev)
    z2 = _zoom(phi_dphi, wolfe_one, wolfe_two, a_i, phi_i, dphi_i, s.a_i1, s.phi_i1,
               s.dphi_i1, gfk, ~to_zoom2)
    s = s._replace(nfev=s.nfev + z2.nfev, ngev=s.ngev + z2.ngev)
    s = _replace_where(to_zoom1, s._replace(done=to_zoom1 | s.done,
                                            failed=(to_zoom1 & z1.failed) | s.failed),
                       **{k: getattr(z1, k) for k in keys})
    s = _replace_where(to_i, s._replace(done=to_i | s.done), a_star=a_i, phi_star=phi_i,
                       dphi_star=dphi_i, g_star=g_i)
    s = _replace_where(to_zoom2, s._replace(done=to_zoom2 | s.done,
                                            failed=(to_zoom2 & z2.failed) | s.failed),
                       **{k: getattr(z2, k) for k in keys})
    return s._replace(i=s.i + 1, a_i1=a_i, phi_i1=phi_i, dphi_i1=dphi_i)

  s = lax.while_loop(lambda s: ~s.done & (s.i <= maxiter) & ~s.failed, body, state)
  status = jnp.where(s.failed, jnp.array(1), jnp.where(s.i > maxiter, jnp.array(3),
                                                       jnp.array(0)))
  a_k = jnp.asarray(s.a_star)
  a_k = jnp.where((dtypes.finfo(a_k.dtype).bits != 64) & (jnp.abs(a_k) < 1e-8),
                  jnp.sign(a_k) * 1e-8, a_k)
  return _LineSearchResults(failed=s.failed | ~s.done, nit=s.i - 1, nfev=s.nfev, ngev=s.ngev,
                            k=s.i, a_k=a_k, f_k=s.phi_star, g_k=s.g_star, status=status)


# --- BFGS ---------------------------------------------------------------------------------
class _BFGSResults(NamedTuple):
  converged: Any
  failed: Any
  k: Any
  nfev: Any
  ngev: Any
  nhev: Any
  x_k: Any
  f_k: Any
  g_k: Any
  H_k: Any
  old_old_fval: Any
  status: Any
  line_search_status: Any


def minimize_bfgs(fun, x0, maxiter=None, norm=np.inf, gtol=1e-5, line_search_maxiter=10):
  """BFGS with the inverse-Hessian update (Nocedal & Wright, Algorithm 6.1); ``status`` 0
  converged, 1 max iterations, 2 + line-search status on line-search failure."""
  if maxiter is None:
    maxiter = np.size(x0) * 200
  d = x0.shape[0]
  f_0, g_0 = value_and_grad(fun)(x0)
  state = _BFGSResults(converged=jnp_linalg.norm(g_0, ord=norm) < gtol, failed=False, k=0,
                       nfev=1, ngev=1, nhev=0, x_k=x0, f_k=f_0, g_k=g_0,
                       H_k=jnp.eye(d, dtype=x0.dtype),
                       old_old_fval=f_0 + jnp_linalg.norm(g_0) / 2, status=0,
                       line_search_status=0)

  def cond(s):
    return jnp.logical_not(s.converged) & jnp.logical_not(s.failed) & (s.k < maxiter)

  def body(s):
    p_k = -_dot(s.H_k, s.g_k)
    ls = line_search(fun, s.x_k, p_k, old_fval=s.f_k, old_old_fval=s.old_old_fval,
                     gfk=s.g_k, maxiter=line_search_maxiter)
    s = s._replace(nfev=s.nfev + ls.nfev, ngev=s.ngev + ls.ngev, failed=ls.failed,
                   line_search_status=ls.status)
    s_k = ls.a_k * p_k
    y_k = ls.g_k - s.g_k
    rho = jnp.reciprocal(_dot(y_k, s_k))
    w = jnp.eye(d, dtype=rho.dtype) - rho * (s_k[:, None] * y_k[None, :])
    H = (jnp.einsum("ij,jk,lk", w, s.H_k, w, precision=lax.Precision.HIGHEST)
         + rho * s_k[:, None] * s_k[None, :])
    H = jnp.where(jnp.isfinite(rho), H, s.H_k)
    return s._replace(converged=jnp_linalg.norm(ls.g_k, ord=norm) < gtol, k=s.k + 1,
                      x_k=s.x_k + s_k, f_k=ls.f_k, g_k=ls.g_k, H_k=H, old_old_fval=s.f_k)

  state = lax.while_loop(cond, body, state)
  status = jnp.where(state.converged, 0,
                     jnp.where(state.k == maxiter, 1,
                               jnp.where(state.failed, 2 + state.line_search_status, -1)))
  return state._replace(status=status)


# --- L-BFGS (experimental in JAX) ---------------------------------------------------------
class _LBFGSResults(NamedTuple):
  converged: Any
  failed: Any
  k: Any
  nfev: Any
  ngev: Any
  x_k: Any
  f_k: Any
  g_k: Any
  s_history: Any
  y_history: Any
  rho_history: Any
  gamma: Any
  status: Any
  ls_status: Any


def _minimize_lbfgs(fun, x0, maxiter=None, norm=np.inf, maxcor=10,
                    ftol=2.220446049250313e-09, gtol=1e-05, maxfun=None, maxgrad=None,
                    maxls=20):
  d = len(x0)
  dt = jnp.asarray(x0).dtype
  if maxiter is None and maxfun is None and maxgrad is None:
    maxiter = d * 200
  maxiter = np.inf if maxiter is None else maxiter
  maxfun = np.inf if maxfun is None else maxfun
  maxgrad = np.inf if maxgrad is None else maxgrad
  f_0, g_0 = value_and_grad(fun)(x0)
  init = _LBFGSResults(converged=jnp.array(False, dtype=bool),
                       failed=jnp.array(False, dtype=bool), k=0, nfev=1, ngev=1, x_k=x0,
                       f_k=f_0, g_k=g_0, s_history=jnp.zeros((maxcor, d), dtype=dt),
                       y_history=jnp.zeros((maxcor, d), dtype=dt),
                       rho_history=jnp.zeros((maxcor,), dtype=dt), gamma=1., status=0,
                       ls_status=0)

  def body(s):
    p_k = _two_loop(s)
    ls = line_search(f=fun, xk=s.x_k, pk=p_k, old_fval=s.f_k, gfk=s.g_k, maxiter=maxls)
    s_k = jnp.asarray(ls.a_k).astype(p_k.dtype) * p_k
    y_k = ls.g_k - s.g_k
    rho_inv = jnp.real(_dot(y_k, s_k))
    rho = jnp.reciprocal(rho_inv).astype(y_k.dtype)
    gamma = rho_inv / jnp.real(_dot(jnp.conj(y_k), y_k))
    status = jnp.array(0)
    status = jnp.where(s.f_k - ls.f_k < ftol, 4, status)
    status = jnp.where(s.ngev >= maxgrad, 3, status)
    status = jnp.where(s.nfev >= maxfun, 2, status)
    status = jnp.where(s.k >= maxiter, 1, status)
    status = jnp.where(ls.failed, 5, status)
    conv = jnp_linalg.norm(ls.g_k, ord=norm) < gtol
    return s._replace(
        converged=conv, failed=(status > 0) & ~conv, k=s.k + 1, nfev=s.nfev + ls.nfev,
        ngev=s.ngev + ls.ngev, x_k=(s.x_k + s_k).astype(s.x_k.dtype),
        f_k=ls.f_k.astype(s.f_k.dtype), g_k=ls.g_k.astype(s.g_k.dtype),
        s_history=jnp.roll(s.s_history, -1, axis=0).at[-1, :].set(s_k),
        y_history=jnp.roll(s.y_history, -1, axis=0).at[-1, :].set(y_k),
        rho_history=jnp.roll(s.rho_history, -1, axis=0).at[-1].set(rho),
        gamma=gamma.astype(s.g_k.dtype), status=jnp.where(conv, 0, status), ls_status=ls.status)

  return lax.while_loop(lambda s: ~s.converged & ~s.failed, body, init)


def _two_loop(s):
  """The L-BFGS two-loop recursion: ``-H_k g_k`` from the stored curvature pairs."""
  dt = s.rho_history.dtype
  m = len(s.rho_history)
  cur = jnp.where(s.k < m, s.k, m)
  q = -jnp.conj(s.g_k)

  def first(j, carry):
    i = m - 1 - j
    q, a = carry
    a_i = s.rho_history[i] * _dot(jnp.conj(s.s_history[i]), q).real.astype(dt)
    return q - a_i * jnp.conj(s.y_history[i]), a.at[i].set(a_i)

  q, a = lax.fori_loop(0, cur, first, (q, jnp.zeros_like(s.rho_history)))
  q = s.gamma * q

  def second(j, q):
    i = m - cur + j
    b_i = s.rho_history[i] * _dot(s.y_history[i], q).real.astype(dt)
    return q + (a[i] - b_i) * s.s_history[i]

  return lax.fori_loop(0, cur, second, q)

