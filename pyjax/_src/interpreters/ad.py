"""Automatic differentiation as interpreters: forward mode (JVP), linearize (JVP with the
tangent computation staged into a jaxpr: online partial evaluation) and transposition of
linear jaxprs (the backward pass).  Reverse mode = linearize + transpose, as in JAX.

Rule tables (plain dicts keyed by primitive, filled next to each primitive):

* ``primitive_jvps[p](primals, tangents, **params) -> (primal_out, tangent_out)``; a
  tangent is an array or a symbolic ``Zero(aval)``.  Rules run with the interpreter's
  *rule interpreter* current: for ``jvp`` that is the parent (everything computes
  eagerly or on the enclosing transformation); for ``linearize`` it is a split
  interpreter that sends every operation touching a tangent to the tangent jaxpr being
  recorded and every other operation (the primal computation, residuals) to the parent.
* ``primitive_transposes[p](ct, *args, **params) -> [ct_arg or None per arg]``: ``args``
  holds ``UndefinedPrimal(aval)`` for the linear inputs and values for the others.
* ``interpreter_jvps[p](interp, primals, tangents, **params)``: for higher-order
  primitives (custom_jvp_call, custom_vjp_call, jit) whose rule needs the interpreter.

Integer and boolean values have ``float0`` tangents, always kept symbolic (``Zero``).
"""
from __future__ import annotations

import weakref

import numpy as np

from pyjax._src import core, dtypes
from pyjax._src.avals import ShapedArray

primitive_jvps = {}
primitive_transposes = {}
interpreter_jvps = {}

float0 = dtypes.float0


# --- tangent types and symbolic zeros ---------------------------------------------------
def tangent_dtype(d):
  """The tangent dtype of a primal dtype: float0 for integers and booleans."""
  if d == dtypes.bool_ or dtypes.is_int(d) or d == float0:
    return float0
  return d


def tangent_aval(aval):
  if type(aval) is not ShapedArray and hasattr(aval, "to_tangent_aval"):
    return aval.to_tangent_aval()   # a user (hijax) type names its tangent type
  return ShapedArray(aval.shape, tangent_dtype(aval.dtype), aval.weak_type)


def is_float0(d):
  return d == float0


def has_float0_tangent(aval):
  d = getattr(aval, "dtype", None)
  if d is None:   # a user (hijax) type: differentiable, its tangent type says how
    return False
  return d == dtypes.bool_ or dtypes.is_int(d) or d == float0


class Zero:
  """A symbolic zero tangent (or cotangent) of a given aval."""
  __slots__ = ("aval",)

  def __init__(self, aval):
    self.aval = aval

  @staticmethod
  def from_primal_value(x):
    return Zero(tangent_aval(core.get_aval(x)))

  shape = property(lambda self: self.aval.shape)
  dtype = property(lambda self: self.aval.dtype)

  def __repr__(self):
    return f"Zero({_aval_str(self.aval)})"


def _aval_str(aval):
  if aval.dtype == float0:
    return f"float0[{','.join(str(d) for d in aval.shape)}]"
  return aval.str_short(short_dtypes=True)


class UndefinedPrimal:
  """Marks a linear input of an equation during transposition."""
  __slots__ = ("aval",)

  def __init__(self, aval):
    self.aval = aval

  def __repr__(self):
    return f"UndefinedPrimal({_aval_str(self.aval)})"


def is_undefined_primal(x):
  return type(x) is UndefinedPrimal


_scalar_cache = {}


def scalar_const(val, dtype, weak_type=False):
  """A concrete 0-d Array (computed eagerly, so staged jaxprs see a literal)."""
  key = (repr(val), dtype, weak_type)
  hit = _scalar_cache.get(key)
  if hit is None:
    from pyjax._src.lax import elementwise as ew
    with core.set_interpreter(core.eval_interpreter):
      hit = ew.convert_element_type_p.bind(np.array(val, dtype), new_dtype=dtype,
                                           weak_type=bool(weak_type), sharding=None)
    core._mark_host_constant(hit)   # a literal wherever it is staged
    if len(_scalar_cache) < 4096:
      _scalar_cache[key] = hit
  return hit


def const_like(x, val):
  """The scalar ``val`` with ``x``'s dtype and weak type."""
  aval = core.get_aval(x)
  return scalar_const(val, aval.dtype, aval.weak_type)


def zeros_like_aval(aval):
  """Zeros of ``aval`` (a NumPy float0 array for float0), bound on the current
  interpreter."""
  if aval.dtype == float0:
    return np.zeros(aval.shape, float0)
  z = scalar_const(0, aval.dtype, aval.weak_type)
  if not aval.shape:
    return z
  from pyjax._src.lax import shapes
  return shapes.broadcast_in_dim_p.bind(z, shape=tuple(aval.shape), broadcast_dimensions=(),
                                        sharding=None)


def zeros_like(x):
  return zeros_like_aval(core.get_aval(x))


def instantiate_zeros(t):
  """``t`` itself, or real zeros for a symbolic ``Zero``."""
  if type(t) is Zero:
    return zeros_like_aval(t.aval)
  return t


