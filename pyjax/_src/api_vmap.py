"""``vmap``: vectorizing map, on the batching interpreter
(``pyjax._src.interpreters.batching``)."""
from __future__ import annotations

import collections
import functools
import inspect

from pyjax._src import core, tree_util
from pyjax._src import api_util as _api_util
from pyjax._src import tracer_leaks as _tracer_leaks
from pyjax._src.state import vmap as _state_vmap
from pyjax._src.state.types import Ref as _Ref
from pyjax._src.interpreters import batching
from pyjax._src.interpreters.batching import not_mapped


class PytreeLeaf:
  """Stands for a leaf of an argument tree in in_axes/out_axes prefix errors."""

  def __repr__(self):
    return "pytree leaf"


_NONE_PROXY = type("_NoneAxis", (), {"__repr__": lambda self: "None"})()


def _is_none(x):
  return x is None


def _replace_nones(tree):
  return tree_util.tree_map(lambda x: _NONE_PROXY if x is None else x, tree, is_leaf=_is_none)


def _out_axis_path(out_tree, i):
  """The key path (``['broadcast']``, ``[1][0]``) of the ``i``-th output leaf (JAX's
  error text for an output batched where out_axes says None)."""
  dummy = tree_util.tree_unflatten(out_tree, [0] * out_tree.num_leaves)
  return tree_util.keystr(tree_util.tree_flatten_with_path(dummy)[0][i][0])


def _flatten_axes(what, treedef, axis_tree):
  """One axis (int or None) per leaf of ``treedef`` from the prefix tree ``axis_tree``."""
  dummy = tree_util.tree_unflatten(treedef, [PytreeLeaf() for _ in range(treedef.num_leaves)])
  proxied = _replace_nones(axis_tree)
  axes = []

  def add(ax, sub):
    axes.extend([ax] * len(tree_util.tree_leaves(sub)))
  try:
    tree_util.tree_map(add, proxied, dummy)
  except ValueError:
    errs = tree_util.prefix_errors(proxied, dummy)
    if not errs:
      raise
    details = "\n\n  ".join(str(e(what)) for e in errs)
    raise ValueError(f"{what} specification must be a tree prefix of the corresponding "
                     f"value; \n  Mismatch details ({len(errs)} found):\n  {details}") from None
  return [None if a is _NONE_PROXY else a for a in axes]


def _check_axes_spec(what, axes, top):
  if top and not (axes is None or type(axes) in (int, tuple)):
    raise TypeError(f"vmap {what} must be an int, None, or a tuple of entries corresponding "
                    f"to the positional arguments passed to the function, but got {axes}.")
  if not all(type(leaf) is int for leaf in tree_util.tree_leaves(axes)):
    raise TypeError(f"vmap {what} must be an int, None, or (nested) container with those "
                    f"types as leaves, but got {axes}.")


def _aval_or_none(x):
  try:
    return core.get_aval(x)
  except TypeError:
    return None


def _type_str(x):
  a = _aval_or_none(x)
  return "unknown" if a is None else a.str_short(short_dtypes=False)


def _axis_len(shape, axis):
  try:
    return shape[axis]
  except IndexError:
    min_rank = axis + 1 if axis >= 0 else -axis
    raise ValueError(f"vmap was requested to map its argument along axis {axis}, which "
                     f"implies that its rank should be at least {min_rank}, but is only "
                     f"{len(shape)} (its shape is {shape})") from None


def _leaf_paths(fun, args, kwargs):
  try:
    ba = inspect.signature(fun).bind_partial(*args)
    arg_paths = [f"argument {name}{tree_util.keystr(p)}"
                 for name, arg in ba.arguments.items()
                 for p, _ in _with_path(arg, name, ba)]
    if len(arg_paths) != len(tree_util.tree_leaves(args)):
      raise TypeError
  except (TypeError, ValueError):
    arg_paths = [f"args{tree_util.keystr(p)}" for p, _ in
                 tree_util.tree_flatten_with_path(tuple(args))[0]]
  kw_paths = [f"kwargs{tree_util.keystr(p)}" for p, _ in
              tree_util.tree_flatten_with_path(kwargs)[0]]
  return arg_paths + kw_paths


