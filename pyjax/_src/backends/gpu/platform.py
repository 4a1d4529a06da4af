"""Platform "gpu" (alias "cuda"): detection and registration.

The platform is registered with the runtime (``runtime/backend.py``) as a default
platform of higher priority than the CPU, so a machine with CuPy and an NVIDIA GPU runs
on the GPU by default, as JAX does.  Detection happens in the factory, when devices are
first used: without the ``cupy`` package the factory raises ``PlatformUnavailable``
(not installed: JAX's "not in the list of known backends"), with CuPy but no CUDA
device (or no driver) it raises ``PlatformUnavailable`` (installed: JAX's "Unable to
initialize backend").  A platform started by default is then skipped silently.  Nothing
here imports CuPy or any CUDA module until the factory runs.

Not built yet: the backend the factory would return when CuPy sees a device (Arrays
holding CuPy buffers, eager operations on CuPy, ``compile_jaxpr`` through ``launch.py``);
until then the factory reports the devices it found and the platform stays off.
"""
from __future__ import annotations

import importlib.util

from pyjax._src.runtime import backend as _backend

PLATFORM = "gpu"
ALIASES = ("cuda",)
PRIORITY = 100


def cupy_installed():
  """Whether the ``cupy`` package can be imported (found on the path; not imported)."""
  try:
    return importlib.util.find_spec("cupy") is not None
  except ValueError:   # a module object without a spec put in sys.modules
    return True


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
  """The platform's factory: ``PlatformUnavailable`` naming why the platform cannot
  start (no CuPy, no device; with both, the runtime is not built yet: docs/gpu.md)."""
  if not cupy_installed():
    raise _backend.PlatformUnavailable("CuPy is not installed", installed=False)
  try:
    import cupy
    n = int(cupy.cuda.runtime.getDeviceCount())
  except Exception as e:   # CUDARuntimeError without a driver, ImportError of a bad wheel
    raise _backend.PlatformUnavailable(f"no CUDA device: {type(e).__name__}: {e}") from None
  if n < 1:
    raise _backend.PlatformUnavailable("no CUDA device: CuPy found 0 devices")
  # the kernels can be compiled and launched (launch.py), but Arrays and eager dispatch
  # do not hold device buffers yet: the platform does not start (docs/gpu.md)
  raise _backend.PlatformUnavailable(
      f"CuPy found {n} CUDA device(s), but pyjax's GPU runtime (device Arrays, eager "
      "operations) is not built yet; see docs/gpu.md")


_backend.register_platform(PLATFORM, make_backend, aliases=ALIASES, default=True,
                           priority=PRIORITY)
