"""Eager implementations of ``composite`` and ``platform_index`` (``lax/higher_order.py``).
"""
from __future__ import annotations

import numpy as np

from pyjax._src.backends.cpu.eager.registry import register


@register("composite")
def _composite(*args, jaxpr, **_):
  from pyjax._src.backends.cpu.eager.control_flow import run_jaxpr
  return run_jaxpr(jaxpr, args)


PLATFORM = "cpu"


@register("platform_index")
def _platform_index(*, platforms):
  default = None
  for i, ps in enumerate(platforms):
    if ps is None:
      default = i
    elif PLATFORM in ps:
      return np.array(i, np.int32)
  if default is None:
    raise NotImplementedError(f"MLIR translation rule for primitive 'platform_index(platforms="
                              f"{platforms})' not found for platform {PLATFORM}")
  return np.array(default, np.int32)
