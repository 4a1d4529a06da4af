"""Eager transcendental functions, pyjax vs JAX in one run: wall and process CPU time.

    python benchmarks/eager_transcendental.py [--rounds N]

Eager ``exp``/``tanh``/``log``/``sin`` run the compiler's vector-math kernels at every size
(``backends/cpu/eager/kernel_calls.py``: jit's bits; ``PYJAX_TIER_NATIVE=0`` gives the
NumPy functions instead, for a before/after comparison).  Each case is timed for pyjax
then JAX inside the same round, for ``--rounds`` rounds; the table shows the medians of
wall time and of process CPU time per call (CPU time is the steadier measure on a loaded
machine; it counts every thread of the process) and pyjax/JAX for both.  Every call waits
for its result.
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np


def cases(m):
  """[(name, callable, calls per timing)] for the library module ``m`` (jax.numpy-like)."""
  rng = np.random.default_rng(0)
  big = m.asarray(rng.standard_normal(1_000_000).astype(np.float32))
  pos = m.asarray(np.abs(rng.standard_normal(1_000_000)).astype(np.float32) + 0.01)
  mid = m.asarray(rng.standard_normal(10_000).astype(np.float32))
  small = m.asarray(np.arange(3, dtype=np.float32))
  return [
      ("exp 1M", lambda: m.exp(big).block_until_ready(), 10),
      ("tanh 1M", lambda: m.tanh(big).block_until_ready(), 10),
      ("log 1M", lambda: m.log(pos).block_until_ready(), 10),
      ("sin 1M", lambda: m.sin(big).block_until_ready(), 3),
      ("exp 10k", lambda: m.exp(mid).block_until_ready(), 200),
      ("exp 3", lambda: m.exp(small).block_until_ready(), 2000),
      ("sin 3", lambda: m.sin(small).block_until_ready(), 2000),
  ]


def run_table(libs, rounds, note=""):
  """Time ``libs`` ({"pyjax": cases, "jax": cases}, the same cases in the same order, each
  ``(name, callable, calls per timing)``) alternately within each of ``rounds`` rounds
  (after two warm-up calls each) and print the medians of wall and process CPU time per
  call and pyjax/JAX."""
  for lib in libs.values():
    for _, fn, _ in lib:
      fn()
      fn()
  wall = {(l, i): [] for l in libs for i in range(len(libs["pyjax"]))}
  cpu = {k: [] for k in wall}
  for _ in range(rounds):
    for i in range(len(libs["pyjax"])):
      for lib in libs:
        _, fn, n = libs[lib][i]
        w0, c0 = time.perf_counter(), time.process_time()
        for _ in range(n):
          fn()
        wall[(lib, i)].append((time.perf_counter() - w0) / n * 1e6)
        cpu[(lib, i)].append((time.process_time() - c0) / n * 1e6)
  print(f"load average {os.getloadavg()[0]:.2f}{note}; medians of {rounds} rounds (µs)")
  print(f"{'case':10s}{'pyjax wall':>12s}{'JAX wall':>10s}{'ratio':>7s}"
        f"{'pyjax CPU':>11s}{'JAX CPU':>9s}{'ratio':>7s}")
  for i, (name, _, _) in enumerate(libs["pyjax"]):
    wp, wj = (statistics.median(wall[(l, i)]) for l in ("pyjax", "jax"))
    cp, cj = (statistics.median(cpu[(l, i)]) for l in ("pyjax", "jax"))
    print(f"{name:10s}{wp:12.2f}{wj:10.2f}{wp / wj:7.2f}{cp:11.2f}{cj:9.2f}{cp / cj:7.2f}")


def main(argv=None):
  p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  p.add_argument("--rounds", type=int, default=25)
  args = p.parse_args(argv)
  os.environ.setdefault("PYJAX_COMPILE", "sync")
  import pyjax.numpy as pjnp
  import jax
  jax.config.update("jax_platforms", "cpu")
  import jax.numpy as jjnp
  run_table({"pyjax": cases(pjnp), "jax": cases(jjnp)}, args.rounds,
            f"; PYJAX_TIER_NATIVE={os.environ.get('PYJAX_TIER_NATIVE', '1')}")


if __name__ == "__main__":
  main()
