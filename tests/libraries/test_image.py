"""pyjax.image against real JAX: resize for every method (up/down, antialias on/off,
several axes and dtypes), scale_and_translate (values, gradients w.r.t. scale), errors."""
import itertools

import numpy as np
import pytest

import pyjax
import pyjax.image as pimage
import pyjax.numpy as pjnp

METHODS = ["nearest", "linear", "bilinear", "trilinear", "triangle", "cubic", "bicubic",
           "tricubic", "cubic-pytorch", "bicubic-pytorch", "lanczos3", "lanczos5", "area"]
KERNELS = ["linear", "cubic", "cubic-pytorch", "lanczos3", "lanczos5", "area"]


def _jax():
  return pytest.importorskip("jax")


def _img(shape, dtype=np.float32, seed=0):
  x = np.random.RandomState(seed).uniform(-1, 3, shape)
  return x.astype(dtype)


def _check(p, j, dtype):
  assert p.dtype == j.dtype, (p.dtype, j.dtype)
  assert p.shape == j.shape
  tol = {np.float16: 5e-3, np.float32: 2e-6, np.float64: 1e-12}.get(np.dtype(j.dtype).type, 0)
  scale = max(1.0, float(np.max(np.abs(np.asarray(j, np.float64))))) if j.size else 1.0
  np.testing.assert_allclose(np.asarray(p, np.float64), np.asarray(j, np.float64),
                             rtol=0, atol=tol * scale * 4)


def _compare_resize(x, shape, method, antialias=True):
  jax = _jax()
  p = pimage.resize(pjnp.asarray(x), shape, method, antialias=antialias)
  j = jax.image.resize(jax.numpy.asarray(x), shape, method, antialias=antialias)
  _check(p, j, x.dtype)


@pytest.mark.parametrize("method", METHODS)
def test_resize_methods_match_jax(method):
  x = _img((5, 6))
  _compare_resize(x, (8, 3), method)          # up in one axis, down in the other


@pytest.mark.parametrize("method", KERNELS)
def test_resize_without_antialias(method):
  _compare_resize(_img((7, 4)), (3, 9), method, antialias=False)


@pytest.mark.slow
@pytest.mark.parametrize("method,antialias,shapes", list(itertools.product(
    KERNELS + ["nearest"], [True, False],
    [((4, 4), (4, 4)), ((3, 10), (11, 4)), ((1, 5), (3, 1)), ((2, 3, 4), (4, 3, 2)),
     ((2, 6, 6, 3), (2, 3, 4, 3)), ((9,), (20,))])))
def test_resize_sweep(method, antialias, shapes):
  in_shape, out_shape = shapes
  _compare_resize(_img(in_shape, seed=len(in_shape)), out_shape, method, antialias)


@pytest.mark.parametrize("dtype", [np.float16, np.int32, np.uint8, np.bool_])
def test_resize_dtypes(dtype):
  x = (_img((4, 5)) * 3).astype(dtype)
  for method in ["nearest", "linear"]:
    _compare_resize(x, (6, 2), method)


def test_resize_nearest_keeps_dtype_and_picks_pixels():
  x = pjnp.arange(12).reshape(3, 4)
  out = pimage.resize(x, (5, 2), "nearest")
  assert out.dtype == np.int32
  np.testing.assert_array_equal(out, [[1, 3], [1, 3], [5, 7], [9, 11], [9, 11]])


def test_resize_identity_and_empty():
  x = _img((3, 4))
  for method in KERNELS:
    np.testing.assert_allclose(pimage.resize(pjnp.asarray(x), (3, 4), method), x, rtol=1e-6)
  assert pimage.resize(pjnp.asarray(x), (0, 2), "linear").shape == (0, 2)


def test_resize_method_enum_and_errors():
  RM = pimage.ResizeMethod
  assert [m.name for m in RM] == ["NEAREST", "LINEAR", "LANCZOS3", "LANCZOS5", "CUBIC",
                                  "CUBIC_PYTORCH", "AREA"]
  assert RM.from_string("bilinear") is RM.LINEAR
  assert RM.from_string("tricubic") is RM.CUBIC
  assert RM.from_string("bicubic-pytorch") is RM.CUBIC_PYTORCH
  x = pjnp.ones((3, 4))
  np.testing.assert_allclose(pimage.resize(x, (2, 2), RM.LANCZOS3),
                             pimage.resize(x, (2, 2), "lanczos3"))
  with pytest.raises(ValueError, match='Unknown resize method "foo"'):
    pimage.resize(x, (5, 2), "foo")
  with pytest.raises(ValueError, match="shape must have length equal to the number of "
                                       "dimensions of x"):
    pimage.resize(x, (5,), "linear")
  with pytest.raises(ValueError, match="Nearest neighbor resampling is not currently "
                                       "supported for scale_and_translate."):
    pimage.scale_and_translate(x, (5, 2), (0, 1), pjnp.ones(2), pjnp.zeros(2), "nearest")
  jax = _jax()
  assert [m.name for m in jax.image.ResizeMethod] == [m.name for m in RM]


