"""pyjax.scipy.spatial.transform against real JAX and SciPy."""

import numpy as np
import pytest

from jax_compare import check, slow_except

scipy = pytest.importorskip("scipy")

R = np.random.RandomState(0)


# --- spatial.transform --------------------------------------------------------------------
QUATS = R.randn(5, 4).astype(np.float32)
VECS = R.randn(5, 3).astype(np.float32)


def _rot(m):
  import importlib
  return importlib.import_module(f"{m.name}.scipy.spatial.transform")


@pytest.mark.parametrize("method", slow_except(["as_matrix", "as_mrp", "as_rotvec", "as_quat",
                                          "magnitude", "mean"], {0, 2}))
def test_rotation_conversions(method):
  check(lambda m: getattr(_rot(m).Rotation.from_quat(QUATS), method)(), tol=1e-5)


@pytest.mark.parametrize("seq", slow_except(["xyz", "ZYX", "zxz", "XYX", "xzy"], {1, 2}))
def test_rotation_euler(seq):
  check(lambda m: _rot(m).Rotation.from_quat(QUATS).as_euler(seq), tol=1e-5)
  check(lambda m: _rot(m).Rotation.from_euler(seq, VECS, degrees=True).as_quat(), tol=1e-5)
  from scipy.spatial.transform import Rotation as SR
  from pyjax.scipy.spatial.transform import Rotation as PR
  np.testing.assert_allclose(PR.from_quat(QUATS).as_euler(seq),
                             SR.from_quat(QUATS.astype(np.float64)).as_euler(seq), atol=2e-5)


def test_rotation_misc_and_slerp():
  check(lambda m: _rot(m).Rotation.from_quat(QUATS).apply(VECS, inverse=True), tol=1e-5)
  check(lambda m: (_rot(m).Rotation.from_quat(QUATS) * _rot(m).Rotation.from_quat(
      QUATS[::-1])).as_quat(canonical=True, scalar_first=True), tol=1e-5)
  mats = np.asarray(__import__("scipy.spatial.transform", fromlist=["R"]).Rotation.from_quat(
      QUATS.astype(np.float64)).as_matrix(), np.float32)
  check(lambda m: _rot(m).Rotation.from_matrix(mats).as_quat(), tol=1e-5)
  check(lambda m: _rot(m).Rotation.from_rotvec(VECS).inv().as_quat(), tol=1e-5)
  check(lambda m: _rot(m).Rotation.from_mrp(VECS * 0.3).as_quat(), tol=1e-5)
  check(lambda m: _rot(m).Slerp.init(np.arange(5.), _rot(m).Rotation.from_quat(QUATS))(
      np.float32([0.5, 1.7, 3.9])).as_quat(), tol=1e-5)
  check(lambda m: _rot(m).Rotation.from_euler("xxz", VECS))
  check(lambda m: _rot(m).Rotation.from_quat(QUATS[0])[0])
  check(lambda m: _rot(m).Slerp.init(np.arange(5.), _rot(m).Rotation.from_quat(QUATS[0])))
