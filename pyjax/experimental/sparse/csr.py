"""jax.experimental.sparse.csr: the CSR/CSC matrices and their primitives (re-exports)."""
from pyjax._src.sparse.csr import (  # noqa: F401
    CSC, CSR, csr_fromdense, csr_fromdense_p, csr_matmat, csr_matmat_p, csr_matvec,
    csr_matvec_p, csr_todense, csr_todense_p)