def broadcast_to_shape(t, shape):
  """Broadcast ``t`` (rank 0, or equal rank with size-1 dimensions) to ``shape``."""
  s = core.get_aval(t).shape
  if s == tuple(shape):
    return t
  from pyjax._src.lax import shapes
  if not s:
    dims = ()
  else:
    dims = tuple(range(len(s)))
  return shapes.broadcast_in_dim_p.bind(t, shape=tuple(shape), broadcast_dimensions=dims,
                                        sharding=None)


def unbroadcast(aval, ct):
  """Sum a cotangent of a broadcast result back to the shape of ``aval`` (lax broadcasts
  rank-0 operands and size-1 dimensions)."""
  if type(ct) is Zero:
    return Zero(tangent_aval(aval))
  cs = core.get_aval(ct).shape
  if cs == aval.shape:
    return ct
  from pyjax._src.lax import reductions, shapes
  if not aval.shape:
    return reductions.reduce_sum_p.bind(ct, axes=tuple(range(len(cs))), out_sharding=None)
  axes = tuple(i for i, (a, c) in enumerate(zip(aval.shape, cs)) if a == 1 and c != 1)
  out = reductions.reduce_sum_p.bind(ct, axes=axes, out_sharding=None)
  return shapes.reshape_p.bind(out, new_sizes=tuple(aval.shape), dimensions=None, sharding=None)


# --- add_any: adding tangents / accumulating cotangents ---------------------------------
add_any_p = core.Primitive("add_any")
add_any_p.arg_names = ("x", "y")


@add_any_p.def_abstract_eval
def _add_any_abstract(x, y):
  xs, ys = x.shape, y.shape
  if xs == ys or len(xs) != len(ys):
    shape = xs if len(xs) >= len(ys) else ys
  else:   # size-1 dimensions broadcast (vmap adds them to unbatched operands)
    shape = tuple(b if a == 1 else a for a, b in zip(xs, ys))
  return ShapedArray(shape, x.dtype, x.weak_type and y.weak_type)


@add_any_p.def_impl
def _add_any_impl(x, y):
  if core.get_aval(x).dtype == float0:
    return x
  from pyjax._src.lax import elementwise as ew
  return ew.add_p.bind(x, y)


def _add_any_jvp(primals, tangents):
  x, y = primals
  tx, ty = tangents
  return add_any_p.bind(x, y), add_tangents(tx, ty)


def _add_any_transpose(ct, x, y):
  return [ct, ct]


primitive_jvps[add_any_p] = _add_any_jvp
primitive_transposes[add_any_p] = _add_any_transpose


def add_tangents(x, y):
  if type(x) is Zero:
    return y
  if type(y) is Zero:
    return x
  return add_any_p.bind(x, y)


# --- stop_gradient ----------------------------------------------------------------------
stop_gradient_p = core.Primitive("stop_gradient")
stop_gradient_p.arg_names = ("x",)
stop_gradient_p.def_abstract_eval(lambda x: x)


@stop_gradient_p.def_impl
def _stop_gradient_impl(x):
  from pyjax._src.runtime.array import ArrayImpl
  if type(x) is ArrayImpl:
    return x
  aval = core.get_aval(x)
  from pyjax._src.lax import elementwise as ew
  return ew.convert_element_type_p.bind(x, new_dtype=aval.dtype, weak_type=aval.weak_type,
                                        sharding=None)


def _stop_gradient_jvp(primals, tangents):
  x, = primals
  return stop_gradient_p.bind(x), Zero.from_primal_value(x)


primitive_jvps[stop_gradient_p] = _stop_gradient_jvp


# --- rule helpers (used by the lax family modules) --------------------------------------
def _out_tangent_zero(out):
  if isinstance(out, (list, tuple)):
    return [Zero.from_primal_value(o) for o in out]
  return Zero.from_primal_value(out)


def defjvp(prim, *jvp_rules):
  """One rule per argument: ``rule(g, *primals, **params)`` gives the contribution of
  that argument's tangent ``g`` (None: not differentiable in that argument)."""
  def rule(primals, tangents, **params):
    ans = prim.bind(*primals, **params)
    return ans, _sum_contribs(ans, [
        (r(t, *primals, **params) if r is not None and type(t) is not Zero else None)
        for r, t in zip(jvp_rules, tangents)])
  primitive_jvps[prim] = rule
  return rule


def defjvp2(prim, *jvp_rules):
  """Like ``defjvp`` but each rule also gets the primal output: ``rule(g, ans, *primals)``."""
  def rule(primals, tangents, **params):
    ans = prim.bind(*primals, **params)
    return ans, _sum_contribs(ans, [
        (r(t, ans, *primals, **params) if r is not None and type(t) is not Zero else None)
        for r, t in zip(jvp_rules, tangents)])
  primitive_jvps[prim] = rule
  return rule


def _sum_contribs(ans, contribs):
  aval = core.get_aval(ans)
  out = None
  for c in contribs:
    if c is None or type(c) is Zero:
      continue
    c = broadcast_to_shape(c, aval.shape)
    out = c if out is None else add_any_p.bind(out, c)
  return Zero(tangent_aval(aval)) if out is None else out


def defjvp_zero(prim):
  """A primitive whose output does not depend differentiably on its inputs."""
  def rule(primals, tangents, **params):
    ans = prim.bind(*primals, **params)
    return ans, _out_tangent_zero(ans)
  primitive_jvps[prim] = rule
  return rule


