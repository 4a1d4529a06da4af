"""Platform "gpu" (alias "cuda"): detection and registration.

The platform is registered with the runtime (``runtime/backend.py``) as a default
platform of higher priority than the CPU, so a machine with CuPy and an NVIDIA GPU runs
on the GPU by default, as JAX does.  Detection happens in the factory, when devices are
first used: without the ``cupy`` package the factory raises ``PlatformUnavailable``
(not installed: JAX's "not in the list of known backends"), with CuPy but no CUDA
device (or no driver) it raises ``PlatformUnavailable`` (installed: JAX's "Unable to
initialize backend").  A platform started by default is then skipped silently.  Nothing
here imports CuPy or any CUDA module until the factory runs.
"""
from __future__ import annotations

import importlib.util

from pyjax._src.runtime import backend as _backend

PLATFORM = "gpu"
ALIASES = ("cuda",)
PRIORITY = 100


def cupy_installed():
  """Whether the ``cupy`` package can be imported (found on the path; not imported)."""
  return importlib.util.find_spec("cupy") is not None


def device_count():
  """The number of CUDA devices CuPy sees (0 without CuPy, a driver or a device).
  Imports CuPy."""
  if not cupy_installed():
    return 0
  try:
    import cupy
    return int(cupy.cuda.runtime.getDeviceCount())
  except Exception:   # no driver, no device, a broken install: no GPU
    return 0


def make_backend():
  """The platform's factory: a ``GpuBackend`` over every CUDA device, or
  ``PlatformUnavailable`` naming why not."""
  if not cupy_installed():
    raise _backend.PlatformUnavailable("CuPy is not installed", installed=False)
  try:
    import cupy
    n = int(cupy.cuda.runtime.getDeviceCount())
  except Exception as e:   # CUDARuntimeError without a driver, ImportError of a bad wheel
    raise _backend.PlatformUnavailable(f"no CUDA device: {type(e).__name__}: {e}") from None
  if n < 1:
    raise _backend.PlatformUnavailable("no CUDA device: CuPy found 0 devices")
  from pyjax._src.backends.gpu import backend   # CuPy present: the backend's modules
  return backend.GpuBackend(n)


_backend.register_platform(PLATFORM, make_backend, aliases=ALIASES, default=True,
                           priority=PRIORITY)
