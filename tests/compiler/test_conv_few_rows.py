"""Convolutions whose product has few rows (``compiler/kernels/convolution.py``,
``_few_rows_product``: no BLAS), e.g. the kernel gradient of a first layer with one input
channel: values against a float64 NumPy reference, and the same bits on jit's NumPy tier
(which runs the native kernel) and native tier."""
import numpy as np
import pytest

import pyjax
from pyjax import lax
from pyjax._src.backends.cpu import executable
from pyjax._src.backends.cpu.compiler.native import build

needs_cc = pytest.mark.skipif(build.toolchain() is None, reason="no C compiler")
DN = ("NHWC", "HWIO", "NHWC")


def _conv(x, w, stride=(1, 1), padding="SAME"):
  return lax.conv_general_dilated(x, w, stride, padding, dimension_numbers=DN)


def _ref_kernel_grad(x, g, kh, kw, pad, stride=(1, 1)):
  """d(sum(g * conv(x, w)))/dw in float64, by the definition."""
  n, h, wd, c = x.shape
  xp = np.pad(x.astype(np.float64), ((0, 0), pad[0], pad[1], (0, 0)))
  out = np.zeros((kh, kw, c, g.shape[-1]))
  for i in range(kh):
    for j in range(kw):
      win = xp[:, i:i + stride[0] * g.shape[1]:stride[0], j:j + stride[1] * g.shape[2]:stride[1]]
      out[i, j] = np.einsum("nhwc,nhwo->co", win, g.astype(np.float64))
  return out


@needs_cc
@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=lambda d: np.dtype(d).name)
def test_first_layer_kernel_gradient(dt):
  rng = np.random.default_rng(0)
  x = rng.standard_normal((4, 13, 12, 1)).astype(dt)      # one input channel: 9 rows
  g = rng.standard_normal((4, 7, 6, 24)).astype(dt)       # stride 2: 7 x 6 outputs
  w = np.zeros((3, 3, 1, 24), dt)
  with pyjax.enable_x64(dt == np.float64):
    f = lambda x, w, g: pyjax.vjp(lambda w: _conv(x, w, (2, 2)), w)[1](g)[0]  # noqa: E731
    res = {}
    for mode in ("off", "sync"):
      pyjax.clear_caches()
      with executable.compile_mode_override(mode):
        res[mode] = np.asarray(pyjax.jit(f)(x, w, g))
  # SAME with stride 2 on 13 x 12: padding (1, 1) rows, (0, 1) columns
  want = _ref_kernel_grad(x, g, 3, 3, ((1, 1), (0, 1)), (2, 2))
  tol = 1e-5 if dt == np.float32 else 1e-12
  np.testing.assert_allclose(res["sync"], want, rtol=tol, atol=tol * np.abs(want).max())
  assert res["off"].tobytes() == res["sync"].tobytes()


@needs_cc
def test_few_output_rows_forward():
  """A forward convolution with 4 output positions (one per image) and 40 features."""
  rng = np.random.default_rng(1)
  x = rng.standard_normal((4, 5, 5, 6)).astype(np.float32)
  w = rng.standard_normal((5, 5, 6, 40)).astype(np.float32)
  pyjax.clear_caches()
  with executable.compile_mode_override("sync"):
    got = np.asarray(pyjax.jit(lambda x, w: _conv(x, w, padding="VALID"))(x, w))
  want = np.einsum("nhwc,hwco->no", x.astype(np.float64), w.astype(np.float64))
  np.testing.assert_allclose(got.reshape(4, 40), want, rtol=1e-5, atol=1e-4)
