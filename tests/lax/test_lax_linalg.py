"""lax.linalg: the linear-algebra primitives against real JAX (values, dtypes, weak types,
errors), their jaxpr parameters, vmap rules, and the JVP rules JAX lacks (checked against
finite differences).  Derivatives shared with jnp.linalg are tested in
test_numpy_linalg.py."""
import numpy as np
import pytest

import pyjax
import pyjax.numpy as pjnp
from pyjax import lax as plax
from jax_compare import compare, run

PL = pjnp.linalg


def rand(shape, dtype=np.float32, seed=0):
  rng = np.random.RandomState(seed)
  x = rng.randn(*shape)
  if np.dtype(dtype).kind == "c":
    x = x + 1j * rng.randn(*shape)
  return x.astype(dtype)


def spd(n, batch=(), dtype=np.float32, seed=0):
  a = rand(batch + (n, n), dtype, seed)
  return (a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)).astype(dtype)


A = rand((3, 3))
B = rand((2, 4, 4), seed=1)
R = rand((4, 3), seed=2)
S = spd(3)
ENV = dict(A=A, B=B, R=R, S=S, C=rand((3, 3), np.complex64, 3))


# --- lax.linalg -----------------------------------------------------------------------------------
LAX_CASES = [
    "lax.linalg.cholesky(S)", "lax.linalg.cholesky(jnp.eye(2, dtype=jnp.int32))", "lax.linalg.cholesky(jnp.ones(3))",
    "lax.linalg.cholesky(jnp.ones((2, 3)), symmetrize_input=False)", "lax.linalg.cholesky(jnp.ones((3,)), symmetrize_input=False)",
    "lax.linalg.cholesky(jnp.ones((3, 3), jnp.int32), symmetrize_input=False)", "lax.linalg.cholesky(-jnp.eye(2))",
    "lax.linalg.eigh(S)", "lax.linalg.eigh(S, lower=False, symmetrize_input=False)", "lax.linalg.eigh(jnp.ones((2, 3)), symmetrize_input=False)",
    "lax.linalg.eigh(jnp.ones((3,)), symmetrize_input=False)", "lax.linalg.eigh(jnp.full((2, 2), jnp.nan))",
    "lax.linalg.svd(R)", "lax.linalg.svd(B, full_matrices=False)", "lax.linalg.svd(B, compute_uv=False)",
    "lax.linalg.svd(jnp.eye(2, dtype=jnp.int32))", "lax.linalg.svd(jnp.ones(2))", "lax.linalg.svd(jnp.ones((4, 3, 2)), subset_by_index=(0, 1))",
    "lax.linalg.qr(R)", "lax.linalg.qr(R, full_matrices=False)", "lax.linalg.qr(jnp.ones((4, 3, 2)), pivoting=True)",
    "lax.linalg.qr(jnp.eye(2, dtype=jnp.int32))", "lax.linalg.qr(jnp.ones(3))",
    "lax.linalg.lu(B)", "lax.linalg.lu(R)", "lax.linalg.lu(R.T)", "lax.linalg.lu(jnp.eye(2, dtype=jnp.int32))", "lax.linalg.lu(jnp.ones(2))",
    "lax.linalg.lu(jnp.full((2, 2), jnp.nan))",
    "lax.linalg.lu_pivots_to_permutation(jnp.array([[2, 2, 2], [1, 0, 3]], jnp.int32), 5)",
    "lax.linalg.lu_pivots_to_permutation(jnp.array([2., 2, 2]), 5)", "lax.linalg.lu_pivots_to_permutation(jnp.array([2, 2, 2]), 2)",
    "lax.linalg.triangular_solve(A, R.T, left_side=True, lower=True)", "lax.linalg.triangular_solve(A, R, transpose_a=True)",
    "lax.linalg.triangular_solve(C, C, left_side=True, conjugate_a=True, transpose_a=True)",
    "lax.linalg.triangular_solve(jnp.eye(2), jnp.ones((3, 2)), left_side=True)", "lax.linalg.triangular_solve(jnp.eye(2), jnp.ones((2,)))",
    "lax.linalg.triangular_solve(jnp.eye(2), jnp.ones((2,)), left_side=True)", "lax.linalg.triangular_solve(jnp.ones((4, 2, 2)), jnp.ones((2, 3)), left_side=True)",
    "lax.linalg.triangular_solve(jnp.eye(2), jnp.ones((2, 2), jnp.int32))", "lax.linalg.triangular_solve(jnp.eye(2), jnp.ones((2, 2), jnp.complex64))",
    "lax.linalg.triangular_solve(jnp.ones((2, 3)), jnp.ones((3, 3)), left_side=True)",
    "lax.linalg.triangular_solve(jnp.ones((5, 3, 3)), jnp.ones((4, 3, 3)), left_side=True)",
    "lax.linalg.triangular_solve(jnp.zeros((2, 2)), jnp.ones((2, 2)), left_side=True)",
    "lax.linalg.eig(A)", "lax.linalg.eig(S, compute_left_eigenvectors=False)",
    "lax.linalg.eig(A, compute_left_eigenvectors=False, compute_right_eigenvectors=False)",
    "lax.linalg.eig(jnp.ones((2, 3)))", "lax.linalg.eig(jnp.eye(2, dtype=jnp.int32))",
    "lax.linalg.schur(A)", "lax.linalg.hessenberg(B[0])", "lax.linalg.tridiagonal(S)", "lax.linalg.tridiagonal(S, lower=False)",
    "lax.linalg.householder_product(*jax_geqrf(R))", "lax.linalg.ormqr(*jax_geqrf(R), jnp.ones((4, 2)))",
    "lax.linalg.ormqr(*jax_geqrf(R), jnp.ones((4, 2)), transpose=True)", "lax.linalg.ormqr(*jax_geqrf(R), jnp.ones((2, 4)), left=False)",
    "lax.linalg.tridiagonal_solve(jnp.array([0., 1, 1]), jnp.array([1., 3, 2]), jnp.array([1., 1, 0]), jnp.ones((3, 2)))",
    "lax.linalg.tridiagonal_solve(jnp.zeros(3), jnp.zeros(3), jnp.zeros(3), jnp.ones((3, 1)))",
    "lax.linalg.symmetric_product(R, jnp.ones((4, 4)), alpha=2., beta=.5)",
    "lax.linalg.symmetric_product(R, jnp.ones((4, 4)), symmetrize_output=True)",
    "lax.linalg.cholesky_update(jnp.array([[2., 1], [0, 3]]), jnp.array([1., 1]))",
    "lax.linalg.qdwh(R)",
]


