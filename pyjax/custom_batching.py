"""pyjax.custom_batching (as jax.custom_batching): custom vmap rules."""
from pyjax._src.custom_batching import custom_vmap, sequential_vmap  # noqa: F401
