"""pyjax.example_libraries (as jax.example_libraries): ``stax`` (layers) and
``optimizers``."""
