"""Lowering registration (the part of JAX's ``jax.interpreters.mlir`` that pyjax can
honour).

pyjax's backends do not emit MLIR: a backend runs a primitive through the implementation
registered under its name or, for primitives defined outside pyjax, through the
primitive's Python ``impl`` -- eagerly, inside ``jit`` on the NumPy tier, and from natively
compiled programs (which call back into Python for such equations).  So:

* ``lower_fun(fun, multiple_results=True)`` returns a rule that *is* ``fun``: a function
  of the primitive's (array) inputs and params written with ``jax.numpy`` / ``lax``;
* ``register_lowering(prim, rule, platform=None)`` records the rule; when ``rule`` came
  from ``lower_fun`` and ``prim`` has no ``impl`` yet, the rule becomes its
  implementation (so a primitive defined only by its lowering runs everywhere).

When ``jit`` compiles a program, equations of primitives with a ``lower_fun`` rule are
replaced by the rule's equations (``expand_lowered``), as JAX compiles them through their
lowering, so the CPU compiler can fuse them and keep loops around them in native code.

Differences from JAX: a rule that emits MLIR operations (takes a ``LoweringRuleContext``)
is recorded but cannot run; a primitive with only such a rule fails when executed.  The
MLIR builder API (``ir``, ``ir_constant``, ``aval_to_ir_type``, ...) does not exist.
"""
from __future__ import annotations

_lowerings = {}                  # prim -> rule (platform independent)
_platform_specific_lowerings = {}  # platform -> {prim -> rule}


class LoweredFun:
  """A lowering rule given as a function of arrays (what ``lower_fun`` returns)."""
  __slots__ = ("fun", "multiple_results")

  def __init__(self, fun, multiple_results):
    self.fun = fun
    self.multiple_results = multiple_results

  def __call__(self, *args, **params):
    return self.fun(*args, **params)

  def __repr__(self):
    return f"lower_fun({getattr(self.fun, '__name__', self.fun)!r})"

  def as_impl(self, prim):
    """The rule as ``prim``'s implementation (its outputs adapted to ``prim``'s arity)."""
    fun, multi = self.fun, self.multiple_results

    def impl(*args, **params):
      out = fun(*args, **params)
      if prim.multiple_results and not multi:
        return [out]
      if multi and not prim.multiple_results:
        (out,) = out
        return out
      return list(out) if prim.multiple_results else out
    impl.__name__ = f"{prim.name}_lowered_impl"
    return impl


def lower_fun(fun, multiple_results=True):
  """A lowering rule computing the primitive with ``fun`` (``jax.numpy``/``lax`` code on
  the primitive's inputs, keyword params)."""
  return LoweredFun(fun, multiple_results)


def register_lowering(prim, rule, platform=None, **kwargs):
  """Record ``rule`` as ``prim``'s lowering (for ``platform``, or every platform).  A
  ``lower_fun`` rule becomes the implementation of a primitive that has none; on another
  platform than the CPU it is only recorded."""
  del kwargs
  platforms = (platform,) if isinstance(platform, str) or platform is None else tuple(platform)
  for p in platforms:
    if p is None:
      _lowerings[prim] = rule
    else:
      _platform_specific_lowerings.setdefault(p, {})[prim] = rule
  applies = platform is None or "cpu" in platforms
  if applies and isinstance(rule, LoweredFun) and prim.impl is None:
    prim.def_impl(rule.as_impl(prim))
  return rule


def _cpu_rule(prim):
  """``prim``'s ``lower_fun`` rule for the CPU (platform-specific first), or None."""
  rule = _platform_specific_lowerings.get("cpu", {}).get(prim)
  if rule is None:
    rule = _lowerings.get(prim)
  return rule if isinstance(rule, LoweredFun) else None


def expand_lowered(closed):
  """``closed`` (a ClosedJaxpr) with every effect-free equation of a primitive that has a
  ``lower_fun`` lowering rule replaced by the equations of that rule, traced on the
  equation's avals, in nested jaxprs too (``while``/``cond``/``scan`` bodies, ...).

  This is what ``jit`` compiles, as JAX compiles such a primitive through its lowering:
  the CPU compiler sees ordinary primitives (e.g. equinox's ``unvmap_any`` becomes a
  ``reduce_or``, ``nonbatchable`` disappears) and keeps loops containing them in native
  code instead of running them as NumPy steps.  Returns ``closed`` itself when there is
  nothing to expand."""
  if not _lowerings and not _platform_specific_lowerings.get("cpu"):
    return closed
  from pyjax._src import core
  new = _expand_jaxpr(core, closed.jaxpr, list(closed.consts))
  if new is None:
    return closed
  jaxpr, consts = new
  return core.ClosedJaxpr(jaxpr, consts)


