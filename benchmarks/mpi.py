"""Many processes over MPI: pyjax's collectives vs raw mpi4py.

    python benchmarks/mpi.py          # launches everything below (mpiexec on PATH)

1. All-reduce of 16 MB (float32) across 4 processes x 1 device: ``lax.psum`` in a
   ``shard_map`` over the processes' devices vs ``comm.Allreduce`` of mpi4py (median of
   repeats; the ratio's goal is <= 1.2).  (This part runs under ``mpiexec -n 4``.)
2. The data-parallel digits MLP (``examples/digits_mlp_mpi.py``): epoch time on 1 process
   with 1 device vs 4 processes with 1 device each (the same global minibatches).
"""
import os
import re
import subprocess
import sys
import time

import numpy as np


def main(repeats=7):
  import pyjax as jax
  jax.config.update("jax_num_cpu_devices", 1)
  jax.distributed.initialize()
  from mpi4py import MPI
  from pyjax import lax
  from pyjax.sharding import NamedSharding, PartitionSpec as P
  comm = MPI.COMM_WORLD
  n = 4 * 1024 * 1024                       # 16 MB of float32
  x = np.random.default_rng(comm.rank).standard_normal(n).astype(np.float32)
  out = np.empty_like(x)
  raw = []
  for _ in range(repeats):
    comm.Barrier()
    t0 = time.perf_counter()
    comm.Allreduce(x, out, op=MPI.SUM)
    raw.append(time.perf_counter() - t0)
  mesh = jax.make_mesh((jax.process_count(),), ("p",))
  g = jax.make_array_from_process_local_data(NamedSharding(mesh, P("p")), x)
  f = jax.shard_map(lambda v: lax.psum(v, "p"), mesh=mesh, in_specs=P("p"),
                    out_specs=P("p"))
  jax.block_until_ready(f(g))
  ours = []
  for _ in range(repeats):
    comm.Barrier()
    t0 = time.perf_counter()
    jax.block_until_ready(f(g))
    ours.append(time.perf_counter() - t0)
  if comm.rank == 0:
    r, o = np.median(raw), np.median(ours)
    print(f"all-reduce 16 MB x {comm.size} processes: mpi4py Allreduce {r * 1e3:.1f} ms, "
          f"pyjax psum {o * 1e3:.1f} ms, ratio {o / r:.2f}")
  jax.distributed.shutdown()


def _launch():
  here = os.path.dirname(os.path.abspath(__file__))
  mpiexec = os.path.join(os.path.dirname(sys.executable), "mpiexec")
  if not os.path.exists(mpiexec):
    mpiexec = "mpiexec"
  r = subprocess.run([mpiexec, "-n", "4", sys.executable, __file__], capture_output=True,
                     text=True, timeout=600)
  print(r.stdout.strip() or r.stderr[-2000:])
  example = os.path.join(here, "..", "examples", "digits_mlp_mpi.py")
  runs = [("1 process x 1 device", [sys.executable, example, "--single", "1"]),
          ("4 processes x 1 device", [mpiexec, "-n", "4", sys.executable, example,
                                      "--local-devices", "1"])]
  for label, cmd in runs:
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600,
                       cwd=os.path.dirname(example))
    m = re.search(r"epoch (\d+) ms.*sha256 (\w+)", r.stdout)
    print(f"digits MLP, {label}: " + (f"{m.group(1)} ms per epoch (params {m.group(2)})"
                                      if m else r.stdout[-500:] + r.stderr[-2000:]))


if __name__ == "__main__":
  from pyjax._src.distributed import launched_by_mpi
  if launched_by_mpi():
    main()
  else:
    _launch()
