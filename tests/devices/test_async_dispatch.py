"""Asynchronous dispatch: natively compiled jitted calls and large compute-bound eager ops
are enqueued on the device's stream and return pending Arrays; reading waits; errors of
asynchronous work surface at the first wait (``runtime/stream.py``)."""
from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import pyjax
import pyjax.numpy as jnp
from pyjax._src import errors
from pyjax._src.backends.cpu import executable
from pyjax._src.backends.cpu.compiler.native import build
from pyjax._src.runtime.stream import PendingBuffer

needs_cc = pytest.mark.skipif(build.toolchain() is None, reason="no C compiler")
pytestmark = [pytest.mark.filterwarnings("ignore:(overflow|invalid value):RuntimeWarning")]

N = 512      # N x N float32 products: large enough to be enqueued, quick to compute


compile_mode = executable.compile_mode_override


@contextlib.contextmanager
def async_dispatch(on):
  prev = pyjax.config.jax_cpu_enable_async_dispatch
  pyjax.config.update("jax_cpu_enable_async_dispatch", on)
  try:
    yield
  finally:
    pyjax.config.update("jax_cpu_enable_async_dispatch", prev)


@pytest.fixture(autouse=True)
def _async_on():
  """Every test starts with asynchronous dispatch on (whatever the environment says)."""
  with async_dispatch(True):
    yield


def native_jit(f, *args):
  """``jit(f)`` compiled to native code for ``args``."""
  jf = pyjax.jit(f)
  with compile_mode("sync"):
    exe = jf.lower(*args).compile().runtime_executable()
    pyjax.block_until_ready(jf(*args))   # warm: fills jit's own executable cache natively
  assert exe.tier == "native", exe
  return jf


def rand(*shape, seed=0):
  return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def is_pending(x):
  return type(x._buf) is PendingBuffer


# --- jitted calls ---------------------------------------------------------------------------
@needs_cc
def test_jitted_dot_returns_pending_array_with_metadata():
  xn = rand(1000, 1000)
  x = jnp.asarray(xn)
  f = native_jit(jnp.dot, x, x)
  y = f(x, x)
  assert is_pending(y)            # enqueued (it may already have run)
  assert y.shape == (1000, 1000) and y.dtype == np.float32 and y.weak_type is False
  assert y.devices() == {pyjax.devices()[0]}
  assert y.sharding == x.sharding
  assert y.block_until_ready() is y
  assert y.is_ready()
  np.testing.assert_allclose(np.asarray(y), xn @ xn, rtol=2e-4, atol=2e-3)
  with async_dispatch(False):
    ref = f(x, x)
  assert not is_pending(ref) and ref.is_ready()
  np.testing.assert_array_equal(np.asarray(y), np.asarray(ref))


@needs_cc
def test_every_read_waits():
  xn = rand(N, N)
  x = jnp.asarray(xn)
  f = native_jit(lambda a: jnp.tanh(a @ a) + 1.0, x)
  ref = np.asarray(f(x))
  reads = [
      lambda y: np.asarray(y),
      lambda y: y.__array__(),
      lambda y: repr(y),
      lambda y: str(y),
      lambda y: y[3, 4].item(),
      lambda y: float(y[0, 0]),
      lambda y: bool(y[0, 0] > -10),
      lambda y: y.tolist()[1][2],
      lambda y: np.asarray(y[5]),
      lambda y: list(y)[7],
      lambda y: y.copy(),
      lambda y: y + 1,
  ]
  for read in reads:
    y = f(x)
    read(y)
    assert y.is_ready()
    np.testing.assert_array_equal(np.asarray(y), ref)
  y = f(x)
  y.copy_to_host_async()          # does not wait, as in JAX
  np.testing.assert_array_equal(np.asarray(y), ref)


@needs_cc
def test_dependent_chain_and_multiple_outputs():
  an, bn = rand(N, N, seed=1) * 0.05, rand(N, N, seed=2) * 0.05
  a, b = jnp.asarray(an), jnp.asarray(bn)
  step = native_jit(lambda p, q: (p @ q + p, jnp.sum(q, axis=0)), a, b)
  with async_dispatch(False):
    p, s = a, None
    for _ in range(5):
      p, s = step(p, b)
    ref_p, ref_s = np.asarray(p), np.asarray(s)
  p, s = a, None
  for _ in range(5):
    p, s = step(p, b)             # each input is the previous call's pending output
  assert p.shape == (N, N) and s.shape == (N,)
  np.testing.assert_array_equal(np.asarray(p), ref_p)
  np.testing.assert_array_equal(np.asarray(s), ref_s)


