"""The seeds' quickstart measurements, timed for pyjax, NumPy and (when installed) JAX.

selu eagerly vs jitted; grad of sum_logistic checked against finite differences; vmap vs
a Python loop of matrix-vector products; ``jnp.dot`` with and without
``block_until_ready``.  Prints one table (median of several runs, milliseconds).

    python examples/quickstart.py [--quick]
"""
from __future__ import annotations

import argparse
import importlib
import time

import numpy as np


def median_ms(fn, repeat=7, number=1, settle=False):
  """Median wall time of ``fn()`` in ms.  ``settle``: wait for the (asynchronously
  dispatched) result after each timed run, outside the timing, so queued work does not
  spill into the next measurement."""
  fn()   # warm up: traces, compiles, fills caches
  times = []
  for _ in range(repeat):
    t0 = time.perf_counter()
    for _ in range(number):
      r = fn()
    times.append((time.perf_counter() - t0) / number)
    if settle:
      r.block_until_ready()
  return float(np.median(times)) * 1e3


def measure(jax, jnp, quick=False):
  """The measurements for one JAX-like library; returns {row name: milliseconds}."""
  n = 200_000 if quick else 1_000_000
  key = jax.random.key(0)
  x = jax.random.normal(key, (n,))

  def selu(x, alpha=1.67, lmbda=1.05):
    return lmbda * jnp.where(x > 0, x, alpha * jnp.exp(x) - alpha)
  selu_jit = jax.jit(selu)

  def sum_logistic(x):
    return jnp.sum(1.0 / (1.0 + jnp.exp(-x)))
  grad_fn = jax.jit(jax.grad(sum_logistic))
  small = jnp.arange(3.0)

  mat = jax.random.normal(key, (150, 100))
  batched_x = jax.random.normal(key, (10, 100))

  def apply_matrix(v):
    return jnp.dot(mat, v)

  def loop_batched(v_batched):
    return jnp.stack([apply_matrix(v) for v in v_batched])
  vmap_batched = jax.jit(jax.vmap(apply_matrix))

  size = 500 if quick else 1000
  big = jax.random.normal(key, (size, size))
  # compile ahead: pyjax's first calls run on NumPy while its C compiler works in the
  # background; .compile() waits for the native code (in JAX it just compiles)
  selu_jit.lower(x).compile()
  grad_fn.lower(small).compile()
  vmap_batched.lower(batched_x).compile()
  return {
      f"selu eager, {n:,} floats": median_ms(lambda: selu(x).block_until_ready()),
      f"selu jit, {n:,} floats": median_ms(lambda: selu_jit(x).block_until_ready()),
      "jit(grad(sum_logistic)), 3 floats": median_ms(
          lambda: grad_fn(small).block_until_ready(), number=20),
      "matvec: Python loop of 10": median_ms(
          lambda: loop_batched(batched_x).block_until_ready(), number=5),
      "matvec: jit(vmap) of 10": median_ms(
          lambda: vmap_batched(batched_x).block_until_ready(), number=20),
      f"dot {size}x{size}, no wait": median_ms(lambda: jnp.dot(big, big), settle=True),
      f"dot {size}x{size}, block_until_ready": median_ms(
          lambda: jnp.dot(big, big).block_until_ready()),
  }


def measure_numpy(quick=False):
  n = 200_000 if quick else 1_000_000
  rng = np.random.default_rng(0)
  x = rng.standard_normal(n).astype(np.float32)
  mat = rng.standard_normal((150, 100)).astype(np.float32)
  batched_x = rng.standard_normal((10, 100)).astype(np.float32)
  size = 500 if quick else 1000
  big = rng.standard_normal((size, size)).astype(np.float32)
  selu = median_ms(lambda: 1.05 * np.where(x > 0, x, 1.67 * np.exp(x) - 1.67))
  loop = median_ms(lambda: np.stack([mat @ v for v in batched_x]), number=5)
  dot = median_ms(lambda: big @ big)
  return [selu, None, None, loop, median_ms(lambda: batched_x @ mat.T, number=20), dot, dot]


def check_grad(jax, jnp):
  """grad(sum_logistic) against central finite differences, in float32."""
  def sum_logistic(x):
    return jnp.sum(1.0 / (1.0 + jnp.exp(-x)))
  x = jnp.arange(3.0)
  g = np.asarray(jax.grad(sum_logistic)(x))
  eps = 1e-3
  fd = np.array([(float(sum_logistic(x.at[i].add(eps))) - float(sum_logistic(x.at[i].add(-eps))))
                 / (2 * eps) for i in range(3)])
  return g, fd


def run(out_dir=None, quick=False, log=print):
  import pyjax
  import pyjax.numpy as pjnp
  g, fd = check_grad(pyjax, pjnp)
  log("quickstart: grad(sum_logistic) at [0, 1, 2] = "
      f"{np.array2string(g, precision=5)}; finite differences {np.array2string(fd, precision=5)}")
  columns = {"pyjax": list(measure(pyjax, pjnp, quick).items()), "NumPy": None, "JAX": None}
  rows = [name for name, _ in columns["pyjax"]]
  columns["pyjax"] = [ms for _, ms in columns["pyjax"]]
  columns["NumPy"] = measure_numpy(quick)
  try:
    jax = importlib.import_module("jax")
    columns["JAX"] = list(measure(jax, importlib.import_module("jax.numpy"), quick).values())
  except ImportError:
    del columns["JAX"]
  width = max(len(r) for r in rows)
  log(f"  {'median ms':<{width}}" + "".join(f"{c:>10}" for c in columns))
  for i, r in enumerate(rows):
    cells = "".join(f"{'-' if v[i] is None else f'{v[i]:.3f}':>10}" for v in columns.values())
    log(f"  {r:<{width}}{cells}")
  return {"grad": g, "finite_differences": fd, "rows": rows, "timings": columns}


def main(argv=None):
  p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  p.add_argument("--quick", action="store_true")
  args = p.parse_args(argv)
  run(quick=args.quick)


if __name__ == "__main__":
  main()
