"""Rematerialization: ``jax.checkpoint`` / ``jax.remat``, ``checkpoint_name`` and the
``checkpoint_policies``.

``checkpoint(f)`` stages ``f`` into a jaxpr and binds ``remat_p`` (printed ``remat2``, as
JAX 0.10.2 prints it; params ``jaxpr`` — an open Jaxpr whose constants are leading
arguments —, ``prevent_cse``, ``differentiated``, ``policy``).  Evaluating it just runs
the jaxpr; the point is what differentiation does with it:

* forward mode (``jvp``): the JVP of the jaxpr is staged into a new ``remat2``;
* linearize / reverse mode: the body is linearized in a staging trace, giving the primal
  computation ``K`` (which also returns the residuals the tangent computation reads)
  and the linear tangent jaxpr ``L``.  The policy decides, per equation of ``K``, whether
  its outputs may be *saved*; residuals that are not saved are *recomputed*: the
  equations of ``K`` they depend on (back to saved values or the primal inputs) are
  copied in front of ``L`` into one ``remat2[differentiated=True]`` equation of the
  tangent computation.  The rest of ``K`` (primal outputs and saved residuals) runs now
  (inlined, as in JAX; saved intermediates that other primal equations also read pass
  through ``reduce_precision`` so they are not fused away, as in JAX).
* transposing a ``remat2`` stages the backward pass of its jaxpr into a new ``remat2``:
  the recomputation happens inside it, during the backward pass.
* ``vmap`` batches the jaxpr (``batching.batch_jaxpr``) into a new ``remat2``.

A policy is called as ``policy(prim, *in_avals, **params)`` for each equation of the
primal computation and returns a bool (or ``Saveable``/``Recompute``/``Offloadable``;
offloading is treated as saving: there is one memory space here).
"""
from __future__ import annotations

import dataclasses
import types
import weakref

from pyjax._src import core, dtypes, errors
from pyjax._src import tree_util
from pyjax._src import api_util as _api_util
from pyjax._src.config import config
from pyjax._src.interpreters import ad, staging
from pyjax._src.interpreters.ad import Zero

__all__ = ["checkpoint", "remat", "checkpoint_name", "checkpoint_policies", "remat_p",
           "name_p", "print_saved_residuals", "saved_residuals", "Saveable", "Recompute",
           "Offloadable"]


# --- policies ------------------------------------------------------------------------------
class _Decision:
  __slots__ = ("name",)

  def __init__(self, name):
    self.name = name

  def __repr__(self):
    return self.name


Saveable = _Decision("Saveable")
Recompute = _Decision("Recompute")


@dataclasses.dataclass(frozen=True)
class Offloadable:
  """Save a residual in another memory space (here: saved)."""
  src: str
  dst: str


def everything_saveable(*_, **__):
  """Save every residual (as if the function were not checkpointed)."""
  return True


def nothing_saveable(*_, **__):
  """Recompute everything from the inputs (the default policy)."""
  return False


def _dot_batch_dims(params):
  (_, _), (lb, rb) = params["dimension_numbers"]
  return bool(lb) or bool(rb)


@dataclasses.dataclass(frozen=True)
class DotsSaveable:
  """Save the results of matrix products (and convolutions)."""
  only_if_no_batch_dims: bool

  def __call__(self, prim, *args, **params):
    if self.only_if_no_batch_dims:
      return prim.name == "dot_general" and not _dot_batch_dims(params)
    return prim.name in ("dot_general", "conv_general_dilated")


dots_saveable = checkpoint_dots = DotsSaveable(False)
dots_with_no_batch_dims_saveable = DotsSaveable(True)


def offload_dot_with_no_batch_dims(offload_src, offload_dst):
  """Like ``dots_with_no_batch_dims_saveable``, offloading instead of saving."""
  def policy(prim, *_, **params):
    if prim.name == "dot_general" and not _dot_batch_dims(params):
      return Offloadable(offload_src, offload_dst)
    return Recompute
  return policy


