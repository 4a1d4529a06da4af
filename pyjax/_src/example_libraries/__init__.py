"""Example libraries (``jax.example_libraries``): ``stax`` and ``optimizers``."""
