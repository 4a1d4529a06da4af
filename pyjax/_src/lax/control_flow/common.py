"""Helpers shared by the control-flow primitives (cond, while, scan).

* Tracing: ``trace_callable`` stages a Python callable on abstract arguments into a
  ``ClosedJaxpr`` whose constants (concrete arrays and tracers of enclosing
  transformations alike) are *leading inputs*, as JAX's control-flow primitives carry
  them; the constants are returned to be passed as operands.  Traced jaxprs are cached
  per function (held weakly) and signature (input structure, avals incl. weak types,
  ``config.trace_state()``), so a body is traced once per signature -- unless it closes
  over tracers, whose jaxprs are never cached.
* Jaxpr surgery: forwarding analysis, pruning outputs, moving binders, dead-code
  elimination (used to print jaxprs as JAX does: forwarded outputs are pruned, loop-
  invariant carries become constants).
* Differentiation of closed jaxprs: ``jvp_jaxpr`` and ``linearize_jaxpr`` (primal part
  with residual outputs + a callable that stages the tangent part), used by the JVP
  rules of every control-flow primitive.
* Type checks with JAX's messages (``check_branch_outputs``, ``check_carry_type``).
"""
from __future__ import annotations

import weakref

from pyjax._src import core
from pyjax._src import tree_util
from pyjax._src.config import config
from pyjax._src.interpreters import ad
from pyjax._src.interpreters import staging

Zero = ad.Zero


# --- tracing ---------------------------------------------------------------------------
_trace_cache = weakref.WeakKeyDictionary()   # fun -> {key: (closed, consts, out_tree)}
_strong_cache = {}                          # callables that cannot be weakly referenced
_MAX_PER_FUN = 32


def _fun_cache(fun):
  try:
    c = _trace_cache.get(fun)
    if c is None:
      c = _trace_cache[fun] = {}
    return c
  except TypeError:   # not weakly referenceable (builtins) or unhashable
    try:
      c = _strong_cache.get(fun)
      if c is None:
        if len(_strong_cache) > 256:
          _strong_cache.clear()
        c = _strong_cache[fun] = {}
      return c
    except TypeError:
      return None


def debug_info(traced_for, fun, args):
  """Staging debug info of ``fun`` called on ``args`` (names its arguments in tracer
  errors as JAX does)."""
  try:
    names = staging.arg_names_of(fun, args, {})
  except Exception:  # noqa: BLE001  -- names are best effort
    names = None
  return staging.DebugInfo(traced_for, staging.fun_source_info(fun), names,
                           staging.fun_name(fun))


def trace_callable(fun, in_tree, in_avals, traced_for, args_for_names=None):
  """Stage ``fun(*in_tree.unflatten(leaves))`` on ``in_avals``.

  Returns ``(closed, consts, out_tree)``: ``closed`` has no constants of its own (its
  first ``len(consts)`` inputs take ``consts``).  Cached per (fun, in_tree, avals,
  trace state) unless ``consts`` holds tracers."""
  key = (in_tree, tuple(in_avals), traced_for, config.trace_state())
  cache = _fun_cache(fun)
  if cache is not None:
    hit = cache.get(key)
    if hit is not None:
      return hit
  args = (args_for_names if args_for_names is not None
          else in_tree.unflatten(list(in_avals)))
  override = getattr(fun, "_pyjax_debug", None)
  dbg = override(args) if override is not None else debug_info(traced_for, fun, args)
  box = []

  def flat_fun(*leaves):
    out = fun(*in_tree.unflatten(leaves))
    out_leaves, out_tree = tree_util.tree_flatten(out)
    box.append(out_tree)
    return out_leaves

  closed = core.trace_to_jaxpr(flat_fun, in_avals, dbg)
  jaxpr, consts = closed.jaxpr, closed.consts
  jaxpr = core.Jaxpr([], list(jaxpr.constvars) + list(jaxpr.invars), jaxpr.outvars,
                     jaxpr.eqns, jaxpr.effects, dbg)
  res = (core.ClosedJaxpr(jaxpr, []), list(consts), box[-1])
  if cache is not None and not any(isinstance(c, core.Tracer) for c in consts):
    if len(cache) >= _MAX_PER_FUN:
      cache.clear()
    cache[key] = res
  return res


def trace_flat(fn, in_avals):
  """Stage a flat function (list -> list) on the current interpreter into a ClosedJaxpr
  whose constants are concrete; closed-over tracers become leading inputs, returned
  as the second result (pass them first)."""
  return staging.trace_flat(fn, list(in_avals))