@dataclasses.dataclass(frozen=True)
class SaveOnlyTheseNames:
  saveable_names: frozenset

  def __call__(self, prim, *_, **params):
    return prim.name == "name" and params["name"] in self.saveable_names


@dataclasses.dataclass(frozen=True)
class SaveAnyNamesButThese:
  names: frozenset

  def __call__(self, prim, *_, **params):
    return prim.name == "name" and params["name"] not in self.names


def save_only_these_names(*names_which_can_be_saved):
  """Save only values named (``checkpoint_name``) with one of these names."""
  return SaveOnlyTheseNames(frozenset(names_which_can_be_saved))


def save_any_names_but_these(*names_not_to_save):
  """Save only named values, except those with these names."""
  return SaveAnyNamesButThese(frozenset(names_not_to_save))


def save_anything_except_these_names(*names_not_to_save):
  """Save any value (named or not) — as JAX's, names are not consulted."""
  return lambda *_, **__: True


def save_and_offload_only_these_names(*, names_which_can_be_saved,
                                      names_which_can_be_offloaded, offload_src, offload_dst):
  """Save the first group of names and offload the second (offloaded = saved here)."""
  saved = set(names_which_can_be_saved)
  offloaded = set(names_which_can_be_offloaded)
  both = saved & offloaded
  if both:
    raise ValueError(
        "The names should be exclusive and should not intersect in "
        "`names_which_can_be_saved` and `names_which_can_be_offloaded`. Got "
        f"names_which_can_be_saved={saved}, names_which_can_be_offloaded={offloaded} and "
        f"the intersection={both}")

  def policy(prim, *_, **params):
    if prim.name == "name" and params["name"] in saved:
      return Saveable
    if prim.name == "name" and params["name"] in offloaded:
      return Offloadable(offload_src, offload_dst)
    return Recompute
  return policy


def save_from_both_policies(policy_1, policy_2):
  """Save what either policy saves (both must return bools)."""
  def policy(prim, *args, **params):
    a = policy_1(prim, *args, **params)
    b = policy_2(prim, *args, **params)
    if not (isinstance(a, bool) and isinstance(b, bool)):
      raise ValueError("The return value of the policies should be a boolean. Got: "
                       f"{a} and {b}. Please write a custom policy function directly, rather "
                       "than using this helper function.")
    return a or b
  return policy


checkpoint_policies = types.SimpleNamespace(
    everything_saveable=everything_saveable, nothing_saveable=nothing_saveable,
    dots_saveable=dots_saveable, checkpoint_dots=dots_saveable,
    dots_with_no_batch_dims_saveable=dots_with_no_batch_dims_saveable,
    checkpoint_dots_with_no_batch_dims=dots_with_no_batch_dims_saveable,
    offload_dot_with_no_batch_dims=offload_dot_with_no_batch_dims,
    save_anything_except_these_names=save_anything_except_these_names,
    save_any_names_but_these=save_any_names_but_these,
    save_only_these_names=save_only_these_names,
    save_from_both_policies=save_from_both_policies,
    save_and_offload_only_these_names=save_and_offload_only_these_names)


def _saveable(policy, eqn):
  if policy is None:
    return False
  d = policy(eqn.primitive, *[v.aval for v in eqn.invars], **eqn.params)
  if d is Recompute:
    return False
  if d is Saveable or isinstance(d, Offloadable):
    return True
  return bool(d)


# --- checkpoint_name -----------------------------------------------------------------------
name_p = core.Primitive("name")
name_p.def_abstract_eval(lambda x, *, name: x)
name_p.def_impl(lambda x, *, name: x)


def _name_jvp(primals, tangents, *, name):
  (x,), (t,) = primals, tangents
  return name_p.bind(x, name=name), t   # the tangent is not named


ad.primitive_jvps[name_p] = _name_jvp


def checkpoint_name(x, name):
  """Name every leaf of ``x`` for ``checkpoint`` policies (``save_only_these_names``
  ...); the identity otherwise."""
  return tree_util.tree_map(lambda v: name_p.bind(v, name=name), x)