def deflinear(prim, transpose_rule):
  """A primitive linear in all its (array) arguments.  ``transpose_rule(ct, **params)``
  returns one cotangent per argument."""
  def jvp(primals, tangents, **params):
    ans = prim.bind(*primals, **params)
    if all(type(t) is Zero for t in tangents):
      return ans, _out_tangent_zero(ans)
    return ans, prim.bind(*[instantiate_zeros(t) for t in tangents], **params)
  primitive_jvps[prim] = jvp
  primitive_transposes[prim] = lambda ct, *args, **params: transpose_rule(ct, **params)


def deflinear2(prim, transpose_rule):
  """Like ``deflinear`` but ``transpose_rule(ct, *args, **params)`` also sees the
  arguments (UndefinedPrimal for linear ones)."""
  def jvp(primals, tangents, **params):
    ans = prim.bind(*primals, **params)
    if all(type(t) is Zero for t in tangents):
      return ans, _out_tangent_zero(ans)
    return ans, prim.bind(*[instantiate_zeros(t) for t in tangents], **params)
  primitive_jvps[prim] = jvp
  primitive_transposes[prim] = transpose_rule


# --- the JVP interpreter ----------------------------------------------------------------
class JVPTracer(core.Tracer):
  """A primal value with its tangent (a parent-level value, a staged tangent, or Zero)."""
  __slots__ = ("primal", "tangent")

  @staticmethod
  def jax_name(x):   # JAX's class names, for error messages
    return "JVPTracer" if x._trace.tangent_interp is None else "LinearizeTracer"

  def __init__(self, trace, primal, tangent):
    self._trace = trace
    self.primal = primal
    self.tangent = tangent

  @property
  def aval(self):
    return core.get_aval(self.primal)

  def __repr__(self):
    if self._trace.tangent_interp is None:
      t = self.tangent
      ts = repr(t) if type(t) is not Zero else f"Zero({_aval_str(t.aval)})"
      return f"JVPTracer(primal={self.primal!r}, tangent={ts})"
    return (f"GradTracer(primal={self.primal!r}, "
            f"typeof(tangent)={_aval_str(tangent_aval(self.aval))})")


class _SplitInterpreter(core.Interpreter):
  """Where JVP rules run during linearize: operations touching a staged tangent are
  recorded into the tangent jaxpr, all others are bound on the parent."""

  def __init__(self, parent, tangent_interp):
    self.parent = parent
    self.tangent_interp = tangent_interp

  def process_primitive(self, prim, args, params):
    ti = self.tangent_interp
    lin = [isinstance(x, core.StagingTracer) and x._trace is ti for x in args]
    if any(lin):
      if prim.name == "custom_jvp_call":
        # a custom_jvp function of a tangent (a JVP rule calling one): the tangent jaxpr is
        # linear and is never differentiated again, so the rule goes and the function is
        # inlined (as JAX's partial evaluation does), leaving equations that transpose
        cj = params["call_jaxpr"]
        with core.set_interpreter(self):
          return core.eval_jaxpr(cj.jaxpr, cj.consts, *args)
      if prim.name == "jit" and not all(lin):
        outs = _split_known_outputs(self.parent, ti, args, lin, params)
        if outs is not None:
          return outs
      return ti.process_primitive(prim, args, params)
    with core.set_interpreter(self.parent):
      return prim.bind(*args, **params)

  def __repr__(self):
    return "LinearizeTrace"


def _split_known_outputs(parent, ti, args, lin, params):
  """A ``jit`` equation reaching the tangent jaxpr with some inputs known (a JVP rule's own
  ``jax.jvp`` of a jitted function, inside linearize: the jit of primal and tangent takes
  the known primal values): its outputs that depend on no staged tangent are computed by
  a jit of only what they need, bound on the parent, so they are known values, not linear
  ones (as JAX's partial evaluation of a jit splits it).  None: nothing to split."""
  from pyjax._src.interpreters import partial_eval as pe
  closed = params["jaxpr"]
  j = closed.jaxpr
  if j.effects:
    return None
  unknown = {v for v, u in zip(j.invars, lin) if u}
  for eqn in j.eqns:
    if any(type(v) is not core.Literal and v in unknown for v in eqn.invars):
      unknown.update(eqn.outvars)
  dep = [type(v) is not core.Literal and v in unknown for v in j.outvars]
  if all(dep):
    return None
  known_j, used = pe.dce_jaxpr(j, [not d for d in dep])
  from pyjax._src.interpreters import staging
  known = core.ClosedJaxpr(known_j, closed.consts)
  with core.set_interpreter(parent):
    known_outs = iter(staging.jit_p.bind(
        *[a for a, u in zip(args, used) if u],
        **_jit_params_like(staging, params, known, params.get("name", "f"))))
  outs = ti.process_primitive(staging.jit_p, args, params) if any(dep) else None
  return [o if d else next(known_outs) for o, d in zip(outs or dep, dep)]


