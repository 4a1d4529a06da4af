"""``jax.distributed`` (single process in pyjax: see ``pyjax._src.distributed``)."""
from pyjax._src.distributed import initialize, is_initialized, shutdown  # noqa: F401
