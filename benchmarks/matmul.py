"""Integer and half-precision matrix products: pyjax vs JAX vs NumPy, in one run.

    python benchmarks/matmul.py [--rounds N] [--size N] [--timer wall|cpu] [--only SUBSTR]

Cases (``--size`` x ``--size`` operands, default 1000): the issue's demo, ``jnp.dot(a, a)``
with ``a = jnp.array(range(n * n)).reshape((n, n))`` (int32), eagerly and jitted, timed
with ``block_until_ready`` and without it (the call returns a pending Array, so this is
the dispatch time alone); ``int8 x int8 -> int32`` (``preferred_element_type``);
float16 and bfloat16 products (and bfloat16 -> float32); float32 (BLAS) for reference.
pyjax's integer and half products run on its native GEMM (``compiler/kernels/gemm.py``).
NumPy has no BLAS for integers (its int32 matmul is a plain loop) nor for halves: its
column multiplies halves in float32 (``a.astype(f32) @ b.astype(f32)``, then rounds),
which is not the same computation.

Each case is timed for every library in turn inside one round (a busy machine slows all
alike); the table shows the median per call over ``--rounds`` rounds (ms) and pyjax's
ratio to JAX.  ``--timer cpu`` measures process CPU time (it counts every thread).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time

import ml_dtypes
import numpy as np

BF16 = np.dtype(ml_dtypes.bfloat16)


def cases(lib, kind, n):
  """[(name, callable)] for one library (``kind``: pyjax, jax or numpy)."""
  rng = np.random.default_rng(0)
  f32 = rng.standard_normal((n, n)).astype(np.float32)
  i8 = rng.integers(-128, 128, (n, n)).astype(np.int8)
  if kind == "numpy":
    a = np.array(range(n * n)).reshape((n, n)).astype(np.int32)
    h, bf = f32.astype(np.float16), f32.astype(BF16)
    return [
        ("int32 dot (demo), wait", lambda: np.dot(a, a)),
        ("int32 dot (demo), no wait", lambda: np.dot(a, a)),
        ("int8 x int8 -> int32", lambda: np.dot(i8.astype(np.int32), i8.astype(np.int32))),
        ("float16 dot", lambda: (h.astype(np.float32) @ h.astype(np.float32)).astype(np.float16)),
        ("bfloat16 dot", lambda: (bf.astype(np.float32) @ bf.astype(np.float32)).astype(BF16)),
        ("bfloat16 -> float32", lambda: bf.astype(np.float32) @ bf.astype(np.float32)),
        ("float32 dot (BLAS)", lambda: f32 @ f32),
    ]
  jnp, lax, jit = lib.numpy, lib.lax, lib.jit
  a = jnp.array(range(n * n)).reshape((n, n))
  x8 = jnp.asarray(i8)
  h, bf, x32 = jnp.asarray(f32.astype(np.float16)), jnp.asarray(f32.astype(BF16)), jnp.asarray(f32)
  dot = jit(jnp.dot)
  dot8 = jit(lambda p, q: lax.dot(p, q, preferred_element_type=jnp.int32))
  dotbf32 = jit(lambda p, q: lax.dot(p, q, preferred_element_type=jnp.float32))
  return [
      ("int32 dot (demo), wait", lambda: jnp.dot(a, a).block_until_ready()),
      ("int32 dot (demo), no wait", lambda: jnp.dot(a, a)),
      ("jit int32 dot, wait", lambda: dot(a, a).block_until_ready()),
      ("int8 x int8 -> int32", lambda: lax.dot(x8, x8, preferred_element_type=jnp.int32)
       .block_until_ready()),
      ("jit int8 x int8 -> int32", lambda: dot8(x8, x8).block_until_ready()),
      ("float16 dot", lambda: jnp.dot(h, h).block_until_ready()),
      ("jit float16 dot", lambda: dot(h, h).block_until_ready()),
      ("bfloat16 dot", lambda: jnp.dot(bf, bf).block_until_ready()),
      ("bfloat16 -> float32", lambda: lax.dot(bf, bf, preferred_element_type=jnp.float32)
       .block_until_ready()),
      ("jit bfloat16 -> float32", lambda: dotbf32(bf, bf).block_until_ready()),
      ("float32 dot (BLAS)", lambda: jnp.dot(x32, x32).block_until_ready()),
  ]


def main(argv=None):
  p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  p.add_argument("--rounds", type=int, default=7, help="timing rounds (median reported)")
  p.add_argument("--size", type=int, default=1000)
  p.add_argument("--timer", choices=("wall", "cpu"), default="wall")
  p.add_argument("--only", default="", help="run only the cases whose name contains this")
  p.add_argument("--no-numpy", action="store_true", help="skip NumPy (its int matmul is slow)")
  args = p.parse_args(argv)
  timer = time.perf_counter if args.timer == "wall" else time.process_time

  import pyjax
  libs = [("pyjax", pyjax, "pyjax")]
  try:
    import jax
    jax.config.update("jax_platforms", "cpu")
    libs.append(("jax", jax, "jax"))
  except ImportError:
    print("(JAX not installed: ratios vs JAX omitted)", file=sys.stderr)
  if not args.no_numpy:
    libs.append(("numpy", np, "numpy"))
  table = {label: {name: fn for name, fn in cases(mod, kind, args.size) if args.only in name}
           for label, mod, kind in libs}
  names = list(table["pyjax"])
  samples = {(label, name): [] for label, _, _ in libs for name in names}
  for label, _, _ in libs:              # warm up: compilation, kernel builds, caches
    for fn in table[label].values():
      fn()
      fn()
  for _ in range(args.rounds):
    for name in names:
      for label, _, _ in libs:
        fn = table[label].get(name)
        if fn is None:
          continue
        t0 = timer()
        r = fn()
        samples[(label, name)].append((timer() - t0) * 1e3)
        if hasattr(r, "block_until_ready"):   # a "no wait" case: finish outside the timing
          r.block_until_ready()

  def med(label, name):
    s = samples[(label, name)]
    return statistics.median(s) if s else float("nan")

  labels = [l for l, _, _ in libs]
  print(f"{args.size}x{args.size} operands; median of {args.rounds} rounds, {args.timer} time, ms")
  print(f"{'case':30s}" + "".join(f"{l:>10s}" for l in labels)
        + (f"{'pyjax/jax':>11s}" if "jax" in labels else ""))
  for name in names:
    row = f"{name:30s}" + "".join(f"{med(l, name):10.3f}" for l in labels)
    if "jax" in labels:
      row += f"{med('pyjax', name) / med('jax', name):11.2f}"
    print(row)


if __name__ == "__main__":
  main()
