"""The core: primitives, interpreters (traces), tracers and the jaxpr IR.

Design (JAX's "stackless" tracing): exactly one interpreter is *current* (a thread-local).
``Primitive.bind`` hands the primitive to it.  The bottom interpreter evaluates eagerly on
the default backend; transformation interpreters (staging for jit/make_jaxpr, JVP,
batching) are installed with ``set_interpreter`` while a transformed function runs.  Each
interpreter remembers its parent and owns its tracers (``tracer._trace is interp``); any
other value is a constant to it — from an outer transformation or concrete data — so
nesting composes without levels.  An interpreter computes on its tracers' contents by
binding primitives again with its parent made current.
"""
from __future__ import annotations

import collections
import contextlib
import itertools
import os
import re
import sys
import threading
import types
import weakref

import numpy as np

from pyjax._src import dtypes
from pyjax._src import errors
from pyjax._src.avals import ShapedArray, scalar_aval
from pyjax._src.runtime import dispatch
from pyjax._src.runtime.array import Array, ArrayImpl


class ShardingTypeError(Exception):
  """An operation's operands have sharding types it cannot combine (JAX's
  ``jax._src.core.ShardingTypeError``; see ``pyjax._src.sharding_types``)."""


# --- the current interpreter -----------------------------------------------------------
class _TraceState(threading.local):
  def __init__(self):
    self.interp = eval_interpreter
    self.source_info = None   # set by eval_jaxpr: the equation being re-bound


def current_interpreter():
  return _state.interp


def _trace_state_key():
  """The config flags that change tracing (part of derived-jaxpr cache keys)."""
  from pyjax._src.config import config
  return config.trace_state()


@contextlib.contextmanager
def set_interpreter(interp):
  prev = _state.interp
  _state.interp = interp
  try:
    yield interp
  finally:
    _state.interp = prev


# --- primitives -------------------------------------------------------------------------
class Primitive:
  """A named operation.  Its rules live in tables keyed by the primitive:
  ``abstract_eval`` here (shape/dtype/weak_type); JVP, transpose and batching rules in
  ``pyjax._src.interpreters``; the implementation in each backend, keyed by ``name``."""
  multiple_results = False
  impl = None              # Python-level eager rule (higher-order primitives); else backend
  arg_names = None         # names for error messages ("argument x of add")
  eqn_printer = None       # optional (eqn, name context) -> ordered (param, value) pairs
  effectful = False        # True when ``def_effectful_abstract_eval`` gave the rule
  call_primitive = False   # JAX's flags: pyjax has no call/map primitives (jit_p carries
  map_primitive = False    # its jaxpr in ``params["jaxpr"]``, as JAX's jit_p does)

  def __init__(self, name):
    self.name = name
    self._abstract_eval = None
    self._effectful_abstract_eval = None
    self.param_printer = None   # optional: params -> dict of what the jaxpr text shows

  def __repr__(self):
    return self.name

  def bind(self, *args, **params):
    return _state.interp.process_primitive(self, args, params)

  def get_bind_params(self, params):
    """The keyword arguments that re-bind an equation with these ``params`` (JAX >= 0.9.2
    returns a dict too).  pyjax's higher-order primitives bind with their jaxpr params
    as recorded, so this is a copy of ``params`` for every primitive."""
    return dict(params)

  def def_abstract_eval(self, rule):
    self._abstract_eval = rule
    return rule

  def def_effectful_abstract_eval(self, rule):
    """``rule(*avals, **params) -> (out_aval(s), effects)``: for primitives with side
    effects (callbacks, prints) or whose jaxpr params have them (jit, remat, ...).  A
    staged equation records the effects; executables never drop it as dead code."""
    self._effectful_abstract_eval = rule
    self.effectful = True
    self._abstract_eval = lambda *avals, **params: rule(*avals, **params)[0]
    return rule

  def abstract_eval_effects(self, *avals, **params):
    """(out aval(s), frozenset of effects)."""
    if self.effectful:
      out, effs = self._effectful_abstract_eval(*avals, **params)
      return out, frozenset(effs)
    return self._abstract_eval(*avals, **params), no_effects

  def def_impl(self, impl):
    self.impl = impl
    return impl

  def abstract_eval(self, *avals, **params):
    return self._abstract_eval(*avals, **params)


# --- effects ----------------------------------------------------------------------------
class Effect:
  """A side effect of an equation (printed by name, as JAX's: ``Debug``, ``IO``...).
  ``ordered`` effects keep their program order relative to each other."""
  __slots__ = ("name", "ordered")

  def __init__(self, name=None, ordered=False):
    # JAX's user effects are ``class MyEffect(Effect): ...; my_effect = MyEffect()``:
    # with no name an effect prints as its class name.
    self.name = type(self).__name__ if name is None else name
    self.ordered = ordered

  def __repr__(self):
    return self.name

  __str__ = __repr__

  def __lt__(self, other):   # effects print sorted
    return self.name < other.name


no_effects = frozenset()


def jaxpr_effects(jaxpr):
  """The effects of a Jaxpr or ClosedJaxpr (the union of its equations')."""
  return (jaxpr.jaxpr if isinstance(jaxpr, ClosedJaxpr) else jaxpr).effects


