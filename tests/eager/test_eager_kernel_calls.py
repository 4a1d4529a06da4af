"""Eager transcendental functions on the compiler's kernels (``eager/kernel_calls.py``): the
bits of the jitted op (native tier) at every size, layout and float dtype; results that
do not depend on the array's size; the C call path's fallbacks (strided operands, complex,
Python scalars); NumPy's functions when no kernel library exists."""
import ml_dtypes
import numpy as np
import pytest

import pyjax
import pyjax.numpy as jnp
from pyjax import lax
from pyjax._src.backends.cpu import executable
from pyjax._src.backends.cpu.compiler.native import build
from pyjax._src.backends.cpu.eager import kernel_calls as kc
from pyjax._src.backends.cpu.eager.registry import impls

needs_cc = pytest.mark.skipif(build.toolchain() is None or not kc.ENABLED,
                              reason="no C compiler (or PYJAX_TIER_NATIVE=0)")

_UNARY = ["exp", "log", "tanh", "logistic", "expm1", "log1p", "sin", "cos", "exp2", "erf"]


def _bits(a):
  a = np.ascontiguousarray(a)
  return a.view(f"u{a.dtype.itemsize}")


def _assert_bits(got, want, what):
  """Bit for bit, except that any NaN matches any NaN (the native tier's fused half-type
  programs may give a NaN of the other sign: log1p(-inf) next to expm1 in float16)."""
  got, want = np.asarray(got), np.asarray(want)
  assert got.dtype == want.dtype and got.shape == want.shape, what
  nan = np.isnan(got.astype(np.float64)) & np.isnan(want.astype(np.float64))
  bad = (_bits(got) != _bits(want)) & ~nan
  assert not bad.any(), (what, np.flatnonzero(bad)[:5], got.reshape(-1)[bad.reshape(-1)][:5])


def _native(f, *args):
  """``f`` jitted, compiled natively before its first call (the native tier's bits)."""
  pyjax.clear_caches()
  with executable.compile_mode_override("sync"):
    return [np.asarray(o) for o in pyjax.tree.leaves(pyjax.jit(f)(*args))]


def _data(dt, n, seed):
  rng = np.random.default_rng(seed)
  x = rng.standard_normal(n) * 3
  x[:6] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-30][:min(n, 6)]
  return x.astype(dt)


@needs_cc
@pytest.mark.parametrize("dt", [np.float32, np.float64, np.float16, ml_dtypes.bfloat16],
                         ids=lambda d: np.dtype(d).name)
def test_eager_gives_the_jitted_bits(dt):
  # 70,001 elements: the call releases the GIL and runs on the thread pool
  small, big = _data(dt, 9, 1), _data(dt, 70_001, 2)
  with pyjax.enable_x64(dt == np.float64):
    for x in (small, big):
      xs = jnp.asarray(x)
      ax = jnp.abs(xs)

      def f(a, b):
        return ([getattr(lax, n)(a) for n in _UNARY]
                + [lax.atan2(a, b), lax.pow(b, a), lax.pow(b, jnp.asarray(1.5, a.dtype))])
      want = _native(f, xs, ax)
      got = [getattr(lax, n)(xs) for n in _UNARY] + [
          lax.atan2(xs, ax), lax.pow(ax, xs), lax.pow(ax, jnp.asarray(1.5, xs.dtype))]
      for n, g, w in zip(_UNARY + ["atan2", "pow", "pow scalar"], got, want):
        _assert_bits(g, w, (n, np.dtype(dt).name, x.size))


@needs_cc
def test_bits_do_not_depend_on_size_or_layout():
  x = _data(np.float32, 300_000, 3)
  full = np.asarray(jnp.exp(jnp.asarray(x)))
  _assert_bits(jnp.exp(jnp.asarray(x[:5])), full[:5], "slice of 5")
  _assert_bits(jnp.exp(jnp.asarray(x[7])), full[7], "0-d")
  m = jnp.asarray(x[:300 * 1000].reshape(300, 1000))
  _assert_bits(jnp.exp(m.T), full[:300 * 1000].reshape(300, 1000).T, "transposed")
  _assert_bits(jnp.exp(m[:, ::3]), full[:300 * 1000].reshape(300, 1000)[:, ::3], "strided")
  # a NumPy operand with a strided layout reaches the kernel's general path directly
  strided = x[::2]
  _assert_bits(impls["exp"](strided), full[::2], "general path")
  assert kc.stats["general"] >= 1


@needs_cc
def test_fallbacks_to_numpy():
  z = (np.arange(5) + 1j * np.arange(5)).astype(np.complex64)
  got = np.asarray(jnp.exp(jnp.asarray(z)))
  np.testing.assert_allclose(got, np.exp(z), rtol=1e-6)
  # a non-array operand (NumPy scalar): converted, then the kernel
  s = np.float32(0.5)
  _assert_bits(impls["tanh"](s), np.asarray(jnp.tanh(jnp.asarray(s))), "numpy scalar")
  # an integer first operand (no float kernel): NumPy's function
  i = np.arange(4, dtype=np.int32)
  before = kc.stats["numpy"]
  _assert_bits(impls["exp"](i), np.exp(i), "int32")
  assert kc.stats["numpy"] == before + 1


def test_without_a_kernel_library_numpy_serves(monkeypatch):
  """No C compiler: the wrapper gives NumPy's function's result and puts it back in the
  eager table."""
  wrapped = impls["expm1"]
  if not getattr(wrapped, "_pyjax_kernel_impl", False):
    pytest.skip("kernel wrappers not installed")
  w = kc._wrapper("expm1", wrapped.__wrapped__)
  monkeypatch.setattr(kc, "_state", [None])
  monkeypatch.setitem(impls, "expm1", w)
  x = _data(np.float32, 11, 4)
  with np.errstate(all="ignore"):
    _assert_bits(w(x), np.expm1(x), "numpy")
  assert impls["expm1"] is wrapped.__wrapped__
