"""Serialization of colocated Python functions and their specs (JAX's
``jax.experimental.colocated_python.serialization``).

``_serialize`` pickles a callable or a pytree of specs with cloudpickle, replacing
devices by their ids: meshes, ``NamedSharding``, ``SingleDeviceSharding`` and
``DeviceList`` are rebuilt by ``_deserialize`` on the colocated CPU devices of those ids
(``_get_cpu_device_map``).  The reducers are module attributes looked up at each call, so
a library may replace them (orbax does).  Requires ``cloudpickle`` (``ModuleNotFoundError``
otherwise, as in JAX).
"""
from __future__ import annotations

import collections
import functools
import io

import numpy as np

from pyjax._src import xla_bridge as xb  # noqa: F401  (JAX's module attribute)
from pyjax._src.runtime import devices as _devices
from pyjax._src.runtime.array import SingleDeviceSharding
from pyjax._src.sharding import Mesh, NamedSharding

try:
  import cloudpickle
except ImportError:  # pragma: no cover - cloudpickle is optional
  cloudpickle = None


class DeviceList(tuple):
  """An ordered, hashable list of devices (JAX's ``xla_client.DeviceList``)."""
  __slots__ = ()

  def __new__(cls, devices=()):
    return tuple.__new__(cls, tuple(devices))

  @property
  def device_set(self):
    return set(self)


def _get_cpu_device_map():
  """Device id -> the CPU device colocated with it (every device this process has)."""
  from pyjax._src.colocated_python import colocated_cpu_devices
  out = {}
  for backend in ("cpu", None):
    try:
      devs = _devices.devices(backend)
    except Exception:
      continue
    for d, c in zip(devs, colocated_cpu_devices(devs)):
      out.setdefault(d.id, c)
  return out


def _lookup_cpu_device(cpu_device_map, device_id):
  try:
    return cpu_device_map[int(device_id)]
  except KeyError:
    raise ValueError(f"Invalid device ID {device_id}. Device list must contain only "
                     "CPU devices.") from None


def _ids(devices):
  return np.vectorize(lambda d: d.id, otypes=[int])(np.asarray(devices, dtype=object))


def _reduce_mesh(mesh):
  return _unreduce_mesh, (_ids(mesh.devices), mesh.axis_names,
                          getattr(mesh, "axis_types", None))


def _unreduce_mesh(device_ids, axis_names, axis_types):
  lookup = functools.partial(_lookup_cpu_device, _get_cpu_device_map())
  devs = np.array([lookup(i) for i in np.asarray(device_ids).flat],
                  dtype=object).reshape(np.shape(device_ids))
  return Mesh(devs, axis_names, axis_types=axis_types)


def _reduce_named_sharding(sharding):
  return _unreduce_named_sharding, (_reduce_mesh(sharding.mesh), sharding.spec,
                                    sharding._memory_kind)


def _unreduce_named_sharding(reduced_mesh, spec, memory_kind):
  mesh = reduced_mesh[0](*reduced_mesh[1])
  return NamedSharding(mesh, spec, memory_kind=memory_kind)


def _reduce_device_list(device_list):
  return _unreduce_device_list, ([d.id for d in device_list],)


def _unreduce_device_list(device_ids):
  m = _get_cpu_device_map()
  return DeviceList(_lookup_cpu_device(m, i) for i in device_ids)


def _reduce_single_device_sharding(sharding):
  return _unreduce_single_device_sharding, (next(iter(sharding.device_set)).id,)


def _unreduce_single_device_sharding(device_id):
  return SingleDeviceSharding(_lookup_cpu_device(_get_cpu_device_map(), device_id))


def _dispatch_table():
  g = globals()
  return collections.ChainMap(
      {Mesh: g["_reduce_mesh"], NamedSharding: g["_reduce_named_sharding"],
       DeviceList: g["_reduce_device_list"],
       SingleDeviceSharding: g["_reduce_single_device_sharding"]},
      cloudpickle.Pickler.dispatch_table)


def _serialize(obj):
  """Pickle a callable or a pytree of specs (devices by id) to bytes."""
  if cloudpickle is None:
    raise ModuleNotFoundError('No module named "cloudpickle"')
  class _Pickler(cloudpickle.Pickler):   # the table is read when a pickler is made
    dispatch_table = _dispatch_table()

  with io.BytesIO() as f:
    _Pickler(f).dump(obj)
    return f.getvalue()


def _deserialize(serialized):
  """Unpickle what ``_serialize`` produced (devices become colocated CPU devices)."""
  if cloudpickle is None:
    raise ModuleNotFoundError('No module named "cloudpickle"')
  return cloudpickle.loads(serialized)