class JVPInterpreter(core.Interpreter):
  """Forward-mode differentiation.  ``tangent_interp`` is None for ``jvp`` (tangents are
  values of the parent) or the StagingInterpreter recording the tangent computation for
  ``linearize``.  ``forward`` is False only when linearizing for reverse mode (where
  custom_vjp functions are allowed)."""

  def __init__(self, parent, tangent_interp=None, forward=True):
    self.parent = parent
    self.tangent_interp = tangent_interp
    self.forward = forward
    self.rule_interp = parent if tangent_interp is None else _SplitInterpreter(parent, tangent_interp)

  def __repr__(self):
    return "JVPTrace" if self.tangent_interp is None else "LinearizeTrace"

  def to_primal_tangent(self, x):
    if isinstance(x, JVPTracer) and x._trace is self:
      return x.primal, x.tangent
    return x, None

  def process_primitive(self, prim, args, params):
    primals = []
    tangents = []
    nonzero = False
    for x in args:
      if isinstance(x, JVPTracer) and x._trace is self:
        primals.append(x.primal)
        t = x.tangent
        tangents.append(t)
        if type(t) is not Zero:
          nonzero = True
      else:
        primals.append(x)
        tangents.append(None)
    if not nonzero:
      with core.set_interpreter(self.parent):
        return prim.bind(*primals, **params)
    tangents = [Zero.from_primal_value(p) if t is None else t
                for p, t in zip(primals, tangents)]
    special = interpreter_jvps.get(prim)
    if special is not None:
      out_p, out_t = special(self, primals, tangents, **params)
    else:
      rule = primitive_jvps.get(prim)
      if rule is None:
        raise NotImplementedError(f"Differentiation rule for '{prim.name}' not implemented")
      with core.set_interpreter(self.rule_interp):   # (tuples, as JAX passes them)
        out_p, out_t = rule(tuple(primals), tuple(tangents), **params)
    if prim.multiple_results:
      return [self.new_tracer(p, _array_tangent(t, prim)) for p, t in zip(out_p, out_t)]
    return self.new_tracer(out_p, _array_tangent(out_t, prim))

  def new_tracer(self, primal, tangent):
    aval = core.get_aval(primal)
    if has_float0_tangent(aval):
      return primal  # integer/boolean results carry no tangent: they leave as values
    if tangent is None or type(tangent) is Zero:
      # A symbolically-zero tangent leaves as the plain primal, as in JAX: results of a
      # jit/custom_jvp call that do not depend on a differentiated input are not tracers
      # of this interpreter (equinox's filter_jvp tells them apart that way).
      return primal
    return JVPTracer(self, primal, tangent)


def _array_tangent(t, prim):
  """The tangent output of one of pyjax's own primitives that its rule passed through from
  a Python-scalar input tangent (``x + 1``'s) as an Array: JAX's jnp functions are jitted,
  so their tangents leave as Arrays.  A user primitive's rule (equinox's) keeps what it
  returns, as in JAX."""
  if type(t) in dtypes.python_scalar_types:
    rule = primitive_jvps.get(prim) or interpreter_jvps.get(prim)
    if getattr(rule, "__module__", "").startswith("pyjax."):
      aval = core.get_aval(t)
      return core.host_constant(core.ArrayImpl(np.asarray(t, aval.dtype), aval, None, False))
  return t


# --- forward mode -----------------------------------------------------------------------
def jvp_flat(fun, primals, tangents):
  """Run ``fun`` (flat list -> flat list) on JVP tracers.  ``tangents`` may hold
  ``Zero``s.  Returns (primal outputs, tangent outputs) with symbolic Zeros kept."""
  parent = core.current_interpreter()
  interp = JVPInterpreter(parent)
  ins = [interp.new_tracer(p, t) if type(t) is not Zero else p
         for p, t in zip(primals, tangents)]
  try:
    with core.set_interpreter(interp):
      outs = fun(*ins)
    return _lower_outputs(interp, outs)
  finally:
    interp.finished = True


def _lower_outputs(interp, outs):
  out_p, out_t = [], []
  for o in outs:
    p, t = interp.to_primal_tangent(o)
    out_p.append(p)
    out_t.append(Zero.from_primal_value(p) if t is None else t)
  return out_p, out_t


def lower_value(interp, x):
  """The primal value of ``x`` if it is a tracer of ``interp`` (for auxiliary outputs)."""
  if isinstance(x, JVPTracer) and x._trace is interp:
    return x.primal
  return x


# --- linearize --------------------------------------------------------------------------
class LinearFunction:
  """The linear map of a linearized function: a jaxpr from the non-float0 input
  tangents to the non-zero output tangents, with residuals as its constants."""

  def __init__(self, jaxpr, consts, in_avals, in_mask, out_avals, out_mask):
    self.jaxpr = jaxpr
    self.consts = consts
    self.in_avals = in_avals      # tangent avals of every input
    self.in_mask = in_mask        # which inputs are jaxpr inputs
    self.out_avals = out_avals    # tangent avals of every output
    self.out_mask = out_mask      # which outputs are jaxpr outputs

  def __call__(self, tangents):
    """Evaluate the linear map on the current interpreter (tangents may be Zero)."""
    args = [instantiate_zeros(t) for t, m in zip(tangents, self.in_mask) if m]
    outs = iter(core.eval_jaxpr(self.jaxpr, self.consts, *args))
    return [next(outs) if m else zeros_like_aval(a) for a, m in zip(self.out_avals, self.out_mask)]

  def transpose(self, cts):
    """Cotangents of every input (Zero where none flows) from cotangents of every output
    (which may be Zero)."""
    lin_cts = [ct for ct, m in zip(cts, self.out_mask) if m]
    res = iter(backward_pass(self.jaxpr, self.consts, lin_cts))
    return [next(res) if m else Zero(a) for a, m in zip(self.in_avals, self.in_mask)]


