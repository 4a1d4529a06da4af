"""All eager NumPy implementations of the CPU backend (one module per primitive family);
importing this module registers them in ``registry.impls`` (keyed by primitive name)."""
from pyjax._src.backends.cpu.registry import impls  # noqa: F401
from pyjax._src.backends.cpu import (  # noqa: F401
    eager_elementwise, eager_structural, eager_indexing, eager_reductions, eager_linalg,
    eager_sort, eager_random, eager_lax_linalg, eager_fft, eager_control_flow,
    eager_callbacks, eager_misc, eager_rng, eager_sparse)
from pyjax._src.backends.cpu import eager_sparse_coo  # noqa: F401,E402
