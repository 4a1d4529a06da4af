"""pyjax.scipy.linalg against real JAX (values, dtypes, weak types, errors, gradients) and
against scipy.linalg."""
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import pyjax
import pyjax.scipy.linalg as pla
from jax_compare import check

sla = pytest.importorskip("scipy.linalg")

SETTINGS = settings(max_examples=6, deadline=None, derandomize=True,
                    suppress_health_check=list(HealthCheck))
R = np.random.RandomState(0)
A = R.randn(4, 4).astype(np.float32)
SPD = (A @ A.T + 4 * np.eye(4)).astype(np.float32)
B = R.randn(4, 3).astype(np.float32)
b = R.randn(4).astype(np.float32)
AB = R.randn(2, 4, 4).astype(np.float32)
UT = (np.triu(A) + 4 * np.eye(4)).astype(np.float32)
LT = UT.T.copy()
TOL = 2e-4


def _np(t):
  return tuple(np.asarray(x) for x in t)


CASES = [
    ("cholesky", (SPD,), {}), ("cholesky", (SPD,), {"lower": True}),
    ("cho_factor", (SPD,), {"lower": True}),
    ("svd", (A,), {}), ("svd", (A[:, :3],), {"full_matrices": False}),
    ("svd", (A,), {"compute_uv": False}), ("det", (A,), {}), ("det", (AB,), {}),
    ("eigh", (SPD,), {}), ("eigh", (SPD,), {"eigvals_only": True, "lower": False}),
    ("schur", (A,), {}), ("schur", (A,), {"output": "complex"}), ("inv", (A,), {}),
    ("lu_factor", (A,), {}), ("lu", (A,), {}), ("lu", (A,), {"permute_l": True}),
    ("lu", (A[:3],), {}), ("lu", (A[:, :3],), {}),
    ("qr", (A,), {}), ("qr", (A[:, :3],), {"mode": "economic"}), ("qr", (A,), {"mode": "r"}),
    ("qr", (A,), {"pivoting": True}),
    ("qr_multiply", (A, B.T), {}), ("qr_multiply", (A, B), {"mode": "left"}),
    ("qr_multiply", (A[:, :3], B[:3].T), {}), ("qr_multiply", (A, b), {"conjugate": True}),
    ("solve", (A, b), {}), ("solve", (A, B), {}), ("solve", (SPD, B), {"assume_a": "pos"}),
    ("solve", (SPD, b), {"assume_a": "pos", "lower": True}),
    ("solve_triangular", (UT, B), {}), ("solve_triangular", (LT, b), {"lower": True}),
    ("solve_triangular", (UT, B), {"trans": "T"}), ("solve_triangular", (UT, b), {"trans": 2}),
    ("solve_triangular", (UT, B), {"unit_diagonal": True}),
    ("expm", (A,), {}), ("expm", (10 * A,), {}), ("expm", (AB,), {}),
    ("expm", (np.triu(A),), {"upper_triangular": True}),
    ("expm_frechet", (0.3 * A, np.outer(b, b).astype(np.float32)), {}),
    ("expm_frechet", (0.3 * A, B[:, :1] @ B[:, :1].T), {"compute_expm": False}),
    ("block_diag", (A[:2, :3], b, np.float32(3)), {}), ("block_diag", (), {}),
    ("sqrtm", (SPD,), {}), ("hessenberg", (A,), {}), ("hessenberg", (A,), {"calc_q": True}),
    ("polar", (A,), {}), ("polar", (A,), {"method": "svd", "side": "left"}),
    ("polar", (A[:, :3],), {}),
    ("solve_sylvester", (A, SPD, B[:, :1] @ B[:, :1].T), {}),
    ("solve_sylvester", (SPD, SPD, A), {"method": "eigen"}),
]
FAST = {0, 3, 6, 12, 14, 16, 22, 26, 28, 30, 35, 36, 39, 41, 43, 45, 46}


@pytest.mark.parametrize("i", [i if i in FAST else pytest.param(i, marks=pytest.mark.slow)
                               for i in range(len(CASES))],
                         ids=[f"{c[0]}{i}" for i, c in enumerate(CASES)])
def test_matches_jax(i):
  name, args, kw = CASES[i]
  check(lambda m: getattr(m.linalg, name)(*args, **kw), tol=TOL)


