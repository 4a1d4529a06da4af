"""The CPU-meaningful part of ``jax.experimental.pallas.tpu``: memory spaces (scratch
buffer types), ``PrefetchScalarGridSpec``, ``CompilerParams`` and grid dimension
semantics.  On CPU every memory space is host memory; compiler parameters are recorded
and ignored."""
from __future__ import annotations

import dataclasses
import enum
from typing import Any

from pyjax._src.pallas import core as plc


class MemorySpace(enum.Enum):
  """TPU memory spaces; calling one with ``(shape, dtype)`` gives a scratch buffer type
  (``pltpu.VMEM((8, 128), jnp.float32)``)."""
  VMEM = "vmem"
  VMEM_SHARED = "vmem_shared"
  SMEM = "smem"
  CMEM = "cmem"
  SEMAPHORE = "semaphore_mem"
  HBM = "hbm"

  def __call__(self, shape, dtype):
    return plc.MemoryRef(tuple(shape), dtype, self)

  def __str__(self):
    return self.value

  def __repr__(self):
    return self.name


class GridDimensionSemantics(enum.Enum):
  PARALLEL = "parallel"
  CORE_PARALLEL = "core_parallel"
  SUBCORE_PARALLEL = "subcore_parallel"
  ARBITRARY = "arbitrary"


@dataclasses.dataclass(frozen=True)
class CompilerParams:
  """Mosaic compiler parameters (accepted; pyjax's CPU compiler does not use them)."""
  dimension_semantics: Any = None
  allow_input_fusion: Any = None
  vmem_limit_bytes: Any = None
  collective_id: Any = None
  has_side_effects: Any = False
  flags: Any = None
  internal_scratch_in_bytes: Any = None
  serialization_format: int = 1
  kernel_type: Any = None
  disable_bounds_checks: bool = False
  skip_device_barrier: bool = False
  allow_collective_id_without_custom_barrier: bool = False

  BACKEND = "mosaic_tpu"

  def replace(self, **kw):
    return dataclasses.replace(self, **kw)


class PrefetchScalarGridSpec(plc.GridSpec):
  """A ``GridSpec`` whose first ``num_scalar_prefetch`` operands are scalar-prefetch
  operands: passed whole to every kernel invocation (as refs, before the inputs) and to
  every index map (after the grid indices)."""

  def __init__(self, num_scalar_prefetch, grid=(), in_specs=plc.no_block_spec,
               out_specs=plc.no_block_spec, scratch_shapes=()):
    super().__init__(grid, in_specs, out_specs, scratch_shapes)
    self.num_scalar_prefetch = num_scalar_prefetch
