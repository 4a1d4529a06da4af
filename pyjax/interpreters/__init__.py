"""``jax.interpreters``: rule tables and helpers of pyjax's transformations."""
