"""Native sparse kernels inside jit (``backends/cpu/compiler/kernels/sparse.py``): the
sparse x dense products (BCOO, BCSR, COO, CSR, CSC; vector and matrix) and the sampled
dense-dense product compile to C (no NumPy step), give the NumPy tier's bits, and match
real JAX's values -- on random indices that include negative and out-of-range ones."""
import numpy as np
import pytest

import pyjax
from pyjax.experimental import sparse as ps
from pyjax._src.backends.cpu import executable
from pyjax._src.backends.cpu.compiler.native import build

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
js = pytest.importorskip("jax.experimental.sparse")

pytestmark = pytest.mark.skipif(build.toolchain() is None, reason="no C compiler")

M, N, NSE, K = 40, 30, 7000, 5      # NSE * K crosses the kernels' threading threshold


def _native(f, *args):
  with executable.compile_mode_override("sync"):
    jf = pyjax.jit(f)
    exe = jf.lower(*args).compile().runtime_executable()
    assert exe.tier == "native", exe.error
    steps = [s.node.prim for s in exe.native.host_steps]
    return jf(*args), steps


def _numpy(f, *args):
  with executable.compile_mode_override("off"):
    return pyjax.jit(f)(*args)


def _bits(a):
  a = np.asarray(a)
  return a.view(f"u{a.dtype.itemsize}")


def _data(seed, dtype):
  rng = np.random.default_rng(seed)
  # indices in [-n-3, n+3): negative, in range and out of range
  r = rng.integers(-M - 3, M + 3, NSE).astype(np.int32)
  c = rng.integers(-N - 3, N + 3, NSE).astype(np.int32)
  d = rng.normal(size=NSE).astype(dtype)
  x, y = rng.normal(size=N).astype(dtype), rng.normal(size=M).astype(dtype)
  X = rng.normal(size=(N, K)).astype(dtype)
  return d, r, c, x, y, X


def _check(f_py, f_jax, args, jargs, product_prims):
  got, steps = _native(f_py, *args)
  assert not set(steps) & product_prims, steps
  want = _numpy(f_py, *args)
  np.testing.assert_array_equal(_bits(got), _bits(want))
  if f_jax is None:   # JAX's result is undefined there (it reads out of bounds)
    return
  ref = np.asarray(f_jax(*jargs))
  assert np.asarray(got).dtype == ref.dtype and np.asarray(got).shape == ref.shape
  tol = 1e-5 if ref.dtype == np.float32 else 1e-12
  np.testing.assert_allclose(np.asarray(got), ref, rtol=tol, atol=tol)


@pytest.mark.parametrize("seed,dtype", [(0, np.float32), (1, np.float64)])
def test_bcoo_products(seed, dtype):
  if dtype == np.float64:
    pytest.importorskip("jax").config.update("jax_enable_x64", True)
  try:
    with pyjax.enable_x64(dtype == np.float64):
      d, r, c, x, y, X = _data(seed, dtype)
      idx = np.stack([r, c], 1)
      prims = {"bcoo_dot_general", "bcoo_dot_general_sampled"}
      cases = [
          (lambda S: (lambda d, i, v: S.BCOO((d, i), shape=(M, N)) @ v), x),
          (lambda S: (lambda d, i, v: S.BCOO((d, i), shape=(M, N)) @ v), X),
          (lambda S: (lambda d, i, v: S.bcoo_dot_general(
              S.BCOO((d, i), shape=(M, N)), v,
              dimension_numbers=(((0,), (0,)), ((), ())))), y),
      ]
      for make, v in cases:
        _check(make(ps), make(js), (d, idx, v), (d, idx, v), prims)
      # grad w.r.t. data: the sampled product at the stored indices
      for v in (x, X):
        def loss(S):
          gr = jax.grad if S is js else pyjax.grad
          return lambda d, i, v: gr(lambda d: ((S.BCOO((d, i), shape=(M, N)) @ v) ** 2).sum())(d)
        _check(loss(ps), loss(js), (d, idx, v), (d, idx, v), prims)
  finally:
    if dtype == np.float64:
      jax.config.update("jax_enable_x64", False)


