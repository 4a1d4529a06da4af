"""The rest of JAX's core API (``jax.core``, ``jax.extend.core``) over pyjax's own core.

pyjax's core (``core.py``) already has JAX's IR (``Jaxpr``, ``ClosedJaxpr``, ``Var``,
``Literal``, ``JaxprEqn``, ``DropVar``), ``Primitive`` (``def_impl``,
``def_abstract_eval``, ``bind``, ``multiple_results``), tracers and ``eval_jaxpr``.  This
module adds the names libraries reach for, each mapped onto that core:

* a *trace* is a pyjax interpreter (``Trace`` is ``core.Interpreter``); the current one is
  ``find_top_trace`` / ``get_opaque_trace_state`` / ``set_current_trace`` /
  ``take_current_trace``;
* ``AbstractValue`` is the abstract base every aval (``ShapedArray``, the token aval) is
  registered with;
* jaxpr helpers: ``new_jaxpr_eqn``, ``gensym``, ``jaxprs_in_params``, ``subjaxprs``,
  ``check_jaxpr``; aval helpers: ``mapped_aval``, ``unmapped_aval``, ``valid_jaxtype``,
  ``shaped_abstractify``, ``primal_dtype_to_tangent_dtype``.

Differences from JAX: pyjax has no symbolic dimensions (``max_dim`` / ``min_dim`` are
``max`` / ``min`` of integers), no trace tags (a trace is identified by the interpreter
object itself) and no quantity-dependent data on avals.
"""
from __future__ import annotations

import abc
import collections.abc
import contextlib
import itertools
import weakref
from typing import Any, Union

import numpy as np

from pyjax._src import core, dtypes
from pyjax._src.avals import ShapedArray
from pyjax._src.core import (  # noqa: F401  (re-exported)
    ClosedJaxpr, DropVar, Effect, Jaxpr, JaxprEqn, Literal, Primitive, Tracer, Var,
    eval_jaxpr, jaxpr_as_fun, no_effects)
from pyjax._src.errors import InconclusiveDimensionOperation, JaxprTypeError  # noqa: F401
from pyjax._src.interpreters import ad as _ad
from pyjax._src.interpreters import batching as _batching
from pyjax._src.interpreters.staging import DebugInfo  # noqa: F401
from pyjax._src.lax.tokens import AbstractToken, Token  # noqa: F401

Value = Any
ParamDict = dict
Atom = Union[Var, Literal]
Effects = collections.abc.Set
Trace = core.Interpreter

abstract_token = AbstractToken()


class AbstractValue(abc.ABC):
  """Base class of abstract values (JAX's ``core.AbstractValue``).  pyjax's avals
  (``ShapedArray`` and the token aval) are registered with it, so ``isinstance`` checks
  work; a library may also subclass it."""


AbstractValue.register(ShapedArray)


# --- the current trace ------------------------------------------------------------------
def find_top_trace(xs=()):
  """The current trace (interpreter).  As in JAX 0.10 the argument is ignored: with one
  current interpreter at a time, the innermost transformation is the current one."""
  del xs
  return core.current_interpreter()


def unsafe_get_current_trace():
  """The current trace (interpreter)."""
  return core.current_interpreter()


class OpaqueTraceState:
  """An opaque token for "which trace was current": equal exactly when taken under the
  same (still live) interpreter."""
  __slots__ = ("_trace_ref",)

  def __init__(self, trace_ref):
    self._trace_ref = trace_ref

  def __eq__(self, other):
    return isinstance(other, OpaqueTraceState) and self._trace_ref == other._trace_ref

  def __hash__(self):
    return hash(self._trace_ref)

  def __repr__(self):
    return f"OpaqueTraceState({self._trace_ref()!r})"


def get_opaque_trace_state(convention=None):
  """An ``OpaqueTraceState`` for the current trace (``convention`` is ignored, as in JAX)."""
  del convention
  return OpaqueTraceState(weakref.ref(core.current_interpreter()))


def set_current_trace(trace, check_leaks=False):
  """Context manager making ``trace`` (an interpreter) the current one."""
  del check_leaks
  return core.set_interpreter(trace)


class _NotATrace(core.Interpreter):
  """Current inside ``take_current_trace``: binding a primitive there is an error."""

  def process_primitive(self, prim, args, params):
    raise RuntimeError(f"Primitive {prim.name} was bound inside take_current_trace() "
                       "without a current trace; wrap the binding in set_current_trace")

  def __repr__(self):
    return "NotATrace"


