"""A neural network on real data: scikit-learn's handwritten digits with pyjax.

An MLP (64-256-128-10) trained with ``jit(value_and_grad(loss))``, an Adam optimizer
written with pytrees, minibatches drawn with ``pyjax.random.permutation``, and ``vmap``
for per-example predictions.  Prints test accuracy and time per epoch.

    python examples/digits_mlp.py [--quick]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import pyjax as jax
import pyjax.numpy as jnp
from pyjax import nn


def load_digits():
  """8x8 digit images scaled to [0, 1] (scikit-learn ships them), 80/20 split."""
  from sklearn.datasets import load_digits as _load
  d = _load()
  x = (d.data / 16.0).astype(np.float32)
  y = d.target.astype(np.int32)
  order = np.random.default_rng(0).permutation(len(x))
  x, y = x[order], y[order]
  n_train = int(0.8 * len(x))
  return (x[:n_train], y[:n_train]), (x[n_train:], y[n_train:])


def init_mlp(key, sizes):
  params = []
  for k, (n_in, n_out) in zip(jax.random.split(key, len(sizes) - 1), zip(sizes[:-1], sizes[1:])):
    w = nn.initializers.glorot_normal()(k, (n_in, n_out))
    params.append({"w": w, "b": jnp.zeros(n_out)})
  return params


def predict(params, image):
  """Logits for ONE flattened image; vmap makes it batched."""
  h = image
  for layer in params[:-1]:
    h = nn.relu(h @ layer["w"] + layer["b"])
  return h @ params[-1]["w"] + params[-1]["b"]


batched_predict = jax.vmap(predict, in_axes=(None, 0))


def loss(params, images, labels):
  logp = nn.log_softmax(batched_predict(params, images))
  return -jnp.mean(jnp.sum(logp * nn.one_hot(labels, 10), axis=-1))


def adam_init(params):
  zeros = jax.tree.map(jnp.zeros_like, params)
  return {"m": zeros, "v": zeros, "t": jnp.zeros((), jnp.int32)}


@jax.jit
def train_step(params, opt, images, labels, lr=1e-3, b1=0.9, b2=0.999, eps=1e-8):
  value, grads = jax.value_and_grad(loss)(params, images, labels)
  t = opt["t"] + 1
  m = jax.tree.map(lambda m, g: b1 * m + (1 - b1) * g, opt["m"], grads)
  v = jax.tree.map(lambda v, g: b2 * v + (1 - b2) * g * g, opt["v"], grads)
  m_hat_scale = 1 / (1 - b1 ** t)
  v_hat_scale = 1 / (1 - b2 ** t)
  params = jax.tree.map(
      lambda p, m, v: p - lr * (m * m_hat_scale) / (jnp.sqrt(v * v_hat_scale) + eps), params, m, v)
  return params, {"m": m, "v": v, "t": t}, value


@jax.jit
def accuracy(params, images, labels):
  return jnp.mean(jnp.argmax(batched_predict(params, images), axis=-1) == labels)


def run(out_dir=None, quick=False, log=print, progress=True):
  (x_train, y_train), (x_test, y_test) = load_digits()
  x_train, y_train = jnp.asarray(x_train), jnp.asarray(y_train)
  key = jax.random.key(0)
  key, init_key = jax.random.split(key)
  params = init_mlp(init_key, [64, 256, 128, 10])
  opt = adam_init(params)
  epochs, batch = (12 if quick else 30), 64
  n_batches = len(x_train) // batch
  log(f"MLP on scikit-learn digits: {len(x_train)} train / {len(x_test)} test images, "
      f"{epochs} epochs of {n_batches} minibatches")
  bar = _progress(epochs * n_batches, progress)
  epoch_times = []
  for _ in range(epochs):
    t0 = time.perf_counter()
    key, perm_key = jax.random.split(key)
    perm = jax.random.permutation(perm_key, len(x_train))
    for i in range(n_batches):
      idx = perm[i * batch:(i + 1) * batch]
      params, opt, value = train_step(params, opt, x_train[idx], y_train[idx])
      if bar is not None:
        bar.update(1)
        if i == n_batches - 1:
          bar.set_postfix(loss=f"{float(value):.4f}")
    value.block_until_ready()
    epoch_times.append(time.perf_counter() - t0)
  if bar is not None:
    bar.close()
  acc = float(accuracy(params, jnp.asarray(x_test), jnp.asarray(y_test)))
  per_epoch = float(np.median(epoch_times[1:] if len(epoch_times) > 1 else epoch_times))
  log(f"  test accuracy {acc * 100:.1f}%, final minibatch loss {float(value):.4f}, "
      f"{per_epoch * 1e3:.0f} ms per epoch (median; the first, with tracing, "
      f"{epoch_times[0] * 1e3:.0f} ms)")
  return {"accuracy": acc, "epoch_seconds": per_epoch}


def _progress(total, enabled):
  if not enabled:
    return None
  try:
    from tqdm import tqdm
  except ImportError:
    return None
  return tqdm(total=total, desc="training", unit="step", leave=False)


def main(argv=None):
  p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  p.add_argument("--quick", action="store_true")
  args = p.parse_args(argv)
  run(quick=args.quick)


if __name__ == "__main__":
  main()
