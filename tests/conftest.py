import os
import sys

import numpy as np
import pytest

# Deterministic default run: jitted functions stay on the NumPy tier unless a test asks
# for native code (tests/compiler/test_compiler.py does); .ci/run also runs a subset with
# PYJAX_COMPILE=sync.  A background build switching tiers mid-test could otherwise change
# the last bits of transcendental results between two calls.
os.environ.setdefault("PYJAX_COMPILE", "off")

import pyjax  # noqa: E402
from pyjax._src.backends.cpu import executable as _executable  # noqa: E402

# The compiled pass (.ci/run): the default run records, in $PYJAX_RECORD_JIT_TESTS, every
# test that runs a jitted program (a NumPy-tier executable call); the pass then reruns
# exactly those tests (PYJAX_TESTS_FROM=<that file>) with PYJAX_COMPILE=sync, so every
# jitted program of the suite also runs as native code.  Tests that never run a jitted
# program would run identically twice and are left out, and so are the tests that build
# native code and compare it with the NumPy tier themselves (_CHOOSE_TIERS: the
# compiler's (every test_compiler*.py, in any folder: the GEMM's too), the differential
# fuzzer's, the eager kernels' and the loop and PRNG first calls' files, and the few-row
# convolution's).
_RECORD = os.environ.get("PYJAX_RECORD_JIT_TESTS")
_CHOOSE_TIERS = ("test_compiler", "test_fuzz_vs_jax", "test_eager_native", "test_tier_determinism",
                 "test_loop_first_call", "test_eager_kernel_calls", "test_conv_few_rows")
_ONLY = os.environ.get("PYJAX_TESTS_FROM")
_ran_jit = [False]

if _RECORD:
  _numpy_plan = _executable._numpy_plan

  def _recording_plan(closed, name):
    fn, src = _numpy_plan(closed, name)

    def run(*bufs):
      _ran_jit[0] = True
      return fn(*bufs)
    return run, src
  _executable._numpy_plan = _recording_plan

  @pytest.hookimpl(hookwrapper=True)
  def pytest_runtest_protocol(item, nextitem):
    _ran_jit[0] = False
    yield
    if _ran_jit[0] and not os.path.basename(str(item.fspath)).startswith(_CHOOSE_TIERS):
      with open(_RECORD, "a") as f:
        f.write(item.nodeid + "\n")


if _ONLY:
  def pytest_collection_modifyitems(config, items):
    with open(_ONLY) as f:
      keep = set(f.read().split("\n"))
    drop = [it for it in items if it.nodeid not in keep]
    if drop:
      config.hook.pytest_deselected(items=drop)
      items[:] = [it for it in items if it.nodeid in keep]


# The JAX oracle compiles an XLA program for nearly every op it runs, eagerly too, and those
# compiles are most of the suite's time.  Its persistent compilation cache (shared by the
# pytest workers, kept across runs) makes a repeated oracle computation a load: CI's slow
# and compiled passes repeat the default run's.  No size limit: JAX's limited cache lists
# and reads every entry at each write (quadratic over a run); instead each entry is
# written to a temporary file and renamed into place, so a worker never reads another's
# half-written entry.  The folder only grows with new programs; delete it at will.
# PYJAX_TEST_JAX_CACHE chooses the folder ('' turns the cache off).
_ORACLE_CACHE = os.environ.get("PYJAX_TEST_JAX_CACHE")
if _ORACLE_CACHE is None:
  _ORACLE_CACHE = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"),
                               "pyjax", "jax-oracle-xla")
_oracle_cache_set = [not _ORACLE_CACHE]


def _use_oracle_cache():
  real_jax = sys.modules.get("jax")
  if real_jax is None or _oracle_cache_set[0] or real_jax.__name__ != "jax":
    return
  _oracle_cache_set[0] = True
  try:
    from jax._src import lru_cache
    suffix = lru_cache._CACHE_SUFFIX
    put = lru_cache.LRUCache.put
  except (ImportError, AttributeError):
    return

  def atomic_put(self, key, value):
    if self.eviction_enabled or not key:
      return put(self, key, value)
    path = os.path.join(str(self.path), f"{key}{suffix}")
    if os.path.exists(path):
      return
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "wb") as f:
      f.write(value)
    os.replace(tmp, path)
  lru_cache.LRUCache.put = atomic_put
  cfg = real_jax.config
  cfg.update("jax_compilation_cache_dir", _ORACLE_CACHE)
  cfg.update("jax_persistent_cache_min_compile_time_secs", 0.0)
  cfg.update("jax_persistent_cache_min_entry_size_bytes", 0)


@pytest.fixture(autouse=True)
def _restore_x64():
  """No test leaks ``jax_enable_x64`` into the next one (in pyjax or in the JAX oracle)."""
  _use_oracle_cache()
  prev = pyjax.config.jax_enable_x64
  yield
  if pyjax.config.jax_enable_x64 != prev:
    pyjax.config.update("jax_enable_x64", prev)
  real_jax = sys.modules.get("jax")
  if real_jax is not None and real_jax.config.jax_enable_x64 != prev:
    real_jax.config.update("jax_enable_x64", prev)


@pytest.fixture(params=[False, pytest.param(True, marks=pytest.mark.slow)], ids=["x32", "x64"])
def mode(request):
  """x64 off (default run), then on (slow run), in pyjax and JAX alike; yields the flag.
  Function-scoped: a module-scoped x64 fixture stays on while the module's other tests
  run."""
  jax = pytest.importorskip("jax")
  prev, jprev = pyjax.config.jax_enable_x64, jax.config.jax_enable_x64
  pyjax.config.update("jax_enable_x64", request.param)
  jax.config.update("jax_enable_x64", request.param)
  try:
    yield request.param
  finally:
    pyjax.config.update("jax_enable_x64", prev)
    jax.config.update("jax_enable_x64", jprev)


@pytest.fixture
def jax():
  """Real JAX (the oracle), or skip."""
  return pytest.importorskip("jax")


@pytest.fixture
def x64():
  """Enable x64 in pyjax (and in JAX when installed) for one test."""
  prev = pyjax.config.jax_enable_x64
  pyjax.config.update("jax_enable_x64", True)
  try:
    import jax as real_jax
    jprev = real_jax.config.jax_enable_x64
    real_jax.config.update("jax_enable_x64", True)
  except ImportError:
    real_jax = None
  try:
    yield
  finally:
    pyjax.config.update("jax_enable_x64", prev)
    if real_jax is not None:
      real_jax.config.update("jax_enable_x64", jprev)


os.environ.setdefault("JAX_PLATFORMS", "cpu")
_ = np


@pytest.fixture(params=["float32", "float64"])
def dtype(request):
  """Run a test (shared by the grad tests) in float32 and (with x64 enabled) in float64."""
  if request.param == "float32":
    yield np.float32
    return
  prev = pyjax.config.jax_enable_x64
  pyjax.config.update("jax_enable_x64", True)
  try:
    yield np.float64
  finally:
    pyjax.config.update("jax_enable_x64", prev)
