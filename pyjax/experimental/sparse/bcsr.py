"""jax.experimental.sparse.bcsr: the BCSR array and its functions (re-exports)."""
from pyjax._src.sparse.bcsr import (  # noqa: F401
    BCSR, bcsr_dot_general, bcsr_extract, bcsr_fromdense, bcsr_sum_duplicates, bcsr_todense)
from pyjax._src.sparse.bcsr_prims import (  # noqa: F401
    bcsr_dot_general_p, bcsr_extract_p, bcsr_fromdense_p, bcsr_todense_p)
from pyjax._src.sparse.indexing import bcsr_broadcast_in_dim, bcsr_concatenate  # noqa: F401
