"""odeint: adaptive Dormand-Prince (RK45) integration with an adjoint reverse mode
(``jax.experimental.ode``).

The solver follows JAX's: the state pytree is flattened to one vector; the initial step
comes from Hairer, Norsett & Wanner's heuristic (Solving ODEs I, II.4); each step is a
Dormand-Prince 5(4) step whose embedded error estimate, measured as the RMS of
``error / (atol + rtol * max(|y0|, |y1|))``, accepts (ratio <= 1) or rejects it and picks the
next step size (safety 0.9, growth at most 10x, shrink at least 0.2x on rejection);
outputs at the requested times come from a 4th-order polynomial fitted to each accepted
step (dense output).  A ``while_loop`` advances to each output time inside a ``scan``
over the times.  Reverse mode is a ``custom_vjp``: the adjoint system (state, its
cotangent, the time cotangent and the cotangents of ``args``) is integrated backwards
between consecutive output times with the same solver.
"""
from __future__ import annotations

import functools
import operator

import numpy as np

from pyjax._src import core, dtypes
from pyjax._src import tree_util
from pyjax._src.api import jit
from pyjax._src.api_ad import closure_convert, custom_vjp, vjp
from pyjax._src.flatten_util import ravel_pytree
from pyjax._src.lax import lax_api as lax
import pyjax.numpy as jnp

__all__ = ["odeint"]

# Dormand-Prince 5(4) tableau: nodes, stage weights, 5th-order weights, and the
# difference between the 5th- and 4th-order weights (the error estimate).
_C = np.array([1 / 5, 3 / 10, 4 / 5, 8 / 9, 1., 1., 0.])
_A = np.array([
    [1 / 5, 0, 0, 0, 0, 0, 0],
    [3 / 40, 9 / 40, 0, 0, 0, 0, 0],
    [44 / 45, -56 / 15, 32 / 9, 0, 0, 0, 0],
    [19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729, 0, 0, 0],
    [9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656, 0, 0],
    [35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0]])
_B5 = np.array([35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0])
# the embedded 4th-order weights of Dormand & Prince's alternative pair (as JAX uses)
_B4 = np.array([1951 / 21600, 0, 22642 / 50085, 451 / 720, -12231 / 42400, 649 / 6300,
                1 / 60])
_E = _B5 - _B4
# weights giving the solution at the step's midpoint (Shampine's dense output for dopri5)
_MID = np.array([6025192743 / 30085553152, 0, 51252292925 / 65400821598,
                 -2691868925 / 45128329728, 187940372067 / 1594534317056,
                 -1776094331 / 19743644256, 11237099 / 235043384]) / 2


def _const(a, dtype):
  return jnp.asarray(np.asarray(a, dtype))


def _abs2(x):
  if jnp.iscomplexobj(x):
    return jnp.real(x) ** 2 + jnp.imag(x) ** 2
  return x * x


def _rms_norm(x):
  return jnp.sqrt(jnp.sum(_abs2(x)))


def _initial_step(f, t0, y0, order, rtol, atol, f0):
  """Hairer-Norsett-Wanner's starting step size."""
  dtype = y0.dtype
  scale = (atol + jnp.abs(y0) * rtol).astype(dtype)
  d0 = _rms_norm(y0 / scale)
  d1 = _rms_norm(f0 / scale)
  h0 = jnp.where((d0 < 1e-5) | (d1 < 1e-5), 1e-6, 0.01 * d0 / d1)
  f1 = f(y0 + h0.astype(dtype) * f0, t0 + h0)
  d2 = _rms_norm((f1 - f0) / scale) / h0
  h1 = jnp.where((d1 <= 1e-15) & (d2 <= 1e-15), jnp.maximum(1e-6, h0 * 1e-3),
                 (0.01 / jnp.maximum(d1, d2)) ** (1. / (order + 1.)))
  return jnp.minimum(100. * h0, h1)


