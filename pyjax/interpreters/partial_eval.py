"""``jax.interpreters.partial_eval``: partial evaluation and jaxpr DCE."""
from pyjax._src.interpreters.partial_eval import (  # noqa: F401
    DynamicJaxprTracer, JaxprTracer, PartialVal, Val, close_jaxpr, convert_constvars_jaxpr,
    dce_jaxpr, trace_to_jaxpr_dynamic, trace_to_jaxpr_nounits)
