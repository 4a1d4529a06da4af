"""pyjax.debug (as jax.debug): printing and callbacks that run when the program runs."""
from pyjax._src.debugging import (  # noqa: F401
    debug_print as print, debug_log as log, debug_callback as callback, DebugEffect,
    OrderedDebugEffect)
from pyjax._src.sharding_debug import (  # noqa: F401
    inspect_array_sharding, visualize_array_sharding, visualize_sharding)