def join_effects(*jaxprs):
  effs = set()
  for j in jaxprs:
    effs.update(jaxpr_effects(j))
  return frozenset(effs)


class Interpreter:
  """Base of all interpreters.  ``parent`` is the interpreter this one binds on."""
  parent = None
  finished = False

  def process_primitive(self, prim, args, params):
    raise NotImplementedError(type(self).__name__)

  @property
  def main(self):
    """JAX's ``trace.main`` (a trace's tag): what identifies this trace's tracers -- in
    pyjax the interpreter itself (``tracer._trace.main is interp.main``)."""
    return self


class EvalInterpreter(Interpreter):
  """The bottom: run each primitive now on the default backend."""

  def process_primitive(self, prim, args, params):
    if prim.impl is not None:
      return prim.impl(*args, **params)
    return dispatch.apply_primitive(prim, args, params)

  def __repr__(self):
    return "EvalInterpreter"


eval_interpreter = EvalInterpreter()
_state = _TraceState()


# --- abstract values of any value -------------------------------------------------------
def get_aval(x):
  t = type(x)
  if t is ArrayImpl:
    return x.aval
  if isinstance(x, (Tracer, ArrayImpl)):   # (a sharded ArrayImpl: its type == ArrayImpl)
    return x.aval
  if t in dtypes.python_scalar_types:
    return scalar_aval(x)
  if isinstance(x, (np.ndarray, np.generic)):
    if not dtypes.is_array_dtype(x.dtype) and x.dtype != dtypes.float0:   # object, '>f4', ...
      raise TypeError(f"Dtype {x.dtype} is not a valid JAX array type. Only arrays of "
                      "numeric types are supported by JAX.")
    return ShapedArray(np.shape(x), dtypes.canonicalize_dtype(x.dtype), False)
  if isinstance(x, (bool, int, float, complex)):
    return scalar_aval(x)
  rule = pytype_aval_mappings.get(t)
  if rule is not None:   # a user type registered with hijax.register_hitype
    return rule(x)
  aval = getattr(x, "aval", None)
  if isinstance(aval, ShapedArray):
    return aval
  if hasattr(x, "__jax_array__"):
    return get_aval(x.__jax_array__())
  raise TypeError(f"Value {x!r} of type {type(x)} is not a valid JAX type")


# Python type -> function giving a value's aval (JAX's ``core.pytype_aval_mappings``):
# the types pyjax knows natively, and user types (``hijax.register_hitype``), which
# ``get_aval`` consults after its fast paths.
pytype_aval_mappings = {t: get_aval for t in (
    np.ndarray, ArrayImpl, *dtypes.python_scalar_types,
    *(np.dtype(n).type for n in ("bool", "int8", "int16", "int32", "int64", "uint8",
                                 "uint16", "uint32", "uint64", "float16", "float32",
                                 "float64", "complex64", "complex128")))}

# Attributes of an aval that a tracer of it exposes (JAX's ``core.aval_property`` /
# ``core.aval_method``): ``tracer.name`` is ``fget(tracer)`` / ``fun`` bound to the tracer.
aval_property = collections.namedtuple("aval_property", ["fget"])
aval_method = collections.namedtuple("aval_method", ["fun"])


def is_concrete(x):
  return not isinstance(x, Tracer)


dispatch.register_tracer_check(lambda x: isinstance(x, Tracer))


