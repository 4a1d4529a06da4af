"""jax.experimental.sparse.transform: the ``sparsify`` transformation (re-exports)."""
from pyjax._src.sparse.transform import SparseTracer, sparsify  # noqa: F401
