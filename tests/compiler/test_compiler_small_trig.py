"""Kernels of at most ``vmath.SCALAR_MAX`` elements with float32 sin/cos/tan: a vectorized
form on the reduction-free polynomials runs first, and the kernel runs again on the scalar
variants when an argument has |x| >= 0.785398 (``vmath.small_trig``).  Both forms give the
reducing functions' bits, so every result here equals the NumPy tier's bit for bit,
whichever form ran; a kernel whose output overwrites an input, or of fewer than 8
elements, keeps the scalar form only."""
from __future__ import annotations

import numpy as np
import pytest

import pyjax
import pyjax.numpy as jnp
from pyjax import lax
from pyjax._src.backends.cpu import executable
from pyjax._src.backends.cpu.compiler.kernels import vmath
from pyjax._src.backends.cpu.compiler.native import build

pytestmark = [
    pytest.mark.skipif(build.toolchain() is None, reason="no C compiler"),
    pytest.mark.filterwarnings("error:pyjax:RuntimeWarning"),
]

compile_mode = executable.compile_mode_override
F32 = np.float32


def native(f, *args):
  with compile_mode("sync"):
    jf = pyjax.jit(f)
    exe = jf.lower(*args).compile().runtime_executable()
    assert exe.error is None, exe.error
    assert exe.tier == "native"
    return jf, exe


def numpy_tier(f, *args):
  with compile_mode("off"):
    return pyjax.jit(f)(*args)


def same_bits(a, b, what=""):
  a, b = np.asarray(a), np.asarray(b)
  assert a.dtype == b.dtype and a.shape == b.shape, what
  assert np.array_equal(a.view(np.uint32), b.view(np.uint32)), (what, a, b)


def _inputs():
  """16-element float32 vectors: all small (the fast form's results stand), one large
  element, a NaN, an infinity, -0.0 and subnormals among small ones, the range's edge."""
  rng = np.random.default_rng(5)
  small = (rng.uniform(-0.78, 0.78, 16)).astype(F32)
  edge = small.copy()
  edge[[0, 1]] = [np.float32(0.785398), np.nextafter(np.float32(0.785398), F32(0))]
  out = {"small": small, "edge": edge}
  for name, v in (("large", 3.5), ("nan", np.nan), ("inf", -np.inf), ("huge", 1e30)):
    x = small.copy()
    x[7] = v
    out[name] = x
  special = small.copy()
  special[[2, 3, 4]] = [-0.0, 1e-40, -1e-45]
  out["special"] = special
  return out


def _body(x):
  # map, row (reduction) and broadcast uses of the three functions in one small program
  s = jnp.sin(x) * 0.5 + jnp.cos(x)
  return s, jnp.tan(x * 0.5).sum(), jnp.cos(x).max(), jnp.sin(x).reshape(4, 4).sum(0)


def test_small_kernels_match_numpy_tier_on_both_forms():
  """One program (one build): every input set gives the NumPy tier's bits; the generated C
  has the fast form, the full form and the dispatcher."""
  xs = _inputs()
  jf, exe = native(_body, xs["small"])
  text = exe.as_text()
  assert "_fast(void *ctx" in text and "_full(void *ctx" in text
  assert "PJ_F_SIN_P(" in text and "PJ_F_COS_P(" in text and "PJ_F_TAN_P(" in text
  for name, x in xs.items():
    for _ in range(2):   # after a miss the next calls run the full form directly
      got = jf(x)
      want = numpy_tier(_body, x)
      for i, (g, w) in enumerate(zip(got, want)):
        same_bits(g, w, (name, i))


def test_loop_carry_small_and_large_arguments():
  """A scan whose 16-wide carry starts large (full form, then 64 calls skip the fast one)
  and shrinks below pi/4 (fast form): the NumPy tier's bits, and JAX's values to rounding
  (XLA contracts ``c * 0.9 + ...`` into fused multiply-adds)."""
  def make(lib):
    def f(c):
      def step(c, _):
        return c * F32(0.9) + lib.numpy.sin(c) * F32(0.01), None
      return lib.lax.scan(step, c, None, length=120)[0]
    return f
  f = make(pyjax)
  c = np.linspace(-6, 6, 16, dtype=F32)
  jf, exe = native(f, c)
  assert "_fast(void *ctx" in exe.as_text()
  got = jf(c)
  same_bits(got, numpy_tier(f, c))
  jax = pytest.importorskip("jax")
  ref = np.asarray(jax.jit(make(jax))(c))
  np.testing.assert_allclose(np.asarray(got), ref, rtol=2e-5)


def test_one_form_when_in_place_or_tiny():
  """A kernel that may write its output over a donated input runs once (the scalar
  variants), never twice; so does a kernel of fewer than 8 elements (scalar code is as
  fast there)."""
  src = vmath.small_trig("static void k_range(void *ctx, int64_t lo, int64_t hi) {\n"
                         "  x = PJ_F_SIN(y);\n}\n", "k", False)
  assert "PJ_F_SIN_S(y)" in src and "_fast" not in src
  src = vmath.small_trig("static void k_range(void *ctx, int64_t lo, int64_t hi) {\n"
                         "  for (int i = 0; i < 9; i++) x[i] = PJ_F_SIN(y[i]);\n}\n", "k", True)
  assert "#pragma omp simd reduction(|:pj_big) simdlen(4)" in src and "PJ_F_SIN_S(y[i])" in src

  def f(x):
    return jnp.sin(x) + 1
  for n, donate in ((8, True), (4, False)):
    x = np.full(n, 2.0, F32)
    with compile_mode("sync"):
      jf = pyjax.jit(f, donate_argnums=0 if donate else ())
      exe = jf.lower(x).compile().runtime_executable()
      assert exe.native.donation == ({0: 0} if donate else {})
      text = exe.as_text()
      assert "PJ_F_SIN_S(" in text and "_fast(void *ctx" not in text
      out = jf(pyjax.device_put(x))
    same_bits(out, numpy_tier(f, x))


@pytest.mark.slow
def test_sanitizers_small_trig(tmp_path):
  """This file's tests with the generated C under AddressSanitizer/UBSan (both forms of a
  kernel read and write only its own range)."""
  import sanitizers
  sanitizers.run_pytest(tmp_path, __file__, ["-m", "not slow"])
