"""Native ``conv_general_dilated`` of the CPU compiler (``backends/cpu/compiler/kernels/convolution.py``):
float32/float64 convolutions with any dimension numbers, strides, padding, dilations and
groups run in C; results equal the NumPy tier bit for bit (it runs the same kernels,
``numpy_tier/native.py``) and the eager NumPy implementation and JAX to rounding."""
import numpy as np
import pytest

import pyjax
from pyjax import lax
from pyjax._src.backends.cpu import executable
from pyjax._src.backends.cpu.compiler.native import build

jax = pytest.importorskip("jax")

pytestmark = pytest.mark.skipif(build.toolchain() is None, reason="no C compiler")

CASES = [
    ((8, 3, 16, 16), (16, 3, 3, 3), dict(window_strides=(1, 1), padding="SAME")),
    ((2, 4, 9, 7), (6, 2, 3, 2), dict(window_strides=(2, 1), padding=((1, 2), (0, -1)),
                                      lhs_dilation=(1, 2), rhs_dilation=(2, 1),
                                      feature_group_count=2)),
    ((4, 2, 5, 6), (4, 2, 2, 3), dict(window_strides=(1, 2), padding="VALID",
                                      batch_group_count=2)),
    ((2, 5, 6, 3), (3, 3, 3, 4), dict(window_strides=(1, 1), padding="SAME",
                                      dimension_numbers=("NHWC", "HWIO", "NHWC"))),
    ((2, 3, 11), (5, 3, 4), dict(window_strides=(3,), padding=((2, 1),), lhs_dilation=(2,))),
    ((1, 2, 4, 5, 6), (3, 2, 2, 2, 3), dict(window_strides=(1, 2, 1), padding="SAME")),
]


def _run(mode, f, *args):
  prev = executable.set_compile_mode(mode)
  try:
    jf = pyjax.jit(lambda *a: f(*a))
    exe = jf.lower(*args).compile().runtime_executable()
    return [np.asarray(v) for v in pyjax.tree_util.tree_leaves(jf(*args))], exe
  finally:
    executable.set_compile_mode(prev)


@pytest.mark.parametrize("dt", ["float32", "float64"])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_conv_native_matches(dt, case):
  xs, ws, kw = CASES[case]
  rng = np.random.default_rng(case)
  prev, jprev = pyjax.config.jax_enable_x64, jax.config.jax_enable_x64
  pyjax.config.update("jax_enable_x64", dt == "float64")
  jax.config.update("jax_enable_x64", dt == "float64")
  try:
    x = rng.standard_normal(xs).astype(dt)
    w = rng.standard_normal(ws).astype(dt)
    f = lambda x, w: lax.conv_general_dilated(x, w, **kw)  # noqa: E731
    (got,), exe = _run("sync", f, x, w)
    assert exe.tier == "native" and not exe.native.host_steps
    assert "conv" in exe.as_text()
    # the NumPy tier runs the native kernel too (numpy_tier/native.py): the same bits; the eager
    # NumPy implementation (im2col + matmul) is the independent reference
    (want,), _ = _run("off", f, x, w)
    np.testing.assert_array_equal(got, want)
    want = np.asarray(f(x, w))
    ref = np.asarray(jax.lax.conv_general_dilated(x, w, **kw))
    assert got.dtype == want.dtype == ref.dtype == np.dtype(dt)
    assert got.shape == want.shape == ref.shape
    tol = 2e-5 if dt == "float32" else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * 10)
    np.testing.assert_allclose(got, ref, rtol=tol, atol=tol * 10)
  finally:
    pyjax.config.update("jax_enable_x64", prev)
    jax.config.update("jax_enable_x64", jprev)


def test_conv_grad_native():
  """The transposed convolutions of a gradient (lhs dilation, swapped dimension numbers)."""
  rng = np.random.default_rng(1)
  x = rng.standard_normal((2, 3, 8, 8)).astype(np.float32)
  w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)

  def loss(lx, x, w):
    return (lx.conv_general_dilated(x, w, (2, 2), "SAME") ** 2).sum()
  f = pyjax.grad(lambda x, w: loss(lax, x, w), argnums=(0, 1))
  got, exe = _run("sync", f, x, w)
  assert exe.tier == "native" and not exe.native.host_steps
  want, _ = _run("off", f, x, w)
  ref = jax.grad(lambda x, w: loss(jax.lax, x, w), argnums=(0, 1))(x, w)
  for g, a, b in zip(got, want, ref):
    np.testing.assert_array_equal(g, a)   # the NumPy tier runs the native kernels
    np.testing.assert_allclose(g, np.asarray(b), rtol=1e-4, atol=1e-4)


def test_conv_other_dtypes_stay_on_numpy():
  x = np.ones((1, 1, 4, 4), np.int32)
  w = np.ones((1, 1, 2, 2), np.int32)
  f = lambda x, w: lax.conv_general_dilated(x, w, (1, 1), "VALID")  # noqa: E731
  (got,), exe = _run("sync", f, x, w)
  np.testing.assert_array_equal(got, np.full((1, 1, 3, 3), 4, np.int32))


@pytest.mark.parametrize("dn,groups", [(("NHWC", "HWIO", "NHWC"), 1),
                                       (("NHWC", "HWIO", "NHWC"), 2),
                                       (("NCHW", "OIHW", "NCHW"), 1)])
def test_conv_gemm_grad_channels_last(dn, groups):
  """A channels-last convolution and both gradients (the kernel gradient reads the input
  as 'CHWN': the transposed im2col) run as im2col + GEMM (NCHW: the direct kernel) and
  agree with the NumPy tier and JAX; strided and padded so the windows read padding."""
  rng = np.random.default_rng(7)
  xs = (3, 9, 10, 4) if dn[0] == "NHWC" else (3, 4, 9, 10)
  ws = (3, 3, 4 // groups, 6) if dn[1] == "HWIO" else (6, 4 // groups, 3, 3)
  x = rng.standard_normal(xs).astype(np.float32)
  w = rng.standard_normal(ws).astype(np.float32)

  def loss(lx, x, w):
    y = lx.conv_general_dilated(x, w, (2, 1), ((1, 1), (2, 0)), dimension_numbers=dn,
                                feature_group_count=groups)
    return (y * y).sum()
  f = pyjax.jit(pyjax.value_and_grad(lambda x, w: loss(lax, x, w), argnums=(0, 1)))
  got, exe = _run("sync", f, x, w)
  assert exe.tier == "native"
  assert not [h for h in exe.native.host_steps if "conv" in str(h.node)]
  text = exe.as_text()
  if dn[0] == "NHWC":   # the forward conv and input gradient by row blocks, the kernel
    assert "_gemm_rows" in text and "_im2col" in text   # gradient transposed
  else:                 # spatial-innermost layouts keep the direct kernel
    assert "_gemm_rows" not in text and "_im2col" not in text and "_direct" in text
  want, _ = _run("off", f, x, w)
  ref = jax.tree_util.tree_leaves(
      jax.value_and_grad(lambda x, w: loss(jax.lax, x, w), argnums=(0, 1))(x, w))
  for g, a, b in zip(got, want, ref):
    assert g.shape == a.shape == b.shape and g.dtype == a.dtype
    np.testing.assert_array_equal(g, a)   # the NumPy tier runs the native kernels
    np.testing.assert_allclose(g, np.asarray(b), rtol=1e-4, atol=1e-3)