@needs_cc
def test_pending_inputs_to_eager_ops_and_numpy_tier_jit():
  xn = rand(N, N)
  x = jnp.asarray(xn)
  f = native_jit(lambda a: a @ a, x)
  ref = np.asarray(f(x))
  np.testing.assert_array_equal(np.asarray(f(x) * 2.0), ref * 2.0)   # eager op
  with compile_mode("off"):
    g = pyjax.jit(lambda a: a - 1.0)                                  # NumPy tier
    np.testing.assert_array_equal(np.asarray(g(f(x))), ref - 1.0)
  np.testing.assert_array_equal(np.asarray(f(f(x))), np.asarray(f(jnp.asarray(ref))))


def _failing(x):
  # an output no address space can hold (2**48 bytes): allocating it fails inside the
  # asynchronous work.  (A raising callback no longer does: programs with callbacks run
  # synchronously on every tier, so the callback's error surfaces at the call.)
  return jnp.broadcast_to(jnp.sin(x)[0, 0] * 2.0, (1 << 46,)) + 1.0


@needs_cc
def test_error_in_async_work_raised_at_first_wait():
  x = jnp.ones((512, 256), jnp.float32)
  jf = pyjax.jit(_failing)
  with compile_mode("sync"):
    exe = jf.lower(x).compile().runtime_executable()
  assert exe.tier == "native"
  r = jf(x)                       # returns: the error is inside the asynchronous work
  assert is_pending(r)
  with pytest.raises(errors.JaxRuntimeError, match="RESOURCE_EXHAUSTED"):
    r.block_until_ready()
  with pytest.raises(errors.JaxRuntimeError, match="Out of memory"):
    np.asarray(r)                 # every later read raises too
  with pytest.raises(errors.JaxRuntimeError):
    pyjax.block_until_ready({"a": [r]})
  with pytest.raises(errors.JaxRuntimeError):
    jf(x) + 1.0                   # a (synchronous) eager op reads the failed value
  g = native_jit(lambda a: a * 3.0, x)
  with compile_mode("sync"):      # (the failed value's shape: compiled here, natively)
    chained = pyjax.jit(lambda a: a * 3.0)(jf(x))   # asynchronous work on the failed value
  assert is_pending(chained)
  with pytest.raises(errors.JaxRuntimeError, match="Out of memory"):
    chained.block_until_ready()   # same error
  assert np.asarray(g(x))[0, 0] == 3.0   # the stream keeps working afterwards
  with async_dispatch(False):
    with pytest.raises(errors.JaxRuntimeError, match="Out of memory"):
      jf(x)                       # synchronous: raised by the call


@needs_cc
def test_block_until_ready_pytree():
  x = jnp.asarray(rand(N, N))
  f = native_jit(lambda a: {"m": a @ a, "t": (a @ a.T, [jnp.sum(a * a)])}, x)
  out = f(x)
  res = pyjax.block_until_ready(out)
  assert res is out
  assert all(v.is_ready() for v in pyjax.tree_util.tree_leaves(out))


@needs_cc
def test_effects_barrier_waits_for_all_dispatched_work():
  x = jnp.asarray(rand(N, N))
  f = native_jit(lambda a: (a @ a) @ a, x)
  outs = [f(x) for _ in range(3)]
  assert pyjax.effects_barrier() is None
  assert all(o.is_ready() for o in outs)
  np.testing.assert_allclose(np.asarray(outs[-1]), np.asarray(outs[0]))


@needs_cc
def test_disabled_flag_is_synchronous():
  x = jnp.asarray(rand(N, N))
  f = native_jit(lambda a: a @ a, x)
  with async_dispatch(False):
    assert pyjax.config.jax_cpu_enable_async_dispatch is False
    for _ in range(3):
      y = f(x)
      assert y.is_ready() and type(y._buf) is np.ndarray
    y = jnp.dot(x, x)
    assert y.is_ready() and type(y._buf) is np.ndarray


