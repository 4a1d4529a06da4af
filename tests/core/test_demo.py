"""The demo runs the example workflows in quick mode; their outputs exist and are sane."""
import os

import numpy as np
import pytest

from pyjax import demo

pytest.importorskip("sklearn", reason="the digits workflow needs scikit-learn (demo extra)")


@pytest.fixture(scope="module")
def demo_results(tmp_path_factory):
  out = tmp_path_factory.mktemp("demo")
  return out, demo.main(["--quick", "--out", str(out)])


def test_every_workflow_ran(demo_results):
  _, results = demo_results
  assert set(results) == set(demo.WORKFLOWS)


def test_image_restoration_improves_psnr(demo_results):
  out, results = demo_results
  r = results["image_restoration"]
  assert os.path.exists(r["png"]) and os.path.getsize(r["png"]) > 1000
  assert r["psnr_restored"] > r["psnr_noisy"] + 3.0
  assert r["conv_vs_convolve2d"] < 1e-4


def test_linear_regression_recovers_parameters(demo_results):
  r = demo_results[1]["linear_regression"]
  assert abs(r["weight"] - 3.0) < 0.2 and abs(r["bias"] + 1.0) < 0.2


def test_digits_mlp_accuracy(demo_results):
  assert demo_results[1]["digits_mlp"]["accuracy"] >= 0.93


def test_quickstart_grad_matches_finite_differences(demo_results):
  r = demo_results[1]["quickstart"]
  np.testing.assert_allclose(r["grad"], r["finite_differences"], rtol=2e-3)
  assert all(t > 0 for t in r["timings"]["pyjax"])


def test_image_pipeline_matches_numpy():
  """The jitted per-channel pipeline equals SciPy's convolve2d on the same noisy image."""
  import scipy.signal
  import pyjax.numpy as jnp
  ex = demo.load_example("image_restoration")
  rng = np.random.default_rng(1)
  noisy = rng.random((40, 50, 3)).astype(np.float32)
  k = np.asarray(ex.gaussian_kernel())
  blurred, restored = ex.restore_per_channel(jnp.asarray(noisy), jnp.asarray(k),
                                             jnp.asarray(ex.SHARPEN))
  ref_b = np.stack([scipy.signal.convolve2d(noisy[..., c], k, mode="same") for c in range(3)], -1)
  ref_r = np.stack([scipy.signal.convolve2d(ref_b[..., c], ex.SHARPEN, mode="same")
                    for c in range(3)], -1)
  assert blurred.dtype == np.float32 and blurred.shape == noisy.shape
  np.testing.assert_allclose(np.asarray(blurred), ref_b, rtol=1e-5, atol=1e-5)
  np.testing.assert_allclose(np.asarray(restored), np.clip(ref_r, 0, 1), rtol=1e-5, atol=1e-5)