# --- the remat primitive ---------------------------------------------------------------------
remat_p = core.Primitive("remat2")
remat_p.multiple_results = True


@remat_p.def_effectful_abstract_eval
def _remat_abstract(*avals, jaxpr, prevent_cse, differentiated, policy):
  del avals, prevent_cse, differentiated, policy
  return [v.aval for v in jaxpr.outvars], jaxpr.effects


@remat_p.def_impl
def _remat_impl(*args, jaxpr, prevent_cse, differentiated, policy):
  del prevent_cse, differentiated, policy
  return core.eval_jaxpr(jaxpr, [], *args)


def _open(closed):
  """(open Jaxpr with the constants as leading inputs, constants)."""
  j = closed.jaxpr
  return (core.Jaxpr([], list(j.constvars) + list(j.invars), j.outvars, j.eqns, j.effects,
                     j.debug_info), list(closed.consts))


def _cse(prevent_cse, front, mid, back=0):
  """``prevent_cse`` for new arguments: a bool stays; a tuple gets ``front`` leading
  Falses (constants), keeps ``mid`` (a sequence of flags) and ``back`` trailing Trues."""
  if isinstance(prevent_cse, bool):
    return prevent_cse
  return (False,) * front + tuple(mid) + (True,) * back


# --- forward mode ----------------------------------------------------------------------------
def _remat_jvp(interp, primals, tangents, *, jaxpr, prevent_cse, differentiated, policy):
  if interp.tangent_interp is not None:
    return _remat_linearize(interp, primals, tangents, jaxpr, prevent_cse, differentiated,
                            policy)
  nz = [type(t) is not Zero for t in tangents]
  n = len(primals)
  nz_ts = [t for t, m in zip(tangents, nz) if m]
  in_avals = [core.get_aval(p) for p in primals] + [core.get_aval(t) for t in nz_ts]

  def build():
    mask_cell = []

    def jvp_fun(*args):
      it = iter(args[n:])
      ts = [next(it) if m else Zero(ad.tangent_aval(core.get_aval(p)))
            for p, m in zip(args[:n], nz)]
      out_p, out_t = ad.jvp_flat(lambda *xs: core.eval_jaxpr(jaxpr, [], *xs), list(args[:n]),
                                 ts)
      mask = [type(t) is not Zero for t in out_t]
      mask_cell.append(mask)
      return list(out_p) + [t for t, m in zip(out_t, mask) if m]

    with core.set_interpreter(interp.parent):
      closed, tconsts = staging.trace_flat(jvp_fun, in_avals)
    new_jaxpr, consts = _open(closed)
    return (new_jaxpr, consts, tconsts, mask_cell[-1]), not tconsts

  new_jaxpr, consts, tconsts, mask = ad.memo(jaxpr, ("jvp", tuple(nz), tuple(in_avals)), build)
  cse = _cse(prevent_cse, len(consts) + len(tconsts),
             prevent_cse if isinstance(prevent_cse, bool) else prevent_cse, len(nz_ts))
  with core.set_interpreter(interp.parent):
    outs = remat_p.bind(*consts, *tconsts, *primals, *nz_ts, jaxpr=new_jaxpr,
                        prevent_cse=cse, differentiated=differentiated, policy=policy)
  n_out = len(jaxpr.outvars)
  it = iter(outs[n_out:])
  out_t = [next(it) if m else Zero(ad.tangent_aval(v.aval)) for m, v in zip(mask, jaxpr.outvars)]
  return list(outs[:n_out]), out_t


