"""custom_vmap / sequential_vmap (``jax.custom_batching``).

``custom_vmap(f)`` stages ``f`` and binds ``custom_vmap_call`` (params as JAX: ``call``,
the staged function with its constants as leading inputs; ``rule``; ``in_tree`` of
``(consts, args)``; ``out_tree``).  Eagerly and under ``jit`` the staged function runs;
under ``vmap`` the batching rule calls the user's rule ``rule(axis_size, in_batched,
*args) -> (out, out_batched)`` with the batch dimensions of batched arguments moved to the
front.  Forward mode differentiates the staged function and builds a rule for the JVP
from the user's rule (``vmap`` over the dimensions only the primals or only the tangents
carry, ``jvp`` of the rule over the rest), as JAX does, so ``jvp``/``jacfwd`` work inside
and outside ``vmap``; reverse mode of an unbatched call raises JAX's ValueError (``grad``
of ``vmap`` of it works: the rule's operations are differentiated).
"""
from __future__ import annotations

import functools
import operator

from pyjax._src import core
from pyjax._src import tree_util
from pyjax._src.interpreters import ad
from pyjax._src.interpreters import batching

__all__ = ["custom_vmap", "sequential_vmap"]


# --- the primitive ----------------------------------------------------------------------
custom_vmap_p = core.Primitive("custom_vmap_call")
custom_vmap_p.multiple_results = True


@custom_vmap_p.def_impl
def _custom_vmap_impl(*args, call, rule, in_tree, out_tree):
  del rule, in_tree, out_tree
  return core.eval_jaxpr(call.jaxpr, call.consts, *args)


@custom_vmap_p.def_effectful_abstract_eval
def _custom_vmap_abstract(*avals, call, **_):
  return list(call.out_avals), core.jaxpr_effects(call)


def _rule_name(rule):
  return getattr(rule, "__name__", "<unnamed rule>")


def _check_rule_trees(rule, original_out_tree, out_tree, out_batched_tree):
  if out_tree != out_batched_tree:
    raise ValueError(
        "structure of output value and output batching specification returned by custom "
        f"vmap rule ({_rule_name(rule)}) do not match.\nOutput values: {out_tree}\n"
        f"Batching spec: {out_batched_tree}")
  if out_tree != original_out_tree:
    raise ValueError(
        f"structure of output returned by custom vmap rule ({_rule_name(rule)}) does not "
        f"match that of original custom-vmapped function.\nOriginal output: "
        f"{original_out_tree}\nRule output: {out_tree}")


def _call_rule(rule, axis_size, in_batched, args):
  return rule(axis_size, list(in_batched), *args)


class ClosedRule:
  """The user's rule, called with ``(axis_size, (consts_batched, in_batched), consts,
  args)``; it hides the staged function's constants from the user's rule."""

  def __init__(self, rule):
    functools.update_wrapper(self, rule)
    self.rule = rule

  def __call__(self, axis_size, all_in_batched, *all_args):
    _, args = all_args
    consts_batched, in_batched = all_in_batched
    if any(tree_util.tree_leaves(consts_batched)):
      raise ValueError("a custom_vmap function closes over a value batched by an enclosing "
                       "vmap; pass it as an argument instead")
    return _call_rule(self.rule, axis_size, in_batched, args)

  def __str__(self):
    return str(self.rule)

  __repr__ = __str__


def _custom_vmap_batch(args, dims, *, call, rule, in_tree, out_tree):
  del call
  size = next(core.get_aval(x).shape[d] for x, d in zip(args, dims) if d is not None)
  args = [x if d is None else batching.moveaxis(x, d, 0) for x, d in zip(args, dims)]
  in_batched = tree_util.tree_unflatten(in_tree, [d is not None for d in dims])
  args_tree = tree_util.tree_unflatten(in_tree, args)
  out, out_batched = _call_rule(rule, size, in_batched, args_tree)
  flat_outs, tree1 = tree_util.tree_flatten(out)
  flat_batched, tree2 = tree_util.tree_flatten(out_batched)
  _check_rule_trees(rule, out_tree, tree1, tree2)
  return flat_outs, [0 if b else None for b in flat_batched]


batching.primitive_batchers[custom_vmap_p] = _custom_vmap_batch


