"""``python -m pyjax.demo``: pyjax's seed workflows, end to end.

Image restoration, run eagerly with ``pyjax.numpy`` and checked against NumPy/SciPy:
crop / flip / rot90 an image, add Gaussian noise, blur each channel with a Gaussian kernel
through ``pyjax.scipy.signal.convolve2d``, sharpen, clip.  (Later issues grow this demo with
jit, grad, vmap and real data sets.)
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np


def _load_image():
  """scikit-image's cat photograph when installed, else a synthetic 300x400 RGB scene."""
  try:
    from skimage import data
    return data.chelsea().astype(np.float32) / 255.0, "skimage.data.chelsea()"
  except Exception:  # noqa: BLE001  (optional dependency)
    h, w = 300, 400
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    r = 0.5 + 0.5 * np.sin(xx / 23.0) * np.cos(yy / 31.0)
    g = ((xx // 40 + yy // 40) % 2).astype(np.float32) * 0.6 + 0.2
    b = np.exp(-((xx - 200) ** 2 + (yy - 150) ** 2) / (2 * 60.0 ** 2))
    return np.stack([r, g, b], axis=-1).astype(np.float32), "synthetic 300x400 scene"


def gaussian_kernel(size=7, sigma=1.5, xp=np):
  x = xp.linspace(-(size // 2), size // 2, size)
  g = xp.exp(-(x ** 2) / (2 * sigma ** 2))
  k = xp.outer(g, g)
  return k / xp.sum(k)


def restore(img, noise, xp, convolve2d):
  """The seed pipeline on one backend (xp = numpy or pyjax.numpy)."""
  img = xp.asarray(img)
  cropped = img[10:-10, 20:-20]
  flipped = xp.flip(cropped, axis=1)
  rotated = xp.rot90(flipped, 2)
  noisy = rotated + xp.asarray(noise)
  k = gaussian_kernel(xp=xp)
  blurred = xp.stack([convolve2d(noisy[:, :, c], k, mode="same") for c in range(3)], axis=-1)
  sharpen = xp.asarray(np.array([[0, -1, 0], [-1, 5, -1], [0, -1, 0]], np.float32))
  sharp = xp.stack([convolve2d(blurred[:, :, c], sharpen, mode="same") for c in range(3)], axis=-1)
  return noisy, blurred, xp.clip(sharp, 0.0, 1.0)


def psnr(a, b):
  mse = float(np.mean((np.asarray(a, np.float64) - np.asarray(b, np.float64)) ** 2))
  return 10 * np.log10(1.0 / mse)


def main(argv=None):
  p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  p.add_argument("--out", default="pyjax-demo-output", help="directory for output files")
  p.add_argument("--quick", action="store_true", help="smaller run (CI)")
  args = p.parse_args(argv)
  import scipy.signal
  import pyjax
  import pyjax.numpy as jnp
  from pyjax.scipy.signal import convolve2d

  os.makedirs(args.out, exist_ok=True)
  img, source = _load_image()
  if args.quick:
    img = img[:120, :160]
  rng = np.random.default_rng(0)
  h, w = img.shape[0] - 20, img.shape[1] - 40
  noise = (0.1 * rng.standard_normal((h, w, 3))).astype(np.float32)
  print(f"pyjax {pyjax.__version__} on {pyjax.devices()}: image restoration on {source} {img.shape}")

  t0 = time.perf_counter()
  noisy, blurred, restored = restore(img, noise, jnp, convolve2d)
  restored.block_until_ready()
  t_pyjax = time.perf_counter() - t0
  t0 = time.perf_counter()
  ref = restore(img, noise, np, lambda a, k, mode: scipy.signal.convolve2d(a, k, mode=mode))
  t_numpy = time.perf_counter() - t0
  err = max(float(np.max(np.abs(np.asarray(a) - b))) for a, b in zip((noisy, blurred, restored), ref))
  clean = np.rot90(np.flip(img[10:-10, 20:-20], axis=1), 2)
  print(f"  eager pipeline: pyjax {t_pyjax * 1e3:.1f} ms, NumPy/SciPy {t_numpy * 1e3:.1f} ms, "
        f"max |pyjax - numpy| = {err:.2e}")
  print(f"  PSNR noisy vs clean {psnr(noisy, clean):.2f} dB, blurred vs clean "
        f"{psnr(blurred, clean):.2f} dB")
  np.save(os.path.join(args.out, "restored.npy"), np.asarray(restored))
  print(f"  wrote {os.path.join(args.out, 'restored.npy')}")
  if err > 1e-4:
    print("  MISMATCH against NumPy", file=sys.stderr)
    return 1
  return 0


if __name__ == "__main__":
  sys.exit(main())
