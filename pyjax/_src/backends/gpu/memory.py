"""GPU memory settings and pools (CuPy).

JAX's environment variables are accepted with pyjax's default reversed: memory is taken
from a pool on demand (JAX preallocates 75% of the GPU at start-up, which users disable
with ``XLA_PYTHON_CLIENT_PREALLOCATE=false``):

- ``XLA_PYTHON_CLIENT_MEM_FRACTION``: the fraction of the device's memory the pool may
  hold (a float in (0, 1]; default: no limit);
- ``XLA_PYTHON_CLIENT_PREALLOCATE``: ``true`` takes that fraction (default 0.75, as
  JAX) into the pool at start-up; ``false`` (pyjax's default) allocates on demand;
- ``XLA_PYTHON_CLIENT_ALLOCATOR=platform``: no pool (every buffer is a ``cudaMalloc``
  and freed when dropped), as JAX's platform allocator.

``settings`` only reads the environment (no CuPy); ``pool`` needs CuPy and a device.
UNVERIFIED on a GPU (docs/gpu.md): no GPU session has run ``pool`` yet.
"""
from __future__ import annotations

import os
from typing import NamedTuple

JAX_PREALLOCATE_FRACTION = 0.75
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off", "")


class MemorySettings(NamedTuple):
  """``fraction`` (float or None: no limit), ``preallocate`` (bool), ``pooled`` (bool)."""
  fraction: float | None
  preallocate: bool
  pooled: bool


def settings(environ=None):
  """The memory settings of ``environ`` (default: ``os.environ``).  Raises ValueError
  for a fraction that is not a number in (0, 1] or a preallocate flag that is not a
  boolean word."""
  env = os.environ if environ is None else environ
  raw = env.get("XLA_PYTHON_CLIENT_MEM_FRACTION")
  fraction = None
  if raw is not None and raw.strip():
    try:
      fraction = float(raw)
    except ValueError:
      raise ValueError(f"XLA_PYTHON_CLIENT_MEM_FRACTION must be a number in (0, 1], "
                       f"got {raw!r}") from None
    if not 0.0 < fraction <= 1.0:
      raise ValueError(f"XLA_PYTHON_CLIENT_MEM_FRACTION must be a number in (0, 1], "
                       f"got {raw!r}")
  pre = env.get("XLA_PYTHON_CLIENT_PREALLOCATE", "false").strip().lower()
  if pre not in _TRUE + _FALSE:
    raise ValueError(f"XLA_PYTHON_CLIENT_PREALLOCATE must be true or false, got {pre!r}")
  preallocate = pre in _TRUE
  if preallocate and fraction is None:
    fraction = JAX_PREALLOCATE_FRACTION
  pooled = env.get("XLA_PYTHON_CLIENT_ALLOCATOR", "").strip().lower() != "platform"
  return MemorySettings(fraction, preallocate, pooled)


def pool(device_id, s=None):
  """A CuPy ``MemoryPool`` for device ``device_id`` set up by ``s`` (default: the
  environment's settings), or None for the platform allocator."""
  import cupy
  s = settings() if s is None else s
  if not s.pooled:
    return None
  p = cupy.cuda.MemoryPool()
  with cupy.cuda.Device(device_id):
    if s.fraction is not None:
      p.set_limit(fraction=s.fraction)
    if s.preallocate:
      _, total = cupy.cuda.runtime.memGetInfo()
      block = p.malloc(int(total * s.fraction) // 512 * 512)
      del block   # back into the pool, which keeps it
  return p
