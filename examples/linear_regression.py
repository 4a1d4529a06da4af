"""Linear regression with explicit state (the seeds' stateful-computation page).

Parameters live in a NamedTuple; a jitted SGD step takes the old state and returns the
new one — no hidden mutation.  1000 steps on noisy samples of y = w x + b; writes a PNG of
the data and the fit and prints the learned weight and bias next to the true ones.

    python examples/linear_regression.py [--out DIR] [--quick]
"""
from __future__ import annotations

import argparse
import os
from typing import NamedTuple

import numpy as np

import pyjax as jax
import pyjax.numpy as jnp

TRUE_W, TRUE_B = 3.0, -1.0


class Params(NamedTuple):
  weight: jnp.ndarray
  bias: jnp.ndarray


def init(rng) -> Params:
  weights_key, bias_key = jax.random.split(rng)
  return Params(jax.random.normal(weights_key, ()), jax.random.normal(bias_key, ()))


def loss(params: Params, x, y):
  pred = params.weight * x + params.bias
  return jnp.mean((pred - y) ** 2)


LEARNING_RATE = 0.005


@jax.jit
def update(params: Params, x, y) -> Params:
  grad = jax.grad(loss)(params, x, y)
  # Params is a pytree, so one tree_map updates every leaf.
  return jax.tree.map(lambda p, g: p - LEARNING_RATE * g, params, grad)


def run(out_dir, quick=False, log=print):
  key = jax.random.key(42)
  xs_key, noise_key, init_key = jax.random.split(key, 3)
  xs = jax.random.normal(xs_key, (128, 1))
  ys = TRUE_W * xs + TRUE_B + 0.5 * jax.random.normal(noise_key, (128, 1))
  params = init(init_key)
  steps = 1000
  for _ in range(steps):
    params = update(params, xs, ys)
  w, b = float(params.weight), float(params.bias)
  log(f"linear regression, {steps} jitted SGD steps on {xs.shape[0]} points")
  log(f"  learned w = {w:.3f}, b = {b:.3f}   (true w = {TRUE_W}, b = {TRUE_B}); "
      f"final loss {float(loss(params, xs, ys)):.3f}")
  path = os.path.join(out_dir, "linear_regression.png")
  _plot(path, np.asarray(xs), np.asarray(ys), w, b)
  log(f"  wrote {path}")
  return {"weight": w, "bias": b, "png": path}


def _plot(path, xs, ys, w, b):
  try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
  except ImportError:   # no plotting library: keep the numbers as text
    np.savetxt(path.replace(".png", ".txt"), np.c_[xs, ys], header=f"fit w={w} b={b}")
    return
  fig, ax = plt.subplots(figsize=(6, 4))
  ax.scatter(xs, ys, s=10, label="data")
  grid = np.linspace(xs.min(), xs.max(), 2)
  ax.plot(grid, w * grid + b, c="red", label=f"fit: {w:.2f} x + {b:.2f}")
  ax.legend()
  fig.tight_layout()
  fig.savefig(path, dpi=100)
  plt.close(fig)


def main(argv=None):
  p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  p.add_argument("--out", default="pyjax-demo-output")
  p.add_argument("--quick", action="store_true")
  args = p.parse_args(argv)
  os.makedirs(args.out, exist_ok=True)
  run(args.out, args.quick)


if __name__ == "__main__":
  main()