# --- tracers ----------------------------------------------------------------------------
class Tracer(Array):
  """A value being transformed by ``_trace``.  Operators come from ``pyjax._src.numpy``."""
  __slots__ = ("_trace", "__weakref__")
  __array_priority__ = 1000

  @property
  def aval(self):
    raise NotImplementedError

  @property
  def shape(self):
    return self.aval.shape

  @property
  def dtype(self):
    return self.aval.dtype

  @property
  def weak_type(self):
    return self.aval.weak_type

  @property
  def ndim(self):
    return len(self.aval.shape)

  @property
  def size(self):
    return self.aval.size

  @property
  def itemsize(self):
    return self.aval.dtype.itemsize

  @property
  def nbytes(self):
    return self.aval.size * self.aval.dtype.itemsize

  def __len__(self):
    if not self.aval.shape:
      raise TypeError("len() of unsized object")
    return self.aval.shape[0]

  def __iter__(self):
    if not self.aval.shape:
      raise TypeError("iteration over a 0-d array")
    return (self[i] for i in range(self.aval.shape[0]))

  def __hash__(self):
    raise TypeError(f"unhashable type: {type(self)}")

  def __setitem__(self, idx, value):
    raise TypeError("JAX arrays are immutable and do not support in-place item assignment. "
                    "Instead of x[idx] = y, use x = x.at[idx].set(y) or another .at[] "
                    "method: https://docs.jax.dev/en/latest/_autosummary/jax.numpy.ndarray.at.html")

  def _context(self):
    return self._trace.error_context(self) if hasattr(self._trace, "error_context") else ""

  def __bool__(self):
    raise errors.TracerBoolConversionError(self, self._context())

  def _conversion_context(self, fun):
    return (f"The problem arose with the `{fun}` function. If trying to convert the data type "
            f"of a value, try using `x.astype({fun})` or `jnp.array(x, {fun})` instead.\n"
            + self._context())

  def __int__(self):
    raise errors.ConcretizationTypeError(self, self._conversion_context("int"))

  def __float__(self):
    raise errors.ConcretizationTypeError(self, self._conversion_context("float"))

  def __complex__(self):
    raise errors.ConcretizationTypeError(self, self._conversion_context("complex"))

  def __index__(self):
    if not dtypes.is_int(self.aval.dtype):
      raise TypeError("Only integer scalar arrays can be converted to a scalar index.")
    raise errors.TracerIntegerConversionError(self, self._context())

  def __array__(self, *args, **kw):
    raise errors.TracerArrayConversionError(self, self._context())

  def item(self, *args):
    raise errors.ConcretizationTypeError(
        self, "This occurred in the item() method of jax.Array\n" + self._context())

  def tolist(self):
    raise errors.ConcretizationTypeError(
        self, "The tolist() method was called on traced array with shape "
        f"{self.aval.str_short(short_dtypes=False)}.\n" + self._context())

  def block_until_ready(self):
    return self

  def __repr__(self):
    return f"Traced<{self.aval.str_short(short_dtypes=True)}>with<{self._trace!r}>"

  def __str__(self):
    return self.__repr__()

  def __copy__(self):
    return self

  def __deepcopy__(self, memo):
    return self

  def __reduce__(self):
    raise errors.ConcretizationTypeError(self, "Tracers cannot be pickled.")

  def __getattr__(self, name):
    # Only reached when normal lookup fails: a tracer of a hijax type forwards the
    # ``aval_property`` / ``aval_method`` attributes its aval declares.
    if (not name.startswith("__") and name not in ("aval", "_trace")
        and not isinstance(getattr(type(self), name, None), types.MemberDescriptorType)):
      try:
        attr = getattr(self.aval, name)
      except Exception:
        attr = None
      if type(attr) is aval_property:
        return attr.fget(self)
      if type(attr) is aval_method:
        return attr.fun.__get__(self, type(self))
    raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")


# --- the jaxpr IR -----------------------------------------------------------------------
class Var:
  __slots__ = ("aval", "_count")
  _counter = itertools.count()

  def __init__(self, aval):
    self.aval = aval
    self._count = next(Var._counter)

  def __repr__(self):
    return f"Var({self._count}:{self.aval.str_short(short_dtypes=True)})"


class DropVar(Var):
  """An output nobody reads (printed ``_``)."""

  def __repr__(self):
    return "_"


class Literal:
  __slots__ = ("val", "aval")

  def __init__(self, val, aval):
    self.val = val
    self.aval = aval

  def __repr__(self):
    return f"{_format_literal(self.val)}:{self.aval.str_short(short_dtypes=True)}"


def _format_literal(v):
  if np.shape(v):
    return "[...]"
  return str(np.asarray(v).item())


class JaxprEqn:
  __slots__ = ("invars", "outvars", "primitive", "params", "effects", "source_info")

  def __init__(self, invars, outvars, primitive, params, effects=frozenset(), source_info=None):
    self.invars = invars
    self.outvars = outvars
    self.primitive = primitive
    self.params = params
    self.effects = effects
    self.source_info = source_info

  def replace(self, **kw):
    d = {k: getattr(self, k) for k in self.__slots__}
    d.update(kw)
    return JaxprEqn(**d)

  def __repr__(self):
    return pp_eqn(self)


class Jaxpr:
  __slots__ = ("constvars", "invars", "outvars", "eqns", "effects", "debug_info", "__weakref__")

  def __init__(self, constvars, invars, outvars, eqns, effects=frozenset(), debug_info=None):
    self.constvars = list(constvars)
    self.invars = list(invars)
    self.outvars = list(outvars)
    self.eqns = list(eqns)
    self.effects = effects
    self.debug_info = debug_info

  @property
  def in_avals(self):
    return [v.aval for v in self.invars]

  @property
  def out_avals(self):
    return [v.aval for v in self.outvars]

  def replace(self, **kw):
    """A copy with the given fields (``constvars``, ``invars``, ``outvars``, ``eqns``,
    ``effects``, ``debug_info``) replaced."""
    d = {k: getattr(self, k) for k in self.__slots__ if k != "__weakref__"}
    d.update(kw)
    return Jaxpr(**d)

  def __str__(self):
    return pp_jaxpr(self)

  def pretty_print(self, width=80, **kw):
    return pp_jaxpr(self, width)

  __repr__ = __str__


