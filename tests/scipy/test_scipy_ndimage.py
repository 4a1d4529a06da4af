"""pyjax.scipy.ndimage against real JAX and SciPy."""

import numpy as np
import pytest

import pyjax.scipy.ndimage as pnd
from jax_compare import check, slow_except

scipy = pytest.importorskip("scipy")
import scipy.ndimage as snd  # noqa: E402

R = np.random.RandomState(0)


# --- ndimage ------------------------------------------------------------------------------
IMG = R.randn(5, 6).astype(np.float32)
COORDS = [R.rand(7).astype(np.float32) * 7 - 1, R.rand(7).astype(np.float32) * 8 - 1]


@pytest.mark.parametrize("order,mode", slow_except(
    [(o, md) for o in (0, 1) for md in ("constant", "nearest", "wrap", "mirror", "reflect")],
    {0, 6, 7, 9}))
def test_map_coordinates(order, mode):
  check(lambda m: m.ndimage.map_coordinates(IMG, COORDS, order, mode=mode, cval=1.5), tol=1e-5)
  if mode != "wrap" and not (order == 0 and mode == "mirror"):
    smode = "grid-constant" if mode == "constant" else mode   # JAX's 'constant' semantics
    ref = snd.map_coordinates(IMG.astype(np.float64), np.stack(COORDS).astype(np.float64),
                              order=order, mode=smode, cval=1.5)
    np.testing.assert_allclose(pnd.map_coordinates(IMG, COORDS, order, mode=mode, cval=1.5),
                               ref, rtol=1e-5, atol=1e-5)


def test_map_coordinates_ints_grad_errors():
  img_i = (IMG * 10).astype(np.int32)
  check(lambda m: m.ndimage.map_coordinates(img_i, COORDS, 1))
  check(lambda m: m.top.grad(lambda im: m.ndimage.map_coordinates(im, COORDS, 1).sum())(IMG))
  check(lambda m: m.top.grad(lambda c: m.ndimage.map_coordinates(IMG, [c, COORDS[1]], 1)
                             .sum())(COORDS[0]))
  check(lambda m: m.ndimage.map_coordinates(IMG, COORDS, 3))
  check(lambda m: m.ndimage.map_coordinates(IMG, COORDS, 1, mode="grid-wrap"), message=False)
  check(lambda m: m.ndimage.map_coordinates(IMG, COORDS[:1], 1))
  vol = R.randn(3, 4, 5).astype(np.float32)
  c3 = [R.rand(2, 3).astype(np.float32) * 3 for _ in range(3)]
  check(lambda m: m.ndimage.map_coordinates(vol, c3, 1, mode="nearest"), tol=1e-5)
