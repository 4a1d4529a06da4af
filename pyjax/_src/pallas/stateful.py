"""Kernel jaxprs with ``Ref``-typed variables, as JAX prints them, and their discharge.

``pallas_call`` traces a kernel twice over (``trace_kernel``):

1. *stateful*: each operand block, output block and scratch buffer is a ``KernelRef`` (a
   staged variable of type ``Ref<default>{f32[8,128]}``); ``ref[idx]`` stages a ``get``
   equation, ``ref[idx] = v`` a ``swap``, ``ref.addupdate(v, idx)`` an ``addupdate`` and
   ``pl.program_id(axis)`` a ``program_id`` equation.  ``pl.when`` / ``lax.cond`` and
   ``fori_loop`` bodies closing over refs take them as operands.  Unused reads are dropped
   (dead-code elimination keeps the effectful writes).  This is the jaxpr the
   ``pallas_call`` equation carries and prints -- JAX's text (``d[:4,:]``, ``d[a:a+4]``,
   ``k:f32[4], f[...] <- f[...], j``, ``e:f32[8] <- d[...]``, ``x[i] += v``).
2. *discharged*: ``eval_with_boxes`` evaluates that jaxpr with pyjax's ``Ref`` boxes
   (``state/``), which turn every access into an array operation as it is traced: the
   result is the pure kernel ``interpret.py`` runs (grid position, blocks -> the blocks'
   final values).  The stored index of a ``get``/``swap`` is the kernel's own index (with
   its traced parts as operands), so the discharged program is the one a direct trace
   with boxes gives: same operations, same bits.

``ref.at[idx]`` views add index transforms (``d[2:6,:][1,:]``); ``pl.run_scoped`` stages
a ``run_scoped`` equation whose jaxpr has the refs it closes over as constvars; Triton
``load``/``store`` stage ``masked_load``/``masked_swap``.  Triton atomics read and write
whole refs here.  A kernel passing a ref to a
primitive other than ``cond``/``while``/``scan``/``run_scoped``/``get``/``swap``/
``addupdate`` (or failing in this trace) is traced with boxes directly and its jaxpr
prints discharged (``docs/pallas.md``).
"""
from __future__ import annotations

import numpy as np

from pyjax._src import core
from pyjax._src.avals import ShapedArray
from pyjax._src.state import types as state_types
from pyjax._src.state import views


class NotStateful(Exception):
  """The kernel uses something the stateful trace does not model (see the docstring)."""


# --- the Ref type of kernel variables ---------------------------------------------------------
class KernelRefType(state_types.AbstractRef):
  """The type of a kernel's ref variable: prints ``Ref<default>{f32[8,128]}`` as JAX's
  Pallas refs do (memory space ``default`` on CPU)."""
  __slots__ = ("memory_space",)

  def __init__(self, inner_aval, memory_space="default"):
    super().__init__(inner_aval)
    self.memory_space = memory_space

  def str_short(self, short_dtypes=False):
    return (f"Ref<{self.memory_space}>"
            f"{{{self.inner_aval.str_short(short_dtypes=short_dtypes)}}}")

  def __eq__(self, other):
    return (type(other) is KernelRefType and self.inner_aval == other.inner_aval
            and self.memory_space == other.memory_space)

  def __hash__(self):
    return hash(("KernelRef", self.inner_aval, self.memory_space))


class _RefEffect(core.Effect):
  """A write to a kernel ref (keeps ``swap``/``addupdate`` out of dead-code elimination)."""


_write_effect = _RefEffect("RefWrite")


# --- indices: a static template plus traced operands -----------------------------------------
_DYN = "__dyn__"


def _split_index(idx, dyn):
  """``idx`` (a tuple of ints, slices, ``Slice``s, Ellipsis, None, integer arrays) as a
  hashable template with ``(_DYN, k)`` where ``dyn[k]`` goes (its traced or array parts
  are appended to ``dyn``)."""
  from pyjax._src.state.indexing import Slice

  def part(x):
    if x is None or x is Ellipsis or isinstance(x, (bool, np.bool_)):
      return x
    if isinstance(x, (int, np.integer)):
      return int(x)
    if isinstance(x, slice):
      return ("slice", part(x.start), part(x.stop), part(x.step))
    if isinstance(x, Slice):
      return ("ds", part(x.start), part(x.size), part(x.stride))
    if isinstance(x, core.Tracer) or hasattr(x, "_buf") or isinstance(x, np.ndarray):
      dyn.append(x)
      return (_DYN, len(dyn) - 1)
    raise NotStateful(f"index element {x!r}")
  return tuple(part(x) for x in idx)