class ClosedJaxpr:
  """A jaxpr with values for its constvars."""
  __slots__ = ("jaxpr", "consts", "__weakref__")

  def __init__(self, jaxpr, consts):
    self.jaxpr = jaxpr
    self.consts = list(consts)

  @property
  def in_avals(self):
    return self.jaxpr.in_avals

  @property
  def out_avals(self):
    return self.jaxpr.out_avals

  @property
  def eqns(self):
    return self.jaxpr.eqns

  @property
  def literals(self):
    return self.consts

  @property
  def effects(self):
    return self.jaxpr.effects

  def replace(self, *, jaxpr=None, consts=None):
    """A copy with ``jaxpr`` and/or ``consts`` replaced."""
    return ClosedJaxpr(self.jaxpr if jaxpr is None else jaxpr,
                       self.consts if consts is None else consts)

  def __str__(self):
    return pp_jaxpr(self.jaxpr)

  def pretty_print(self, width=80, **kw):
    return pp_jaxpr(self.jaxpr, width)

  __repr__ = __str__


# --- printing (JAX's text format) -------------------------------------------------------
# A small Wadler-style document printer (as JAX's): a *group* is laid out flat (its breaks
# print as their text) when all of it fits in the rest of the line, else its breaks become
# newlines indented by the enclosing nests.  Documents are tuples:
#   (_TEXT, s)  (_BRK, s)  (_CONCAT, docs)  (_NEST, n, doc)  (_GROUP, doc)
_PP_WIDTH = 80
_TEXT, _BRK, _CONCAT, _NEST, _GROUP = range(5)
_NIL = (_TEXT, "")


def _text(s):
  return (_TEXT, s)


def _brk(s=" "):
  return (_BRK, s)


def _concat(*docs):
  return (_CONCAT, docs)


def _nest(n, doc):
  return (_NEST, n, doc)


def _group(doc):
  return (_GROUP, doc)


def _join(sep, docs):
  out = []
  for d in docs:
    if out:
      out.append(sep)
    out.append(d)
  return (_CONCAT, tuple(out))


def _fits(doc, width):
  stack = [doc]
  while stack:
    d = stack.pop()
    t = d[0]
    if t == _TEXT or t == _BRK:
      width -= len(d[1])
      if width < 0:
        return False
    elif t == _CONCAT:
      stack.extend(d[1])
    elif t == _NEST:
      stack.append(d[2])
    else:
      stack.append(d[1])
  return True


def format_doc(doc, width=_PP_WIDTH):
  """Lay out a document in ``width`` columns."""
  out = []
  col = 0
  agenda = [(0, False, doc)]
  while agenda:
    indent, flat, d = agenda.pop()
    t = d[0]
    if t == _TEXT or (t == _BRK and flat):
      s = d[1]
      out.append(s)
      nl = s.rfind("\n")
      col = col + len(s) if nl < 0 else len(s) - nl - 1
    elif t == _BRK:
      out.append("\n" + " " * indent)
      col = indent
    elif t == _CONCAT:
      agenda.extend([(indent, flat, c) for c in reversed(d[1])])
    elif t == _NEST:
      agenda.append((indent + d[1], flat, d[2]))
    else:
      agenda.append((indent, flat or _fits(d[1], width - col), d[1]))
  return "".join(out)


def _encode_name(n):
  s = ""
  while True:
    n, r = divmod(n, 26)
    s = chr(ord("a") + r) + s
    if n == 0:
      return s


class _NameContext:
  """Variable names shared by a jaxpr and every jaxpr nested in it (as JAX names them:
  one sequence a, b, ..., z, ba, ... for all of them; names of shared jaxprs are
  skipped)."""

  def __init__(self, var_names=None):
    self.names = dict(var_names) if var_names else {}
    self.shared_jaxprs = {}     # Jaxpr -> name, for jaxprs printed once at the top
    self.shared_names = set()
    self._count = 0

  def _fresh(self):
    while True:
      n = _encode_name(self._count)
      self._count += 1
      if n not in self.shared_names:
        return n

  def var_name(self, v):
    if isinstance(v, DropVar):
      return "_"
    n = self.names.get(v)
    if n is None:
      n = self.names[v] = self._fresh()
    return n

  def name(self, v):
    if type(v) is Literal:
      return repr(v)
    return self.var_name(v)

  def binder(self, v):
    return f"{self.var_name(v)}:{v.aval.str_short(short_dtypes=True)}"

  def suggest_same_var_names(self, for_vars, like_vars):
    """Name each of ``for_vars`` (an inner jaxpr's binders) like the outer atom it is
    bound to, when that is a variable not already used for an earlier one."""
    if len(for_vars) != len(like_vars):
      return
    used = set()
    for f, like in zip(for_vars, like_vars):
      if isinstance(like, Var) and like not in used and isinstance(f, Var) and f not in self.names:
        used.add(like)
        self.names[f] = self.var_name(like)


_ADDRESS = re.compile(r" at 0x([0-9a-fA-F]+)")


def _format_param(v):
  if isinstance(v, np.dtype):
    return v.name
  if isinstance(v, type) and issubclass(v, np.generic):
    return np.dtype(v).name
  if isinstance(v, frozenset):
    return f"frozenset({{{', '.join(repr(e) for e in sorted(v))}}})"
  s = v if isinstance(v, str) else str(v)
  return _ADDRESS.sub(lambda m: " at 0x" + "X" * len(m.group(1)), s)


def _is_jaxprs(v):
  return type(v) is tuple and all(isinstance(e, (Jaxpr, ClosedJaxpr)) for e in v)


