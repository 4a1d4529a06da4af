"""``lax.cond`` and ``lax.switch``: the ``cond`` primitive.

``cond_p.bind(index, *operands, branches=(closed_jaxpr, ...))`` runs
``branches[index]`` (index clamped into range, as XLA does) on the operands.  Each branch
takes every operand -- the constants any branch closes over come first, shared by all
branches -- and all branches have the same output types.  ``lax.cond(pred, t, f)`` binds
``branches=(f, t)`` with ``index = int32(pred)``.  Outputs that every branch forwards
unchanged from the same operand are pruned from the primitive and returned directly, as
JAX does, so jaxprs print the same.

Rules: forward mode JVPs every branch (union of the nonzero output tangents); linearize
splits every branch into a primal part (which also returns its residuals, merged across
branches by type with zeros where a branch has none) and a linear tangent ``cond``;
transposition transposes every branch; a batched index turns the ``cond`` into a
``select_n`` over all branches (each run on the batched operands), an unbatched one
batches every branch.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from pyjax._src import core, dtypes
from pyjax._src import tree_util
from pyjax._src.config import config
from pyjax._src.interpreters import ad
from pyjax._src.interpreters import batching
from pyjax._src.lax import elementwise as ew
from pyjax._src.lax import shapes
from pyjax._src.lax.control_flow import common
from pyjax._src.state import control_flow as _state_cf
from pyjax._src.lax.elementwise import select  # noqa: F401  (re-exported: lax.select)

__all__ = ["cond", "switch", "cond_p"]

Zero = ad.Zero
_NO_OPERAND = object()


# --- the primitive ----------------------------------------------------------------------
cond_p = core.Primitive("cond")
cond_p.multiple_results = True


def _cond_abstract(*avals, branches, **_):
  if not branches:
    raise ValueError("cond requires at least one branch")
  n_in = len(avals) - 1
  for b in branches:
    if len(b.in_avals) != n_in:
      raise TypeError(f"cond branch takes {len(b.in_avals)} operands, got {n_in}")
  return list(branches[0].out_avals), core.join_effects(*branches)


if hasattr(cond_p, "def_effectful_abstract_eval"):
  cond_p.def_effectful_abstract_eval(_cond_abstract)
else:  # pragma: no cover
  cond_p.def_abstract_eval(lambda *a, **p: _cond_abstract(*a, **p)[0])


_eager = common.eager


# --- public API -------------------------------------------------------------------------
def cond(pred, true_fun, false_fun, *operands, operand=_NO_OPERAND):
  """Apply ``true_fun(*operands)`` if ``pred`` else ``false_fun(*operands)``.

  Both branches are traced (once per operand signature) into a ``cond`` equation.
  ``pred`` is a scalar boolean or number (nonzero is true).  The deprecated forms JAX
  still accepts work: ``operand=`` and ``cond(pred, x_true, f_true, x_false, f_false)``.
  Under ``vmap`` with a batched predicate both branches run and a ``select`` picks
  the results."""
  if not (callable(true_fun) and callable(false_fun)):
    if callable(false_fun) and len(operands) == 2 and callable(operands[1]):
      x_true, f_true, x_false, f_false = true_fun, false_fun, *operands
      return cond(pred, lambda x, _: f_true(x), lambda _, x: f_false(x), x_true, x_false)
    raise TypeError("lax.cond: true_fun and false_fun arguments should be callable.")
  if operand is not _NO_OPERAND:
    if operands:
      raise TypeError("if 'operand' keyword is passed then no positional operands can be "
                      f"passed, got operand={operand!r} and positional operands {operands}")
    operands = (operand,)
  if pred is None:
    raise TypeError("cond predicate is None")
  if isinstance(pred, Sequence) or np.ndim(pred) != 0:
    raise TypeError(f"Pred must be a scalar, got {pred} of "
                    + (f"type {type(pred)}" if isinstance(pred, Sequence)
                       else f"shape {np.shape(pred)}."))
  try:
    pred_dtype = dtypes.result_type(pred)
  except (TypeError, ValueError) as err:
    raise TypeError(f"Pred type must be either boolean or number, got {pred}.") from err
  if pred_dtype.kind != "b":
    if pred_dtype.kind in "iuf":
      pred = pred != 0
    else:
      raise TypeError(f"Pred type must be either boolean or number, got {pred_dtype}.")
  if _state_cf.live(true_fun, false_fun):   # outer refs a branch uses: operands and outputs
    out = _state_cf.switch(lambda p, bs, *ops: cond(p, bs[1], bs[0], *ops), pred,
                           [false_fun, true_fun], operands)
    if out is not _state_cf.NO_REFS:
      return out
  if config.jax_disable_jit and not isinstance(pred, core.Tracer):
    return true_fun(*operands) if bool(pred) else false_fun(*operands)
  leaves, in_tree = tree_util.tree_flatten(operands)
  avals = [core.get_aval(x) for x in leaves]
  tj, tconsts, ttree = common.trace_callable(true_fun, in_tree, avals, "cond", operands)
  fj, fconsts, ftree = common.trace_callable(false_fun, in_tree, avals, "cond", operands)
  common.check_branch_outputs("cond", "true_fun", "false_fun", true_fun, false_fun,
                              ttree, tj.out_avals, ftree, fj.out_avals)
  (tj, fj), consts = _merge_consts([tj, fj], [tconsts, fconsts])
  index = _eager(lambda p: ew.convert_element_type(p, np.int32), pred)
  outs = _bind_cond(index, consts, leaves, [fj, tj])
  return ttree.unflatten(outs)


def switch(index, branches, *operands, operand=_NO_OPERAND):
  """Apply ``branches[index](*operands)``; ``index`` is clamped into range.

  Every branch is traced (once per operand signature) into one ``cond`` equation."""
  if not all(callable(b) for b in branches):
    raise TypeError("lax.switch: branches argument should be a sequence of callables.")
  if operand is not _NO_OPERAND:
    if operands:
      raise TypeError("if 'operand' keyword is passed then no positional operands can be "
                      f"passed, got operand={operand!r} and positional operands {operands}")
    operands = (operand,)
  if len(np.shape(index)) != 0:
    raise TypeError(f"Branch index must be scalar, got {index} of shape {np.shape(index)}.")
  try:
    index_dtype = dtypes.result_type(index)
  except (TypeError, ValueError) as err:
    raise TypeError(f"Index type must be an integer, got {index}.") from err
  if index_dtype.kind not in "iu":
    raise TypeError(f"Index type must be an integer, got {index} as {index_dtype}")
  branches = tuple(branches)
  if len(branches) == 0:
    raise ValueError("Empty branch sequence")
  if len(branches) == 1:
    return branches[0](*operands)
  if _state_cf.live(*branches):   # outer refs used by a branch are operands and outputs
    out = _state_cf.switch(lambda i, bs, *ops: switch(i, bs, *ops), index, branches, operands)
    if out is not _state_cf.NO_REFS:
      return out
  index = _eager(lambda i: ew.convert_element_type(i, np.int32), index)
  lo = np.array(0, np.int32)
  hi = np.array(len(branches) - 1, np.int32)
  index = ew.clamp(lo, index, hi)
  if config.jax_disable_jit and not isinstance(index, core.Tracer):
    return branches[int(index)](*operands)
  leaves, in_tree = tree_util.tree_flatten(operands)
  avals = [core.get_aval(x) for x in leaves]
  traced = [common.trace_callable(b, in_tree, avals, "switch", operands) for b in branches]
  j0, _, tree0 = traced[0]
  for i, (j, _, tree) in enumerate(traced[1:]):
    common.check_branch_outputs("switch", "branch 0", f"branch{i + 1}", branches[0],
                                branches[i + 1], tree0, j0.out_avals, tree, j.out_avals)
  jaxprs, consts = _merge_consts([t[0] for t in traced], [t[1] for t in traced])
  outs = _bind_cond(index, consts, leaves, jaxprs)
  return tree0.unflatten(outs)


def _merge_consts(jaxprs, all_consts):
  """Give every branch every branch's constants as leading inputs (in branch order,
  deduplicated by identity); returns (jaxprs, consts)."""
  flat = [c for cs in all_consts for c in cs]
  if not flat:
    return list(jaxprs), []
  avals = [core.get_aval(c) for c in flat]
  ids = [id(c) for c in flat]
  out = []
  off = 0
  for j, cs in zip(jaxprs, all_consts):
    n = len(cs)
    padded = common.pad_inputs(j, avals[:off], n, avals[off + n:])
    out.append(common.dedup_inputs(padded, len(flat), ids))
    off += n
  seen = set()
  consts = []
  for c in flat:
    if id(c) not in seen:
      seen.add(id(c))
      consts.append(c)
  return out, consts


def _bind_cond(index, consts, leaves, jaxprs):
  """Prune outputs every branch forwards from the same input, bind, reassemble."""
  fwds = [common.jaxpr_forwarding(j.jaxpr) for j in jaxprs]
  in_fwd = [f[0] if f[0] is not None and all(x == f[0] for x in f) else None
            for f in zip(*fwds)]
  keep = [f is None for f in in_fwd]
  jaxprs = [common.prune_outputs(j, keep) for j in jaxprs]
  outs = cond_p.bind(index, *consts, *leaves, branches=tuple(jaxprs))
  all_inputs = list(consts) + list(leaves)
  it = iter(outs)
  return [next(it) if f is None else common.as_array(all_inputs[f]) for f in in_fwd]


# --- differentiation --------------------------------------------------------------------
def _cond_jvp(interp, primals, tangents, *, branches, **params):
  index, *ops = primals
  _, *ops_t = tangents
  nz = [type(t) is not Zero for t in ops_t]
  if interp.tangent_interp is not None:
    return _cond_linearize(interp, index, ops, ops_t, nz, branches, params)
  with core.set_interpreter(interp.parent):
    out_nz = [any(m) for m in zip(*[common.jvp_jaxpr_cached(b, nz, False)[1]
                                     for b in branches])]
    jvps = tuple(common.jvp_jaxpr_cached(b, nz, out_nz)[0] for b in branches)
    nz_ts = [t for t in ops_t if type(t) is not Zero]
    outs = cond_p.bind(index, *ops, *nz_ts, branches=jvps, **params)
  n = len(branches[0].out_avals)
  out_p = outs[:n]
  it = iter(outs[n:])
  out_t = [next(it) if m else Zero(ad.tangent_aval(a))
           for m, a in zip(out_nz, branches[0].out_avals)]
  return out_p, out_t


def _merge_residuals(res_avals_per_branch):
  """Share residual slots between branches by type: (all avals, slots per branch)."""
  all_avals = []
  slots = []
  for avals in res_avals_per_branch:
    used = set()
    mine = []
    for a in avals:
      k = next((i for i, b in enumerate(all_avals) if b == a and i not in used), None)
      if k is None:
        k = len(all_avals)
        all_avals.append(a)
      used.add(k)
      mine.append(k)
    slots.append(mine)
  return all_avals, slots


def _cond_linearize(interp, index, ops, ops_t, nz, branches, params):
  fwdf = interp.forward
  with core.set_interpreter(interp.parent):
    lins0 = [common.linearize_jaxpr_cached(b, nz, False, fwdf) for b in branches]
    out_nz = [any(m) for m in zip(*[l.out_nz for l in lins0])]
    lins = [common.linearize_jaxpr_cached(b, nz, out_nz, fwdf) for b in branches]
    # residuals: forwarded operands are passed as they are; the others are merged
    fwd_ops = sorted({f for l in lins for f in l.res_fwd if f is not None})
    fwd_pos = {f: i for i, f in enumerate(fwd_ops)}
    own = [[a for a, f in zip(l.res_avals, l.res_fwd) if f is None] for l in lins]
    all_res, slots = _merge_residuals(own)
    n_out = len(branches[0].out_avals)
    op_avals = [core.get_aval(x) for x in ops]

    def make_known(l, sl):
      def known(*xs):
        outs = common.eval_closed(l.known, *l.known_tracer_consts, *xs)
        prim, res = outs[:n_out], outs[n_out:]
        merged = [None] * len(all_res)
        for k, r in zip(sl, res):
          merged[k] = r
        merged = [ad.zeros_like_aval(a) if m is None else m for m, a in zip(merged, all_res)]
        return list(prim) + merged
      return known

    known = []
    for l, sl in zip(lins, slots):
      kj, ktc = common.trace_flat(make_known(l, sl), op_avals)
      assert not ktc
      known.append(kj)
    outs = cond_p.bind(index, *ops, branches=tuple(known), **params)
    out_p, res = list(outs[:n_out]), list(outs[n_out:])
    fwd_vals = [ops[f] for f in fwd_ops]

    t_avals = [ad.tangent_aval(a) for a, m in zip(op_avals, nz) if m]
    in_avals = list(all_res) + [op_avals[f] for f in fwd_ops] + t_avals

    def make_tangent(l, sl):
      def tangent(*xs):
        mres = xs[:len(all_res)]
        fops = xs[len(all_res):len(all_res) + len(fwd_ops)]
        ts = xs[len(all_res) + len(fwd_ops):]
        it = iter(sl)
        r = [fops[fwd_pos[f]] if f is not None else mres[next(it)] for f in l.res_fwd]
        return l.tangent(r, ts)
      return tangent

    tangent_branches = []
    for l, sl in zip(lins, slots):
      tj, ttc = common.trace_flat(make_tangent(l, sl), in_avals)
      assert not ttc
      tangent_branches.append(tj)
  nz_ts = [t for t in ops_t if type(t) is not Zero]
  out_t = []
  if any(out_nz):
    with core.set_interpreter(interp.rule_interp):
      t_outs = cond_p.bind(index, *res, *fwd_vals, *nz_ts, branches=tuple(tangent_branches),
                           **params)
    it = iter(t_outs)
    out_t = [next(it) if m else Zero(ad.tangent_aval(a))
             for m, a in zip(out_nz, branches[0].out_avals)]
  else:
    out_t = [Zero(ad.tangent_aval(a)) for a in branches[0].out_avals]
  return out_p, out_t


def _cond_transpose(cts, index, *args, branches, **params):
  if ad.is_undefined_primal(index):
    raise ValueError("cond: cannot transpose with respect to the branch index")
  lin = [ad.is_undefined_primal(a) for a in args]
  res = [a for a, m in zip(args, lin) if not m]
  ct_nz = [type(c) is not Zero for c in cts]
  nz_cts = [c for c in cts if type(c) is not Zero]
  out_avals = branches[0].out_avals

  def make(b):
    def bwd(*xs):
      r = iter(xs[:len(res)])
      c = iter(xs[len(res):])
      full_args = [a if m else next(r) for a, m in zip(args, lin)]
      full_cts = [next(c) if m else Zero(ad.tangent_aval(a)) for m, a in zip(ct_nz, out_avals)]
      cts_in = ad.backward_pass(b.jaxpr, b.consts, full_cts, full_args)
      return [ad.instantiate_zeros(ct) for ct, m in zip(cts_in, lin) if m]
    return bwd

  in_avals = [core.get_aval(x) for x in res] + [core.get_aval(x) for x in nz_cts]
  traced = [common.trace_flat(make(b), in_avals) for b in branches]
  tbs, consts = _merge_consts([t[0] for t in traced], [t[1] for t in traced])
  outs = cond_p.bind(index, *consts, *res, *nz_cts, branches=tuple(tbs), **params)
  it = iter(outs)
  return [None] + [next(it) if m else None for m in lin]


def _cond_out_mask(params, in_lin):
  """Which outputs depend on the linear operands (``in_lin[0]`` is the index)."""
  branches = params["branches"]
  if in_lin[0] or any(b.jaxpr.effects for b in branches):
    return None
  masks = [ad.jaxpr_linear_outputs(b.jaxpr, in_lin[1:]) for b in branches]
  return [any(ms) for ms in zip(*masks)]


def _cond_forward_part(params, in_lin, out_lin, vals):
  """The outputs that depend on residual operands only, as a cond of pruned branches."""
  branches = params["branches"]
  keep = [not m for m in out_lin]
  used = [False] * (len(in_lin) - 1)
  for b in branches:
    used = [u or v for u, v in zip(used, common.dce_jaxpr(b.jaxpr, keep)[1])]
  pruned = []
  for b in branches:
    j, _ = common.dce_jaxpr(b.jaxpr, keep, instantiate=used)
    kept = set(j.constvars)
    pruned.append(core.ClosedJaxpr(j, [c for v, c in zip(b.jaxpr.constvars, b.consts)
                                       if v in kept]))
  ops = ad.residual_operands(vals[1:], used, branches[0].jaxpr.invars)
  rest = {k: v for k, v in params.items() if k != "branches"}
  return cond_p.bind(vals[0], *ops, branches=tuple(pruned), **rest)


ad.interpreter_jvps[cond_p] = _cond_jvp
ad.primitive_transposes[cond_p] = _cond_transpose
ad.partial_forward_rules[cond_p] = (_cond_out_mask, _cond_forward_part)


# --- batching ---------------------------------------------------------------------------
def _bcast_to(pred, x):
  """Broadcast a batched (B,) predicate/index along ``x``'s trailing dimensions."""
  xs = core.get_aval(x).shape
  ps = core.get_aval(pred).shape
  if xs == ps:
    return pred
  return shapes.broadcast_in_dim(pred, xs, tuple(range(len(ps))))


