"""Large outputs of native executables come from a pool of idle buffers
(compiler/native/outpool.py): reused only when nothing references them any more."""
import numpy as np
import pytest

import pyjax
import pyjax.numpy as jnp
from pyjax._src.backends.cpu.compiler.native import build
from pyjax._src.backends.cpu.compiler.native import outpool

from test_compiler import compile_mode

pytestmark = pytest.mark.skipif(build.toolchain() is None, reason="no C compiler")

N = 1 << 19   # 2 MB of float32: pooled (MIN_BYTES is 1 MB)


def _ptr(a):
  return np.asarray(a).__array_interface__["data"][0]


@pytest.fixture
def f():
  with compile_mode("sync"):
    g = pyjax.jit(lambda x: x * 2 + 1)
    x = jnp.asarray(np.arange(N, dtype=np.float32))
    g(x).block_until_ready()
    yield lambda: g(x), np.arange(N, dtype=np.float32) * 2 + 1


def test_a_dropped_result_is_reused(f):
  # (the call is asynchronous: the stream must not keep the finished work's outputs)
  call, want = f
  r = call()
  p = _ptr(r)
  del r
  r2 = call()
  assert _ptr(r2) == p
  np.testing.assert_array_equal(r2, want)


def test_live_results_never_share_memory(f):
  call, want = f
  rs = [call() for _ in range(4)]
  assert len({_ptr(r) for r in rs}) == 4
  for r in rs:
    np.testing.assert_array_equal(r, want)


def test_views_and_numpy_references_keep_the_buffer(f):
  call, want = f
  r = call()
  p = _ptr(r)
  view = np.asarray(r)[::2]        # a view references its base
  ref = np.asarray(r)              # the buffer itself, read-only
  del r
  r2 = call()
  assert _ptr(r2) != p
  r3 = call()
  assert _ptr(r3) not in (p, _ptr(r2))
  np.testing.assert_array_equal(view, want[::2])
  np.testing.assert_array_equal(ref, want)
  del view, ref, r2, r3
  assert _ptr(call()) in {p} | {_ptr(a) for v in outpool._pool.values() for a in v}


def test_small_outputs_are_not_pooled():
  with compile_mode("sync"):
    g = pyjax.jit(lambda x: x + 1)
    before = {id(a) for v in outpool._pool.values() for a in v}
    g(jnp.ones(1000)).block_until_ready()
    assert {id(a) for v in outpool._pool.values() for a in v} == before


def test_budget():
  assert 0 <= outpool._bytes <= outpool.MAX_BYTES
  assert outpool._bytes == sum(a.nbytes for v in outpool._pool.values() for a in v)