def test_flag_default_and_small_programs_stay_synchronous():
  flag = pyjax._src.config.config._flags["jax_cpu_enable_async_dispatch"]
  assert flag.default is (os.environ.get("JAX_CPU_ENABLE_ASYNC_DISPATCH", "1").lower()
                          in ("1", "true", "yes", "on"))
  x = jnp.arange(10.0)
  y = pyjax.jit(lambda a: a * 2)(x)
  assert y.is_ready() and type(y._buf) is np.ndarray
  assert (x + 1).is_ready()


@needs_cc
def test_concurrent_callers_from_two_threads():
  xs = [jnp.asarray(rand(N, N, seed=s) * 0.1) for s in range(2)]
  f = native_jit(lambda a: jnp.tanh(a @ a) @ a, xs[0])
  with async_dispatch(False):
    refs = [np.asarray(f(x)) for x in xs]
  results = [[], []]
  errs = []

  def worker(i):
    try:
      for _ in range(6):
        results[i].append(f(xs[i]))
    except Exception as e:   # noqa: BLE001
      errs.append(e)
  threads = [threading.Thread(target=worker, args=(i,)) for i in range(2)]
  for t in threads:
    t.start()
  for t in threads:
    t.join(120)
  assert not errs
  for i in range(2):
    assert len(results[i]) == 6
    for y in results[i]:
      np.testing.assert_array_equal(np.asarray(y), refs[i])


@needs_cc
def test_donated_pending_input():
  xn = rand(N, N)
  f = native_jit(lambda a: a @ a, jnp.asarray(xn))
  g = pyjax.jit(lambda a: a * 2.0 + 1.0, donate_argnums=0)
  with compile_mode("sync"):
    y = f(jnp.asarray(xn))
    z = g(y)
    assert y.is_deleted()
    ref = np.asarray(f(jnp.asarray(xn))) * 2.0 + 1.0
  np.testing.assert_array_equal(np.asarray(z), ref)
  w = f(jnp.asarray(xn))
  w.delete()                     # waits for the work, then frees
  assert w.is_deleted()
  with pytest.raises(RuntimeError, match="deleted"):
    np.asarray(w)


def test_large_eager_dot_is_enqueued():
  xn = rand(600, 600)
  x = jnp.asarray(xn)
  y = jnp.dot(x, x)
  assert is_pending(y)
  assert y.shape == (600, 600) and y.dtype == np.float32
  z = jnp.dot(y, x)              # pending input: the stream waits for it
  np.testing.assert_allclose(np.asarray(z), xn @ xn @ xn, rtol=1e-3, atol=1e-2)
  small = jnp.dot(jnp.ones((3, 3)), jnp.ones(3))
  assert not is_pending(small)
  with async_dispatch(False):
    assert not is_pending(jnp.dot(x, x))


def test_exit_without_waiting_does_not_hang():
  code = textwrap.dedent("""
      import numpy as np
      import pyjax, pyjax.numpy as jnp
      from pyjax._src.backends.cpu import executable
      executable.set_compile_mode("sync")
      x = jnp.asarray(np.ones((800, 800), np.float32))
      f = pyjax.jit(lambda a: jnp.tanh(a @ a))
      f(x).block_until_ready()
      ys = [f(x) for _ in range(4)] + [jnp.dot(x, x) for _ in range(4)]
      print("dispatched", flush=True)
  """)
  p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                     timeout=300)
  assert p.returncode == 0, p.stderr
  assert "dispatched" in p.stdout


@needs_cc
def test_caller_keeps_running_while_work_runs():
  x = jnp.asarray(rand(1000, 1000) * 0.03)
  f = native_jit(lambda a: a @ a, x)
  import time
  t0 = time.perf_counter()
  y = x
  for _ in range(8):
    y = f(y)                      # a chain: every call but the first has a pending input
  t1 = time.perf_counter()
  y.block_until_ready()
  t2 = time.perf_counter()
  assert t1 - t0 < 0.5 * (t2 - t0), (t1 - t0, t2 - t0)


