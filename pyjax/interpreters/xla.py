"""``jax.interpreters.xla``: ``apply_primitive`` (run a primitive eagerly) and the
``canonicalize_dtype_handlers`` table."""
from pyjax._src.dispatch import apply_primitive  # noqa: F401
from pyjax._src.value_handlers import canonicalize_dtype_handlers  # noqa: F401