def _cond_batch(axis_data, args, dims, *, branches, **params):
  index, *ops = args
  idim, *op_dims = dims
  size = axis_data.size
  if idim is not batching.not_mapped:
    index = batching.moveaxis(index, idim, 0)
    ops = [batching.bdim_at_front(x, d, size) for x, d in zip(ops, op_dims)]
    n_in = len(ops)
    batched = [batching.batch_jaxpr(b, axis_data, [True] * n_in, True)[0] for b in branches]
    branch_outs = []
    for i, bj in enumerate(batched):
      pred = ew.eq(index, np.int32(i))
      ops_i = [ew.select(_bcast_to(pred, x), x, ad.stop_gradient_p.bind(x)) for x in ops]
      branch_outs.append(common.eval_closed(bj, *ops_i))
    if len(branches) == 1:
      return list(branch_outs[0]), [0] * len(branch_outs[0])
    out = [ew.select_n(_bcast_to(index, outs[0]), *outs) for outs in zip(*branch_outs)]
    return out, [0] * len(out)
  ops_bat = [d is not batching.not_mapped for d in op_dims]
  ops = [batching.moveaxis(x, d, 0) if b else x for x, d, b in zip(ops, op_dims, ops_bat)]
  out_bat = [any(m) for m in zip(*[batching.batch_jaxpr(b, axis_data, ops_bat, False)[1]
                                   for b in branches])]
  batched = tuple(batching.batch_jaxpr(b, axis_data, ops_bat, out_bat)[0] for b in branches)
  out = cond_p.bind(index, *ops, branches=batched, **params)
  return out, [0 if b else batching.not_mapped for b in out_bat]


batching.axis_primitive_batchers[cond_p] = _cond_batch
