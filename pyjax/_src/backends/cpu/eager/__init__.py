"""All eager NumPy implementations of the CPU backend, one module per primitive family
(the same file names as the families in ``pyjax/_src/lax/``); importing this package
registers them in ``registry.impls`` (keyed by primitive name)."""
from pyjax._src.backends.cpu.eager.registry import impls  # noqa: F401
from pyjax._src.backends.cpu.eager import (  # noqa: F401  (each registers its family)
    elementwise,
    shapes,
    buffers,
    gather_scatter,
    reductions,
    windowed,
    dot,
    convolution,
    ragged,
    sorting,
    random,
    rng,
    linalg,
    fft,
    control_flow,
    higher_order,
    solvers,
    ann,
    tokens,
    parallel,
    sharding,
    select_and_scatter,
    callbacks,
    sparse,
    sparse_coo,
    sparse_bcsr,
    pallas,
)
