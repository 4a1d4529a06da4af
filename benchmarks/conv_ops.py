"""The flax CNN step's convolutions one by one, jitted: pyjax vs JAX in one run.

    python benchmarks/conv_ops.py [--rounds N]

The two convolutions of ``ecosystem.py``'s ``flax_cnn`` case (batch 16, NHWC/HWIO, 3x3,
"SAME"): ``conv1`` 28x28x1 -> 32 features, ``conv2`` 14x14x32 -> 64, each as the forward
product (``fwd``), the kernel gradient (``dW``) and, for ``conv2``, the input gradient
(``dX``), every one a separate jitted function.  pyjax runs its native tier
(``PYJAX_COMPILE=sync``; ``compiler/kernels/convolution.py``).  Each case is timed for
pyjax then JAX inside the same round; the table shows the medians of wall time and of
process CPU time per call (the steadier measure on a loaded machine) and pyjax/JAX.
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

SHAPES = {"conv1": (16, 28, 1, 32), "conv2": (16, 14, 32, 64)}   # N, H(=W), C, O


def cases(jax, lax):
  """[(name, jitted function, args)] for one library (``jax`` is JAX or pyjax)."""
  dn = ("NHWC", "HWIO", "NHWC")
  rng = np.random.default_rng(0)
  out = []
  for name, (n, h, c, o) in SHAPES.items():
    x = jax.numpy.asarray(rng.standard_normal((n, h, h, c)).astype(np.float32))
    w = jax.numpy.asarray(rng.standard_normal((3, 3, c, o)).astype(np.float32) * 0.1)

    def conv(x, w):
      return lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=dn)
    g = jax.numpy.ones_like(conv(x, w))
    out.append((f"{name} fwd", jax.jit(conv), (x, w)))
    out.append((f"{name} dW", jax.jit(lambda x, w, g, conv=conv: jax.vjp(conv, x, w)[1](g)[1]),
                (x, w, g)))
    if name == "conv2":
      out.append((f"{name} dX",
                  jax.jit(lambda x, w, g, conv=conv: jax.vjp(conv, x, w)[1](g)[0]), (x, w, g)))
  return out


def main(argv=None):
  p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  p.add_argument("--rounds", type=int, default=15)
  p.add_argument("--calls", type=int, default=20, help="calls per timing")
  args = p.parse_args(argv)
  os.environ.setdefault("PYJAX_COMPILE", "sync")
  import pyjax
  from pyjax import lax as plax
  import jax
  jax.config.update("jax_platforms", "cpu")
  from jax import lax as jlax
  libs = {"pyjax": cases(pyjax, plax), "jax": cases(jax, jlax)}
  for lib in libs.values():
    for _, fn, a in lib:
      for _ in range(5):
        fn(*a).block_until_ready()
  wall = {(l, i): [] for l in libs for i in range(len(libs["pyjax"]))}
  cpu = {k: [] for k in wall}
  for _ in range(args.rounds):
    for i in range(len(libs["pyjax"])):
      for lib in libs:
        _, fn, a = libs[lib][i]
        w0, c0 = time.perf_counter(), time.process_time()
        for _ in range(args.calls):
          fn(*a).block_until_ready()
        wall[(lib, i)].append((time.perf_counter() - w0) / args.calls * 1e6)
        cpu[(lib, i)].append((time.process_time() - c0) / args.calls * 1e6)
  print(f"load average {os.getloadavg()[0]:.2f}; medians of {args.rounds} rounds (µs)")
  print(f"{'case':10s}{'pyjax wall':>12s}{'JAX wall':>10s}{'ratio':>7s}"
        f"{'pyjax CPU':>11s}{'JAX CPU':>9s}{'ratio':>7s}")
  for i, (name, _, _) in enumerate(libs["pyjax"]):
    wp, wj = (statistics.median(wall[(l, i)]) for l in ("pyjax", "jax"))
    cp, cj = (statistics.median(cpu[(l, i)]) for l in ("pyjax", "jax"))
    print(f"{name:10s}{wp:12.1f}{wj:10.1f}{wp / wj:7.2f}{cp:11.1f}{cj:9.1f}{cp / cj:7.2f}")


if __name__ == "__main__":
  main()