def _is_full(template):
  return template == () or template == (Ellipsis,)


def _view_shape(shape, template, dyn):
  """The shape of ``ref.at[idx]`` (``template``/``dyn``: ``idx``) for a ref of ``shape``:
  views index with ints, slices and ``Slice``s of static size (others are not
  modelled)."""
  n_real = sum(1 for x in template if x is not Ellipsis)
  out, d = [], 0
  for x in template:
    if x is Ellipsis:
      out += shape[d:d + len(shape) - n_real]
      d += len(shape) - n_real
      continue
    if x is None or isinstance(x, bool):
      raise NotStateful("None / bool in a view index")
    if isinstance(x, int):
      pass
    elif x[0] == _DYN:
      if np.shape(dyn[x[1]]) != ():
        raise NotStateful("an array index in a view")
    elif x[0] == "ds":
      if type(x[2]) is tuple:
        raise NotStateful("a traced view size")
      out.append(x[2])
    else:
      start, stop, step = slice(x[1], x[2], x[3]).indices(shape[d])
      out.append(len(range(start, stop, step)))
    d += 1
  return tuple(out) + tuple(shape[d:])


def _join_index(template, dyn):
  from pyjax._src.state.indexing import Slice

  def part(x):
    if type(x) is tuple:
      if x[0] == _DYN:
        return dyn[x[1]]
      if x[0] == "slice":
        return slice(part(x[1]), part(x[2]), part(x[3]))
      if x[0] == "ds":
        return Slice(part(x[1]), part(x[2]), part(x[3]))
    return x
  return tuple(part(x) for x in template)


# --- primitives ---------------------------------------------------------------------------------
get_p = core.Primitive("get")
swap_p = core.Primitive("swap")
addupdate_p = core.Primitive("addupdate")
addupdate_p.multiple_results = True
program_id_p = core.Primitive("program_id")


def _box_trace(fn, ref_aval, dyn_avals, extra_avals=()):
  """Trace ``fn(box, dyn, extra)`` with a pyjax ``Ref`` box holding a value of the ref's
  type: the result avals of an access and the errors a discharged access raises."""
  from pyjax._src.interpreters import staging

  def flat(v, *xs):
    frame = state_types.Frame()
    frame.interp = core._state.interp
    box = state_types.Ref(v, frame)
    state_types.push_frame(frame)
    try:
      out = fn(box, list(xs[:len(dyn_avals)]), list(xs[len(dyn_avals):]))
    finally:
      state_types.pop_frame(frame)
    return out
  closed, _ = staging.trace_flat(flat, [ref_aval.inner_aval, *dyn_avals, *extra_avals])
  return [v.aval for v in closed.jaxpr.outvars]


def _target(box, idx, dyn):
  """(the box or its ``.at`` view, the access index) for the ``idx`` param of an access:
  a tuple of index templates, the views' then the access's."""
  for t in idx[:-1]:
    box = views.RefView(box, _join_index(t, dyn))
  return box, _join_index(idx[-1], dyn)


_abstract_cache = {}   # (primitive, ref type, index, operand avals) -> result aval(s)


def _cached(key, compute):
  """``compute()`` (a box trace), memoized on ``key``: a kernel's accesses repeat."""
  try:
    hit = _abstract_cache.get(key)
  except TypeError:   # an unhashable aval
    return compute()
  if hit is None:
    hit = _abstract_cache[key] = compute()
    if len(_abstract_cache) > 4096:
      _abstract_cache.pop(next(iter(_abstract_cache)))
  return hit


def _get_abstract(ref, *dyn, idx):
  def fn(b, d, _):
    t, i = _target(b, idx, d)
    return [t[i]]
  return _cached(("get", ref, idx, dyn), lambda: _box_trace(fn, ref, list(dyn))[0])


