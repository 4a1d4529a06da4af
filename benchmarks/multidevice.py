"""Many devices in one process: pyjax vs JAX (XLA:CPU), 8 CPU devices, in one run.

    python benchmarks/multidevice.py [--rounds N] [--steps N] [--only pyjax|jax]

1. 8 independent random-walk Metropolis chains (``--steps`` steps, 10-dimensional standard
   Gaussian target, ``fori_loop``) under ``pmap`` over 8 devices, against the same 8
   chains run one after another on one device (a jitted chain called 8 times).  The draws
   of both runs must be bit-identical (checked); the speed-up is sequential / pmap.
2. A data-parallel MLP training step (SGD, 64-256-256-1, batch 512) over a ``(2,)`` mesh:
   the batch sharded ``NamedSharding(mesh, P('d'))``, parameters replicated, one jitted
   step.

Each library runs in its own subprocess (both want ``JAX_NUM_CPU_DEVICES=8`` and their
own threads); pyjax's with ``PYJAX_COMPILE=sync`` (native code built at the first call,
as ``jit_cpu.py`` builds it before timing); every case is warmed for 2 s, then the table
shows the median per call in ms over ``--rounds``.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

_CHILD = r'''
import json, os, statistics, sys, time
os.environ["JAX_NUM_CPU_DEVICES"] = "8"
import numpy as np
if LIB == "pyjax":
  sys.path.insert(0, ROOT)
  import pyjax as jax
  jax.config.update("jax_num_cpu_devices", 8)
else:
  import jax
import jax.numpy as jnp  # noqa (rebound below for pyjax)
jnp = jax.numpy
from functools import partial
NamedSharding, P = jax.sharding.NamedSharding, jax.sharding.PartitionSpec

D = 10
def chain(key, x0):
  def logp(x):
    return -0.5 * jnp.sum(x * x)
  def body(i, st):
    x, lp, k, acc = st
    k, k1, k2 = jax.random.split(k, 3)
    y = x + 0.5 * jax.random.normal(k1, (D,))
    lq = logp(y)
    u = jnp.log(jax.random.uniform(k2))
    take = u < lq - lp
    return (jnp.where(take, y, x), jnp.where(take, lq, lp), k, acc + x)
  x, lp, k, acc = jax.lax.fori_loop(0, STEPS, body, (x0, logp(x0), key, jnp.zeros(D)))
  return acc / STEPS

keys = jax.random.split(jax.random.PRNGKey(0), 8)
x0 = jnp.zeros((8, D))
par = jax.pmap(chain)
one = jax.jit(chain)
def sequential():
  return [one(keys[i], x0[i]) for i in range(8)]
def timeit(fn, rounds):
  t0 = time.perf_counter()   # warm: pyjax's native executables are built in the background
  while time.perf_counter() - t0 < 2.0:
    jax.block_until_ready(fn())
  ts = []
  for _ in range(rounds):
    t0 = time.perf_counter()
    jax.block_until_ready(fn())
    ts.append(time.perf_counter() - t0)
  return statistics.median(ts) * 1e3
a = np.asarray(par(keys, x0))
b = np.stack([np.asarray(v) for v in sequential()])
res = {"identical": bool(np.array_equal(a, b)), "pmap_ms": timeit(lambda: par(keys, x0), ROUNDS),
       "seq_ms": timeit(sequential, ROUNDS)}

mesh = jax.make_mesh((2,), ("d",), axis_types=(jax.sharding.AxisType.Auto,))
rng = np.random.default_rng(0)
params = [rng.standard_normal(s).astype(np.float32) * 0.05 for s in ((64, 256), (256,), (256, 256), (256,), (256, 1), (1,))]
xb = rng.standard_normal((512, 64)).astype(np.float32)
yb = rng.standard_normal((512, 1)).astype(np.float32)
def loss(p, x, y):
  h = jnp.tanh(x @ p[0] + p[1])
  h = jnp.tanh(h @ p[2] + p[3])
  return jnp.mean((h @ p[4] + p[5] - y) ** 2)
@jax.jit
def step(p, x, y):
  l, g = jax.value_and_grad(loss)(p, x, y)
  return [w - 0.01 * gw for w, gw in zip(p, g)], l
rep = NamedSharding(mesh, P())
p = jax.device_put(params, rep)
xs = jax.device_put(xb, NamedSharding(mesh, P("d")))
ys = jax.device_put(yb, NamedSharding(mesh, P("d")))
res["mlp_ms"] = timeit(lambda: step(p, xs, ys), ROUNDS)
res["mlp_loss"] = float(step(p, xs, ys)[1])
print(json.dumps(res))
'''


def run(lib, rounds, steps):
  code = (f"LIB = {lib!r}\nROOT = {os.path.dirname(os.path.dirname(os.path.abspath(__file__)))!r}\n"
          f"ROUNDS = {rounds}\nSTEPS = {steps}\n" + _CHILD)
  env = dict(os.environ, JAX_NUM_CPU_DEVICES="8", JAX_PLATFORMS="cpu")
  if lib == "pyjax":   # native executables built at the first call (not in the background)
    env["PYJAX_COMPILE"] = "sync"
  env.pop("PYJAX_AS_JAX", None)
  r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
  if r.returncode:
    raise SystemExit(f"{lib} failed:\n{r.stderr[-3000:]}")
  return json.loads(r.stdout.strip().splitlines()[-1])


def main():
  ap = argparse.ArgumentParser()
  ap.add_argument("--rounds", type=int, default=5)
  ap.add_argument("--steps", type=int, default=2000)
  ap.add_argument("--only", default="pyjax,jax")
  a = ap.parse_args()
  rows = {lib: run(lib, a.rounds, a.steps) for lib in a.only.split(",")}
  print(f"{'':24s}" + "".join(f"{lib:>12s}" for lib in rows))
  for k, label in (("seq_ms", "8 chains one by one ms"), ("pmap_ms", "8 chains pmap ms"),
                   ("mlp_ms", "MLP step (2,) mesh ms")):
    print(f"{label:24s}" + "".join(f"{r[k]:12.2f}" for r in rows.values()))
  print(f"{'pmap speed-up':24s}" + "".join(f"{r['seq_ms'] / r['pmap_ms']:11.2f}x"
                                         for r in rows.values()))
  print(f"{'draws bit-identical':24s}" + "".join(f"{str(r['identical']):>12s}"
                                               for r in rows.values()))
  print(f"{'MLP loss':24s}" + "".join(f"{r['mlp_loss']:12.6f}" for r in rows.values()))


if __name__ == "__main__":
  main()