@pytest.mark.parametrize("method", KERNELS)
def test_scale_and_translate_matches_jax(method):
  jax = _jax()
  x = _img((2, 5, 6, 3))
  scale = np.array([1.7, 0.6], np.float32)
  trans = np.array([0.3, -0.8], np.float32)
  for antialias in [True, False]:
    p = pimage.scale_and_translate(pjnp.asarray(x), (2, 7, 4, 3), (1, 2), pjnp.asarray(scale),
                                   pjnp.asarray(trans), method, antialias=antialias)
    # real JAX jitted: eagerly it compiles each of the weight computation's ops apart
    j = jax.jit(lambda x, s, t: jax.image.scale_and_translate(
        x, (2, 7, 4, 3), (1, 2), s, t, method, antialias=antialias))(x, scale, trans)
    _check(p, j, x.dtype)


def test_scale_and_translate_negative_axes_and_no_axes():
  x = pjnp.asarray(_img((4, 5)))
  a = pimage.scale_and_translate(x, (6, 5), (-2,), pjnp.array([1.5]), pjnp.array([0.0]),
                                 "linear")
  b = pimage.scale_and_translate(x, (6, 5), (0,), pjnp.array([1.5]), pjnp.array([0.0]),
                                 "linear")
  np.testing.assert_array_equal(a, b)
  same = pimage.scale_and_translate(x, (4, 5), (), pjnp.zeros(0), pjnp.zeros(0), "linear")
  np.testing.assert_array_equal(same, x)


def test_scale_and_translate_gradients_match_jax():
  jax = _jax()
  x = _img((6, 5))

  def loss(m, api, s, t):
    out = api.image.scale_and_translate(m.asarray(x), (4, 7), (0, 1), s, t, "cubic")
    return m.sum(out ** 2)
  s, t = np.array([0.7, 1.3], np.float32), np.array([0.25, -0.5], np.float32)
  gp = pyjax.grad(lambda s, t: loss(pjnp, pyjax, s, t), argnums=(0, 1))(
      pjnp.asarray(s), pjnp.asarray(t))
  gj = jax.jit(jax.grad(lambda s, t: loss(jax.numpy, jax, s, t), argnums=(0, 1)))(s, t)
  for a, b in zip(gp, gj):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-4, atol=1e-4)


def test_resize_under_jit_vmap_grad():
  x = pjnp.asarray(_img((3, 5, 4)))
  f = lambda im: pimage.resize(im, (7, 2), "lanczos3")
  batched = pyjax.vmap(f)(x)
  for i in range(3):
    np.testing.assert_allclose(batched[i], f(x[i]), rtol=1e-6, atol=1e-6)
  np.testing.assert_allclose(pyjax.jit(f)(x[0]), f(x[0]), rtol=1e-6, atol=1e-6)
  # resize is linear in the image: the gradient of sum(resize(x)) is W-row sums
  g = pyjax.grad(lambda im: f(im).sum())(x[0])
  jax = _jax()
  gj = jax.jit(jax.grad(lambda im: jax.image.resize(im, (7, 2), "lanczos3").sum()))(
      np.asarray(x[0]))
  np.testing.assert_allclose(np.asarray(g), np.asarray(gj), rtol=1e-5, atol=1e-6)


def test_antialias_low_passes():
  # a checkerboard downsampled 2x: with antialiasing it averages to ~constant, without it
  # (linear at exact pixel offsets) it keeps full contrast
  board = (np.indices((8, 8)).sum(0) % 2).astype(np.float32)
  smooth = np.asarray(pimage.resize(pjnp.asarray(board), (4, 4), "linear", antialias=True))
  assert np.ptp(smooth) < 0.3
  for method in ["cubic", "lanczos3", "area"]:
    out = np.asarray(pimage.resize(pjnp.asarray(board), (4, 4), method))
    np.testing.assert_allclose(out.mean(), 0.5, atol=0.05)
