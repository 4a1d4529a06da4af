"""Image resampling (``jax.image``); see ``scale``."""