# --- linearize (partial evaluation with the policy) -----------------------------------------
def _plan(K, residual_vars, policy):
  """Split the primal jaxpr ``K`` for the residual variables the tangent jaxpr reads:
  returns (saved intermediate vars, indices of equations to recompute, K inputs and K
  constvars the recomputation reads)."""
  producer = {}
  for i, e in enumerate(K.eqns):
    for o in e.outvars:
      producer[o] = i
  inputs, constvars = set(K.invars), set(K.constvars)
  saved, saved_set, recompute, used_in, used_c = [], set(), set(), set(), set()
  stack = list(reversed(residual_vars))
  # debug callbacks run again with the recomputation (as in JAX, whatever the policy)
  for i, e in enumerate(K.eqns):
    if e.effects and all(f.name in ("Debug", "OrderedDebug") for f in e.effects):
      recompute.add(i)
      stack.extend(reversed(e.invars))
  while stack:
    v = stack.pop()
    if type(v) is core.Literal:
      continue
    if v in inputs:
      used_in.add(v)
      continue
    if v in constvars:
      used_c.add(v)
      continue
    i = producer[v]
    if i in recompute or v in saved_set:
      continue
    e = K.eqns[i]
    if _saveable(policy, e):
      saved.append(v)
      saved_set.add(v)
      continue
    recompute.add(i)
    stack.extend(reversed(e.invars))
  saved.sort(key=lambda v: producer[v])
  return saved, recompute, used_in, used_c


def _live_eqns(K, out_vars):
  """Indices of the equations of ``K`` needed for ``out_vars`` (and effectful ones)."""
  live = {v for v in out_vars if type(v) is not core.Literal}
  keep = []
  for i in range(len(K.eqns) - 1, -1, -1):
    e = K.eqns[i]
    if e.effects or any(o in live for o in e.outvars):
      keep.append(i)
      live.update(v for v in e.invars if type(v) is not core.Literal)
  keep.reverse()
  return keep


def _eval_known(K, env, keep, saved):
  """Run the kept equations of ``K`` on the current interpreter; saved intermediates
  that other kept equations read pass through ``reduce_precision`` (as JAX does)."""
  from pyjax._src.lax import elementwise as ew
  used = set()
  for i in keep:
    used.update(v for v in K.eqns[i].invars if type(v) is not core.Literal)
  fence = {v for v in saved if v in used and dtypes.is_inexact(v.aval.dtype)}

  def read(v):
    return core.literal_value(v) if type(v) is core.Literal else env[v]

  state = core._state
  prev_src = state.source_info
  try:
    for i in keep:
      e = K.eqns[i]
      state.source_info = e.source_info or prev_src   # keep the user's source lines
      out = e.primitive.bind(*[read(v) for v in e.invars], **e.params)
      outs = out if e.primitive.multiple_results else [out]
      for v, o in zip(e.outvars, outs):
        if v in fence:
          fi = dtypes.finfo(v.aval.dtype)
          params = dict(exponent_bits=int(fi.nexp), mantissa_bits=int(fi.nmant))
          if not (e.primitive is ew.reduce_precision_p and e.params == params):
            o = ew.reduce_precision_p.bind(o, **params)
        env[v] = o
  finally:
    state.source_info = prev_src


def _creation_order(eqn):
  return eqn.outvars[0]._count if eqn.outvars else -1


class _RematSplit:
  """A remat body split for linearize: the primal jaxpr ``K`` and what the staged
  ``remat2`` of the tangent computation needs (see the module docstring)."""
  __slots__ = ("K", "k_consts", "n_out", "live", "saved", "body", "c_vars", "l_const_vals",
               "in_vars", "in_mask", "out_mask", "out_avals")


