"""Eager per-op overhead and a few 1M-element ops: pyjax vs JAX vs NumPy, in one run.

    python benchmarks/eager_overhead.py [--repeat N]

Prints the median time per call (µs) of each case and the pyjax/JAX ratio.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import timeit

import numpy as np


def _median_us(fn, number, repeat):
  fn()  # warm up
  times = timeit.repeat(fn, number=number, repeat=repeat)
  return statistics.median(times) / number * 1e6


def cases(np_mod, kind):
  """(name, setup -> callable, calls per timing) for one module."""
  def ready(x):
    if kind != "numpy":
      x.block_until_ready()
    return x

  small = np_mod.asarray(np.arange(3, dtype=np.float32))
  big = np_mod.asarray(np.random.default_rng(0).standard_normal(1_000_000).astype(np.float32))
  small_i = np_mod.asarray(np.arange(3, dtype=np.int32))
  return [
      ("a + a (3 floats)", lambda: ready(small + small), 20000),
      ("a * 2.0 (3 floats)", lambda: ready(small * 2.0), 20000),
      ("sin(a) (3 floats)", lambda: ready(np_mod.sin(small)), 20000),
      ("a < b (3 ints)", lambda: ready(small_i < small_i), 20000),
      ("sum(a) (3 floats)", lambda: ready(np_mod.sum(small)), 10000),
      ("a[1] (3 floats)", lambda: ready(small[1]), 10000),
      ("reshape (3 floats)", lambda: ready(small.reshape(3, 1)), 10000),
      ("a + a (1M floats)", lambda: ready(big + big), 20),
      ("exp(a) (1M floats)", lambda: ready(np_mod.exp(big)), 20),
      ("sum(a) (1M floats)", lambda: ready(np_mod.sum(big)), 20),
      ("a * 2 + 1 (1M floats)", lambda: ready(big * 2.0 + 1.0), 20),
  ]


def main(argv=None):
  p = argparse.ArgumentParser()
  p.add_argument("--repeat", type=int, default=7)
  args = p.parse_args(argv)
  import pyjax.numpy as pjnp
  mods = [("pyjax", pjnp, "pyjax")]
  try:
    import jax
    import jax.numpy as jjnp
    jax.config.update("jax_platforms", "cpu")
    mods.append(("jax", jjnp, "jax"))
  except ImportError:
    print("(JAX not installed: ratios vs JAX omitted)", file=sys.stderr)
  mods.append(("numpy", np, "numpy"))
  results = {}
  for label, mod, kind in mods:
    for name, fn, number in cases(mod, kind):
      try:
        results[(label, name)] = _median_us(fn, number, args.repeat)
      except Exception as e:  # a case a module cannot run
        results[(label, name)] = float("nan")
        print(f"{label} {name}: {type(e).__name__}: {e}", file=sys.stderr)
  names = [c[0] for c in cases(np, "numpy")]
  labels = [m[0] for m in mods]
  header = f"{'case':26s}" + "".join(f"{l + ' µs':>12s}" for l in labels) + (f"{'pyjax/jax':>11s}" if "jax" in labels else "")
  print(header)
  ratios = []
  for n in names:
    row = f"{n:26s}" + "".join(f"{results[(l, n)]:12.2f}" for l in labels)
    if "jax" in labels:
      r = results[("pyjax", n)] / results[("jax", n)]
      ratios.append(r)
      row += f"{r:11.2f}"
    print(row)
  if ratios:
    finite = [r for r in ratios if r == r]
    gm = float(np.exp(np.mean(np.log(finite)))) if finite else float("nan")
    print(f"geometric mean pyjax/jax: {gm:.2f}")


if __name__ == "__main__":
  main()
