"""Devices and backends.

A backend ("cpu", later "gpu") owns a list of Device objects.  The CPU backend has one
device by default, or N when ``jax_num_cpu_devices`` (or ``JAX_NUM_CPU_DEVICES``) is set
before the first use of devices.  Which device an uncommitted computation runs on is the
default device: ``jax.default_device(...)`` (context manager or config) or device 0 of the
default backend.
"""
from __future__ import annotations

import contextlib
import threading

from pyjax._src import config as _config_mod
from pyjax._src.config import config
from pyjax._src.runtime import backend as _backend_mod
from pyjax._src.runtime.backend import Backend  # noqa: F401  (the interface, as before)


class Device:
  """One device of a backend.  Only equal to itself; hashable; ``repr`` like JAX."""
  platform = "cpu"
  device_kind = "cpu"
  _stream = None

  @property
  def client(self):
    """The backend client owning this device (``xla_bridge.Client``: ``platform``,
    ``runtime_type``, ``devices()``, ...)."""
    from pyjax._src import xla_bridge
    return xla_bridge._client(self._backend)

  def __init__(self, id, backend, process_index=0):
    self.id = id
    self.process_index = process_index
    self.host_id = process_index
    self._backend = backend
    self.local_hardware_id = id

  def __repr__(self):
    return f"{type(self).__name__}(id={self.id})"

  def __str__(self):
    return f"{self.platform}:{self.id}"

  def memory(self, kind=None):
    """The memory space of ``kind`` this device addresses (None: its default memory).
    pyjax models one memory per device, of kind ``"device"``."""
    m = self.default_memory()
    if kind is not None and kind != m.kind:
      raise ValueError(f"INVALID_ARGUMENT: Could not find memory addressable by device "
                       f"{self.platform}. Device {self.platform} can address the following "
                       f"memory kinds: device. Got memory kind: {kind}")
    return m

  def default_memory(self):
    """The device's default memory space (a ``Memory`` of kind ``"device"``)."""
    m = self.__dict__.get("_memory")
    if m is None:
      m = self.__dict__["_memory"] = Memory(self, "device")
    return m

  @property
  def stream(self):
    """The device's stream (of its backend's ``stream_type``): asynchronous work runs on
    it in order."""
    s = self._stream
    if s is None:
      with _stream_lock:
        s = self._stream
        if s is None:
          s = self._stream = self._backend.stream_type(str(self))
    return s

  def addressable_memories(self):
    """The memory spaces this device can address (one: its device memory)."""
    return [self.default_memory()]

  def __reduce__(self):
    return (_device_by_platform_and_id, (self.platform, self.id))


class Memory:
  """A memory space (JAX's ``Memory``): its ``kind``, platform, process and the devices
  that address it."""
  __slots__ = ("_device", "kind")

  def __init__(self, device, kind):
    self._device = device
    self.kind = kind

  @property
  def platform(self):
    return self._device.platform

  @property
  def process_index(self):
    return self._device.process_index

  def addressable_by_devices(self):
    return [self._device]

  def __str__(self):
    return f"{self.platform.upper()}_DEVICE_{self._device.id}"

  def __repr__(self):
    return (f"{self.platform.capitalize()}DeviceMemory(id={self._device.id}, "
            f"process_index={self.process_index}, client={self.platform})")


class CpuDevice(Device):
  platform = "cpu"
  device_kind = "cpu"


def _device_by_platform_and_id(platform, id):
  for d in devices(platform):
    if d.id == id:
      return d
  raise ValueError(f"No {platform} device with id {id}")


_lock = threading.Lock()
_stream_lock = threading.Lock()
_backends: dict[str, Backend] | None = None
class _ThreadDefault(threading.local):
  device = None


_thread_default = _ThreadDefault()


def _init_backends():
  global _backends
  with _lock:
    if _backends is not None:
      return _backends
    requested = config.jax_platforms
    registered = _backend_mod.platforms()
    if requested:
      asked = {_backend_mod.canonical_platform(p.strip()): p.strip()
               for p in requested.split(",")}
      wanted = list(asked)
    else:   # every default platform, highest priority first (a GPU before the CPU)
      wanted = sorted((n for n, p in registered.items() if p.default),
                      key=lambda n: -registered[n].priority)
    backends = {}
    absent = set()   # registered platforms whose runtime package is not installed
    for p in wanted:
      plat = registered.get(p)
      if plat is not None:
        try:
          backends[p] = plat.factory()
          continue
        except _backend_mod.PlatformUnavailable as e:
          if not requested:
            continue
          if e.installed:   # (the messages name the platform as asked for)
            raise RuntimeError(f"Unable to initialize backend '{asked[p]}': {e} (you may need to "
                               "uninstall the failing plugin package, or set "
                               "JAX_PLATFORMS=cpu to skip this backend.)") from None
          absent.add(p)
      known = [n for n in registered if n not in absent]
      p = asked.get(p, p)
      raise RuntimeError(f"Unable to initialize backend '{p}': Backend '{p}' is not in the "
                         f"list of known backends: {known}. (set JAX_PLATFORMS='' to "
                         "automatically choose an available backend)")
    if not backends:
      raise RuntimeError("No backend could be initialized.")
    _backends = backends
    return backends


