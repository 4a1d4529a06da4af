"""Worker for ``tests/compiler/test_tier_determinism.py``: trains a model for N steps under the
``PYJAX_COMPILE`` mode of its environment and writes the final parameters (``.npz``).

    python tests/_tier_worker.py {mlp,cnn} STEPS OUT.npz [--load]

``--load`` runs CPU-burning threads alongside (pure Python and NumPy work), so that the
native code of an ``async`` run arrives at a different step than in a quiet run.
The data are synthetic (fixed NumPy seeds), of the shapes of ``examples/digits_mlp.py``
(64 features, 10 classes) and of a small image batch for the CNN.
"""
from __future__ import annotations

import os
import sys
import threading

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))

import pyjax as jax  # noqa: E402
import pyjax.numpy as jnp  # noqa: E402
from pyjax import lax, nn  # noqa: E402


def _burn(stop):
  a = np.random.default_rng(1).standard_normal((200, 200))
  while not stop.is_set():
    s = 0
    for i in range(20000):   # holds the GIL: delays the dispatching thread
      s += i * i
    # releases it: competes for the cores.  No BLAS here: pyjax sets OpenBLAS's thread
    # count process-wide around long dots, so another thread's concurrent BLAS calls can
    # change how a product is split (a documented limit, docs/differences.md)
    a = np.tanh(a * 1e-3 + np.sin(a))


def mlp_run(steps):
  import digits_mlp as dm
  rng = np.random.default_rng(0)
  x = rng.random((512, 64), dtype=np.float32)
  y = rng.integers(0, 10, 512).astype(np.int32)
  params = dm.init_mlp(jax.random.key(0), [64, 256, 128, 10])
  opt = dm.adam_init(params)
  xs, ys = jnp.asarray(x), jnp.asarray(y)
  for i in range(steps):
    j = (i * 64) % 512
    params, opt, value = dm.train_step(params, opt, xs[j:j + 64], ys[j:j + 64])
  return params, value


def _cnn_init(key):
  k1, k2 = jax.random.split(key)
  return {"conv": nn.initializers.lecun_normal()(k1, (3, 3, 1, 8)),
          "cb": jnp.zeros(8),
          "w": nn.initializers.glorot_normal()(k2, (8 * 4 * 4, 10)),
          "b": jnp.zeros(10)}


def _cnn_loss(p, images, labels):
  h = lax.conv_general_dilated(images, p["conv"], (1, 1), "SAME",
                               dimension_numbers=("NHWC", "HWIO", "NHWC"))
  h = nn.relu(h + p["cb"])
  h = lax.reduce_window(h, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
  h = h.reshape((h.shape[0], -1))
  logits = jnp.tanh(h @ p["w"] + p["b"]) * 5
  logp = nn.log_softmax(logits)
  return -jnp.mean(jnp.sum(logp * nn.one_hot(labels, 10), axis=-1)) + 1e-4 * jnp.mean(
      jnp.exp(-p["w"] ** 2))


@jax.jit
def _cnn_step(p, opt, images, labels):
  value, g = jax.value_and_grad(_cnn_loss)(p, images, labels)
  t = opt["t"] + 1
  m = jax.tree.map(lambda m, g: 0.9 * m + 0.1 * g, opt["m"], g)
  v = jax.tree.map(lambda v, g: 0.999 * v + 0.001 * g * g, opt["v"], g)
  c1, c2 = 1 - 0.9 ** t, 1 - 0.999 ** t
  p = jax.tree.map(lambda p, m, v: p - 1e-2 * (m / c1) / (jnp.sqrt(v / c2) + 1e-8), p, m, v)
  return p, {"m": m, "v": v, "t": t}, value


def cnn_run(steps):
  rng = np.random.default_rng(0)
  x = rng.random((128, 8, 8, 1), dtype=np.float32)
  y = rng.integers(0, 10, 128).astype(np.int32)
  p = _cnn_init(jax.random.key(1))
  opt = {"m": jax.tree.map(jnp.zeros_like, p), "v": jax.tree.map(jnp.zeros_like, p),
         "t": jnp.zeros((), jnp.int32)}
  xs, ys = jnp.asarray(x), jnp.asarray(y)
  for i in range(steps):
    j = (i * 32) % 128
    p, opt, value = _cnn_step(p, opt, xs[j:j + 32], ys[j:j + 32])
  return p, value


def main(argv):
  model, steps, out = argv[0], int(argv[1]), argv[2]
  stop = threading.Event()
  burners = []
  if "--load" in argv:
    burners = [threading.Thread(target=_burn, args=(stop,), daemon=True) for _ in range(2)]
    for t in burners:
      t.start()
  try:
    params, value = (mlp_run if model == "mlp" else cnn_run)(steps)
  finally:
    stop.set()
    for t in burners:
      t.join()
  leaves = [np.asarray(v) for v in jax.tree.leaves(params)] + [np.asarray(value)]
  np.savez(out, *leaves)


if __name__ == "__main__":
  main(sys.argv[1:])
