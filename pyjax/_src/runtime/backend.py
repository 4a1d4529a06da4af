"""The backend interface: what the runtime asks of a platform ("cpu", later "gpu").

A backend is one object implementing ``Backend``: its platform name, its devices, its
eager implementation table (primitive name -> function on buffers), ``compile_jaxpr``
for ``jit``, buffer transfers (host -> device, device -> host, device -> device), the
type of its devices' streams and what it supports.  ``api``, eager dispatch
(``runtime/dispatch.py``) and ``device_put`` (``api_device.py``) reach a platform only
through this interface, found from a device as ``device._backend``.

Platforms are registered by name with ``register_platform(name, factory)``; the runtime
(``runtime/devices.py``) calls the factory when devices are first used, for each platform
``jax_platforms`` asks for (default: every platform registered with ``default=True``).
The CPU backend (``backends/cpu/backend.py``) registers itself when ``pyjax`` is imported.
So the backends depend on the runtime (streams, Arrays, this interface), never the other
way round.
"""
from __future__ import annotations

import abc
import types

__all__ = ["Backend", "Platform", "PlatformUnavailable", "register_platform",
           "unregister_platform", "platforms", "canonical_platform"]


class PlatformUnavailable(RuntimeError):
  """Raised by a platform's factory when the platform cannot start on this machine:
  ``installed`` False when its runtime package is absent (JAX: not a known backend), True
  when it is installed but has no usable device.  Platforms started by default are then
  skipped; one named in ``jax_platforms`` raises JAX's "Unable to initialize backend"."""

  def __init__(self, message, installed=True):
    super().__init__(message)
    self.installed = installed


class Backend(abc.ABC):
  """One platform's backend, created by its registered factory.

  Attributes every backend sets: ``platform`` (its name, e.g. ``"cpu"``), ``devices``
  (its Device objects, in id order), ``eager_impls`` (primitive name -> function taking
  buffers and the primitive's params, returning buffers), ``stream_type`` (the class of
  a device's stream: ``stream_type(name)`` makes one).  ``large_prims`` and
  ``large_min_elements`` name the primitives that ``run_large`` may run faster on big
  operands (default: none).
  """
  platform: str = ""
  eager_impls = types.MappingProxyType({})
  stream_type: type | None = None
  large_prims: frozenset = frozenset()
  large_min_elements: int = 1 << 62

  def __init__(self):
    self.devices = []
    # eager dispatch reads these on every operation: instance attributes are found
    # faster than class attributes (a subclass may still set them after this)
    cls = type(self)
    self.eager_impls = cls.eager_impls
    self.large_prims = cls.large_prims
    self.large_min_elements = cls.large_min_elements

  # --- jit ------------------------------------------------------------------------------
  @abc.abstractmethod
  def compile_jaxpr(self, closed_jaxpr, device, name="jaxpr", donate=()):
    """An executable running ``closed_jaxpr`` on ``device``: ``exe.fn(*buffers)`` returns
    the output buffers; ``exe.call_pending(buffers)`` accepts buffers still being computed
    and ``exe.call_donating(buffers, donated)`` donated ones.  ``donate`` lists (input,
    output) pairs whose buffers may be shared."""

  # --- eager ----------------------------------------------------------------------------
  def run_large(self, name, bufs, params, out_aval):
    """Run the eager primitive ``name`` (one of ``large_prims``) on large operands a
    faster way; None: use ``eager_impls[name]``."""
    del name, bufs, params, out_aval
    return None

  def run_composite(self, name, bufs, params):
    """Run the eager composite ``name`` (several primitives a library function binds one
    after another, e.g. ``"column_var"`` for ``jnp.var``) on the ready buffers ``bufs`` at
    once, giving bit for bit what the primitives give one by one: a tuple of buffers, or
    None (default): the caller binds the primitives."""
    del name, bufs, params
    return None

  # --- transfers ------------------------------------------------------------------------
  @abc.abstractmethod
  def to_device(self, host_array, device, copy=False):
    """A buffer on ``device`` holding ``host_array`` (a NumPy array); ``copy=False``
    lets a backend whose memory is the host's keep the array itself."""

  @abc.abstractmethod
  def to_host(self, buf):
    """The NumPy array holding the ready buffer ``buf`` of this backend."""

  def transfer(self, buf, src_device, dst_device, copy=False):
    """``buf`` (a ready buffer on ``src_device`` of this backend) as a buffer on
    ``dst_device`` (of this backend or another).  Default: through the host."""
    host = src_device._backend.to_host(buf)
    return dst_device._backend.to_device(host, dst_device, copy)

  # --- capabilities ---------------------------------------------------------------------
  def supports(self, feature):
    """Whether this backend supports ``feature`` (names: ``"jit"``, ``"async_dispatch"``,
    ``"donation"``, ``"host_callbacks"``, ``"shared_executables"`` -- one executable
    may run on any of the backend's devices, concurrently -- ...)."""
    del feature
    return False

  def __repr__(self):
    return f"<{type(self).__name__} {self.platform!r}: {len(self.devices)} device(s)>"


class Platform:
  """A registered platform: its name, aliases, the factory creating its ``Backend``,
  whether it starts when ``jax_platforms`` is unset, and its ``priority`` (the default
  backend is the started one of highest priority: a GPU before the CPU, as JAX)."""
  __slots__ = ("name", "factory", "aliases", "default", "priority")

  def __init__(self, name, factory, aliases=(), default=False, priority=0):
    self.name = name
    self.factory = factory
    self.aliases = tuple(aliases)
    self.default = default
    self.priority = priority


_platforms: dict[str, Platform] = {}


def register_platform(name, factory, *, aliases=(), default=False, priority=0):
  """Register ``factory`` (called with no arguments, returning a ``Backend`` whose
  ``devices`` are made, or raising ``PlatformUnavailable``) as platform ``name``.  Takes
  effect for backends not yet initialized (``runtime.devices.backends()``)."""
  _platforms[name] = Platform(name, factory, aliases, default, priority)


def unregister_platform(name):
  """Forget platform ``name`` (its initialized backend, if any, stays)."""
  _platforms.pop(name, None)


def platforms():
  """{name: Platform} of every registered platform, in registration order."""
  return dict(_platforms)


def canonical_platform(name):
  """The registered platform ``name`` is the name or an alias of, else ``name`` lower-cased."""
  n = name.lower()
  if n in _platforms:
    return n
  for p in _platforms.values():
    if n in p.aliases:
      return p.name
  return n