def linearize_flat(fun, primals, forward=False, has_aux=False):
  """Linearize ``fun`` (flat list -> flat list, or (flat list, aux) with ``has_aux``) at
  ``primals``: the primal computation runs now on the current interpreter, the tangent
  computation is staged.  Returns (primal outputs, LinearFunction[, aux])."""
  parent = core.current_interpreter()
  ti = core.StagingInterpreter(parent)
  interp = JVPInterpreter(parent, ti, forward)
  in_avals = [tangent_aval(core.get_aval(p)) for p in primals]
  in_mask = [a.dtype != float0 for a in in_avals]
  ins = []
  for p, a, m in zip(primals, in_avals, in_mask):
    ins.append(JVPTracer(interp, p, ti.new_arg(a)) if m else p)
  try:
    with core.set_interpreter(interp):
      res = fun(*ins)
    if has_aux:
      outs, aux = res
    else:
      outs, aux = res, None
    out_p, out_t = _lower_outputs(interp, outs)
    out_avals = [tangent_aval(core.get_aval(p)) for p in out_p]
    out_mask = [type(t) is not Zero and a.dtype != float0 for t, a in zip(out_t, out_avals)]
    jaxpr, consts = ti.to_jaxpr([t for t, m in zip(out_t, out_mask) if m])
    if has_aux:
      from pyjax._src import tree_util
      aux = tree_util.tree_map(lambda x: lower_value(interp, x), aux)
  finally:
    interp.finished = True
    ti.finished = True
  lin = LinearFunction(jaxpr, consts, in_avals, in_mask, out_avals, out_mask)
  if has_aux:
    return out_p, lin, aux
  return out_p, lin


# --- transposition ----------------------------------------------------------------------
literal_value = core.literal_value  # a literal's value with its aval's weak type


def backward_pass(jaxpr, consts, cts_out, args=None):
  """Transpose a jaxpr that is linear in some of its inputs.  ``args`` has one entry per
  input: ``UndefinedPrimal`` for the linear ones, values for the others (default: every
  input is linear).  Constvars (``consts``) are residuals.  ``cts_out`` holds one
  cotangent (or Zero) per output; returns one per input (Zero for non-linear ones)."""
  primal_env = {}
  for v, c in zip(jaxpr.constvars, consts):
    primal_env[v] = c
  if args is None:
    linear = set(jaxpr.invars)
  else:
    linear = set()
    for v, a in zip(jaxpr.invars, args):
      if type(a) is UndefinedPrimal:
        linear.add(v)
      else:
        primal_env[v] = a

  def read_primal(v):
    return literal_value(v) if type(v) is core.Literal else primal_env[v]

  lin_eqns = []
  for eqn in jaxpr.eqns:
    in_lin = [type(v) is not core.Literal and v in linear for v in eqn.invars]
    if any(in_lin):
      out_lin = eqn_linear_outputs(eqn, in_lin)
      if any(out_lin):
        lin_eqns.append(eqn)
      linear.update(v for v, m in zip(eqn.outvars, out_lin) if m)
      if not all(out_lin):  # outputs of the residuals alone: evaluate them forward
        vals = [None if m else read_primal(v) for v, m in zip(eqn.invars, in_lin)]
        outs = partial_forward_rules[eqn.primitive][1](eqn.params, in_lin, out_lin, vals)
        for v, o in zip([v for v, m in zip(eqn.outvars, out_lin) if not m], outs):
          primal_env[v] = o
    else:  # a non-linear equation (constants): evaluate it forward
      outs = eqn.primitive.bind(*[read_primal(v) for v in eqn.invars], **eqn.params)
      if not eqn.primitive.multiple_results:
        outs = [outs]
      for v, o in zip(eqn.outvars, outs):
        primal_env[v] = o

  ct_env = {}

  def write_ct(v, ct):
    if ct is None or type(ct) is Zero or type(v) is core.Literal or v not in linear:
      return
    prev = ct_env.get(v)
    ct_env[v] = ct if prev is None else add_any_p.bind(prev, ct)

  for v, ct in zip(jaxpr.outvars, cts_out):
    write_ct(v, ct)

  for eqn in reversed(lin_eqns):
    cts = [ct_env.pop(v, None) for v in eqn.outvars]
    if all(c is None for c in cts):
      continue
    cts = [Zero(tangent_aval(v.aval)) if c is None else c for v, c in zip(eqn.outvars, cts)]
    eargs = [UndefinedPrimal(v.aval) if type(v) is not core.Literal and v in linear
             else _transpose_operand(v) if type(v) is core.Literal
             else read_primal(v) for v in eqn.invars]
    rule = primitive_transposes.get(eqn.primitive)
    if rule is None:
      raise NotImplementedError(f"Transpose rule (for reverse-mode differentiation) for "
                                f"'{eqn.primitive.name}' not implemented")
    ct_arg = cts if eqn.primitive.multiple_results else cts[0]
    cts_in = rule(ct_arg, *eargs, **eqn.params)
    for v, a, ct in zip(eqn.invars, eargs, cts_in):
      if type(a) is UndefinedPrimal:
        write_ct(v, ct)
  return [ct_env.get(v, Zero(tangent_aval(v.aval))) if v in linear else Zero(tangent_aval(v.aval))
          for v in jaxpr.invars]


