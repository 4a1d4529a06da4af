"""``jax.experimental.multihost_utils``: host-level helpers across processes.

With one process every "host-local" value is already global: gathers stack or
concatenate the one process's data, broadcasts return it, barriers only check that the
local values are consistent.  After ``jax.distributed.initialize`` under MPI the values
travel between processes through the MPI transport (``runtime/mpi.py``: non-blocking
messages, the collective deadline): one gather of the whole tree per call.  Results have
JAX's types: NumPy arrays from ``broadcast_one_to_all`` / ``process_allgather``,
``jax.Array`` laid out by ``NamedSharding(mesh, pspec)`` from
``host_local_array_to_global_array``.

Differs from JAX: the data moves through MPI messages on the host, not through a jitted
collective program on the devices (the values are the same).
"""
from __future__ import annotations

import zlib

import numpy as np

from pyjax._src import distributed, tree_util
from pyjax._src.runtime import devices as _devices


def _tree_map(f, *trees):
  return tree_util.tree_map(f, *trees)


def _world():
  from pyjax._src.runtime import mpi
  w = mpi.world()
  return w if w is not None and w.size > 1 else None


def _host_value(x):
  """A leaf as what this process contributes: ``(None, value)`` for host data and
  fully addressable arrays; ``('shards', [(index, data)...], shape, dtype)`` for an
  array spanning processes."""
  from pyjax._src.runtime.sharded_array import ShardedArrayImpl
  if isinstance(x, ShardedArrayImpl) and not x.is_fully_addressable:
    parts = [(s.index, np.asarray(s.data)) for s in x.addressable_shards if s.replica_id == 0]
    return ("shards", parts, x.shape, x.dtype)
  return (None, np.asarray(x))


def broadcast_one_to_all(in_tree, is_source=None):
  """Broadcast ``in_tree`` from the source process (``is_source``, default: process 0)
  to all; leaves come back as NumPy arrays."""
  w = _world()
  if w is None:
    return _tree_map(np.asarray, in_tree)
  if is_source is None:
    is_source = _devices.process_index() == 0
  leaves, treedef = tree_util.tree_flatten(in_tree)
  mine = [np.asarray(x) for x in leaves] if is_source else None
  got = w.allgather_objects(mine, "broadcast_one_to_all")
  src = next((v for v in got if v is not None), None)
  if src is None:
    raise ValueError("broadcast_one_to_all: no process is the source (is_source=True)")
  return treedef.unflatten(src)


def process_allgather(in_tree, tiled=False):
  """Gather every process's leaves: stacked on a new leading axis (``tiled=False``) or
  concatenated (``tiled=True``); an array spanning processes gives its global value.
  Returns NumPy arrays."""
  w = _world()
  leaves, treedef = tree_util.tree_flatten(in_tree)
  if w is None:
    def gather(x):
      out = np.asarray(x)
      return out if tiled else np.expand_dims(out, axis=0)
    return treedef.unflatten([gather(x) for x in leaves])
  got = w.allgather_objects([_host_value(x) for x in leaves], "process_allgather")
  out = []
  for k, first in enumerate(got[0]):
    if first[0] == "shards":
      _, _, shape, dtype = first
      value = np.empty(shape, dtype)
      for per_proc in got:
        for idx, data in per_proc[k][1]:
          value[idx] = data
      out.append(value)
    else:
      vals = [per_proc[k][1] for per_proc in got]
      if tiled:
        vals = [np.expand_dims(v, 0) if v.ndim == 0 else v for v in vals]
        out.append(np.concatenate(vals, axis=0))
      else:
        out.append(np.stack(vals, axis=0))
  return treedef.unflatten(out)


def assert_equal(in_tree, fail_message=""):
  """Check that every process holds the same tree of values (``AssertionError`` with
  ``fail_message`` otherwise)."""
  def concat(x):
    x = np.asarray(x)
    if x.ndim == 0:
      x = np.expand_dims(x, axis=0)
    return np.concatenate([x] * _devices.process_count())
  out = process_allgather(in_tree, tiled=True)
  expected = _tree_map(concat, in_tree)
  ok = tree_util.tree_all(_tree_map(
      lambda a, b: np.size(a) == np.size(b) and bool(
          np.all(np.equal(np.reshape(a, -1), np.reshape(b, -1)))),
      expected, out))
  if not ok:
    raise AssertionError(f"{fail_message}. Expected: {out}; got: {in_tree}.")


