"""``jax.api_util``: helpers for writing transformations over wrapped functions."""
from pyjax._src.api_util import (  # noqa: F401
    argnums_partial, debug_info, donation_vector, flatten_axes, flatten_fun,
    flatten_fun_nokwargs, rebase_donate_argnums, safe_map, shaped_abstractify)
