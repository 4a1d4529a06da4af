"""The compile step of ``jit`` (as ``jax._src.compiler``).

Every staged program ``jit`` runs is compiled by ``compile_for_device``, which looks up
``backend_compile_and_load`` in this module's namespace at each call.  So a wrapper set
with ``setattr(compiler, "backend_compile_and_load", wrapper)`` sees (and may refuse)
every compilation, which is what ``chex.restrict_backends`` does: it reads
``backend.platform`` of its first argument.

Differs from JAX: the arguments after ``backend`` are pyjax's (a ``ClosedJaxpr``, the
device, a name, the donation pairs), not an MLIR module and XLA compile options; the
result is the backend's executable.  Eager operations are not compiled (pyjax runs them
directly), so they never pass through here.
"""
from __future__ import annotations

import threading

from pyjax._src.runtime import devices as _devices

__all__ = ["backend_compile_and_load", "compile_for_device"]

# How many calls of one argument signature of a jax.numpy library function (run as a
# ``jit`` of its body, ``numpy.util.library_function``) before its native build starts,
# in every compile mode but ``off``: eager code calls such functions on many shapes once
# or twice, so they stay on the first tier (no C build) until they are hot.
LIBRARY_COMPILE_AFTER = 8

_hints = threading.local()


class library_calls:
  """``with library_calls():`` -- the programs compiled on this thread in the block are
  jax.numpy library functions' bodies (their native build waits for
  ``LIBRARY_COMPILE_AFTER`` calls)."""
  __slots__ = ("prev",)

  def __enter__(self):
    self.prev = getattr(_hints, "library", False)
    _hints.library = True

  def __exit__(self, *exc):
    _hints.library = self.prev


def library_compile():
  """Whether the program being compiled on this thread is a library function's body."""
  return getattr(_hints, "library", False)


def backend_compile_and_load(backend, closed_jaxpr, device, name, donate=()):
  """Compile ``closed_jaxpr`` for ``device`` on ``backend`` (a ``runtime.backend.Backend``:
  its ``compile_jaxpr``); returns the executable."""
  if not backend.supports("jit"):
    raise RuntimeError(f"pyjax cannot compile for the {backend.platform!r} backend")
  return backend.compile_jaxpr(closed_jaxpr, device, name, donate)


def compile_for_device(closed_jaxpr, device, name, donate=()):
  """``jit``'s compile step: ``backend_compile_and_load`` for the device's backend, on
  the program with primitives that have ``lower_fun`` lowering rules expanded
  (``mlir.expand_lowered``)."""
  from pyjax._src.interpreters import mlir
  closed_jaxpr = mlir.expand_lowered(closed_jaxpr)
  backend = getattr(device, "_backend", None)
  if backend is None:
    backend = _devices.get_backend(device.platform)
  return backend_compile_and_load(backend, closed_jaxpr, device, name, donate)
