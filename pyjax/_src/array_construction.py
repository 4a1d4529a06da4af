"""Building ``jax.Array``s from per-device data: ``make_array_from_callback``,
``make_array_from_single_device_arrays``, ``make_array_from_process_local_data``.

pyjax runs one process and holds each array in one buffer, so these assemble the global
value from the pieces the sharding assigns to each device (``devices_indices_map``) and
place it with ``device_put(value, sharding)``.  Shapes, dtypes and the coverage of every
index are checked as JAX checks them.

Differs from JAX: the result is one buffer on the sharding's first device (pyjax has no
multi-buffer sharded arrays), so ``addressable_shards`` of the result is one shard.
"""
from __future__ import annotations

import numpy as np

from pyjax._src import dtypes


def _as_shape(shape):
  return tuple(int(d) for d in shape)


def _put(value, sharding):
  from pyjax._src.api_device import device_put
  return device_put(value, sharding)


def _assemble(shape, dtype, pieces):
  """The global NumPy value from ``[(index, data), ...]`` (every element covered)."""
  out = np.zeros(shape, dtype=dtype)
  covered = np.zeros(shape, dtype=bool)
  for index, data in pieces:
    data = np.asarray(data)
    want = out[index].shape
    if data.shape != want:
      raise ValueError(f"Expected shard shape {want} doesn't match the single device "
                       f"array shape {data.shape}. Shape of Array is {shape} with sharding "
                       f"index {index}")
    out[index] = data
    covered[index] = True
  if not covered.all():
    raise ValueError(f"The shards given do not cover the whole array of shape {shape}")
  return out


def make_array_from_callback(shape, sharding, data_callback, dtype=None):
  """The array of ``shape`` laid out by ``sharding`` whose shard at ``index`` is
  ``data_callback(index)`` (called once per device of the sharding)."""
  shape = _as_shape(shape)
  indices = sharding.addressable_devices_indices_map(shape)
  pieces = []
  for device, index in indices.items():
    if index is None:
      index = tuple(slice(None) for _ in shape)
    data = data_callback(index)
    pieces.append((index, data))
  if dtype is None:
    dtype = np.asarray(pieces[0][1]).dtype if pieces else np.float32
  dtype = dtypes.canonicalize_dtype(dtype)
  return _put(_assemble(shape, dtype, pieces), sharding)


def make_array_from_single_device_arrays(shape, sharding, arrays, *, dtype=None):
  """The array of ``shape`` laid out by ``sharding`` from one array per device (each on
  its device, holding that device's shard)."""
  shape = _as_shape(shape)
  arrays = list(arrays)
  indices = sharding.devices_indices_map(shape)
  if len(arrays) != len(indices):
    raise ValueError(f"The number of single device arrays ({len(arrays)}) should be equal "
                     f"to the number of devices in the sharding ({len(indices)})")
  by_device = {}
  for a in arrays:
    devs = a.devices() if hasattr(a, "devices") else set()
    if len(devs) != 1:
      raise ValueError("make_array_from_single_device_arrays expects single-device "
                       f"arrays, got one on {len(devs)} devices")
    by_device[next(iter(devs))] = a
  pieces = []
  for device, index in indices.items():
    a = by_device.get(device)
    if a is None:   # pyjax arrays on one device: match shards to devices in order
      a = arrays[len(pieces)]
    pieces.append((index, np.asarray(a)))
  if dtype is None:
    dtype = arrays[0].dtype if arrays else np.float32
  return _put(_assemble(shape, np.dtype(dtype), pieces), sharding)


def make_array_from_process_local_data(sharding, local_data, global_shape=None):
  """The global array whose part held by this process is ``local_data`` (with one
  process, ``local_data`` is the whole array)."""
  local_data = np.asarray(local_data)
  if global_shape is not None and _as_shape(global_shape) != local_data.shape:
    raise ValueError(f"global_shape {tuple(global_shape)} does not match the local data "
                     f"of shape {local_data.shape} (pyjax runs a single process)")
  return _put(local_data, sharding)