def _with_path(arg, name, ba):
  sig_kind = ba.signature.parameters[name].kind
  if sig_kind == inspect.Parameter.VAR_POSITIONAL:
    return tree_util.tree_flatten_with_path(tuple(arg))[0]
  return tree_util.tree_flatten_with_path(arg)[0]


def _mapped_axis_size(fun, args, kwargs, leaves, axes, axis_size):
  sizes = [None if ax is None else _axis_len(core.get_aval(x).shape, ax)
           for x, ax in zip(leaves, axes)]
  mapped = [s for s in sizes if s is not None]
  if not mapped:
    if axis_size is None:
      if not leaves:
        raise ValueError("vmap wrapped function must be passed at least one argument "
                         "containing an array or axis_size must be specified, got empty "
                         f"*args={tuple(args)} and **kwargs={kwargs}")
      raise ValueError("vmap must have at least one non-None value in in_axes or axis_size "
                       "must be specified")
    return int(axis_size)
  first = mapped[0]
  if all(s == first for s in mapped) and (axis_size is None or axis_size == first):
    return first
  paths = _leaf_paths(fun, args, kwargs)
  msg = ["vmap got inconsistent sizes for array axes to be mapped:\n"]
  if axis_size is not None:
    msg.append(f"  * the `axis_size` argument was {axis_size};\n")
  counts = collections.Counter(mapped).most_common()

  def example(sz):
    i = sizes.index(sz)
    return axes[i], paths[i] if i < len(paths) else f"args[{i}]", _type_str(leaves[i])
  for k, (sz, ct) in enumerate(counts):
    ax, ex, ty = example(sz)
    if ct == 1:
      msg.append(f"  * one axis had size {sz}: axis {ax} of {ex} of type {ty};\n")
    elif k == 0:
      msg.append(f"  * most axes ({ct} of them) had size {sz}, e.g. axis {ax} of {ex} of "
                 f"type {ty};\n")
    else:
      msg.append(f"  * some axes ({ct} of them) had size {sz}, e.g. axis {ax} of {ex} of "
                 f"type {ty};\n")
  raise ValueError("".join(msg)[:-2])


def _canonicalize_out_axis(ax, ndim):
  if not -ndim <= ax < ndim:
    raise ValueError(f"axis {ax} is out of bounds for array of dimension {ndim}")
  return ax + ndim if ax < 0 else ax


def _valid_input(x):
  if isinstance(x, core.Tracer):
    return True
  return _aval_or_none(x) is not None


