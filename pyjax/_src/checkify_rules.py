"""checkify rules for the higher-order primitives (jit, cond, while, scan, remat2,
custom_jvp_call, custom_vjp_call).

Each rule stages its inner jaxpr(s) run by the error-threading interpreter
(``checkify.checkify_jaxpr``), so the ``Error`` enters as extra leading operands and
leaves as extra leading results; constants created while doing so become leading operands
(pyjax's control-flow primitives carry no jaxpr constants).  Where the error must have the
same type in and out (cond branches, loop carries, custom-derivative rules that forward
it) the input error first gets a placeholder entry for every kind of error the body can
raise (found by tracing the body once), and the body's error results are cast to the
input error's types.
"""
from __future__ import annotations

import weakref

from pyjax._src import core
from pyjax._src import tree_util
from pyjax._src.avals import ShapedArray
from pyjax._src.interpreters import ad


def _ck():
  from pyjax._src import checkify
  return checkify


def _avals(xs):
  out = []
  for x in xs:
    a = core.get_aval(x)
    out.append(ShapedArray(a.shape, a.dtype, a.weak_type))
  return out


def _coerce(vals, avals):
  """Cast ``vals`` to the dtypes and weak types of ``avals`` (same shapes)."""
  from pyjax._src.lax import elementwise as ew
  out = []
  for v, a in zip(vals, avals):
    va = core.get_aval(v)
    if va.dtype != a.dtype or va.weak_type != a.weak_type:
      v = ew.convert_element_type_p.bind(v, new_dtype=a.dtype, weak_type=a.weak_type,
                                         sharding=None)
    out.append(v)
  return out


_memo = weakref.WeakKeyDictionary()   # Jaxpr -> {key: _trace result}
_MAX_PER_JAXPR = 32


def _trace(fun, in_avals, n_err=None, err_avals=None, anchor=None, key=None):
  """Stage ``fun(*flat) -> (error, outs)``.  Returns (closed jaxpr, hoisted jaxpr whose
  constants are leading inputs, those constants, out treedef of (error, outs), error
  kinds).  With ``err_avals`` the error results are cast to them (the error keeps its
  kinds).  With ``anchor`` (the source Jaxpr) and ``key`` (everything else ``fun``
  depends on) the result is cached, so checkifying the same jitted function again reuses
  the same jaxpr (and its compiled executable)."""
  if anchor is not None:
    if isinstance(anchor, core.ClosedJaxpr):
      anchor = anchor.jaxpr
    full_key = (key, tuple(in_avals), None if err_avals is None else tuple(err_avals),
                core._trace_state_key())
    table = _memo.get(anchor)
    if table is None:
      table = _memo[anchor] = {}
    hit = table.get(full_key)
    if hit is None:
      if len(table) >= _MAX_PER_JAXPR:
        table.clear()
      hit = table[full_key] = _trace(fun, in_avals, n_err, err_avals)
    return hit
  box = []

  def flat(*xs):
    err, outs = fun(*xs)
    leaves, tree = tree_util.tree_flatten(err)
    if err_avals is not None:
      if len(leaves) != len(err_avals):
        raise AssertionError("checkify: error kinds changed inside a body")
      leaves = _coerce(leaves, err_avals)
    err = tree_util.tree_unflatten(tree, leaves)
    all_leaves, out_tree = tree_util.tree_flatten((err, list(outs)))
    box.append((out_tree, frozenset(err._pred)))
    return all_leaves

  closed = core.trace_to_jaxpr(flat, list(in_avals))
  hoisted, consts = ad.closure_convert_jaxpr(closed)
  out_tree, effects = box[-1]
  return closed, hoisted, consts, out_tree, effects


def _strip(error):
  """(error without its metadata, the metadata): bodies are traced and cached on the
  error's structure only; the metadata is merged back into the result."""
  return error._replace(_metadata={}), dict(error._metadata)


def _with_meta(err, meta):
  return err._replace(_metadata={**meta, **err._metadata})


def _runner(closed, enabled, err_tree, n_err, before=0):
  """``fun(*before_vals, *err_leaves, *args)`` running ``closed`` on (before_vals, args)
  with the error threaded."""
  ck = _ck()

  def fun(*xs):
    pre, err_vals, args = xs[:before], xs[before:before + n_err], xs[before + n_err:]
    err = tree_util.tree_unflatten(err_tree, err_vals)
    return ck.checkify_jaxpr(closed, enabled, err, *pre, *args)
  return fun


def _merge_metadata(error, out_trees, leaves):
  meta = dict(error._metadata)
  for t in out_trees:
    e, _ = tree_util.tree_unflatten(t, leaves)
    meta.update(e._metadata)
  return meta