def _split_remat(interp, primals, jaxpr, nz, policy):
  cell = []

  def known(*ps):
    def inner(*lin_args):
      it = iter(lin_args)
      return core.eval_jaxpr(jaxpr, [], *[next(it) if m else p for p, m in zip(ps, nz)])
    out_p, lin = ad.linearize_flat(inner, [p for p, m in zip(ps, nz) if m],
                                   forward=interp.forward)
    cell.append(lin)
    return list(out_p) + [c for c in lin.consts if isinstance(c, core.Tracer)]

  with core.set_interpreter(interp.parent):
    k_closed, k_tconsts = staging.trace_flat(known, [core.get_aval(p) for p in primals])
  if k_tconsts:   # never expected: the remat body is closed
    raise NotImplementedError("checkpoint: the linearized body closed over outer tracers")
  lin = cell[-1]
  K = k_closed.jaxpr
  n_out = len(jaxpr.outvars)
  L = lin.jaxpr
  # the tangent jaxpr's residual constvars, as variables of K (or concrete constants)
  sub, l_consts = {}, []
  res_iter = iter(K.outvars[n_out:])
  for v, c in zip(L.constvars, lin.consts):
    if isinstance(c, core.Tracer):
      sub[v] = next(res_iter)
    else:
      l_consts.append((v, c))
  saved, recompute, used_in, used_c = _plan(K, list(sub.values()), policy)
  r = _RematSplit()
  r.K, r.k_consts, r.n_out, r.saved = K, k_closed.consts, n_out, saved
  r.live = _live_eqns(K, list(K.outvars[:n_out]) + saved)
  r.in_mask, r.out_mask, r.out_avals = lin.in_mask, lin.out_mask, lin.out_avals
  r.body = None
  if L.outvars:
    # the staged part: recompute what is not saved, then the linear tangent equations
    r.c_vars = [v for v in K.constvars if v in used_c]
    r.l_const_vals = [c for _, c in l_consts]
    r.in_vars = [v for v in K.invars if v in used_in]

    def rename(v):
      return sub.get(v, v) if type(v) is not core.Literal else v
    # recomputed and linear equations in the order the JVP created them (as JAX's)
    eqns = [K.eqns[i] for i in sorted(recompute)]
    eqns += [e.replace(invars=[rename(v) for v in e.invars]) for e in L.eqns]
    eqns.sort(key=_creation_order)
    r.body = core.Jaxpr([], r.c_vars + [v for v, _ in l_consts] + saved + r.in_vars
                        + list(L.invars), [rename(v) for v in L.outvars], eqns,
                        frozenset().union(*(e.effects for e in eqns)))
  return r


def _remat_linearize(interp, primals, tangents, jaxpr, prevent_cse, differentiated, policy):
  nz = [type(t) is not Zero for t in tangents]
  key = ("linearize", tuple(nz), interp.forward, policy,
         tuple(core.get_aval(p) for p in primals))
  r = ad.memo(jaxpr, key, lambda: (_split_remat(interp, primals, jaxpr, nz, policy), True))
  K = r.K
  # the known part runs now: primal outputs and saved residuals
  env = dict(zip(K.invars, primals))
  env.update(zip(K.constvars, r.k_consts))
  with core.set_interpreter(interp.parent):
    _eval_known(K, env, r.live, r.saved)
  out_p = [core.literal_value(v) if type(v) is core.Literal else env[v]
           for v in K.outvars[:r.n_out]]
  nz_ts = [t for t in tangents if type(t) is not Zero]
  t_in = [t for t, m in zip(nz_ts, r.in_mask) if m]
  out_t_nz = []
  if r.body is not None:
    c_vals = [env[v] for v in r.c_vars] + r.l_const_vals
    args = c_vals + [env[v] for v in r.saved] + [env[v] for v in r.in_vars] + t_in
    if isinstance(prevent_cse, bool):
      cse = prevent_cse
    else:
      pos = {v: i for i, v in enumerate(K.invars)}
      cse = ((False,) * len(c_vals) + (True,) * len(r.saved)
             + tuple(prevent_cse[pos[v]] for v in r.in_vars) + (True,) * len(t_in))
    with core.set_interpreter(interp.rule_interp):
      out_t_nz = remat_p.bind(*args, jaxpr=r.body, prevent_cse=cse, differentiated=True,
                              policy=policy)
  it = iter(out_t_nz)
  out_t = [next(it) if m else Zero(a) for m, a in zip(r.out_mask, r.out_avals)]
  return out_p, out_t


ad.interpreter_jvps[remat_p] = _remat_jvp