def eager(fn, *args):
  """``fn(*args)`` evaluated now when no argument is a tracer (so a jaxpr shows a
  literal, as JAX's conversions of concrete values do)."""
  if any(isinstance(a, core.Tracer) for a in args):
    return fn(*args)
  with core.set_interpreter(core.eval_interpreter):
    out = fn(*args)
  return core.folded_host_constant(out, args)


def as_array(x):
  """``x`` as a pyjax value usable as a primitive output (Python/NumPy scalars and
  arrays become concrete Arrays with their weak type)."""
  if isinstance(x, core.Tracer) or type(x).__name__ == "ArrayImpl":
    return x
  from pyjax._src.lax import elementwise as ew
  aval = core.get_aval(x)
  with core.set_interpreter(core.eval_interpreter):
    out = ew.convert_element_type_p.bind(x, new_dtype=aval.dtype,
                                         weak_type=aval.weak_type, sharding=None)
  return core.folded_host_constant(out, (x,))


# --- jaxpr surgery ---------------------------------------------------------------------
def is_literal(v):
  return type(v) is core.Literal


def jaxpr_forwarding(jaxpr):
  """For each output: the index of the input it is (unchanged), else None."""
  idx = {v: i for i, v in enumerate(jaxpr.invars)}
  return [None if is_literal(v) else idx.get(v) for v in jaxpr.outvars]


def dce_jaxpr(jaxpr, used_outputs, instantiate=False):
  """Drop unused outputs and the equations only they need.  Returns (jaxpr, used
  inputs); inputs are kept where used or where ``instantiate`` says so."""
  if isinstance(instantiate, bool):
    instantiate = [instantiate] * len(jaxpr.invars)
  outvars = [v for v, u in zip(jaxpr.outvars, used_outputs) if u]
  live = {v for v in outvars if not is_literal(v)}
  eqns = []
  for eqn in reversed(jaxpr.eqns):
    if eqn.effects or any(v in live for v in eqn.outvars):
      eqns.append(eqn)
      live.update(v for v in eqn.invars if not is_literal(v))
  eqns.reverse()
  used_in = [v in live or inst for v, inst in zip(jaxpr.invars, instantiate)]
  invars = [v for v, u in zip(jaxpr.invars, used_in) if u]
  constvars = [v for v in jaxpr.constvars if v in live]
  new = core.Jaxpr(constvars, invars, outvars, eqns, jaxpr.effects, jaxpr.debug_info)
  return new, used_in


def prune_outputs(closed, keep):
  """``closed`` with only the outputs where ``keep`` (dead equations dropped)."""
  if all(keep):
    return closed
  j = closed.jaxpr
  new, _ = dce_jaxpr(j, keep, instantiate=True)
  kept = set(new.constvars)
  consts = [c for v, c in zip(j.constvars, closed.consts) if v in kept]
  return core.ClosedJaxpr(new, consts)


def move_binders_to_front(closed, to_move):
  """Reorder inputs: those where ``to_move`` first (in order), then the others."""
  j = closed.jaxpr
  invars = ([v for v, m in zip(j.invars, to_move) if m]
            + [v for v, m in zip(j.invars, to_move) if not m])
  return core.ClosedJaxpr(core.Jaxpr(j.constvars, invars, j.outvars, j.eqns, j.effects,
                                     j.debug_info), closed.consts)


def pad_inputs(closed, left_avals, n_keep, right_avals):
  """Fresh unused inputs ``left_avals`` before the first ``n_keep`` inputs and
  ``right_avals`` after them."""
  j = closed.jaxpr
  invars = ([core.Var(a) for a in left_avals] + list(j.invars[:n_keep])
            + [core.Var(a) for a in right_avals] + list(j.invars[n_keep:]))
  return core.ClosedJaxpr(core.Jaxpr(j.constvars, invars, j.outvars, j.eqns, j.effects,
                                     j.debug_info), closed.consts)


def append_inputs(closed, avals):
  j = closed.jaxpr
  invars = list(j.invars) + [core.Var(a) for a in avals]
  return core.ClosedJaxpr(core.Jaxpr(j.constvars, invars, j.outvars, j.eqns, j.effects,
                                     j.debug_info), closed.consts)