def _swap_abstract(ref, val, *dyn, idx):
  def fn(b, d, e):
    t, i = _target(b, idx, d)
    return [t.swap(e[0], i)]
  out = _cached(("swap", ref, idx, val, dyn),
                lambda: _box_trace(fn, ref, list(dyn), [val])[0])
  return out, frozenset([_write_effect])


def _addupdate_abstract(ref, val, *dyn, idx):
  def fn(b, d, e):
    t, i = _target(b, idx, d)
    t.addupdate(e[0], i)
    return []
  _cached(("addupdate", ref, idx, val, dyn), lambda: _box_trace(fn, ref, list(dyn), [val]))
  return [], frozenset([_write_effect])


get_p.def_abstract_eval(_get_abstract)
swap_p.def_effectful_abstract_eval(_swap_abstract)
addupdate_p.def_effectful_abstract_eval(_addupdate_abstract)
program_id_p.def_abstract_eval(lambda *, axis: ShapedArray((), np.dtype(np.int32)))


def _no_impl(name):
  def impl(*_, **__):
    raise ValueError(f"`{name}` only runs inside a Pallas kernel (pallas_call)")
  return impl


for _p in (get_p, swap_p, addupdate_p, program_id_p):
  _p.def_impl(_no_impl(_p.name))


# --- printing (JAX's forms) ---------------------------------------------------------------------
def _pp_int(v, ctx):
  if type(v) is core.Literal:
    return core._format_literal(v.val)
  return ctx.name(v)


def _pp_slice(start, size, stride, dim, ctx):
  del stride   # JAX prints a strided slice like an unstrided one
  if isinstance(start, core.Var):
    s = ctx.name(start)
    z = ctx.name(size) if isinstance(size, core.Var) else str(size)
    return f"{s}:{s}+{z}"
  start_str = "" if start == 0 else str(start)
  if isinstance(size, core.Var):
    z = ctx.name(size)
    return f"{start_str}:{start_str}+{z}" if start_str else f":{z}"
  end = start + size
  return f"{start_str}:{'' if end == dim else end}"


def _pp_one(shape, template, dyn_vars, ctx):
  """One indexer in JAX's NDIndexer form (``[:4,:]``, ``[1,2]``, ``[a:a+4,:]``): an entry
  per dimension of ``shape``."""
  n_real = sum(1 for x in template if x is not None and x is not Ellipsis)
  parts, d = [], 0
  for x in template:
    if x is None:
      continue
    if x is Ellipsis:
      for _ in range(len(shape) - n_real):
        parts.append(":")
        d += 1
      continue
    dim = shape[d]
    if isinstance(x, int):
      parts.append(str(x))
    elif x[0] == _DYN:
      parts.append(_pp_int(dyn_vars[x[1]], ctx))
    elif x[0] == "ds":
      st = dyn_vars[x[1][1]] if type(x[1]) is tuple else x[1]
      sz = dyn_vars[x[2][1]] if type(x[2]) is tuple else x[2]
      parts.append(_pp_slice(st, sz, x[3], dim, ctx))
    else:   # a Python slice with static bounds
      start, stop, step = slice(x[1], x[2], x[3]).indices(dim)
      parts.append(_pp_slice(start, len(range(start, stop, step)), step, dim, ctx))
    d += 1
  parts += [":"] * (len(shape) - d)
  return f"[{','.join(parts)}]"


def _pp_index(ref_var, idx, dyn_vars, ctx):
  """``d[...]`` for a whole-ref access, else the views' and the access's indexers
  (``d[2:6,:][1:3,:]``)."""
  templates = [t for t in idx[:-1]] + ([] if _is_full(idx[-1]) else [idx[-1]])
  if not templates:
    return f"{ctx.name(ref_var)}[...]"
  shape, out = tuple(ref_var.aval.shape), []
  for t in templates:
    out.append(_pp_one(shape, t, dyn_vars, ctx))
    shape = _view_shape(shape, t, dyn_vars)
  return ctx.name(ref_var) + "".join(out)


