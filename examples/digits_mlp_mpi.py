"""Data-parallel training of the digits MLP over many processes (MPI).

Every process holds the data set and the (replicated) parameters; each step's minibatch
is split over all devices of all processes (a one-axis mesh ``"batch"``), each device
computes the gradient of its slice, and ``lax.pmean`` over ``"batch"`` averages them --
across processes through MPI.  The reduction folds in device order, so the final
parameters are bit for bit those of one process with as many CPU devices:

    mpiexec -n 4 python examples/digits_mlp_mpi.py            # 4 processes x 2 devices
    python examples/digits_mlp_mpi.py --single 8              # 1 process x 8 devices

Both print the same parameter checksum.
"""
from __future__ import annotations

import argparse
import hashlib
import time

import numpy as np


def main(argv=None):
  p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  p.add_argument("--single", type=int, default=0,
                 help="run on one process with this many CPU devices")
  p.add_argument("--local-devices", type=int, default=2)
  p.add_argument("--epochs", type=int, default=3)
  args = p.parse_args(argv)
  import pyjax as jax
  jax.config.update("jax_num_cpu_devices", args.single or args.local_devices)
  if not args.single:
    jax.distributed.initialize()
  import pyjax.numpy as jnp
  from pyjax import lax
  from pyjax.sharding import PartitionSpec as P
  import digits_mlp as base

  (x_train, y_train), (x_test, y_test) = base.load_digits()
  mesh = jax.make_mesh((len(jax.devices()),), ("batch",))
  params = base.init_mlp(jax.random.key(0), [64, 256, 128, 10])
  opt = base.adam_init(params)

  def step(params, opt, xb, yb, lr=1e-3, b1=0.9, b2=0.999, eps=1e-8):
    value, grads = jax.value_and_grad(base.loss)(params, xb, yb)
    grads = lax.pmean(grads, "batch")      # one collective for the whole tree
    t = opt["t"] + 1
    m = jax.tree.map(lambda m, g: b1 * m + (1 - b1) * g, opt["m"], grads)
    v = jax.tree.map(lambda v, g: b2 * v + (1 - b2) * g * g, opt["v"], grads)
    ms, vs = 1 / (1 - b1 ** t), 1 / (1 - b2 ** t)
    params = jax.tree.map(lambda p, m, v: p - lr * (m * ms) / (jnp.sqrt(v * vs) + eps),
                          params, m, v)
    return params, {"m": m, "v": v, "t": t}, lax.pmean(value, "batch")

  train_step = jax.jit(jax.shard_map(step, mesh=mesh, in_specs=(P(), P(), P("batch"),
                                                                P("batch")),
                                     out_specs=(P(), P(), P())))
  batch = 64
  n_batches = len(x_train) // batch
  rng = np.random.default_rng(0)
  times = []
  for _ in range(args.epochs):
    t0 = time.perf_counter()
    perm = rng.permutation(len(x_train))
    for i in range(n_batches):
      idx = perm[i * batch:(i + 1) * batch]
      params, opt, value = train_step(params, opt, x_train[idx], y_train[idx])
    jax.block_until_ready(params)
    times.append(time.perf_counter() - t0)
  leaves = [np.asarray(x) for x in jax.tree.leaves(params)]
  digest = hashlib.sha256(b"".join(x.tobytes() for x in leaves)).hexdigest()[:16]
  acc = float(base.accuracy(jax.tree.map(np.asarray, params), jnp.asarray(x_test),
                            jnp.asarray(y_test)))
  if jax.process_index() == 0:
    print(f"{jax.process_count()} process(es) x {len(jax.local_devices())} devices: "
          f"loss {float(np.asarray(value)):.4f}, test accuracy {acc * 100:.1f}%, "
          f"epoch {np.median(times) * 1e3:.0f} ms (median of {len(times)}), "
          f"params sha256 {digest}")
  if not args.single:
    jax.distributed.shutdown()


if __name__ == "__main__":
  main()