# --- jit ------------------------------------------------------------------------------
def _jit_rule(error, enabled, *args, jaxpr, **params):
  from pyjax._src.interpreters import staging
  error, meta = _strip(error)
  err_vals, err_tree = tree_util.tree_flatten(error)
  n = len(err_vals)
  closed, _, _, out_tree, _ = _trace(_runner(jaxpr, enabled, err_tree, n),
                                     _avals(err_vals) + list(jaxpr.in_avals),
                                     anchor=jaxpr, key=("jit", enabled, err_tree))
  n_out = out_tree.num_leaves - len(jaxpr.out_avals)
  p = dict(params)
  u = staging.UNSPECIFIED
  p["in_shardings"] = (u,) * n + tuple(params["in_shardings"])
  p["out_shardings"] = (u,) * n_out + tuple(params["out_shardings"])
  p["in_layouts"] = (None,) * n + tuple(params["in_layouts"])
  p["out_layouts"] = (None,) * n_out + tuple(params["out_layouts"])
  p["donated_invars"] = (False,) * n + tuple(params["donated_invars"])
  outs = staging.jit_p.bind(*err_vals, *args, jaxpr=closed, **p)
  err, out = tree_util.tree_unflatten(out_tree, outs)
  return _with_meta(err, meta), out


# --- remat ----------------------------------------------------------------------------
def _remat_rule(error, enabled, *args, jaxpr, **params):
  from pyjax._src import ad_checkpoint
  error, meta = _strip(error)
  err_vals, err_tree = tree_util.tree_flatten(error)
  n = len(err_vals)
  _, hoisted, consts, out_tree, _ = _trace(
      _runner(core.ClosedJaxpr(jaxpr, []), enabled, err_tree, n),
      _avals(err_vals) + [v.aval for v in jaxpr.invars], anchor=jaxpr,
      key=("remat", enabled, err_tree))
  outs = ad_checkpoint.remat_p.bind(*consts, *err_vals, *args, jaxpr=hoisted.jaxpr, **params)
  err, out = tree_util.tree_unflatten(out_tree, outs)
  return _with_meta(err, meta), out


# --- cond -----------------------------------------------------------------------------
def _widen(jaxpr, pre_avals, post_avals, n_own):
  """``jaxpr`` (its first ``n_own`` inputs are its constants) taking unused inputs of
  ``pre_avals`` before and ``post_avals`` after its constants."""
  inv = list(jaxpr.invars)
  pre = [core.Var(a) for a in pre_avals]
  post = [core.Var(a) for a in post_avals]
  new = core.Jaxpr([], pre + inv[:n_own] + post + inv[n_own:], jaxpr.outvars, jaxpr.eqns,
                   jaxpr.effects, jaxpr.debug_info)
  return core.ClosedJaxpr(new, [])


def _cond_rule(error, enabled, index, *ops, branches, **params):
  from pyjax._src.lax.control_flow.conditionals import cond_p
  error, meta = _strip(error)
  err_vals, err_tree = tree_util.tree_flatten(error)
  op_avals = _avals(ops)
  effects = set()
  for br in branches:
    effects |= _trace(_runner(br, enabled, err_tree, len(err_vals)),
                      _avals(err_vals) + op_avals, anchor=br,
                      key=("cond-effects", enabled, err_tree))[4]
  error = error._add_placeholder_effects(effects)
  err_vals, err_tree = tree_util.tree_flatten(error)
  err_avals = _avals(err_vals)
  traced = [_trace(_runner(br, enabled, err_tree, len(err_vals)), err_avals + op_avals,
                   err_avals=err_avals, anchor=br, key=("cond", enabled, err_tree))
            for br in branches]
  const_avals = [[core.get_aval(c) for c in t[2]] for t in traced]
  new_branches = []
  for i, t in enumerate(traced):
    pre = [a for cs in const_avals[:i] for a in cs]
    post = [a for cs in const_avals[i + 1:] for a in cs]
    new_branches.append(_widen(t[1].jaxpr, pre, post, len(t[2])))
  all_consts = [c for t in traced for c in t[2]]
  outs = cond_p.bind(index, *all_consts, *err_vals, *ops, branches=tuple(new_branches),
                     **params)
  err, out = tree_util.tree_unflatten(traced[0][3], outs)
  meta = _merge_metadata(_with_meta(err, meta), [t[3] for t in traced], outs)
  return err._replace(_metadata=meta), out