def vmap(fun, in_axes=0, out_axes=0, axis_name=None, axis_size=None, spmd_axis_name=None):
  """Vectorizing map: a function that maps ``fun`` over the axes given by ``in_axes`` of
  its arguments (int, None, or a pytree prefix of the positional arguments; keyword
  arguments are mapped over axis 0) and stacks the results along ``out_axes``.
  ``axis_name`` names the mapped axis for collectives (``lax.psum``, ``lax.axis_index``,
  ...); ``axis_size`` is needed when no argument is mapped.

  Differs from JAX: ``spmd_axis_name`` is accepted and has no effect (one device)."""
  if not callable(fun):
    raise TypeError(f"Expected a callable value, got {fun}")
  if isinstance(in_axes, list):
    in_axes = tuple(in_axes)
  _check_axes_spec("in_axes", in_axes, True)
  _check_axes_spec("out_axes", out_axes, False)
  if axis_size is not None:
    axis_size = core.concrete_or_error(int, axis_size, "The axis_size argument of vmap")

  @_api_util.wraps(fun)
  def vmap_f(*args, **kwargs):
    if isinstance(in_axes, tuple) and len(in_axes) != len(args):
      raise ValueError("vmap in_axes must be an int, None, or a tuple of entries "
                       "corresponding to the positional arguments passed to the function, "
                       f"but got len(in_axes)={len(in_axes)}, len(args)={len(args)}")
    arg_leaves, arg_tree = tree_util.tree_flatten(args)
    kw_leaves, kw_tree = tree_util.tree_flatten(kwargs)
    if isinstance(in_axes, tuple):
      axes = _flatten_axes("vmap in_axes", arg_tree, in_axes)
    else:
      axes = [in_axes] * len(arg_leaves)
    leaves = arg_leaves + kw_leaves
    axes = axes + [0] * len(kw_leaves)
    mapped_refs = []   # mutable array references mapped along an axis (state/vmap.py)
    for i, (x, ax) in enumerate(zip(leaves, axes)):
      if type(x) is _Ref:   # with in_axes None: passed through, unbatched
        if ax is not None:
          mapped_refs.append((i, x, ax))
        continue
      if ax is not None and not _valid_input(x):   # (unmapped leaves pass through as JAX's)
        raise TypeError(f"Argument '{x}' of type {type(x)} is not a valid JAX type")
    size = _mapped_axis_size(fun, args, kwargs,
                             _state_vmap.size_leaves(leaves) if mapped_refs else leaves,
                             axes, axis_size)
    dims = []
    for x, ax in zip(leaves, axes):
      if ax is None or type(x) is _Ref:
        dims.append(not_mapped)
      else:
        nd = len(core.get_aval(x).shape)
        dims.append(ax + nd if ax < 0 else ax)
    n_args = len(arg_leaves)
    out_tree_cell = []

    def flat_fun(*flat):
      a = tree_util.tree_unflatten(arg_tree, flat[:n_args])
      k = tree_util.tree_unflatten(kw_tree, flat[n_args:])
      out = fun(*a, **k)
      out_leaves, out_tree = tree_util.tree_flatten(out)
      for o in out_leaves:
        if not _valid_input(o):
          raise TypeError(f"Output from batched function {o!r} with type {type(o)} is not "
                          "a valid JAX type")
      out_tree_cell.append(out_tree)
      return out_leaves

    axis_data = batching.AxisData(axis_name, size, spmd_axis_name)
    leak_mark = _tracer_leaks.mark() if _tracer_leaks._installed else 0
    interp = batching.BatchInterpreter(core.current_interpreter(), axis_data)
    ins = [batching.BatchTracer(interp, x, d) if d is not not_mapped else x
           for x, d in zip(leaves, dims)]
    if mapped_refs:
      ins, ref_locals = _state_vmap.enter(interp, ins, mapped_refs)
    try:
      with core.set_interpreter(interp):
        outs = flat_fun(*ins)
      vals, dims_out = [], []
      for o in outs:
        v, d = interp.to_batch_info(o)
        vals.append(v)
        dims_out.append(d)
      if mapped_refs:
        _state_vmap.exit(interp, ref_locals, axis_data)
    finally:
      interp.finished = True
    out_tree = out_tree_cell[-1]
    if isinstance(out_axes, int) or out_axes is None:
      oaxes = [out_axes] * len(vals)
    else:
      oaxes = _flatten_axes("vmap out_axes", out_tree, out_axes)
    res = []
    from pyjax._src.interpreters import ad
    for v, d, ax in zip(vals, dims_out, oaxes):
      if type(v) is ad.Zero:   # a symbolic zero (from a rule's inner vmap, as equinox's
        res.append(v)          # vprim jvp) leaves unchanged, as JAX's (no leaves there)
        continue
      if ax is None:
        if d is not not_mapped:
          if axis_name is not None:
            raise ValueError(f"vmap has mapped output (axis_name={axis_name}) but "
                             "out_axes is None")
          raise ValueError(f"at vmap out_axes{_out_axis_path(out_tree, len(res))}"
                           f", got axis spec None but output was batched on axis {d}")
        res.append(v)
        continue
      nd = len(core.get_aval(v).shape) + (1 if d is not_mapped else 0)
      res.append(batching.matchaxis(axis_name, size, d, _canonicalize_out_axis(ax, nd), v))
    if _tracer_leaks._installed:   # jax_check_tracer_leaks: this vmap's tracers must be dead
      ins = outs = o = None
      _tracer_leaks.check(leak_mark)
    return tree_util.tree_unflatten(out_tree, res)

  name = getattr(fun, "__name__", None) or type(fun).__name__
  doc = getattr(fun, "__doc__", None)
  vmap_f.__doc__ = (f"Vectorized version of {name}. Takes similar arguments as {name} but "
                    f"with additional array axes over which {name} is mapped."
                    + (f"\n\nOriginal documentation:\n\n{doc}" if doc else ""))
  return vmap_f


