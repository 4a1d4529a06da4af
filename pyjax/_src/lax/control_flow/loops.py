"""Loops: ``lax.while_loop``, ``lax.fori_loop``, ``lax.scan`` and ``lax.map``; the
``while`` and ``scan`` primitives.

* ``while_p.bind(*cond_consts, *body_consts, *init, cond_jaxpr, body_jaxpr,
  cond_nconsts, body_nconsts)``: iterate ``body_jaxpr`` while ``cond_jaxpr`` holds.
  A non-scalar (batched) predicate keeps the loop running until every lane is done,
  updating only the lanes whose predicate holds.
* ``scan_p.bind(*consts, *init, *xs, jaxpr, length, reverse, unroll, num_consts,
  num_carry)``: ``jaxpr`` maps (consts, carry, x slices) to (carry, y slices); the
  outputs are the final carry and the stacked ys.  Params as JAX 0.10.2 prints them
  (JAX's ``_split_transpose`` argument of ``lax.scan`` is accepted and ignored).

As in JAX, loop-invariant carries (forwarded unchanged by the body) become constants,
``ys`` forwarded from ``xs`` are not computed by the primitive, a weakly typed initial
carry whose type the body changes is promoted and the body retraced, and
``fori_loop`` is a ``scan`` when its bounds are concrete (so reverse mode works) and a
``while`` otherwise.

Rules (declared below each primitive):
* JVP: both primitives carry tangents along (fixpoint over which carries have nonzero
  tangents).  Under ``linearize`` (reverse mode) ``scan`` splits into a primal scan that
  also emits per-iteration residuals and a linear tangent scan; residuals that are
  constants or ``xs`` of the scan are passed through, not stacked.  Transposing a scan
  gives a scan in the opposite direction.  A ``while`` under linearize stages its JVP
  loop into the linear part; transposing it raises JAX's error.
* Batching: a batched predicate turns ``while`` into a loop over all lanes (see above);
  ``scan`` batches its body with ``xs``/``ys`` batched along axis 1.
"""
from __future__ import annotations

import operator
import weakref

import numpy as np

from pyjax._src import core, dtypes, errors
from pyjax._src import tree_util
from pyjax._src.avals import ShapedArray
from pyjax._src.config import config
from pyjax._src.interpreters import ad
from pyjax._src.interpreters import batching
from pyjax._src.lax import elementwise as ew
from pyjax._src.lax import shapes
from pyjax._src.lax.control_flow import common
from pyjax._src.state import control_flow as _state_cf

__all__ = ["while_loop", "fori_loop", "scan", "map", "while_p", "scan_p"]

Zero = ad.Zero


def _split(xs, sizes):
  out = []
  i = 0
  for n in sizes:
    out.append(list(xs[i:i + n]))
    i += n
  out.append(list(xs[i:]))
  return out


def _def_abstract(prim, rule):
  if hasattr(prim, "def_effectful_abstract_eval"):
    prim.def_effectful_abstract_eval(rule)
  else:  # pragma: no cover
    prim.def_abstract_eval(lambda *a, **p: rule(*a, **p)[0])


class _ShowAval:
  """Prints like a JAX aval inside error messages (``~float32[]`` / repr)."""

  def __init__(self, aval):
    self.aval = aval

  def __str__(self):
    return str(self.aval)

  def __repr__(self):
    return repr(self.aval)


# ======================================================================================
# while
# ======================================================================================
while_p = core.Primitive("while")
while_p.multiple_results = True


