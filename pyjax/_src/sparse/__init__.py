"""jax.experimental.sparse: BCOO arrays and their primitives (see docs/sparse.md)."""
