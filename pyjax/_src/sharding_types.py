"""Sharding types: how a sharded Array's layout follows it through operations.

JAX 0.10 makes the sharding of an array over a mesh's ``Explicit`` axes part of its type
(``jax.typeof(x)`` prints ``float32[8@x,4@y]``) and checks it per primitive; over ``Auto``
axes XLA's propagation chooses the layout.  pyjax computes every program globally (its
values do not depend on the layout) and derives the layout of results with the rules
below, one per primitive family, walking a jaxpr (``jaxpr_out_specs``: the outputs of a
``jit``) or one eager operation (``eager_out_specs``):

* elementwise operations (every output has the shape of its non-scalar inputs): the
  inputs' specs merged dimension by dimension; two different axes on one dimension, or
  one axis on two dimensions, over Explicit axes, raise JAX's ``ShardingTypeError``;
* ``broadcast_in_dim`` keeps the spec of the operand's kept dimensions (a size-1 operand
  dimension that grows is unsharded); reductions drop the reduced dimensions;
  ``transpose`` permutes; ``squeeze`` drops; ``reshape`` maps a split or merged group of
  dimensions when only its leading dimension is sharded (``float32[8@x,4@y]`` to
  ``(32,)`` gives ``32@(x,y)``), else JAX's ``ShardingTypeError`` (Explicit) or unsharded;
* ``dot_general``: batch dimensions then the free dimensions of each operand keep their
  axes; sharded contracting dimensions need ``out_sharding`` (else ``ShardingTypeError``
  with JAX's message), as does a result that would use one axis twice;
* ``sharding_constraint`` (``with_sharding_constraint`` / ``reshard``) takes its
  sharding; ``shard_map`` lays its outputs out by ``out_specs``; ``jit`` and other equations carrying one jaxpr recurse into it;
* anything else gives unsharded (replicated) results.

Differs from JAX: over Auto axes XLA may choose other layouts than these rules (values
are the same); primitives without a rule give replicated results where JAX might keep a
sharding or raise ``ShardingTypeError``; inside ``jit`` the type ``jax.typeof`` shows is
derived from the equations recorded so far (tracers carry none), only in the outermost
jit of sharded arguments.
"""
from __future__ import annotations

import math

from pyjax._src.core import ShardingTypeError
from pyjax._src.lax import dot as _dot

__all__ = ["ShardingTypeError", "jaxpr_out_specs", "eager_out_specs", "spec_of", "to_spec"]


# A dimension's sharding is a tuple of mesh axis names (empty: not split); a value's is a
# tuple of those, one per dimension.
def spec_of(sharding, ndim):
  """The per-dimension axis tuples of a NamedSharding (all empty for anything else)."""
  spec = getattr(sharding, "spec", None)
  if spec is None:
    return ((),) * ndim
  entries = list(spec)[:ndim] + [None] * max(0, ndim - len(spec))
  return tuple(_names(e) for e in entries)


def _names(e):
  if e is None:
    return ()
  return tuple(n for n in (e if isinstance(e, tuple) else (e,)) if isinstance(n, str))


def to_spec(dims):
  """A PartitionSpec from per-dimension axis tuples (trailing unsharded dims dropped, as
  XLA reports them)."""
  from pyjax._src.sharding import PartitionSpec
  entries = [None if not d else (d[0] if len(d) == 1 else tuple(d)) for d in dims]
  while entries and entries[-1] is None:
    entries.pop()
  return PartitionSpec(*entries)


def _entry_repr(d):
  return None if not d else (d[0] if len(d) == 1 else tuple(d))


class _Ctx:
  """The mesh the rules work over: axis sizes and which axes are Explicit."""

  def __init__(self, mesh):
    from pyjax._src.sharding import AxisType
    self.mesh = mesh
    self.sizes = dict(zip(mesh.axis_names, mesh.axis_sizes))
    self.explicit = {n for n, t in zip(mesh.axis_names, mesh.axis_types)
                     if t == AxisType.Explicit}

  def is_explicit(self, dims):
    return any(n in self.explicit for d in dims for n in d)

  def factor(self, d):
    return math.prod(self.sizes[n] for n in d)

  def fail(self, dims, msg):
    """Explicit axes involved: raise; Auto only: give up (unsharded)."""
    if self.is_explicit(dims):
      raise ShardingTypeError(msg)
    return None

  def from_sharding(self, s, ndim):
    if s is None:
      return None
    mesh = getattr(s, "mesh", None)
    if mesh is not None and getattr(mesh, "axis_names", None) == self.mesh.axis_names:
      return spec_of(s, ndim)
    return ((),) * ndim


