"""pyjax.ref (as jax.ref): mutable array references."""
from pyjax._src.state.types import Ref, AbstractRef  # noqa: F401
from pyjax._src.state.primitives import (  # noqa: F401
    new_ref, empty_ref, free_ref, freeze, ref_get as get, ref_set as set, ref_swap as swap,
    ref_addupdate as addupdate)

__all__ = ["AbstractRef", "Ref", "addupdate", "free_ref", "freeze", "get", "new_ref",
           "empty_ref", "set", "swap"]
