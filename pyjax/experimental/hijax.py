"""``jax.experimental.hijax``: user-defined high-level types and primitives (see
``pyjax._src.hijax`` for what pyjax supports and how it differs from JAX)."""
from pyjax._src.hijax import (  # noqa: F401
    AbstractValue, AvalMutableQDD, AvalQDD, HiPrimitive, HiType, MutableHiType,
    ShapedArray, Zero, aval_method, aval_property, control_flow_allowed_effects,
    instantiate_zeros, is_undefined_primal, register_hitype)
from pyjax._src.state.types import AbstractRef  # noqa: F401
