"""``jax.experimental.mesh_utils``: lay devices out as an n-d array for ``Mesh``.

``create_device_mesh`` orders devices for good collective performance and reshapes them to
the logical mesh; ``create_hybrid_device_mesh`` builds one such mesh per "granule" (a slice,
or a process) and tiles the granules' meshes by an outer (DCN) mesh shape.

On CPU the order is the given one (``devices()`` by default), on GPU devices are sorted by
id, as in JAX 0.10.  Differs from JAX: pyjax has no TPU backend, so the TPU topology
handlers (physical torus layouts, ``contiguous_submeshes``' transpose trick, splitting
physical axes) are absent; ``device_kind_handler_dict`` is the registry
``create_device_mesh`` consults first (empty unless a caller registers a handler for a
device kind), and ``contiguous_submeshes`` / ``allow_split_physical_axes`` have no effect
on CPU and GPU devices (as in JAX).
"""
import collections
import math

import numpy as np

from pyjax._src.runtime import devices as _devices

# device_kind -> handler(mesh_shape, devices, *, contiguous_submeshes) returning an
# ndarray of devices, or None to fall back to the platform's default layout.
device_kind_handler_dict = {}


def _int_axis_sizes(mesh_shape):
  """``mesh_shape`` as a tuple of Python ints, or None when an entry is not int-like."""
  sizes = []
  for size in mesh_shape:
    try:
      sizes.append(int(size))
    except Exception:  # noqa: BLE001 -- any unconvertible entry is reported the same way
      return None
  return tuple(sizes)


def _device_array(devices, shape):
  """An object ndarray of ``shape`` holding ``devices`` in order."""
  arr = np.empty(len(devices), dtype=object)
  arr[:] = list(devices)
  return arr.reshape(shape)


def create_device_mesh(mesh_shape, devices=None, *, contiguous_submeshes=False,
                       allow_split_physical_axes=False):
  """An ndarray of devices of shape ``mesh_shape``, to pass to ``jax.sharding.Mesh``.

  ``mesh_shape`` is ordered by increasing communication intensity (e.g. replica, data,
  model); ``devices`` defaults to ``jax.devices()`` and must number exactly
  ``prod(mesh_shape)`` (``ValueError`` otherwise, with JAX's message).  CPU devices keep
  their given order; GPU devices are sorted by id.  A handler registered in
  ``device_kind_handler_dict`` for the last device's kind is tried first.

  Differs from JAX: no TPU topology layouts (pyjax has no TPU backend), so
  ``contiguous_submeshes`` and ``allow_split_physical_axes`` never change the result
  (they do not on JAX's CPU and GPU devices either).
  """
  if devices is None:
    devices = _devices.devices()
  shape = _int_axis_sizes(mesh_shape)
  if shape is None:
    raise ValueError("`mesh_shape` passed to `create_device_mesh` should be a sequence of"
                     f" ints. Got {mesh_shape}")
  if math.prod(shape) != len(devices):
    raise ValueError(f"Number of devices {len(devices)} must equal the product of "
                     f"mesh_shape {shape}")
  last = devices[-1]
  handler = device_kind_handler_dict.get(getattr(last, "device_kind", None))
  if handler is not None:
    mesh = handler(shape, devices, contiguous_submeshes=contiguous_submeshes)
    if mesh is not None:
      return mesh
  if getattr(last, "platform", None) == "gpu":
    # jax.devices() lists devices process by process; ids follow the interconnect.
    return _device_array(sorted(devices, key=lambda d: d.id), shape)
  return _device_array(devices, shape)


def _nested_blocks(meshes, index_grid):
  """``index_grid`` (an int ndarray) as nested lists of the meshes it indexes."""
  if index_grid.ndim == 0:
    return meshes[int(index_grid)]
  return [_nested_blocks(meshes, sub) for sub in index_grid]


def create_hybrid_device_mesh(mesh_shape, dcn_mesh_shape, devices=None, *,
                              process_is_granule=False, should_sort_granules_by_key=True,
                              allow_split_physical_axes=False):
  """A device mesh for two-level (fast inner, slow outer) parallelism.

  Devices are grouped into granules by ``slice_index`` (or by ``process_index`` when
  ``process_is_granule``); each granule becomes a ``create_device_mesh(mesh_shape, ...)``
  block, and the blocks are tiled by ``dcn_mesh_shape`` (granules in key order unless
  ``should_sort_granules_by_key=False``), like ``np.block``: the result's axis i has size
  ``mesh_shape[i] * dcn_mesh_shape[i]``.  Raises ``ValueError`` when the devices lack the
  granule attribute (pyjax's CPU devices, like JAX's, have no ``slice_index``: pass
  ``process_is_granule=True``), when the number of granules is not
  ``prod(dcn_mesh_shape)``, or when a granule's device count is not ``prod(mesh_shape)``.
  Same behaviour as JAX 0.10 on CPU and GPU devices.
  """
  if devices is None:
    devices = _devices.devices()
  attr = "process_index" if process_is_granule else "slice_index"
  if not hasattr(devices[0], attr):
    raise ValueError(f"Device {devices[0]} does not have attribute {attr}. See"
                     " `process_is_granule` option.")
  by_key = collections.defaultdict(list)
  for d in devices:
    by_key[getattr(d, attr)].append(d)
  keys = sorted(by_key) if should_sort_granules_by_key else list(by_key)
  granules = [by_key[k] for k in keys]
  if np.prod(dcn_mesh_shape) != len(granules):
    raise ValueError(f"Number of slices {len(granules)} must equal the product of "
                     f"dcn_mesh_shape {dcn_mesh_shape}")
  meshes = [create_device_mesh(mesh_shape, g, allow_split_physical_axes=allow_split_physical_axes)
            for g in granules]
  grid = np.arange(len(granules)).reshape(dcn_mesh_shape)
  return np.block(_nested_blocks(meshes, grid))