# --- transpose -------------------------------------------------------------------------------
def _remat_transpose(cts, *args, jaxpr, prevent_cse, differentiated, policy):
  lin_mask = [ad.is_undefined_primal(a) for a in args]
  res = [a for a in args if not ad.is_undefined_primal(a)]
  ct_nz = [type(c) is not Zero for c in cts]
  nz_cts = [c for c, m in zip(cts, ct_nz) if m]
  in_avals = [core.get_aval(x) for x in res] + [core.get_aval(x) for x in nz_cts]

  def build():
    zeros_cell = []

    def bwd(*xs):
      r = iter(xs[:len(res)])
      c = iter(xs[len(res):])
      full_cts = [next(c) if m else Zero(ad.tangent_aval(v.aval))
                  for m, v in zip(ct_nz, jaxpr.outvars)]
      full_args = [a if ad.is_undefined_primal(a) else next(r) for a in args]
      cts_in = ad.backward_pass(jaxpr, [], full_cts, full_args)
      lin_cts = [ct for ct, m in zip(cts_in, lin_mask) if m]
      zeros_cell.append([type(ct) is Zero for ct in lin_cts])
      return [ct for ct in lin_cts if type(ct) is not Zero]

    closed, tconsts = staging.trace_flat(bwd, in_avals)
    new_jaxpr, consts = _open(closed)
    return (new_jaxpr, consts, tconsts, zeros_cell[-1]), not tconsts

  new_jaxpr, consts, tconsts, zeros = ad.memo(
      jaxpr, ("transpose", tuple(lin_mask), tuple(ct_nz), tuple(in_avals),
              tuple(a.aval for a in args if ad.is_undefined_primal(a))), build)
  if isinstance(prevent_cse, bool):
    cse = prevent_cse
  else:
    cse = ((False,) * (len(consts) + len(tconsts))
           + tuple(p for p, m in zip(prevent_cse, lin_mask) if not m) + (True,) * len(nz_cts))
  outs = iter(remat_p.bind(*consts, *tconsts, *res, *nz_cts, jaxpr=new_jaxpr, prevent_cse=cse,
                           differentiated=differentiated, policy=policy))
  zeros = iter(zeros)
  return [(None if next(zeros) else next(outs)) if m else None for m in lin_mask]


ad.primitive_transposes[remat_p] = _remat_transpose


# --- batching ----------------------------------------------------------------------------------
def _remat_batch(axis_data, args, dims, *, jaxpr, prevent_cse, differentiated, policy):
  from pyjax._src.interpreters import batching
  moved = [x if d is None else batching.moveaxis(x, d, 0) for x, d in zip(args, dims)]
  closed, out_batched = batching.batch_jaxpr(core.ClosedJaxpr(jaxpr, []), axis_data,
                                             [d is not None for d in dims], False)
  new_jaxpr, consts = _open(closed)
  cse = prevent_cse if isinstance(prevent_cse, bool) else (False,) * len(consts) + prevent_cse
  outs = remat_p.bind(*consts, *moved, jaxpr=new_jaxpr, prevent_cse=cse,
                      differentiated=differentiated, policy=policy)
  return list(outs), [0 if b else None for b in out_batched]


def _name_batch(args, dims, *, name):
  (x,), (d,) = args, dims
  return name_p.bind(x, name=name), d


def _register_batching():
  try:
    from pyjax._src.interpreters import batching
  except ImportError:
    return
  batching.axis_primitive_batchers[remat_p] = _remat_batch
  batching.primitive_batchers[name_p] = _name_batch


_register_batching()


# --- the public API ----------------------------------------------------------------------------
_trace_cache = weakref.WeakKeyDictionary()   # fun -> {key: (ClosedJaxpr, out_tree)}


class _DeprecatedArg:
  def __repr__(self):
    return "DeprecatedArg()"


_DEPRECATED = _DeprecatedArg()