@contextlib.contextmanager
def take_current_trace():
  """Context manager yielding the current trace and leaving none current inside (bind
  with ``set_current_trace(trace)`` to use it)."""
  interp = core.current_interpreter()
  with core.set_interpreter(_NotATrace()):
    yield interp


def eval_context():
  """Context manager: operations inside run eagerly (no enclosing transformation)."""
  return core.set_interpreter(core.eval_interpreter)


def _trace_stack():
  interp = core.current_interpreter()
  stack = []
  while interp is not None:
    stack.append(interp)
    interp = interp.parent
  return stack


def unsafe_am_i_under_a_jit():
  """True when some enclosing transformation stages a jaxpr (jit, make_jaxpr, ...)."""
  return any(isinstance(t, core.StagingInterpreter) for t in _trace_stack())


def unsafe_am_i_under_a_vmap():
  """True when some enclosing transformation is a vmap."""
  return any(isinstance(t, _batching.BatchInterpreter) for t in _trace_stack())


def unsafe_get_axis_names():
  """The named axes in scope (vmap axis names and ``make_jaxpr(axis_env=...)`` names)."""
  names = [t.axis_data.name for t in reversed(_trace_stack())
           if isinstance(t, _batching.BatchInterpreter) and t.axis_data.name is not None]
  names.extend(n for n in _batching.bound_axis_sizes() if n not in names)
  return names


def nonempty_axis_env():
  """True when some named axis is in scope."""
  return bool(unsafe_get_axis_names())


# --- avals ------------------------------------------------------------------------------
def get_aval(x):
  """The abstract value of ``x`` (a ``ShapedArray``); TypeError for non-JAX values."""
  return core.get_aval(x)


def typeof(x):
  """JAX's ``typeof``: the abstract value of a valid JAX value."""
  try:
    return core.get_aval(x)
  except TypeError:
    raise TypeError(f"Argument '{x}' of type '{type(x)}' is not a valid JAX type") from None


def valid_jaxtype(x):
  """True when ``x`` is a value JAX can trace (an array, a tracer, a Python or NumPy
  number)."""
  try:
    aval = core.get_aval(x)
  except TypeError:
    return False
  return getattr(aval, "dtype", None) != np.dtype(object)


def shaped_abstractify(x):
  """The ``ShapedArray`` of ``x``: like ``typeof``, but also any object with ``shape`` and
  ``dtype`` (``ShapeDtypeStruct``, NumPy arrays) or an aval itself."""
  if isinstance(x, AbstractValue):
    return x
  try:
    return core.get_aval(x)
  except TypeError:
    pass
  if hasattr(x, "dtype") and hasattr(x, "shape"):
    return ShapedArray(tuple(np.shape(x)), dtypes.canonicalize_dtype(x.dtype),
                       bool(getattr(x, "weak_type", False)))
  raise TypeError(f"Cannot interpret value of type {type(x)} as an abstract array; it "
                  "does not have a dtype attribute")


def mapped_aval(size, axis, aval):
  """``aval`` with its mapped axis ``axis`` (of length ``size``) removed; ``axis=None``
  returns it unchanged."""
  if axis is None or isinstance(aval, AbstractToken):
    return aval
  shape = tuple(aval.shape)
  if not -len(shape) <= axis < len(shape) or shape[axis] != size:
    raise ValueError(f"mapped_aval: axis {axis} of {aval} does not have size {size}")
  axis %= len(shape)
  return aval.update(shape=shape[:axis] + shape[axis + 1:])


def unmapped_aval(size, axis, aval, explicit_mesh_axis=None):
  """``aval`` with an axis of length ``size`` inserted at ``axis``; ``axis=None`` returns
  it unchanged."""
  del explicit_mesh_axis
  if axis is None or isinstance(aval, AbstractToken):
    return aval
  shape = tuple(aval.shape)
  if axis < 0:
    axis += len(shape) + 1
  return aval.update(shape=shape[:axis] + (size,) + shape[axis:])


def primal_dtype_to_tangent_dtype(primal_dtype):
  """The tangent dtype of a primal dtype: ``float0`` for integers and booleans."""
  if getattr(primal_dtype, "_pyjax_extended", False):
    return dtypes.float0
  return _ad.tangent_dtype(np.dtype(primal_dtype))


def concrete_or_error(force, val, context=""):
  """``force(val)`` (``val`` itself when ``force`` is None) for a concrete value; raises
  ``ConcretizationTypeError`` for a tracer."""
  return core.concrete_or_error(force, val, context)


