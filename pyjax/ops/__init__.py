"""pyjax.ops (as jax.ops): segment reductions."""
from pyjax._src.segment import (  # noqa: F401
    segment_sum as segment_sum,
    segment_prod as segment_prod,
    segment_min as segment_min,
    segment_max as segment_max,
)
