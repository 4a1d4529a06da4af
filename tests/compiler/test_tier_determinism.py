"""No silent non-determinism between jit's tiers (issue 15).

A jitted function's first calls run on the NumPy tier, later ones natively; a training loop
must give the same bits whenever the native code arrives.  Each model is trained for 200
steps in fresh subprocesses (``tests/_tier_worker.py``) with ``PYJAX_COMPILE=off`` (NumPy
tier only), ``sync`` (native from the first call) and the default ``async`` under load
(CPU-burning threads alongside, so the switch happens at another step); the final
parameters must be bit-identical.  Also per primitive: every transcendental function and a
convolution's three products, NumPy tier against native code, bit for bit.
"""
from __future__ import annotations

import glob as glob_mod
import os
import subprocess
import sys
import threading
import time
import types

import numpy as np
import pytest

import pyjax
from pyjax import lax
from pyjax._src.backends.cpu import executable
from pyjax._src.backends.cpu.compiler.native import build

_HERE = os.path.dirname(os.path.abspath(__file__))
_WORKER = os.path.join(os.path.dirname(_HERE), "_tier_worker.py")

needs_cc = pytest.mark.skipif(build.toolchain() is None, reason="no C compiler")


def _train(tmp_path, model, mode, load=False, steps=200):
  out = tmp_path / f"{model}-{mode}.npz"
  env = dict(os.environ)
  env["PYJAX_COMPILE"] = mode
  cmd = [sys.executable, _WORKER, model, str(steps), str(out)] + (["--load"] if load else [])
  r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
  assert r.returncode == 0, r.stderr[-3000:]
  with np.load(out) as z:
    return [z[k] for k in z.files]


def _assert_bits(a, b, what):
  assert len(a) == len(b)
  for i, (x, y) in enumerate(zip(a, b)):
    assert x.dtype == y.dtype and x.shape == y.shape, (what, i)
    diff = (np.ascontiguousarray(x).reshape(-1).view(np.uint8)
            != np.ascontiguousarray(y).reshape(-1).view(np.uint8))
    assert not diff.any(), (f"{what}: leaf {i} {x.shape} differs in {int(diff.sum())} bytes, "
                            f"max |d| {np.abs(x.astype(np.float64) - y).max():g}")


@needs_cc
@pytest.mark.parametrize("steps", [pytest.param(200, marks=pytest.mark.slow), 40])
@pytest.mark.parametrize("model", ["mlp", "cnn"])
def test_training_loop_same_bits_on_every_tier(tmp_path, model, steps):
  """200 steps (slow: ~50 s, the NumPy tier's MLP steps are the slow part) and 40 steps."""
  ref = _train(tmp_path, model, "off", steps=steps)
  assert all(np.isfinite(x).all() for x in ref)
  _assert_bits(ref, _train(tmp_path, model, "sync", steps=steps), f"{model}: off vs sync")


# The CNN case used to differ (1 run in 2-4) in its convolution kernel gradient: the compiler's
# background thread lowered the program while the NumPy tier's first convolution, on the
# calling thread, was still filling the opaque-kernel registry (its "loaded" flag was set
# before the modules were imported), so the program was lowered with its convolutions as
# NumPy steps, whose implementation sums the kernel gradient in another order.  See
# test_opaque_registry_is_complete_for_a_concurrent_lookup.
@needs_cc
@pytest.mark.parametrize("model", ["mlp", "cnn"])
def test_training_loop_same_bits_when_native_code_arrives_under_load(tmp_path, model):
  """40 steps with ``PYJAX_COMPILE=async`` and CPU-burning threads: the native code arrives
  at another step than in a quiet run; the bits must equal the NumPy tier's."""
  ref = _train(tmp_path, model, "off", steps=40)
  _assert_bits(ref, _train(tmp_path, model, "async", load=True, steps=40),
               f"{model}: off vs async under load")


def test_opaque_registry_is_complete_for_a_concurrent_lookup(monkeypatch):
  """The registry of native kernels (``compiler/opaque.py``) is filled by importing the
  kernel modules on first use.  A thread that looks up while another is still importing
  them waits for the full registry; it used to get None (a NumPy step instead of the
  native kernel: a program lowered differently, with other bits, depending on timing)."""
  from pyjax._src.backends.cpu.compiler import opaque

  started = threading.Event()

  def slow_import(name):   # registering takes a while, as the first import of a module
    started.set()
    time.sleep(0.2)
    opaque.register("tier_test_prim", lambda node: True, None, lambda node: 1)

  monkeypatch.setattr(opaque, "_REGISTRY", {})
  monkeypatch.setattr(opaque, "_loaded", False)
  monkeypatch.setattr(opaque, "_MODULES", ["tier_test_kernels"])
  monkeypatch.setattr(opaque, "importlib", types.SimpleNamespace(import_module=slow_import))
  node = types.SimpleNamespace(prim="tier_test_prim", effects=False)
  entry = _call_during_first_call(lambda: opaque.lookup(node), started)
  assert entry is not None and entry.prim == "tier_test_prim"


