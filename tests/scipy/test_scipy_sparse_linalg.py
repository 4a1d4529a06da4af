"""pyjax.scipy.sparse.linalg (cg, gmres, bicgstab) against real JAX and SciPy."""

import numpy as np
import pytest

from jax_compare import check, slow_except

scipy = pytest.importorskip("scipy")

R = np.random.RandomState(0)


# --- sparse.linalg ------------------------------------------------------------------------
SA = R.randn(6, 6).astype(np.float32)
SSPD = (SA @ SA.T + 6 * np.eye(6)).astype(np.float32)
SGEN = (SA + 6 * np.eye(6)).astype(np.float32)
SB = R.randn(6).astype(np.float32)


def _sparse(m):
  import importlib
  return importlib.import_module(f"{m.name}.scipy.sparse.linalg")


@pytest.mark.parametrize("name,mat,kw", slow_except([
    ("cg", SSPD, {}), ("cg", SSPD, {"M": np.diag(1 / np.diag(SSPD)), "tol": 1e-6}),
    ("bicgstab", SGEN, {}), ("gmres", SGEN, {}),
    ("gmres", SGEN, {"solve_method": "incremental", "restart": 3}),
    ("cg", SSPD, {"maxiter": 2}), ("gmres", SGEN, {"x0": SB}),
], {0, 2, 3}))
def test_sparse_solvers(name, mat, kw):
  check(lambda m: getattr(_sparse(m), name)(mat, SB, **kw), tol=1e-4)
  x, _ = getattr(__import__("pyjax.scipy.sparse.linalg", fromlist=["x"]), name)(mat, SB)
  np.testing.assert_allclose(x, np.linalg.solve(mat.astype(np.float64), SB), rtol=1e-3,
                             atol=1e-4)


@pytest.mark.slow
def test_sparse_solvers_pytrees_grads_errors():
  tree = {"u": SB[:3], "v": SB[3:]}
  check(lambda m: _sparse(m).cg(lambda t: {"u": 2 * t["u"], "v": 3 * t["v"]}, tree), tol=1e-5)
  check(lambda m: m.top.grad(lambda b: _sparse(m).cg(SSPD, b)[0].sum())(SB), tol=1e-4)
  check(lambda m: m.top.grad(lambda b: _sparse(m).gmres(SGEN, b)[0].sum())(SB), tol=1e-4)
  check(lambda m: _sparse(m).cg(SSPD[:3], SB))
  check(lambda m: _sparse(m).cg(SSPD, SB, x0=SB[:3]))
  check(lambda m: _sparse(m).gmres(SGEN, SB, solve_method="bogus"))