def _custom_vmap_jvp(interp, primals, tangents, *, call, rule, in_tree, out_tree):
  """JVP: a ``custom_vmap_call`` of the differentiated function whose rule is built from
  the user's.  Under ``linearize`` for reverse mode it raises JAX's ValueError; for
  forward mode (``jacfwd`` linearizes) the primal outputs are computed on their own and
  the JVP call goes to the tangent program."""
  from pyjax._src import api_ad
  from pyjax._src.lax.control_flow import common
  if interp.tangent_interp is not None and not interp.forward:
    raise ValueError("Linearization failed to produce known values for all output primals. "
                     "This is typically caused by attempting to differentiate a function "
                     "uses an operation that does not support reverse-mode autodiff.")

  def jvp_of_rule(axis_size, in_batched, primals, tangents):
    in_b_ps, in_b_ts = in_batched
    mutually = tree_util.tree_map(operator.and_, in_b_ps, in_b_ts)
    extra_ps = tree_util.tree_map(lambda pb, tb: 0 if pb and not tb else None,
                                  in_b_ps, in_b_ts)
    extra_ts = tree_util.tree_map(lambda pb, tb: 0 if tb and not pb else None,
                                  in_b_ps, in_b_ts)
    flat_ps_ts, tree_ps_ts = tree_util.tree_flatten((primals, tangents))
    flat_extra = tree_util.tree_leaves((extra_ps, extra_ts), is_leaf=lambda x: x is None)
    store, box = [], []

    def to_jvp(*ps):
      out, out_batched = _call_rule(rule, axis_size, mutually, ps)
      _check_rule_trees(rule, out_tree, tree_util.tree_structure(out),
                        tree_util.tree_structure(out_batched))
      store.append(out_batched)
      return out

    def flat_fn(*leaves):
      ps, ts = tree_util.tree_unflatten(tree_ps_ts, leaves)
      # differentiate with respect to the floating inputs only (integer/boolean inputs
      # travel with placeholder tangents, ignored here)
      flat_p, p_tree = tree_util.tree_flatten(ps)
      flat_t = tree_util.tree_leaves(ts)
      is_f = [not ad.has_float0_tangent(core.get_aval(p)) for p in flat_p]

      def of_floats(*fps):
        it = iter(fps)
        full = [next(it) if f else p for p, f in zip(flat_p, is_f)]
        return to_jvp(*tree_util.tree_unflatten(p_tree, full))
      out = api_ad.jvp(of_floats, tuple(p for p, f in zip(flat_p, is_f) if f),
                       tuple(t for t, f in zip(flat_t, is_f) if f))
      out_leaves, tree = tree_util.tree_flatten(out)
      box.append(tree)
      return out_leaves

    outs, out_dims = batching.batch_flat(flat_fn, flat_ps_ts, flat_extra,
                                         batching.AxisData(None, axis_size),
                                         lambda d: None)
    outs = [o if d is None else batching.moveaxis(o, d, 0) for o, d in zip(outs, out_dims)]
    out_ps, out_ts = tree_util.tree_unflatten(box[-1], outs)
    ex_ps, ex_ts = tree_util.tree_unflatten(box[-1], [d is not None for d in out_dims])
    b_ps = tree_util.tree_map(operator.or_, store[-1], ex_ps)
    b_ts = tree_util.tree_map(operator.or_, store[-1], ex_ts)
    return (out_ps, out_ts), (b_ps, b_ts)

  jvp_of_rule.__name__ = "jvp_of_rule_rule"
  # Integer and boolean inputs have float0 tangents, which cannot be operands: they get
  # placeholder operands (zeros of the primal's type) that the JVP call ignores.
  p_avals = [core.get_aval(p) for p in primals]
  float_in = [not ad.has_float0_tangent(a) for a in p_avals]
  jvp_call, mask, tcs = common.jvp_jaxpr(call, float_in, True)
  if not all(mask):
    raise NotImplementedError("custom_vmap JVP with integer outputs")
  jvp_call, consts = ad.closure_convert_jaxpr(jvp_call)
  if consts or tcs:
    raise NotImplementedError("custom_vmap JVP of a call with constants")
  j = jvp_call.jaxpr
  n_in = len(primals)
  t_vars = iter(j.invars[n_in:])
  invars = list(j.invars[:n_in]) + [next(t_vars) if f else core.Var(a)
                                    for f, a in zip(float_in, p_avals)]
  jvp_call = core.ClosedJaxpr(core.Jaxpr([], invars, j.outvars, j.eqns, j.effects,
                                         j.debug_info), [])
  params = dict(call=jvp_call, rule=jvp_of_rule,
                in_tree=tree_util.treedef_tuple((in_tree, in_tree)),
                out_tree=tree_util.treedef_tuple((out_tree, out_tree)))
  with core.set_interpreter(interp.rule_interp):
    tangents = [ad.instantiate_zeros(t) if f else ad.zeros_like_aval(a)
                for t, f, a in zip(tangents, float_in, p_avals)]
    outs = custom_vmap_p.bind(*primals, *tangents, **params)
  n = len(outs) // 2
  if interp.tangent_interp is None:
    return outs[:n], outs[n:]
  with core.set_interpreter(interp.parent):
    out_p = custom_vmap_p.bind(*primals, call=call, rule=rule, in_tree=in_tree,
                               out_tree=out_tree)
  return out_p, outs[n:]