def _geqrf(x):
  import scipy.linalg
  qr_, tau, _, _ = scipy.linalg.lapack.sgeqrf(np.asarray(x, np.float32))
  return qr_, tau


@pytest.mark.parametrize("expr", LAX_CASES)
def test_lax_linalg_against_jax(expr, jax):
  import jax.lax as jlax
  env = dict(ENV, jax_geqrf=_geqrf)
  env_p = dict(env, lax=plax)
  env_j = dict(env, lax=jlax)
  # the expression names `lax`: evaluate with each library's lax
  import jax.numpy as jjnp
  rp, ep = run(lambda: eval(expr, dict(env_p, jnp=pjnp)))
  rj, ej = run(lambda: eval(expr, dict(env_j, jnp=jjnp)))
  if ej is not None:
    if type(ej).__name__ in ("MLIRError", "JaxRuntimeError", "NotImplementedError"):
      return  # JAX fails while lowering (e.g. unsupported on CPU); pyjax may compute it
    assert ep is not None and isinstance(ep, type(ej)), (ep, ej)
    assert str(ep).split("\n")[0] == str(ej).split("\n")[0]
    return
  assert ep is None, ep
  if "eig(" in expr and "eigh" not in expr:
    # eigenvectors are defined up to a phase; LAPACK builds may differ in it
    compare(rp[0], rj[0], rtol=1e-4, atol=1e-4)
    return
  compare(rp, rj, rtol=2e-4, atol=2e-4)