def _pp_param(v, ctx):
  if isinstance(v, (Jaxpr, ClosedJaxpr)):
    return _pp_jaxpr(v.jaxpr if isinstance(v, ClosedJaxpr) else v, ctx)
  if _is_jaxprs(v):
    docs = [_pp_jaxpr(e.jaxpr if isinstance(e, ClosedJaxpr) else e, ctx) for e in v]
    return _group(_concat(_nest(2, _concat(_text("("), _brk(""), _join(_brk(), docs))),
                          _brk(""), _text(")")))
  return _text(_format_param(v))


def _pp_vars(vs, ctx, binders=False, sep=""):
  items = [_text(ctx.binder(v) if binders else ctx.name(v)) for v in vs]
  return _nest(2, _group(_join(_concat(_text(sep), _group(_brk())), items)))


def _eqn_param_items(eqn, ctx):
  """(name, value) pairs to print, in order.  A primitive may set ``eqn_printer(eqn,
  ctx)`` (ordered pairs; it may also suggest variable names to ``ctx``) or
  ``param_printer(params)`` (a dict, printed sorted by name)."""
  prim = eqn.primitive
  rule = getattr(prim, "eqn_printer", None)
  if rule is not None:
    return list(rule(eqn, ctx))
  params = eqn.params
  printer = prim.param_printer
  if printer is not None:
    params = printer(params)
  return [(k, params[k]) for k in sorted(params)]


def _pp_eqn(eqn, ctx):
  rule = getattr(eqn.primitive, "pp_eqn_rule", None)   # a whole-equation form (state's get/swap)
  if rule is not None:
    return _text(rule(eqn, ctx))
  items = _eqn_param_items(eqn, ctx)
  lhs = _pp_vars(eqn.outvars, ctx, binders=True)   # named before the params (as JAX)
  if items:
    kv = [_concat(_text(f"{k}="), _pp_param(v, ctx)) for k, v in items]
    params = _group(_concat(_nest(2, _concat(_text("["), _brk(""), _join(_brk(), kv))),
                            _brk(""), _text("]")))
  else:
    params = _NIL
  rhs = _concat(_text(eqn.primitive.name), params, _text(" "), _pp_vars(eqn.invars, ctx))
  if eqn.outvars:
    return _concat(lhs, _text(" = "), rhs)
  return rhs


def _pp_jaxpr_skeleton(jaxpr, ctx):
  consts = _pp_vars(jaxpr.constvars, ctx, binders=True)
  ins = _pp_vars(jaxpr.invars, ctx, binders=True)
  eqns = _join(_brk("; "), [_pp_eqn(e, ctx) for e in jaxpr.eqns])
  outs = _concat(_text("("), _pp_vars(jaxpr.outvars, ctx, sep=","),
                 _text(",)" if len(jaxpr.outvars) == 1 else ")"))
  return _group(_concat(
      _nest(2, _concat(_text("{ lambda "), consts, _text("; "), ins, _text(". let"),
                       _nest(2, _concat(_brk(), eqns)), _brk(), _text("in "), outs)),
      _text(" }")))


def _pp_jaxpr(jaxpr, ctx):
  name = ctx.shared_jaxprs.get(jaxpr)
  if name is not None:
    return _text(name)
  return _pp_jaxpr_skeleton(jaxpr, ctx)


def _jaxprs_in_params(params):
  for v in params.values():
    for e in (v if type(v) is tuple else (v,)):
      if isinstance(e, Jaxpr):
        yield e
      elif isinstance(e, ClosedJaxpr):
        yield e.jaxpr


def _unused_outvar_names(jaxpr):
  """Equation outputs nobody reads print as ``_`` (top-level jaxpr only, as JAX)."""
  names = {}
  used = {v for v in jaxpr.outvars if isinstance(v, Var)}
  for eqn in reversed(jaxpr.eqns):
    for v in eqn.outvars:
      if v not in used:
        names[v] = "_"
    used.update(v for v in eqn.invars if isinstance(v, Var))
  return names


def pp_toplevel_doc(jaxpr):
  """The document of a top-level jaxpr: jaxprs nested more than once (or nested with more
  than 10 equations) are printed first as ``let name = { ... } in`` and referred to by
  name, as JAX does."""
  ctx = _NameContext(_unused_outvar_names(jaxpr))
  counts = {}
  names = {}
  queue = collections.deque([jaxpr])
  while queue:
    j = queue.popleft()
    counts[j] = counts.get(j, 0) + 1
    if j is not jaxpr and len(j.eqns) > 10:
      counts[j] += 1
    for eqn in j.eqns:
      name = eqn.params.get("name")
      printer = eqn.primitive.param_printer   # jaxprs a primitive does not print: skipped
      subs = list(_jaxprs_in_params(printer(eqn.params) if printer else eqn.params))
      queue.extend(subs)
      if isinstance(name, str):
        for sub in subs:
          names.setdefault(sub, name.strip("<>"))
  name_counts = collections.Counter()
  docs = []
  shared = []
  for j, c in counts.items():
    if c == 1:
      continue
    name = names.get(j, "jaxpr")
    n = name_counts[name]
    name_counts[name] += 1
    if n > 0:
      name += str(n)
      name_counts[name] += 1
    ctx.shared_names.add(name)
    ctx.shared_jaxprs[j] = name
    shared.append((name, j))
  for name, j in shared:
    docs.append(_concat(_text(f"let {name} = "), _pp_jaxpr_skeleton(j, ctx), _text(" in"), _brk()))
  docs.append(_pp_jaxpr_skeleton(jaxpr, ctx) if jaxpr not in ctx.shared_jaxprs
              else _pp_jaxpr(jaxpr, ctx))
  return _concat(*docs)