def _static_split(fun, static_argnums, args):
  if not (type(static_argnums) is tuple and all(type(d) is int for d in static_argnums)):
    raise TypeError("the `static_argnums` argument to `jax.checkpoint` / `jax.remat` must be "
                    f"an int, tuple of ints or, bool, but got value {static_argnums}")
  n = len(args)
  if not all(-n <= d < n for d in static_argnums):
    raise ValueError("the `static_argnums` argument to `jax.checkpoint` / `jax.remat` can "
                     "only take integer values greater than or equal to `-len(args)` and less "
                     f"than `len(args)`, but got {static_argnums}, while `len(args)` = {n}")
  snums = frozenset(d % n for d in static_argnums)
  static = tuple(args[i] for i in sorted(snums))
  dyn = tuple(a for i, a in enumerate(args) if i not in snums)

  def merged(*dyn_args, **kwargs):
    s, d = iter(static), iter(dyn_args)
    return fun(*[next(s) if i in snums else next(d) for i in range(n)], **kwargs)
  return merged, dyn, static, snums


def _static_key(static):
  key = []
  for x in static:
    try:
      hash(x)
      key.append((True, x))
    except TypeError:
      key.append((False, id(x)))
  return tuple(key)


def _trace(fun, fun_, args, kwargs, dyn, snums, static):
  leaves, in_tree = tree_util.tree_flatten((dyn, kwargs))
  avals = []
  for x in leaves:
    try:
      avals.append(core.get_aval(x))
    except TypeError:
      raise TypeError(f"Argument '{x}' of type {type(x)} is not a valid JAX type") from None
  key = None
  if not any(isinstance(x, core.Tracer) for x in static):
    try:
      key = (in_tree, tuple(avals), _static_key(static), config.trace_state())
      hit = _trace_cache.get(fun, {}).get(key)
    except TypeError:
      key, hit = None, None
    if hit is not None:
      return hit, leaves
  debug = staging.DebugInfo("checkpoint / remat", staging.fun_source_info(fun),
                            staging.arg_names_of(fun, args, kwargs, snums),
                            staging.fun_name(fun))
  out_cell = []

  def flat_fun(*flat):
    a, k = in_tree.unflatten(flat)
    out = fun_(*a, **k)
    out_leaves, out_tree = tree_util.tree_flatten(out)
    staging.check_outputs(out_leaves, out_tree, debug)
    out_cell.append(out_tree)
    return out_leaves

  try:
    closed, tconsts = staging.trace_flat(flat_fun, avals, debug)
  except errors.ConcretizationTypeError as e:
    msg = e.args[0] if e.args else ""
    if "for checkpoint" in msg:
      e.args = (msg + "\n\nConsider using the `static_argnums` parameter for `jax.remat` or "
                "`jax.checkpoint`. See the `jax.checkpoint` docstring and its example "
                "involving `static_argnums`:\n"
                "https://docs.jax.dev/en/latest/_autosummary/jax.checkpoint.html\n",)
    raise
  new_jaxpr, consts = _open(closed)
  result = (new_jaxpr, consts, tconsts, out_cell[-1])
  if key is not None and not tconsts:
    try:
      _trace_cache.setdefault(fun, {})[key] = result
    except TypeError:
      pass
  return result, leaves


def checkpoint(fun, *, prevent_cse=True, policy=None, static_argnums=(), concrete=_DEPRECATED):
  """Make ``fun`` recompute its internal values during the backward pass instead of
  storing them (``jax.checkpoint``, alias ``jax.remat``).  ``policy`` (see
  ``checkpoint_policies``) chooses which intermediates may be saved; ``static_argnums``
  marks arguments passed as Python values (so Python control flow may depend on them);
  ``prevent_cse`` (a bool or one bool per argument) is recorded in the jaxpr.

  Differs from JAX: ``prevent_cse`` has no further effect (the CPU backend does no
  common-subexpression elimination across ``remat2`` equations)."""
  if concrete is not _DEPRECATED:
    raise NotImplementedError(
        "The `concrete` option to `jax.checkpoint` was deprecated in JAX v0.8.2, and removed "
        "in JAX v0.10.0. In its place please use `static_argnums`; for details refer to "
        "https://docs.jax.dev/en/latest/jep/11830-new-remat-checkpoint.html.")
  if isinstance(static_argnums, int):
    static_argnums = (static_argnums,)
  if isinstance(prevent_cse, (list, tuple)):
    prevent_cse = tuple(prevent_cse)
  if not isinstance(prevent_cse, (tuple, bool)):
    raise TypeError(f"prevent_cse must be a bool or tuple of bools, got "
                    f"type(prevent_cse)={type(prevent_cse)}")

  @_api_util.wraps(fun)
  def fun_remat(*args, **kwargs):
    fun_, dyn, static, snums = _static_split(fun, static_argnums, args)
    (jaxpr, consts, tconsts, out_tree), leaves = _trace(fun, fun_, args, kwargs, dyn, snums,
                                                        static)
    if isinstance(prevent_cse, tuple):
      cse_args = (tuple(dyn), kwargs) if kwargs else tuple(dyn)
      flags = tree_util.broadcast_prefix(prevent_cse, cse_args)
      cse = (False,) * (len(consts) + len(tconsts)) + tuple(flags)
    else:
      cse = prevent_cse
    outs = remat_p.bind(*consts, *tconsts, *leaves, jaxpr=jaxpr, prevent_cse=cse,
                        differentiated=False, policy=policy)
    return tree_util.tree_unflatten(out_tree, outs)
  return fun_remat


