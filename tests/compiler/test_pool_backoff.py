"""The native pool's stall detector (``native/runtime.py``: ``pj_backoff_record`` /
``pj_backoff_serial``), driven with synthetic timestamps so nothing depends on timing: an
uneven split (the caller's short last chunk, then a wait for a worker's full chunk) is
not a stall; a stall backs off only the loop that stalled, for a bounded time (1 ms,
doubling per further stall up to 64 ms, halving per smooth run); ``pj_parallel_for``
follows the window (serial inside it, split outside it and for other loops)."""
from __future__ import annotations

import ctypes

import pytest

from pyjax._src.backends.cpu.compiler.native import build
from pyjax._src.backends.cpu.compiler.native import runtime

pytestmark = [
    pytest.mark.skipif(build.toolchain() is None, reason="no C compiler"),
    pytest.mark.skipif(build.toolchain() is not None and runtime.load(build.toolchain()) is None,
                       reason="no native runtime"),
]

US, MS = 1000, 1000000
_CB = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)


@pytest.fixture
def lib():
  # a CDLL handle on the runtime library (same library, same state): its calls release the
  # GIL, so pool workers can run the Python callbacks of the end-to-end test
  lib = ctypes.CDLL(runtime.load(build.toolchain())._name)
  i64 = ctypes.c_int64
  lib.pj_backoff_record.argtypes = [ctypes.c_void_p, i64, i64, i64, i64, i64]
  lib.pj_backoff_record.restype = i64
  lib.pj_backoff_serial.argtypes = [ctypes.c_void_p, i64]
  lib.pj_backoff_serial.restype = ctypes.c_int
  lib.pj_runtime_now_ns.restype = i64
  lib.pj_parallel_for.argtypes = [_CB, ctypes.c_void_p, i64, i64]
  lib.pj_backoff_reset()
  yield lib
  lib.pj_backoff_reset()


A, B = 0x7f0000001000, 0x7f0000002040   # two loops' function addresses (never called)


def _stall(lib, fn, t0):
  """A loop whose caller ran 100 elements (chunks of 100) in 100 us, then waited 5 ms."""
  return lib.pj_backoff_record(fn, t0, t0 + 100 * US, t0 + 5100 * US, 100, 100)


def _smooth(lib, fn, t0):
  return lib.pj_backoff_record(fn, t0, t0 + 100 * US, t0 + 150 * US, 100, 100)


def test_uneven_split_is_not_a_stall(lib):
  # 784 rows as 256+256+256+16 on two threads: the caller ran 256 and the last 16 rows
  # (272 us), then waited 240 us for the worker's second 256-row chunk.  The old rule
  # (wait > half the caller's time + 50 us) took this for a stall and serialized the
  # following loops.
  assert lib.pj_backoff_record(A, 0, 272 * US, 512 * US, 272, 256) == 0
  assert not lib.pj_backoff_serial(A, 513 * US)


def test_stall_backs_off_only_that_loop_for_a_while(lib):
  assert _stall(lib, A, 0) == 1 * MS
  end = 5100 * US
  assert lib.pj_backoff_serial(A, end + MS // 2)
  assert not lib.pj_backoff_serial(A, end + MS)     # the window is over: parallel again
  assert not lib.pj_backoff_serial(B, end + 1)      # another loop keeps its threads


def test_repeated_stalls_double_to_a_cap_smooth_runs_recover(lib):
  t, windows = 0, []
  for _ in range(9):
    windows.append(_stall(lib, A, t) // MS)
    t += 100 * MS
  assert windows == [1, 2, 4, 8, 16, 32, 64, 64, 64]
  recovered = []
  for _ in range(8):
    recovered.append(_smooth(lib, A, t) // MS)
    t += 100 * MS
  assert recovered == [32, 16, 8, 4, 2, 1, 0, 0]
  assert _stall(lib, A, t) == 1 * MS                 # recovered: back to the first window


def test_no_yardstick_when_workers_ran_every_chunk(lib):
  _stall(lib, A, 0)
  assert lib.pj_backoff_record(A, 0, 0, 50 * MS, 0, 100) == 1 * MS   # unchanged
  assert lib.pj_backoff_record(B, 0, 0, 50 * MS, 0, 100) == 0
  assert not lib.pj_backoff_serial(B, 1)


def test_parallel_for_follows_the_window(lib):
  if runtime.threads(build.toolchain()) < 2:
    pytest.skip("a one-thread pool runs every loop serially")
  calls = {"a": [], "b": []}
  fa = _CB(lambda ctx, lo, hi: calls["a"].append((lo, hi)))
  fb = _CB(lambda ctx, lo, hi: calls["b"].append((lo, hi)))
  addr_a = ctypes.cast(fa, ctypes.c_void_p).value
  future = lib.pj_runtime_now_ns() + 10_000 * MS      # a window that cannot end mid-test
  assert _stall(lib, addr_a, future) == 1 * MS
  lib.pj_parallel_for(fa, None, 8, 1)
  lib.pj_parallel_for(fb, None, 8, 1)
  assert calls["a"] == [(0, 8)]                       # backing off: one serial call
  assert sorted(calls["b"]) == [(i, i + 1) for i in range(8)]   # split into its chunks
  lib.pj_backoff_reset()
  calls["a"].clear()
  lib.pj_parallel_for(fa, None, 8, 1)
  assert sorted(calls["a"]) == [(i, i + 1) for i in range(8)]
