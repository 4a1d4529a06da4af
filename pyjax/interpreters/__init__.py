"""``jax.interpreters``: rule tables and helpers of pyjax's transformations."""

# As in JAX, the submodules are attributes once ``jax`` is imported (libraries write
# ``jax.interpreters.xla...`` without importing it).
from pyjax.interpreters import ad, batching, mlir, partial_eval, pxla, xla  # noqa: F401,E402
