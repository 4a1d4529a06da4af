"""``jax.extend.core``: primitives, the jaxpr IR and trace helpers of pyjax's core.

Differences from JAX: ``TraceTag``, ``CallPrimitive``/``call_impl`` and ``Token`` as a
runtime object differ or are absent (pyjax identifies a trace by its interpreter object
and has no call primitives other than ``jit``).
"""
from pyjax._src.extend_core import (  # noqa: F401
    AbstractToken, ClosedJaxpr, DebugInfo, DropVar, Effect, Effects,
    InconclusiveDimensionOperation, Jaxpr, JaxprEqn, JaxprTypeError, Literal, Primitive,
    Token, Var, array_types, check_jaxpr, concrete_or_error, find_top_trace, gensym,
    get_opaque_trace_state, jaxpr_as_fun, jaxprs_in_params, mapped_aval, new_jaxpr_eqn,
    no_effects, primal_dtype_to_tangent_dtype, set_current_trace, subjaxprs,
    take_current_trace, unmapped_aval, valid_jaxtype)
from pyjax._src.extend_core import (  # noqa: F401
    nonempty_axis_env as nonempty_axis_env_DO_NOT_USE,
    unsafe_am_i_under_a_jit as unsafe_am_i_under_a_jit_DO_NOT_USE,
    unsafe_am_i_under_a_vmap as unsafe_am_i_under_a_vmap_DO_NOT_USE,
    unsafe_get_axis_names as unsafe_get_axis_names_DO_NOT_USE)
from pyjax.extend.core import primitives  # noqa: F401
