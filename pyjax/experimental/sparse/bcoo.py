"""jax.experimental.sparse.bcoo: the BCOO array, its primitives and functions (re-exports)."""
from pyjax._src.sparse.bcoo import *  # noqa: F401,F403
from pyjax._src.sparse.bcoo_array import (  # noqa: F401
    BCOO, bcoo_dot_general, bcoo_dot_general_sampled, bcoo_eliminate_zeros, bcoo_extract,
    bcoo_fromdense, bcoo_multiply_dense, bcoo_reduce_sum, bcoo_reshape, bcoo_slice,
    bcoo_sort_indices, bcoo_squeeze, bcoo_sum_duplicates, bcoo_todense, bcoo_transpose)
from pyjax._src.sparse.conv import bcoo_conv_general_dilated  # noqa: F401
from pyjax._src.sparse.indexing import (  # noqa: F401
    bcoo_broadcast_in_dim, bcoo_dynamic_slice, bcoo_gather, bcoo_rev)
from pyjax._src.sparse.layout import (  # noqa: F401
    bcoo_concatenate, bcoo_multiply_sparse, bcoo_update_layout)
