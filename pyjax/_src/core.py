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

import contextlib
import itertools
import threading

import numpy as np

from pyjax._src import dtypes
from pyjax._src import errors
from pyjax._src.avals import ShapedArray, scalar_aval
from pyjax._src.runtime import dispatch
from pyjax._src.runtime.array import Array, ArrayImpl


# --- the current interpreter -----------------------------------------------------------
class _TraceState(threading.local):
  def __init__(self):
    self.interp = eval_interpreter


def current_interpreter():
  return _state.interp


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

  def __init__(self, name):
    self.name = name
    self._abstract_eval = None
    self.param_printer = None   # optional: params -> dict of what the jaxpr text shows

  def __repr__(self):
    return self.name

  def bind(self, *args, **params):
    return _state.interp.process_primitive(self, args, params)

  def def_abstract_eval(self, rule):
    self._abstract_eval = rule
    return rule

  def def_impl(self, impl):
    self.impl = impl
    return impl

  def abstract_eval(self, *avals, **params):
    return self._abstract_eval(*avals, **params)


class Interpreter:
  """Base of all interpreters.  ``parent`` is the interpreter this one binds on."""
  parent = None
  finished = False

  def process_primitive(self, prim, args, params):
    raise NotImplementedError(type(self).__name__)


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
  if isinstance(x, Tracer):
    return x.aval
  if t in dtypes.python_scalar_types:
    return scalar_aval(x)
  if isinstance(x, (np.ndarray, np.generic)):
    return ShapedArray(np.shape(x), dtypes.canonicalize_dtype(x.dtype), False)
  if isinstance(x, (bool, int, float, complex)):
    return scalar_aval(x)
  aval = getattr(x, "aval", None)
  if isinstance(aval, ShapedArray):
    return aval
  if hasattr(x, "__jax_array__"):
    return get_aval(x.__jax_array__())
  raise TypeError(f"Value {x!r} of type {type(x)} is not a valid JAX type")


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

  def __int__(self):
    raise errors.ConcretizationTypeError(self, "The problem arose with the `int` function. " + self._context())

  def __float__(self):
    raise errors.ConcretizationTypeError(self, "The problem arose with the `float` function. " + self._context())

  def __complex__(self):
    raise errors.ConcretizationTypeError(self, "The problem arose with the `complex` function. " + self._context())

  def __index__(self):
    raise errors.TracerIntegerConversionError(self, self._context())

  def __array__(self, *args, **kw):
    raise errors.TracerArrayConversionError(self)

  def item(self, *args):
    raise errors.ConcretizationTypeError(self, "The problem arose with the `item` method. " + self._context())

  def tolist(self):
    raise errors.ConcretizationTypeError(self, "The problem arose with the `tolist` method. " + self._context())

  def block_until_ready(self):
    return self

  def __repr__(self):
    return f"Traced<{self.aval.str_short()}>with<{self._trace!r}>"

  def __str__(self):
    return self.__repr__()

  def __copy__(self):
    return self

  def __deepcopy__(self, memo):
    return self

  def __reduce__(self):
    raise errors.ConcretizationTypeError(self, "Tracers cannot be pickled.")


# --- the jaxpr IR -----------------------------------------------------------------------
class Var:
  __slots__ = ("aval", "_count")
  _counter = itertools.count()

  def __init__(self, aval):
    self.aval = aval
    self._count = next(Var._counter)

  def __repr__(self):
    return f"Var({self._count}:{self.aval.str_short()})"


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
    return f"{_format_literal(self.val)}:{self.aval.str_short()}"


def _format_literal(v):
  if isinstance(v, (np.ndarray, np.generic)):
    v = v.item() if np.ndim(v) == 0 else v
  if isinstance(v, bool):
    return str(v)
  if isinstance(v, float):
    return repr(v)
  return str(v)


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
    return pp_eqn(self, _NameContext()).strip()


class Jaxpr:
  __slots__ = ("constvars", "invars", "outvars", "eqns", "effects", "debug_info")

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

  def __str__(self):
    return pp_jaxpr(self)

  def pretty_print(self, **kw):
    return pp_jaxpr(self)

  __repr__ = __str__


class ClosedJaxpr:
  """A jaxpr with values for its constvars."""
  __slots__ = ("jaxpr", "consts")

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

  def __str__(self):
    return pp_jaxpr(self.jaxpr)

  def pretty_print(self, **kw):
    return pp_jaxpr(self.jaxpr)

  __repr__ = __str__


# --- printing (JAX's text format) -------------------------------------------------------
_PP_WIDTH = 80


def _encode_name(n):
  s = ""
  while True:
    n, r = divmod(n, 26)
    s = chr(ord("a") + r) + s
    if n == 0:
      return s


class _NameContext:
  def __init__(self):
    self.names = {}

  def name(self, v):
    if isinstance(v, Literal):
      return repr(v)
    if isinstance(v, DropVar):
      return "_"
    n = self.names.get(v)
    if n is None:
      n = self.names[v] = _encode_name(len(self.names))
    return n

  def binder(self, v):
    if isinstance(v, DropVar):
      return f"_:{v.aval.str_short()}"
    return f"{self.name(v)}:{v.aval.str_short()}"


def _format_param(v, ctx, indent):
  if isinstance(v, (Jaxpr, ClosedJaxpr)):
    j = v.jaxpr if isinstance(v, ClosedJaxpr) else v
    return pp_jaxpr(j, ctx, indent)
  if isinstance(v, np.dtype):
    return v.name
  if isinstance(v, type) and issubclass(v, np.generic):
    return np.dtype(v).name
  if isinstance(v, tuple) and v and all(isinstance(e, (Jaxpr, ClosedJaxpr)) for e in v):
    return "(\n" + "".join(" " * (indent + 2) + _format_param(e, ctx, indent + 2) + "\n" for e in v) + " " * indent + ")"
  return str(v) if not isinstance(v, str) else v