def remat(fun, *, prevent_cse=True, policy=None, static_argnums=(), concrete=_DEPRECATED):
  """Alias of ``checkpoint``."""
  return checkpoint(fun, prevent_cse=prevent_cse, policy=policy,
                    static_argnums=static_argnums, concrete=concrete)


# --- inspecting residuals -------------------------------------------------------------------
def saved_residuals(f, *args, **kwargs):
  """``(aval, description)`` for each value reverse mode stores for ``f(*args,
  **kwargs)``: non-scalar constants, the arguments it reads (``"from the argument x"``)
  and saved intermediates (``"output of sin from file:line (f)"``, ``"named 'z' from
  ..."``), in JAX's order.  Which intermediates are stored follows pyjax's JVP rules,
  which may choose different residuals than JAX's for some primitives."""
  leaves, in_tree = tree_util.tree_flatten((args, kwargs))
  names = staging.arg_names_of(f, args, kwargs) or [None] * len(leaves)
  cell = []

  def known(*ps):
    def inner(*xs):
      aa, kk = in_tree.unflatten(xs)
      return tree_util.tree_leaves(f(*aa, **kk))
    out_p, lin = ad.linearize_flat(inner, list(ps), forward=False)
    cell.append((len(out_p), lin))
    return list(out_p) + [c for c in lin.consts if isinstance(c, core.Tracer)]

  closed, _ = staging.trace_flat(known, [core.get_aval(x) for x in leaves])
  K = closed.jaxpr
  n_out, lin = cell[-1]
  # look through the reduce_precision fences to the producing equation
  fence = {e.outvars[0]: e.invars[0] for e in K.eqns if e.primitive.name == "reduce_precision"}
  res = {fence.get(v, v) for v in K.outvars[n_out:] if type(v) is not core.Literal}
  out = [(core.get_aval(c), "from a constant") for c in lin.consts
         if not isinstance(c, core.Tracer) and core.get_aval(c).shape]
  out += [(v.aval, "from a constant") for v in K.constvars if v in res]
  for i, v in enumerate(K.invars):
    if v in res:
      out.append((v.aval, f"from the argument {names[i]}" if names[i]
                  else f"from the argument at flattened index {i}"))
  for e in K.eqns:
    for v in e.outvars:
      if v in res:
        out.append((v.aval, _describe_residual(e)))
  return out


def _describe_residual(eqn):
  src = core.summarize_source(eqn.source_info)
  if eqn.primitive.name == "name":
    return f"named '{eqn.params['name']}' from {src}"
  if eqn.primitive.name == "jit":
    return f"output of jitted function '{eqn.params['name']}' from {src}"
  return f"output of {eqn.primitive.name} from {src}"


def print_saved_residuals(f, *args, **kwargs):
  """Print ``saved_residuals(f, *args, **kwargs)``, one per line."""
  for aval, desc in saved_residuals(f, *args, **kwargs):
    print(f"{aval.str_short(short_dtypes=True)} {desc}")

