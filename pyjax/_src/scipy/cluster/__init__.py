"""jax.scipy.cluster."""
