"""pyjax.scipy.optimize against real JAX and SciPy."""

import numpy as np
import pytest

import pyjax
import pyjax.numpy as pjnp
import pyjax.scipy.optimize as popt
from jax_compare import check

scipy = pytest.importorskip("scipy")

R = np.random.RandomState(0)


# --- optimize -----------------------------------------------------------------------------
def _rosen(m):
  def f(x):
    return m.jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)
  return f


def _quad(m):
  A = np.diag(np.arange(1., 5.)).astype(np.float32)

  def f(x, c):
    return 0.5 * x @ (m.jnp.asarray(A) @ x) - c @ x
  return f


def test_minimize_bfgs_matches_jax():
  x0 = np.float32([0.5, -0.3, 1.2, 0.1])
  c = np.float32([1., 2., 3., 4.])
  check(lambda m: m.optimize.minimize(_quad(m), x0, (c,), method="BFGS"), tol=1e-4)


def test_minimize_bfgs_rosenbrock_x64(x64):
  x0 = np.array([-1.2, 1.0, 0.5, 0.3])
  res = check(lambda m: m.optimize.minimize(_rosen(m), x0, method="BFGS"), tol=1e-6)
  assert bool(res.success) and int(res.status) == 0
  sres = scipy.optimize.minimize(lambda x: float(np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2
                                                         + (1 - x[:-1]) ** 2)), x0,
                                 method="BFGS")
  np.testing.assert_allclose(res.fun, sres.fun, atol=1e-6)


@pytest.mark.slow
def test_minimize_options_and_lbfgs():
  x0 = np.float32([0.5, -0.3, 1.2, 0.1])
  c = np.float32([1., 2., 3., 4.])
  check(lambda m: m.optimize.minimize(_quad(m), x0, (c,), method="BFGS",
                                      options={"maxiter": 2}), tol=1e-4)
  check(lambda m: m.optimize.minimize(_quad(m), x0, (c,), method="bfgs",
                                      options={"gtol": 1e-2, "norm": 2}), tol=1e-4)
  check(lambda m: m.optimize.minimize(_quad(m), x0, (c,),
                                      method="l-bfgs-experimental-do-not-rely-on-this"),
        tol=1e-4)
  check(lambda m: m.optimize.minimize(_quad(m), x0, c, method="BFGS"))
  check(lambda m: m.optimize.minimize(_quad(m), x0, (c,), method="Nelder-Mead"))


def test_minimize_under_jit():
  c = np.float32([1., 2., 3., 4.])
  f = pyjax.jit(lambda x0: popt.minimize(_quad(type("M", (), {"jnp": pjnp})), x0, (c,),
                                         method="BFGS").x)
  np.testing.assert_allclose(f(np.zeros(4, np.float32)), c / np.arange(1., 5.), rtol=1e-4)
