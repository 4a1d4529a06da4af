"""pyjax.experimental.compilation_cache.compilation_cache (as JAX's module)."""
from pyjax._src.compilation_cache import set_cache_dir, reset_cache  # noqa: F401