ad.interpreter_jvps[custom_vmap_p] = _custom_vmap_jvp


# --- the API ----------------------------------------------------------------------------
class custom_vmap:
  """A function with a custom batching rule (``def_vmap``).  Outside ``vmap`` it behaves
  as the wrapped function; under ``vmap`` the rule ``rule(axis_size, in_batched, *args)
  -> (out, out_batched)`` computes the batched result (``in_batched`` is a list with one
  pytree of booleans per argument; batched arguments have their batch dimension first;
  ``out_batched`` mirrors ``out``).  Forward-mode differentiation works (JAX's rule
  construction); reverse mode only through the rule (``grad`` of ``vmap``), as in JAX.
  Combine with ``custom_vjp`` (on the outside) for reverse mode."""

  def __init__(self, fun):
    functools.update_wrapper(self, fun)
    self.fun = fun
    self.vmap_rule = None

  def __getattr__(self, name):
    if name in ("fun", "vmap_rule"):
      raise AttributeError(name)
    return getattr(self.fun, name)

  def def_vmap(self, vmap_rule):
    """Set the batching rule; returns ``vmap_rule`` unchanged."""
    self.vmap_rule = vmap_rule
    return vmap_rule

  def __get__(self, instance, owner=None):
    if instance is None:
      return self
    return functools.partial(self, instance)

  def __call__(self, *args, **kwargs):
    from pyjax._src import api_ad
    from pyjax._src.interpreters import staging
    name = staging.fun_name(self.fun)
    try:
      args = api_ad._resolve_kwargs(self.fun, args, kwargs)
    except TypeError as e:
      raise TypeError("The input arguments to the custom_vmap-decorated function "
                      f"{name} could not be resolved to positional-only arguments. "
                      f"Binding failed with the error:\n{e}") from e
    if not self.vmap_rule:
      raise AttributeError(f"No batching rule defined for custom_vmap function {name} "
                           "using def_vmap.")
    flat, in_tree = tree_util.tree_flatten(args)
    box = []
    fun = self.fun

    def flat_fun(*leaves):
      out = fun(*tree_util.tree_unflatten(in_tree, leaves))
      out_leaves, out_tree = tree_util.tree_flatten(out)
      box.append(out_tree)
      return out_leaves

    dbg = staging.make_debug_info("custom_vmap fun", fun, args, {})
    closed, tracer_consts = staging.trace_flat(flat_fun, [core.get_aval(x) for x in flat], dbg)
    # inputs of the staged function: its concrete constants, closed-over tracers, args
    call, consts = ad.closure_convert_jaxpr(closed)
    all_consts = list(consts) + list(tracer_consts)
    full_tree = tree_util.treedef_tuple((tree_util.tree_structure(all_consts), in_tree))
    outs = custom_vmap_p.bind(*all_consts, *flat, call=call,
                              rule=ClosedRule(self.vmap_rule), in_tree=full_tree,
                              out_tree=box[-1])
    return tree_util.tree_unflatten(box[-1], outs)


def _tree_split(mask, tree):
  lhs = tree_util.tree_map(lambda m, x: x if m else None, mask, tree)
  rhs = tree_util.tree_map(lambda m, x: None if m else x, mask, tree)
  return lhs, rhs


def _tree_merge(mask, lhs, rhs):
  return tree_util.tree_map(lambda m, a, b: a if m else b, mask, lhs, rhs,
                            is_leaf=lambda x: x is None)


def sequential_vmap(f):
  """``custom_vmap`` whose batching rule runs ``f`` once per batch element in a loop
  (``lax.map``); unbatched arguments are passed to every iteration unchanged."""
  from pyjax._src.lax.control_flow import loops
  f = custom_vmap(f)

  @f.def_vmap
  def rule(axis_size, in_batched, *args):
    del axis_size

    def to_map(mapped_args):
      return f(*_tree_merge(in_batched, mapped_args, bcast_args))

    mapped_args, bcast_args = _tree_split(in_batched, list(args))
    out = loops.map(to_map, mapped_args)
    return out, tree_util.tree_map(lambda _: True, out)

  return f
