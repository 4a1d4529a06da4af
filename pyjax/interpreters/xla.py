"""``jax.interpreters.xla``: ``apply_primitive`` (run a primitive eagerly)."""
from pyjax._src.dispatch import apply_primitive  # noqa: F401
