"""jax.experimental.sparse.linalg: sparse direct solve and LOBPCG (re-exports; see
docs/sparse.md)."""
from pyjax._src.sparse.linalg import lobpcg_standard, spsolve, spsolve_p  # noqa: F401
