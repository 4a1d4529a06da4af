"""Kernels' temporary memory (``native/runtime.py``: ``pj_scratch_alloc`` / ``pj_scratch_free``):
per-thread buffers kept between calls, so steady-state calls of native programs that need
scratch (long row buffers, split-row partial sums, tree partial grids, sort keys, window
rows) allocate nothing but their outputs; the allocator itself under odd orders and
sizes."""
from __future__ import annotations

import ctypes
import time

import numpy as np
import pytest

import pyjax
import pyjax.numpy as jnp
from pyjax import lax
from pyjax._src.backends.cpu import executable
from pyjax._src.backends.cpu.compiler.native import build
from pyjax._src.backends.cpu.compiler.native import runtime

pytestmark = [
    pytest.mark.skipif(build.toolchain() is None, reason="no C compiler"),
    pytest.mark.skipif(build.toolchain() is not None and runtime.load(build.toolchain()) is None,
                       reason="no native runtime"),
]

compile_mode = executable.compile_mode_override


def _lib():
  lib = runtime.load(build.toolchain())
  lib.pj_scratch_alloc.restype = ctypes.c_void_p
  lib.pj_scratch_alloc.argtypes = [ctypes.c_size_t]
  lib.pj_scratch_free.argtypes = [ctypes.c_void_p]
  return lib


def _count():
  return runtime.scratch_stats(build.toolchain())[1]


def _blocks():
  return runtime.scratch_stats(build.toolchain())[0]


def test_allocator_alignment_orders_and_contents():
  lib = _lib()
  rng = np.random.default_rng(0)
  for _ in range(3):        # the first round grows the buffer, later rounds reuse it
    live = {}
    for step in range(200):
      if live and (rng.random() < 0.45 or len(live) > 12):
        k = list(live)[int(rng.integers(len(live)))]       # any order, not only LIFO
        p, n, fill = live.pop(k)
        got = np.ctypeslib.as_array((ctypes.c_uint8 * n).from_address(p))
        assert (got == fill).all(), "a block was overwritten"
        lib.pj_scratch_free(p)
      else:
        n = int(rng.choice([1, 7, 64, 100, 4096, 70_000, 1 << 20]))
        p = lib.pj_scratch_alloc(n)
        assert p and p % 64 == 0
        fill = step % 251
        ctypes.memset(p, fill, n)
        live[step] = (p, n, fill)
    for p, n, fill in live.values():
      got = np.ctypeslib.as_array((ctypes.c_uint8 * n).from_address(p))
      assert (got == fill).all()
      lib.pj_scratch_free(p)
  # with everything freed, the same pattern again needs no malloc
  before = _count()
  ps = [lib.pj_scratch_alloc(n) for n in (1 << 20, 5000, 64)]
  for p in reversed(ps):
    lib.pj_scratch_free(p)
  assert _count() == before
  lib.pj_scratch_free(None)            # (like free)


def test_allocator_huge_and_impossible_blocks():
  lib = _lib()
  big = 100 << 20                      # above what a thread keeps: malloc'ed each time
  before = _count()
  p = lib.pj_scratch_alloc(big)
  assert p and p % 64 == 0
  ctypes.memset(p + big - 1, 1, 1)
  lib.pj_scratch_free(p)
  p = lib.pj_scratch_alloc(big)
  lib.pj_scratch_free(p)
  assert _count() == before + 2
  assert lib.pj_scratch_alloc(1 << 62) is None      # NULL, not a crash
  q = lib.pj_scratch_alloc(10)                       # still usable afterwards
  assert q
  lib.pj_scratch_free(q)


def _programs():
  rng = np.random.default_rng(3)
  long_rows = rng.standard_normal((4, 20_000)).astype(np.float32)     # row buffers > 4096
  one_row = rng.standard_normal(300_001).astype(np.float32)           # split-row partials
  grid = rng.standard_normal((1200, 1300)).astype(np.float32)         # tree grid > 512 cells
  img = rng.standard_normal((2, 300, 300, 8)).astype(np.float32)
  keys = rng.standard_normal((64, 3000)).astype(np.float32)
  return [
      ("row normalize", lambda x: (x - x.mean(axis=1, keepdims=True))
       / jnp.sqrt(((x - x.mean(axis=1, keepdims=True)) ** 2).mean(axis=1, keepdims=True)),
       (long_rows,)),
      ("long row sum", lambda x: (x * x).sum() + jnp.tanh(x).sum(), (one_row,)),
      ("2-d sum", lambda x: x.sum(), (grid,)),
      ("sort", lambda x: jnp.sort(x, axis=1), (keys,)),
      ("max pool", lambda x: lax.reduce_window(x, -jnp.inf, lax.max, (1, 3, 3, 1),
                                               (1, 2, 2, 1), "SAME"), (img,)),
      ("max pool grad", pyjax.grad(lambda x: lax.reduce_window(
          x, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID").sum()), (img,)),
  ]


@pytest.mark.parametrize("case", range(6), ids=[p[0] for p in _programs()])
def test_steady_state_calls_allocate_no_scratch(case):
  name, f, args = _programs()[case]
  with compile_mode("sync"):
    jf = pyjax.jit(f)
    exe = jf.lower(*args).compile().runtime_executable()
    assert exe.tier == "native", exe.error
    assert "pj_scratch(" in exe.as_text(), "the case should need scratch memory"
    want = np.asarray(jf(*args))
    # each thread that runs a kernel (the caller or the stream's worker, pool threads
    # taking chunks) grows its buffer once, when it first runs this kernel, and which
    # threads run which call varies: rounds of five calls until one mallocs nothing
    # (a per-call allocation would malloc in every round)
    for _ in range(8):
      before, blocks = _count(), _blocks()
      for _ in range(5):
        got = np.asarray(jf(*args))
      assert _blocks() > blocks, "the scratch should come from the runtime"
      if _count() == before:
        break
    else:
      raise AssertionError(f"{name}: every round of calls allocated scratch memory")
  np.testing.assert_array_equal(got, want)
  with compile_mode("off"):
    ref = np.asarray(pyjax.jit(f)(*args))
  np.testing.assert_allclose(got, ref, rtol=2e-5, atol=1e-5)


def test_threads_that_exit_free_their_scratch():
  """Jitted calls run on short-lived threads (synchronous dispatch: on the calling thread):
  each thread's buffer is freed when it exits, and the results stay right."""
  import threading
  # one row: the kernel runs on the calling thread (no chunks for the pool to take), and
  # its 20,000-element row buffer is scratch
  x = np.random.default_rng(5).standard_normal((1, 20_000)).astype(np.float32)
  with compile_mode("sync"):
    f = pyjax.jit(lambda x: x / x.sum(axis=1, keepdims=True))
    want = np.asarray(f(x))
  got = []

  def work():
    got.append(np.asarray(f(x)))
  prev = pyjax.config.jax_cpu_enable_async_dispatch
  pyjax.config.update("jax_cpu_enable_async_dispatch", False)
  try:
    exits = runtime.scratch_stats(build.toolchain())[2]
    for _ in range(10):
      t = threading.Thread(target=work)
      t.start()
      t.join()
  finally:
    pyjax.config.update("jax_cpu_enable_async_dispatch", prev)
  # (join returns before the OS thread has run its key destructors: wait a little)
  deadline = time.monotonic() + 5
  while runtime.scratch_stats(build.toolchain())[2] < exits + 10 and time.monotonic() < deadline:
    time.sleep(0.01)
  assert runtime.scratch_stats(build.toolchain())[2] >= exits + 10
  assert len(got) == 10
  for g in got:
    np.testing.assert_array_equal(g, want)