def pp_jaxpr(jaxpr, width=_PP_WIDTH):
  """JAX's text format of a jaxpr (``str(jaxpr)``)."""
  return format_doc(pp_toplevel_doc(jaxpr), width)


def pp_eqn(eqn, ctx=None, width=_PP_WIDTH):
  """One equation in JAX's text format (fresh variable names unless ``ctx`` is given)."""
  return format_doc(_pp_eqn(eqn, ctx or _NameContext()), width)


# --- evaluation -------------------------------------------------------------------------
def eval_jaxpr(jaxpr, consts, *args):
  """Run a jaxpr by binding its equations on the current interpreter."""
  env = {}
  for v, x in zip(jaxpr.constvars, consts):
    env[v] = x
  if len(args) != len(jaxpr.invars):
    raise TypeError(f"eval_jaxpr: expected {len(jaxpr.invars)} arguments, got {len(args)}")
  for v, x in zip(jaxpr.invars, args):
    env[v] = x

  def read(v):
    return literal_value(v) if type(v) is Literal else env[v]

  state = _state
  prev_src = state.source_info
  try:
    for eqn in jaxpr.eqns:
      ins = [read(v) for v in eqn.invars]
      # re-staged equations keep their original source line (error messages, residuals)
      state.source_info = eqn.source_info or prev_src
      out = eqn.primitive.bind(*ins, **eqn.params)
      if eqn.primitive.multiple_results:
        for v, o in zip(eqn.outvars, out):
          env[v] = o
      else:
        env[eqn.outvars[0]] = out
  finally:
    state.source_info = prev_src
  return [read(v) for v in jaxpr.outvars]


_weak_literal_cache = {}
# id -> (weakref, owner) of the 0-d Arrays that stand for host constants in a traced
# program (jnp's promotion of Python/NumPy scalars, values folded from them, literals
# re-bound by eval_jaxpr): JAX's tracers with a Literal value.  The staging interpreter
# that was current when one was made inlines it as a literal (``owner``: a weakref to it;
# None for any); in any other trace -- a nested one it is closed over in -- it is a
# constvar, as JAX's outer tracer would be.  A closed-over eager Array is a constvar.
_host_constants = {}


def _staging_owner():
  """The nearest staging interpreter (``_ANY`` for a partial-evaluation one: the value is
  a literal wherever it is staged), or None."""
  i = _state.interp
  while i is not None and not isinstance(i, StagingInterpreter):
    i = getattr(i, "parent", None)
  return i if i is None or type(i) is StagingInterpreter else _ANY


_ANY = object()


def host_constant(x):
  """Mark the 0-d Array ``x``, made from a host (Python/NumPy) constant, as a literal of
  the trace being staged; returns ``x``.  Nothing while no trace is active (an Array made
  eagerly and closed over stays a constvar, as in JAX)."""
  if _state.interp is not eval_interpreter and not x.aval.shape:
    owner = _staging_owner()
    if owner is not None:
      _mark_host_constant(x, owner)
  return x


def folded_host_constant(out, args):
  """``out``, evaluated now from ``args`` while tracing (constant folding): marked as a
  host constant when every Array among ``args`` is a literal of the current trace (a value
  folded from a closed-over Array stays a constvar).  Returns ``out``."""
  if _state.interp is not eval_interpreter and type(out) is ArrayImpl and not out.aval.shape:
    owner = _staging_owner()
    if owner is not None and all(not isinstance(a, Array) or is_host_constant(a, owner)
                                 for a in args):
      _mark_host_constant(out, owner)
  return out


def is_host_constant(x, interp):
  """Whether the Array ``x`` is a literal of the staging interpreter ``interp``."""
  hit = _host_constants.get(id(x))
  if hit is None or hit[0]() is not x:
    return False
  return hit[1] is None or interp is _ANY or hit[1]() is interp


def _mark_host_constant(x, owner=_ANY):
  key = id(x)
  _host_constants[key] = (weakref.ref(x, lambda _, key=key: _host_constants.pop(key, None)),
                          None if owner is _ANY else weakref.ref(owner))


def literal_value(lit):
  """A literal's value for binding: Python scalars as they are; a NumPy scalar whose aval
  is weakly typed becomes a weak 0-d Array (a NumPy scalar alone would read as strong)."""
  v = lit.val
  if type(v) in dtypes.python_scalar_types or not lit.aval.weak_type:
    return v
  key = (repr(v), lit.aval.dtype)
  hit = _weak_literal_cache.get(key)
  if hit is None:
    hit = ArrayImpl(np.asarray(v, lit.aval.dtype), lit.aval, None, False)
    _mark_host_constant(hit)
    if len(_weak_literal_cache) < 4096:
      _weak_literal_cache[key] = hit
  return hit