def dedup_inputs(closed, n, ids):
  """Merge the first ``n`` inputs that share an id in ``ids`` into one binder."""
  j = closed.jaxpr
  canon = {}
  first = {}
  keep = []
  for v, key in zip(j.invars[:n], ids):
    w = first.setdefault(key, v)
    canon[v] = w
    if w is v:
      keep.append(v)
  if len(keep) == n:
    return closed

  def sub(v):
    return v if is_literal(v) else canon.get(v, v)

  eqns = [e.replace(invars=[sub(v) for v in e.invars]) for e in j.eqns]
  return core.ClosedJaxpr(core.Jaxpr(j.constvars, keep + list(j.invars[n:]),
                                     [sub(v) for v in j.outvars], eqns, j.effects,
                                     j.debug_info), closed.consts)


def eval_closed(closed, *args):
  return core.eval_jaxpr(closed.jaxpr, closed.consts, *args)


# --- differentiation of closed jaxprs ---------------------------------------------------
def tangent_aval(aval):
  return ad.tangent_aval(aval)


def jvp_jaxpr(closed, nonzeros, instantiate):
  """(jvp_closed, out_nonzeros, tracer_consts): a jaxpr taking (primals..., tangents of
  the ``nonzeros`` inputs...) to (primal outputs..., nonzero output tangents...).
  Outputs where ``instantiate`` get (possibly zero) tangents."""
  if isinstance(instantiate, bool):
    instantiate = [instantiate] * len(closed.out_avals)
  n = len(closed.in_avals)
  in_avals = list(closed.in_avals)
  t_avals = [tangent_aval(a) for a, nz in zip(in_avals, nonzeros) if nz]
  cell = []

  def fn(*args):
    ps = list(args[:n])
    it = iter(args[n:])
    ts = [next(it) if nz else Zero(tangent_aval(a)) for a, nz in zip(in_avals, nonzeros)]
    out_p, out_t = ad.jvp_flat(lambda *xs: eval_closed(closed, *xs), ps, ts)
    out_t = [ad.instantiate_zeros(t) if inst and type(t) is Zero
             and not ad.has_float0_tangent(core.get_aval(p)) else t
             for p, t, inst in zip(out_p, out_t, instantiate)]
    mask = [type(t) is not Zero for t in out_t]
    cell.append(mask)
    return list(out_p) + [t for t, m in zip(out_t, mask) if m]

  jc, tracer_consts = trace_flat(fn, in_avals + t_avals)
  return jc, cell[-1], tracer_consts


class LinearizedJaxpr:
  """A closed jaxpr split for reverse mode.

  * ``known``: ClosedJaxpr from the primal inputs (after ``known_tracer_consts``) to
    (primal outputs..., residuals not forwarded from inputs...).
  * ``res_avals`` / ``res_fwd``: every residual's aval and the input index it is
    (or None: the next non-forwarded residual output of ``known``).
  * ``out_nz``: which outputs have (instantiated or nonzero) tangents.
  * ``tangent(res, nz_tangents)``: evaluates the linear part on the current interpreter
    (residuals in ``res_avals`` order, tangents of the nonzero inputs) and returns the
    tangents of the ``out_nz`` outputs."""

  def __init__(self, known, known_tracer_consts, res_avals, res_fwd, out_nz, lin, out_avals):
    self.known = known
    self.known_tracer_consts = known_tracer_consts
    self.res_avals = res_avals
    self.res_fwd = res_fwd
    self.out_nz = out_nz
    self._lin = lin
    self.out_avals = out_avals

  def tangent(self, res, nz_tangents):
    lin = self._lin
    it_res = iter(res)
    consts = [next(it_res) if isinstance(c, core.Tracer) else c for c in lin.consts]
    lin_args = [t for t, m in zip(nz_tangents, lin.in_mask) if m]
    outs = iter(core.eval_jaxpr(lin.jaxpr, consts, *lin_args))
    full = [next(outs) if m else None for m in lin.out_mask]
    return [o if o is not None else ad.zeros_like_aval(tangent_aval(a))
            for o, nz, a in zip(full, self.out_nz, self.out_avals) if nz]


