"""jax.scipy.stats: one module per distribution family, plus mode, rankdata, sem and
gaussian_kde."""