def _short(aval, dims, ctx, short_dtypes=True):
  base = aval.str_short(short_dtypes=short_dtypes)
  head = base[:base.index("[")]
  parts = []
  for n, d in zip(aval.shape, dims):
    shown = [a for a in d if a in ctx.explicit]
    parts.append(str(n) if not shown else
                 f"{n}@{shown[0]}" if len(shown) == 1 else f"{n}@({','.join(shown)})")
  return head + "[" + ",".join(parts) + "]"


# --- rules ----------------------------------------------------------------------------------
def _elementwise(ctx, name, in_avals, in_specs, out_avals):
  shape = out_avals[0].shape
  out = [()] * len(shape)
  full = [(a, s) for a, s in zip(in_avals, in_specs) if len(a.shape) == len(shape)
          and s is not None]
  for a, s in full:
    for d, names in enumerate(s):
      if not names or a.shape[d] != shape[d]:   # (a size-1 dimension that broadcasts)
        continue
      if out[d] and out[d] != names:
        if ctx.is_explicit((out[d], names)):
          raise ShardingTypeError(
              f"{name} got incompatible shardings for broadcasting: "
              + ", ".join(str(tuple(_entry_repr(x) for x in t)) for _, t in full) + ".")
        continue
      out[d] = names
  used = [n for d in out for n in d]
  if len(used) != len(set(used)):
    twice = {n for n in used if used.count(n) > 1}
    if ctx.is_explicit((twice,)):   # e.g. f32[4@X,4] + f32[4,4@X]
      ins = ", ".join(_short(a, s if s is not None else ((),) * len(a.shape), ctx)
                      for a, s in zip(in_avals, in_specs))
      raise ShardingTypeError(f"{name} operation with inputs: {ins} produces an illegally "
                              f"sharded result: {_short(out_avals[0], out, ctx)}")
    return [((),) * len(shape)] * len(out_avals)
  return [tuple(out)] * len(out_avals)


def _broadcast_in_dim(ctx, eqn, in_avals, in_specs, out_avals):
  (a,), (s,) = in_avals[:1], in_specs[:1]
  out = [()] * len(out_avals[0].shape)
  for i, d in enumerate(eqn.params["broadcast_dimensions"]):
    if a.shape[i] == out_avals[0].shape[d]:
      out[d] = s[i]
  return [tuple(out)]


def _reduce(ctx, eqn, in_avals, in_specs, out_avals):
  axes = set(eqn.params.get("axes", ()))
  outs = []
  for s, o in zip(in_specs, out_avals):
    kept = tuple(d for i, d in enumerate(s) if i not in axes)
    outs.append(kept if len(kept) == len(o.shape) else ((),) * len(o.shape))
  return outs


def _argminmax(ctx, eqn, in_avals, in_specs, out_avals):
  axes = set(eqn.params.get("axes", ()))
  return [tuple(d for i, d in enumerate(in_specs[0]) if i not in axes)]


def _transpose(ctx, eqn, in_avals, in_specs, out_avals):
  return [tuple(in_specs[0][p] for p in eqn.params["permutation"])]


def _squeeze(ctx, eqn, in_avals, in_specs, out_avals):
  dims = {d % max(1, len(in_avals[0].shape)) for d in eqn.params["dimensions"]}
  return [tuple(d for i, d in enumerate(in_specs[0]) if i not in dims)]


def _reshape(ctx, eqn, in_avals, in_specs, out_avals):
  a, s, o = in_avals[0], in_specs[0], out_avals[0]
  forced = ctx.from_sharding(eqn.params.get("sharding"), len(o.shape))
  if forced is not None:
    return [forced]
  out = reshape_spec(ctx, a, s, tuple(o.shape))
  if out is None:
    return [((),) * len(o.shape)]
  return [out]


