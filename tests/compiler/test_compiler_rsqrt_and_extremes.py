"""Row kernels of issue 15: quotients by a broadcast divisor or a square root computed as
products by a reciprocal (XLA's rewrites, on both tiers of jit:
``backends/cpu/reciprocal_div.py``),
and float max/min rows in value lanes with a NaN flag and a signed-zero rescan, bit for bit
against the NumPy tier."""
from __future__ import annotations

import numpy as np
import pytest

import pyjax
import pyjax.numpy as jnp
from pyjax import lax
from pyjax._src.backends.cpu import executable
from pyjax._src.backends.cpu.compiler.native import build

pytestmark = [
    pytest.mark.skipif(build.toolchain() is None, reason="no C compiler"),
    pytest.mark.filterwarnings("ignore:(overflow|invalid value|divide by zero):RuntimeWarning"),
]


def native(f, *args):
  with executable.compile_mode_override("sync"):
    jf = pyjax.jit(f)
    exe = jf.lower(*args).compile().runtime_executable()
    assert exe.error is None, exe.error
    assert exe.tier == "native"
    return [np.asarray(o) for o in jf(*args)], exe


def numpy_tier(f, *args):
  with executable.compile_mode_override("off"):
    return [np.asarray(o) for o in pyjax.jit(f)(*args)]


def same_bits(a, b, what=""):
  a, b = np.asarray(a), np.asarray(b)
  assert a.dtype == b.dtype and a.shape == b.shape, what
  nan = np.isnan(a) & np.isnan(b)
  ok = nan | ((a == b) & (np.signbit(a) == np.signbit(b)))
  assert ok.all(), (what, a[~ok], b[~ok])


def _div_sqrt_program(x, y):
  s = (x * x).sum(axis=1, keepdims=True)
  rows = x / jnp.sqrt(s)                              # broadcast divisor: one per row
  elem = x / jnp.sqrt(y)                              # same-shape divisor
  lit = 3.0 / jnp.sqrt(y[0])                          # literal numerator
  mean = x.mean(axis=1)                               # divided by a literal count
  loop = lax.fori_loop(0, 3, lambda i, c: c / jnp.sqrt(y[1] + i), x[0])
  return rows, elem, lit, loop, s, mean, x.sum(axis=1)


def test_quotients_are_products_by_the_reciprocal_on_both_tiers():
  rng = np.random.default_rng(0)
  x = rng.standard_normal((40, 257)).astype(np.float32)
  y = (np.abs(rng.standard_normal((40, 257))) + 0.1).astype(np.float32)
  got, _ = native(_div_sqrt_program, x, y)
  want = numpy_tier(_div_sqrt_program, x, y)
  for i, (g, w) in enumerate(zip(got, want)):
    same_bits(g, w, f"output {i}")
  one = np.float32(1)
  rows, elem, lit, loop, s, mean, total = got
  same_bits(rows, x * (one / np.sqrt(s)))
  same_bits(elem, x * (one / np.sqrt(y)))
  same_bits(lit, np.float32(3) * (one / np.sqrt(y[0])))
  c = x[0]
  for i in range(3):
    c = c * (one / np.sqrt(y[1] + np.float32(i)))
  same_bits(loop, c)
  same_bits(mean, total * (one / np.float32(257)))
  # a true quotient rounds differently for some elements: the rewrite really happened
  assert (rows != x / np.sqrt(s)).any() and (elem != x / np.sqrt(y)).any()
  # eager (op-by-op) division divides, as JAX's op-by-op execution does
  same_bits(np.asarray(jnp.asarray(x) / jnp.sqrt(jnp.asarray(y))), x / np.sqrt(y))
  # jaxprs keep the user's operations
  assert "div" in str(pyjax.make_jaxpr(_div_sqrt_program)(x, y))