# A higher-order equation (jit, cond) met in a jaxpr being transposed may mix residual and
# linear computations: a custom_jvp rule run under linearize calls ``jvp`` on the outer
# tangents, so its ``jit``/``cond`` equations are staged whole into the linear jaxpr with
# both the inner primal outputs (functions of residuals only) and the inner tangents.  JAX
# splits such equations when it partially evaluates; the backward pass here does it instead:
# ``partial_forward_rules[prim] = (out_mask, forward)`` where ``out_mask(params, in_lin)``
# says which outputs depend on the linear inputs (None: all of them) and
# ``forward(params, in_lin, out_lin, vals)`` computes the other outputs from the residual
# inputs (``vals`` has None at the linear positions; see ``residual_operands``).
partial_forward_rules = {}


def eqn_linear_outputs(eqn, in_lin):
  """One bool per output of ``eqn``: whether it depends on the inputs marked in ``in_lin``."""
  rule = partial_forward_rules.get(eqn.primitive)
  mask = rule[0](eqn.params, in_lin) if rule is not None and not all(in_lin) else None
  return [True] * len(eqn.outvars) if mask is None else mask


_dependence_cache = weakref.WeakKeyDictionary()   # jaxpr -> {input mask: output mask}


def jaxpr_linear_outputs(jaxpr, in_lin):
  """One bool per output of ``jaxpr``: whether it depends on the inputs marked ``in_lin``
  (through jit and cond equations output by output)."""
  key = tuple(in_lin)
  try:
    table = _dependence_cache.setdefault(jaxpr, {})
  except TypeError:
    table = {}
  hit = table.get(key)
  if hit is not None:
    return hit
  lin = {v for v, m in zip(jaxpr.invars, in_lin) if m}
  for eqn in jaxpr.eqns:
    m = [type(v) is not core.Literal and v in lin for v in eqn.invars]
    if any(m):
      lin.update(v for v, o in zip(eqn.outvars, eqn_linear_outputs(eqn, m)) if o)
  out = [type(v) is not core.Literal and v in lin for v in jaxpr.outvars]
  table[key] = out
  return out


def residual_operands(vals, used, invars):
  """The operands of a forward part: ``vals`` where ``used``; a used linear operand (None
  in ``vals``: an inner equation kept whole reads it, but the outputs kept do not depend
  on it) is fed zeros."""
  return [zeros_like_aval(v.aval) if x is None else x
          for x, u, v in zip(vals, used, invars) if u]


def _jit_out_mask(params, in_lin):
  closed = params["jaxpr"]
  if closed.jaxpr.effects:
    return None
  return jaxpr_linear_outputs(closed.jaxpr, in_lin)


def _jit_forward_part(params, in_lin, out_lin, vals):
  from pyjax._src.interpreters import staging
  from pyjax._src.lax.control_flow import common
  closed = params["jaxpr"]

  def build():
    j, used = common.dce_jaxpr(closed.jaxpr, [not m for m in out_lin])
    kept = set(j.constvars)
    consts = [c for v, c in zip(closed.jaxpr.constvars, closed.consts) if v in kept]
    return (core.ClosedJaxpr(j, consts), used), True

  new_closed, used = memo(closed, ("forward_part", tuple(in_lin), tuple(out_lin)), build)
  ins = residual_operands(vals, used, closed.jaxpr.invars)
  return staging.jit_p.bind(*ins, **_jit_params_like(staging, params, new_closed,
                                                    params.get("name", "f")))


def _transpose_operand(lit):
  """A literal operand of a transpose rule, as an Array (with an ``aval``, as JAX's typed
  literals have: equinox's rules read ``x.aval.shape``)."""
  x = literal_value(lit)
  if not isinstance(x, np.generic):
    return x
  from pyjax._src.runtime.array import ArrayImpl
  return core.host_constant(ArrayImpl(np.asarray(x, lit.aval.dtype), lit.aval, None, False))


# --- closing over tracers of a differentiation ------------------------------------------
def closure_convert_jaxpr(closed):
  """A ClosedJaxpr whose constants become leading inputs: (jaxpr, consts)."""
  j = closed.jaxpr
  new = core.Jaxpr([], list(j.constvars) + list(j.invars), j.outvars, j.eqns, j.effects,
                   j.debug_info)
  return core.ClosedJaxpr(new, []), list(closed.consts)


def _raise_custom_vjp_jvp():
  raise TypeError("can't apply forward-mode autodiff (jvp) to a custom_vjp function.")


# --- jit ----------------------------------------------------------------------------------
# A ``jit`` equation under differentiation stays a jit: forward mode stages the JVP of its
# jaxpr into a new jit; linearize splits it into a jit of the primal computation (which
# also returns the residuals) and a jit of the linear tangent computation; transposing a
# linear jit stages the backward pass of its jaxpr into a new jit.
def _jit_params_like(staging, params, closed, name):
  dev = None
  for sh in params.get("in_shardings") or ():
    d = getattr(sh, "_device", None)
    if d is not None:
      dev = d
      break
  return staging.jit_params(closed, name, (False,) * len(closed.jaxpr.invars),
                            params.get("keep_unused", False), params.get("inline", False), dev)