def backends():
  return _backends or _init_backends()


def get_backend(platform=None):
  bs = backends()
  if platform is None:
    return next(iter(bs.values()))
  if not isinstance(platform, str):
    platform = getattr(platform, "platform", platform)
  p = _backend_mod.canonical_platform(platform)
  if p not in bs:
    if p == "gpu" and platform.lower() == "gpu":   # JAX's message for the platform group
      raise RuntimeError(f"Unknown backend: '{platform}' requested, but no platforms that "
                         f"are instances of {platform} are present. Platforms present are: "
                         + ",".join(bs))
    raise RuntimeError(f"Unknown backend {platform}. Available backends are {list(bs)}")
  return bs[p]


def devices(backend=None):
  """All devices of ``backend`` (default: the default backend)."""
  return list(get_backend(backend).devices)


def local_devices(process_index=None, backend=None, host_id=None):
  """The devices of process ``process_index`` (default: this process)."""
  p = process_index if process_index is not None else host_id
  if p is None:
    p = _process[0]
  return [d for d in devices(backend) if d.process_index == p]


def device_count(backend=None):
  return len(devices(backend))


def local_device_count(backend=None):
  return len(local_devices(backend=backend))


def process_index(backend=None):
  """This process's index (0 without ``jax.distributed.initialize``)."""
  return _process[0]


def process_count(backend=None):
  """How many processes run the program (1 without ``jax.distributed.initialize``)."""
  return _process[1]


_process = [0, 1]                # (this process's index, process count)
MAX_CPU_DEVICES_PER_PROCESS = 2048   # CPU device ids across processes, as JAX numbers them


def _set_processes(index, local_counts):
  """Number every backend's devices across processes (``jax.distributed.initialize``):
  process ``p``'s ``i``-th local device gets id ``p * 2048 + i`` (JAX's CPU numbering) and
  ``process_index == p``; devices of the other processes are added (they hold no buffers
  here: arrays on them are not addressable).  ``local_counts[p]`` is process ``p``'s
  local device count.  Devices are ordered by process, as JAX's ``devices()``."""
  global _default_device_cache
  for b in backends().values():
    local = [d for d in b.devices if d.process_index == _process[0]]
    cls = type(local[0])
    out = []
    for p, n in enumerate(local_counts):
      for i in range(n):
        if p == index:
          d = local[i]
          d.id = p * MAX_CPU_DEVICES_PER_PROCESS + i
          d.process_index = d.host_id = p
          d.local_hardware_id = i
        else:
          d = cls(p * MAX_CPU_DEVICES_PER_PROCESS + i, b, p)
          d.local_hardware_id = i
        out.append(d)
    b.devices = out
  _process[:] = [index, len(local_counts)]
  _default_device_cache = None


def _first_local(backend):
  for d in backend.devices:
    if d.process_index == _process[0]:
      return d
  return backend.devices[0]


def default_backend():
  return get_backend().platform


_default_device_cache = None


def default_device():
  """The device an uncommitted computation runs on now."""
  d = _thread_default.device
  if d is not None:
    return d
  d = _config_mod.default_device_flag
  if d is not None:
    if isinstance(d, str):
      return _first_local(get_backend(d))
    return d
  global _default_device_cache
  if _default_device_cache is None:
    _default_device_cache = _first_local(get_backend())
  return _default_device_cache


@contextlib.contextmanager
def default_device_ctx(device):
  """``jax.default_device(device)``: a context manager for the default device."""
  if isinstance(device, str):
    device = _first_local(get_backend(device))
  prev = _thread_default.device
  _thread_default.device = device
  try:
    yield
  finally:
    _thread_default.device = prev


def current_default_device_override():
  """The device set by the context manager or config (part of jit's cache key), or None."""
  d = _thread_default.device
  return d if d is not None else _config_mod.default_device_flag
