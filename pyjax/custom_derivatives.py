"""pyjax.custom_derivatives (as jax.custom_derivatives)."""
from pyjax._src.api_ad import (  # noqa: F401
    custom_jvp, custom_vjp, custom_jvp_call_p, custom_vjp_call_p, SymbolicZero,
    closure_convert, zero_from_primal, custom_gradient, CustomVJPPrimal,
    custom_vjp_primal_tree_values)
