"""Moving data between host and devices: device_put, device_get, block_until_ready.

``device_put`` of traced values binds ``device_put_p`` (``lax/sharding.py``: one equation
for all the leaves, as in JAX's jaxprs); concrete values move without tracing."""
from __future__ import annotations

import numpy as np

from pyjax._src import core, dtypes
from pyjax._src import config as _config
from pyjax._src import profiler as _profiler
from pyjax._src import tree_util
from pyjax._src.avals import ShapedArray
from pyjax._src.runtime import devices as _devices
from pyjax._src.runtime import dispatch as _dispatch
from pyjax._src.runtime.array import ArrayImpl, SingleDeviceSharding
from pyjax._src.runtime import sharded_array as _sharded
from pyjax._src import layout as _layout


def _resolve_device(device):
  if device is None:
    return None
  if isinstance(device, _devices.Device):
    return device
  if isinstance(device, SingleDeviceSharding):
    return device._device
  if isinstance(device, _layout.Format):   # placed by its sharding (layouts are row-major)
    return _resolve_device(device.sharding)
  ds = getattr(device, "device_set", None)
  if ds is not None and len(ds) == 1:
    return next(iter(ds))
  if ds is not None:
    raise TypeError(f"device_put: unsupported device or sharding {device!r}")
  # anything else, platform names included, is rejected as JAX does
  raise ValueError("`jax.device_put` only accepts `None`, `jax.sharding.Sharding`, "
                   "`jax.Device`, `Format`, `jax.memory.Space` or a pytree of these values. "
                   f"Received invalid value: {device}")


def _put_one(x, device, may_alias=None, donate=False):
  if isinstance(x, core.Tracer):
    return x
  if type(x) is ArrayImpl:
    if device is None:
      return x
    if x._device is device and x._committed:
      return x
    if _config.d2d_guarded and x._device is not device:
      from pyjax._src import transfer_guard
      transfer_guard.device_to_device(x.aval, x._device, device, True)
    return _dispatch.commit_to(x, device, copy=may_alias is False)
  from pyjax._src.numpy.array_constructors import asarray
  if isinstance(x, (np.ndarray, np.generic)) or type(x) in dtypes.python_scalar_types or hasattr(x, "__jax_array__") \
      or isinstance(x, (bool, int, float, complex)):
    if _config.h2d_guarded and not hasattr(x, "__jax_array__"):
      from pyjax._src import transfer_guard
      transfer_guard.host_to_device(transfer_guard.host_aval(x), device, True)
    a = asarray(x)
    if isinstance(x, (np.ndarray, np.generic)):
      a = ArrayImpl(np.array(a._data(), copy=True), ShapedArray(a.shape, a.dtype, False), a._device, False)
    if device is None:
      return a
    return _dispatch.commit_to(a, device)
  raise TypeError(f"device_put: argument of type {type(x)} is not a valid JAX type")


def _put_traced(x, device, src, donate, may_alias):
  """``device_put`` when a leaf is traced: one ``device_put_p`` equation for all leaves."""
  from pyjax._src.lax import sharding
  leaves, tree = tree_util.tree_flatten(x)
  n = len(leaves)
  devs, srcs = (_prefix_leaves(d, x, n) for d in (device, src))
  semantics = sharding.ArrayCopySemantics
  if donate:
    cs = semantics.DONATE_INPUT
  elif may_alias is False:
    cs = semantics.ALWAYS_COPY
  else:
    cs = semantics.REUSE_INPUT
  # a multi-device sharding of a traced value: the program computes the global value
  # (jit lays outputs out by its out_shardings), so it places nothing here
  devs = [None if _sharded.is_multi_device(d) else d for d in devs]
  outs = sharding.bind_device_put(leaves, [_resolve_device(d) for d in devs],
                                  [_resolve_device(d) for d in srcs], (cs,) * n)
  return tree_util.tree_unflatten(tree, outs)


def _is_placement(d):
  """A device, a sharding (anything with a ``device_set``) or a platform name: a leaf of
  a device_put placement tree."""
  if (d is None or isinstance(d, (_devices.Device, SingleDeviceSharding, str))
      or hasattr(d, "device_set")):
    return True
  # any other leaf (5, 1.5, ...) is an invalid placement: _resolve_device says so
  return tree_util.treedef_is_leaf(tree_util.tree_structure(d))


