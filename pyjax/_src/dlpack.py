"""DLPack interchange (``jax.dlpack``): Arrays from any object with ``__dlpack__``.

Arrays export themselves through ``Array.__dlpack__`` / ``__dlpack_device__`` (the
runtime's), so ``np.from_dlpack(x)`` reads a pyjax Array without a copy on CPU.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

from pyjax._src import dtypes
from pyjax._src.avals import ShapedArray
from pyjax._src.runtime import devices as _devices
from pyjax._src.runtime.array import ArrayImpl
from pyjax._src.typing import DLDeviceType

__all__ = ["from_dlpack", "is_supported_dtype", "SUPPORTED_DTYPES"]

SUPPORTED_DTYPES = frozenset(np.dtype(t) for t in (
    np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
    np.float16, ml_dtypes.bfloat16, np.float32, np.float64, np.complex64, np.complex128,
    np.bool_))

_DL_DEVICE_TO_PLATFORM = {DLDeviceType.kDLCPU: "cpu", DLDeviceType.kDLCUDA: "gpu",
                          DLDeviceType.kDLROCM: "gpu"}


def is_supported_dtype(dtype) -> bool:
  """Whether arrays of ``dtype`` can travel through DLPack (integers, unsigned, float16,
  bfloat16, float32/64, complex64/128, bool).  ``TypeError`` for ``None``."""
  if dtype is None:
    raise TypeError(f"Expected a string or dtype-like object; got {dtype=}")
  return np.dtype(dtype) in SUPPORTED_DTYPES


def _single_device(device):
  """A Device from a Device, a one-device Sharding, or None."""
  if device is None or isinstance(device, _devices.Device):
    return device
  device_set = getattr(device, "device_set", None)
  if device_set is None:
    raise TypeError(f"from_dlpack: device must be a Device or a Sharding, got {device!r}")
  if len(device_set) > 1:
    raise ValueError(
        "from_dlpack can only unpack a dlpack tensor onto a singular device, but "
        f"a Sharding with {len(device_set)} devices was provided.")
  (d,) = device_set
  return d


def from_dlpack(external_array, device=None, copy=None):
  """An Array holding the data of ``external_array``, any object with ``__dlpack__`` and
  ``__dlpack_device__`` (NumPy arrays, PyTorch/CuPy tensors, pyjax Arrays, ...).

  With ``copy=None`` or ``False`` and no change of device the Array shares the producer's
  memory (so mutating the source afterwards is undefined behaviour, as in JAX);
  ``copy=True`` always copies.  ``device`` (a Device or a one-device Sharding) commits the
  result to that device; a different device than the source's needs a copy (``copy=False``
  then raises ``ValueError``).  64-bit data become 32-bit when x64 is off, as in JAX.
  Differs from JAX: buffers that are not C-contiguous or not aligned for their dtype are
  copied (``copy=False`` raises ``ValueError``) -- pyjax's kernels assume dense rows.
  Only CPU producers can be read until pyjax has a GPU backend.
  """
  device = _single_device(device)
  if not hasattr(external_array, "__dlpack__") or not hasattr(external_array,
                                                                "__dlpack_device__"):
    raise TypeError("The array passed to from_dlpack must have __dlpack__ and "
                    "__dlpack_device__ methods.")
  dl_type, dl_id = external_array.__dlpack_device__()
  try:
    platform = _DL_DEVICE_TO_PLATFORM[DLDeviceType(int(dl_type))]
  except (KeyError, ValueError):
    raise TypeError("Array passed to from_dlpack is on unsupported device type "
                    f"(DLDeviceType: {dl_type}, array: {external_array}") from None
  from pyjax._src.xla_bridge import get_backend
  src_device = get_backend(platform).device_from_local_hardware_id(int(dl_id))
  moving = device is not None and device is not src_device
  if moving and copy is False:
    raise ValueError(
        f"Specified {device=} which requires a copy since the source device "
        f"is {src_device!r}, however copy=False. Set copy=True or "
        "copy=None to perform the requested operation.")
  buf = np.from_dlpack(external_array)
  if buf.dtype not in SUPPORTED_DTYPES:
    raise TypeError(f"from_dlpack: unsupported dtype {buf.dtype}")
  dtype = dtypes.canonicalize_dtype(buf.dtype)
  if not (buf.flags.c_contiguous and buf.flags.aligned):
    if copy is False:
      raise ValueError(
          "Specified input which requires a copy since the source data buffer is not "
          "C-contiguous and aligned. However copy=False. Set copy=True or copy=None to "
          "perform the requested operation.")
    buf = np.ascontiguousarray(buf)
  if dtype != buf.dtype:
    buf = buf.astype(dtype)
  elif copy:
    buf = buf.copy()
  else:
    buf = buf.view()   # our own view, marked read-only, of the producer's memory
  buf.flags.writeable = False
  out = ArrayImpl(buf, ShapedArray(buf.shape, dtype, False), src_device, device is not None)
  if moving:
    from pyjax._src.api_device import device_put
    out = device_put(out, device)
  return out
