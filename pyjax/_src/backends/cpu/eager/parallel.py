"""Eager implementation of ``pvary`` (``shard_map``'s varying-manual-axes cast): the identity
on a device's own values.  The other collectives run in the collective runtime
(``runtime/collectives.py``).
"""
from __future__ import annotations

from pyjax._src.backends.cpu.eager.registry import register


@register("pvary")
def _pvary(x, *, axes):
  return x