def _dopri_step(f, y0, f0, t0, dt):
  """One Dormand-Prince step: (y1, f(y1), error estimate, stage derivatives k[7, n])."""
  dtype = f0.dtype
  h = dt.astype(dtype)
  c = _const(_C, dt.dtype)
  a = _const(_A, dtype)

  def stage(i, k):
    yi = y0 + h * jnp.dot(a[i - 1], k)
    return k.at[i].set(f(yi, t0 + dt * c[i - 1]))

  k = jnp.zeros((7,) + f0.shape, dtype).at[0].set(f0)
  k = lax.fori_loop(1, 7, stage, k)
  y1 = h * jnp.dot(_const(_B5, dtype), k) + y0
  err = h * jnp.dot(_const(_E, dtype), k)
  return y1, k[-1], err, k


def _dense_coefficients(y0, y1, k, dt):
  """Coefficients (highest power first) of the quartic through the step, in the step's
  relative time s in [0, 1]: matches y0, y1, the midpoint value and both slopes."""
  h = dt.astype(y0.dtype)
  y_mid = y0 + h * jnp.dot(_const(_MID, y0.dtype), k)
  dy0, dy1 = h * k[0], h * k[-1]
  c4 = -2. * dy0 + 2. * dy1 - 8. * y0 - 8. * y1 + 16. * y_mid
  c3 = 5. * dy0 - 3. * dy1 + 18. * y0 + 14. * y1 - 32. * y_mid
  c2 = -4. * dy0 + dy1 - 11. * y0 - 5. * y1 + 16. * y_mid
  return jnp.stack([c4, c3, c2, dy0, y0])


def _horner(coeffs, s):
  out = coeffs[0]
  for i in range(1, coeffs.shape[0]):
    out = out * s + coeffs[i]
  return out


def _error_ratio(err, rtol, atol, y0, y1):
  tol = atol + rtol * jnp.maximum(jnp.abs(y0), jnp.abs(y1))
  return jnp.sqrt(jnp.mean(_abs2(err / tol.astype(err.dtype))))


def _next_step(dt, ratio, safety=0.9, ifactor=10.0, dfactor=0.2, order=5.0):
  dfactor = jnp.where(ratio < 1, 1.0, dfactor)
  factor = jnp.minimum(ifactor, jnp.maximum(ratio ** (-1.0 / order) * safety, dfactor))
  return jnp.where(ratio == 0, dt * ifactor, dt * factor)


def odeint(func, y0, t, *args, rtol=1.4e-8, atol=1.4e-8, mxstep=float("inf"),
           hmax=float("inf")):
  """Integrate ``dy/dt = func(y, t, *args)`` from ``y0`` at ``t[0]``; returns the solution
  at every time in ``t`` (strictly increasing floats) stacked on a new leading axis (a
  pytree like ``y0``).  Adaptive Dormand-Prince steps with relative/absolute tolerances
  ``rtol``/``atol``, at most ``mxstep`` steps per output time and steps no longer than
  ``hmax``.  Differentiable in ``y0``, ``t`` and ``args`` (reverse mode by the adjoint
  method, as JAX's)."""
  for arg in tree_util.tree_leaves(args):
    if not _valid_jaxtype(arg):
      raise TypeError(f"The contents of odeint *args must be arrays or scalars, but got {arg}.")
  if not dtypes.issubdtype(jnp.result_type(t), np.floating):
    raise TypeError(f"t must be an array of floats, but got {t}.")
  converted, consts = closure_convert(func, y0, t[0], *args)
  return _odeint_wrapper(converted, rtol, atol, mxstep, hmax, y0, t, *args, *consts)


def _valid_jaxtype(x):
  try:
    core.get_aval(x)
  except TypeError:
    return False
  return True


