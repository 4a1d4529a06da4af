"""pyjax.experimental.pallas.tpu (as jax.experimental.pallas.tpu): the part meaningful on
CPU -- memory spaces for scratch buffers, PrefetchScalarGridSpec, CompilerParams."""
from pyjax._src.pallas.tpu import (  # noqa: F401
    CompilerParams, GridDimensionSemantics, MemorySpace, PrefetchScalarGridSpec)

PARALLEL = GridDimensionSemantics.PARALLEL
CORE_PARALLEL = GridDimensionSemantics.CORE_PARALLEL
SUBCORE_PARALLEL = GridDimensionSemantics.SUBCORE_PARALLEL
ARBITRARY = GridDimensionSemantics.ARBITRARY
CMEM = MemorySpace.CMEM
SMEM = MemorySpace.SMEM
VMEM = MemorySpace.VMEM
VMEM_SHARED = MemorySpace.VMEM_SHARED
HBM = MemorySpace.HBM
SEMAPHORE = MemorySpace.SEMAPHORE
