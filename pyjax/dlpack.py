"""pyjax.dlpack (as jax.dlpack): ``from_dlpack`` and ``is_supported_dtype``."""
from pyjax._src.dlpack import (  # noqa: F401
    from_dlpack as from_dlpack,
    is_supported_dtype as is_supported_dtype,
)
