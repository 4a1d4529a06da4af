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
import sys

import numpy as np

SHAPES = {"conv1": (16, 28, 1, 32), "conv2": (16, 14, 32, 64)}   # N, H(=W), C, O


def cases(jax, lax, calls):
  """[(name, callable, calls per timing)] for one library (``jax`` is JAX or pyjax): each
  callable runs one jitted convolution (or gradient) and waits for it."""
  dn = ("NHWC", "HWIO", "NHWC")
  rng = np.random.default_rng(0)
  out = []
  for name, (n, h, c, o) in SHAPES.items():
    x = jax.numpy.asarray(rng.standard_normal((n, h, h, c)).astype(np.float32))
    w = jax.numpy.asarray(rng.standard_normal((3, 3, c, o)).astype(np.float32) * 0.1)

    def conv(x, w):
      return lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=dn)
    g = jax.numpy.ones_like(conv(x, w))
    fwd = jax.jit(conv)
    dw = jax.jit(lambda x, w, g, conv=conv: jax.vjp(conv, x, w)[1](g)[1])
    out.append((f"{name} fwd", lambda f=fwd, x=x, w=w: f(x, w).block_until_ready(), calls))
    out.append((f"{name} dW", lambda f=dw, x=x, w=w, g=g: f(x, w, g).block_until_ready(),
                calls))
    if name == "conv2":
      dx = jax.jit(lambda x, w, g, conv=conv: jax.vjp(conv, x, w)[1](g)[0])
      out.append((f"{name} dX", lambda f=dx, x=x, w=w, g=g: f(x, w, g).block_until_ready(),
                  calls))
  return out


def main(argv=None):
  p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  p.add_argument("--rounds", type=int, default=15)
  p.add_argument("--calls", type=int, default=20, help="calls per timing")
  args = p.parse_args(argv)
  os.environ.setdefault("PYJAX_COMPILE", "sync")
  sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
  from eager_transcendental import run_table
  import pyjax
  from pyjax import lax as plax
  import jax
  jax.config.update("jax_platforms", "cpu")
  from jax import lax as jlax
  run_table({"pyjax": cases(pyjax, plax, args.calls), "jax": cases(jax, jlax, args.calls)},
            args.rounds)


if __name__ == "__main__":
  main()
