"""Launched by the MPI tests: failures never leave a process waiting forever.

1. The last process raises inside a ``shard_map`` body (a host callback) before a
   ``psum``; every process must end that step with an error (the failing one with its
   own, the others with ``ABORTED``), not wait for the deadline.
2. The last process stalls (sleeps past the collective deadline) before a ``psum``: the
   others must raise ``DEADLINE_EXCEEDED`` within the deadline.
Each process writes one line per step, ``STEP <n> <error class> <seconds> <message>``, to
``<OUT>.<process index>`` (not to stdout, where the launcher may interleave the lines).
"""
import sys
import time

import numpy as np


def main(out):
  import pyjax as jax
  jax.config.update("jax_num_cpu_devices", 2)
  jax.config.update("jax_collectives_timeout", 5.0)
  jax.distributed.initialize()
  from pyjax import lax
  from pyjax.sharding import PartitionSpec as P
  pid, last = jax.process_index(), jax.process_count() - 1
  mesh = jax.make_mesh((2 * jax.process_count(),), ("x",))

  def fail_on_last(x):
    if pid == last:
      raise ValueError("rank failure on purpose")
    return x

  def body1(x):
    y = jax.pure_callback(fail_on_last, jax.ShapeDtypeStruct(x.shape, x.dtype), x)
    return lax.psum(y, "x")

  def body2(x):
    return lax.psum(x, "x")

  lines = []
  for step, body in ((1, body1), (2, body2)):
    f = jax.shard_map(body, mesh=mesh, in_specs=P("x"), out_specs=P("x"), check_vma=False)
    x = jax.make_array_from_callback((4 * jax.process_count(),), jax.NamedSharding(
        mesh, P("x")), lambda idx: np.ones(2, np.float32))
    t0 = time.monotonic()
    try:
      if step == 2 and pid == last:
        time.sleep(7.5)    # stalled past the others' deadline
      y = f(x)
      for s in y.addressable_shards:
        np.asarray(s.data)
      err = "none"
      msg = ""
    except Exception as e:  # noqa: BLE001
      text = str(e).replace("\n", " ")
      err, msg = type(e).__name__, text[:200] + (
          " [cause: on purpose]" if "rank failure on purpose" in text else "")
    lines.append(f"STEP {step} {err} {time.monotonic() - t0:.2f} {msg}\n")
  with open(f"{out}.{pid}", "w") as f:
    f.writelines(lines)


if __name__ == "__main__":
  main(sys.argv[1])
