"""Row kernels: float sums/products in XLA's order through the vectorized 1-D helper
(``codegen_c.TREE1_SOURCE``), bit for bit against the NumPy tier, and the kernel counts of
row-normalizing programs."""
from __future__ import annotations

import numpy as np
import pytest

import pyjax
import pyjax.numpy as jnp
from pyjax import lax
from pyjax._src.backends.cpu import executable
from pyjax._src.backends.cpu.compiler import build

pytestmark = [
    pytest.mark.skipif(build.toolchain() is None, reason="no C compiler"),
    pytest.mark.filterwarnings("ignore:(overflow|invalid value|divide by zero):RuntimeWarning"),
    pytest.mark.filterwarnings("error:pyjax:RuntimeWarning"),
]

compile_mode = executable.compile_mode_override


def native(f, *args):
  with compile_mode("sync"):
    jf = pyjax.jit(lambda *a: f(*a))
    exe = jf.lower(*args).compile().runtime_executable()
    assert exe.error is None, exe.error
    assert exe.tier == "native"
    assert not exe.native.host_steps
    return jf(*args), exe


def numpy_path(f, *args):
  with compile_mode("off"):
    return pyjax.jit(lambda *a: f(*a))(*args)


def same_bits(a, b, what=""):
  a, b = np.asarray(a), np.asarray(b)
  assert a.dtype == b.dtype and a.shape == b.shape, what
  ok = (a == b) | (np.isnan(a) & np.isnan(b))
  assert ok.all() and (np.signbit(a) == np.signbit(b))[a == b].all(), (what, a[~ok], b[~ok])


# row lengths around the helper's cases: one window, a partial first/last window, blocks of
# 8 / 32 windows (4 for float64) and what is left over, a second level of windows
_LENGTHS = [1, 31, 32, 33, 64, 100, 255, 256, 257, 287, 1000, 1023, 1024, 1025, 1100, 2100]


def _rows(n, dt, seed, special=False):
  rng = np.random.default_rng(seed)
  rows = max(1, min(5, 30000 // n))   # small enough for the NumPy tier's XLA-order path
  x = (rng.standard_normal((rows, n)) * 4).astype(dt)
  if special and n > 40:
    x[0, 5] = np.nan
    x[1 % rows, n - 3] = np.inf
    x[2 % rows, 17] = -np.inf
    x[2 % rows, n - 1] = np.inf            # inf + -inf: NaN
    x[3 % rows, :] = -0.0                  # an all -0.0 row sums to +0.0
  return x


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_row_sums_and_products_match_numpy_tier(dt):
  """One program per dtype (one build): sums, products and sums of a computed operand
  (x*x, through a row buffer) of rows of every length in _LENGTHS."""
  prev = pyjax.config.jax_enable_x64
  pyjax.config.update("jax_enable_x64", dt == np.float64 or prev)
  try:
    xs = [_rows(n, dt, i, special=(i % 2 == 0)) for i, n in enumerate(_LENGTHS)]
    # products: factors near 1 so that long rows neither overflow nor vanish
    ps = [(1 + x / 64).astype(dt) for x in xs]

    def f(xs, ps):
      out = []
      for x, p in zip(xs, ps):
        out += [x.sum(axis=1), (x * x).sum(axis=1), lax.reduce_prod(p, (1,)),
                (x * x).sum(axis=1, keepdims=True) + x]
      return out
    got, _ = native(f, xs, ps)
    want = numpy_path(f, xs, ps)
  finally:
    pyjax.config.update("jax_enable_x64", prev)
  names = [f"{k} n={n}" for n in _LENGTHS for k in ("sum", "sumsq", "prod", "phase2")]
  assert len(got) == len(names)
  for name, g, w in zip(names, got, want):
    same_bits(g, w, name)


def test_row_sums_match_jax():
  """XLA's order is JAX's: these float32 row sums agree bit for bit (JAX 0.10's CPU
  backend reduces some other shapes, e.g. rows of 1024, in another order)."""
  jax = pytest.importorskip("jax")
  rng = np.random.default_rng(3)
  for n in (33, 257, 777, 1000):
    x = (rng.standard_normal((4, n)) * 10).astype(np.float32)
    got, _ = native(lambda x: x.sum(axis=1), x)
    ref = np.asarray(jax.jit(lambda x: x.sum(axis=1))(x))
    same_bits(got, ref, n)


def _row_normalize(x):
  return x / jnp.sqrt((x * x).sum(axis=1, keepdims=True))


def test_row_normalize_is_one_kernel():
  """x / sqrt(sum(x*x, rows)) is one row kernel (the reduction phase, then the full-size
  output phase over the same row), bit-identical to the NumPy tier."""
  x = np.random.default_rng(0).standard_normal((40, 1000)).astype(np.float32)
  out, exe = native(_row_normalize, x)
  assert exe.native.n_kernels == 1
  assert "pj_tree1_sum_f" in exe.as_text()
  same_bits(out, numpy_path(_row_normalize, x))
  jax = pytest.importorskip("jax")
  # JAX computes x * rsqrt(s): equal within rounding
  ref = np.asarray(jax.jit(lambda x: x / jax.numpy.sqrt((x * x).sum(axis=1, keepdims=True)))(x))
  np.testing.assert_allclose(np.asarray(out), ref, rtol=2e-6, atol=1e-7)