def _while_abstract(*avals, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
  n_carry = len(avals) - cond_nconsts - body_nconsts
  if len(cond_jaxpr.in_avals) != cond_nconsts + n_carry:
    raise TypeError(f"while_loop len(cond_jaxpr.in_avals)={len(cond_jaxpr.in_avals)} but "
                    f"cond_nconsts + carry = {cond_nconsts + n_carry}")
  if len(body_jaxpr.in_avals) != body_nconsts + n_carry:
    raise TypeError(f"while_loop len(body_jaxpr.in_avals)={len(body_jaxpr.in_avals)} but "
                    f"body_nconsts + carry = {body_nconsts + n_carry}")
  return list(body_jaxpr.out_avals), core.join_effects(cond_jaxpr, body_jaxpr)


_def_abstract(while_p, _while_abstract)


def while_loop(cond_fun, body_fun, init_val):
  """``while cond_fun(val): val = body_fun(val)``, as one ``while`` equation.

  Both functions are traced once per carry signature; the carry must keep its tree
  structure and types (a weakly typed initial value is promoted as in JAX).  Forward-
  mode differentiable; reverse mode raises JAX's error (use ``scan`` or ``fori_loop``
  with static bounds)."""
  if not (callable(body_fun) and callable(cond_fun)):
    raise TypeError("lax.while_loop: body_fun and cond_fun arguments should be callable.")
  if _state_cf.live(cond_fun, body_fun):   # outer refs the functions use are carried
    out = _state_cf.while_loop(while_loop, cond_fun, body_fun, init_val)
    if out is not _state_cf.NO_REFS:
      return out
  if config.jax_disable_jit:
    try:
      val = tree_util.tree_map(common.as_array, init_val)
      while cond_fun(val):
        val = tree_util.tree_map(common.as_array, body_fun(val))
      return val
    except errors.ConcretizationTypeError:
      pass
  leaves, tree = tree_util.tree_flatten(init_val)
  args_tree = tree_util.treedef_tuple([tree])
  avals = [core.get_aval(x) for x in leaves]

  def create(avals):
    cj, cconsts, ctree = common.trace_callable(cond_fun, args_tree, avals, "while_cond",
                                               (init_val,))
    bj, bconsts, btree = common.trace_callable(body_fun, args_tree, avals, "while_body",
                                               (init_val,))
    if not tree_util.treedef_is_leaf(ctree) or len(cj.out_avals) != 1:
      raise TypeError(f"cond_fun must return a boolean scalar, but got pytree {ctree}.")
    p = cj.out_avals[0]
    if p.shape != () or p.dtype != np.dtype(bool):
      raise TypeError("cond_fun must return a boolean scalar, but got output type(s) "
                      f"{list(cj.out_avals)}.")
    return cj, cconsts, bj, bconsts, btree

  cj, cconsts, bj, bconsts, btree = create(avals)
  if len(bj.out_avals) != len(avals) or btree != tree:
    common.check_carry_type("while_loop body", body_fun, tree, avals, btree,
                            bj.out_avals)
  changed = False
  new_leaves = []
  for x, a, o in zip(leaves, avals, bj.out_avals):
    x2, ch = common.promote_weak_typed_input(x, a, o)
    new_leaves.append(x2)
    changed = changed or ch
  if changed:
    leaves = new_leaves
    avals = [core.get_aval(x) for x in leaves]
    cj, cconsts, bj, bconsts, btree = create(avals)
  common.check_carry_type("while_loop body", body_fun, tree, avals, btree, bj.out_avals)
  # carries the body forwards unchanged and the predicate ignores become body constants
  nb = len(bconsts)
  body_fwd = common.jaxpr_forwarding(bj.jaxpr)
  carry_nofwd = [nb + i != f for i, f in enumerate(body_fwd)]
  cj_dce, keep_cond = common.dce_jaxpr(cj.jaxpr, [True], [True] * len(cconsts) + carry_nofwd)
  move = [not k for k in keep_cond[len(cconsts):]]
  init_vals = list(leaves)
  moved = []
  if any(move):
    cj = core.ClosedJaxpr(cj_dce, cj.consts)
    bj = common.prune_outputs(bj, [not m for m in move])
    bj = common.move_binders_to_front(bj, [False] * nb + move)
    moved = [x for x, m in zip(init_vals, move) if m]
    init_vals = [x for x, m in zip(init_vals, move) if not m]
    bconsts = moved + list(bconsts)
  outs = while_p.bind(*cconsts, *bconsts, *init_vals, cond_nconsts=len(cconsts),
                      cond_jaxpr=cj, body_nconsts=len(bconsts), body_jaxpr=bj)
  if any(move):
    it_o, it_m = iter(outs), iter(moved)
    outs = [next(it_m) if m else next(it_o) for m in move]
  return btree.unflatten(outs)


def _while_rearranged_jvp(body_jaxpr, body_nconsts, bconst_nz, carry_nz):
  """The body's JVP with binders (bconsts, bconst tangents, carry, carry tangents) and
  outputs (carry, carry tangents)."""
  n_carry = len(carry_nz)
  jj, out_nz = common.jvp_jaxpr_cached(body_jaxpr, list(bconst_nz) + list(carry_nz),
                                       list(carry_nz))
  n_bt = sum(bconst_nz)
  j = jj.jaxpr
  pv = j.invars[:body_nconsts]
  cv = j.invars[body_nconsts:body_nconsts + n_carry]
  tv = j.invars[body_nconsts + n_carry:]
  invars = list(pv) + list(tv[:n_bt]) + list(cv) + list(tv[n_bt:])
  new = core.ClosedJaxpr(core.Jaxpr(j.constvars, invars, j.outvars, j.eqns, j.effects,
                                    j.debug_info), jj.consts)
  return new, out_nz


def _while_jvp_fixpoint(body_jaxpr, body_nconsts, bconst_nz, init_nz):
  carry_nz = list(init_nz)
  for _ in range(1 + len(carry_nz)):
    _, out_nz = common.jvp_jaxpr_cached(body_jaxpr, list(bconst_nz) + carry_nz, carry_nz)
    new = [a or b for a, b in zip(carry_nz, out_nz)]
    if new == carry_nz:
      break
    carry_nz = new
  return carry_nz


def _while_jvp_bind(primals, tangents, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
  """Bind the JVP while loop on the current interpreter; returns (primal outs, tangent
  outs (Zero where none))."""
  nz = [type(t) is not Zero for t in tangents]
  _, bconst_nz, init_nz = _split(nz, [cond_nconsts, body_nconsts])
  carry_nz = _while_jvp_fixpoint(body_jaxpr, body_nconsts, bconst_nz, init_nz)
  body_jvp, _ = _while_rearranged_jvp(body_jaxpr, body_nconsts, bconst_nz, carry_nz)
  cconsts, bconsts, init = _split(primals, [cond_nconsts, body_nconsts])
  _, bconst_t, init_t = _split(tangents, [cond_nconsts, body_nconsts])
  bconst_t = [t for t in bconst_t if type(t) is not Zero]
  init_t = [ad.instantiate_zeros(t) for t, m in zip(init_t, carry_nz) if m]
  cond_aug = common.append_inputs(cond_jaxpr, [core.get_aval(t) for t in init_t])
  outs = while_p.bind(*cconsts, *bconsts, *bconst_t, *init, *init_t,
                      cond_nconsts=cond_nconsts, cond_jaxpr=cond_aug,
                      body_nconsts=body_nconsts + len(bconst_t), body_jaxpr=body_jvp)
  n = len(init)
  it = iter(outs[n:])
  out_t = [next(it) if m else Zero(ad.tangent_aval(a))
           for m, a in zip(carry_nz, body_jaxpr.out_avals)]
  return list(outs[:n]), out_t


def _while_jvp(interp, primals, tangents, *, cond_jaxpr, body_jaxpr, cond_nconsts,
               body_nconsts):
  if interp.tangent_interp is None:
    with core.set_interpreter(interp.parent):
      return _while_jvp_bind(primals, tangents, cond_jaxpr, body_jaxpr, cond_nconsts,
                             body_nconsts)
  # linearize: the primal loop runs now; the JVP loop (recomputing the primal) is staged
  # into the linear part, where transposition raises.
  with core.set_interpreter(interp.parent):
    out_p = while_p.bind(*primals, cond_jaxpr=cond_jaxpr, body_jaxpr=body_jaxpr,
                         cond_nconsts=cond_nconsts, body_nconsts=body_nconsts)
  with core.set_interpreter(interp.rule_interp):
    _, out_t = _while_jvp_bind(primals, tangents, cond_jaxpr, body_jaxpr, cond_nconsts,
                               body_nconsts)
  return list(out_p), out_t


def _while_transpose(*args, **params):
  raise ValueError("Reverse-mode differentiation does not work for lax.while_loop or "
                   "lax.fori_loop with dynamic start/stop values. Try using lax.scan, or "
                   "using fori_loop with static start/stop.")


ad.interpreter_jvps[while_p] = _while_jvp
ad.primitive_transposes[while_p] = _while_transpose


def _while_batch(axis_data, args, dims, *, cond_jaxpr, body_jaxpr, cond_nconsts,
                 body_nconsts):
  size = axis_data.size
  nm = batching.not_mapped
  bat = [d is not nm for d in dims]
  cconst_bat, bconst_bat, init_bat = _split(bat, [cond_nconsts, body_nconsts])
  cconst_dims, bconst_dims, init_dims = _split(list(dims), [cond_nconsts, body_nconsts])
  cconsts, bconsts, init = _split(list(args), [cond_nconsts, body_nconsts])
  carry_bat = list(init_bat)
  for _ in range(1 + len(carry_bat)):
    _, out_bat = batching.batch_jaxpr(body_jaxpr, axis_data, bconst_bat + carry_bat,
                                      carry_bat)
    new = [a or b for a, b in zip(carry_bat, out_bat)]
    if new == carry_bat:
      break
    carry_bat = new
  _, (pred_bat,) = batching.batch_jaxpr(cond_jaxpr, axis_data, cconst_bat + carry_bat, False)
  if pred_bat:
    carry_dims = [0] * len(carry_bat)
    body_b, _ = batching.batch_jaxpr_axes(body_jaxpr, axis_data, bconst_dims + carry_dims,
                                          carry_dims)
    cond_b, _ = batching.batch_jaxpr_axes(cond_jaxpr, axis_data, cconst_dims + carry_dims,
                                          [0])
  else:
    rank = len(cond_jaxpr.out_avals[0].shape)
    carry_dims = [rank if b else nm for b in carry_bat]
    body_b, _ = batching.batch_jaxpr_axes(body_jaxpr, axis_data, bconst_dims + carry_dims,
                                          carry_dims)
    cond_b, _ = batching.batch_jaxpr_axes(cond_jaxpr, axis_data, cconst_dims + carry_dims,
                                          [nm])
  new_init = []
  for x, old, new in zip(init, init_dims, carry_dims):
    if new is nm:
      new_init.append(x)
    elif old is nm:
      new_init.append(batching.broadcast(x, size, new))
    else:
      new_init.append(batching.moveaxis(x, old, new))
  outs = while_p.bind(*cconsts, *bconsts, *new_init, cond_nconsts=cond_nconsts,
                      cond_jaxpr=cond_b, body_nconsts=body_nconsts, body_jaxpr=body_b)
  return outs, carry_dims


batching.axis_primitive_batchers[while_p] = _while_batch


# ======================================================================================
# fori_loop
# ======================================================================================
_fori_scan_bodies = weakref.WeakKeyDictionary()
_fori_while_bodies = weakref.WeakKeyDictionary()


def _cached_wrapper(cache, fun, make):
  try:
    w = cache.get(fun)
    if w is None:
      w = cache[fun] = make(weakref.ref(fun))
    return w
  except TypeError:
    return make(lambda: fun)


def _fori_debug(ref, with_upper):
  """Debug info naming the user's body function and its arguments (tracer errors say
  "while tracing the function f ... for fori_loop ... the argument i")."""
  def make(args):
    carry = args[0]
    i, x = (carry[0], carry[2]) if with_upper else carry
    dbg = common.debug_info("fori_loop", ref(), (i, x))
    names = dbg.arg_names
    if with_upper and names is not None:
      names = names[:1] + [""] + names[1:]
    dbg.arg_names = names
    return dbg
  return make


def _make_fori_scan_body(ref):
  def scanned_fun(loop_carry, _):
    i, x = loop_carry
    return (i + 1, ref()(i, x)), None
  scanned_fun._pyjax_debug = _fori_debug(ref, False)
  return scanned_fun


def _make_fori_while_body(ref):
  def while_body_fun(loop_carry):
    i, upper, x = loop_carry
    return ew.add(i, np.array(1, core.get_aval(i).dtype)), upper, ref()(i, x)
  while_body_fun._pyjax_debug = _fori_debug(ref, True)
  return while_body_fun


def _fori_cond_fun(loop_carry):
  i, upper, _ = loop_carry
  return ew.lt(i, upper)


def fori_loop(lower, upper, body_fun, init_val, *, unroll=None):
  """``for i in range(lower, upper): val = body_fun(i, val)``.

  A ``scan`` when both bounds are concrete (Python ints or concrete arrays; reverse-mode
  differentiable, ``unroll`` allowed), else a ``while`` loop."""
  if not callable(body_fun):
    raise TypeError("lax.fori_loop: body_fun argument should be callable.")
  lower_dtype = dtypes.dtype(lower, canonicalize=True)
  upper_dtype = dtypes.dtype(upper, canonicalize=True)
  if lower_dtype == upper_dtype:
    dtype = lower_dtype
  else:
    dtype = None
    if (np.issubdtype(lower_dtype, np.signedinteger)
        and np.issubdtype(upper_dtype, np.signedinteger)):
      lw, uw = dtypes.is_weakly_typed(lower), dtypes.is_weakly_typed(upper)
      if lw and not uw:
        dtype = upper_dtype
      elif uw and not lw:
        dtype = lower_dtype
    if dtype is None:
      raise TypeError("lower and upper arguments to fori_loop must have equal types, got "
                      f"{lower_dtype.name} and {upper_dtype.name}")
  use_scan = False
  if not isinstance(lower, core.Tracer) and not isinstance(upper, core.Tracer):
    try:
      lower_, upper_ = int(lower), int(upper)
      use_scan = True
    except (TypeError, ValueError):
      use_scan = False
  if use_scan:
    if unroll is None:
      unroll = False
    length = max(upper_ - lower_, 0)
    if config.jax_disable_jit and length == 0:
      return init_val
    body = _cached_wrapper(_fori_scan_bodies, body_fun, _make_fori_scan_body)
    (_, result), _ = scan(body, (lower_, init_val), None, length=length, unroll=unroll)
    return result
  if unroll is not None and unroll is not False and unroll != 1:
    raise ValueError("Can only use `unroll` in `fori_loop` if the loop bounds are "
                     "statically known.")
  if lower_dtype != dtype:
    lower = common.eager(ew.convert_element_type, lower, dtype)
  if upper_dtype != dtype:
    upper = common.eager(ew.convert_element_type, upper, dtype)
  body = _cached_wrapper(_fori_while_bodies, body_fun, _make_fori_while_body)
  _, _, result = while_loop(_fori_cond_fun, body, (lower, upper, init_val))
  return result


# ======================================================================================
# scan
# ======================================================================================
scan_p = core.Primitive("scan")
scan_p.multiple_results = True


def _scan_abstract(*avals, reverse, length, num_consts, num_carry, jaxpr, unroll, **_):
  if len(avals) != len(jaxpr.in_avals):
    raise ValueError("scan number of arguments doesn't match the number of jaxpr "
                     f"arguments: {len(avals)} vs {len(jaxpr.in_avals)}")
  outs = list(jaxpr.out_avals)
  carry = outs[:num_carry]
  ys = [ShapedArray((length,) + tuple(a.shape), a.dtype, a.weak_type) for a in outs[num_carry:]]
  return carry + ys, core.join_effects(jaxpr)


_def_abstract(scan_p, _scan_abstract)


def _infer_scan_length(xs_flat, xs_avals, length):
  try:
    lengths = [x.shape[0] for x in xs_flat]
  except (AttributeError, IndexError) as err:
    msg = "scan got value with no leading axis to scan over: {}."
    raise ValueError(msg.format(", ".join(str(x) for x in xs_flat
                                          if not np.shape(x)))) from err
  if length is not None:
    try:
      length = int(length)
    except errors.ConcretizationTypeError:
      raise errors.ConcretizationTypeError(
          length, "The `length` argument to `scan` expects a concrete `int` value. For "
          "scan-like iteration with a dynamic length, use `while_loop` or `fori_loop`."
      ) from None
    if not all(length == n for n in lengths):
      raise ValueError(f"scan got `length` argument of {length} which disagrees with "
                       f"leading axis sizes {lengths}.")
    return length
  unique = set(lengths)
  if len(unique) > 1:
    raise ValueError("scan got values with different leading axis sizes: "
                     f"{', '.join(str(n) for n in lengths)}.")
  if not unique:
    raise ValueError("scan got no values to scan over and `length` not provided.")
  return lengths[0]


def _index0(x, i):
  from pyjax._src.lax import shapes as sh
  return sh.index_in_dim(x, i, 0, keepdims=False)


def _stack(ys):
  return shapes.concatenate([shapes.expand_dims(y, (0,)) for y in ys], 0)


def scan(f, init, xs=None, length=None, reverse=False, unroll=1, _split_transpose=False):
  """Loop ``carry, y = f(carry, x)`` over the leading axis of ``xs``; returns the final
  carry and the stacked ``y``s (pytrees allowed everywhere; ``xs=None`` with
  ``length``).  ``f`` is traced once per signature into one ``scan`` equation.
  ``unroll`` is recorded but does not change how the CPU backend runs the loop;
  ``_split_transpose`` is accepted and ignored."""
  del _split_transpose
  if not callable(f):
    raise TypeError("lax.scan: f argument should be a callable.")
  if _state_cf.live(f):   # outer refs used by ``f`` are carried (state/control_flow)
    out = _state_cf.scan(scan, f, init, xs, length=length, reverse=reverse, unroll=unroll)
    if out is not _state_cf.NO_REFS:
      return out
  init_flat, init_tree = tree_util.tree_flatten(init)
  xs_flat, xs_tree = tree_util.tree_flatten(xs)
  init_avals = [core.get_aval(x) for x in init_flat]
  xs_avals = [core.get_aval(x) for x in xs_flat]
  length = _infer_scan_length(xs_flat, xs_avals, length)
  if config.jax_disable_jit:
    if length == 0:
      raise ValueError("zero-length scan is not supported in disable_jit() mode because "
                       "the output type is unknown.")
    carry = init
    ys = []
    order = range(length - 1, -1, -1) if reverse else range(length)
    for i in order:
      x = xs_tree.unflatten([_index0(x, i) for x in xs_flat])
      carry, y = f(carry, x)
      ys.append(y)
    if reverse:
      ys.reverse()
    return carry, tree_util.tree_map(lambda *a: _stack(a), *ys)
  x_avals = [ShapedArray(a.shape[1:], a.dtype, a.weak_type) for a in xs_avals]
  args_tree = tree_util.treedef_tuple([init_tree, xs_tree])

  def create(carry_avals):
    j, consts, out_tree = common.trace_callable(f, args_tree, carry_avals + x_avals, "scan",
                                                (init, xs))
    shown = out_tree.unflatten([_ShowAval(a) for a in j.out_avals])
    if not isinstance(shown, (tuple, list)) or len(shown) != 2:
      raise TypeError(f"scan body output must be a pair, got {shown}.")
    carry_tree, y_tree = tree_util.treedef_children(out_tree)
    return j, consts, out_tree, carry_tree, y_tree

  j, consts, out_tree, carry_tree, y_tree = create(init_avals)
  n_c = len(init_flat)
  carry_out_avals = j.out_avals[:carry_tree.num_leaves]
  if carry_tree.num_leaves != n_c or carry_tree != init_tree:
    common.check_carry_type("scan body", f, init_tree, init_avals, carry_tree,
                            carry_out_avals)
  changed = False
  new_init = []
  for x, a, o in zip(init_flat, init_avals, carry_out_avals):
    x2, ch = common.promote_weak_typed_input(x, a, o)
    new_init.append(x2)
    changed = changed or ch
  if changed:
    init_flat = new_init
    init_avals = [core.get_aval(x) for x in init_flat]
    j, consts, out_tree, carry_tree, y_tree = create(init_avals)
    carry_out_avals = j.out_avals[:n_c]
  common.check_carry_type("scan body", f, init_tree, init_avals, carry_tree, carry_out_avals)
  unroll = core.concrete_or_error(
      None, unroll, "The `unroll` argument to `scan` expects a concrete `int` or `bool` "
      "value.")
  if isinstance(unroll, (bool, np.bool_)):
    unroll = max(length, 1) if unroll else 1
  unroll = operator.index(unroll)
  if unroll < 0:
    raise ValueError("`unroll` must be a `bool` or a non-negative `int`.")
  num_consts, num_carry = len(consts), n_c
  num_ys = len(j.out_avals) - num_carry
  args_flat = list(init_flat) + list(xs_flat)
  # carries forwarded unchanged become constants
  fwd = common.jaxpr_forwarding(j.jaxpr)
  move = [fwd[i] == num_consts + i for i in range(num_carry)]
  new_consts = []
  if any(move):
    j = common.prune_outputs(j, [not m for m in move] + [True] * num_ys)
    j = common.move_binders_to_front(j, [False] * num_consts + move + [False] * len(xs_flat))
    new_consts = [x for x, m in zip(init_flat, move) if m]
    args_flat = [x for x, m in zip(init_flat, move) if not m] + list(xs_flat)
    consts = new_consts + list(consts)
    num_consts += len(new_consts)
    num_carry -= len(new_consts)
  # ys forwarded from xs are not computed by the loop
  fwd = common.jaxpr_forwarding(j.jaxpr)[num_carry:]
  ext_fwd = [f - num_consts if f is not None and f >= num_consts + num_carry else None
             for f in fwd]
  j = common.prune_outputs(j, [True] * num_carry + [f is None for f in ext_fwd])
  outs = scan_p.bind(*consts, *args_flat, reverse=bool(reverse), length=length, jaxpr=j,
                     num_consts=num_consts, num_carry=num_carry, unroll=unroll)
  carry_out, ys = outs[:num_carry], outs[num_carry:]
  it = iter(ys)
  ys = [next(it) if f is None else common.as_array(args_flat[f]) for f in ext_fwd]
  if any(move):
    it_c, it_m = iter(carry_out), iter(new_consts)
    carry_out = [next(it_m) if m else next(it_c) for m in move]
  return out_tree.unflatten(list(carry_out) + list(ys))


# --- scan: differentiation --------------------------------------------------------------
def _permute_jaxpr(closed, in_order, out_order):
  j = closed.jaxpr
  return core.ClosedJaxpr(core.Jaxpr(j.constvars, [j.invars[i] for i in in_order],
                                     [j.outvars[i] for i in out_order], j.eqns, j.effects,
                                     j.debug_info), closed.consts)


def _scan_jvp_fixpoint(jaxpr, const_nz, init_nz, xs_nz, num_carry, num_ys,
                       linearize=False, forward=False):
  """Which carries have nonzero tangents (those of the initial carry, plus any the body
  makes nonzero); returns (carry_nz, jvp (jaxpr, out_nz) or LinearizedJaxpr, out_nz)."""
  carry_nz = list(init_nz)
  for _ in range(1 + num_carry):
    nz = list(const_nz) + carry_nz + list(xs_nz)
    inst = carry_nz + [False] * num_ys
    if not linearize:
      res = common.jvp_jaxpr_cached(jaxpr, nz, inst)
      out_nz = res[1]
    else:
      res = common.linearize_jaxpr_cached(jaxpr, nz, inst, forward)
      out_nz = res.out_nz
    new = [a or b for a, b in zip(carry_nz, out_nz[:num_carry])]
    if new == carry_nz:
      return carry_nz, res, out_nz
    carry_nz = new
  raise AssertionError("scan JVP fixpoint not reached")


def _scan_jvp(interp, primals, tangents, *, reverse, length, jaxpr, num_consts, num_carry,
              unroll):
  if interp.tangent_interp is not None:
    return _scan_linearize(interp, primals, tangents, reverse, length, jaxpr, num_consts,
                           num_carry, unroll)
  num_ys = len(jaxpr.out_avals) - num_carry
  nz = [type(t) is not Zero for t in tangents]
  const_nz, init_nz, xs_nz = _split(nz, [num_consts, num_carry])
  with core.set_interpreter(interp.parent):
    carry_nz, (jj, out_nz), _ = _scan_jvp_fixpoint(jaxpr, const_nz, init_nz, xs_nz,
                                                   num_carry, num_ys)
    n_xs = len(primals) - num_consts - num_carry
    nct, nxt = sum(const_nz), sum(xs_nz)
    ncc = sum(carry_nz)
    nyt = sum(out_nz[num_carry:])
    # jj: (consts, carry, xs, const_t, carry_t, xs_t) -> (carry, ys, carry_t, ys_t)
    n_p = num_consts + num_carry + n_xs
    in_order = (list(range(num_consts)) + list(range(n_p, n_p + nct))
                + list(range(num_consts, num_consts + num_carry))
                + list(range(n_p + nct, n_p + nct + ncc))
                + list(range(num_consts + num_carry, n_p))
                + list(range(n_p + nct + ncc, n_p + nct + ncc + nxt)))
    n_po = num_carry + num_ys
    out_order = (list(range(num_carry)) + list(range(n_po, n_po + ncc))
                 + list(range(num_carry, n_po)) + list(range(n_po + ncc, n_po + ncc + nyt)))
    body = _permute_jaxpr(jj, in_order, out_order)
    consts, init, xs = _split(primals, [num_consts, num_carry])
    ct, it_, xt = _split(tangents, [num_consts, num_carry])
    ct = [t for t in ct if type(t) is not Zero]
    xt = [t for t in xt if type(t) is not Zero]
    it_ = [ad.instantiate_zeros(t) for t, m in zip(it_, carry_nz) if m]
    outs = scan_p.bind(*consts, *ct, *init, *it_, *xs, *xt, reverse=reverse, length=length,
                       jaxpr=body, num_consts=num_consts + len(ct),
                       num_carry=num_carry + len(it_), unroll=unroll)
  carry, carry_t, ys, ys_t = _split(outs, [num_carry, ncc, num_ys])
  tc, ty = iter(carry_t), iter(ys_t)
  out_avals = _scan_out_avals(jaxpr, num_carry, length)
  out_t = ([next(tc) if m else Zero(ad.tangent_aval(a))
            for m, a in zip(carry_nz, out_avals[:num_carry])]
           + [next(ty) if m else Zero(ad.tangent_aval(a))
              for m, a in zip(out_nz[num_carry:], out_avals[num_carry:])])
  return carry + ys, out_t


def _scan_out_avals(jaxpr, num_carry, length):
  outs = list(jaxpr.out_avals)
  return outs[:num_carry] + [ShapedArray((length,) + tuple(a.shape), a.dtype, a.weak_type)
                             for a in outs[num_carry:]]


def _hoist_invariant_residuals(known, num_consts, n_out, consts):
  """Residual outputs of the primal body ``known`` that depend only on the scan's
  constants are computed once, before the loop, instead of being stacked per iteration.
  Returns (known without them, hoisted mask over its residual outputs, their values)."""
  j = known.jaxpr
  res_vars = j.outvars[n_out:]
  invariant = set(j.invars[:num_consts]) | set(j.constvars)
  for eqn in j.eqns:
    if not eqn.effects and all(common.is_literal(v) or v in invariant for v in eqn.invars):
      invariant.update(eqn.outvars)
  hoist = [common.is_literal(v) or v in invariant for v in res_vars]
  if not any(hoist):
    return known, hoist, []
  hj = core.Jaxpr(j.constvars, j.invars, [v for v, h in zip(res_vars, hoist) if h], j.eqns,
                  j.effects, j.debug_info)
  dced, used = common.dce_jaxpr(hj, [True] * sum(hoist), instantiate=False)
  cmap = dict(zip(j.constvars, known.consts))
  vals = core.eval_jaxpr(dced, [cmap[v] for v in dced.constvars],
                         *[c for c, u in zip(consts, used[:num_consts]) if u])
  assert not any(used[num_consts:])
  known = common.prune_outputs(known, [True] * n_out + [not h for h in hoist])
  return known, hoist, list(vals)


def _scan_linearize(interp, primals, tangents, reverse, length, jaxpr, num_consts,
                    num_carry, unroll):
  num_ys = len(jaxpr.out_avals) - num_carry
  nz = [type(t) is not Zero for t in tangents]
  const_nz, init_nz, xs_nz = _split(nz, [num_consts, num_carry])
  consts, init, xs = _split(primals, [num_consts, num_carry])
  out_avals = _scan_out_avals(jaxpr, num_carry, length)
  with core.set_interpreter(interp.parent):
    carry_nz, lin, out_nz = _scan_jvp_fixpoint(jaxpr, const_nz, init_nz, xs_nz, num_carry,
                                               num_ys, linearize=True,
                                               forward=interp.forward)
    assert not lin.known_tracer_consts
    # classify residuals: constants and xs pass through, loop-invariant ones are computed
    # once before the loop, the others are stacked outputs of the primal scan
    n_out = num_carry + num_ys
    known, hoist, hoisted_vals = _hoist_invariant_residuals(lin.known, num_consts, n_out,
                                                            consts)
    kinds = []
    it_h = iter(hoist)
    n_hoisted = 0
    for f in lin.res_fwd:
      if f is None:
        if next(it_h):
          kinds.append(("hoisted", n_hoisted))
          n_hoisted += 1
        else:
          kinds.append("ext")
      elif f < num_consts:
        kinds.append(("const", f))
      elif f < num_consts + num_carry:
        kinds.append(("carry", f))
      else:
        kinds.append(("xs", f - num_consts - num_carry))
    carry_fwd = [k[1] for k in kinds if isinstance(k, tuple) and k[0] == "carry"]
    if carry_fwd:
      kjax = known

      def known_body(*ins):
        outs = common.eval_closed(kjax, *ins)
        return list(outs) + [ins[f] for f in carry_fwd]
      known, tc = common.trace_flat(known_body, list(jaxpr.in_avals))
      assert not tc
    kouts = scan_p.bind(*consts, *init, *xs, reverse=reverse, length=length, jaxpr=known,
                        num_consts=num_consts, num_carry=num_carry, unroll=unroll)
    out_p = list(kouts[:n_out])
    stacked = iter(kouts[n_out:])
    n_nf = sum(1 for k in kinds if k == "ext")
    nf_vals = [next(stacked) for _ in range(n_nf)]
    cf_vals = [next(stacked) for _ in carry_fwd]
    # tangent scan layout: consts = [const residuals, const tangents],
    # carry = carry tangents, xs = [xs tangents, per-iteration residuals]
    const_res_idx = [i for i, k in enumerate(kinds)
                     if isinstance(k, tuple) and k[0] in ("const", "hoisted")]
    ext_res_idx = [i for i, k in enumerate(kinds) if i not in set(const_res_idx)]
    it_nf, it_cf = iter(nf_vals), iter(cf_vals)
    ext_vals = []
    for i in ext_res_idx:
      k = kinds[i]
      if k == "ext":
        ext_vals.append(next(it_nf))
      elif k[0] == "carry":
        ext_vals.append(next(it_cf))
      else:
        ext_vals.append(xs[k[1]])
    const_vals = [consts[kinds[i][1]] if kinds[i][0] == "const" else hoisted_vals[kinds[i][1]]
                  for i in const_res_idx]
    res_avals = lin.res_avals
    nct, ncc, nxt = sum(const_nz), sum(carry_nz), sum(xs_nz)
    in_avals = list(jaxpr.in_avals)
    c_av, k_av, x_av = _split(in_avals, [num_consts, num_carry])
    t_avals = ([ad.tangent_aval(a) for a, m in zip(c_av, const_nz) if m]
               + [ad.tangent_aval(a) for a, m in zip(k_av, carry_nz) if m]
               + [ad.tangent_aval(a) for a, m in zip(x_av, xs_nz) if m])
    body_in = ([res_avals[i] for i in const_res_idx] + t_avals[:nct + ncc + nxt]
               + [res_avals[i] for i in ext_res_idx])
    n_cr = len(const_res_idx)

    def tangent_body(*args):
      cres = args[:n_cr]
      ts = args[n_cr:n_cr + nct + ncc + nxt]
      eres = args[n_cr + nct + ncc + nxt:]
      res = [None] * len(kinds)
      for i, v in zip(const_res_idx, cres):
        res[i] = v
      for i, v in zip(ext_res_idx, eres):
        res[i] = v
      return lin.tangent(res, ts)

    tbody, tc = common.trace_flat(tangent_body, body_in)
    assert not tc
  ct, it_, xt = _split(tangents, [num_consts, num_carry])
  ct = [t for t in ct if type(t) is not Zero]
  xt = [t for t in xt if type(t) is not Zero]
  if not any(out_nz):
    return out_p, [Zero(ad.tangent_aval(a)) for a in out_avals]
  with core.set_interpreter(interp.rule_interp):
    it_ = [ad.instantiate_zeros(t) for t, m in zip(it_, carry_nz) if m]
    t_outs = scan_p.bind(*const_vals, *ct, *it_, *xt, *ext_vals, reverse=reverse,
                         length=length, jaxpr=tbody, num_consts=n_cr + nct, num_carry=ncc,
                         unroll=unroll)
  it = iter(t_outs)
  out_t = [next(it) if m else Zero(ad.tangent_aval(a)) for m, a in zip(out_nz, out_avals)]
  return out_p, out_t


def _ct_typed(aval, ct):
  """``aval`` with the weak type of the cotangent ``ct`` (a Zero, a value or an aval)."""
  if type(ct) is Zero:
    ct_aval = ct.aval
  else:
    ct_aval = ct if isinstance(ct, ShapedArray) else core.get_aval(ct)
  w = bool(getattr(ct_aval, "weak_type", False))
  if getattr(aval, "weak_type", False) == w:
    return aval
  return ShapedArray(aval.shape, aval.dtype, w)


def _match_weak(x, aval):
  if core.get_aval(x).weak_type == aval.weak_type:
    return x
  return ew.convert_element_type_p.bind(x, new_dtype=aval.dtype, weak_type=aval.weak_type,
                                        sharding=None)


def _scan_transpose(cts, *args, reverse, length, jaxpr, num_consts, num_carry, unroll):
  consts, init, xs = _split(list(args), [num_consts, num_carry])
  c_lin = [ad.is_undefined_primal(a) for a in consts]
  x_lin = [ad.is_undefined_primal(a) for a in xs]
  in_avals = list(jaxpr.in_avals)
  c_av, k_av, x_av = _split(in_avals, [num_consts, num_carry])
  ct_carry, ct_ys = cts[:num_carry], cts[num_carry:]
  ys_nz = [type(c) is not Zero for c in ct_ys]
  res_c = [a for a, m in zip(consts, c_lin) if not m]
  res_x = [a for a, m in zip(xs, x_lin) if not m]
  lin_c_avals = [ad.tangent_aval(a) for a, m in zip(c_av, c_lin) if m]
  lin_x_avals = [ad.tangent_aval(a) for a, m in zip(x_av, x_lin) if m]
  # the carry cotangents keep the weak type of the incoming ones (as JAX, whose transposed
  # body accumulates into the cotangent's type): a weak primal carry whose output
  # cotangent is strong gives a strong cotangent for the initial carry
  k_t_avals = [_ct_typed(ad.tangent_aval(a), c) for a, c in zip(k_av, ct_carry)]
  y_avals = list(jaxpr.out_avals[num_carry:])
  n_rc, n_lc, n_k = len(res_c), len(lin_c_avals), num_carry
  nz_y_avals = [ad.tangent_aval(a) for a, m in zip(y_avals, ys_nz) if m]

  def body(*a):
    rc, acc, kc, cy, rx = _split(list(a), [n_rc, n_lc, n_k, len(nz_y_avals)])
    it_rc, it_rx = iter(rc), iter(rx)
    full_args = ([ad.UndefinedPrimal(av) if m else next(it_rc) for av, m in zip(c_av, c_lin)]
                 + [ad.UndefinedPrimal(_ct_typed(av, kt)) for av, kt in zip(k_av, k_t_avals)]
                 + [ad.UndefinedPrimal(av) if m else next(it_rx) for av, m in zip(x_av, x_lin)])
    it_cy = iter(cy)
    full_cts = list(kc) + [next(it_cy) if m else Zero(ad.tangent_aval(av))
                           for m, av in zip(ys_nz, y_avals)]
    cts_in = ad.backward_pass(jaxpr.jaxpr, jaxpr.consts, full_cts, full_args)
    cc, ck, cx = _split(cts_in, [num_consts, num_carry])
    new_acc = []
    it_acc = iter(acc)
    for ct, m, av in zip(cc, c_lin, c_av):
      if not m:
        continue
      prev = next(it_acc)
      new_acc.append(prev if type(ct) is Zero else ad.add_any_p.bind(prev, ct))
    out_k = [_match_weak(ad.instantiate_zeros(c) if type(c) is Zero else c, kt)
             for c, kt in zip(ck, k_t_avals)]
    out_x = [ad.instantiate_zeros(c) for c, m in zip(cx, x_lin) if m]
    return new_acc + out_k + out_x

  body_avals = ([core.get_aval(r) for r in res_c] + lin_c_avals + k_t_avals + nz_y_avals
                + [ShapedArray(core.get_aval(r).shape[1:], core.get_aval(r).dtype,
                               core.get_aval(r).weak_type) for r in res_x])
  tj, tconsts = common.trace_flat(body, body_avals)
  acc0 = [ad.zeros_like_aval(a) for a in lin_c_avals]
  k0 = [ad.instantiate_zeros(c) if type(c) is Zero else c for c in ct_carry]
  ys_ct = [c for c in ct_ys if type(c) is not Zero]
  outs = scan_p.bind(*tconsts, *res_c, *acc0, *k0, *ys_ct, *res_x, reverse=not reverse,
                     length=length, jaxpr=tj, num_consts=len(tconsts) + n_rc,
                     num_carry=n_lc + n_k, unroll=unroll)
  acc, kc, cx = _split(outs, [n_lc, n_k])
  it_acc, it_x = iter(acc), iter(cx)
  res = ([next(it_acc) if m else None for m in c_lin]
         + [c if ad.is_undefined_primal(a) else None for c, a in zip(kc, init)]
         + [next(it_x) if m else None for m in x_lin])
  return res


ad.interpreter_jvps[scan_p] = _scan_jvp
ad.primitive_transposes[scan_p] = _scan_transpose


# --- scan: batching ---------------------------------------------------------------------
def _scan_batch(axis_data, args, dims, *, reverse, length, jaxpr, num_consts, num_carry,
                unroll):
  nm = batching.not_mapped
  size = axis_data.size
  num_ys = len(jaxpr.out_avals) - num_carry
  bat = [d is not nm for d in dims]
  const_bat, init_bat, xs_bat = _split(bat, [num_consts, num_carry])
  carry_bat = list(init_bat)
  for _ in range(1 + num_carry):
    _, out_bat = batching.batch_jaxpr(jaxpr, axis_data, const_bat + carry_bat + xs_bat,
                                      carry_bat + [False] * num_ys)
    new = [a or b for a, b in zip(carry_bat, out_bat[:num_carry])]
    if new == carry_bat:
      break
    carry_bat = new
  jb, out_bat = batching.batch_jaxpr(jaxpr, axis_data, const_bat + carry_bat + xs_bat,
                                     carry_bat + [False] * num_ys)
  consts, init, xs = _split(list(args), [num_consts, num_carry])
  cdims, idims, xdims = _split(list(dims), [num_consts, num_carry])
  consts = [batching.moveaxis(x, d, 0) if d is not nm else x for x, d in zip(consts, cdims)]
  init = [batching.bdim_at_front(x, d, size) if b else x
          for x, d, b in zip(init, idims, carry_bat)]
  xs = [batching.moveaxis(x, d, 1) if d is not nm else x for x, d in zip(xs, xdims)]
  outs = scan_p.bind(*consts, *init, *xs, reverse=reverse, length=length, jaxpr=jb,
                     num_consts=num_consts, num_carry=num_carry, unroll=unroll)
  out_dims = ([0 if b else nm for b in carry_bat]
              + [1 if b else nm for b in out_bat[num_carry:]])
  return outs, out_dims


batching.axis_primitive_batchers[scan_p] = _scan_batch


# ======================================================================================
# map
# ======================================================================================
_map_bodies = weakref.WeakKeyDictionary()


def _make_map_body(ref):
  def g(_, x):
    return (), ref()(x)
  return g


def map(f, xs, *, batch_size=None):  # noqa: A001  (JAX's name)
  """``jnp.stack([f(x) for x in xs])`` over pytrees, as a ``scan``.  With
  ``batch_size``, ``vmap(f)`` runs on batches of that size inside the scan and on the
  remainder after it (``batch_size=0`` is one ``vmap``)."""
  if batch_size is not None:
    from pyjax._src.api_vmap import vmap
    leaves, treedef = tree_util.tree_flatten(xs)
    if not leaves:
      scan_xs, rem_xs = xs, None
    else:
      n = leaves[0].shape[0]
      if batch_size == 0:
        nb, rem = 0, n
      else:
        nb, rem = divmod(n, batch_size)
      k = nb * batch_size
      scan_xs = (treedef.unflatten([shapes.reshape(l[:k], (nb, batch_size) + tuple(l.shape[1:]))
                                    for l in leaves]) if nb else None)
      rem_xs = treedef.unflatten([l[k:] for l in leaves]) if rem or not nb else None
    vf = vmap(f)
    if scan_xs is not None:
      _, scan_ys = scan(lambda _, x: ((), vf(x)), (), scan_xs)
    else:
      scan_ys = None

    def flatten(y):
      return shapes.reshape(y, (y.shape[0] * y.shape[1],) + tuple(y.shape[2:]))
    if scan_ys is None:
      return vf(rem_xs)
    if rem_xs is not None:
      rem_ys = vf(rem_xs)
      return tree_util.tree_map(lambda a, b: shapes.concatenate([flatten(a), b], 0),
                                scan_ys, rem_ys)
    return tree_util.tree_map(flatten, scan_ys)
  g = _cached_wrapper(_map_bodies, f, _make_map_body)
  _, ys = scan(g, (), xs)
  return ys
