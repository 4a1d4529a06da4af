"""Building ``jax.Array``s from per-device data: ``make_array_from_callback``,
``make_array_from_single_device_arrays``, ``make_array_from_process_local_data``.

With a sharding over this process's devices these assemble the global value from the
pieces the sharding assigns to each device (``devices_indices_map``) and place it with
``device_put(value, sharding)``.  With a sharding spanning processes (after
``jax.distributed.initialize``) each process builds its own shards only: the result is
not fully addressable, as in JAX.  Shapes, dtypes and the coverage of every index are
checked as JAX checks them.
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


def _global_from_local(shape, dtype, sharding, by_device):
  """An array over processes (``sharding`` not fully addressable) from this process's
  shards, ``{device: data}``: each local device holds its own part; the other processes
  hold theirs (nothing is exchanged)."""
  from pyjax._src.avals import ShapedArray
  from pyjax._src.runtime import sharded_array
  from pyjax._src.runtime.array import ArrayImpl
  sharded_array._check_divisible(shape, sharding)
  indices = sharding.devices_indices_map(shape)
  shards = []
  for d in sharding._addressable_device_assignment:
    data = np.asarray(by_device[d])
    want = np.empty(shape, dtype=np.bool_)[indices[d]].shape
    if data.shape != want:
      raise ValueError(f"Expected shard shape {want} doesn't match the single device "
                       f"array shape {data.shape}. Shape of Array is {shape} with sharding "
                       f"index {indices[d]}")
    data = np.array(data, dtype=dtype, copy=True)
    shards.append(ArrayImpl(data, ShapedArray(data.shape, data.dtype), d, True))
  return sharded_array.ShardedArrayImpl(ShapedArray(shape, np.dtype(dtype)), sharding,
                                        shards)


def make_array_from_callback(shape, sharding, data_callback, dtype=None):
  """The array of ``shape`` laid out by ``sharding`` whose shard at ``index`` is
  ``data_callback(index)`` (called once per addressable device of the sharding).  With
  devices of other processes in ``sharding`` the result is not fully addressable."""
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
  if not sharding.is_fully_addressable:
    return _global_from_local(shape, dtype, sharding,
                              {d: data for d, (_, data) in zip(indices, pieces)})
  return _put(_assemble(shape, dtype, pieces), sharding)


def _by_device(arrays):
  by_device = {}
  for a in arrays:
    devs = a.devices() if hasattr(a, "devices") else set()
    if len(devs) != 1:
      raise ValueError("make_array_from_single_device_arrays expects single-device "
                       f"arrays, got one on {len(devs)} devices")
    by_device[next(iter(devs))] = a
  return by_device


def make_array_from_single_device_arrays(shape, sharding, arrays, *, dtype=None):
  """The array of ``shape`` laid out by ``sharding`` from one array per device (each on
  its device, holding that device's shard)."""
  shape = _as_shape(shape)
  arrays = list(arrays)
  by_device = _by_device(arrays)
  if not sharding.is_fully_addressable:
    want = sharding._addressable_device_assignment
    if set(by_device) != set(want):
      raise ValueError(f"The arrays' devices {sorted(d.id for d in by_device)} are not the "
                       f"addressable devices of the sharding "
                       f"{sorted(d.id for d in want)}")
    if dtype is None:
      dtype = arrays[0].dtype
    return _global_from_local(shape, np.dtype(dtype), sharding, by_device)
  indices = sharding.devices_indices_map(shape)
  if len(arrays) != len(indices):
    raise ValueError(f"The number of single device arrays ({len(arrays)}) should be equal "
                     f"to the number of devices in the sharding ({len(indices)})")
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
  process, ``local_data`` is the whole array).  With several processes, ``local_data``
  is this process's block of the dimensions the sharding splits (``global_shape``
  defaults to the blocks stacked over the processes along them, as JAX)."""
  if not sharding.is_fully_addressable:
    return _from_process_local(sharding, np.asarray(local_data), global_shape)
  local_data = np.asarray(local_data)
  if global_shape is not None and _as_shape(global_shape) != local_data.shape:
    raise ValueError(f"global_shape {tuple(global_shape)} does not match the local data "
                     f"of shape {local_data.shape} (pyjax runs a single process)")
  return _put(local_data, sharding)


def _from_process_local(sharding, local_data, global_shape):
  """``make_array_from_process_local_data`` when ``sharding`` spans processes: this
  process's devices cover a box of the global array (per dimension, the span of their
  indices); ``local_data`` is that box."""
  ndim = local_data.ndim
  if global_shape is None:
    # each dimension's global size: the local size times the number of distinct blocks
    # the sharding cuts it into, over the number of those this process holds
    # (a probe size every dimension's number of blocks divides: the device count does)
    big = len(sharding.device_set) << 10
    probe = sharding.devices_indices_map((big,) * ndim)
    mine = sharding.addressable_devices_indices_map((big,) * ndim)
    gs = []
    for k in range(ndim):
      every = {idx[k].indices(big) for idx in probe.values()}
      local = {idx[k].indices(big) for idx in mine.values()}
      gs.append(local_data.shape[k] * len(every) // len(local))
    global_shape = tuple(gs)
  shape = _as_shape(global_shape)
  if len(shape) != ndim:
    raise ValueError(f"global_shape {shape} and the local data of shape "
                     f"{local_data.shape} differ in rank")
  indices = sharding.addressable_devices_indices_map(shape)
  starts = []
  for k in range(ndim):
    spans = [idx[k].indices(shape[k]) for idx in indices.values()]
    lo, hi = min(s[0] for s in spans), max(s[1] for s in spans)
    if hi - lo != local_data.shape[k]:
      raise ValueError(f"The local data of shape {local_data.shape} does not match this "
                       f"process's part of the global shape {shape} along dimension {k} "
                       f"({hi - lo} elements)")
    starts.append(lo)
  by_device = {}
  for d, idx in indices.items():
    local_idx = tuple(slice(s.indices(n)[0] - lo, s.indices(n)[1] - lo)
                      for s, n, lo in zip(idx, shape, starts))
    by_device[d] = local_data[local_idx]
  dtype = dtypes.canonicalize_dtype(local_data.dtype)
  return _global_from_local(shape, dtype, sharding, by_device)
