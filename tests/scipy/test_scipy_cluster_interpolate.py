"""pyjax.scipy.cluster.vq and pyjax.scipy.interpolate against real JAX and SciPy."""

import numpy as np
import pytest

import pyjax
from pyjax.scipy.cluster.vq import vq as pvq
from pyjax.scipy.interpolate import RegularGridInterpolator as PRGI
from jax_compare import check, slow_except

scipy = pytest.importorskip("scipy")

R = np.random.RandomState(0)


# --- cluster.vq and interpolate -----------------------------------------------------------
def test_vq():
  obs = R.randn(6, 3).astype(np.float32)
  cb = R.randn(4, 3).astype(np.float32)
  check(lambda m: m.vq.vq(obs, cb), tol=1e-5)
  check(lambda m: m.vq.vq(obs[:, 0], cb[:, 0]), tol=1e-5)
  check(lambda m: m.vq.vq(obs, cb[:, 0]))
  code, dist = pvq(obs, cb)
  import scipy.cluster.vq as svq
  scode, sdist = svq.vq(obs.astype(np.float64), cb.astype(np.float64))
  np.testing.assert_array_equal(code, scode)
  np.testing.assert_allclose(dist, sdist, rtol=1e-5)


GRID = (np.linspace(0, 1, 4), np.linspace(0, 2, 5))
VALS = R.randn(4, 5).astype(np.float32)
PTS = (R.rand(6, 2) * 2.2 - 0.1)


@pytest.mark.parametrize("method,fill", slow_except(
    [(md, f) for md in ("linear", "nearest") for f in (np.nan, None, 0.0)], {0, 4}))
def test_regular_grid_interpolator(method, fill):
  check(lambda m: m.interpolate.RegularGridInterpolator(GRID, VALS, method=method,
                                                        fill_value=fill)(PTS), tol=1e-5)
  from scipy.interpolate import RegularGridInterpolator as SRGI
  got = np.asarray(PRGI(GRID, VALS, method=method, fill_value=fill,
                        bounds_error=False)(PTS))
  want = SRGI(GRID, VALS.astype(np.float64), method=method, fill_value=fill,
              bounds_error=False)(PTS)
  np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_regular_grid_interpolator_misc():
  vals3 = R.randn(4, 5, 2).astype(np.float32)
  check(lambda m: m.interpolate.RegularGridInterpolator(GRID, vals3)(PTS), tol=1e-5)
  check(lambda m: m.interpolate.RegularGridInterpolator(GRID, VALS)(
      (PTS[:, 0], PTS[:, 1])), tol=1e-5)
  check(lambda m: m.interpolate.RegularGridInterpolator(GRID, VALS, method="cubic"))
  check(lambda m: m.interpolate.RegularGridInterpolator(GRID, VALS, bounds_error=True))
  interp = PRGI(GRID, VALS)
  np.testing.assert_allclose(pyjax.jit(lambda it, p: it(p))(interp, PTS), interp(PTS),
                             rtol=1e-6)
