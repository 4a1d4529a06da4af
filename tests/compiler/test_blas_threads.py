"""SciPy's OpenBLAS thread count around pyjax's BLAS calls: one depth count shared by every
caller (native kernels, jit's NumPy tier), so the user's setting comes back only when the
last caller leaves -- never while another thread is inside a product."""
import ctypes
import threading

import pytest

from pyjax._src.backends.cpu.compiler.kernels import dot
from pyjax._src.backends.cpu.compiler.native import build

SET = ctypes.CFUNCTYPE(None, ctypes.c_int)
GET = ctypes.CFUNCTYPE(ctypes.c_int)


@pytest.fixture
def blas():
  real = dot._openblas_thread_functions()
  shim = dot.blas_thread_control()
  if build.toolchain() is None or not all(real) or shim == real:
    pytest.skip("no C compiler or no SciPy OpenBLAS thread control")
  real_set, real_get = SET(real[0]), GET(real[1])
  before = real_get()
  real_set(2)
  yield SET(shim[0]), GET(shim[1]), real_get
  real_set(before)


def test_nested_callers_restore_only_when_the_last_leaves(blas):
  leave, enter, real_get = blas
  prev_a = enter()          # caller A: "prev = get(); if (prev != 1) set(1)"
  assert prev_a != 1 and real_get() == 1
  leave(1)
  prev_b = enter()          # caller B enters while A is inside its product
  leave(1)
  assert real_get() == 1
  leave(prev_a)             # A leaves first: B is still inside, the count stays 1
  assert real_get() == 1
  leave(prev_b)             # the last leaves: the user's setting is back
  assert real_get() == 2


def test_concurrent_callers_never_see_the_user_setting(blas):
  leave, enter, real_get = blas
  seen = []

  def caller():
    for _ in range(2000):
      p = enter()
      leave(1)
      seen.append(real_get())
      leave(p)
  threads = [threading.Thread(target=caller) for _ in range(4)]
  for t in threads:
    t.start()
  for t in threads:
    t.join()
  assert set(seen) == {1} and real_get() == 2