def reshape_spec(ctx, aval, spec, new_shape):
  """The spec of ``aval`` (spec ``spec``) reshaped to ``new_shape``.  Dimensions are
  grouped where their products match: a merged group takes the axes of its dimensions in
  order (``[8@x,4@y]`` to ``[32@(x,y)]``), a split dimension gives its axes to the first
  of its parts when they divide it; other sharded groups are not supported."""
  old = tuple(aval.shape)
  if not any(spec):
    return ((),) * len(new_shape)
  out = [()] * len(new_shape)
  i = j = 0
  while i < len(old) and j < len(new_shape):
    if old[i] == 1 and new_shape[j] != 1 and not spec[i]:
      i += 1
      continue
    if new_shape[j] == 1 and old[i] != 1:
      j += 1
      continue
    i0, j0 = i, j
    pi, pj = old[i], new_shape[j]
    i += 1
    j += 1
    while pi != pj:
      if pi < pj:
        pi *= old[i]
        i += 1
      else:
        pj *= new_shape[j]
        j += 1
    group = spec[i0:i]
    if not any(group):
      continue
    if j - j0 == 1:                                   # merged (or kept) dimensions
      out[j0] = tuple(n for d in group for n in d)
    elif i - i0 == 1 and new_shape[j0] % ctx.factor(group[0]) == 0:   # a split
      out[j0] = group[0]
    else:
      return ctx.fail(spec, "This reshape is not supported. Please specify the sharding of "
                      "the output via the `out_sharding` argument of jax.lax.reshape. Got "
                      f"operand type: {_short(aval, spec, ctx, False)}, new sizes: {new_shape}")
  if any(spec[i:]):
    return ctx.fail(spec, "This reshape is not supported.")
  return tuple(out)