@functools.partial(jit, static_argnums=(0, 1, 2, 3, 4))
def _odeint_wrapper(func, rtol, atol, mxstep, hmax, y0, ts, *args):
  y0_flat, unravel = ravel_pytree(y0)

  def flat_func(y, t, *args):
    out, _ = ravel_pytree(func(unravel(y), t, *args))
    return out
  flat_func.__name__ = getattr(func, "__name__", "func")
  out = _odeint(flat_func, rtol, atol, mxstep, hmax, y0_flat, ts, *args)
  from pyjax._src.api_vmap import vmap
  return vmap(unravel)(out)


@functools.partial(custom_vjp, nondiff_argnums=(0, 1, 2, 3, 4))
def _odeint(func, rtol, atol, mxstep, hmax, y0, ts, *args):
  f = lambda y, t: func(y, t, *args)  # noqa: E731

  def advance(carry, target_t):
    def keep_going(state):
      i, _, _, t, dt, _, _ = state
      return (t < target_t) & (i < mxstep) & (dt > 0)

    def step(state):
      i, y, fy, t, dt, last_t, coeffs = state
      y1, f1, err, k = _dopri_step(f, y, fy, t, dt)
      ratio = _error_ratio(err, rtol, atol, y, y1)
      new_coeffs = _dense_coefficients(y, y1, k, dt)
      dt_next = jnp.clip(_next_step(dt, ratio), 0., hmax)
      accept = ratio <= 1.
      accepted = [i + 1, y1, f1, t + dt, dt_next, t, new_coeffs]
      rejected = [i + 1, y, fy, t, dt_next, last_t, coeffs]
      return [jnp.where(accept, a, r) for a, r in zip(accepted, rejected)]

    _, *carry = lax.while_loop(keep_going, step, [0] + list(carry))
    _, _, t, _, last_t, coeffs = carry
    s = (target_t - last_t) / (t - last_t)
    return carry, _horner(coeffs, s.astype(coeffs.dtype))

  f0 = f(y0, ts[0])
  dt = jnp.clip(_initial_step(f, ts[0], y0, 4, rtol, atol, f0), 0., hmax)
  coeffs = jnp.stack([y0] * 5)
  _, ys = lax.scan(advance, [y0, f0, ts[0], dt, ts[0], coeffs], ts[1:])
  return jnp.concatenate((y0[None], ys))


def _odeint_fwd(func, rtol, atol, mxstep, hmax, y0, ts, *args):
  ys = _odeint(func, rtol, atol, mxstep, hmax, y0, ts, *args)
  return ys, (ys, ts, args)


def _odeint_bwd(func, rtol, atol, mxstep, hmax, res, g):
  ys, ts, args = res

  def adjoint_dynamics(state, minus_t, *args):
    # integrated in reversed time: the solver's time is -t
    y, y_bar = state[0], state[1]
    y_dot, pullback = vjp(func, y, -minus_t, *args)
    return (-y_dot, *pullback(y_bar))

  def back(carry, i):
    y_bar, t0_bar, args_bar = carry
    t_bar = jnp.real(jnp.dot(func(ys[i], ts[i], *args), g[i]))
    t0_bar = t0_bar - t_bar
    _, y_bar, t0_bar, args_bar = odeint(
        adjoint_dynamics, (ys[i], y_bar, t0_bar, args_bar), jnp.stack([-ts[i], -ts[i - 1]]),
        *args, rtol=rtol, atol=atol, mxstep=mxstep, hmax=hmax)
    y_bar, t0_bar, args_bar = tree_util.tree_map(operator.itemgetter(1),
                                                 (y_bar, t0_bar, args_bar))
    return (y_bar + g[i - 1], t0_bar, args_bar), t_bar

  init = (g[-1], jnp.zeros((), ts.dtype), tree_util.tree_map(jnp.zeros_like, args))
  (y_bar, t0_bar, args_bar), rev_ts_bar = lax.scan(back, init,
                                                   jnp.arange(ts.shape[0] - 1, 0, -1))
  ts_bar = jnp.concatenate([t0_bar[None], rev_ts_bar[::-1]])
  return (y_bar, ts_bar, *args_bar)


_odeint.defvjp(_odeint_fwd, _odeint_bwd)
