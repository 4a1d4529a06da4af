"""pyjax.experimental.ode.odeint: values against SciPy's solve_ivp and real JAX, gradients
(adjoint method) against finite differences and real JAX."""
import numpy as np
import pytest

import pyjax
import pyjax.numpy as jnp
from pyjax.experimental.ode import odeint

scipy_integrate = pytest.importorskip("scipy.integrate")


def _decay(y, t, a):
  return -a * y + jnp.sin(t)


def _solve_ivp(f_np, y0, ts):
  sol = scipy_integrate.solve_ivp(f_np, (ts[0], ts[-1]), y0, t_eval=ts, rtol=1e-10,
                                  atol=1e-10, method="DOP853")
  return sol.y.T


def test_values_match_scipy():
  ts = np.linspace(0., 2., 5, dtype=np.float32)
  ys = odeint(_decay, jnp.array([1., 2.]), jnp.asarray(ts), 0.5)
  assert ys.shape == (5, 2) and ys.dtype == np.float32
  ref = _solve_ivp(lambda t, y: -0.5 * y + np.sin(t), [1., 2.], ts.astype(np.float64))
  np.testing.assert_allclose(ys, ref, rtol=2e-5, atol=2e-6)


def test_pytree_state_and_tolerances():
  def lv(s, t, p):
    return {"x": p[0] * s["x"] - p[1] * s["x"] * s["y"],
            "y": -p[2] * s["y"] + p[3] * s["x"] * s["y"]}
  ts = np.linspace(0., 1., 3)
  p = np.array([1.5, 1., 3., 1.])
  out = odeint(lv, {"x": 1., "y": 1.}, jnp.asarray(ts, np.float32), jnp.asarray(p, np.float32),
               rtol=1e-6, atol=1e-6)
  assert set(out) == {"x", "y"} and out["x"].shape == (3,)

  def lv_np(t, s):
    x, y = s
    return [p[0] * x - p[1] * x * y, -p[2] * y + p[3] * x * y]
  ref = _solve_ivp(lv_np, [1., 1.], ts)
  np.testing.assert_allclose(out["x"], ref[:, 0], rtol=1e-4)
  np.testing.assert_allclose(out["y"], ref[:, 1], rtol=1e-4)


def test_hmax_and_mxstep():
  ts = jnp.linspace(0., 1., 3)
  a = odeint(_decay, jnp.ones(2), ts, 0.5, hmax=0.01)
  b = odeint(_decay, jnp.ones(2), ts, 0.5)
  np.testing.assert_allclose(a, b, rtol=1e-5)
  # with one step allowed per output time the solver stops short: a different answer
  c = odeint(lambda y, t: -50. * y, jnp.ones(1), ts, mxstep=1)
  d = odeint(lambda y, t: -50. * y, jnp.ones(1), ts)
  assert not np.allclose(c, d)
  np.testing.assert_allclose(d[:, 0], np.exp(-50. * np.asarray(ts)), rtol=1e-3, atol=1e-6)


def test_errors():
  with pytest.raises(TypeError, match="t must be an array of floats"):
    odeint(_decay, jnp.ones(2), jnp.arange(3), 0.5)
  with pytest.raises(TypeError, match="The contents of odeint \\*args must be arrays or "
                     "scalars, but got"):
    odeint(_decay, jnp.ones(2), jnp.linspace(0., 1., 3), "a")


def test_grad_matches_finite_differences():
  ts = jnp.linspace(0., 1., 4)

  def loss(y0, a):
    return jnp.sum(odeint(_decay, y0, ts, a) ** 2)
  y0, a = jnp.array([1., 2.]), 0.5
  gy, ga = pyjax.grad(loss, argnums=(0, 1))(y0, a)
  eps = 1e-3
  fd_a = (loss(y0, a + eps) - loss(y0, a - eps)) / (2 * eps)
  np.testing.assert_allclose(ga, fd_a, rtol=2e-3)
  for i in range(2):
    e = np.zeros(2, np.float32)
    e[i] = eps
    fd = (loss(y0 + e, a) - loss(y0 - e, a)) / (2 * eps)
    np.testing.assert_allclose(gy[i], fd, rtol=2e-3)


def test_grad_wrt_closure_and_jit():
  ts = jnp.linspace(0., 1., 3)

  def loss(k):
    return odeint(lambda y, t: -k * y, jnp.ones(()), ts)[-1]
  g = pyjax.jit(pyjax.grad(loss))(2.0)
  # y(1) = exp(-k): d/dk = -exp(-k)
  np.testing.assert_allclose(g, -np.exp(-2.0), rtol=1e-4)


def test_matches_jax():
  jax = pytest.importorskip("jax")
  from jax.experimental.ode import odeint as jodeint
  ts = np.linspace(0., 2., 5, dtype=np.float32)
  y0 = np.array([1., 2.], np.float32)
  ys = odeint(_decay, jnp.asarray(y0), jnp.asarray(ts), 0.5)
  jys = jodeint(lambda y, t, a: -a * y + jax.numpy.sin(t), y0, ts, 0.5)
  np.testing.assert_allclose(ys, jys, rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_grad_matches_jax():
  jax = pytest.importorskip("jax")
  from jax.experimental.ode import odeint as jodeint
  ts = np.linspace(0., 2., 5, dtype=np.float32)
  y0 = np.array([1., 2.], np.float32)
  g = pyjax.grad(lambda t, a: odeint(_decay, jnp.asarray(y0), t, a)[-1].sum(),
                 argnums=(0, 1))(jnp.asarray(ts), 0.5)
  jg = jax.grad(lambda t, a: jodeint(lambda y, t, a: -a * y + jax.numpy.sin(t), y0, t,
                                     a)[-1].sum(), argnums=(0, 1))(ts, 0.5)
  np.testing.assert_allclose(g[0], jg[0], rtol=1e-4, atol=1e-6)
  np.testing.assert_allclose(g[1], jg[1], rtol=1e-4)


def test_vmap_and_grad_under_vmap():
  ts = jnp.linspace(0., 2., 4)
  a = jnp.array([0.5, 1.0])
  ys = pyjax.vmap(lambda a: odeint(_decay, jnp.array([1., 2.]), ts, a))(a)
  assert ys.shape == (2, 4, 2)
  for i, ai in enumerate([0.5, 1.0]):
    np.testing.assert_allclose(ys[i], odeint(_decay, jnp.array([1., 2.]), ts, ai), rtol=1e-5)
  g = pyjax.vmap(pyjax.grad(lambda a: odeint(_decay, jnp.array([1., 2.]), ts, a)[-1].sum()))(a)
  for i, ai in enumerate([0.5, 1.0]):
    gi = pyjax.grad(lambda a: odeint(_decay, jnp.array([1., 2.]), ts, a)[-1].sum())(ai)
    np.testing.assert_allclose(g[i], gi, rtol=1e-4)
