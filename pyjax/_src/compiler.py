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

from pyjax._src.runtime import devices as _devices

__all__ = ["backend_compile_and_load", "compile_for_device"]


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
