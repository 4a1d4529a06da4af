"""jax.experimental.sparse.util: sparse layout info and efficiency errors (re-exports)."""
from pyjax._src.sparse.util import (  # noqa: F401
    CuSparseEfficiencyWarning, SparseEfficiencyError, SparseEfficiencyWarning, SparseInfo)
