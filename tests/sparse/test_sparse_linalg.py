"""jax.experimental.sparse.linalg.spsolve and jax.scipy.sparse.linalg solvers on BCOO/BCSR
operators: values against SciPy/NumPy, gradients against real JAX."""
import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spl

import pyjax
import pyjax.numpy as pnp
import pyjax.scipy.sparse.linalg as psl
from pyjax.experimental import sparse as ps

_A = (sp.random(6, 6, density=0.4, random_state=0, format="csr") + 4 * sp.eye(6)).tocsr()
A = _A.astype(np.float32)
B = np.random.default_rng(0).normal(size=6).astype(np.float32)


def test_spsolve_matches_scipy_eager_and_jit():
  want = spl.spsolve(A.astype(np.float64), B)
  x = ps.linalg.spsolve(A.data, A.indices, A.indptr, B)
  assert x.dtype == np.float32 and x.shape == (6,)
  np.testing.assert_allclose(x, want, rtol=1e-5, atol=1e-6)
  xj = pyjax.jit(ps.linalg.spsolve)(A.data, A.indices, A.indptr, B)
  np.testing.assert_array_equal(xj, x)


def test_spsolve_grad_matches_jax():
  jax = pytest.importorskip("jax")
  jsl = pytest.importorskip("jax.experimental.sparse.linalg")

  def loss(mod):
    return lambda d, b: (mod(d, A.indices, A.indptr, b) ** 2).sum()
  g = pyjax.grad(loss(ps.linalg.spsolve), argnums=(0, 1))(pnp.asarray(A.data), pnp.asarray(B))
  gj = jax.grad(loss(jsl.spsolve), argnums=(0, 1))(A.data, B)
  for a, b in zip(g, gj):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)


def test_spsolve_errors():
  with pytest.raises(ValueError, match="data types do not match"):
    ps.linalg.spsolve(A.data.astype(np.int32), A.indices, A.indptr, B)
  with pytest.raises(ValueError, match="Invalid CSR buffer sizes"):
    ps.linalg.spsolve(A.data, A.indices, A.indptr[:-1], B)


@pytest.mark.parametrize("solver", ["cg", "bicgstab", "gmres"])
def test_scipy_solvers_on_sparse_operators(solver):
  spd = (_A.T @ _A + sp.eye(6)).astype(np.float32)
  want = np.linalg.solve(spd.toarray().astype(np.float64), B)
  f = getattr(psl, solver)
  for op in (ps.BCOO.from_scipy_sparse(spd), ps.BCSR.from_scipy_sparse(spd.tocsr())):
    x, _ = f(op, B, tol=1e-6)
    assert x.dtype == np.float32
    np.testing.assert_allclose(np.asarray(x), want, rtol=1e-4, atol=1e-5)


def _spd(n, seed=0):
  rng = np.random.default_rng(seed)
  q = np.linalg.qr(rng.normal(size=(n, n)))[0]
  return ((q * np.linspace(1, 10, n) ** 2) @ q.T).astype(np.float32), \
      rng.normal(size=(n, 3)).astype(np.float32)


def test_lobpcg_standard_top_k_matches_numpy_and_jax():
  jsl = pytest.importorskip("jax.experimental.sparse.linalg")
  a, x = _spd(40)
  want = np.sort(np.linalg.eigvalsh(a.astype(np.float64)))[::-1][:3]
  jtheta = np.asarray(jsl.lobpcg_standard(a, x, m=100)[0])
  for op in (a, ps.BCOO.fromdense(a), lambda v, s=ps.BCSR.fromdense(a): s @ v):
    theta, u, i = ps.linalg.lobpcg_standard(op, x, m=100)
    assert theta.dtype == np.float32 and u.shape == (40, 3) and i.dtype == np.int32
    assert 0 < int(i) <= 100
    np.testing.assert_allclose(np.asarray(theta), want, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(theta), jtheta, rtol=1e-5)
    u = np.asarray(u)
    np.testing.assert_allclose(a @ u, u * np.asarray(theta), atol=1e-2)


def test_lobpcg_standard_errors():
  a, _ = _spd(40)
  with pytest.raises(ValueError, match=r"expected search dim \* 5 < matrix dim \(got 40, 40\)"):
    ps.linalg.lobpcg_standard(a, np.ones((40, 8), np.float32))
  with pytest.raises(ValueError, match="must have search dim > 0, got 0"):
    ps.linalg.lobpcg_standard(a, np.ones((40, 0), np.float32))
