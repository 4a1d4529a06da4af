"""The seed workflow (image restoration) runs eagerly and matches NumPy/SciPy."""
import numpy as np
import scipy.signal

import pyjax.numpy as jnp
from pyjax import demo
from pyjax.scipy.signal import convolve2d


def test_seed_image_workflow_matches_numpy():
  img, _ = demo._load_image()
  img = img[:60, :80]
  rng = np.random.default_rng(1)
  noise = (0.1 * rng.standard_normal((40, 40, 3))).astype(np.float32)
  ours = demo.restore(img, noise, jnp, convolve2d)
  ref = demo.restore(img, noise, np, lambda a, k, mode: scipy.signal.convolve2d(a, k, mode=mode))
  for o, r in zip(ours, ref):
    assert o.shape == r.shape
    assert o.dtype == np.float32
    np.testing.assert_allclose(np.asarray(o), r, rtol=1e-5, atol=1e-5)
  assert float(jnp.max(ours[2])) <= 1.0 and float(jnp.min(ours[2])) >= 0.0


def test_demo_main_quick(tmp_path, capsys):
  assert demo.main(["--quick", "--out", str(tmp_path)]) == 0
  out = capsys.readouterr().out
  assert "image restoration" in out and "PSNR" in out
  assert (tmp_path / "restored.npy").exists()
