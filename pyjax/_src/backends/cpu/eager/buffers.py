"""Eager NumPy implementations of the buffer primitives (``lax/buffers.py``): ``copy``,
``empty``, ``stage``, ``optimization_barrier`` and ``dce_sink``.
"""
from __future__ import annotations

import numpy as np

from pyjax._src.backends.cpu.eager.registry import register


@register("copy")
def _copy(x):
  return np.array(x, copy=True)


@register("stage")
def _stage(x):
  return x


@register("optimization_barrier")
def _optimization_barrier(*xs):
  return list(xs)


@register("dce_sink")
def _dce_sink(x, **_):
  return []


@register("empty")
def _empty(*, shape, dtype, out_sharding=None):
  return np.zeros(shape, dtype)