def _call_during_first_call(fn, started):
  """``fn()`` on this thread while a first call of ``fn`` on another thread is under way
  (``started`` set by it)."""
  first = threading.Thread(target=fn)
  first.start()
  assert started.wait(10)
  try:
    return fn()
  finally:
    first.join()


def test_lapack_library_search_is_complete_for_a_concurrent_caller(monkeypatch):
  """The same for the native LU/triangular-solve kernels' library search
  (``kernels/linalg.py``): a caller concurrent with the first search waits for its answer
  (it used to get the provisional '': those ops lowered as NumPy steps)."""
  from pyjax._src.backends.cpu.compiler.kernels import linalg

  want = linalg._library()
  if not want:
    pytest.skip("no SciPy OpenBLAS with getrf/trsm")
  started = threading.Event()

  def slow_glob(pattern):
    started.set()
    time.sleep(0.2)
    return glob_mod.glob(pattern)

  monkeypatch.setattr(linalg, "_lib", None)
  monkeypatch.setattr(linalg, "glob", types.SimpleNamespace(glob=slow_glob))
  assert _call_during_first_call(linalg._library, started) == want


def _tiers(f, *args):
  res = {}
  for mode in ("off", "sync"):
    pyjax.clear_caches()   # a cached executable would keep the tier it started on
    with executable.compile_mode_override(mode):
      g = pyjax.jit(lambda *a: f(*a))
      res[mode] = [np.asarray(o) for o in pyjax.tree.leaves(g(*args))]
      tier = _tier_of(g, args)
      assert tier == ("numpy" if mode == "off" else "native"), (mode, tier)
  return res["off"], res["sync"]


_UNARY = ["exp", "exp2", "log", "expm1", "log1p", "tanh", "logistic", "sin", "cos", "tan",
          "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "cbrt", "erf",
          "erfc", "rsqrt", "lgamma"]


def _domain(name, x):
  if name in ("log", "rsqrt", "lgamma"):
    return np.abs(x) + x.dtype.type(0.01)
  if name == "acosh":
    return np.abs(x) + 1
  if name in ("asin", "acos", "atanh"):
    return np.tanh(x) * x.dtype.type(0.99)
  return x


