"""Process-wide utilities: ``live_arrays``, ``clear_caches``, ``print_environment_info``."""
from __future__ import annotations

import gc
import os
import platform as _platform
import sys
import weakref

import numpy as np

__all__ = ["live_arrays", "clear_caches", "print_environment_info"]


def live_arrays(platform=None):
  """Every live (not deleted) Array, optionally only those on ``platform`` ('cpu', ...).

  Differs from JAX: found by a scan of the garbage collector's objects (so creating an
  Array costs nothing extra); the order is unspecified, as in JAX."""
  from pyjax._src.runtime.array import ArrayImpl
  from pyjax._src.runtime import devices
  if platform is not None:
    devices.get_backend(platform)   # an unknown platform raises as in JAX
  out = []
  default = None
  for o in gc.get_objects():
    if type(o) is ArrayImpl and not o.is_deleted():
      if platform is not None:
        dev = o._device
        if dev is None:   # (uncommitted arrays made without a device: the default one)
          dev = default = default or devices.default_device()
        if dev.platform != platform:
          continue
      out.append(o)
  return out


# (module, attribute) of every trace / compile cache pyjax keeps
_CACHES = (
    ("pyjax._src.api", "_fun_caches"),
    ("pyjax._src.api", "_fun_seen_keys"),
    ("pyjax._src.api", "_impl_cache"),
    ("pyjax._src.lax.control_flow.common", "_trace_cache"),
    ("pyjax._src.lax.control_flow.common", "_strong_cache"),
    ("pyjax._src.lax.control_flow.common", "_diff_cache"),
    ("pyjax._src.lax.control_flow.loops", "_fori_scan_bodies"),
    ("pyjax._src.lax.control_flow.loops", "_fori_while_bodies"),
    ("pyjax._src.lax.control_flow.loops", "_map_bodies"),
    ("pyjax._src.lax.gather_scatter", "_combiner_cache"),
    ("pyjax._src.lax.gather_scatter", "_apply_cache"),
    ("pyjax._src.interpreters.batching", "_jaxpr_cache"),
    ("pyjax._src.interpreters.ad", "_rule_caches"),
    ("pyjax._src.backends.cpu.eager.control_flow", "_plans"),
    ("pyjax._src.ad_checkpoint", "_trace_cache"),
)
_LRU = (("pyjax._src.lax.dot", None), ("pyjax._src.lax.convolution", None))

# every jit wrapper, so their fast-path tables can be emptied (api.JitWrapped registers)
jit_wrappers = weakref.WeakSet()


def clear_caches():
  """Clear every tracing and compilation cache held in memory: jit's trace caches and fast
  paths, the compiled executables they hold, control-flow body and transformation caches,
  and the table of loaded native libraries.  The persistent on-disk cache is kept (as in
  JAX), so the next compile of the same program loads it from disk."""
  for mod, attr in _CACHES:
    m = sys.modules.get(mod)
    c = getattr(m, attr, None) if m is not None else None
    if c is not None:
      c.clear()
  for mod, _ in _LRU:
    m = sys.modules.get(mod)
    if m is None:
      continue
    for v in vars(m).values():
      if callable(getattr(v, "cache_clear", None)) and getattr(v, "__module__", None) == mod:
        v.cache_clear()
  for w in list(jit_wrappers):
    w._fast.clear()
    w._own_cache.clear()
  cache = sys.modules.get("pyjax._src.backends.cpu.compiler.native.cache")
  if cache is not None:
    cache.clear_memory()


def _compiler_info():
  try:
    from pyjax._src.backends.cpu.compiler.native import build
    tc = build.toolchain()
  except Exception:  # noqa: BLE001
    tc = None
  if tc is None:
    return "none (jit runs on the NumPy tier)"
  ident = str(tc.identity).splitlines()[0] if tc.identity else tc.cc
  return f"{tc.cc} ({ident})"


def _version(name):
  try:
    from importlib.metadata import version
    return version(name)
  except Exception:  # noqa: BLE001
    return "not installed"


def print_environment_info(return_string=False):
  """Print (or return, with ``return_string=True``) the versions of pyjax, NumPy, SciPy,
  ml_dtypes and Python, the devices, the process count, the platform, the C compiler the
  CPU backend uses, and the ``JAX_*``, ``XLA_*`` and ``PYJAX_*`` environment variables.
  Differs from JAX: pyjax's own versions and compiler instead of jaxlib's."""
  import pyjax
  from pyjax._src.runtime import devices
  ds = devices.devices()
  python_version = sys.version.replace("\n", " ")
  info = "\n".join([
      f"pyjax:  {pyjax.__version__}",
      f"numpy:  {np.__version__}",
      f"scipy:  {_version('scipy')}",
      f"ml_dtypes: {_version('ml_dtypes')}",
      f"python: {python_version}",
      f"device info: {ds[0].device_kind}-{devices.device_count()}, "
      f"{devices.local_device_count()} local devices",
      f"process_count: {devices.process_count()}",
      f"platform: {_platform.uname()}",
      f"compiler: {_compiler_info()}",
  ])
  for key, value in os.environ.items():
    if key.startswith(("JAX_", "XLA_", "PYJAX_")):
      info += f"\n{key}={value}"
  if return_string:
    return info
  print(info)
  return None
