"""jax.experimental.sparse.api: ``empty``, ``eye``, ``todense`` (re-exports)."""
from pyjax._src.sparse.api import empty, eye, todense, todense_p  # noqa: F401