# --- custom_jvp / custom_vjp under vmap ---------------------------------------------------
# The primal function's jaxpr is batched like any jaxpr.  The user's rules (Python
# callables) are traced when first used, on per-example avals; values they close over
# that are batched by this vmap become explicit batched inputs (this needs the vmap to
# still be running, as it is when the rule is used right away by an enclosing jvp/grad).
# The traced rule is batched and wrapped as the batched call's rule.  Batched outputs and
# residuals carry the batch dimension at 0.
def _closure_values(interp, tracer_consts, size):
  vals, batched = [], []
  for c in tracer_consts:
    if type(c) is batching.BatchTracer and c._trace is interp:
      d = c.batch_dim
      vals.append(c.val if d is not_mapped else batching.moveaxis(c.val, d, 0))
      batched.append(d is not not_mapped)
    else:
      vals.append(c)
      batched.append(False)
  return vals, batched


def _front(args, dims):
  return [x if d is not_mapped else batching.moveaxis(x, d, 0) for x, d in zip(args, dims)]


def _trace_batched(interp, fn, avals, in_batched, instantiate):
  """Trace ``fn`` on per-example ``avals`` and batch it.  Returns (batched ClosedJaxpr,
  out_batched, closure values) — the closure values are its first inputs."""
  from pyjax._src.interpreters import staging
  closed, closure = staging.trace_flat(fn, avals)
  c_vals, c_b = _closure_values(interp, closure, interp.axis_data.size)
  batched, out_b = batching.batch_jaxpr(closed, interp.axis_data, c_b + list(in_batched),
                                        instantiate)
  return batched, out_b, c_vals, closed


def _custom_jvp_call_batch(interp, args, dims, *, call_jaxpr, jvp_jaxpr_fun, num_consts,
                           symbolic_zeros, name):
  from pyjax._src import api_ad
  from pyjax._src.interpreters import ad
  size = interp.axis_data.size
  args = _front(args, dims)
  in_b = [d is not not_mapped for d in dims]
  n_out = len(call_jaxpr.out_avals)
  new_call, _ = batching.batch_jaxpr(call_jaxpr, interp.axis_data, in_b, True)
  p_avals = list(call_jaxpr.in_avals[num_consts:])
  t_avals = [ad.tangent_aval(a) for a in p_avals]
  prim_b = in_b[num_consts:]
  n = len(p_avals)
  cache = []

  def jvp_traced(*pt):
    return [ad.instantiate_zeros(o) for o in jvp_jaxpr_fun(*pt)]

  def new_jvp(*pt):
    if not cache:
      cache.append(_trace_batched(interp, jvp_traced, p_avals + t_avals, prim_b * 2, True))
    batched, _, c_vals, _ = cache[0]
    primals, tangents = list(pt[:n]), list(pt[n:])
    tangents = [ad.zeros_like_aval(batching.batched_aval(a, 0 if b else not_mapped, size))
                if type(t) is ad.Zero else t
                for t, a, b in zip(tangents, t_avals, prim_b)]
    return core.eval_jaxpr(batched.jaxpr, batched.consts, *c_vals, *primals, *tangents)
  outs = api_ad.custom_jvp_call_p.bind(
      *args, call_jaxpr=new_call, jvp_jaxpr_fun=api_ad._Named(new_jvp, repr(jvp_jaxpr_fun)),
      num_consts=num_consts, symbolic_zeros=symbolic_zeros, name=name)
  return outs, [0] * n_out


