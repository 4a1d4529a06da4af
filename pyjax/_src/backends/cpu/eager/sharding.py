"""Eager implementations of the placement primitives (``lax/sharding.py``):
``sharding_constraint`` and ``device_put``.
"""
from __future__ import annotations

import numpy as np

from pyjax._src.backends.cpu.eager.registry import register


# --- placement (one device per computation: identities) ----------------------------------------
@register("sharding_constraint")
def _sharding_constraint(x, **_):
  return x


@register("device_put")
def _device_put(*xs, devices, srcs, copy_semantics):
  return [np.array(x, copy=True) if getattr(c, "name", "") == "ALWAYS_COPY" else x
          for x, c in zip(xs, copy_semantics)]