def is_concrete(x):
  """True when ``x`` holds a known value (is not a tracer)."""
  return not isinstance(x, Tracer)


def max_dim(d1, d2):
  """The larger of two dimension sizes (pyjax has no symbolic dimensions)."""
  return max(d1, d2)


def min_dim(d1, d2):
  """The smaller of two dimension sizes (pyjax has no symbolic dimensions)."""
  return min(d1, d2)


def is_constant_dim(d):
  """True for a known (integer) dimension: every pyjax dimension."""
  return isinstance(d, (int, np.integer))


def is_constant_shape(shape):
  """True when every dimension of ``shape`` is known."""
  return all(is_constant_dim(d) for d in shape)


# --- jaxprs -----------------------------------------------------------------------------
def new_jaxpr_eqn(invars, outvars, primitive, params, effects, source_info=None, ctx=None):
  """A ``JaxprEqn``.  ``ctx`` (JAX's equation context) is accepted and ignored."""
  del ctx
  return JaxprEqn(list(invars), list(outvars), primitive, dict(params), frozenset(effects),
                  source_info)


def gensym(suffix=""):
  """A function making fresh ``Var``s from avals (``suffix`` is ignored: pyjax names
  variables when printing)."""
  del suffix
  return Var


def _jaxprs_of_value(v):
  if isinstance(v, Jaxpr):
    yield v
  elif isinstance(v, ClosedJaxpr):
    yield v.jaxpr
  elif isinstance(v, (tuple, list)):
    for x in v:
      yield from _jaxprs_of_value(x)


def jaxprs_in_params(params):
  """The jaxprs (open ones; the ``.jaxpr`` of closed ones) among an equation's params."""
  for v in params.values():
    yield from _jaxprs_of_value(v)


def subjaxprs(jaxpr):
  """The jaxprs held by the params of ``jaxpr``'s equations (one level down)."""
  for eqn in jaxpr.eqns:
    yield from jaxprs_in_params(eqn.params)


def _same_type(a, b):
  return (tuple(a.shape) == tuple(b.shape) and a.dtype == b.dtype)


def check_jaxpr(jaxpr):
  """Type-check a jaxpr: every variable is bound once before use, and each equation's
  outputs have the shapes and dtypes its primitive's abstract-eval rule gives for its
  inputs (weak types are not compared).  Raises ``JaxprTypeError``; nested jaxprs in
  params are checked too."""
  if isinstance(jaxpr, ClosedJaxpr):
    jaxpr = jaxpr.jaxpr
  defined = set()

  def bind(v, where):
    if isinstance(v, DropVar):
      return
    if v in defined:
      raise JaxprTypeError(f"Variable '{v}' already bound ({where})")
    defined.add(v)

  def read(v, where):
    if type(v) is Literal:
      return v.aval
    if v not in defined:
      raise JaxprTypeError(f"Variable '{v}' not defined ({where})")
    return v.aval

  for v in itertools.chain(jaxpr.constvars, jaxpr.invars):
    bind(v, "binder")
  for i, eqn in enumerate(jaxpr.eqns):
    where = f"in equation {i}: {eqn.primitive.name}"
    in_avals = [read(v, where) for v in eqn.invars]
    try:
      out = eqn.primitive.abstract_eval(*in_avals, **eqn.params)
    except Exception as e:  # a rule's own error: report it as a type error
      raise JaxprTypeError(f"{where}: {type(e).__name__}: {e}") from e
    outs = out if eqn.primitive.multiple_results else [out]
    if len(outs) != len(eqn.outvars):
      raise JaxprTypeError(f"{where}: {len(eqn.outvars)} outputs bound, rule gives "
                           f"{len(outs)}")
    for v, a in zip(eqn.outvars, outs):
      if not _same_type(v.aval, a):
        raise JaxprTypeError(f"{where}: output bound as {v.aval.str_short()} but the rule "
                             f"gives {a.str_short()}")
      bind(v, where)
    for sub in jaxprs_in_params(eqn.params):
      check_jaxpr(sub)
  for v in jaxpr.outvars:
    read(v, "in outvars")


array_types = frozenset([np.ndarray, *dtypes.python_scalar_types,
                         *(np.dtype(t).type for t in
                           ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16",
                            "uint32", "uint64", "float16", "float32", "float64",
                            "complex64", "complex128"))])