def test_lu_solve_cho_solve_rsf2csf():
  lu_piv = _np(pla.lu_factor(A))
  for kw in ({}, {"trans": 1}, {"trans": 2}):
    check(lambda m: m.linalg.lu_solve(lu_piv, B, **kw), tol=TOL)
  check(lambda m: m.linalg.lu_solve(lu_piv, b), tol=TOL)
  c = np.asarray(pla.cholesky(SPD))
  check(lambda m: m.linalg.cho_solve((c, False), B), tol=TOL)
  cl = np.asarray(pla.cholesky(SPD, lower=True))
  check(lambda m: m.linalg.cho_solve((cl, True), b), tol=TOL)
  T, Z = _np(pla.schur(A))
  check(lambda m: m.linalg.rsf2csf(T, Z), tol=TOL)


def test_funm_and_eigh_tridiagonal():
  check(lambda m: m.linalg.funm(SPD / 10, m.jnp.exp), tol=1e-3)
  d = R.randn(6).astype(np.float32)
  e = R.randn(5).astype(np.float32)
  check(lambda m: m.linalg.eigh_tridiagonal(d, e, eigvals_only=True), tol=TOL)
  check(lambda m: m.linalg.eigh_tridiagonal(d, e, eigvals_only=True, select="i",
                                            select_range=(1, 3)), tol=TOL)
  # eigenvectors: pyjax.random draws the same starting vectors as JAX
  check(lambda m: m.linalg.eigh_tridiagonal(d, e), tol=1e-4)


@pytest.mark.parametrize("name,args", [
    ("toeplitz", (b, B[:, 0])), ("toeplitz", (b,)), ("hankel", (b, B[:, 0])), ("hankel", (b,)),
    ("circulant", (b,)), ("circulant", (AB[:, 0],)), ("leslie", (b, b[:3])), ("companion", (b,)),
    ("fiedler", (b,)), ("fiedler_companion", (b,)), ("convolution_matrix", (b, 3)),
    ("hilbert", (4,)), ("invhilbert", (4,)), ("pascal", (5,)), ("invpascal", (4,)),
    ("helmert", (5,)), ("hadamard", (8,)), ("dft", (4,)),
])
def test_special_matrices_vs_scipy(name, args):
  got = np.asarray(getattr(pla, name)(*args))
  want = getattr(sla, name)(*[np.asarray(a, np.float64) if isinstance(a, np.ndarray) else a
                              for a in args])
  np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


C23 = R.randn(2, 3).astype(np.float32)
R24 = R.randn(2, 4).astype(np.float32)


@pytest.mark.parametrize("fn", [
    lambda m: m.linalg.toeplitz(C23, R24),
    lambda m: m.linalg.hankel(np.zeros(0, np.float32), b),
    lambda m: m.linalg.convolution_matrix(b, 6, mode="same"),
    lambda m: m.linalg.convolution_matrix(b, 6, mode="valid"),
    lambda m: m.linalg.pascal(4, kind="upper"), lambda m: m.linalg.invpascal(4, kind="lower"),
    lambda m: m.linalg.helmert(5, full=True), lambda m: m.linalg.dft(5, scale="n"),
    lambda m: m.linalg.hadamard(4, dtype=np.float32),
    lambda m: m.linalg.fiedler_companion(np.float32([1, 2, 3, 4, 5, 6])),
    lambda m: m.linalg.leslie(AB[:, 0], AB[:, 1, :3]),
])
def test_special_matrices_vs_jax(fn):
  check(fn, tol=TOL)


def test_vs_scipy_float64(x64):
  A64, S64, B64 = A.astype(np.float64), SPD.astype(np.float64), B.astype(np.float64)
  np.testing.assert_allclose(pla.expm(A64), sla.expm(A64), rtol=1e-10)
  np.testing.assert_allclose(pla.sqrtm(S64), sla.sqrtm(S64), rtol=1e-8)
  np.testing.assert_allclose(pla.cho_solve(pla.cho_factor(S64), B64),
                             sla.cho_solve(sla.cho_factor(S64), B64), rtol=1e-10)
  np.testing.assert_allclose(pla.solve_triangular(np.triu(S64), B64),
                             sla.solve_triangular(np.triu(S64), B64), rtol=1e-10)
  np.testing.assert_allclose(pla.lu_solve(pla.lu_factor(A64), B64),
                             sla.lu_solve(sla.lu_factor(A64), B64), rtol=1e-9)
  np.testing.assert_allclose(pla.funm(S64, np.cos), sla.funm(S64, np.cos), rtol=1e-8, atol=1e-10)
  C = B64[:, :1] @ B64[:, :1].T
  np.testing.assert_allclose(pla.solve_sylvester(A64, S64, C), sla.solve_sylvester(A64, S64, C),
                             rtol=1e-8, atol=1e-10)
  np.testing.assert_allclose(pla.expm_frechet(A64 * 0.3, C)[1],
                             sla.expm_frechet(A64 * 0.3, C)[1], rtol=1e-8)
  np.testing.assert_allclose(np.sort(pla.eigh_tridiagonal(np.diag(S64), np.diag(S64, 1),
                                                          eigvals_only=True)),
                             sla.eigh_tridiagonal(np.diag(S64), np.diag(S64, 1),
                                                  eigvals_only=True), rtol=1e-10)


