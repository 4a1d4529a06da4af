"""JAX's ``dispatch`` names (``jax._src.dispatch``) over pyjax's runtime.

``apply_primitive(prim, *args, **params)`` runs a primitive eagerly on the default
backend; ``wait_for_tokens()`` waits until every dispatched computation (and so every
ordered side effect) has run; ``device_put_p`` is the primitive ``device_put`` binds under
a trace.
"""
from __future__ import annotations

from pyjax._src.api_device import effects_barrier
from pyjax._src.lax.sharding import device_put_p  # noqa: F401
from pyjax._src.runtime import dispatch as _runtime_dispatch


def apply_primitive(prim, *args, **params):
  """Run ``prim`` on ``args`` now (its Python ``impl`` if it has one, else the default
  backend's implementation)."""
  if prim.impl is not None:
    return prim.impl(*args, **params)
  return _runtime_dispatch.apply_primitive(prim, args, params)


def wait_for_tokens():
  """Wait for all dispatched work (so the effects it orders have happened)."""
  effects_barrier()
