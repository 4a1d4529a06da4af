"""Native ``lu``, ``triangular_solve`` and ``lu_pivots_to_permutation`` kernels of the CPU
compiler (``backends/cpu/compiler/linalg.py``): results equal the NumPy tier bit for bit
(same LAPACK/BLAS routines on the same copies) and JAX's within rounding; the programs
have no NumPy step left, and a loop holding a solve runs as a C loop."""
from __future__ import annotations

import numpy as np
import pytest

import pyjax
from pyjax import lax
from pyjax._src.backends.cpu import executable
from pyjax._src.backends.cpu.compiler.native import build
from pyjax._src.backends.cpu.compiler.kernels import linalg
from pyjax.scipy.linalg import lu_factor, lu_solve

from test_compiler import numpy_path, x64_if

pytestmark = pytest.mark.skipif(build.toolchain() is None or not linalg._library(),
                                reason="no C compiler or no SciPy-bundled OpenBLAS")


def native(f, *args):
  """``jit(f)(*args)`` compiled synchronously, and its executable."""
  with executable.compile_mode_override("sync"):
    jf = pyjax.jit(f)
    exe = jf.lower(*args).compile().runtime_executable()
    out = jf(*args)
  assert exe.tier == "native"
  return out, exe


def assert_bits(got, want):
  got = [np.asarray(v) for v in pyjax.tree_util.tree_leaves(got)]
  want = [np.asarray(v) for v in pyjax.tree_util.tree_leaves(want)]
  assert len(got) == len(want)
  for g, w in zip(got, want):
    assert g.dtype == w.dtype and g.shape == w.shape
    np.testing.assert_array_equal(g, w)


def host_prims(exe):
  return [s.node.prim for s in exe.native.host_steps]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(64, 64), (3, 5, 5), (7, 4), (4, 7), (1, 1)])
def test_lu_bits(dtype, shape):
  x = np.random.default_rng(0).normal(size=shape).astype(dtype)
  with x64_if([dtype]):
    f = lambda x: lax.linalg.lu(x)  # noqa: E731
    got, exe = native(f, x)
    assert host_prims(exe) == []
    want = numpy_path(f, x)
    assert_bits(got, want)
    lu, piv, perm = (np.asarray(v) for v in got)
    m = shape[-2]
    assert piv.dtype == perm.dtype == np.int32
    for b in np.ndindex(shape[:-2]):   # P A = L U
      L = np.tril(lu[b], -1)[:, :min(shape[-2:])] + np.eye(m, min(shape[-2:]))
      U = np.triu(lu[b])[:min(shape[-2:])]
      np.testing.assert_allclose(x[b][perm[b]], L @ U, rtol=1e-4, atol=1e-5)


def test_lu_singular_and_nan_match_numpy_tier():
  x = np.zeros((4, 4), np.float32)
  x[0, 1] = 1.0
  y = np.full((3, 3), np.nan, np.float32)
  f = lambda x, y: (lax.linalg.lu(x), lax.linalg.lu(y))  # noqa: E731
  got, exe = native(f, x, y)
  assert host_prims(exe) == []
  assert_bits(got, numpy_path(f, x, y))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_triangular_solve_bits(dtype):
  rng = np.random.default_rng(1)
  a = (rng.normal(size=(2, 6, 6)) + 4 * np.eye(6)).astype(dtype)
  b_left = rng.normal(size=(2, 6, 3)).astype(dtype)
  b_right = rng.normal(size=(2, 3, 6)).astype(dtype)
  with x64_if([dtype]):
    for left in (True, False):
      for lower in (True, False):
        for trans in (False, True):
          for unit in (False, True):
            kw = dict(left_side=left, lower=lower, transpose_a=trans, unit_diagonal=unit)
            f = lambda a, b: lax.linalg.triangular_solve(a, b, **kw)  # noqa: E731
            b = b_left if left else b_right
            got, exe = native(f, a, b)
            assert host_prims(exe) == [], kw
            assert_bits(got, numpy_path(f, a, b))
            t = np.tril(a) if lower else np.triu(a)
            if unit:
              t = t - t * np.eye(6) + np.eye(6)
            if trans:
              t = np.swapaxes(t, -1, -2)
            want = np.linalg.solve(t, b) if left else np.swapaxes(
                np.linalg.solve(np.swapaxes(t, -1, -2), np.swapaxes(b, -1, -2)), -1, -2)
            np.testing.assert_allclose(np.asarray(got), want, rtol=1e-4, atol=1e-4)


def test_large_solves_stay_numpy_steps():
  """Past OpenBLAS's single-thread sizes the NumPy tier's call may thread: not claimed."""
  a = np.eye(128, dtype=np.float32) * 2
  f = lambda a: lax.linalg.lu(a)[0] * 2  # noqa: E731
  got, exe = native(f, a)
  assert host_prims(exe) == ["lu"]
  assert_bits(got, numpy_path(f, a))


def test_lu_pivots_to_permutation():
  piv = np.array([[2, 2, 3, 9], [0, -1, 1, 3]], np.int32)   # out of range: no swap
  f = lambda p: lax.linalg.lu_pivots_to_permutation(p, 5)  # noqa: E731
  got, exe = native(f, piv)
  assert host_prims(exe) == []
  assert_bits(got, numpy_path(f, piv))
  jax = pytest.importorskip("jax")
  ok = piv[:1].clip(0, 4)   # JAX leaves out-of-range pivots unspecified
  np.testing.assert_array_equal(
      np.asarray(native(f, ok)[0]), np.asarray(jax.lax.linalg.lu_pivots_to_permutation(ok, 5)))


def test_newton_loop_with_lu_solve_is_a_c_loop():
  """A while loop whose body factors a dense Jacobian and solves (a Newton iteration, as
  optimistix's Newton) runs as a C loop, with the NumPy tier's bits and JAX's values.
  (Polynomial residual: transcendental functions are not this test's business.)"""
  a = np.linspace(-1, 1, 16).astype(np.float32)

  def make(jnp, lax, lu_factor, lu_solve):
    def f(a):
      def body(c):
        y, i = c
        r = y * y * y + y - a + 0.1 * jnp.sum(y)
        jac = jnp.diag(3 * y * y + 1) + 0.1
        return y - lu_solve(lu_factor(jac), r), i + 1
      return lax.while_loop(lambda c: c[1] < 6, body, (jnp.zeros_like(a), 0))[0]
    return f

  f = make(pyjax.numpy, lax, lu_factor, lu_solve)
  got, exe = native(f, a)
  assert host_prims(exe) == []
  assert exe.native.native_loops == 1
  assert_bits(got, numpy_path(f, a))
  jax = pytest.importorskip("jax")
  from jax.scipy.linalg import lu_factor as jlf, lu_solve as jls
  jf = make(jax.numpy, jax.lax, jlf, jls)
  np.testing.assert_allclose(np.asarray(got), np.asarray(jax.jit(jf)(a)), rtol=1e-5, atol=1e-6)
