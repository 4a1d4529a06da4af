"""Single-process distributed pieces orbax and other libraries use, compared with real
JAX: jnp.dtype, jax.distributed / global_state, multihost_utils, make_array_from_*,
Array.addressable_shards, device memories and client, array_serialization (TensorStore),
colocated_python (+ serialization), pjit, interpreters.pxla, extend.ifrt_programs."""
import asyncio
import os
import warnings

import numpy as np
import pytest

import pyjax
import pyjax.numpy as jnp
import pyjax.experimental.layout
from pyjax.experimental import multihost_utils as mhu
from pyjax.sharding import NamedSharding, PartitionSpec as P


def test_jnp_dtype_is_numpy_dtype_class():
  assert jnp.dtype is np.dtype
  assert isinstance(np.dtype("float32"), jnp.dtype)
  assert jnp.dtype(jnp.bfloat16).name == "bfloat16" and jnp.dtype(jnp.int4).name == "int4"
  assert (jnp.dtype | np.dtype) == (np.dtype | np.dtype)
  jax = pytest.importorskip("jax")
  for t in (float, int, "float16", jnp.float32):
    assert jnp.dtype(t) == jax.numpy.dtype(t if not isinstance(t, type) or t in (
        float, int) else getattr(jax.numpy, t.__name__))


def test_distributed_global_state_single_process():
  from pyjax._src import distributed
  gs = distributed.global_state
  assert gs.process_id == 0 and gs.num_processes == 1 and gs.client is None
  assert not pyjax.distributed.is_initialized()
  with pytest.raises(RuntimeError, match="started by an MPI launcher.*mpiexec -n 2"):
    pyjax.distributed.initialize("localhost:1234", num_processes=2, process_id=0)
  if not distributed.launched_by_mpi():
    with pytest.raises(ValueError, match="coordinator_address should be defined.*mpiexec"):
      pyjax.distributed.initialize()
  pyjax.distributed.initialize(num_processes=1, process_id=0)
  try:
    assert pyjax.distributed.is_initialized()
    with pytest.raises(RuntimeError, match="only be called once"):
      pyjax.distributed.initialize()
  finally:
    pyjax.distributed.shutdown()
  assert not pyjax.distributed.is_initialized()