def jaxpr_as_fun(closed):
  return lambda *args: eval_jaxpr(closed.jaxpr, closed.consts, *args)


# --- staging: record equations into a jaxpr --------------------------------------------
class StagingTracer(Tracer):
  # the jaxpr variable is ``_var``: ``var`` is the array method (``x.var(0)`` under jit)
  __slots__ = ("_aval", "_var")
  jax_name = "DynamicJaxprTracer"

  def __init__(self, trace, aval, var):
    self._trace = trace
    self._aval = aval
    self._var = var

  @property
  def aval(self):
    return self._aval

  def __repr__(self):
    return f"JitTracer({self._aval})"


class StagingInterpreter(Interpreter):
  """Records each primitive as an equation (jit, make_jaxpr, control-flow bodies)."""

  def __init__(self, parent, debug_info=None):
    self.parent = parent
    self.eqns = []
    self.invars = []
    self.constvars = []
    self.consts = []
    self._const_ids = {}
    self._literal_tracers = {}   # id -> (host constant, its tracer): _literal_tracer
    self.debug_info = debug_info

  def __repr__(self):
    return "DynamicJaxprTrace"

  def new_arg(self, aval):
    v = Var(aval)
    self.invars.append(v)
    return StagingTracer(self, aval, v)

  def to_atom(self, x):
    if isinstance(x, StagingTracer) and x._trace is self:
      return x._var
    t = type(x)
    if t in dtypes.python_scalar_types:
      aval = scalar_aval(x)
      return Literal(x, aval)
    if isinstance(x, Tracer) and x._trace.finished:
      raise_escaped_tracer(x)
    # NumPy scalars, 0-d ndarrays and 0-d Arrays made from host constants during tracing
    # (``host_constant``) inline as literals; any other Array, even 0-d, stays a constvar,
    # as in JAX (equinox's closure conversion counts the consts)
    if isinstance(x, np.generic) or (t is np.ndarray and x.ndim == 0):
      aval = get_aval(x)
      return Literal(np.asarray(x, aval.dtype)[()], aval)
    if t is ArrayImpl and not x.aval.shape:
      hit = _host_constants.get(id(x))
      if hit is not None and hit[0]() is x:
        owner = self if hit[1] is None or type(self) is not StagingInterpreter else hit[1]()
        if owner is self:
          return Literal(x._data()[()], x.aval)
        if owner is not None and not owner.finished:
          # a literal of an enclosing trace closed over here: a tracer of that trace
          return self._const(owner._literal_tracer(x))
    return self._const(x)

  def _literal_tracer(self, x):
    """A tracer of this interpreter for its host constant ``x`` (its atom a literal), as
    JAX's tracer with a Literal value, for a nested trace that closes over ``x``."""
    lits = self._literal_tracers
    hit = lits.get(id(x))
    if hit is None or hit[0] is not x:
      hit = lits[id(x)] = (x, StagingTracer(self, x.aval, Literal(x._data()[()], x.aval)))
    return hit[1]

  def _const(self, x):
    key = id(x)
    v = self._const_ids.get(key)
    if v is None:
      v = Var(get_aval(x))
      self._const_ids[key] = v
      self.constvars.append(v)
      self.consts.append(x)
    return v

  def process_primitive(self, prim, args, params):
    avals = [get_aval(x) for x in args]
    if prim.effectful:
      out, effs = prim.abstract_eval_effects(*avals, **params)
    else:
      out, effs = prim.abstract_eval(*avals, **params), no_effects
    invars = [self.to_atom(x) for x in args]
    src = _state.source_info or user_frame()
    if prim.multiple_results:
      outvars = [Var(a) for a in out]
      self.eqns.append(JaxprEqn(invars, outvars, prim, params, effs, src))
      return [StagingTracer(self, a, v) for a, v in zip(out, outvars)]
    v = Var(out)
    self.eqns.append(JaxprEqn(invars, [v], prim, params, effs, src))
    return StagingTracer(self, out, v)

  def error_context(self, tracer):
    """JAX's provenance text for an error on ``tracer``: the function being traced and the
    arguments the value depends on (or the operations it came from).  Empty when the
    interpreter has no debug info (``debug_info`` needs ``func_src_info``, ``traced_for``
    and ``arg_names``, one per flat argument)."""
    dbg = self.debug_info
    src = getattr(dbg, "func_src_info", None)
    if src is None:
      return ""
    origin = f"The error occurred while tracing the function {src} for {dbg.traced_for}. "
    var = getattr(tracer, "_var", None)
    if var is None:
      return origin
    active = {var}
    for eqn in reversed(self.eqns):
      if any(v in active for v in eqn.outvars):
        active.difference_update(eqn.outvars)
        active.update(v for v in eqn.invars if type(v) is not Literal)
    positions = [i for i, v in enumerate(self.invars) if v in active]
    if positions:
      names = dbg.arg_names
      args = [names[i] if names is not None and i < len(names) else "unknown" for i in positions]
      if len(args) == 1:
        what = f"the argument {args[0]}"
      elif len(args) == 2:
        what = f"the arguments {args[0]} and {args[1]}"
      else:
        what = f"the arguments {', '.join(args[:-1])}, and {args[-1]}"
      s = "s" if len(args) > 1 else ""
      return origin + ("This concrete value was not available in Python because it depends "
                       f"on the value{s} of {what}.")
    constvars = active.intersection(self.constvars)
    eqns = [e for e in self.eqns
            if any(type(v) is Literal or v in constvars for v in e.invars)]
    if not eqns:
      return origin
    lines = [f"  operation {pp_eqn(e)}\n    from line {summarize_source(e.source_info)}"
             for e in eqns[:5]]
    origin += ("This value became a tracer due to JAX operations on these lines:\n\n"
               + "\n\n".join(lines))
    if len(eqns) > 5:
      origin += "\n\n(Additional originating lines are not shown.)"
    return origin

  def to_jaxpr(self, outs):
    outvars = [self.to_atom(x) for x in outs]
    effs = set()
    for e in self.eqns:
      if e.effects:
        effs.update(e.effects)
    jaxpr = Jaxpr(self.constvars, self.invars, outvars, self.eqns, frozenset(effs),
                  debug_info=self.debug_info)
    return jaxpr, list(self.consts)


