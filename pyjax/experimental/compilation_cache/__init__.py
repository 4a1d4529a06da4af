"""pyjax.experimental.compilation_cache (as jax.experimental.compilation_cache)."""