_rule_caches = weakref.WeakKeyDictionary()   # jaxpr -> {key: derived jaxprs}


def memo(jaxpr, key, build):
  """``build()`` -> (result, cacheable), remembered per (``jaxpr`` object, ``key``) while
  the jaxpr lives.  Differentiating the same jaxpr the same way again gives the same
  derived jaxpr objects, so they print once (``let``-bound), as in JAX."""
  key = (key, core._trace_state_key())
  try:
    table = _rule_caches.get(jaxpr)
    if table is None:
      table = _rule_caches[jaxpr] = {}
    hit = table.get(key)
  except TypeError:
    return build()[0]
  if hit is None:
    hit, ok = build()
    if ok:
      table[key] = hit
  return hit


def _jit_jvp(interp, primals, tangents, *, jaxpr, **params):
  from pyjax._src.interpreters import staging
  if interp.tangent_interp is not None:
    return _jit_linearize(staging, interp, primals, tangents, jaxpr, params)
  closed = jaxpr
  name = params.get("name", "f")
  nz = [type(t) is not Zero for t in tangents]
  n = len(primals)
  nz_ts = [t for t, m in zip(tangents, nz) if m]
  in_avals = [core.get_aval(p) for p in primals] + [core.get_aval(t) for t in nz_ts]

  def build():
    mask_cell = []

    def jvp_fun(*args):
      ps = args[:n]
      it = iter(args[n:])
      ts = [next(it) if m else Zero(tangent_aval(core.get_aval(p))) for p, m in zip(ps, nz)]
      out_p, out_t = jvp_flat(lambda *xs: core.eval_jaxpr(closed.jaxpr, closed.consts, *xs),
                              list(ps), ts)
      mask = [type(t) is not Zero for t in out_t]
      mask_cell.append(mask)
      return list(out_p) + [t for t, m in zip(out_t, mask) if m]

    with core.set_interpreter(interp.parent):
      new_closed, tconsts = staging.trace_flat(jvp_fun, in_avals)
    return (new_closed, tconsts, mask_cell[-1]), not tconsts

  new_closed, tconsts, mask = memo(closed, ("jvp", tuple(nz), tuple(in_avals)), build)
  with core.set_interpreter(interp.parent):
    outs = staging.jit_p.bind(*tconsts, *primals, *nz_ts,
                              **_jit_params_like(staging, params, new_closed, name))
  n_out = len(closed.jaxpr.outvars)
  it = iter(outs[n_out:])
  out_t = [next(it) if m else Zero(tangent_aval(a)) for m, a in zip(mask, closed.out_avals)]
  return list(outs[:n_out]), out_t


class _LinearizedJit:
  """A jit equation split for linearize: the primal jit (returning the residuals that are
  not inputs) and the linear jit of the tangents."""
  __slots__ = ("known", "tconsts", "fwd", "lin_closed", "in_mask", "out_mask", "out_avals",
               "has_out")


def _jit_linearize(staging, interp, primals, tangents, closed, params):
  name = params.get("name", "f")
  nz = [type(t) is not Zero for t in tangents]
  p_avals = [core.get_aval(p) for p in primals]

  def build():
    cell = []

    def known(*ps):
      def inner(*lin_args):  # only inputs with nonzero tangents are linearized
        it = iter(lin_args)
        return core.eval_jaxpr(closed.jaxpr, closed.consts,
                               *[next(it) if m else p for p, m in zip(ps, nz)])
      out_p, lin = linearize_flat(inner, [p for p, m in zip(ps, nz) if m],
                                  forward=interp.forward)
      # residuals that are inputs are forwarded (not returned by the primal jit)
      pos = {id(p): i for i, p in enumerate(ps)}
      res = [c for c in lin.consts if isinstance(c, core.Tracer)]
      fwd = [pos.get(id(c)) for c in res]
      cell.append((lin, fwd))
      return list(out_p) + [c for c, f in zip(res, fwd) if f is None]

    with core.set_interpreter(interp.parent):
      known_closed, tconsts = staging.trace_flat(known, p_avals)
    lin, fwd = cell[-1]
    j = lin.jaxpr
    res_vars = [v for v, c in zip(j.constvars, lin.consts) if isinstance(c, core.Tracer)]
    const_pairs = [(v, c) for v, c in zip(j.constvars, lin.consts)
                   if not isinstance(c, core.Tracer)]
    r = _LinearizedJit()
    r.known, r.tconsts, r.fwd = known_closed, tconsts, fwd
    r.lin_closed = core.ClosedJaxpr(
        core.Jaxpr([v for v, _ in const_pairs], res_vars + list(j.invars), j.outvars, j.eqns),
        [c for _, c in const_pairs])
    r.in_mask, r.out_mask, r.out_avals = lin.in_mask, lin.out_mask, lin.out_avals
    r.has_out = bool(j.outvars)
    return r, not tconsts

  r = memo(closed, ("linearize", tuple(nz), interp.forward, tuple(p_avals)), build)
  with core.set_interpreter(interp.parent):
    outs = staging.jit_p.bind(*r.tconsts, *primals,
                              **_jit_params_like(staging, params, r.known, name))
  n_out = len(closed.jaxpr.outvars)
  out_p = list(outs[:n_out])
  it_res = iter(outs[n_out:])
  res = [next(it_res) if f is None else primals[f] for f in r.fwd]
  with core.set_interpreter(interp.rule_interp):
    t_in = [t for t, m in zip([t for t in tangents if type(t) is not Zero], r.in_mask) if m]
    t_outs = []
    if r.has_out:
      t_outs = staging.jit_p.bind(
          *res, *t_in, **_jit_params_like(staging, params, r.lin_closed, name))
  it = iter(t_outs)
  out_t = [next(it) if m else Zero(a) for m, a in zip(r.out_mask, r.out_avals)]
  return out_p, out_t


