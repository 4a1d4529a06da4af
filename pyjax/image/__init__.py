"""pyjax.image (as jax.image): image resampling -- ``resize``, ``scale_and_translate``,
``ResizeMethod``."""
from pyjax._src.image.scale import (  # noqa: F401
    resize as resize,
    ResizeMethod as ResizeMethod,
    scale_and_translate as scale_and_translate,
)