def _pp_get(eqn, ctx):
  ref, *dyn = eqn.invars
  return (f"{ctx.binder(eqn.outvars[0])} <- "
          f"{_pp_index(ref, eqn.params['idx'], dyn, ctx)}")


def _pp_swap(eqn, ctx):
  ref, val, *dyn = eqn.invars
  at = _pp_index(ref, eqn.params["idx"], dyn, ctx)
  out = eqn.outvars[0]
  if ctx.var_name(out) == "_":
    return f"{at} <- {ctx.name(val)}"
  return f"{ctx.binder(out)}, {at} <- {at}, {ctx.name(val)}"


def _pp_addupdate(eqn, ctx):
  ref, val, *dyn = eqn.invars
  return f"{_pp_index(ref, eqn.params['idx'], dyn, ctx)} += {ctx.name(val)}"


get_p.pp_eqn_rule = _pp_get
swap_p.pp_eqn_rule = _pp_swap
addupdate_p.pp_eqn_rule = _pp_addupdate


# --- the kernel-side ref ------------------------------------------------------------------------
class KernelRef:
  """A kernel's ref (or a view ``ref.at[idx]`` of it: ``transforms``) while the kernel is
  traced statefully: reads and writes stage ``get`` / ``swap`` / ``addupdate`` equations
  on the ref variable ``tracer``."""
  __slots__ = ("tracer", "transforms", "_shape")
  _is_kernel_ref = True

  def __init__(self, tracer, transforms=(), shape=None):
    self.tracer, self.transforms = tracer, transforms
    self._shape = tuple(tracer.aval.shape) if shape is None else shape

  @property
  def aval(self):
    inner = self.tracer.aval.inner_aval
    return KernelRefType(ShapedArray(self._shape, inner.dtype, inner.weak_type),
                         self.tracer.aval.memory_space)

  shape = property(lambda self: self._shape)
  dtype = property(lambda self: self.tracer.aval.dtype)
  ndim = property(lambda self: len(self._shape))
  size = property(lambda self: int(np.prod(self._shape, dtype=np.int64)))
  weak_type = property(lambda self: self.tracer.aval.weak_type)

  def __len__(self):
    if not self._shape:
      raise TypeError("len() of unsized object")
    return self._shape[0]

  def _split(self, idx):
    """(index templates: the views' then this access's, their dynamic operands)."""
    from pyjax._src.state import primitives
    dyn = []
    templates = tuple(_split_index(t, dyn) for t in self.transforms)
    return templates + (_split_index(primitives._norm_idx(idx), dyn),), dyn

  def __getitem__(self, idx):
    templates, dyn = self._split(idx)
    return get_p.bind(self.tracer, *dyn, idx=templates)

  def __setitem__(self, idx, value):
    self.swap(value, idx)

  def get(self, idx=()):
    return self[idx]

  def set(self, value, idx=()):
    self.swap(value, idx)

  def swap(self, value, idx=()):
    from pyjax._src.state import primitives
    templates, dyn = self._split(idx)
    return swap_p.bind(self.tracer, primitives._as_value(value), *dyn, idx=templates)

  def addupdate(self, x, idx=None):
    from pyjax._src.state import primitives
    templates, dyn = self._split(() if idx is None else idx)
    addupdate_p.bind(self.tracer, primitives._as_value(x), *dyn, idx=templates)

  @property
  def at(self):
    return _At(self)

  def __jax_array__(self):
    raise NotStateful("a ref used as an array")

  def __repr__(self):
    return f"KernelRef({self.aval})"


class _At(views._At):
  """``ref.at``: ``ref.at[idx]`` is a ``KernelRef`` with one more transform."""
  __slots__ = ()

  def __getitem__(self, idx):
    from pyjax._src.state import primitives
    idx = primitives._norm_idx(idx)
    dyn = []
    shape = _view_shape(self.ref.shape, _split_index(idx, dyn), dyn)
    return KernelRef(self.ref.tracer, self.ref.transforms + (idx,), shape)


def is_kernel_ref(x):
  return getattr(x, "_is_kernel_ref", False)


# --- Triton-style masked load / store ------------------------------------------------------------
masked_load_p = core.Primitive("masked_load")
masked_swap_p = core.Primitive("masked_swap")