def _jit_transpose(cts, *args, jaxpr, **params):
  from pyjax._src.interpreters import staging
  closed = jaxpr
  name = params.get("name", "f")
  lin_mask = [type(a) is UndefinedPrimal for a in args]
  res = [a for a in args if type(a) is not UndefinedPrimal]
  ct_nz = [type(c) is not Zero for c in cts]
  nz_cts = [c for c, m in zip(cts, ct_nz) if m]
  in_avals = [core.get_aval(x) for x in res] + [core.get_aval(x) for x in nz_cts]

  def build():
    def bwd(*xs):
      r = iter(xs[:len(res)])
      c = iter(xs[len(res):])
      full_cts = [next(c) if m else Zero(tangent_aval(a))
                  for m, a in zip(ct_nz, closed.out_avals)]
      full_args = [a if type(a) is UndefinedPrimal else next(r) for a in args]
      cts_in = backward_pass(closed.jaxpr, closed.consts, full_cts, full_args)
      return [instantiate_zeros(ct) for ct, m in zip(cts_in, lin_mask) if m]
    new_closed, tconsts = staging.trace_flat(bwd, in_avals)
    # inputs the backward pass does not read are dropped (as JAX prunes them)
    j = new_closed.jaxpr
    used = {v for e in j.eqns for v in e.invars if type(v) is not core.Literal}
    used.update(v for v in j.outvars if type(v) is not core.Literal)
    keep = [v in used for v in j.invars]
    keep[:len(tconsts)] = [True] * len(tconsts)
    if not all(keep):
      new_closed = core.ClosedJaxpr(
          core.Jaxpr(j.constvars, [v for v, k in zip(j.invars, keep) if k], j.outvars, j.eqns,
                     j.effects, j.debug_info), new_closed.consts)
    return (new_closed, tconsts, keep[len(tconsts):]), not tconsts

  new_closed, tconsts, keep = memo(
      closed, ("transpose", tuple(lin_mask), tuple(ct_nz), tuple(in_avals),
               tuple(a.aval for a in args if type(a) is UndefinedPrimal)), build)
  ins = [x for x, k in zip(list(res) + nz_cts, keep) if k]
  outs = staging.jit_p.bind(*tconsts, *ins,
                            **_jit_params_like(staging, params, new_closed, name))
  it = iter(outs)
  return [next(it) if m else None for m in lin_mask]


def _register_jit_rules():
  try:
    from pyjax._src.interpreters import staging
  except ImportError:  # jit not available
    return
  interpreter_jvps[staging.jit_p] = _jit_jvp
  primitive_transposes[staging.jit_p] = _jit_transpose
  partial_forward_rules[staging.jit_p] = (_jit_out_mask, _jit_forward_part)
  JVPInterpreter.handles_jit_p = True
  _SplitInterpreter.handles_jit_p = True


_register_jit_rules()


# --- JAX's names for rule helpers (jax.interpreters.ad) ---------------------------------
add_jaxvals_p = add_any_p
JVPTrace = JVPInterpreter


def add_jaxvals(x, y):
  """``x + y`` for tangents/cotangents (the ``add_any`` primitive)."""
  return add_any_p.bind(x, y)


def get_primitive_transpose(p):
  """The transpose rule of ``p``; NotImplementedError (JAX's message) when it has none."""
  try:
    return primitive_transposes[p]
  except KeyError:
    raise NotImplementedError(
        f"Transpose rule (for reverse-mode differentiation) for '{p}' not implemented"
    ) from None


def defbilinear(prim, lhs_rule, rhs_rule):
  """A primitive linear in each of its two arguments separately (like ``mul``/``dot``).
  ``lhs_rule(ct, x, y, **params)`` is the cotangent of ``x`` when ``x`` is the linear
  input (an ``UndefinedPrimal``), ``rhs_rule(ct, x, y, **params)`` that of ``y``."""
  defjvp(prim, lambda g, x, y, **kw: prim.bind(g, y, **kw),
         lambda g, x, y, **kw: prim.bind(x, g, **kw))

  def transpose(ct, x, y, **kw):
    if is_undefined_primal(x) == is_undefined_primal(y):
      raise ValueError(f"bilinear transpose of {prim}: exactly one argument must be linear")
    if type(ct) is Zero:
      return [None, None]
    if is_undefined_primal(x):
      return [lhs_rule(ct, x, y, **kw), None]
    return [None, rhs_rule(ct, x, y, **kw)]

  primitive_transposes[prim] = transpose