def linearize_jaxpr(closed, nonzeros, instantiate, forward=False):
  """Split ``closed`` for reverse mode at the inputs where ``nonzeros``: see
  ``LinearizedJaxpr``.  Outputs where ``instantiate`` get tangents even if zero."""
  if isinstance(instantiate, bool):
    instantiate = [instantiate] * len(closed.out_avals)
  in_avals = list(closed.in_avals)
  cell = []

  def known(*ps):
    def inner(*lin_args):
      it = iter(lin_args)
      return eval_closed(closed, *[next(it) if m else p for p, m in zip(ps, nonzeros)])
    out_p, lin = ad.linearize_flat(inner, [p for p, m in zip(ps, nonzeros) if m],
                                   forward=forward)
    res = [c for c in lin.consts if isinstance(c, core.Tracer)]
    pos = {id(p): i for i, p in enumerate(ps)}
    fwd = [pos.get(id(r)) for r in res]
    cell.append((lin, fwd, [core.get_aval(r) for r in res]))
    return list(out_p) + [r for r, f in zip(res, fwd) if f is None]

  known_closed, known_tc = trace_flat(known, in_avals)
  lin, fwd, res_avals = cell[-1]
  out_nz = [bool(m or inst) and not ad.has_float0_tangent(a)
            for m, inst, a in zip(lin.out_mask, instantiate, closed.out_avals)]
  return LinearizedJaxpr(known_closed, known_tc, res_avals, fwd, out_nz, lin,
                         list(closed.out_avals))


_diff_cache = weakref.WeakKeyDictionary()   # ClosedJaxpr -> {key: result}


def _cached_on(closed, key, make):
  try:
    per = _diff_cache.get(closed)
    if per is None:
      per = _diff_cache[closed] = {}
  except TypeError:
    return make()
  key = key + (config.trace_state(),)
  hit = per.get(key)
  if hit is None:
    hit = make()
    if len(per) > 64:
      per.clear()
    per[key] = hit
  return hit


def _tuple_mask(m, n):
  return (bool(m),) * n if isinstance(m, bool) else tuple(bool(x) for x in m)


def jvp_jaxpr_cached(closed, nonzeros, instantiate):
  """``jvp_jaxpr`` cached per (jaxpr, nonzeros, instantiate); returns (jaxpr, out_nz)."""
  nz = _tuple_mask(nonzeros, len(closed.in_avals))
  inst = _tuple_mask(instantiate, len(closed.out_avals))

  def make():
    jc, mask, tc = jvp_jaxpr(closed, nz, inst)
    assert not tc
    return jc, tuple(mask)
  jc, mask = _cached_on(closed, ("jvp", nz, inst), make)
  return jc, list(mask)


def linearize_jaxpr_cached(closed, nonzeros, instantiate, forward=False):
  nz = _tuple_mask(nonzeros, len(closed.in_avals))
  inst = _tuple_mask(instantiate, len(closed.out_avals))
  return _cached_on(closed, ("lin", nz, inst, bool(forward)),
                    lambda: linearize_jaxpr(closed, nz, inst, forward))


# --- type checks with JAX's messages ----------------------------------------------------
def typematch(a, b):
  """JAX's typematch: equal shape and dtype (weak types ignored)."""
  return a.shape == b.shape and a.dtype == b.dtype


def mismatch_extra(a1, a2):
  ms = []
  if a1.dtype != a2.dtype:
    ms.append("the dtypes do not match")
  if a1.shape != a2.shape:
    ms.append("the shapes do not match")
  if not ms:
    return ""
  if len(ms) == 1:
    return ", so " + ms[0]
  return ", so " + ", ".join(ms[:-1]) + ", and " + ms[-1]


def _capitalize(s):
  return s[0].capitalize() + s[1:]


def check_branch_outputs(api_name, name1, name2, f1, f2, tree1, avals1, tree2, avals2):
  """JAX's TypeError when two branches' outputs differ in structure or type."""
  info1 = staging.fun_source_info(f1)
  info2 = staging.fun_source_info(f2)
  try:
    pairs, _ = tree_util.tree_flatten_with_path(tree1.unflatten(list(avals1)))
    paths = [p for p, _ in pairs]
  except Exception:  # noqa: BLE001
    paths = [None] * len(avals1)

  def component(p):
    return f" at path {tree_util.keystr(p)}" if p else ""

  if tree1 != tree2:
    diffs = [f"{name1} output{component(p)} is a {t1} but {name2} output{component(p)} "
             f"is a {t2}, so {expl}"
             for p, t1, t2, expl in tree_util.equality_errors_pytreedef(tree1, tree2)]
    if not diffs:
      return
    differences = _bullets(diffs, capitalize=False)
    raise TypeError(
        f"{api_name} branch outputs must have the same pytree structure, but they differ:"
        f"\n\n{name1} is {info1}\n{name2} is {info2}\n\n{differences}\n"
        f"Revise {name1} and/or {name2} so that they have the same pytree structure.")
  if not all(typematch(a, b) for a, b in zip(avals1, avals2)):
    diffs = [f"the output of {name1}{component(p)} has type "
             f"{a1.str_short(short_dtypes=False)} but the corresponding output of {name2} "
             f"has type {a2.str_short(short_dtypes=False)}{mismatch_extra(a1, a2)}"
             for p, a1, a2 in zip(paths, avals1, avals2) if not typematch(a1, a2)]
    differences = _bullets(diffs, gap=False)
    raise TypeError(
        f"{api_name} branches must have equal output types but they differ.\n\n"
        f"{name1} is {info1}\n{name2} is {info2}\n\n{differences}\n"
        f"Revise {name1} and/or {name2} so that all output types match.")