def _masked_args(ins, params):
  """(mask, other, dynamic index operands) of a masked_load / masked_swap's operands
  after the ref (and the value)."""
  k = 0
  mask = other = None
  if params["has_mask"]:
    mask, k = ins[k], k + 1
  if params.get("has_other"):
    other, k = ins[k], k + 1
  return mask, other, ins[k:]


def _masked_load_boxes(box, ins, params):
  from pyjax._src.pallas import primitives as plp
  mask, other, dyn = _masked_args(ins, params)
  t, i = _target(box, params["idx"], dyn)
  return plp.load(t, None if _is_full(params["idx"][-1]) else i, mask=mask, other=other)


def _masked_swap_boxes(box, val, ins, params):
  from pyjax._src.pallas import primitives as plp
  mask, _, dyn = _masked_args(ins, params)
  t, i = _target(box, params["idx"], dyn)
  return plp.swap(t, None if _is_full(params["idx"][-1]) else i, val, mask=mask)


def _masked_load_abstract(ref, *ins, **params):
  return _box_trace(lambda b, d, _: [_masked_load_boxes(b, d, params)], ref, list(ins))[0]


def _masked_swap_abstract(ref, val, *ins, **params):
  out = _box_trace(lambda b, d, e: [_masked_swap_boxes(b, e[0], d, params)], ref, list(ins),
                   [val])[0]
  return out, frozenset([_write_effect])


masked_load_p.def_abstract_eval(_masked_load_abstract)
masked_swap_p.def_effectful_abstract_eval(_masked_swap_abstract)
masked_load_p.def_impl(_no_impl("masked_load"))
masked_swap_p.def_impl(_no_impl("masked_swap"))


def _pp_masks(eqn, ctx, rest):
  p = eqn.params
  mask, other, dyn = _masked_args(rest, p)
  tail = (f" mask={ctx.name(mask)}" if p["has_mask"] else "") + (
      f" other={ctx.name(other)}" if p.get("has_other") else "")
  return dyn, tail


def _pp_masked_load(eqn, ctx):
  ref, *rest = eqn.invars
  dyn, tail = _pp_masks(eqn, ctx, rest)
  return (f"{ctx.binder(eqn.outvars[0])} <- "
          f"{_pp_index(ref, eqn.params['idx'], dyn, ctx)}{tail}")


def _pp_masked_swap(eqn, ctx):
  ref, val, *rest = eqn.invars
  dyn, tail = _pp_masks(eqn, ctx, rest)
  at = _pp_index(ref, eqn.params["idx"], dyn, ctx)
  return f"{ctx.binder(eqn.outvars[0])}, {at} <- {at}, {ctx.name(val)}{tail}"


masked_load_p.pp_eqn_rule = _pp_masked_load
masked_swap_p.pp_eqn_rule = _pp_masked_swap


def masked_load(ref, idx, mask, other):
  """``plt.load`` on a kernel ref in a stateful trace: a ``masked_load`` equation."""
  import pyjax.numpy as jnp
  templates, dyn = ref._split(() if idx is None else idx)
  ops = [x for x in (mask, other) if x is not None]
  ops = [jnp.asarray(x) for x in ops]
  if other is not None and ops[-1].dtype != ref.dtype:
    ops[-1] = ops[-1].astype(ref.dtype)
  return masked_load_p.bind(ref.tracer, *ops, *dyn, idx=templates,
                            has_mask=mask is not None, has_other=other is not None)


def masked_swap(ref, idx, val, mask):
  """``plt.swap`` / ``plt.store`` on a kernel ref in a stateful trace."""
  import pyjax.numpy as jnp
  templates, dyn = ref._split(() if idx is None else idx)
  val = jnp.asarray(val, dtype=ref.dtype) if not hasattr(val, "dtype") else val
  ops = [jnp.asarray(mask)] if mask is not None else []
  return masked_swap_p.bind(ref.tracer, val, *ops, *dyn, idx=templates,
                            has_mask=mask is not None)


