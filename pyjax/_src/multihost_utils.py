"""``jax.experimental.multihost_utils`` for pyjax's single-process runtime.

With one process every "host-local" value is already global: gathers stack or
concatenate the one process's data, broadcasts return it, barriers only check that the
local values are consistent (no other process exists to wait for).  Results have JAX's
types: NumPy arrays from ``broadcast_one_to_all`` / ``process_allgather``, ``jax.Array``
laid out by ``NamedSharding(mesh, pspec)`` from ``host_local_array_to_global_array``.
"""
from __future__ import annotations

import zlib

import numpy as np

from pyjax._src import distributed, tree_util
from pyjax._src.runtime import devices as _devices


def _tree_map(f, *trees):
  return tree_util.tree_map(f, *trees)


def broadcast_one_to_all(in_tree, is_source=None):
  """Broadcast ``in_tree`` from the source process to all: with one process, the tree
  itself with its leaves as NumPy arrays."""
  del is_source
  return _tree_map(np.asarray, in_tree)


def process_allgather(in_tree, tiled=False):
  """Gather every process's leaves: stacked on a new leading axis (``tiled=False``) or
  concatenated (``tiled=True``).  One process: its own data (with a leading axis of size
  1 when stacking).  Returns NumPy arrays."""
  def gather(x):
    out = np.asarray(x)
    return out if tiled else np.expand_dims(out, axis=0)
  return _tree_map(gather, in_tree)


def assert_equal(in_tree, fail_message=""):
  """Check that every process holds the same tree of values (trivially true with one
  process, but the values are still gathered and compared, as JAX does)."""
  def concat(x):
    x = np.asarray(x)
    if x.ndim == 0:
      x = np.expand_dims(x, axis=0)
    return np.concatenate([x] * _devices.process_count())
  out = process_allgather(in_tree, tiled=True)
  expected = _tree_map(concat, in_tree)
  ok = tree_util.tree_all(_tree_map(
      lambda a, b: bool(np.all(np.equal(np.reshape(a, -1), np.reshape(b, -1)))),
      expected, out))
  if not ok:
    raise AssertionError(f"{fail_message}. Expected: {out}; got: {in_tree}.")


def sync_global_devices(name):
  """A barrier across all processes (one process: returns once the name's hash checks)."""
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
  ``NamedSharding(global_mesh, pspec)``.  With one process the local data is the global
  array."""
  leaves, specs, treedef = _broadcast_pspecs(local_inputs, pspecs)
  return treedef.unflatten([_place(x, global_mesh, s) for x, s in zip(leaves, specs)])


def global_array_to_host_local_array(global_inputs, global_mesh, pspecs):
  """Turn global arrays into this process's local part (with one process, the whole
  array, laid out by ``NamedSharding(global_mesh, pspec)``)."""
  leaves, specs, treedef = _broadcast_pspecs(global_inputs, pspecs)
  return treedef.unflatten([_place(x, global_mesh, s) for x, s in zip(leaves, specs)])


def live_devices(devices):
  """Context manager yielding the devices whose processes are alive: all of ``devices``
  (one live process)."""
  import contextlib

  @contextlib.contextmanager
  def cm():
    yield list(devices)
  return cm()
