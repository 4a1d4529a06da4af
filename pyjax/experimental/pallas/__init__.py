"""pyjax.experimental.pallas (as jax.experimental.pallas): kernels over a grid of blocks,
run with JAX's interpret-mode semantics or compiled to C on CPU (see docs/pallas.md)."""
from pyjax._src.pallas.core import (  # noqa: F401
    Blocked, BlockSpec, BoundedSlice, Buffered, CostEstimate, Element, GridSpec, MemoryRef,
    MemorySpace, no_block_spec, Squeezed, squeezed, cdiv, loop, multiple_of, num_programs,
    program_id, run_scoped, when, align_to, next_power_of_2, strides_from_shape, broadcast_to)
from pyjax._src.pallas.pallas_call import pallas_call, pallas_call_p  # noqa: F401
from pyjax._src.pallas.primitives import debug_print, reciprocal  # noqa: F401
from pyjax._src.state.indexing import ds, dslice, Slice  # noqa: F401

ANY = MemorySpace.ANY
HOST = MemorySpace.HOST