def sync_global_devices(name):
  """A barrier across all processes: returns once every process called it with the same
  ``name`` (``AssertionError`` when the names differ; ``JaxRuntimeError`` after the
  collective deadline when a process does not come)."""
  h = np.uint32(zlib.crc32(name.encode()))
  assert_equal(h, f"sync_global_devices name mismatch ('{name}')")


def reached_preemption_sync_point(step_id):
  """Whether all processes reached a preemption sync point: False without a distributed
  client (always, in pyjax), as in JAX."""
  del step_id
  if distributed.global_state.client is None:
    return False
  raise RuntimeError("Preemption sync manager has not been initialized. Make sure the "
                     "'jax_enable_preemption_service' config is enabled.")


def _place(x, mesh, pspec):
  from pyjax._src import api_device
  from pyjax._src.sharding import NamedSharding, PartitionSpec
  if pspec is None:
    pspec = PartitionSpec()
  return api_device.device_put(x, NamedSharding(mesh, pspec))


def _broadcast_pspecs(tree, pspecs):
  leaves, treedef = tree_util.tree_flatten(tree)
  from pyjax._src.sharding import PartitionSpec
  if pspecs is None or isinstance(pspecs, PartitionSpec):
    return leaves, [pspecs] * len(leaves), treedef
  specs = tree_util.broadcast_prefix(pspecs, tree,
                                     is_leaf=lambda s: s is None or isinstance(s, PartitionSpec))
  return leaves, specs, treedef


def host_local_array_to_global_array(local_inputs, global_mesh, pspecs):
  """Turn each process's local data into one global ``jax.Array`` sharded as
  ``NamedSharding(global_mesh, pspec)``: the local data is this process's block of the
  dimensions ``pspec`` splits (``make_array_from_process_local_data``).  With one process
  the local data is the global array."""
  leaves, specs, treedef = _broadcast_pspecs(local_inputs, pspecs)
  if not global_mesh.is_multi_process:
    return treedef.unflatten([_place(x, global_mesh, s) for x, s in zip(leaves, specs)])
  from pyjax._src.array_construction import make_array_from_process_local_data
  from pyjax._src.sharding import NamedSharding, PartitionSpec
  out = []
  for x, s in zip(leaves, specs):
    sharding = NamedSharding(global_mesh, s if s is not None else PartitionSpec())
    out.append(make_array_from_process_local_data(sharding, _local_value(x)))
  return treedef.unflatten(out)


def _local_value(x):
  from pyjax._src.runtime.sharded_array import ShardedArrayImpl
  if isinstance(x, ShardedArrayImpl) and not x.is_fully_addressable:
    return _local_box(x)
  return np.asarray(x)


def _local_box(x):
  """This process's part of an array spanning processes: the box its shards cover."""
  shape = x.shape
  idxs = [s.index for s in x.addressable_shards]
  lo = [min(i[k].indices(n)[0] for i in idxs) for k, n in enumerate(shape)]
  hi = [max(i[k].indices(n)[1] for i in idxs) for k, n in enumerate(shape)]
  out = np.empty([h - l for l, h in zip(lo, hi)], x.dtype)
  for s in x.addressable_shards:
    out[tuple(slice(i.indices(n)[0] - l, i.indices(n)[1] - l)
              for i, n, l in zip(s.index, shape, lo))] = np.asarray(s.data)
  return out


def global_array_to_host_local_array(global_inputs, global_mesh, pspecs):
  """Turn global arrays into this process's local part: an array laid out by
  ``NamedSharding(global_mesh.local_mesh, pspec)`` over this process's devices (with
  one process, the whole array over ``global_mesh``)."""
  leaves, specs, treedef = _broadcast_pspecs(global_inputs, pspecs)
  if not global_mesh.is_multi_process:
    return treedef.unflatten([_place(x, global_mesh, s) for x, s in zip(leaves, specs)])
  local = global_mesh.local_mesh
  return treedef.unflatten([_place(_local_value(x), local, s) for x, s in zip(leaves, specs)])


def live_devices(devices):
  """Context manager yielding the devices whose processes are alive: all of ``devices``
  (one live process)."""
  import contextlib

  @contextlib.contextmanager
  def cm():
    yield list(devices)
  return cm()
