"""Eager per-op overhead and a few 1M-element ops: pyjax vs JAX vs NumPy, in one run.

    python benchmarks/eager_overhead.py [--rounds N] [--timer wall|cpu] [--only SUBSTR]

Every case is timed for each library in turn inside the same round (so a busy machine
slows all three alike), for ``--rounds`` rounds; the table shows the median time per call
(µs) of each library, pyjax's ratio to JAX and to NumPy, and the target the project holds
pyjax to: small-array ops at most half of JAX's time, large ops (1M elements; the
column mean, standard deviation and row normalization 100,000; selu is the JAX
quickstart's) at most JAX's time.  Large eager ops run on prebuilt native kernels
(elementwise, broadcast, column reductions, full float sums, ``jnp.var``/``std`` over
leading axes) or NumPy's loops on threads (``backends/cpu/eager/native.py``);
their kernels are built during the warm-up calls (``PYJAX_COMPILE=sync`` is set so that
the first call builds).
``--timer cpu`` measures process CPU time instead of wall time (steadier on a loaded
machine; it counts JAX's worker threads too).  Every timed call waits for its result
(``block_until_ready``), so asynchronous dispatch does not hide work.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
import timeit

import numpy as np

SMALL_TARGET = 0.5   # pyjax / JAX for small-array ops
LARGE_TARGET = 1.0   # pyjax / JAX for 1M-element ops


def _selu(np_mod):
  """The JAX quickstart's selu, run op by op (no jit)."""
  def selu(x, alpha=1.67, lmbda=1.05):
    return lmbda * np_mod.where(x > 0, x, alpha * np_mod.exp(x) - alpha)
  return selu


def cases(np_mod, kind):
  """[(name, callable, calls per timing, is_large)] for one library."""
  def ready(x):
    if kind != "numpy":
      x.block_until_ready()
    return x

  small = np_mod.asarray(np.arange(3, dtype=np.float32))
  small_i = np_mod.asarray(np.arange(3, dtype=np.int32))
  big = np_mod.asarray(np.random.default_rng(0).standard_normal(1_000_000).astype(np.float32))
  big2 = np_mod.asarray(np.random.default_rng(2).standard_normal(1_000_000).astype(np.float32))
  mat = np_mod.asarray(np.random.default_rng(1).standard_normal((10000, 10)).astype(np.float32))
  selu = _selu(np_mod)
  return [
      ("a + a (3 floats)", lambda: ready(small + small), 2000, False),
      ("a * 2.0 (3 floats)", lambda: ready(small * 2.0), 2000, False),
      ("a - 1 (3 ints)", lambda: ready(small_i - 1), 2000, False),
      ("sin(a) (3 floats)", lambda: ready(np_mod.sin(small)), 2000, False),
      ("a < b (3 ints)", lambda: ready(small_i < small_i), 2000, False),
      ("sum(a) (3 floats)", lambda: ready(np_mod.sum(small)), 2000, False),
      ("max(a) (3 floats)", lambda: ready(np_mod.max(small)), 2000, False),
      ("where(c, a, b) (3 floats)", lambda: ready(np_mod.where(small_i < 1, small, small)), 1000, False),
      ("a.astype(int32) (3 floats)", lambda: ready(small.astype(np.int32)), 2000, False),
      ("a[1] (3 floats)", lambda: ready(small[1]), 1000, False),
      ("reshape (3 floats)", lambda: ready(small.reshape(3, 1)), 1000, False),
      ("a + b (1M floats)", lambda: ready(big + big2), 10, True),
      ("exp(a) (1M floats)", lambda: ready(np_mod.exp(big)), 10, True),
      ("sum(a) (1M floats)", lambda: ready(np_mod.sum(big)), 10, True),
      ("max(a) (1M floats)", lambda: ready(np_mod.max(big)), 10, True),
      ("a * 2 + 1 (1M floats)", lambda: ready(big * 2.0 + 1.0), 10, True),
      ("where(a > 0, a, -a) (1M)", lambda: ready(np_mod.where(big > 0, big, -big)), 10, True),
      ("selu quickstart (1M floats)", lambda: ready(selu(big)), 5, True),
      ("X.mean(0) (10000x10)", lambda: ready(mat.mean(0)), 10, True),
      ("X.std(0) (10000x10)", lambda: ready(mat.std(0)), 10, True),
      ("(X - mean) / std (10000x10)", lambda: ready((mat - mat.mean(0)) / mat.std(0)), 10, True),
  ]