def _prefix_leaves(d, x, n):
  if _is_placement(d):
    return [d] * n
  return tree_util.tree_leaves(tree_util.tree_map(lambda _, dd: dd, x, d,
                                                  is_leaf=lambda v: v is None))


def device_put(x, device=None, *, src=None, donate=False, may_alias=None):
  """Put every leaf of ``x`` on ``device`` (committing it there), or on the default device
  uncommitted when ``device`` is None.  ``device`` may be a Device, a SingleDeviceSharding
  (or another single-device sharding), or a pytree prefix of those; anything else (a
  number, a platform name) raises JAX's ValueError.  Under a trace it records a ``device_put``
  equation, as JAX does.  A PartitionSpec means a NamedSharding over the context mesh."""
  if type(device).__name__ == "PartitionSpec" or (
      isinstance(device, (tuple, list, dict)) and any(
          type(d).__name__ == "PartitionSpec" for d in tree_util.tree_leaves(device))):
    from pyjax._src.out_sharding import spec_to_named
    device = tree_util.tree_map(
        lambda d: spec_to_named(d) if type(d).__name__ == "PartitionSpec" else d, device,
        is_leaf=lambda v: v is None)
  if any(isinstance(leaf, core.Tracer) for leaf in tree_util.tree_leaves(x)):
    return _put_traced(x, device, src, donate, may_alias)
  if _profiler.session is not None:
    with _profiler.span("device_put", "transfer", direction="host_to_device",
                        device=str(device), bytes=_nbytes(x)):
      return _device_put(x, device, donate, may_alias)
  return _device_put(x, device, donate, may_alias)


def _nbytes(x):
  """Bytes held by the array leaves of ``x`` (for profiler events)."""
  return int(sum(getattr(leaf, "nbytes", 0) for leaf in tree_util.tree_leaves(x)))


def _device_put(x, device, donate, may_alias):
  if _is_placement(device):
    if _sharded.is_multi_device(device):   # one buffer per device (runtime/sharded_array)
      return tree_util.tree_map(lambda leaf: _put_multi(leaf, device), x)
    d = _resolve_device(device)
    return tree_util.tree_map(lambda leaf: _put_one(leaf, d, may_alias, donate), x)
  return tree_util.tree_map(lambda leaf, dev: _put_multi(leaf, dev) if _sharded.is_multi_device(dev)
                            else _put_one(leaf, _resolve_device(dev), may_alias, donate),
                            x, device)


def _put_multi(x, sharding):
  if isinstance(x, core.Tracer):
    return x
  return _sharded.put_sharded(x, sharding)


def device_put_replicated(x, devices):
  return tree_util.tree_map(
      lambda leaf: ArrayImpl(np.stack([np.asarray(leaf)] * len(devices)),
                             ShapedArray((len(devices),) + np.shape(leaf),
                                         dtypes.canonicalize_dtype(np.asarray(leaf).dtype)),
                             devices[0], True), x)


def device_get(x):
  """Fetch every Array leaf of ``x`` to the host as a NumPy array (other leaves unchanged)."""
  def get(leaf):
    if type(leaf) is ArrayImpl:
      return np.asarray(leaf)
    if isinstance(leaf, core.Tracer):
      return np.asarray(leaf)  # raises TracerArrayConversionError
    return leaf
  if _profiler.session is not None:
    with _profiler.span("device_get", "transfer", direction="device_to_host",
                        bytes=_nbytes(x)):
      return tree_util.tree_map(get, x)
  return tree_util.tree_map(get, x)


def block_until_ready(x):
  """Wait until every Array leaf of ``x`` is computed; returns ``x``."""
  for leaf in tree_util.tree_leaves(x):
    f = getattr(leaf, "block_until_ready", None)
    if f is not None:
      f()
  return x


def effects_barrier():
  """Wait until all work already dispatched to any device's stream has run (so its side
  effects, e.g. callbacks, have happened).  Errors stay with their arrays."""
  from pyjax._src.runtime import stream
  stream.synchronize_all()