def _custom_vjp_call_batch(interp, args, dims, *, call_jaxpr, fwd_jaxpr_thunk, bwd, num_consts,
                           symbolic_zeros, name):
  from pyjax._src import api_ad
  from pyjax._src.interpreters import ad
  size = interp.axis_data.size
  args = _front(args, dims)
  in_b = [d is not not_mapped for d in dims]
  n_out = len(call_jaxpr.out_avals)
  new_call, _ = batching.batch_jaxpr(call_jaxpr, interp.axis_data, in_b, True)
  p_avals = list(call_jaxpr.in_avals[num_consts:])
  prim_b = in_b[num_consts:]
  caches = {}   # per the perturbed flags the fwd rule is traced with (symbolic_zeros)
  pass_perturbed = bool(symbolic_zeros) and getattr(
      getattr(fwd_jaxpr_thunk, "fn", None), "_perturbed", False)

  def fwd_parts(cache):
    if "fwd" not in cache:
      def fwd_traced(*ps):
        if cache["perturbed"] is not None:
          out_leaves, res_leaves, make_bwd = fwd_jaxpr_thunk(*ps, perturbed=cache["perturbed"])
        else:
          out_leaves, res_leaves, make_bwd = fwd_jaxpr_thunk(*ps)
        cache["sizes"] = (len(out_leaves), len(res_leaves), make_bwd)
        return list(out_leaves) + list(res_leaves)
      cache["fwd"] = _trace_batched(interp, fwd_traced, p_avals, prim_b, True)
    return cache["fwd"]

  def bwd_parts(cache):
    if "bwd" not in cache:
      _, _, _, fwd_closed = fwd_parts(cache)
      n_o, n_r, make_bwd = cache["sizes"]
      # a residual the fwd rule returned as a constant (equinox's Python-bool perturbed
      # flags) reaches the bwd rule as that value, unbatched, as JAX's vmap passes it
      res_vars = fwd_closed.jaxpr.outvars[n_o:]
      static = [type(v) is core.Literal for v in res_vars]
      res_avals = [a for a, s in zip(fwd_closed.out_avals[n_o:], static) if not s]
      ct_avals = [ad.tangent_aval(a) for a in fwd_closed.out_avals[:n_o]]
      user_bwd = make_bwd(p_avals)
      n_dyn = len(res_avals)

      def bwd_traced(*xs):
        it = iter(xs[:n_dyn])
        res = [core.literal_value(v) if s else next(it) for v, s in zip(res_vars, static)]
        return [ad.instantiate_zeros(c) for c in user_bwd(res, list(xs[n_dyn:]))]
      cache["ct_avals"] = ct_avals
      cache["res_static"] = static
      cache["bwd"] = _trace_batched(interp, bwd_traced, res_avals + ct_avals,
                                    [True] * (n_dyn + n_o), False)
    return cache["bwd"]

  def new_bwd(cache, res, cts):
    batched, out_b, c_vals, _ = bwd_parts(cache)
    res = [r for r, s in zip(res, cache["res_static"]) if not s]
    cts = [ad.zeros_like_aval(batching.batched_aval(a, 0, size)) if type(c) is ad.Zero else c
           for c, a in zip(cts, cache["ct_avals"])]
    outs = core.eval_jaxpr(batched.jaxpr, batched.consts, *c_vals, *res, *cts)
    return [batching.matchaxis(None, size, 0 if ob else not_mapped, 0 if ib else not_mapped,
                               o, sum_match=True)
            for o, ob, ib in zip(outs, out_b, prim_b)]

  def new_fwd(*primals, perturbed=None):
    key = tuple(perturbed) if pass_perturbed and perturbed is not None else None
    cache = caches.setdefault(key, {"perturbed": key})
    batched, _, c_vals, _ = fwd_parts(cache)
    n_o = cache["sizes"][0]
    outs = core.eval_jaxpr(batched.jaxpr, batched.consts, *c_vals, *primals)
    return outs[:n_o], outs[n_o:], lambda in_avals: api_ad._Named(
        functools.partial(new_bwd, cache), repr(bwd))
  new_fwd._perturbed = pass_perturbed   # the jvp rule passes the tangents' nonzero mask
  outs = api_ad.custom_vjp_call_p.bind(
      *args, call_jaxpr=new_call, fwd_jaxpr_thunk=api_ad._Named(new_fwd, repr(fwd_jaxpr_thunk)),
      bwd=bwd, num_consts=num_consts, symbolic_zeros=symbolic_zeros, name=name)
  return outs, [0] * n_out


def _register():
  from pyjax._src import api_ad
  batching.interpreter_batchers[api_ad.custom_jvp_call_p] = _custom_jvp_call_batch
  batching.interpreter_batchers[api_ad.custom_vjp_call_p] = _custom_vjp_call_batch


_register()