def main(argv=None):
  p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  p.add_argument("--rounds", type=int, default=15, help="timing rounds (median reported)")
  p.add_argument("--timer", choices=("wall", "cpu"), default="wall")
  p.add_argument("--only", default="", help="run only the cases whose name contains this")
  args = p.parse_args(argv)
  timer = time.perf_counter if args.timer == "wall" else time.process_time

  import os
  os.environ.setdefault("PYJAX_COMPILE", "sync")   # eager kernels built in the warm-up
  import pyjax.numpy as pjnp
  libs = [("pyjax", pjnp, "pyjax")]
  try:
    import jax
    jax.config.update("jax_platforms", "cpu")
    import jax.numpy as jjnp
    libs.append(("jax", jjnp, "jax"))
  except ImportError:
    print("(JAX not installed: ratios vs JAX omitted)", file=sys.stderr)
  libs.append(("numpy", np, "numpy"))

  table = {label: [c for c in cases(mod, kind) if args.only in c[0]] for label, mod, kind in libs}
  names = [c[0] for c in table["pyjax"]]
  samples = {(label, n): [] for label, _, _ in libs for n in names}
  broken = set()
  for label, _, _ in libs:  # warm up (JAX compiles each op on first use)
    for name, fn, _, _ in table[label]:
      try:
        fn()
        fn()
      except Exception as e:  # a case a library cannot run
        broken.add((label, name))
        print(f"{label} {name}: {type(e).__name__}: {e}", file=sys.stderr)
  for _ in range(args.rounds):
    for i, name in enumerate(names):
      for label, _, _ in libs:
        if (label, name) in broken:
          continue
        _, fn, number, _ = table[label][i]
        t = timeit.timeit(fn, number=number, timer=timer)
        samples[(label, name)].append(t / number * 1e6)

  def med(label, name):
    s = samples[(label, name)]
    return statistics.median(s) if s else float("nan")

  labels = [l for l, _, _ in libs]
  has_jax = "jax" in labels
  header = f"{'case':28s}" + "".join(f"{l + ' µs':>11s}" for l in labels)
  header += (f"{'/jax':>7s}" if has_jax else "") + f"{'/numpy':>8s}" + (f"{'target':>8s}" if has_jax else "")
  print(f"median of {args.rounds} rounds, {args.timer} time per call")
  print(header)
  ratios, misses = [], []
  for i, n in enumerate(names):
    row = f"{n:28s}" + "".join(f"{med(l, n):11.2f}" for l in labels)
    if has_jax:
      r = med("pyjax", n) / med("jax", n)
      ratios.append(r)
      row += f"{r:7.2f}"
    row += f"{med('pyjax', n) / med('numpy', n):8.1f}"
    if has_jax:
      target = LARGE_TARGET if table["pyjax"][i][3] else SMALL_TARGET
      ok = r <= target
      row += f"  {'<=' if ok else '> '}{target:.1f}"
      if not ok:
        misses.append(n)
    print(row)
  if ratios:
    finite = [r for r in ratios if r == r]
    gm = float(np.exp(np.mean(np.log(finite)))) if finite else float("nan")
    print(f"geometric mean pyjax/jax: {gm:.2f}")
    print("all targets met" if not misses else f"targets missed: {', '.join(misses)}")


if __name__ == "__main__":
  main()