def _expand_param(core, v):
  """The param ``v`` with expanded jaxprs, or None when unchanged."""
  if isinstance(v, core.ClosedJaxpr):
    new = _expand_jaxpr(core, v.jaxpr, list(v.consts))
    return None if new is None else core.ClosedJaxpr(*new)
  if isinstance(v, core.Jaxpr):
    new = _expand_jaxpr(core, v, None)
    return None if new is None else new[0]
  if isinstance(v, (tuple, list)) and any(isinstance(x, (core.ClosedJaxpr, core.Jaxpr))
                                          for x in v):
    items = [_expand_param(core, x) for x in v]
    if all(x is None for x in items):
      return None
    return type(v)(x if n is None else n for x, n in zip(v, items))
  return None


def _trace_rule(core, rule, prim, eqn, depth):
  impl = rule.as_impl(prim)
  params = dict(eqn.params)

  def flat(*args):
    out = impl(*args, **params)
    return list(out) if prim.multiple_results else [out]
  try:
    sub = core.trace_to_jaxpr(flat, [v.aval for v in eqn.invars])
  except Exception:  # noqa: BLE001 -- a rule that cannot be traced stays a call
    return None
  outs = sub.jaxpr.outvars
  if sub.jaxpr.effects or any(e.effects for e in sub.jaxpr.eqns):
    return None   # effects stay behind the primitive (the jaxpr's effect set is kept)
  if len(outs) != len(eqn.outvars) or any(
      getattr(o.aval, "shape", None) != getattr(v.aval, "shape", None) or
      getattr(o.aval, "dtype", None) != getattr(v.aval, "dtype", None)
      for o, v in zip(outs, eqn.outvars)):
    return None
  if depth < 16:  # the rule's own equations may use lowered primitives too
    again = _expand_jaxpr(core, sub.jaxpr, list(sub.consts), depth + 1)
    if again is not None:
      sub = core.ClosedJaxpr(*again)
  return sub


def _expand_jaxpr(core, jaxpr, consts, depth=0):
  """(jaxpr, consts) with lowered primitives expanded, or None when unchanged.  ``consts``
  None: an open jaxpr, where only expansions without constants are made."""
  subst = {}
  eqns = []
  constvars = list(jaxpr.constvars)
  consts = None if consts is None else list(consts)
  changed = False

  def read(a):
    return subst.get(a, a) if isinstance(a, core.Var) else a
  for eqn in jaxpr.eqns:
    invars = [read(a) for a in eqn.invars]
    if any(a is not b for a, b in zip(invars, eqn.invars)):
      eqn = eqn.replace(invars=invars)
      changed = True
    rule = None if eqn.effects else _cpu_rule(eqn.primitive)
    sub = _trace_rule(core, rule, eqn.primitive, eqn, depth) if rule is not None else None
    if sub is not None and sub.consts and consts is None:
      sub = None
    if sub is not None:
      inner = sub.jaxpr
      env = dict(zip(inner.invars, eqn.invars))
      for cv, c in zip(inner.constvars, sub.consts):
        constvars.append(cv)
        consts.append(c)
      for e in inner.eqns:
        eqns.append(e.replace(invars=[env.get(a, a) if isinstance(a, core.Var) else a
                                      for a in e.invars]))
      for o, r in zip(eqn.outvars, inner.outvars):
        if not isinstance(o, core.DropVar):
          subst[o] = env.get(r, r) if isinstance(r, core.Var) else r
      changed = True
      continue
    new_params = None
    for k, v in eqn.params.items():
      nv = _expand_param(core, v)
      if nv is not None:
        new_params = dict(eqn.params) if new_params is None else new_params
        new_params[k] = nv
    if new_params is not None:
      eqn = eqn.replace(params=new_params)
      changed = True
    eqns.append(eqn)
  if not changed:
    return None
  outvars = [read(a) for a in jaxpr.outvars]
  return jaxpr.replace(constvars=constvars, outvars=outvars, eqns=eqns), consts
