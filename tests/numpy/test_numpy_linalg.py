"""jnp.linalg and lax.linalg: values against NumPy (always) and against real JAX
(values, dtypes, weak types, errors), hypothesis over shapes with 0/1-sized and batch
dimensions, derivatives against jax.grad/jax.jvp, jit and vmap."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import pyjax
import pyjax.numpy as pjnp
from pyjax import lax as plax
from jax_compare import check_both

PL = pjnp.linalg
SETTINGS = settings(max_examples=10, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def rand(shape, dtype=np.float32, seed=0):
  rng = np.random.RandomState(seed)
  x = rng.randn(*shape)
  if np.dtype(dtype).kind == "c":
    x = x + 1j * rng.randn(*shape)
  return x.astype(dtype)


def spd(n, batch=(), dtype=np.float32, seed=0):
  a = rand(batch + (n, n), dtype, seed)
  return (a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)).astype(dtype)


def tol(dtype):
  return dict(rtol=2e-4, atol=2e-4) if np.dtype(dtype) in (np.float32, np.complex64) else \
      dict(rtol=1e-10, atol=1e-10)


# --- NumPy known answers (no JAX needed) ----------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
@pytest.mark.parametrize("batch", [(), (3,), (2, 1)])
def test_against_numpy(dtype, batch):
  a = rand(batch + (4, 4), dtype)
  b = rand(batch + (4, 2), dtype, 1)
  s = spd(4, batch, dtype)
  t = tol(dtype)
  np.testing.assert_allclose(PL.inv(a), np.linalg.inv(a), **t)
  np.testing.assert_allclose(PL.solve(a, b), np.linalg.solve(a, b), **t)
  np.testing.assert_allclose(PL.det(a), np.linalg.det(a), **t)
  sign, logdet = PL.slogdet(a)
  ns, nl = np.linalg.slogdet(a)
  np.testing.assert_allclose(sign, ns, **t)
  np.testing.assert_allclose(logdet, nl, **t)
  np.testing.assert_allclose(PL.cholesky(s), np.linalg.cholesky(s), **t)
  np.testing.assert_allclose(PL.eigvalsh(s), np.linalg.eigvalsh(s), **t)
  w, v = PL.eigh(s)
  np.testing.assert_allclose(np.asarray(s) @ np.asarray(v), np.asarray(v) * np.asarray(w)[..., None, :], **t)
  np.testing.assert_allclose(PL.svd(a, compute_uv=False), np.linalg.svd(a, compute_uv=False), **t)
  u, sv, vh = PL.svd(a)
  np.testing.assert_allclose(np.asarray(u) * np.asarray(sv)[..., None, :] @ np.asarray(vh), a, **t)
  q, r = PL.qr(a)
  np.testing.assert_allclose(np.asarray(q) @ np.asarray(r), a, **t)
  np.testing.assert_allclose(np.tril(np.asarray(r), -1), 0, atol=1e-6)
  np.testing.assert_allclose(PL.pinv(a), np.linalg.pinv(a), rtol=2e-3, atol=2e-3)
  np.testing.assert_allclose(PL.matrix_power(a, 3), np.linalg.matrix_power(a, 3), **t)
  np.testing.assert_allclose(PL.matrix_power(a, -2), np.linalg.matrix_power(a, -2),
                             rtol=2e-3, atol=2e-3)
  np.testing.assert_allclose(PL.norm(a, axis=(-2, -1)), np.linalg.norm(a, axis=(-2, -1)), **t)
  np.testing.assert_array_equal(PL.matrix_rank(a), np.linalg.matrix_rank(a))
  w = PL.eigvals(a)
  np.testing.assert_allclose(np.sort_complex(np.asarray(w).ravel()),
                             np.sort_complex(np.linalg.eigvals(a).ravel()), **t)


@pytest.mark.parametrize("ord", [None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf])
def test_matrix_norms_numpy(ord):
  a = rand((3, 5))
  np.testing.assert_allclose(PL.norm(a, ord), np.linalg.norm(a, ord), rtol=1e-5)
  np.testing.assert_allclose(PL.norm(a, ord, keepdims=True), np.linalg.norm(a, ord, keepdims=True),
                             rtol=1e-5)


@pytest.mark.parametrize("ord", [None, 0, 1, 2, 3, 0.5, -1, np.inf, -np.inf])
def test_vector_norms_numpy(ord):
  a = rand((4, 6))
  np.testing.assert_allclose(PL.norm(a, ord, axis=1), np.linalg.norm(a, ord, axis=1), rtol=1e-5)
  np.testing.assert_allclose(PL.vector_norm(a, ord=2 if ord is None else ord, axis=0),
                             np.linalg.vector_norm(a, ord=2 if ord is None else ord, axis=0),
                             rtol=1e-5)


def test_lstsq_tensors_numpy():
  a, b = rand((6, 3)), rand((6, 2), seed=1)
  x, res, rank, s = PL.lstsq(a, b)
  nx, nres, nrank, ns = np.linalg.lstsq(a, b, rcond=None)
  np.testing.assert_allclose(x, nx, rtol=1e-4, atol=1e-5)
  np.testing.assert_allclose(res, nres, rtol=1e-3)
  assert int(rank) == nrank
  np.testing.assert_allclose(s, ns, rtol=1e-5)
  t = rand((2, 3, 6)) + np.eye(6).reshape(2, 3, 6) * 3
  np.testing.assert_allclose(PL.tensorinv(t, ind=2), np.linalg.tensorinv(t, ind=2), rtol=1e-4,
                             atol=1e-5)
  np.testing.assert_allclose(PL.tensorsolve(t, rand((2, 3))), np.linalg.tensorsolve(t, rand((2, 3))),
                             rtol=1e-4, atol=1e-5)
  ms = [rand((3, 4)), rand((4, 5), seed=1), rand((5, 2), seed=2)]
  np.testing.assert_allclose(PL.multi_dot(ms), np.linalg.multi_dot(ms), rtol=1e-5, atol=1e-5)
  np.testing.assert_allclose(PL.cond(ms[0][:, :3]), np.linalg.cond(ms[0][:, :3]), rtol=1e-4)


def test_singular_and_nonfinite_inputs():
  sing = np.array([[1., 2], [2, 4]], np.float32)
  assert float(PL.det(sing)) == 0
  sign, logdet = PL.slogdet(sing)
  assert float(sign) == 0 and float(logdet) == -np.inf
  assert np.isinf(float(PL.cond(sing))) or float(PL.cond(sing)) > 1e6
  # non-positive-definite cholesky: NaN lower triangle (XLA's CPU behaviour)
  L = np.asarray(PL.cholesky(-np.eye(2, dtype=np.float32)))
  assert np.isnan(L[np.tril_indices(2)]).all() and (L[np.triu_indices(2, 1)] == 0).all()
  nanm = np.full((3, 3), np.nan, np.float32)
  assert np.isnan(np.asarray(PL.eigh(nanm)[0])).all()
  assert np.isnan(np.asarray(PL.svd(nanm, compute_uv=False))).all()
  assert np.isnan(np.asarray(PL.inv(nanm))).all()


# --- against JAX ----------------------------------------------------------------------------------
A = rand((3, 3))
B = rand((2, 4, 4), seed=1)
R = rand((4, 3), seed=2)
S = spd(3)
ENV = dict(A=A, B=B, R=R, S=S, C=rand((3, 3), np.complex64, 3))

JAX_CASES = [
    "jnp.linalg.inv(A)", "jnp.linalg.inv(B)", "jnp.linalg.inv(jnp.eye(2, dtype=int))",
    "jnp.linalg.inv(jnp.ones((2, 3)))", "jnp.linalg.inv(jnp.ones(3))", "jnp.linalg.inv([[1., 2], [3, 4]])",
    "jnp.linalg.inv(jnp.ones((0, 0)))", "jnp.linalg.inv(C)",
    "jnp.linalg.solve(A, jnp.ones(3))", "jnp.linalg.solve(B, jnp.ones(4))",
    "jnp.linalg.solve(B, jnp.ones((4, 2)))", "jnp.linalg.solve(B, jnp.ones((5, 1, 4, 2)))",
    "jnp.linalg.solve(jnp.ones((2, 3, 3)), jnp.ones((2, 3)))", "jnp.linalg.solve(jnp.ones((3, 3)), jnp.ones(4))",
    "jnp.linalg.solve(jnp.ones(3), jnp.ones(3))", "jnp.linalg.solve(jnp.ones((3, 4)), jnp.ones((3, 4)))",
    "jnp.linalg.det(A)", "jnp.linalg.det(B)", "jnp.linalg.det(A[:2, :2])", "jnp.linalg.det(jnp.ones((0, 0)))",
    "jnp.linalg.det(jnp.eye(3, dtype=int))", "jnp.linalg.det(jnp.ones((2, 3)))", "jnp.linalg.det(2.)", "jnp.linalg.det(C)",
    "jnp.linalg.slogdet(A)", "jnp.linalg.slogdet(B)", "jnp.linalg.slogdet(B, method='qr')",
    "jnp.linalg.slogdet(C)", "jnp.linalg.slogdet(jnp.ones((3, 3)))", "jnp.linalg.slogdet(jnp.ones((0, 0)))",
    "jnp.linalg.slogdet(jnp.eye(3), method='foo')", "jnp.linalg.slogdet(C, method='qr')",
    "jnp.linalg.slogdet(jnp.ones((2, 3)))",
    "jnp.linalg.eigh(S)", "jnp.linalg.eigh(S, UPLO='U')", "jnp.linalg.eigh(jnp.eye(3), UPLO='X')",
    "jnp.linalg.eigvalsh(S)", "jnp.linalg.eigh(jnp.ones((0, 0)))", "jnp.linalg.eigh(jnp.ones(3))",
    "jnp.linalg.eigvals(A)", "jnp.linalg.eigvals(jnp.ones((3, 3), int))", "jnp.linalg.eig(S)",
    "jnp.linalg.cholesky(S)", "jnp.linalg.cholesky(S, upper=True)", "jnp.linalg.cholesky(ENVC @ ENVC.conj().T + 3 * jnp.eye(3))",
    "jnp.linalg.svd(R)", "jnp.linalg.svd(R, full_matrices=False)", "jnp.linalg.svd(R, compute_uv=False)",
    "jnp.linalg.svd(S, hermitian=True)", "jnp.linalg.svd(S - 5 * jnp.eye(3), hermitian=True)",
    "jnp.linalg.svd(jnp.ones((3, 3)), hermitian=True, compute_uv=False)", "jnp.linalg.svd(jnp.ones((0, 3)))",
    "jnp.linalg.svdvals(B)", "jnp.linalg.svdvals(jnp.ones(3))",
    "jnp.linalg.qr(R)", "jnp.linalg.qr(R, mode='r')", "jnp.linalg.qr(R, mode='raw')", "jnp.linalg.qr(R, mode='complete')",
    "jnp.linalg.qr(jnp.ones((3, 2)), mode='x')", "jnp.linalg.qr(jnp.ones(3))", "jnp.linalg.qr(jnp.ones((0, 3)))",
    "jnp.linalg.norm(R)", "jnp.linalg.norm(B)", "jnp.linalg.norm(B, axis=1)", "jnp.linalg.norm(B, 3, axis=-1)",
    "jnp.linalg.norm(B, 0, axis=-1)", "jnp.linalg.norm(B, 0.5, axis=-1, keepdims=True)",
    "jnp.linalg.norm(R, 2)", "jnp.linalg.norm(R, -2)", "jnp.linalg.norm(R, 'nuc')", "jnp.linalg.norm(R, 1)",
    "jnp.linalg.norm(R, -1)", "jnp.linalg.norm(R, jnp.inf)", "jnp.linalg.norm(R, -jnp.inf, keepdims=True)",
    "jnp.linalg.norm(R, 1, axis=(1, 0), keepdims=True)", "jnp.linalg.norm(jnp.ones(3, int))", "jnp.linalg.norm(3)",
    "jnp.linalg.norm(jnp.ones(3) * (1 + 1j))", "jnp.linalg.norm(jnp.ones((2, 3)), 'x')",
    "jnp.linalg.norm(jnp.ones((2, 3)), 3, axis=(0, 1))", "jnp.linalg.norm(jnp.ones((2, 3, 4)), axis=(0, 1, 2))",
    "jnp.linalg.norm(jnp.ones(3), 'inf')", "jnp.linalg.norm(jnp.ones(3), 'fro')", "jnp.linalg.norm(jnp.ones((0, 3)), 2)",
    "jnp.linalg.norm(jnp.ones((0, 3)), -1)", "jnp.linalg.vector_norm(B, ord=1)",
    "jnp.linalg.vector_norm(B, ord=jnp.inf, keepdims=True)", "jnp.linalg.vector_norm(B, ord=-jnp.inf, axis=(0, 2))",
    "jnp.linalg.vector_norm(jnp.ones(3), ord='fro')", "jnp.linalg.matrix_norm(B, ord=2)",
    "jnp.linalg.matrix_norm(B, ord='nuc', keepdims=True)", "jnp.linalg.matrix_norm(jnp.ones(3))",
    "jnp.linalg.matrix_power(A, 5)", "jnp.linalg.matrix_power(A, -3)", "jnp.linalg.matrix_power(jnp.ones((3, 3), int), 2)",
    "jnp.linalg.matrix_power(jnp.ones((3, 3), int), 0)", "jnp.linalg.matrix_power(jnp.ones((2, 3)), 2)",
    "jnp.linalg.matrix_power(jnp.ones((3, 3)), 2.5)", "jnp.linalg.matrix_power(jnp.ones(3), 0)",
    "jnp.linalg.matrix_rank(jnp.ones((3, 3)))", "jnp.linalg.matrix_rank(jnp.ones(3))",
    "jnp.linalg.matrix_rank(jnp.ones((3, 3)), tol=0.1)", "jnp.linalg.matrix_rank(jnp.ones((2, 3, 3)), rtol=jnp.ones(2))",
    "jnp.linalg.matrix_rank(B, hermitian=True)",
    "jnp.linalg.multi_dot([R, A, R.T, R])", "jnp.linalg.multi_dot([jnp.ones(3), jnp.ones((3, 4)), jnp.ones(4)])",
    "jnp.linalg.multi_dot([jnp.ones(3)])", "jnp.linalg.multi_dot([jnp.ones((2, 3, 3)), jnp.ones((3, 3))])",
    "jnp.linalg.multi_dot([jnp.ones((2, 3)), jnp.ones((2, 3))])",
    "jnp.linalg.pinv(R)", "jnp.linalg.pinv(B)", "jnp.linalg.pinv(S, hermitian=True)", "jnp.linalg.pinv(jnp.ones((0, 3)))",
    "jnp.linalg.pinv(jnp.ones((3, 3)), rcond=0.1)", "jnp.linalg.pinv(jnp.ones(3))",
    "jnp.linalg.lstsq(R, jnp.ones(4))", "jnp.linalg.lstsq(R, jnp.ones((4, 2)))", "jnp.linalg.lstsq(jnp.ones((3, 2)), jnp.ones(4))",
    "jnp.linalg.lstsq(jnp.ones((3, 2)), jnp.ones(3), numpy_resid=True)", "jnp.linalg.lstsq(jnp.ones((0, 2)), jnp.ones(0))",
    "jnp.linalg.lstsq(jnp.ones((3, 2)), jnp.ones((3, 2, 2)))", "jnp.linalg.lstsq(R, jnp.ones(4), rcond=-1)",
    "jnp.linalg.tensorinv(jnp.ones((2, 3, 6)), ind=1)", "jnp.linalg.tensorinv(jnp.ones((2, 3, 6)), ind=0)",
    "jnp.linalg.tensorsolve(jnp.ones((2, 3, 6)), jnp.ones((3, 2)))",
    "jnp.linalg.tensorsolve(jnp.arange(36.).reshape(6, 2, 3) ** 0.5 + jnp.eye(6).reshape(6, 2, 3) * 3, jnp.ones((2, 3)), axes=(0,))",
    "jnp.linalg.cond(A)", "jnp.linalg.cond(A, p=-2)", "jnp.linalg.cond(A, p=1)", "jnp.linalg.cond(A, p='fro')",
    "jnp.linalg.cond(jnp.array([[1., jnp.nan], [1, 1]]))", "jnp.linalg.cond(jnp.ones(3))", "jnp.linalg.cond(jnp.ones((0, 3)))",
    "jnp.linalg.cond(jnp.ones((2, 3)), p=1)",
    "jnp.linalg.cross(jnp.ones((2, 3)), jnp.arange(3.))", "jnp.linalg.cross(jnp.ones(2), jnp.ones(3))",
    "jnp.linalg.cross([1, 2, 3], jnp.ones(3))", "jnp.linalg.diagonal(B, offset=1)", "jnp.linalg.diagonal(jnp.ones(3))",
    "jnp.linalg.matrix_transpose(B)", "jnp.linalg.matrix_transpose(jnp.ones(3))", "jnp.linalg.outer(jnp.ones(3), jnp.ones(2, int))",
    "jnp.linalg.outer(jnp.ones((2, 2)), jnp.ones(2))", "jnp.linalg.trace(jnp.ones((2, 3, 3)), offset=1, dtype=int)",
    "jnp.linalg.trace(jnp.ones(3))", "jnp.linalg.vecdot(jnp.ones(3), jnp.ones(3))",
    "jnp.linalg.tensordot(jnp.ones((2, 3)), jnp.ones((3, 2)), axes=1)", "jnp.linalg.matmul(B, B)",
]


@pytest.mark.parametrize("expr", JAX_CASES)
def test_against_jax(expr, jax):
  env = dict(ENV, ENVC=ENV["C"])
  check_both(expr, env, jax, rtol=2e-4, atol=2e-4)


@pytest.mark.parametrize("expr", ["jnp.linalg.det(A)", "jnp.linalg.inv(B)", "jnp.linalg.solve(B, jnp.ones(4))",
                                  "jnp.linalg.slogdet(B)", "jnp.linalg.svd(R, full_matrices=False)",
                                  "jnp.linalg.eigh(S)", "jnp.linalg.norm(R, 2)", "jnp.linalg.pinv(R)",
                                  "jnp.linalg.qr(R)", "jnp.linalg.cholesky(S)"])
def test_under_jit(expr, jax):
  check_both(expr, ENV, jax, rtol=2e-4, atol=2e-4, jit=True)


# --- hypothesis: shapes with 0/1-sized and batch dimensions ---------------------------------------
batch_st = st.lists(st.integers(0, 2), min_size=0, max_size=2).map(tuple)


@SETTINGS
@given(batch=batch_st, n=st.integers(0, 4), dtype=st.sampled_from([np.float32, np.complex64]))
def test_square_functions_property(batch, n, dtype):
  a = rand(batch + (n, n), dtype) + 2 * n * np.eye(n, dtype=dtype)
  t = tol(dtype)
  if n == 0 or 0 in batch:
    assert PL.inv(a).shape == a.shape
    assert PL.det(a).shape == batch
    return
  np.testing.assert_allclose(PL.inv(a), np.linalg.inv(a), **t)
  np.testing.assert_allclose(PL.det(a), np.linalg.det(a), rtol=1e-3, atol=1e-3)
  np.testing.assert_allclose(PL.slogdet(a)[1], np.linalg.slogdet(a)[1], **t)
  s = spd(n, batch, dtype)
  np.testing.assert_allclose(PL.cholesky(s), np.linalg.cholesky(s), **t)
  np.testing.assert_allclose(PL.eigvalsh(s), np.linalg.eigvalsh(s), **t)


@SETTINGS
@given(batch=batch_st, m=st.integers(0, 4), n=st.integers(0, 4),
       dtype=st.sampled_from([np.float32, np.complex64]), full=st.booleans())
def test_rectangular_functions_property(batch, m, n, dtype, full):
  a = rand(batch + (m, n), dtype)
  k = min(m, n)
  s = PL.svd(a, compute_uv=False)
  assert s.shape == batch + (k,)
  q, r = PL.qr(a, mode="complete" if full else "reduced")
  assert q.shape == batch + (m, m if full else k) and r.shape == batch + ((m if full else k), n)
  if a.size:
    np.testing.assert_allclose(s, np.linalg.svd(a, compute_uv=False), **tol(dtype))
    np.testing.assert_allclose(np.asarray(q) @ np.asarray(r), a, **tol(dtype))
    u, s2, vh = PL.svd(a, full_matrices=full)
    kk = k
    np.testing.assert_allclose(np.asarray(u)[..., :, :kk] * np.asarray(s2)[..., None, :] @
                               np.asarray(vh)[..., :kk, :], a, **tol(dtype))
  lu, piv, perm = plax.linalg.lu(a)
  assert lu.shape == a.shape and piv.shape == batch + (k,) and perm.shape == batch + (m,)
  if a.size:
    lu_, perm_ = np.asarray(lu), np.asarray(perm)
    L = np.tril(lu_[..., :, :k], -1) + np.eye(m, k, dtype=dtype)
    U = np.triu(lu_[..., :k, :])
    np.testing.assert_allclose(L @ U, np.take_along_axis(a, perm_[..., None], axis=-2), **tol(dtype))


@SETTINGS
@given(batch=batch_st, n=st.integers(1, 4), k=st.integers(0, 3), left=st.booleans(),
       lower=st.booleans(), trans=st.booleans(), unit=st.booleans())
def test_triangular_solve_property(batch, n, k, left, lower, trans, unit):
  a = rand(batch + (n, n)) + 3 * np.eye(n, dtype=np.float32)
  b = rand(batch + ((n, k) if left else (k, n)), seed=1)
  x = np.asarray(plax.linalg.triangular_solve(a, b, left_side=left, lower=lower,
                                              transpose_a=trans, unit_diagonal=unit))
  t = np.tril(a) if lower else np.triu(a)
  if unit:
    idx = np.arange(n)
    t[..., idx, idx] = 1
  op = np.swapaxes(t, -1, -2) if trans else t
  got = op @ x if left else x @ op
  np.testing.assert_allclose(got, b, rtol=1e-4, atol=1e-4)


@SETTINGS
@given(n=st.integers(1, 4), batch=batch_st)
def test_nan_inputs_property(n, batch):
  a = np.full(batch + (n, n), np.nan, np.float32)
  for f in (PL.inv, PL.det, lambda x: PL.eigh(x)[0], PL.svdvals):
    out = np.asarray(f(a))
    assert np.isnan(out).all()


# --- derivatives against JAX ----------------------------------------------------------------------
GRAD_CASES = [
    ("L.det(x)", rand((3, 3))), ("L.det(x)", rand((4, 4))), ("L.det(x)", rand((2, 2))),
    ("L.det(x)", np.array([[1., 2, 3], [2, 4, 6], [1, 0, 1]])),          # rank n-1
    ("L.det(x)", np.outer([1., 2, 3], [1., 1, 1])),                      # rank 1
    ("L.slogdet(x)[1]", rand((2, 4, 4))), ("L.slogdet(x, method='qr')[1]", rand((4, 4))),
    ("L.inv(x)", rand((2, 3, 3))), ("L.solve(x, y)", rand((3, 3)), rand((3, 2), seed=1)),
    ("L.solve(x, y)", rand((3, 3)), rand((3,), seed=1)),
    ("L.pinv(x)", rand((4, 3))), ("L.norm(x)", rand((4, 3))), ("L.norm(x, 2)", rand((4, 3))),
    ("L.norm(x, 'nuc')", rand((4, 3))), ("L.norm(x, 1)", rand((4, 3))),
    ("L.norm(x, 3, axis=0)", rand((4, 3))), ("L.lstsq(x, y)[0]", rand((4, 3)), rand((4,), seed=1)),
    ("L.eigh(x)[0]", spd(3)), ("L.eigh(x)[1] ** 2", spd(3)), ("L.svd(x, compute_uv=False)", rand((4, 3))),
    ("L.svd(x, full_matrices=False)[0] ** 2", rand((4, 3))), ("L.svd(x, full_matrices=False)[2] ** 2", rand((3, 4))),
    ("L.cond(x)", rand((3, 3))), ("L.matrix_power(x, 5)", rand((3, 3))),
    ("L.matrix_power(x, -2)", rand((3, 3)) + 3 * np.eye(3)), ("L.cholesky(x)", spd(3)),
    ("jnp.real(L.eigvals(x))", spd(3)), ("L.qr(x)[0]", rand((4, 3))), ("L.qr(x)[1]", rand((4, 3))),
    ("L.tensorinv(x, ind=1)", rand((3, 3))), ("L.multi_dot([x, y, y.T])", rand((3, 3)), rand((3, 4), seed=1)),
    ("L.svd(x, hermitian=True)[1]", spd(3)),
    ("lax.linalg.triangular_solve(x, y, left_side=True, lower=True)", rand((3, 3)) + 3 * np.eye(3), rand((3, 2), seed=1)),
    ("lax.linalg.triangular_solve(x, y, transpose_a=True, unit_diagonal=True)", rand((3, 3)), rand((2, 3), seed=1)),
    ("lax.linalg.lu(x)[0]", rand((3, 4))), ("lax.linalg.lu(x)[0]", rand((4, 3))),
    ("lax.linalg.qr(x, pivoting=True, full_matrices=False)[1]", rand((4, 3))),
    ("lax.linalg.tridiagonal_solve(x[0], x[1] + 5, x[2], y)", rand((3, 5)), rand((5, 2), seed=1)),
    ("jnp.real(lax.linalg.eig(x, compute_left_eigenvectors=False, enable_eigvec_derivs=True)[1]) ** 2", rand((3, 3))),
]


FAST_GRADS = {"L.det(x)", "L.inv(x)", "L.solve(x, y)", "L.eigh(x)[0]", "L.cholesky(x)",
              "L.svd(x, compute_uv=False)", "L.norm(x, 2)", "L.qr(x)[1]",
              "lax.linalg.triangular_solve(x, y, left_side=True, lower=True)"}
GRAD_PARAMS = [pytest.param(c, id=f"{c[0]}-{i}",
                            marks=() if c[0] in FAST_GRADS and i not in (1, 2) else pytest.mark.slow)
               for i, c in enumerate(GRAD_CASES)]


@pytest.mark.parametrize("case", GRAD_PARAMS)
def test_grad_against_jax(case, jax, x64):
  import jax.lax as jlax
  import jax.numpy as jjnp
  expr, *args = case
  args = [np.asarray(a, np.float64) for a in args]
  names = ["x", "y"][:len(args)]

  def make(jnp_mod, lax_mod):
    f = eval(f"lambda {','.join(names)}: " + expr,
             dict(L=jnp_mod.linalg, jnp=jnp_mod, lax=lax_mod))
    return lambda *a: jnp_mod.sum(jnp_mod.sin(f(*a)))
  gj = jax.grad(make(jjnp, jlax), argnums=tuple(range(len(args))))(*args)
  gp = pyjax.grad(make(pjnp, plax), argnums=tuple(range(len(args))))(*args)
  for a, b in zip(gp, gj):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-7, atol=1e-9)
  # forward mode too
  tangents = [np.random.RandomState(7).randn(*a.shape) for a in args]
  f_p = eval(f"lambda {','.join(names)}: " + expr, dict(L=PL, jnp=pjnp, lax=plax))
  f_j = eval(f"lambda {','.join(names)}: " + expr, dict(L=jjnp.linalg, jnp=jjnp, lax=jlax))
  _, tp = pyjax.jvp(f_p, tuple(args), tuple(tangents))
  _, tj = jax.jvp(f_j, tuple(args), tuple(tangents))
  for a, b in zip(jax.tree_util.tree_leaves(tp), jax.tree_util.tree_leaves(tj)):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-7, atol=1e-9)


@pytest.mark.slow
def test_complex_grads_against_jax(jax, x64):
  import jax.numpy as jjnp
  c = rand((3, 3), np.complex128)
  h = c @ c.conj().T + 3 * np.eye(3)
  for expr, x in [("L.cholesky(x)", h), ("L.eigh(x)[0]", h), ("L.svd(x, compute_uv=False)", c),
                  ("L.slogdet(x)[1]", c), ("L.inv(x)", c), ("L.det(x)", c)]:
    fp = eval("lambda x: " + expr, dict(L=PL))
    fj = eval("lambda x: " + expr, dict(L=jjnp.linalg))
    gp = pyjax.grad(lambda x: pjnp.sum(pjnp.abs(fp(x)) ** 2))(x)
    gj = jax.grad(lambda x: jjnp.sum(jjnp.abs(fj(x)) ** 2))(x)
    np.testing.assert_allclose(np.asarray(gp), np.asarray(gj), rtol=1e-7, atol=1e-9, err_msg=expr)


def test_float16_rejected():
  with pytest.raises(NotImplementedError, match="Unsupported dtype float16"):
    PL.inv(np.eye(2, dtype=np.float16))
