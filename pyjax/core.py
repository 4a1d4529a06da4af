"""``jax.core``: JAX 0.10's public core names, over pyjax's core.

Names JAX 0.10 deprecates warn (``DeprecationWarning``) and still work; names it removed
raise ``AttributeError`` with JAX's message (``get_aval`` -> use ``jax.typeof``;
``mapped_aval`` etc. -> ``jax.extend.core``).
"""
from pyjax._src.api import ensure_compile_time_eval  # noqa: F401
from pyjax._src.avals import ShapedArray  # noqa: F401
from pyjax._src.core import Tracer, eval_jaxpr  # noqa: F401
from pyjax._src.extend_core import (  # noqa: F401
    AbstractValue, Atom, ParamDict, Trace, Value, eval_context, max_dim, min_dim)

from pyjax._src import core as _pyjax_core
from pyjax._src import extend_core as _ec
from pyjax._src.deprecations import deprecation_getattr as _deprecation_getattr


def _removed(name, use=None):
  msg = f"jax.core.{name} was deprecated in JAX v0.8.2 and removed in JAX v0.10.0."
  return (msg + (f" Use {use}." if use else ""), None)


def _deprecated(name, value, use=None):
  return (f"jax.core.{name} is deprecated." + (f" Use {use}." if use else ""), value)


_deprecations = {
    "get_aval": ("jax.core.get_aval was deprecated in JAX v0.8.2 and removed in JAX "
                 "v0.10.0; use jax.typeof instead.", None),
    "mapped_aval": _removed("mapped_aval", "jax.extend.core.mapped_aval"),
    "unmapped_aval": _removed("unmapped_aval", "jax.extend.core.unmapped_aval"),
    "set_current_trace": _removed("set_current_trace", "jax.extend.core.set_current_trace"),
    "take_current_trace": _removed("take_current_trace",
                                   "jax.extend.core.take_current_trace"),
    "traverse_jaxpr_params": _removed("traverse_jaxpr_params"),
    "TraceTag": _removed("TraceTag", "jax.extend.core.TraceTag"),
    "call_impl": _removed("call_impl", "jax.extend.core.call_impl"),
    "subjaxprs": _removed("subjaxprs", "jax.extend.core.subjaxprs"),
    "AbstractToken": _removed("AbstractToken", "jax.extend.core.AbstractToken"),
    "DebugInfo": _deprecated("DebugInfo", _ec.DebugInfo, "jax.extend.core.DebugInfo"),
    "DropVar": _deprecated("DropVar", _ec.DropVar, "jax.extend.core.DropVar"),
    "Effect": _deprecated("Effect", _ec.Effect, "jax.extend.core.Effect"),
    "Effects": _deprecated("Effects", _ec.Effects, "jax.extend.core.Effects"),
    "InconclusiveDimensionOperation": _deprecated(
        "InconclusiveDimensionOperation", _ec.InconclusiveDimensionOperation,
        "jax.errors.InconclusiveDimensionOperation"),
    "JaxprTypeError": _deprecated("JaxprTypeError", _ec.JaxprTypeError,
                                  "jax.errors.JaxprTypeError"),
    "check_jaxpr": _deprecated("check_jaxpr", _ec.check_jaxpr,
                               "jax.extend.core.check_jaxpr"),
    "concrete_or_error": _deprecated("concrete_or_error", _ec.concrete_or_error,
                                     "jax.extend.core.concrete_or_error"),
    "find_top_trace": _deprecated("find_top_trace", _ec.find_top_trace,
                                  "jax.extend.core.find_top_trace"),
    "gensym": _deprecated("gensym", _ec.gensym, "jax.extend.core.gensym"),
    "get_opaque_trace_state": _deprecated("get_opaque_trace_state",
                                          _ec.get_opaque_trace_state,
                                          "jax.extend.core.get_opaque_trace_state"),
    "jaxprs_in_params": _deprecated("jaxprs_in_params", _ec.jaxprs_in_params,
                                    "jax.extend.core.jaxprs_in_params"),
    "new_jaxpr_eqn": _deprecated("new_jaxpr_eqn", _ec.new_jaxpr_eqn,
                                 "jax.extend.core.new_jaxpr_eqn"),
    "no_effects": _deprecated("no_effects", _ec.no_effects, "jax.extend.core.no_effects"),
    "nonempty_axis_env_DO_NOT_USE": _deprecated("nonempty_axis_env_DO_NOT_USE",
                                                _ec.nonempty_axis_env),
    "primal_dtype_to_tangent_dtype": _deprecated(
        "primal_dtype_to_tangent_dtype", _ec.primal_dtype_to_tangent_dtype,
        "jax.extend.core.primal_dtype_to_tangent_dtype"),
    "unsafe_am_i_under_a_jit_DO_NOT_USE": _deprecated(
        "unsafe_am_i_under_a_jit_DO_NOT_USE", _ec.unsafe_am_i_under_a_jit),
    "unsafe_am_i_under_a_vmap_DO_NOT_USE": _deprecated(
        "unsafe_am_i_under_a_vmap_DO_NOT_USE", _ec.unsafe_am_i_under_a_vmap),
    "unsafe_get_axis_names_DO_NOT_USE": _deprecated(
        "unsafe_get_axis_names_DO_NOT_USE", _ec.unsafe_get_axis_names),
    "valid_jaxtype": _deprecated("valid_jaxtype", _ec.valid_jaxtype,
                                 "jax.extend.core.valid_jaxtype"),
    "abstract_token": _deprecated("abstract_token", _ec.abstract_token),
    "is_concrete": _deprecated("is_concrete", _ec.is_concrete),
    "is_constant_dim": _deprecated("is_constant_dim", _ec.is_constant_dim),
    "is_constant_shape": _deprecated("is_constant_shape", _ec.is_constant_shape),
    "pytype_aval_mappings": _deprecated("pytype_aval_mappings",
                                        _pyjax_core.pytype_aval_mappings),
}

__getattr__ = _deprecation_getattr(__name__, _deprecations)
del _deprecation_getattr