# --- scan -----------------------------------------------------------------------------
def _scan_rule(error, enabled, *args, jaxpr, length, num_consts, num_carry, **params):
  from pyjax._src.lax.control_flow.loops import scan_p
  consts, carry, xs = (args[:num_consts], args[num_consts:num_consts + num_carry],
                       args[num_consts + num_carry:])
  x_avals = [ShapedArray(a.shape[1:], a.dtype, a.weak_type) for a in _avals(xs)]
  c_avals, carry_avals = _avals(consts), _avals(carry)

  def body_fun(err_tree, n_err):
    return _runner(jaxpr, enabled, err_tree, n_err, before=num_consts)

  error, meta = _strip(error)
  err_vals, err_tree = tree_util.tree_flatten(error)
  key = (enabled, num_consts)
  effects = _trace(body_fun(err_tree, len(err_vals)),
                   c_avals + _avals(err_vals) + carry_avals + x_avals, anchor=jaxpr,
                   key=("scan-effects", err_tree) + key)[4]
  error = error._add_placeholder_effects(effects)
  err_vals, err_tree = tree_util.tree_flatten(error)
  err_avals = _avals(err_vals)
  _, hoisted, hconsts, out_tree, _ = _trace(body_fun(err_tree, len(err_vals)),
                                            c_avals + err_avals + carry_avals + x_avals,
                                            err_avals=err_avals, anchor=jaxpr,
                                            key=("scan", err_tree) + key)
  outs = scan_p.bind(*hconsts, *consts, *err_vals, *carry, *xs, jaxpr=hoisted,
                     length=length, num_consts=len(hconsts) + num_consts,
                     num_carry=len(err_vals) + num_carry, **params)
  err, out = tree_util.tree_unflatten(out_tree, outs)
  return _with_meta(err, meta), out