# --- run_scoped ----------------------------------------------------------------------------------
run_scoped_p = core.Primitive("run_scoped")
run_scoped_p.multiple_results = True
_active = [0]   # > 0 while a kernel is traced statefully (pallas_call._trace_kernel_stateful)


class Active:
  """Context manager: a kernel's stateful trace is in progress (``pl.run_scoped`` stages
  a ``run_scoped`` equation instead of allocating boxes)."""

  def __enter__(self):
    _active[0] += 1

  def __exit__(self, *exc):
    _active[0] -= 1


def active():
  return _active[0] > 0


def _run_scoped_abstract(*avals, jaxpr, collective_axes, ref_transforms):
  return [v.aval for v in jaxpr.outvars], frozenset([_write_effect])


run_scoped_p.def_effectful_abstract_eval(_run_scoped_abstract)
run_scoped_p.def_impl(_no_impl("run_scoped"))


def run_scoped(f, types, kw_types):
  """``pl.run_scoped(f, *types, **kw_types)`` in a stateful trace: ``f`` traced with new
  ref variables of those types (the refs it closes over become the jaxpr's constvars
  and the equation's operands, as JAX prints it); returns ``f``'s result."""
  from pyjax._src import tree_util
  from pyjax._src.interpreters import staging
  from pyjax._src.pallas import core as plc
  keys = list(kw_types)
  all_types = list(types) + [kw_types[k] for k in keys]
  avals = [KernelRefType(plc._alloc_type_aval(t),
                         "default" if getattr(t, "memory_space", None) is None
                         else str(t.memory_space)) for t in all_types]
  out_tree = []

  def flat(*xs):
    refs = [KernelRef(x) for x in xs]
    out = f(*refs[:len(types)], **dict(zip(keys, refs[len(types):])))
    leaves, tree = tree_util.tree_flatten(out)
    out_tree.append(tree)
    return leaves
  closed, tracer_consts = staging.trace_flat(flat, avals)
  if closed.consts:
    raise NotStateful("run_scoped body with constants")
  n = len(tracer_consts)
  j = closed.jaxpr
  jaxpr = core.Jaxpr(j.invars[:n], j.invars[n:], j.outvars, j.eqns, j.effects, j.debug_info)
  outs = run_scoped_p.bind(*tracer_consts, jaxpr=jaxpr, collective_axes=(),
                           ref_transforms=((),) * len(avals))   # one per new ref
  return tree_util.tree_unflatten(out_tree[0], outs)


def _run_scoped_with_boxes(eqn, ins, ids):
  """A ``run_scoped`` equation discharged: new boxes holding uninitialized values (as
  ``pl.run_scoped`` allocates them when the kernel is traced with boxes)."""
  from pyjax._src.pallas import core as plc
  from pyjax._src.state import primitives
  jaxpr = eqn.params["jaxpr"]
  boxes = [primitives.new_ref(plc.uninitialized_value(v.aval.shape, v.aval.dtype))
           for v in jaxpr.invars]
  return eval_with_boxes(jaxpr, ins, ids, boxes)


_REF_PRIMS = None


def check_refs(jaxpr):
  """Refs may only reach get/swap/addupdate and the control-flow primitives (whose bodies
  are checked too)."""
  global _REF_PRIMS
  if _REF_PRIMS is None:
    _REF_PRIMS = {get_p.name, swap_p.name, addupdate_p.name, "cond", "while", "scan",
                  run_scoped_p.name, masked_load_p.name, masked_swap_p.name}
  for eqn in jaxpr.eqns:
    if any(isinstance(getattr(v, "aval", None), state_types.AbstractRef) for v in eqn.invars):
      if eqn.primitive.name not in _REF_PRIMS:
        raise NotStateful(f"a ref passed to {eqn.primitive.name}")
    for sub in core._jaxprs_in_params(eqn.params):
      check_refs(sub)


# --- discharge: evaluate with Ref boxes ---------------------------------------------------------
def _is_ref_var(v):
  return isinstance(getattr(v, "aval", None), state_types.AbstractRef)


