"""The program the MPI tests launch (``mpiexec -n N python mpi_program.py OUT``) and run
again on one process with as many CPU devices (``python mpi_program.py OUT --single N``).

Every check runs in one launch (each launch costs an interpreter start and an import of
pyjax per rank).  Global results are gathered to process 0, which writes them to ``OUT``
(an ``.npz``); the test compares the multi-process file with the one-process file bit for
bit, and reads the facts the program recorded about processes and errors.
"""
import json
import sys

import numpy as np

LOCAL = 2   # CPU devices per process


def main(out, single):
  import pyjax as jax
  if single:
    jax.config.update("jax_num_cpu_devices", LOCAL * single)
  else:
    jax.config.update("jax_num_cpu_devices", LOCAL)
    from mpi4py import MPI
    size, rank = MPI.COMM_WORLD.Get_size(), MPI.COMM_WORLD.Get_rank()
    errors = []
    for kw in ({"num_processes": size + 1}, {"process_id": (rank + 1) % size,
                                             "num_processes": size}):
      try:
        jax.distributed.initialize(**kw)
      except ValueError as e:
        errors.append(str(e))
    # explicit arguments that agree with the MPI world are accepted
    jax.distributed.initialize("localhost:1234", num_processes=size, process_id=rank)
  from pyjax import lax
  from pyjax.experimental import multihost_utils as mhu
  from pyjax.sharding import NamedSharding, PartitionSpec as P
  nproc = single or jax.process_count()
  pid = 0 if single else jax.process_index()
  ndev = LOCAL * nproc
  res, facts = {}, {}

  def glob(x):
    """The global value of ``x`` (gathered over processes when it spans them)."""
    return np.asarray(x) if single else mhu.process_allgather(x)

  # -- processes and devices ---------------------------------------------------------------
  facts["process_index"] = jax.process_index()
  facts["process_count"] = jax.process_count()
  facts["device_ids"] = [d.id for d in jax.devices()]
  facts["device_procs"] = [d.process_index for d in jax.devices()]
  facts["local_ids"] = [d.id for d in jax.local_devices()]
  facts["is_initialized"] = jax.distributed.is_initialized()
  facts["explicit_errors"] = [] if single else errors

  rng = np.random.default_rng(0)
  data = rng.standard_normal((ndev * 4, 3)).astype(np.float32)
  mesh = jax.make_mesh((ndev,), ("x",))
  mesh2 = jax.make_mesh((nproc, LOCAL), ("p", "d"))
  rows = data.shape[0] // nproc
  sx = NamedSharding(mesh, P("x"))

  # -- global arrays -------------------------------------------------------------------------
  local = data if single else data[pid * rows:(pid + 1) * rows]
  a = jax.make_array_from_process_local_data(sx, local)
  facts["a_shape"] = list(a.shape)
  facts["a_fully_addressable"] = a.is_fully_addressable
  facts["a_shards"] = [[s.device.id, s.index[0].start, s.index[0].stop]
                       for s in a.addressable_shards]
  try:
    np.asarray(a)
    facts["read_error"] = None
  except RuntimeError as e:
    facts["read_error"] = [type(e).__name__, str(e)]
  facts["repr"] = repr(a)
  res["a"] = glob(a)
  cb = jax.make_array_from_callback(data.shape, sx, lambda idx: data[idx])
  res["callback"] = glob(cb)
  singles = [jax.device_put(data[s.index], s.device) for s in cb.addressable_shards]
  res["single_device_arrays"] = glob(
      jax.make_array_from_single_device_arrays(data.shape, sx, singles))

  # -- collectives over a mesh spanning processes ----------------------------------------------
  def smap(f, m=mesh, i=P("x"), o=P("x")):
    return jax.shard_map(f, mesh=m, in_specs=i, out_specs=o, check_vma=False)
  res["psum"] = glob(smap(lambda x: lax.psum(x, "x"))(a))
  res["pmax"] = glob(smap(lambda x: lax.pmax(x, "x"))(a))
  res["all_gather"] = glob(smap(lambda x: lax.all_gather(x, "x", tiled=True))(a))
  res["psum_scatter"] = glob(smap(lambda x: lax.psum_scatter(
      jax.numpy.tile(x, (ndev, 1)), "x", scatter_dimension=0, tiled=True))(a))
  res["ppermute"] = glob(smap(lambda x: lax.ppermute(
      x, "x", [(i, (i + 1) % ndev) for i in range(ndev)]))(a))
  res["all_to_all"] = glob(smap(lambda x: lax.all_to_all(
      jax.numpy.tile(x, (ndev, 1)), "x", 0, 0, tiled=True))(a))
  res["axis_index"] = glob(smap(lambda x: x * lax.axis_index("x"))(a))
  # values of >= 1 KiB per process travel as raw MPI bytes, all-reduces of >= 256 KiB
  # per device in parts (reduce-scatter parts land in reused buffers: the second psum
  # reuses the first's); a ppermute that leaves most devices without a source sends only
  # the pieces addressed to each process
  big = rng.standard_normal((ndev * 2, 720 * 48)).astype(np.float32)
  b = jax.make_array_from_process_local_data(
      sx, big if single else big[pid * 2 * LOCAL:(pid + 1) * 2 * LOCAL])
  res["psum_big"] = glob(smap(lambda x: lax.psum(x, "x"))(b))
  res["psum_big_again"] = glob(smap(lambda x: lax.psum(x * 3, "x"))(b))
  res["psum_int"] = glob(smap(lambda x: lax.psum((x * 99).astype("int32"), "x"))(b))
  res["ppermute_partial"] = glob(smap(lambda x: lax.ppermute(
      x, "x", [(0, ndev - 1), (ndev - 1, 1), (2, 0)]))(b))
  res["all_to_all_big"] = glob(smap(lambda x: lax.all_to_all(x, "x", 1, 1, tiled=True))(b))
  # a main thread blocked inside a (GIL-releasing) mpi4py call while this process's
  # device threads still run a collective across processes: process 1 reads its part
  # of the psum (which needs process 0's device threads) before process 0's main
  # thread may leave its blocking receive
  y = smap(lambda x: lax.psum(x - 1, "x"))(b)
  if not single:
    from mpi4py import MPI
    if pid == 0:
      MPI.COMM_WORLD.recv(source=1, tag=77)
    elif pid == 1:
      MPI.COMM_WORLD.send(np.asarray(y.addressable_shards[0].data).sum(), dest=0, tag=77)
  res["psum_main_thread_in_mpi"] = glob(y)
  # a 2-d mesh: "d" meets inside each process, "p" across processes
  a2 = jax.make_array_from_callback(data.shape, NamedSharding(mesh2, P(("p", "d"))),
                                    lambda idx: data[idx])
  f2 = lambda x: lax.psum(x, "p") * 2 + lax.psum(x, "d")   # noqa: E731
  res["mesh2"] = glob(smap(f2, mesh2, P(("p", "d")), P(("p", "d")))(a2))
  res["mesh2_ppermute_p"] = glob(smap(lambda x: lax.ppermute(
      x, "p", [(i, (i + 1) % nproc) for i in range(nproc)]), mesh2, P(("p", "d")),
      P(("p", "d")))(a2))
  res["mesh2_pmean_both"] = glob(smap(lambda x: lax.pmean(x, ("p", "d")), mesh2,
                                      P(("p", "d")), P(("p", "d")))(a2))
  # eager operations on an array spanning processes (the elementwise ones shard by shard,
  # the others on its gathered global value) and grad of a plain function
  res["eager_mul"] = glob(a * 3 - 1)
  res["eager_sum0"] = glob(a.sum(0))
  # (indexing a sharded dimension of an Explicit-axis array is JAX's ShardingTypeError:
  # the same array over an Auto axis, whose result is replicated)
  mesh_auto = jax.make_mesh((ndev,), ("x",), axis_types=(jax.sharding.AxisType.Auto,))
  a_auto = jax.make_array_from_process_local_data(NamedSharding(mesh_auto, P("x")), local)
  res["eager_index"] = glob(a_auto[5])
  res["grad_plain"] = glob(jax.grad(lambda x: (jax.numpy.sin(x) ** 2).sum())(a))
  res["jit_plain"] = glob(jax.jit(lambda x: jax.numpy.tanh(x) * 2 + x.sum(0))(a))
  res["jit_shard_map"] = glob(jax.jit(smap(lambda x: lax.psum(jax.numpy.sin(x), "x")))(a))
  res["grad_shard_map"] = glob(jax.grad(lambda x: smap(
      lambda y: lax.psum(y * y, "x"), o=P())(x).sum())(a))
  # pmap: each process maps over its local devices; the axis spans every process's
  px = (np.arange(ndev, dtype=np.float32) + 1) * np.float32(1.1)
  lx = px if single else px[pid * LOCAL:(pid + 1) * LOCAL]
  outs = jax.pmap(lambda v: (lax.psum(v, "i"), lax.axis_index("i"), lax.pmax(-v, "i")),
                  axis_name="i")(lx)
  facts["pmap_local_shape"] = list(outs[0].shape)
  for k, o in zip(("pmap_psum", "pmap_axis_index", "pmap_pmax"), outs):
    res[k] = np.asarray(o) if single else mhu.process_allgather(np.asarray(o), tiled=True)
  rep = smap(lambda x: lax.psum(x, "x"), o=P())(a)   # replicated over processes: readable
  res["replicated_read"] = np.asarray(rep)

  # -- multihost_utils ---------------------------------------------------------------------------
  if not single:
    host = np.arange(3, dtype=np.int32) + 10 * pid
    res["allgather_stacked"] = mhu.process_allgather(host)
    res["allgather_tiled"] = mhu.process_allgather(host, tiled=True)
    res["allgather_tree"] = mhu.process_allgather({"k": np.float32(pid)})["k"]
    res["broadcast"] = mhu.broadcast_one_to_all({"v": host})["v"]
    res["broadcast_from_last"] = mhu.broadcast_one_to_all(
        host, is_source=pid == nproc - 1)
    mhu.sync_global_devices("step 1")
    mhu.assert_equal(np.arange(4), "same everywhere")
    try:
      mhu.assert_equal(np.float32(pid), "differs")
      facts["assert_equal_error"] = None
    except AssertionError as e:
      facts["assert_equal_error"] = str(e)[:60]
    g = mhu.host_local_array_to_global_array(data[pid * rows:(pid + 1) * rows], mesh, P("x"))
    facts["h2g_fully_addressable"] = g.is_fully_addressable
    res["host_to_global"] = mhu.process_allgather(g)
    back = mhu.global_array_to_host_local_array(g, mesh, P("x"))
    res["global_to_host"] = mhu.process_allgather(np.asarray(back), tiled=True)
    jax.distributed.shutdown()
    facts["is_initialized_after"] = jax.distributed.is_initialized()
  if pid == 0:
    np.savez(out, **res)
    with open(out + ".json", "w") as f:
      json.dump(facts, f)


if __name__ == "__main__":
  single = int(sys.argv[3]) if len(sys.argv) > 3 and sys.argv[2] == "--single" else 0
  main(sys.argv[1], single)