# --- while ----------------------------------------------------------------------------
def _while_rule(error, enabled, *args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
  from pyjax._src.lax.control_flow.loops import while_p
  ck = _ck()
  if cond_jaxpr.out_avals[0].shape:
    raise ValueError("Checkify does not support batched while-loops "
                     "(checkify-of-vmap-of-while). \nHint: if possible, move the vmap to "
                     "the outer level to get vmap-of-checkify-of-while.")
  cc = args[:cond_nconsts]
  bc = args[cond_nconsts:cond_nconsts + body_nconsts]
  carry = args[cond_nconsts + body_nconsts:]
  error, _ = ck.checkify_jaxpr(cond_jaxpr, enabled, error, *cc, *carry)
  ncc, nbc = len(cc), len(bc)
  cc_avals, bc_avals, carry_avals = _avals(cc), _avals(bc), _avals(carry)

  def body_fun(err_tree, n_err):
    def fun(*xs):
      c, b = xs[:ncc], xs[ncc:ncc + nbc]
      e = tree_util.tree_unflatten(err_tree, xs[ncc + nbc:ncc + nbc + n_err])
      vals = xs[ncc + nbc + n_err:]
      e, out = ck.checkify_jaxpr(body_jaxpr, enabled, e, *b, *vals)
      e, _ = ck.checkify_jaxpr(cond_jaxpr, enabled, e, *c, *out)  # the next test's checks
      return e, out
    return fun

  error, meta = _strip(error)
  err_vals, err_tree = tree_util.tree_flatten(error)
  key = (enabled, ncc, nbc, cond_jaxpr.jaxpr)
  effects = _trace(body_fun(err_tree, len(err_vals)),
                   cc_avals + bc_avals + _avals(err_vals) + carry_avals, anchor=body_jaxpr,
                   key=("while-effects", err_tree) + key)[4]
  error = error._add_placeholder_effects(effects)
  err_vals, err_tree = tree_util.tree_flatten(error)
  err_avals = _avals(err_vals)
  n_err = len(err_vals)
  _, body, hb, out_tree, _ = _trace(body_fun(err_tree, n_err),
                                    cc_avals + bc_avals + err_avals + carry_avals,
                                    err_avals=err_avals, anchor=body_jaxpr,
                                    key=("while-body", err_tree) + key)

  def cond_fun(*xs):
    c = xs[:ncc]
    e = tree_util.tree_unflatten(err_tree, xs[ncc:ncc + n_err])
    _, out = ck.checkify_jaxpr(cond_jaxpr, enabled, e, *c, *xs[ncc + n_err:])
    return ck.init_error, out
  _, cond, hc, _, _ = _trace(cond_fun, cc_avals + err_avals + carry_avals, anchor=cond_jaxpr,
                             key=("while-cond", err_tree, enabled, ncc))
  outs = while_p.bind(*hc, *cc, *hb, *cc, *bc, *err_vals, *carry,
                      cond_jaxpr=cond, body_jaxpr=body, cond_nconsts=len(hc) + ncc,
                      body_nconsts=len(hb) + ncc + nbc)
  err, out = tree_util.tree_unflatten(out_tree, outs)
  return _with_meta(err, meta), out


# --- custom_jvp / custom_vjp ----------------------------------------------------------
def _custom_call_parts(error, enabled, args, call_jaxpr, num_consts):
  consts, vals = args[:num_consts], args[num_consts:]
  c_avals, v_avals = _avals(consts), _avals(vals)
  err_vals, err_tree = tree_util.tree_flatten(error)
  effects = _trace(_runner(call_jaxpr, enabled, err_tree, len(err_vals), before=num_consts),
                   c_avals + _avals(err_vals) + v_avals, anchor=call_jaxpr,
                   key=("custom-effects", enabled, err_tree, num_consts))[4]
  error = error._add_placeholder_effects(effects)
  err_vals, err_tree = tree_util.tree_flatten(error)
  err_avals = _avals(err_vals)
  _, hoisted, hconsts, out_tree, _ = _trace(
      _runner(call_jaxpr, enabled, err_tree, len(err_vals), before=num_consts),
      c_avals + err_avals + v_avals, err_avals=err_avals, anchor=call_jaxpr,
      key=("custom", enabled, err_tree, num_consts))
  return consts, vals, err_vals, err_avals, hoisted, hconsts, out_tree


def _custom_jvp_rule(error, enabled, *args, call_jaxpr, jvp_jaxpr_fun, num_consts,
                     symbolic_zeros, name):
  from pyjax._src import api_ad
  error, meta = _strip(error)
  consts, vals, err_vals, err_avals, hoisted, hconsts, out_tree = _custom_call_parts(
      error, enabled, args, call_jaxpr, num_consts)
  ne = len(err_vals)

  def jvp(*pt):
    # The rule itself is not checked (as in JAX): the error passes through unchanged.
    n = len(pt) // 2
    p, t = pt[:n], pt[n:]
    outs = jvp_jaxpr_fun(*p[ne:], *t[ne:])
    m = len(outs) // 2
    return [*p[:ne], *outs[:m], *t[:ne], *outs[m:]]

  outs = api_ad.custom_jvp_call_p.bind(
      *hconsts, *consts, *err_vals, *vals, call_jaxpr=hoisted,
      jvp_jaxpr_fun=api_ad._Named(jvp, repr(jvp_jaxpr_fun)),
      num_consts=len(hconsts) + num_consts, symbolic_zeros=symbolic_zeros, name=name)
  err, out = tree_util.tree_unflatten(out_tree, outs)
  return _with_meta(err, meta), out


def _custom_vjp_rule(error, enabled, *args, call_jaxpr, fwd_jaxpr_thunk, bwd, num_consts,
                     symbolic_zeros, name):
  from pyjax._src import api_ad
  error, meta = _strip(error)
  consts, vals, err_vals, err_avals, hoisted, hconsts, out_tree = _custom_call_parts(
      error, enabled, args, call_jaxpr, num_consts)
  ne = len(err_vals)

  def fwd(*xs):
    # As in JAX the fwd rule is not checked: the input error is forwarded.
    out_leaves, res_leaves, make_bwd = fwd_jaxpr_thunk(*xs[ne:])

    def make_bwd_new(in_avals):
      inner = make_bwd(list(in_avals)[ne:])

      def bwd_new(res, cts):
        zeros = [ad.Zero(ad.tangent_aval(a)) for a in err_avals]
        return zeros + list(inner(res, list(cts)[ne:]))
      return api_ad._Named(bwd_new, repr(inner))
    return [*xs[:ne], *out_leaves], res_leaves, make_bwd_new

  outs = api_ad.custom_vjp_call_p.bind(
      *hconsts, *consts, *err_vals, *vals, call_jaxpr=hoisted,
      fwd_jaxpr_thunk=api_ad._Named(fwd, repr(fwd_jaxpr_thunk)), bwd=bwd,
      num_consts=len(hconsts) + num_consts, symbolic_zeros=symbolic_zeros, name=name)
  err, out = tree_util.tree_unflatten(out_tree, outs)
  return _with_meta(err, meta), out


def register(table, cond_p, while_p, scan_p, jit_p, remat_p, custom_jvp_call_p,
             custom_vjp_call_p):
  table[cond_p] = _cond_rule
  table[while_p] = _while_rule
  table[scan_p] = _scan_rule
  table[jit_p] = _jit_rule
  table[remat_p] = _remat_rule
  table[custom_jvp_call_p] = _custom_jvp_rule
  table[custom_vjp_call_p] = _custom_vjp_rule
