"""pyjax.flatten_util (as jax.flatten_util): ``ravel_pytree``."""
from pyjax._src.flatten_util import ravel_pytree as ravel_pytree  # noqa: F401
