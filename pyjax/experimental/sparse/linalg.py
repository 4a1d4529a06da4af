"""jax.experimental.sparse.linalg: sparse direct solve (re-exports; see docs/sparse.md)."""
from pyjax._src.sparse.linalg import spsolve, spsolve_p  # noqa: F401