@needs_cc
@pytest.mark.parametrize("dt", [np.float32, np.float64, np.float16], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("n", [7, 4099])
def test_transcendental_functions_same_bits_on_both_tiers(dt, n):
  x = (np.random.default_rng(n).standard_normal(n) * 4).astype(dt)
  with pyjax.enable_x64(dt == np.float64):
    xs = [_domain(name, x) for name in _UNARY]
    f = lambda *xs: ([getattr(lax, name)(a) for name, a in zip(_UNARY, xs)]  # noqa: E731
                     + [lax.atan2(xs[0], xs[1]), lax.pow(xs[2], xs[0]),
                        lax.exp(xs[0] * 2.0 + 1.0) * xs[1] + xs[2]])
    got, want = _tiers(f, *xs)
  _assert_bits(want, got, f"{np.dtype(dt).name}[{n}]")


@needs_cc
def test_conv_and_its_gradients_same_bits_on_both_tiers():
  rng = np.random.default_rng(0)
  x = rng.standard_normal((32, 12, 12, 3)).astype(np.float32)
  w = rng.standard_normal((3, 3, 3, 16)).astype(np.float32)

  def f(x, w):
    def loss(x, w):
      y = lax.conv_general_dilated(x, w, (1, 1), "SAME",
                                   dimension_numbers=("NHWC", "HWIO", "NHWC"))
      return (pyjax.numpy.tanh(y) ** 2).sum()
    return pyjax.grad(loss, argnums=(0, 1))(x, w)
  got, want = _tiers(f, x, w)
  _assert_bits(want, got, "conv gradients")


def test_fused_multiply_add_rounds_twice_on_both_tiers():
  """``x * y + z`` is never contracted into one fused multiply-add natively (pyjax builds
  with ``-ffp-contract=off``), so both tiers round twice (XLA:CPU fuses: JAX's jitted
  bits may differ from these in the last place)."""
  rng = np.random.default_rng(1)
  x, y, z = (rng.standard_normal(4099).astype(np.float32) for _ in range(3))
  got, want = _tiers(lambda x, y, z: (x * y + z, z - x * y), x, y, z)
  _assert_bits(want, got, "x * y + z")
  np.testing.assert_array_equal(want[0], x * y + z)


def _tier_of(jf, args):
  return jf.lower(*args).compile().runtime_executable().tier


@needs_cc
def test_large_reductions_same_bits_on_both_tiers():
  """Float sums/products of more than 65,536 elements: XLA's order on both tiers (eager
  ops sum such operands in NumPy's pairwise order)."""
  x = np.random.default_rng(2).standard_normal((1000, 1000)).astype(np.float32)
  f = lambda x: [x.sum(1), x.sum(0), x.sum(), x.mean(0),  # noqa: E731
                 pyjax.numpy.prod(x * 0.01 + 1, 0), x.reshape(100, 100, 100).sum((0, 2))]
  got, want = _tiers(f, x)
  _assert_bits(want, got, "reductions")


@needs_cc
@pytest.mark.parametrize("m,k,n", [(128, 784, 512), (300, 1000, 200), (3, 5000, 7)])
def test_dots_same_bits_on_both_tiers(m, k, n):
  """Both tiers multiply on SciPy's BLAS, single-threaded (OpenBLAS's threaded driver
  splits long contractions elsewhere); transposed operands and batch dimensions too."""
  rng = np.random.default_rng(m)
  a = rng.standard_normal((m, k)).astype(np.float32)
  b = rng.standard_normal((k, n)).astype(np.float32)
  jnp = pyjax.numpy
  f = lambda a, b: [a @ b, jnp.einsum("ik,kj->ij", a, b) * 2 + 1,  # noqa: E731
                    jnp.einsum("bik,kj->bij", a.reshape(1, m, k), b)]
  got, want = _tiers(f, a, b)
  _assert_bits(want, got, f"dot {m}x{k}x{n}")
  np.testing.assert_allclose(want[0], a @ b, rtol=1e-4, atol=1e-3)


_SPLIT_DOTS = r"""
import sys
import numpy as np
import pyjax
from pyjax import lax
rng = np.random.default_rng(7)
shapes = [(16, 512, 33), (16, 512, 2048), (200, 300, 50), (130, 784, 512), (64, 256, 100)]
args = [(rng.standard_normal((m, k)).astype(np.float32),
         rng.standard_normal((k, n)).astype(np.float32)) for m, k, n in shapes]
x = rng.standard_normal((16, 8, 8, 3)).astype(np.float32)
w = rng.standard_normal((3, 3, 3, 8)).astype(np.float32)
conv = lambda x, w: lax.conv_general_dilated(x, w, (1, 1), "SAME",
                                             dimension_numbers=("NHWC", "HWIO", "NHWC"))
f = pyjax.jit(lambda args, x, w: [a @ b for a, b in args] + [b.T @ a.T for a, b in args]
              + list(pyjax.grad(lambda x, w: (conv(x, w) ** 2).sum(), (0, 1))(x, w)))
np.savez(sys.argv[1], *[np.asarray(o) for o in f(args, x, w)])
"""


@needs_cc
def test_dot_bits_do_not_depend_on_threads_or_tier(tmp_path):
  """OpenBLAS's bits depend on each call's shape; a product split over the thread pool runs
  in blocks fixed by the shapes (compiler/kernels/dot.py's block_size), and the NumPy tier makes the
  same calls, so 1 or 3 pool threads (or a loaded pool running serially) and either tier
  give one answer.  The split used to follow the thread count: a loaded run differed."""
  runs = []
  for mode, threads in (("off", "2"), ("sync", "1"), ("sync", "3")):
    out = tmp_path / f"{mode}{threads}.npz"
    env = dict(os.environ, PYJAX_COMPILE=mode, PYJAX_NUM_THREADS=threads)
    r = subprocess.run([sys.executable, "-c", _SPLIT_DOTS, str(out)], env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    with np.load(out) as z:
      runs.append([z[k] for k in z.files])
  _assert_bits(runs[0], runs[1], "NumPy tier vs native on 1 thread")
  _assert_bits(runs[0], runs[2], "NumPy tier vs native on 3 threads")


@needs_cc
@pytest.mark.xfail(reason="the native tier's operand layouts (BLAS transpose flags, chosen by "
                   "compiler/kernels/dot.py's canonicalization) can differ from the NumPy tier's "
                   "arrays; OpenBLAS then rounds some narrow products differently")
def test_dot_with_transposed_operand_same_bits_on_both_tiers():
  rng = np.random.default_rng(128)
  a = rng.standard_normal((128, 784)).astype(np.float32)
  c = rng.standard_normal((128, 8)).astype(np.float32)
  got, want = _tiers(lambda a, c: [a.T @ c, a.T @ a[:, :8]], a, c)
  _assert_bits(want, got, "a.T @ c")