def eval_with_boxes(jaxpr, consts, ids, args):
  """Evaluate the stateful ``jaxpr`` with ``args`` (pyjax ``Ref`` boxes for its ref
  variables, values for the others) on the current interpreter; ``ids`` are the grid
  position (``program_id``'s values).  Returns its outputs."""
  env = dict(zip(jaxpr.constvars, consts))
  env.update(zip(jaxpr.invars, args))

  def read(v):
    return core.literal_value(v) if type(v) is core.Literal else env[v]
  for eqn in jaxpr.eqns:
    ins = [read(v) for v in eqn.invars]
    p = eqn.primitive
    if p is get_p:
      t, i = _target(ins[0], eqn.params["idx"], ins[1:])
      outs = [t[i]]
    elif p is swap_p:
      t, i = _target(ins[0], eqn.params["idx"], ins[2:])
      outs = [t.swap(ins[1], i)]
    elif p is addupdate_p:
      t, i = _target(ins[0], eqn.params["idx"], ins[2:])
      t.addupdate(ins[1], i)
      outs = []
    elif p is program_id_p:
      outs = [ids[eqn.params["axis"]]]
    elif p is run_scoped_p:
      outs = _run_scoped_with_boxes(eqn, ins, ids)
    elif p is masked_load_p:
      outs = [_masked_load_boxes(ins[0], ins[1:], eqn.params)]
    elif p is masked_swap_p:
      outs = [_masked_swap_boxes(ins[0], ins[1], ins[2:], eqn.params)]
    elif any(_is_ref_var(v) for v in eqn.invars):
      outs = _control_flow_with_boxes(eqn, ins, ids)
    else:
      outs = p.bind(*ins, **eqn.params)
      if not p.multiple_results:
        outs = [outs]
    env.update(zip(eqn.outvars, outs))
  return [read(v) for v in jaxpr.outvars]


def _control_flow_with_boxes(eqn, ins, ids):
  """``cond`` / ``while`` / ``scan`` whose bodies take refs: run again through
  ``lax`` with the bodies closing over the boxes (``state/control_flow.py`` carries
  them), so the discharged program is what a direct trace with boxes gives."""
  import pyjax.lax as lax
  name, params = eqn.primitive.name, eqn.params
  is_ref = [_is_ref_var(v) for v in eqn.invars]

  if name == "cond":
    branches = params["branches"]
    ops = ins[1:]
    refs = {i + 1 for i, r in enumerate(is_ref[1:]) if r}
    plain = [x for i, x in enumerate(ops) if i + 1 not in refs]

    def branch(b):
      def fn(*vals):
        it = iter(vals)
        args = [ins[i + 1] if (i + 1) in refs else next(it) for i in range(len(ops))]
        return list(eval_with_boxes(b.jaxpr, b.consts, ids, args))
      return fn
    return list(lax.switch(ins[0], [branch(b) for b in branches], *plain))
  if name == "while":
    cn, bn = params["cond_nconsts"], params["body_nconsts"]
    cj, bj = params["cond_jaxpr"], params["body_jaxpr"]
    cconsts, bconsts, init = ins[:cn], ins[cn:cn + bn], ins[cn + bn:]
    if any(is_ref[cn + bn:]):
      raise NotStateful("a ref in a loop carry")
    return list(lax.while_loop(
        lambda c: eval_with_boxes(cj.jaxpr, cj.consts, ids, list(cconsts) + list(c))[0],
        lambda c: tuple(eval_with_boxes(bj.jaxpr, bj.consts, ids, list(bconsts) + list(c))),
        tuple(init)))
  if name == "scan":
    nc, nk = params["num_consts"], params["num_carry"]
    if any(is_ref[nc:]):
      raise NotStateful("a ref in a scan carry")
    sj = params["jaxpr"]
    consts, init, xs = ins[:nc], ins[nc:nc + nk], ins[nc + nk:]

    def step(c, x):
      outs = eval_with_boxes(sj.jaxpr, sj.consts, ids, list(consts) + list(c) + list(x))
      return tuple(outs[:nk]), tuple(outs[nk:])
    carry, ys = lax.scan(step, tuple(init), tuple(xs), length=params["length"],
                         reverse=params["reverse"], unroll=params["unroll"])
    return list(carry) + list(ys)
  raise NotStateful(f"a ref passed to {name}")