@SETTINGS
@given(batch=st.sampled_from([(), (1,), (2,), (0,), (2, 1)]),
       name=st.sampled_from(["solve_triangular", "cho_solve", "lu_solve", "expm", "det"]))
def test_batched(batch, name):
  a = np.broadcast_to(UT, batch + (4, 4)).copy()
  rhs = np.broadcast_to(B, batch + (4, 3)).copy()
  if name == "solve_triangular":
    check(lambda m: m.linalg.solve_triangular(a, rhs), tol=TOL)
  elif name == "cho_solve":
    c = np.broadcast_to(np.asarray(pla.cholesky(SPD)), batch + (4, 4)).copy()
    check(lambda m: m.linalg.cho_solve((c, False), rhs), tol=TOL)
  elif name == "lu_solve":
    lu_, piv = _np(pla.lu_factor(a))
    check(lambda m: m.linalg.lu_solve((lu_, piv), rhs), tol=TOL)
  elif name == "expm":
    check(lambda m: m.linalg.expm(a * 0.2), tol=TOL)
  else:
    check(lambda m: m.linalg.det(a), tol=TOL)


@pytest.mark.parametrize("fn", [
    lambda m: m.top.grad(lambda a: m.linalg.expm(a).sum())(A * 0.3),
    lambda m: m.top.grad(lambda a: m.linalg.solve(a, b, assume_a="pos").sum())(SPD),
    lambda m: m.top.grad(lambda x: m.linalg.solve_triangular(UT, x).sum())(B),
    lambda m: m.top.grad(lambda a: m.linalg.cholesky(a).sum())(SPD),
    lambda m: m.top.grad(lambda a: m.linalg.det(a))(A),
    lambda m: m.top.grad(lambda a: m.linalg.lu_solve(m.linalg.lu_factor(a), b).sum())(A),
    lambda m: m.top.grad(lambda a: m.linalg.eigh(a, eigvals_only=True).sum())(SPD),
])
def test_grads(fn):
  check(fn, tol=1e-3)


@pytest.mark.parametrize("fn", [
    lambda m: m.linalg.schur(A, output="bogus"),
    lambda m: m.linalg.qr(A, mode="bogus"),
    lambda m: m.linalg.solve(A, b, assume_a="bogus"),
    lambda m: m.linalg.solve_triangular(UT, b, trans=3),
    lambda m: m.linalg.expm(A[:3]),
    lambda m: m.linalg.expm_frechet(A, A[:3, :3]),
    lambda m: m.linalg.block_diag(AB),
    lambda m: m.linalg.eigh(SPD, b=SPD),
    lambda m: m.linalg.sqrtm(SPD, blocksize=2),
    lambda m: m.linalg.polar(b),
    lambda m: m.linalg.lu_solve(_np(pla.lu_factor(A)), B, trans=5),
    lambda m: m.linalg.qr_multiply(A, B[:3], mode="left"),
    lambda m: m.linalg.hadamard(6),
    lambda m: m.linalg.helmert(0),
    lambda m: m.linalg.convolution_matrix(b, 0),
    lambda m: m.linalg.companion(np.float32([1.0])),
    lambda m: m.linalg.solve_sylvester(A, A[:3, :3], B),
    lambda m: m.linalg.eigh_tridiagonal(b, b[:3].astype(np.float64)),
])
def test_errors_match_jax(fn):
  check(fn, message=False)


def test_deprecated_batched_vector_rhs_warns():
  with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    out = pla.solve_triangular(np.stack([UT, UT]), np.stack([b, b]))
  assert any(issubclass(x.category, FutureWarning) for x in w)
  np.testing.assert_allclose(out[0], sla.solve_triangular(UT, b), rtol=1e-5)


def test_jit():
  np.testing.assert_allclose(pyjax.jit(pla.expm)(A), pla.expm(A), rtol=1e-6)
  np.testing.assert_allclose(pyjax.jit(lambda a: pla.cho_solve(pla.cho_factor(a), b))(SPD),
                             pla.cho_solve(pla.cho_factor(SPD), b), rtol=1e-6)
