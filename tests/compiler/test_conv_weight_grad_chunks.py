"""The kernel gradient of a channels-last convolution (``compiler/kernels/convolution.py``,
``_k_chunks``): its transposed im2col is gathered and multiplied chunk by chunk along the
contraction (batch x output positions), in groups whose partial products are added in a
fixed order.  Results against JAX in float32 and float64 (sgemm and dgemm); the plan
follows the shapes alone (the bits never depend on the threads: ``test_tier_determinism``)."""
import numpy as np
import pytest

import pyjax
from pyjax import lax
from pyjax._src.backends.cpu import executable
from pyjax._src.backends.cpu.compiler.kernels import convolution
from pyjax._src.backends.cpu.compiler.native import build

jax = pytest.importorskip("jax")

pytestmark = pytest.mark.skipif(build.toolchain() is None, reason="no C compiler")


def test_chunk_plan_follows_the_shapes():
  # the flax CNN's second convolution: 16 images of 14x14x32 -> 64 features, 3x3
  assert convolution._k_chunks(16, 196 * 288, 288, 64) == (1, 16, 4)
  cu, nchunk, groups = convolution._k_chunks(32, 144 * 27, 27, 16)
  assert (cu, nchunk) == (16, 2) and 1 <= groups <= 2
  assert convolution._k_chunks(24, 288 * 64, 288, 2) == (3, 8, 1)   # little work: one group
  assert convolution._k_chunks(1, 1000, 8, 8) is None        # nothing to cut
  assert convolution._k_chunks(4, 1 << 17, 64, 64) is None    # a chunk would not fit
  assert convolution._k_chunks(8, 100, 8, 8) is None          # all of it is one chunk


@pytest.mark.parametrize("dt,rhs_spec", [("float32", "HWIO"), ("float64", "HWIO")])
def test_kernel_gradient_matches_jax(dt, rhs_spec):
  rng = np.random.default_rng(3)
  x = rng.standard_normal((24, 8, 8, 32)).astype(dt)
  # 8 chunks of 3 images in 4 groups: each group accumulates two chunks
  assert convolution._k_chunks(24, 288 * 64, 288, 16) == (3, 8, 4)
  w = rng.standard_normal((3, 3, 32, 16) if rhs_spec == "HWIO" else (16, 32, 3, 3)).astype(dt)
  dn = ("NHWC", rhs_spec, "NHWC")

  def grads(lx, x, w):
    def loss(x, w):
      y = lx.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=dn)
      return (y * y).sum()
    return (jax if lx is jax.lax else pyjax).grad(loss, (0, 1))(x, w)

  with pyjax.enable_x64(dt == "float64"), jax.enable_x64(dt == "float64"):
    want = [np.asarray(v) for v in grads(jax.lax, x, w)]
    res = {}
    for mode in ("sync", "off"):
      pyjax.clear_caches()
      with executable.compile_mode_override(mode):
        f = pyjax.jit(lambda x, w: grads(lax, x, w))
        res[mode] = [np.asarray(v) for v in f(x, w)]
        assert f.lower(x, w).compile().runtime_executable().tier == (
            "native" if mode == "sync" else "numpy")
  tol = 2e-5 if dt == "float32" else 1e-12
  for got, ref in zip(res["sync"], want):
    assert got.dtype == ref.dtype and got.shape == ref.shape
    np.testing.assert_allclose(got, ref, rtol=tol, atol=tol * np.abs(ref).max())
  for a, b in zip(res["sync"], res["off"]):
    np.testing.assert_array_equal(a, b)
