"""The CPU backend: the ``runtime.backend.Backend`` implementation for platform "cpu".

Buffers are NumPy arrays in host memory; eager primitives run the NumPy implementations
of ``registry.impls`` (large elementwise ones on prebuilt native kernels or threads,
``eager_native``); ``jit`` compiles with ``executable.compile_jaxpr`` (the NumPy plan,
then the native C executable); each device's stream is a worker thread
(``runtime.stream.Stream``).  ``CpuBackend.register(name)`` registers the platform; this
module does it for "cpu" when imported (by ``pyjax/__init__.py``), and a test may
register the same implementation under another name to exercise a second platform.
"""
from __future__ import annotations

import os
import re

import numpy as np

from pyjax._src.backends.cpu import eager as _eager
from pyjax._src.backends.cpu.eager import native as _eager_native
from pyjax._src.config import config
from pyjax._src.runtime import backend as _backend
from pyjax._src.runtime.devices import CpuDevice
from pyjax._src.runtime.stream import Stream

# shared_executables: one executable runs on every CPU device, concurrently (a native
# call running while another runs takes its own scratch arena)
_FEATURES = frozenset({"jit", "async_dispatch", "donation", "host_callbacks", "native_code",
                       "shared_executables"})


def _xla_flags_cpu_count():
  """``--xla_force_host_platform_device_count=N`` in ``XLA_FLAGS`` (read when the backends
  start, as by JAX's CPU client; ``jax_num_cpu_devices`` takes precedence), or None."""
  m = re.findall(r"--xla_force_host_platform_device_count=(\d+)", os.environ.get("XLA_FLAGS", ""))
  return int(m[-1]) if m else None


def cpu_device_count():
  """How many CPU devices a new CPU backend gets: ``jax_num_cpu_devices``, else
  ``XLA_FLAGS``' host device count, else 1."""
  n = config.jax_num_cpu_devices
  if n is None or n < 1:
    n = _xla_flags_cpu_count()
  return 1 if n is None or n < 1 else int(n)


class CpuBackend(_backend.Backend):
  """Host memory, NumPy eager implementations, the C compiler for ``jit``."""
  eager_impls = _eager.impls
  stream_type = Stream
  large_prims = _eager_native.PRIMS if _eager_native.ENABLED else frozenset()
  large_min_elements = _eager_native.MIN_ELEMENTS

  def __init__(self, platform="cpu", num_devices=None):
    super().__init__()
    self.platform = platform
    n = cpu_device_count() if num_devices is None else num_devices
    cls = CpuDevice
    if platform != "cpu":   # the device class carries the platform name
      cls = type(f"{platform.capitalize()}Device", (CpuDevice,),
                 {"platform": platform, "device_kind": platform})
    self.devices = [cls(i, self) for i in range(n)]

  def compile_jaxpr(self, closed_jaxpr, device, name="jaxpr", donate=()):
    """``executable.compile_jaxpr``: a ``CpuExecutable`` (NumPy plan, then native)."""
    from pyjax._src.backends.cpu import executable   # (the compiler loads on first jit)
    return executable.compile_jaxpr(closed_jaxpr, device, name, donate)

  def run_large(self, name, bufs, params, out_aval):
    """Large elementwise operations on prebuilt native kernels or NumPy on threads."""
    return _eager_native.run(name, bufs, params, out_aval)

  def run_composite(self, name, bufs, params):
    """``jnp.var`` over leading axes in one native step (``moments.py``)."""
    from pyjax._src.backends.cpu.eager import moments
    return moments.run(name, bufs, params)

  def to_device(self, host_array, device, copy=False):
    """Host memory is device memory: the array itself (a copy when ``copy``)."""
    return np.array(host_array, copy=True) if copy else host_array

  def to_host(self, buf):
    return buf

  def transfer(self, buf, src_device, dst_device, copy=False):
    """Between host-memory devices the buffer is shared (copied when ``copy``)."""
    if isinstance(dst_device._backend, CpuBackend):
      return np.array(buf, copy=True) if copy else buf
    return super().transfer(buf, src_device, dst_device, copy)

  def supports(self, feature):
    return feature in _FEATURES

  @classmethod
  def register(cls, name="cpu", *, aliases=(), default=False):
    """Register this implementation as platform ``name``."""
    _backend.register_platform(name, lambda: cls(name), aliases=aliases, default=default)


CpuBackend.register("cpu", aliases=("host",), default=True)
