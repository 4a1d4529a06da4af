"""Backend clients as older JAX's ``jax.lib.xla_bridge`` exposed them.

``get_backend(platform)`` returns a ``Client``: a read-only view of one of the runtime's
backends with the methods libraries call on XLA clients (``platform``,
``device_count()``, ``devices()``, ``process_index()``, ...).  The device functions
(``devices``, ``device_count``, ``process_index``, ...) are the runtime's own.
"""
from __future__ import annotations

import threading

from pyjax._src.runtime import devices as _devices
from pyjax._src.version import __version__ as _pyjax_version

__all__ = ["Client", "get_backend", "backends", "default_backend", "devices",
           "local_devices", "device_count", "local_device_count", "process_index",
           "process_count", "process_indices", "host_id", "host_ids", "host_count",
           "get_device_backend", "canonicalize_platform"]

_PLATFORM_ALIASES = {"host": "cpu", "cuda": "gpu", "rocm": "gpu"}


class Client:
  """One backend's client: its platform and devices (the subset of XLA's ``Client``
  API that libraries read)."""

  def __init__(self, backend):
    self._backend = backend

  @property
  def platform(self) -> str:
    return self._backend.platform

  @property
  def platform_version(self) -> str:
    return f"pyjax {_pyjax_version} ({self._backend.platform})"

  @property
  def runtime_type(self) -> str:
    return "pyjax"

  def process_index(self) -> int:
    return _devices.process_index()

  def devices(self):
    """Every device of this backend, in id order."""
    return list(self._backend.devices)

  def local_devices(self):
    """The devices of this backend attached to this process."""
    pi = self.process_index()
    return [d for d in self._backend.devices if d.process_index == pi]

  def device_count(self) -> int:
    return len(self._backend.devices)

  def local_device_count(self) -> int:
    return len(self.local_devices())

  def device_from_local_hardware_id(self, local_hardware_id):
    """The local device with that hardware id (DLPack's ``device_id``)."""
    for d in self.local_devices():
      if d.local_hardware_id == local_hardware_id:
        return d
    raise ValueError(f"No {self.platform} device with local hardware id {local_hardware_id}")

  def __repr__(self):
    return f"<pyjax Client platform={self.platform!r} devices={self.device_count()}>"


_clients: dict = {}
_clients_lock = threading.Lock()


def _client(backend):
  c = _clients.get(id(backend))
  if c is None or c._backend is not backend:
    with _clients_lock:
      c = _clients[id(backend)] = Client(backend)
  return c


def canonicalize_platform(platform: str) -> str:
  """``'cuda'``/``'rocm'`` -> ``'gpu'``, ``'host'`` -> ``'cpu'``; others unchanged
  (lower-cased)."""
  p = platform.lower()
  return _PLATFORM_ALIASES.get(p, p)


def backends() -> dict:
  """``{platform: Client}`` for every initialized backend."""
  return {p: _client(b) for p, b in _devices.backends().items()}


def get_backend(platform=None) -> Client:
  """The ``Client`` of ``platform`` (a name, a ``Client``, or None for the default
  backend).  ``RuntimeError`` for a platform that is not present, as JAX raises."""
  if isinstance(platform, Client):
    return platform
  return _client(_devices.get_backend(platform))


def get_device_backend(device=None) -> Client:
  """The ``Client`` owning ``device`` (default: the default backend)."""
  if device is None:
    return get_backend()
  return get_backend(device.platform)


def default_backend() -> str:
  """The default backend's platform name (``'cpu'``)."""
  return _devices.default_backend()


def devices(backend=None):
  return _devices.devices(backend)


def local_devices(process_index=None, backend=None, host_id=None):
  return _devices.local_devices(process_index, backend, host_id)


def device_count(backend=None) -> int:
  return _devices.device_count(backend)


def local_device_count(backend=None) -> int:
  return _devices.local_device_count(backend)


def process_index(backend=None) -> int:
  return _devices.process_index(backend)


def process_count(backend=None) -> int:
  return _devices.process_count(backend)


def process_indices(backend=None) -> list[int]:
  """The indices of every process (``range(process_count())``)."""
  return list(range(process_count(backend)))


def host_id(backend=None) -> int:
  """Deprecated name of ``process_index`` (kept by older JAX)."""
  return process_index(backend)


def host_count(backend=None) -> int:
  """Deprecated name of ``process_count``."""
  return process_count(backend)


def host_ids(backend=None) -> list[int]:
  """Deprecated name of ``process_indices``."""
  return process_indices(backend)


def __getattr__(name):
  # ``_backends``: ``{platform: Client}`` once the runtime's backends are initialized,
  # else None -- as JAX's private ``xla_bridge._backends``, which chex's
  # ``set_n_cpu_devices`` reads to tell whether it is too late to change the device count.
  if name == "_backends":
    return backends() if _devices._backends is not None else None
  raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