def test_lax_linalg_jaxpr_params():
  x = np.eye(3, dtype=np.float32)
  text = str(pyjax.make_jaxpr(lambda x: plax.linalg.svd(x))(x))
  assert "svd[" in text and "compute_uv=True" in text and "full_matrices=True" in text
  text = str(pyjax.make_jaxpr(lambda x: plax.linalg.eigh(x))(x))
  assert "lower=True" in text and "sort_eigenvalues=True" in text and "subset_by_index=None" in text
  text = str(pyjax.make_jaxpr(lambda x: plax.linalg.triangular_solve(x, x, left_side=True))(x))
  for p in ("conjugate_a=False", "left_side=True", "lower=False", "transpose_a=False",
            "unit_diagonal=False"):
    assert p in text
  text = str(pyjax.make_jaxpr(lambda x: plax.linalg.lu(x))(x))
  assert "b:f32[3,3] c:i32[3] d:i32[3] = lu a" in text


def test_lax_linalg_cholesky_jaxpr_matches_jax(jax):
  x = np.eye(3, dtype=np.float32)
  assert str(pyjax.make_jaxpr(plax.linalg.cholesky)(x)) == \
      str(jax.make_jaxpr(jax.lax.linalg.cholesky)(x))


def test_lax_linalg_vmap():
  from pyjax._src.api_vmap import vmap
  a = rand((5, 3, 3)) + 3 * np.eye(3, dtype=np.float32)
  at = np.moveaxis(a, 0, 2)
  np.testing.assert_allclose(vmap(plax.linalg.cholesky, in_axes=2)(np.moveaxis(spd(3, (5,)), 0, 2)),
                             np.linalg.cholesky(spd(3, (5,))), rtol=1e-4, atol=1e-4)
  lu, piv, perm = vmap(plax.linalg.lu, in_axes=2)(at)
  ref = plax.linalg.lu(a)
  np.testing.assert_allclose(lu, ref[0], rtol=1e-6)
  np.testing.assert_array_equal(perm, ref[2])
  b = rand((5, 3, 2), seed=1)
  x = vmap(lambda bb: plax.linalg.triangular_solve(a[0], bb, left_side=True, lower=True))(b)
  np.testing.assert_allclose(np.tril(a[0]) @ np.asarray(x), b, rtol=1e-4, atol=1e-4)
  np.testing.assert_allclose(vmap(PL.inv, in_axes=2)(at), np.linalg.inv(a), rtol=1e-4, atol=1e-4)
  np.testing.assert_allclose(vmap(PL.svdvals, in_axes=2)(at), np.linalg.svd(a, compute_uv=False),
                             rtol=1e-4, atol=1e-4)



def test_lax_primitives_without_jax_rules():
  """cholesky_update and symmetric_product have JVPs here (JAX has none): check them
  against finite differences."""
  rng = np.random.RandomState(0)
  r = np.triu(rng.randn(4, 4)) + 4 * np.eye(4)
  w = rng.randn(4)
  a, c = rng.randn(2, 4, 3), rng.randn(2, 4, 4)
  cases = [(plax.linalg.cholesky_update, (r, w)),
           (lambda a, c: plax.linalg.symmetric_product(a, c, alpha=1.5, beta=-.5), (a, c)),
           (lambda a, c: plax.linalg.symmetric_product(a, c, symmetrize_output=True), (a, c))]
  prev = pyjax.config.jax_enable_x64
  pyjax.config.update("jax_enable_x64", True)
  try:
    for f, args in cases:
      ts = tuple(rng.randn(*x.shape) for x in args)
      if f is plax.linalg.cholesky_update:
        ts = (np.triu(ts[0]), ts[1])
      _, t = pyjax.jvp(f, args, ts)
      eps = 1e-6
      fd = (np.asarray(f(*[x + eps * d for x, d in zip(args, ts)])) -
            np.asarray(f(*[x - eps * d for x, d in zip(args, ts)]))) / (2 * eps)
      np.testing.assert_allclose(np.asarray(t), fd, rtol=1e-5, atol=1e-6)
  finally:
    pyjax.config.update("jax_enable_x64", prev)


