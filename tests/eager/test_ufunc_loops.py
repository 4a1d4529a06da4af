"""NumPy's own inner loops on the native thread pool (``backends/cpu/eager/ufunc_loops.py``):
the same bits as the ufunc, the eager route that uses them, and the layout checks."""
import numpy as np
import pytest

import pyjax.numpy as jnp
from pyjax._src.backends.cpu.eager import native as en
from pyjax._src.backends.cpu import executable
from pyjax._src.backends.cpu.eager import ufunc_loops
from pyjax._src.backends.cpu.compiler.native import build

needs_cc = pytest.mark.skipif(build.toolchain() is None, reason="no C compiler")


def _x(dt, n):
  rng = np.random.default_rng(5)
  x = rng.standard_normal(n) * np.exp(rng.uniform(-7, 7, n))
  x[:8] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40, 700.0, -800.0]
  return x.astype(dt)


@pytest.fixture
def sync():
  prev = executable.set_compile_mode("sync")
  yield
  executable.set_compile_mode(prev)


@needs_cc
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_loops_give_ufunc_bits(sync, dt):
  x = _x(dt, 300_007)   # odd: the chunks' tails
  with np.errstate(all="ignore"):
    for fn in (np.exp, np.log, np.sin, np.tanh, np.arctan):
      out = np.empty_like(x)
      assert ufunc_loops.run(fn, x, out)
      want = fn(x)
      assert out.tobytes() == want.tobytes(), fn.__name__


def test_layout_checks():
  assert ufunc_loops._read_loop(np.add, "f") is None          # binary
  assert ufunc_loops._read_loop(np.exp, "i") is None          # no i->i loop
  loop = ufunc_loops._read_loop(np.exp, "f")
  assert loop is not None and loop[0]


@needs_cc
def test_eager_exp_route(sync, monkeypatch):
  """With NumPy's exp as the eager implementation (``PYJAX_TIER_NATIVE=0``; by default
  the compiler's kernel serves it, ``eager/kernel_calls.py``), a large exp runs NumPy's
  loop on the pool."""
  from pyjax._src.backends.cpu.eager.registry import impls
  monkeypatch.setitem(impls, "exp", getattr(impls["exp"], "__wrapped__", impls["exp"]))
  x = _x(np.float32, en.THREAD_MIN_ELEMENTS + 3)
  before = en.stats["threads"]
  got = np.asarray(jnp.exp(jnp.asarray(x)))
  assert en.stats["threads"] == before + 1
  with np.errstate(all="ignore"):
    assert got.tobytes() == np.exp(x).tobytes()