_PYJAX_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
# File-name prefixes whose frames are never an equation's source (pyjax itself; libraries
# add theirs with ``source_info_util.register_exclusion``).
_source_exclusions = (_PYJAX_DIR,)


def user_frame():
  """(code, lasti) of the innermost frame outside pyjax (and outside registered library
  paths): an equation's source info."""
  f = sys._getframe(2)
  while f is not None and f.f_code.co_filename.startswith(_source_exclusions):
    f = f.f_back
  return None if f is None else (f.f_code, f.f_lasti)


def summarize_source(source_info):
  """``file:line:column (function)`` of a source info from ``user_frame``."""
  if source_info is None:
    return "unknown"
  code, lasti = source_info
  line, col = code.co_firstlineno, None
  try:
    for i, pos in enumerate(code.co_positions()):
      if i == lasti // 2:
        line, col = pos[0], pos[2]
        break
  except AttributeError:  # Python < 3.11
    pass
  name = getattr(code, "co_qualname", code.co_name)
  where = f"{code.co_filename}:{line}" + (f":{col}" if col else "")
  return f"{where} ({name})"


def _tracer_kind(x):
  """JAX's class name for a tracer (error messages)."""
  name = getattr(type(x), "jax_name", None)
  if callable(name):
    return name(x)
  return name or type(x).__name__


def raise_escaped_tracer(x):
  """JAX's UnexpectedTracerError for a tracer used after its transformation finished:
  the function being traced when it leaked and, for staged values, the line where the
  leaked value was created."""
  trace = x._trace
  msg = [f"Encountered an unexpected tracer. A function transformed by JAX had a side "
         f"effect, allowing for a reference to an intermediate value with type "
         f"{x.aval.str_short(short_dtypes=False)} wrapped in a {_tracer_kind(x)} to escape "
         "the scope of the transformation.\nJAX transformations require that functions "
         "explicitly return their outputs, and disallow saving intermediate values to global "
         "state."]
  dbg = getattr(trace, "debug_info", None)
  src = getattr(dbg, "func_src_info", None)
  if src is not None:
    msg.append(f"The function being traced when the value leaked was {src} traced for "
               f"{dbg.traced_for}.")
    var = getattr(x, "_var", None)
    created = ""
    for eqn in getattr(trace, "eqns", ()):
      if var is not None and var in eqn.outvars:
        created = summarize_source(eqn.source_info)
        break
    msg.append("------------------------------\n"
               f"The leaked intermediate value was created on line {created}. \n"
               "------------------------------")
  raise errors.UnexpectedTracerError("\n".join(msg))


def trace_to_jaxpr(fun, in_avals, debug_info=None):
  """Stage ``fun`` (taking and returning flat lists of arrays) into a ClosedJaxpr, on
  the current interpreter.  The one tracing entry point: ``staging.trace_flat`` (jit,
  make_jaxpr) and the control-flow bodies build on it.  Values ``fun`` closes over that
  are tracers of enclosing transformations are left among the ClosedJaxpr's consts."""
  interp = StagingInterpreter(_state.interp, debug_info)
  args = [interp.new_arg(a) for a in in_avals]
  try:
    with set_interpreter(interp):
      outs = fun(*args)
    jaxpr, consts = interp.to_jaxpr(outs)
  finally:
    interp.finished = True
  return ClosedJaxpr(jaxpr, consts)


def concrete_or_error(convert, x, context=""):
  """Return ``convert(x)`` for a concrete value, raising ConcretizationTypeError for tracers."""
  if isinstance(x, Tracer):
    raise errors.ConcretizationTypeError(x, context)
  return convert(x) if convert is not None else x
