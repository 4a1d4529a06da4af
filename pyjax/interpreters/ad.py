"""``jax.interpreters.ad``: differentiation rule tables and helpers."""
from pyjax._src.interpreters.ad import (  # noqa: F401
    JVPTrace, JVPTracer, UndefinedPrimal, Zero, add_jaxvals, add_jaxvals_p, add_tangents,
    defbilinear, defjvp, defjvp2, deflinear, deflinear2, get_primitive_transpose,
    instantiate_zeros, is_undefined_primal, primitive_jvps, primitive_transposes,
    zeros_like_aval)