def test_quotients_by_broadcasts_match_jax():
  """XLA computes a / broadcast(b) as a * (1 / b): the same bits as JAX for scalar, row and
  column divisors; a / sqrt(b) within an ulp (XLA's rsqrt rounds differently)."""
  jax = pytest.importorskip("jax")
  rng = np.random.default_rng(1)
  x = rng.standard_normal((64, 300)).astype(np.float32)
  s = (np.abs(rng.standard_normal((64, 1))) + 0.1).astype(np.float32)
  v = (np.abs(rng.standard_normal(300)) + 0.1).astype(np.float32)
  f = lambda np_: (lambda x, s, v: [x / 3.0, x / s, x / v,  # noqa: E731
                                    x / np_.sqrt((x * x).sum(axis=1, keepdims=True))])
  got, _ = native(f(jnp), x, s, v)
  ref = [np.asarray(r) for r in jax.jit(f(jax.numpy))(x, s, v)]
  for i in range(3):
    same_bits(got[i], ref[i], f"output {i}")
  np.testing.assert_allclose(got[3], ref[3], rtol=4e-7, atol=0)


def test_bool_numerator_makes_a_select_as_in_jax():
  """XLA turns the product of a converted bool by the reciprocal into a select: False / 0
  is 0.0 and False / -1.5 is +0.0 in JAX (eager pyjax divides: NaN and -0.0)."""
  b = np.array([False, True])

  def f(b, z):
    return [jnp.divide(b, z), b[0] / -1.5,
            lax.fori_loop(0, 2, lambda i, c: b.astype(jnp.float32) / z, jnp.zeros(2))]
  z = np.zeros(1, np.float32)
  got, _ = native(f, b, z)
  for g, w in zip(got, numpy_tier(f, b, z)):
    same_bits(g, w)
  same_bits(got[0], np.array([0.0, np.inf], np.float32))
  same_bits(got[1], np.float32(0.0))
  same_bits(got[2], np.array([0.0, np.inf], np.float32))


def _extreme_rows(dt):
  """Rows whose max/min is a zero of either sign met in different lanes, NaNs, infinities."""
  rng = np.random.default_rng(2)
  x = rng.standard_normal((9, 3, 70)).astype(dt)
  x[0] = -np.abs(x[0]); x[0, 0, 0] = -0.0; x[0, 2, 53] = 0.0     # max +0 (after a -0)
  x[1] = -0.0                                                     # max and min -0
  x[2] = np.abs(x[2]); x[2, 1, 67] = -0.0; x[2, 0, 3] = 0.0      # min -0 (tail lane)
  x[3] = 0.0                                                      # +0
  x[4, 1, 40] = np.nan                                            # NaN anywhere
  x[5] = -np.inf; x[5, 2, 69] = np.nan
  x[6] = np.inf; x[6, 0, 1] = -np.inf
  x[7] = np.abs(x[7]); x[7, 2, 10] = 0.0; x[7, 1, 11] = -0.0     # min -0 after +0
  return x


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_row_max_min_zeros_and_nans_match_numpy_tier(dt):
  prev = pyjax.config.jax_enable_x64
  pyjax.config.update("jax_enable_x64", dt == np.float64 or prev)
  try:
    x = _extreme_rows(dt)

    def f(x):
      return [lax.reduce_max(x, (2,)), lax.reduce_min(x, (2,)), lax.reduce_max(x, (1, 2)),
              lax.reduce_min(x, (1, 2)), lax.reduce_max(-x * 2, (2,))]
    got, _ = native(f, x)
    for i, (g, w) in enumerate(zip(got, numpy_tier(f, x))):
      same_bits(g, w, f"output {i}")
    mx, mn = got[2], got[3]
    assert mx[0] == 0 and not np.signbit(mx[0]) and np.signbit(mx[1])
    assert mn[2] == 0 and np.signbit(mn[2]) and np.signbit(mn[7]) and not np.signbit(mn[3])
    assert np.isnan(mx[4]) and np.isnan(mn[5]) and mx[6] == np.inf and mn[6] == -np.inf
  finally:
    pyjax.config.update("jax_enable_x64", prev)
