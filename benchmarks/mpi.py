"""Many processes over MPI: pyjax's collectives vs raw mpi4py.

    python benchmarks/mpi.py          # launches everything below (mpiexec on PATH)

1. All-reduce of 16 MB (float32) per process, across 4 and across 2 processes x 1 device:
   ``lax.psum`` in a ``shard_map`` over the processes' devices vs ``comm.Allreduce`` of
   mpi4py into a preallocated buffer, the two alternating round by round (after a
   barrier each); medians over the rounds, the ratio's goal is <= 1.2.  (This part runs
   under ``mpiexec -n 4`` and ``-n 2``; on a 2-core machine 4 processes oversubscribe it.)
2. The data-parallel digits MLP (``examples/digits_mlp_mpi.py``): epoch time on 1 process
   with 1 device vs 4 processes with 1 device each (the same global minibatches).
"""
import os
import re
import subprocess
import sys
import time

import numpy as np


def main(rounds=40):
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
  mesh = jax.make_mesh((jax.process_count(),), ("p",))
  g = jax.make_array_from_process_local_data(NamedSharding(mesh, P("p")), x)
  f = jax.shard_map(lambda v: lax.psum(v, "p"), mesh=mesh, in_specs=P("p"),
                    out_specs=P("p"))
  y = jax.block_until_ready(f(g))
  comm.Allreduce(x, out, op=MPI.SUM)
  raw, ours = [], []
  for _ in range(rounds):
    comm.Barrier()
    t0 = time.perf_counter()
    comm.Allreduce(x, out, op=MPI.SUM)
    raw.append(time.perf_counter() - t0)
    comm.Barrier()
    t0 = time.perf_counter()
    y = jax.block_until_ready(f(g))
    ours.append(time.perf_counter() - t0)
  # the same bits as a left fold in process order (one process with as many devices)
  xs = comm.allgather(x)
  want = xs[0] + xs[1]
  for v in xs[2:]:
    want += v
  same = np.asarray(y.addressable_shards[0].data).tobytes() == want.tobytes()
  if comm.rank == 0:
    r, o = np.median(raw), np.median(ours)
    print(f"all-reduce 16 MB x {comm.size} processes: mpi4py Allreduce {r * 1e3:.1f} ms, "
          f"pyjax psum {o * 1e3:.1f} ms, ratio {o / r:.2f} (medians of {rounds} "
          f"alternating rounds; rank-order fold bits {'equal' if same else 'DIFFER'}; "
          f"load {os.getloadavg()[0]:.1f})")
  jax.distributed.shutdown()


def _launch():
  here = os.path.dirname(os.path.abspath(__file__))
  mpiexec = os.path.join(os.path.dirname(sys.executable), "mpiexec")
  if not os.path.exists(mpiexec):
    mpiexec = "mpiexec"
  for procs in ("4", "2"):
    r = subprocess.run([mpiexec, "-n", procs, sys.executable, __file__],
                       capture_output=True, text=True, timeout=600)
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
