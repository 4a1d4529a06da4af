"""jax.scipy.spatial."""
