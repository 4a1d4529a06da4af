"""jax.scipy.sparse."""