def _dot_general(ctx, eqn, in_avals, in_specs, out_avals):
  (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
  ls, rs = in_specs
  osh = eqn.params.get("out_sharding")
  transposed = osh is _dot.LIKE_PRIMAL   # a cotangent: contracted axes summed away
  forced = None if transposed else ctx.from_sharding(osh, len(out_avals[0].shape))
  if forced is not None:
    return [forced]
  lcs = tuple(ls[i] for i in lc)
  rcs = tuple(rs[i] for i in rc)
  lbs = tuple(ls[i] for i in lb)
  rbs = tuple(rs[i] for i in rb)
  show = lambda t: tuple(_entry_repr(d) for d in t)
  for x, y, msg in (
      (lbs, rbs, "dot_general requires lhs batch dimensions and rhs batch dimensions to "
       f"have the consistent sharding, got {show(lbs)} and {show(rbs)}."),
      (lcs, rcs, "dot_general requires contracting dimensions to have consistent "
       f"sharding, got {show(lcs)} and {show(rcs)}.")):
    for l, r in zip(x, y):
      if l and r and l != r and ctx.is_explicit((l, r)):
        raise ShardingTypeError(msg)
  summed = {n for d in lcs + rcs for n in d} if transposed else set()
  for l, r in zip(lcs, rcs):
    if l and r and ctx.is_explicit((l, r)) and not transposed:
      raise ShardingTypeError(
          "Contracting dimensions are sharded and it is ambiguous how the output should be "
          "sharded. Please specify the output sharding via the `out_sharding` parameter. "
          f"Got lhs_contracting_spec={show(lcs)} and rhs_contracting_spec={show(rcs)}")
  out = []
  for i in lb:
    out.append(ls[i])
  out += [ls[i] for i in range(len(ls)) if i not in lc and i not in lb]
  out += [rs[i] for i in range(len(rs)) if i not in rc and i not in rb]
  if summed:
    out = [tuple(n for n in d if n not in summed) for d in out]
  used = [n for d in out for n in d]
  if len(used) != len(set(used)):
    if ctx.is_explicit(out):
      la, ra = in_avals
      raise ShardingTypeError(
          f"dot_general operation with inputs: {_short(la, ls, ctx)}, {_short(ra, rs, ctx)} "
          f"produces an illegally sharded result: {_short(out_avals[0], out, ctx)}")
    return [((),) * len(out)]
  return [tuple(out)]


def _varying_out_shape(ctx, name, aval, spec, shape):
  """The operand's spec for a result of another shape (slices, convolutions): a sharded
  dimension whose size changes must stay divisible by its mesh axes (JAX's
  ShardingTypeError over Explicit axes; unsharded over Auto ones)."""
  for names, n_in, n_out in zip(spec, aval.shape, shape):
    if names and n_in != n_out and n_out % ctx.factor(names):
      ctx.fail((names,), (
          f"{name} on sharded dims where out dim ({n_out}) is not divisible by mesh axes "
          f"({ctx.factor(names)}) with spec ({_entry_repr(names)}) is not implemented. Got "
          f"input type={_short(aval, spec, ctx)} and output shape={tuple(shape)}"))
      return [((),) * len(shape)]
  return [tuple(spec)]


def _slice(ctx, eqn, in_avals, in_specs, out_avals):
  name = "slicing" if eqn.primitive.name == "slice" else eqn.primitive.name
  return _varying_out_shape(ctx, name, in_avals[0], in_specs[0], out_avals[0].shape)


def _gather(ctx, eqn, in_avals, in_specs, out_avals):
  """``gather`` (JAX's rule): the sliced operand dimensions must be unsharded (or taken
  whole), the index dimensions other than the batching ones unsharded, and batching
  dimensions agree; then offset dimensions take the operand's axes and the others the
  indices'.  Otherwise JAX's ShardingTypeError over Explicit axes."""
  (oa, ia), (os_, is_) = in_avals[:2], in_specs[:2]
  nd = len(out_avals[0].shape)
  if not any(os_) and not any(is_):
    return [((),) * nd]
  dn = eqn.params["dimension_numbers"]
  sizes = eqn.params["slice_sizes"]
  ob, ib = tuple(dn.operand_batching_dims), tuple(dn.start_indices_batching_dims)
  is_ = list(is_)
  ok = (all(sizes[i] == oa.shape[i] or not os_[i] for i in dn.start_index_map)
        and all(not os_[o] or not is_[i] or os_[o] == is_[i] for o, i in zip(ob, ib))
        and all(not d for i, d in enumerate(is_) if i not in ib))
  if not ok:
    ctx.fail(tuple(os_) + tuple(is_), (
        "Use `.at[...].get(out_sharding=)` to provide output PartitionSpec for the gather "
        "indexing as out sharding could not be resolved unambiguously (or would require "
        f"collectives on inputs). Got operand=ShapedArray({_short(oa, os_, ctx, False)}), "
        f"indices=ShapedArray({_short(ia, is_, ctx, False)})"))
    return [((),) * nd]
  for o, i in zip(ob, ib):
    is_[i] = is_[i] or os_[o]
  offsets = iter(i for i in range(len(sizes))
                 if i not in dn.collapsed_slice_dims and i not in ob)
  idx = iter(is_)
  return [tuple(os_[next(offsets)] if d in dn.offset_dims else next(idx) for d in range(nd))]


def _conv(ctx, eqn, in_avals, in_specs, out_avals):
  """``conv_general_dilated``: its ``out_sharding`` if given; else, with the kernel
  unsharded and the input's feature dimension unsharded, the input's spec position by
  position (a spatial dimension whose size changes must stay divisible); otherwise
  JAX's error over Explicit axes (unsharded over Auto ones)."""
  nd = len(out_avals[0].shape)
  forced = ctx.from_sharding(eqn.params.get("out_sharding"), nd)
  if forced is not None:
    return [forced]
  ls, rs = in_specs
  la = in_avals[0]
  feature = eqn.params["dimension_numbers"].lhs_spec[1]
  if not any(rs) and not ls[feature]:
    return _varying_out_shape(ctx, "conv_general_dilated", la, ls, out_avals[0].shape)
  ctx.fail(tuple(ls) + tuple(rs), "Please specify the output sharding via `out_sharding` "
           "parameter of `conv_general_dilated`")
  return [((),) * nd]


def _constraint(ctx, eqn, in_avals, in_specs, out_avals):
  s = ctx.from_sharding(eqn.params.get("sharding"), len(out_avals[0].shape))
  return [s if s is not None else in_specs[0]]


def _sub_jaxpr(eqn):
  for k in ("jaxpr", "call_jaxpr", "fun_jaxpr"):
    j = eqn.params.get(k)
    if j is not None and hasattr(j, "jaxpr" if hasattr(j, "consts") else "eqns"):
      return j
  return None


def _shard_map(ctx, eqn, in_avals, in_specs, out_avals):
  """Outputs are laid out by ``out_specs`` over the shard_map's mesh (when it is the
  context's mesh; unsharded otherwise)."""
  mesh = eqn.params.get("mesh")
  if getattr(mesh, "axis_names", None) != ctx.mesh.axis_names:
    return [((),) * len(o.shape) for o in out_avals]
  outs = []
  for spec, o in zip(eqn.params["out_specs"], out_avals):
    entries = list(spec or ())[:len(o.shape)]
    outs.append(tuple(_names(e) for e in entries + [None] * (len(o.shape) - len(entries))))
  return outs


_RULES = {
    "shard_map": _shard_map,
    "broadcast_in_dim": _broadcast_in_dim,
    "reduce_sum": _reduce, "reduce_max": _reduce, "reduce_min": _reduce,
    "reduce_prod": _reduce, "reduce_and": _reduce, "reduce_or": _reduce,
    "reduce_xor": _reduce, "reduce_precision": None,
    "argmax": _argminmax, "argmin": _argminmax,
    "transpose": _transpose, "squeeze": _squeeze, "reshape": _reshape,
    "dot_general": _dot_general, "sharding_constraint": _constraint,
    "conv_general_dilated": _conv, "slice": _slice, "dynamic_slice": _slice,
    "gather": _gather,
}
# primitives whose outputs have their inputs' shape without being elementwise
_NOT_ELEMENTWISE = frozenset({
    "cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp", "sort", "rev", "fft",
    "dynamic_update_slice", "scatter", "scatter-add", "scatter_add", "scatter_mul",
    "scatter_min", "scatter_max", "pad", "conv_general_dilated", "reduce_window_sum",
    "reduce_window_max", "reduce_window_min", "select_and_scatter_add", "while", "cond",
    "scan", "rng_bit_generator", "random_bits", "threefry2x32", "top_k", "psum", "shard_map",
})


def _eqn_rule(ctx, eqn, in_specs):
  name = eqn.primitive.name
  in_avals = [v.aval for v in eqn.invars]
  out_avals = [v.aval for v in eqn.outvars]
  rule = _RULES.get(name)
  if rule is not None:
    return rule(ctx, eqn, in_avals, in_specs, out_avals)
  sub = _sub_jaxpr(eqn)
  sub = sub.jaxpr if sub is not None and hasattr(sub, "consts") else sub
  if sub is not None and len(sub.invars) == len(in_specs) and name not in (
      "while", "cond", "scan", "shard_map"):
    return _walk(ctx, sub, in_specs)
  if (name not in _NOT_ELEMENTWISE and out_avals
      and all(o.shape == out_avals[0].shape for o in out_avals)
      and all(not a.shape or (len(a.shape) == len(out_avals[0].shape) and all(
          n in (1, m) for n, m in zip(a.shape, out_avals[0].shape))) for a in in_avals)):
    return _elementwise(ctx, name, in_avals, in_specs, out_avals)
  return [((),) * len(o.shape) for o in out_avals]


def walk_eqns(ctx, eqns, env):
  """Extend ``env`` (var -> per-dimension axis tuples) over ``eqns``; returns a reader
  (unsharded for variables it does not know)."""
  def read(v):
    s = env.get(v) if not hasattr(v, "val") else None
    return s if s is not None else ((),) * len(v.aval.shape)

  for eqn in eqns:
    outs = _eqn_rule(ctx, eqn, [read(v) for v in eqn.invars])
    for v, s in zip(eqn.outvars, outs):
      env[v] = s
  return read


def _walk(ctx, jaxpr, in_specs):
  read = walk_eqns(ctx, jaxpr.eqns, dict(zip(jaxpr.invars, in_specs)))
  return [read(v) for v in jaxpr.outvars]


def jaxpr_out_specs(mesh, closed, in_specs):
  """Per-dimension axis tuples of the outputs of ``closed`` whose inputs have
  ``in_specs`` (None: unsharded)."""
  ctx = _Ctx(mesh)
  specs = [s if s is not None else ((),) * len(a.shape)
           for s, a in zip(in_specs, closed.in_avals)]
  return _walk(ctx, closed.jaxpr, specs)


class _EagerEqn:
  """An equation-shaped view of one eager primitive application (for the rules)."""
  __slots__ = ("primitive", "params", "invars", "outvars")

  class _V:
    __slots__ = ("aval",)

    def __init__(self, aval):
      self.aval = aval

  def __init__(self, prim, params, in_avals, out_avals):
    self.primitive = prim
    self.params = params
    self.invars = [self._V(a) for a in in_avals]
    self.outvars = [self._V(a) for a in out_avals]


def eager_out_specs(mesh, prim, params, in_avals, in_specs, out_avals):
  """Per-dimension axis tuples of the outputs of one eager primitive application."""
  ctx = _Ctx(mesh)
  specs = [s if s is not None else ((),) * len(a.shape) for s, a in zip(in_specs, in_avals)]
  return _eqn_rule(ctx, _EagerEqn(prim, params, in_avals, out_avals), specs)