def pp_eqn(eqn, ctx, indent=4):
  lhs = " ".join(ctx.binder(v) for v in eqn.outvars)
  rhs_args = " ".join(ctx.name(v) for v in eqn.invars)
  params = eqn.params
  printer = eqn.primitive.param_printer
  if printer is not None:
    params = printer(params)
  items = [(k, params[k]) for k in sorted(params)]
  pad = " " * indent
  if not items:
    return f"{pad}{lhs} = {eqn.primitive.name} {rhs_args}"
  inner = [f"{k}={_format_param(v, ctx, indent + 2)}" for k, v in items]
  head = f"{pad}{lhs} = {eqn.primitive.name}[{' '.join(inner)}]"
  # JAX keeps params on one line when the closing bracket fits in 80 columns
  if len(head) <= _PP_WIDTH and "\n" not in head:
    return f"{head} {rhs_args}"
  body = "".join(f"{pad}  {p}\n" for p in inner)
  return f"{pad}{lhs} = {eqn.primitive.name}[\n{body}{pad}] {rhs_args}"


def pp_jaxpr(jaxpr, ctx=None, indent=0):
  """JAX's text format.  A jaxpr with at most one equation that fits in 80 columns is
  printed on one line; otherwise one equation per line."""
  ctx = ctx or _NameContext()
  consts = " ".join(ctx.binder(v) for v in jaxpr.constvars)
  ins = " ".join(ctx.binder(v) for v in jaxpr.invars)
  head = "{ lambda " + (consts + "; " if consts else "; ") + ins + ". let"
  eqn_lines = [pp_eqn(e, ctx, indent + 4) for e in jaxpr.eqns]
  outs = ", ".join(ctx.name(v) for v in jaxpr.outvars)
  if len(jaxpr.outvars) == 1:
    outs += ","
  tail = f"in ({outs}) }}"
  if len(eqn_lines) <= 1:
    body = eqn_lines[0].strip() if eqn_lines else ""
    one = f"{head} {body} {tail}"
    if "\n" not in one and len(one) + indent <= _PP_WIDTH:
      return one
  return "\n".join([head, *eqn_lines, " " * (indent + 2) + tail])


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
    return v.val if type(v) is Literal else env[v]

  for eqn in jaxpr.eqns:
    ins = [read(v) for v in eqn.invars]
    out = eqn.primitive.bind(*ins, **eqn.params)
    if eqn.primitive.multiple_results:
      for v, o in zip(eqn.outvars, out):
        env[v] = o
    else:
      env[eqn.outvars[0]] = out
  return [read(v) for v in jaxpr.outvars]


def jaxpr_as_fun(closed):
  return lambda *args: eval_jaxpr(closed.jaxpr, closed.consts, *args)


# --- staging: record equations into a jaxpr --------------------------------------------
class StagingTracer(Tracer):
  __slots__ = ("_aval", "var")

  def __init__(self, trace, aval, var):
    self._trace = trace
    self._aval = aval
    self.var = var

  @property
  def aval(self):
    return self._aval


class StagingInterpreter(Interpreter):
  """Records each primitive as an equation (jit, make_jaxpr, control-flow bodies)."""

  def __init__(self, parent, debug_info=None):
    self.parent = parent
    self.eqns = []
    self.invars = []
    self.constvars = []
    self.consts = []
    self._const_ids = {}
    self.debug_info = debug_info

  def __repr__(self):
    return "DynamicJaxprTrace"

  def new_arg(self, aval):
    v = Var(aval)
    self.invars.append(v)
    return StagingTracer(self, aval, v)

  def to_atom(self, x):
    if isinstance(x, StagingTracer) and x._trace is self:
      return x.var
    t = type(x)
    if t in dtypes.python_scalar_types:
      aval = scalar_aval(x)
      return Literal(x, aval)
    if isinstance(x, Tracer) and x._trace.finished:
      raise_escaped_tracer(x)
    if isinstance(x, np.generic) or (t is np.ndarray and x.ndim == 0) or (t is ArrayImpl and not x.aval.shape):
      aval = get_aval(x)
      val = np.asarray(x, aval.dtype) if t is not ArrayImpl else x._data()
      return Literal(val[()], aval)
    return self._const(x)

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
    out = prim.abstract_eval(*avals, **params)
    invars = [self.to_atom(x) for x in args]
    if prim.multiple_results:
      outvars = [Var(a) for a in out]
      self.eqns.append(JaxprEqn(invars, outvars, prim, params))
      return [StagingTracer(self, a, v) for a, v in zip(out, outvars)]
    v = Var(out)
    self.eqns.append(JaxprEqn(invars, [v], prim, params))
    return StagingTracer(self, out, v)

  def to_jaxpr(self, outs):
    outvars = [self.to_atom(x) for x in outs]
    jaxpr = Jaxpr(self.constvars, self.invars, outvars, self.eqns, debug_info=self.debug_info)
    return jaxpr, list(self.consts)


def raise_escaped_tracer(x):
  raise errors.UnexpectedTracerError(
      f"Encountered an unexpected tracer. A function transformed by JAX had a side effect, "
      f"allowing for a reference to an intermediate value with type {x.aval.str_short()} "
      f"wrapped in a {type(x).__name__} to escape the scope of the transformation.\n"
      "JAX transformations require that functions explicitly return their outputs, and "
      "disallow saving intermediate values to global state.")


def trace_to_jaxpr(fun, in_avals, debug_info=None):
  """Stage ``fun`` (taking and returning flat lists of arrays) into a ClosedJaxpr."""
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