def test_multihost_utils_match_jax():
  jax = pytest.importorskip("jax")
  from jax.experimental import multihost_utils as jmhu
  tree = {"a": jnp.arange(6.0).reshape(2, 3), "b": np.int32(4), "c": [1.5]}
  jtree = {"a": jax.numpy.arange(6.0).reshape(2, 3), "b": np.int32(4), "c": [1.5]}
  for tiled in (False, True):
    got, want = mhu.process_allgather(tree, tiled=tiled), jmhu.process_allgather(jtree, tiled=tiled)
    for g, w in zip(pyjax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
      assert type(g) is type(w) is np.ndarray
      np.testing.assert_array_equal(g, w)
      assert g.dtype == w.dtype
  got = mhu.broadcast_one_to_all(tree)
  want = jmhu.broadcast_one_to_all(jtree)
  for g, w in zip(pyjax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
    assert type(g) is type(w)
    np.testing.assert_array_equal(g, w)
  mhu.sync_global_devices("step 1")
  mhu.assert_equal(tree, "same")
  assert mhu.reached_preemption_sync_point(3) is jmhu.reached_preemption_sync_point(3)


def test_host_local_global_round_trip():
  mesh = pyjax.make_mesh((1,), ("x",))
  x = np.arange(8.0, dtype=np.float32).reshape(4, 2)
  g = mhu.host_local_array_to_global_array({"w": x}, mesh, P("x"))
  np.testing.assert_array_equal(g["w"], x)
  back = mhu.global_array_to_host_local_array(g, mesh, {"w": P("x")})
  np.testing.assert_array_equal(back["w"], x)


def test_make_array_from_callback_and_single_device_arrays():
  mesh = pyjax.make_mesh((1,), ("x",))
  s = NamedSharding(mesh, P("x"))
  data = np.arange(12, dtype=np.float32).reshape(3, 4)
  seen = []

  def cb(index):
    seen.append(index)
    return data[index]
  a = pyjax.make_array_from_callback((3, 4), s, cb)
  np.testing.assert_array_equal(a, data)
  assert a.dtype == np.float32 and seen == [(slice(None), slice(None))] or len(seen) == 1
  b = pyjax.make_array_from_single_device_arrays((3, 4), s, [jnp.asarray(data)])
  np.testing.assert_array_equal(b, data)
  with pytest.raises(ValueError):
    pyjax.make_array_from_single_device_arrays((3, 4), s, [jnp.ones((2, 4))])
  c = pyjax.make_array_from_process_local_data(s, data)
  np.testing.assert_array_equal(c, data)
  jax = pytest.importorskip("jax")
  js = jax.sharding.NamedSharding(jax.make_mesh((1,), ("x",)), jax.P("x"))
  ja = jax.make_array_from_callback((3, 4), js, lambda i: data[i])
  np.testing.assert_array_equal(a, ja)
  assert a.shape == ja.shape and a.dtype == ja.dtype


def test_addressable_shards_single_device():
  x = jnp.arange(6.0).reshape(2, 3)
  (sh,) = x.addressable_shards
  assert isinstance(sh, pyjax.Shard)
  assert sh.device == pyjax.devices()[0] and sh.replica_id == 0
  assert sh.index == (slice(None), slice(None))
  np.testing.assert_array_equal(sh.data, x)
  jax = pytest.importorskip("jax")
  for v, jv in ((x, jax.numpy.arange(6.0).reshape(2, 3)),
                (jnp.float32(2), jax.numpy.float32(2))):
    assert repr(v.addressable_shards[0]) == repr(jv.addressable_shards[0])


def test_device_memory_and_client():
  d = pyjax.devices()[0]
  (m,) = d.addressable_memories()
  assert m.kind == "device" and d.default_memory() is m and d.memory("device") is m
  assert m.addressable_by_devices() == [d] and m.process_index == 0
  with pytest.raises(ValueError, match="memory kind"):
    d.memory("pinned_host")
  assert d.client.platform == "cpu" and d.client.runtime_type == "pyjax"
  assert d.client.process_index() == 0 and d in d.client.devices()
  assert pyjax.device_put(jnp.ones(2), pyjax.experimental.layout.Format(
      None, pyjax.sharding.SingleDeviceSharding(d))).device == d


def test_array_serialization_round_trip(tmp_path):
  pytest.importorskip("tensorstore")
  from pyjax.experimental.array_serialization import serialization as ser
  arrays = [jnp.arange(12.0).reshape(3, 4), jnp.arange(5, dtype=jnp.int32),
            jnp.ones((2, 2), jnp.bfloat16)]
  paths = [str(tmp_path / n) for n in ("a", "b", "c")]
  done = []
  m = ser.GlobalAsyncCheckpointManager()
  m.serialize_with_paths(arrays, paths, on_commit_callback=lambda: done.append(1))
  m.wait_until_finished()
  assert done == [1] and all(os.path.isdir(p) for p in paths)
  shardings = [a.sharding for a in arrays]
  back = m.deserialize_with_paths(shardings, paths)
  for a, b in zip(arrays, back):
    assert a.dtype == b.dtype and a.shape == b.shape
    np.testing.assert_array_equal(np.asarray(a, np.float32), np.asarray(b, np.float32))
  # a larger global shape is zero-filled; dtype casts on read
  (big,) = ser.run_deserialization([arrays[0].sharding], [ser.get_tensorstore_spec(paths[0])],
                                   global_shapes=[(4, 4)], dtypes=[np.float16])
  assert big.dtype == np.float16 and big.shape == (4, 4)
  np.testing.assert_array_equal(np.asarray(big)[3], 0)
  assert ser.is_remote_storage("gs://b/x") and not ser.is_remote_storage(paths[0])
  assert isinstance(m, ser.GlobalAsyncCheckpointManagerBase)


def test_array_serialization_files_readable_by_jax(tmp_path):
  pytest.importorskip("tensorstore")
  jax = pytest.importorskip("jax")
  from jax.experimental.array_serialization import serialization as jser
  from pyjax.experimental.array_serialization import serialization as ser
  x = jnp.arange(20.0).reshape(4, 5)
  path = str(tmp_path / "x")
  ser.run_serialization([x], [ser.get_tensorstore_spec(path)])
  js = jax.sharding.SingleDeviceSharding(jax.devices()[0])
  (y,) = jser.run_deserialization([js], [jser.get_tensorstore_spec(path)])
  np.testing.assert_array_equal(np.asarray(y), np.asarray(x))
  assert ser.get_tensorstore_spec(path) == jser.get_tensorstore_spec(path)


def test_colocated_python_runs_here_and_checks_specs():
  from pyjax.experimental import colocated_python as cp
  devs = pyjax.devices()
  assert cp.colocated_cpu_devices(devs) == tuple(devs)
  mesh = pyjax.make_mesh((1,), ("x",))
  assert list(cp.colocated_cpu_devices(mesh).devices.flat) == list(mesh.devices.flat)

  @cp.colocated_python
  def add_one(x):
    return x + 1
  np.testing.assert_array_equal(add_one(jnp.arange(3)), [1, 2, 3])
  spec = pyjax.ShapeDtypeStruct((3,), jnp.int32)
  np.testing.assert_array_equal(add_one.specialize(out_specs_fn=lambda x: spec)(jnp.arange(3)),
                                [1, 2, 3])
  bad = add_one.specialize(out_specs_fn=lambda x: pyjax.ShapeDtypeStruct((4,), jnp.int32))
  with pytest.raises(ValueError, match="does not match"):
    bad(jnp.arange(3))

  @cp.colocated_python_class
  class Counter:
    def __init__(self, start):
      self.n = start

    def incr(self, k):
      self.n += k
      return self.n
  c = Counter(10)
  assert c.incr(2) == 12 and c.incr(3) == 15


def test_colocated_serialization_round_trip_and_patchable():
  pytest.importorskip("cloudpickle")
  from pyjax.experimental.colocated_python import serialization as ser
  mesh = pyjax.make_mesh((1,), ("x",))
  obj = (mesh, NamedSharding(mesh, P("x")), ser.DeviceList(pyjax.devices()),
         jnp.ones(2).sharding, lambda v: v * 2)
  m, ns, dl, sds, fn = ser._deserialize(ser._serialize(obj))
  assert list(m.devices.flat) == list(mesh.devices.flat) and ns.spec == P("x")
  assert tuple(dl) == tuple(pyjax.devices()) and sds.device_set == {pyjax.devices()[0]}
  assert fn(3) == 6
  calls = []
  orig = ser._reduce_mesh
  ser._reduce_mesh = lambda mesh: (calls.append(1), orig(mesh))[1]
  try:
    ser._deserialize(ser._serialize(mesh))
  finally:
    ser._reduce_mesh = orig
  assert calls == [1]


def test_pjit_is_deprecated_jit():
  from pyjax.experimental import pjit as pjit_mod
  with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    f = pjit_mod.pjit(lambda x: x * 2)
  assert any(issubclass(x.category, DeprecationWarning) for x in w)
  np.testing.assert_array_equal(f(jnp.arange(3)), [0, 2, 4])


def test_pxla_results_handler_and_ifrt_programs():
  from pyjax.interpreters import pxla
  from pyjax.extend import ifrt_programs
  aval = pyjax.core.ShapedArray((2, 2), np.dtype(np.float32))
  s = pyjax.sharding.SingleDeviceSharding(pyjax.devices()[0])
  h = pxla.global_avals_to_results_handler([aval], [s], True)
  (out,) = h([np.ones((2, 2), np.float32)])
  assert out.shape == (2, 2) and out.dtype == np.float32 and out.committed
  with pytest.raises(ValueError):
    h.handlers[0](np.ones(3))
  mesh = pyjax.make_mesh((1,), ("x",))
  assert pxla.mesh_local_to_global(mesh, {0: "x"}, aval) == aval
  prog = ifrt_programs.ifrt_programs.make_plugin_program("prog")
  assert prog == ifrt_programs.ifrt_programs.make_plugin_program("prog")
  with pytest.raises(TypeError):
    ifrt_programs.ifrt_programs.make_plugin_program(3)


def test_async_limit_in_flight_bytes():
  pytest.importorskip("tensorstore")
  from pyjax.experimental.array_serialization.serialization import _LimitInFlightBytes

  async def go():
    lim = _LimitInFlightBytes(10)
    await lim.wait_for_bytes(6)
    waiter = asyncio.ensure_future(lim.wait_for_bytes(6))
    await asyncio.sleep(0)
    assert not waiter.done()
    await lim.release_bytes(6)
    await waiter
    with pytest.raises(ValueError):
      await lim.wait_for_bytes(11)
  asyncio.run(go())


def test_private_tree_util_sees_typed_keys_as_leaves_like_jax():
  # orbax calls jax._src.tree_util.flatten_one_level; flax tests type(x) in _registry
  from pyjax._src import tree_util as tu
  k = pyjax.random.key(0)
  with pytest.raises(ValueError, match="can't tree-flatten"):
    tu.flatten_one_level(k)
  with pytest.raises(ValueError, match="can't tree-flatten"):
    tu.flatten_one_level_with_keys(k)
  assert type(k) not in tu._registry and dict in tu._registry
  assert tu.flatten_one_level({"b": 1, "a": 2}) == ((2, 1), ("a", "b"))
  jax = pytest.importorskip("jax")
  from jax._src import tree_util as jtu
  jk = jax.random.key(0)
  with pytest.raises(ValueError):
    jtu.flatten_one_level(jk)
  assert (type(jk) in jtu._registry) == (type(k) in tu._registry)
  assert jtu.flatten_one_level({"b": 1, "a": 2}) == ((2, 1), ("a", "b"))