@needs_cc
def test_compiled_call_and_callback_calling_jit_inside_async_work():
  xn = rand(N, N)
  x = jnp.asarray(xn)
  inner = native_jit(lambda a: a @ a, x)
  ref = np.asarray(inner(x))
  compiled = pyjax.jit(lambda a: a @ a).lower(x)
  with compile_mode("sync"):
    c = compiled.compile()
  np.testing.assert_array_equal(np.asarray(c(inner(x))), np.asarray(inner(jnp.asarray(ref))))

  def cb(v):                      # runs on the stream's worker: its jit call is synchronous
    return np.asarray(inner(v)) + np.asarray(jnp.dot(v, v))

  def outer(a):
    return pyjax.pure_callback(cb, pyjax.ShapeDtypeStruct(a.shape, a.dtype), a * 1.0) - 1.0
  g = native_jit(outer, x)
  out = g(x)   # a program with a callback runs synchronously (its errors at the call)
  assert not is_pending(out)
  out = g(inner(x) * 0 + x)   # ... also with a pending input: waited for, then run here
  assert not is_pending(out)
  np.testing.assert_allclose(np.asarray(out), ref + np.asarray(jnp.dot(x, x)) - 1.0,
                             rtol=1e-5, atol=1e-3)


def _parked_stream():
  """A Stream whose worker never starts: its tasks run only when a waiter takes them."""
  from pyjax._src.runtime import stream
  s = stream.Stream("test-parked")
  s._thread = threading.current_thread()    # marks it started; no worker is created
  with stream._streams_lock:
    stream._streams.remove(s)                # (synchronize_all must not wait for it)
  return s


def test_waiter_runs_the_next_task_itself_in_order():
  from pyjax._src.runtime import stream
  s = _parked_stream()
  ran = []

  def work(tag):
    ran.append((tag, threading.current_thread() is threading.main_thread(),
                stream.in_worker()))
    return (np.float32(tag),)

  p1, = s.submit(work, [1], 1)
  p2, = s.submit(work, [2], 1)
  # the second task's predecessor has not run: a waiter does not take it (with the worker
  # parked it would wait for ever), so check that from another thread that gives up
  t = threading.Thread(target=p2.wait, daemon=True)
  t.start()
  t.join(0.2)
  assert t.is_alive() and ran == []
  assert p1.result() == 1                    # next in line: run here, as on a worker
  assert p2.result() == 2                    # (the blocked thread does not look again)
  t.join(5)
  assert not t.is_alive()
  assert ran == [(1, True, True), (2, True, True)]
  assert not stream.in_worker()              # restored after running a task here


def test_worker_skips_a_task_a_waiter_took_and_keeps_order():
  from pyjax._src.runtime import stream
  s = stream.Stream("test-order")
  gate = threading.Event()
  ran = []

  def blocked():
    gate.wait(5)
    ran.append("first")
    return (np.float32(0),)

  def second():
    ran.append("second")
    return (np.float32(2),)

  p1, = s.submit(blocked, [], 1)
  p2, = s.submit(second, [], 1)
  threading.Timer(0.1, gate.set).start()
  assert p2.result() == 2                    # waits: its predecessor is still running
  assert p1.result() == 0 and ran == ["first", "second"]
  # a task a waiter ran is not run again by the worker
  p3, = s.submit(lambda: (ran.append("third") or np.float32(3),), [], 1)
  assert p3.result() == 3
  s.synchronize()
  assert ran == ["first", "second", "third"]


def test_error_of_work_run_by_a_waiter_raised_at_every_read():
  s = _parked_stream()

  def bad():
    raise ValueError("boom in stolen work")

  p, = s.submit(bad, [], 1)
  for _ in range(2):
    with pytest.raises(ValueError, match="boom in stolen work"):
      p.result()


def test_work_a_waiter_ran_is_not_kept_by_the_queue():
  """The queue's slot is emptied when a waiter takes the task, so its outputs can be freed
  (and pooled output buffers reused) before the worker reaches the slot."""
  import gc
  import weakref
  s = _parked_stream()
  p, = s.submit(lambda: (np.ones(4, np.float32),), [], 1)
  out = weakref.ref(p.result())
  assert out() is not None and s._q.qsize() == 1
  del p
  gc.disable()                 # freed by reference counting alone, no cycle left behind
  try:
    assert out() is None
  finally:
    gc.enable()
