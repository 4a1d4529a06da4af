"""jax.experimental.sparse.random: random sparse arrays (re-exports)."""
from pyjax._src.sparse.random import random_bcoo  # noqa: F401