def test_coo_csr_products():
  d, r, c, x, y, X = _data(2, np.float32)
  prims = {"coo_matvec", "coo_matmat", "csr_matvec", "csr_matmat"}
  for v in (x, X):
    f = lambda S: (lambda d, r, c, v: S.COO((d, r, c), shape=(M, N)) @ v)  # noqa: E731
    _check(f(ps), f(js), (d, r, c, v), (d, r, c, v), prims)
  t = lambda S: (lambda d, r, c, v: S.coo_matvec(S.COO((d, r, c), shape=(M, N)), v,  # noqa
                                                  transpose=True))
  _check(t(ps), t(js), (d, r, c, y), (d, r, c, y), prims)
  # CSR with arbitrary (unsorted, negative, too large) indptr and column indices
  rng = np.random.default_rng(3)
  ptr = np.sort(rng.integers(-5, NSE + 5, M + 1)).astype(np.int32)
  for v, tr in ((x, False), (X, False), (y, True)):
    f = lambda S, tr=tr: (lambda d, c, p, v: (S.csr_matvec if v.ndim == 1 else  # noqa: E731
                                              S.csr_matmat)(
        S.CSR((d, c, p), shape=(M, N)), v, transpose=tr))
    _check(f(ps), f(js), (d, c, ptr, v), (d, c, ptr, v), prims)


def test_sampled_product():
  rng = np.random.default_rng(4)
  A = rng.normal(size=(M, K)).astype(np.float32)
  B = rng.normal(size=(K, N)).astype(np.float32)
  idx = np.stack([rng.integers(-2, M + 2, NSE), rng.integers(-2, N + 2, NSE)], 1).astype(
      np.int32)
  for a, b, dn in ((A, B, (((1,), (0,)), ((), ()))), (A.T.copy(), B.T.copy(),
                                                        (((0,), (1,)), ((), ())))):
    f = lambda S, dn=dn: (lambda a, b, i: S.bcoo_dot_general_sampled(  # noqa: E731
        a, b, i, dimension_numbers=dn))
    _check(f(ps), f(js), (a, b, idx), (a, b, idx), {"bcoo_dot_general_sampled"})


def test_row_split_and_row_pointers():
  # the parallel paths: a sorted BCOO (indices_sorted=True: row split; a broken promise
  # falls back to the serial pass) and CSR/BCSR with regular row pointers (row by row),
  # next to irregular pointers (general path); bits equal the NumPy tier's
  m, n, nse = 300, 200, 40000        # nse crosses the threading threshold with one vector
  rng = np.random.default_rng(5)
  r = np.sort(rng.integers(0, m, nse)).astype(np.int32)
  c = rng.integers(-n - 2, n + 2, nse).astype(np.int32)
  r[-50:] = m                                    # JAX's padding: out of range, at the end
  d = rng.normal(size=nse).astype(np.float32)
  x, X = rng.normal(size=n).astype(np.float32), rng.normal(size=(n, K)).astype(np.float32)
  neg = r.copy()
  neg[:3] = -1                                   # sorted, but counts from the end
  for idx in (np.stack([r, c], 1), np.stack([rng.permutation(r), c], 1),
              np.stack([neg, c], 1)):
    f = lambda S: (lambda d, i, v: S.BCOO((d, i), shape=(m, n), indices_sorted=True) @ v)  # noqa
    _check(f(ps), f(js), (d, idx, x), (d, idx, x), {"bcoo_dot_general"})
  regular = np.searchsorted(r, np.arange(m + 1)).astype(np.int32)
  irregular = regular.copy()
  irregular[0], irregular[5] = 3, -7
  inside = np.clip(c, 0, n - 1)
  f = lambda S: (lambda d, c, p, v: S.BCSR((d, c, p), shape=(m, n)) @ v)  # noqa: E731
  for v in (x, X):
    _check(f(ps), f(js), (d, inside, regular, v), (d, inside, regular, v),
           {"bcsr_dot_general"})
    # JAX's BCSR product reads out of bounds for out-of-range columns or irregular
    # pointers: there the native kernel is checked against the NumPy tier only
    for cols, ptr in ((c, regular), (c, irregular), (inside, irregular)):
      _check(f(ps), None, (d, cols, ptr, v), None, {"bcsr_dot_general"})
  f = lambda S: (lambda d, c, p, v: S.CSR((d, c, p), shape=(m, n)) @ v)  # noqa: E731
  _check(f(ps), f(js), (d, c, regular, x), (d, c, regular, x), {"csr_matvec"})
