"""pyjax.debug (as jax.debug): printing and callbacks that run when the program runs."""
from pyjax._src.debugging import (  # noqa: F401
    debug_print as print, debug_log as log, debug_callback as callback, DebugEffect,
    OrderedDebugEffect)
