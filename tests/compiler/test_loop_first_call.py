"""First calls of long loops and of the PRNG on jit's NumPy tier (issue 15).

A jitted function's first calls run the NumPy plan.  A long ``scan``/``fori_loop`` there
runs as one native call once its library is built (``numpy_tier/loops.py``), a long
``while_loop`` hands over to native code after 256 iterations, and ``threefry2x32``/``fma``
run prebuilt C kernels (``numpy_tier/random.py``).  Every route must give the bits the plan and
the native tier give.
"""
from __future__ import annotations

import numpy as np
import pytest

import pyjax
import pyjax.numpy as jnp
from pyjax import lax
from pyjax._src.backends.cpu import executable
from pyjax._src.backends.cpu.numpy_tier import loops as loop_native
from pyjax._src.backends.cpu.numpy_tier import random as tier_random
from pyjax._src.backends.cpu.compiler.native import build
from pyjax._src.backends.cpu.eager.registry import impls

needs_cc = pytest.mark.skipif(build.toolchain() is None, reason="no C compiler")


def _bits(x):
  x = np.ascontiguousarray(np.asarray(x))
  return x.reshape(-1).view(np.uint8)


def _fresh_call(f, mode, *args):
  """A fresh jit of ``f`` called once with ``PYJAX_COMPILE=mode``: its output and the
  executable's tier after the call (async: not asked -- asking would build it)."""
  with executable.compile_mode_override(mode):
    g = pyjax.jit(lambda *a: f(*a))
    out = np.asarray(g(*args))
    if mode == "async":
      return out, None
    return out, g.lower(*args).compile().runtime_executable().tier


def _fori(c):
  return lax.fori_loop(0, 3000, lambda i, c: c * 0.999 + jnp.cos(c) * 0.001
                       + jnp.exp(-c * c) * 1e-3, c)


@needs_cc
def test_scan_body_uses_the_tiers_math():
  """A loop body on the plan computes ``cos`` as the native tier does (it used NumPy's
  libm: the plan's and the native loop's bits differed in the last place)."""
  c = (np.random.default_rng(1).standard_normal(64) * 3).astype(np.float32)
  f = lambda c: lax.fori_loop(0, 3, lambda i, c: jnp.cos(c) * 3, c)  # noqa: E731
  off, tier = _fresh_call(f, "off", c)
  assert tier == "numpy"
  sync, tier = _fresh_call(f, "sync", c)
  assert tier == "native"
  np.testing.assert_array_equal(_bits(off), _bits(sync))


@needs_cc
def test_long_scan_first_call_runs_in_c_once_built():
  c = (np.random.default_rng(2).standard_normal(4) * 3).astype(np.float32)
  off, _ = _fresh_call(_fori, "off", c)
  # the first async call of a never-built loop: the plan runs it, the build is queued
  before = dict(loop_native.stats)
  first, _ = _fresh_call(_fori, "async", c)
  executable.drain()
  # now a fresh function's first call (a new trace) finds the library in the caches
  mid = dict(loop_native.stats)
  again, _ = _fresh_call(_fori, "async", c)   # the program's first call: its NumPy tier
  assert loop_native.stats["native"] == mid["native"] + 1   # ... whose loop ran in C
  assert mid["background"] + mid["native"] > before["background"] + before["native"]
  for x in (first, again):
    np.testing.assert_array_equal(_bits(x), _bits(off))


@needs_cc
def test_long_while_loop_finishes_in_c_from_the_carry_reached():
  c = (np.random.default_rng(3).standard_normal(4) * 3).astype(np.float32)

  def f(c, n):   # a traced bound: a while loop
    return lax.fori_loop(0, n, lambda i, c: c * 0.999 + jnp.sin(c) * 1e-3, c)
  n = np.int32(1000)
  off, _ = _fresh_call(f, "off", c, n)
  before = loop_native.stats["native"]
  got, _ = _fresh_call(f, "async", c, n)
  assert loop_native.stats["native"] == before + 1
  np.testing.assert_array_equal(_bits(got), _bits(off))
  # fewer iterations than the hand-over point: the plan alone
  short, _ = _fresh_call(f, "async", c, np.int32(100))
  np.testing.assert_array_equal(_bits(short), _bits(_fresh_call(f, "off", c, np.int32(100))[0]))
  assert loop_native.stats["native"] == before + 1


@needs_cc
def test_prng_kernels_equal_numpy_and_jax():
  """threefry2x32 and fma on the C kernels: the NumPy implementations' bits, and
  ``random.normal``'s first (NumPy-tier) call gives the native tier's bits."""
  rng = np.random.default_rng(4)
  with executable.compile_mode_override("sync"), np.errstate(all="ignore"):
    tf = tier_random.impl("threefry2x32", impls["threefry2x32"])
    k1, k2 = np.uint32(0x12345678), np.uint32(0x9ABCDEF0)
    x1, x2 = (rng.integers(0, 2 ** 32, 5000, dtype=np.uint64).astype(np.uint32)
              for _ in range(2))
    before = tier_random.stats["native"]
    got = tf(k1, k2, x1, x2)
    assert tier_random.stats["native"] == before + 1
    want = impls["threefry2x32"](k1, k2, x1, x2)
    for g, w in zip(got, want):
      np.testing.assert_array_equal(g, w)
    fma = tier_random.impl("fma", impls["fma"])
    for dt in (np.float32, np.float64):
      a, b, c = (rng.standard_normal(3001).astype(dt) * 1e3 for _ in range(3))
      a[:6] = [np.inf, -np.inf, np.nan, 0.0, -0.0, 1e-30]
      c[6:9] = [np.inf, -0.0, 1e-38]
      b2 = b[:1].copy()   # a broadcast operand
      for args in ((a, b, c), (a, b2, c)):
        g, w = fma(*args), impls["fma"](*args)
        assert g.dtype == w.dtype == np.dtype(dt)
        np.testing.assert_array_equal(g, w)
        np.testing.assert_array_equal(np.signbit(g), np.signbit(w))
  key = pyjax.random.key(7)
  normal = lambda k: pyjax.random.normal(k, (5000,))  # noqa: E731
  sync, _ = _fresh_call(normal, "sync", key)
  first, _ = _fresh_call(normal, "async", key)
  np.testing.assert_array_equal(_bits(first), _bits(sync))
  jax = pytest.importorskip("jax")
  bits = _fresh_call(lambda k: pyjax.random.bits(k, (5000,)), "async", key)[0]
  np.testing.assert_array_equal(bits, np.asarray(jax.random.bits(jax.random.key(7), (5000,))))
