"""jax.experimental.sparse.coo: the COO matrix and its primitives (re-exports)."""
from pyjax._src.sparse.coo import (  # noqa: F401
    COO, COOInfo, coo_fromdense, coo_fromdense_p, coo_matmat, coo_matmat_p, coo_matvec,
    coo_matvec_p, coo_todense, coo_todense_p)