def _bullets(diffs, capitalize=True, gap=True):
  """JAX's text for a list of type/structure differences: one sentence, or a bullet list
  (with blank lines between the items when ``gap``, as JAX's messages differ there)."""
  if len(diffs) == 1:
    return f"{_capitalize(diffs[0]) if capitalize else diffs[0]}.\n"
  if gap:
    return "\n".join(f"  * {d};\n" for d in diffs[:-1]) + f"  * {diffs[-1]}.\n"
  return "\n".join(f"  * {d};" for d in diffs[:-1]) + f"\n  * {diffs[-1]}.\n"


def _first_param_name(fun):
  import inspect
  try:
    sig = inspect.signature(fun)
  except (ValueError, TypeError):
    return None
  params = list(sig.parameters)
  return params[0] if params else None


def check_carry_type(name, body_fun, in_tree, in_avals, out_tree, out_avals):
  """JAX's TypeError when a loop body's carry output differs from its carry input."""
  carry_name = _first_param_name(body_fun)
  if carry_name:
    def component(p):
      return (f"the input carry component {carry_name}{tree_util.keystr(p)}" if p
              else f"the input carry {carry_name}")
  else:
    def component(p):
      return (f"the input carry at path {tree_util.keystr(p)}" if p
              else "the input carry")
  if in_tree != out_tree:
    try:
      out_unflat = out_tree.unflatten(list(out_avals))
    except Exception:  # noqa: BLE001
      out_unflat = None
    if out_unflat is None:
      differences = (f"the input tree structure is:\n{in_tree}\n"
                     f"the output tree structure is:\n{out_tree}\n")
    else:
      diffs = [f"{component(p)} is a {t1} but the corresponding component of the carry "
               f"output is a {t2}, so {expl}"
               for p, t1, t2, expl in tree_util.equality_errors(
                   in_tree.unflatten(list(in_avals)), out_unflat)]
      if not diffs:
        return
      differences = _bullets(diffs)
    raise TypeError(
        f"{name} function carry input and carry output must have the same pytree "
        f"structure, but they differ:\n\n{differences}\n"
        "Revise the function so that the carry output has the same pytree structure as "
        "the carry input.")
  if not all(typematch(a, b) for a, b in zip(in_avals, out_avals)):
    pairs, _ = tree_util.tree_flatten_with_path(in_tree.unflatten(list(in_avals)))
    paths = [p for p, _ in pairs]
    diffs = [f"{component(p)} has type {a.str_short(short_dtypes=False)} but the "
             f"corresponding output carry component has type "
             f"{b.str_short(short_dtypes=False)}{mismatch_extra(a, b)}"
             for p, a, b in zip(paths, in_avals, out_avals) if not typematch(a, b)]
    differences = _bullets(diffs)
    raise TypeError(
        f"{name} function carry input and carry output must have equal types, but they "
        f"differ:\n\n{differences}\n"
        "Revise the function so that all output types match the corresponding input "
        "types.")


def promote_weak_typed_input(x, in_aval, out_aval):
  """A weakly typed initial carry whose type the body changes is converted to the
  promoted dtype (JAX's rule); returns (value, changed)."""
  if in_aval.weak_type and not typematch(in_aval, out_aval):
    from pyjax._src import dtypes
    from pyjax._src.lax import elementwise as ew
    new_dtype = dtypes.result_type(x, out_aval)
    if isinstance(x, core.Tracer):
      return ew.convert_element_type(x, new_dtype), True
    with core.set_interpreter(core.eval_interpreter):
      out = ew.convert_element_type(x, new_dtype)
    return core.folded_host_constant(out, (x,)), True
  return x, False
