"""Collectives over named axes: ``psum``, ``pmean``, ``pmax``, ``pmin``, ``axis_index``,
``axis_size``, ``all_gather``, ``psum_scatter``, ``ppermute``/``pshuffle``,
``all_to_all``, ``pbroadcast``, ``pswapaxes``, ``ragged_all_to_all``, ``pcast`` (and the
``pvary`` it binds) and the point-to-point ``psend``/``precv``.

A named axis is bound by ``vmap(..., axis_name=...)``: its batching interpreter evaluates
the collective across the batch (``psum`` of a value batched along the axis is a sum
over the batch dimension, which leaves the value unbatched, as in JAX).  A collective
whose axis no enclosing vmap binds raises JAX's NameError.  Under the batching rules the
primitives may also carry positional (int) axes, which reduce array dimensions (JAX's
jaxprs show ``psum[axes=(0,) ...]`` for a vmapped psum).

Inside ``shard_map`` (and ``pmap``) each device runs the traced program on its own thread;
there the primitives' eager rules meet the other devices in the collective runtime
(``runtime/collectives.py``), which computes the same values as the vmap rules.

``pbroadcast`` gives every member the ``source`` member's value; ``ragged_all_to_all``
moves ragged slices between members as JAX documents (and, unlike JAX, works under
``vmap``).  ``pcast`` changes the varying-manual-axes type, which only exists inside
``shard_map`` (a cast to 'varying' binds ``pvary``, the identity on values, read by
check_vma); outside ``shard_map`` it is the identity for no axes and raises otherwise, as
in JAX.  ``psend``/``precv`` are device-to-device transfers paired through a token; a
``vmap`` axis cannot pair them, so they stage (with an axis environment) but raise when run.

Differs from JAX: ``axis_index_groups`` is not supported (JAX: not supported under vmap
either).
"""
from __future__ import annotations

import numpy as np

from pyjax._src import core, dtypes, tree_util
from pyjax._src.avals import ShapedArray
from pyjax._src.interpreters import ad, batching
from pyjax._src.lax import elementwise as _ew
from pyjax._src.lax import reductions as _red
from pyjax._src.lax import shapes as _shapes
from pyjax._src.lax import gather_scatter as _sl
from pyjax._src.lax import tokens as _tok
from pyjax._src.runtime import collectives as _collectives

__all__ = ["psum", "pmean", "pmax", "pmin", "axis_index", "axis_size", "all_gather",
           "psum_scatter", "ppermute", "pshuffle", "all_to_all", "psum_p", "pmax_p", "pmin_p",
           "axis_index_p", "all_gather_p", "ppermute_p", "all_to_all_p",
           "pbroadcast", "pswapaxes", "pcast", "psend", "precv", "ragged_all_to_all",
           "ragged_all_to_all_p", "pvary_p"]

_nm = batching.not_mapped


def _names_tuple(axis_name):
  return tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)


def _named(axes):
  return tuple(a for a in axes if not isinstance(a, int))


def _positional(axes):
  return tuple(a for a in axes if isinstance(a, int))


def _no_groups(axis_index_groups):
  if axis_index_groups is not None:
    raise NotImplementedError("axis_index_groups not supported in vmap collectives. Please "
                              "open a feature request!")


def _unbound(names, public):
  """JAX's NameError for collectives bound where no vmap binds ``names``."""
  for n in names:
    raise NameError(f"Found an unbound axis name: {n}. To fix this, please call {public} "
                    "under `jax.shard_map`.")


def _spmd(names):
  """The collective runtime's context of the shard_map device program running on this
  thread (``runtime/collectives.py``) when it binds every name in ``names``, else None."""
  ctx = _collectives.current()
  if ctx is not None and names and ctx.binds(names):
    return ctx
  return None


def _spmd_out(ctx, buf, like):
  """A device program's collective result (a NumPy value) as an Array with ``like``'s
  weak type, on the program's device."""
  from pyjax._src.runtime.array import ArrayImpl
  aval = core.get_aval(like)
  buf = np.asarray(buf, dtype=aval.dtype)
  return ArrayImpl(buf, ShapedArray(buf.shape, aval.dtype, aval.weak_type), ctx.device, False)


def _eager(fn, *args):
  with core.set_interpreter(core.eval_interpreter):
    return fn(*args)


def _as_array(x):
  if isinstance(x, core.Tracer) or type(x).__name__ == "ArrayImpl":
    return x
  aval = core.get_aval(x)
  return _ew.convert_element_type_p.bind(np.asarray(x, aval.dtype), new_dtype=aval.dtype,
                                         weak_type=aval.weak_type, sharding=None)


def _times(x, n):
  """``x * n`` keeping x's dtype and weak type (computed now when x is concrete)."""
  def f(x):
    x = _as_array(x)
    aval = core.get_aval(x)
    return _ew.mul_p.bind(x, ad.scalar_const(n, aval.dtype, aval.weak_type))
  if isinstance(x, core.Tracer):
    return f(x)
  return _eager(f, x)


# --- the reductions: psum, pmax, pmin ------------------------------------------------------
def _reduction_abstract(public):
  def abstract(*avals, axes, axis_index_groups):
    batching.check_axis_names(public, _named(axes))
    pos = _positional(axes)
    return [ShapedArray(tuple(d for i, d in enumerate(a.shape) if i not in pos), a.dtype,
                        a.weak_type) for a in avals]
  return abstract


def _reduction_prim(name, reducer, public):
  p = core.Primitive(name)
  p.multiple_results = True
  p.def_abstract_eval(_reduction_abstract(public))

  def impl(*args, axes, axis_index_groups):
    named = _named(axes)
    ctx = _spmd(named)
    if named and ctx is None:
      _unbound(named, public)
    pos = _positional(axes)
    outs = [reducer.bind(_as_array(x), axes=pos, **({"out_sharding": None}
                                                    if reducer is _red.reduce_sum_p else {}))
            if pos else _as_array(x) for x in args]
    if ctx is not None:   # across the devices of a shard_map
      _no_groups(axis_index_groups)
      bufs = _collectives.reduce_many(ctx, name, outs, named)
      outs = [_spmd_out(ctx, b, o) for b, o in zip(bufs, outs)]
    return outs
  p.def_impl(impl)
  batching.axis_name_getters[p] = lambda params: params["axes"]
  return p


psum_p = _reduction_prim("psum", _red.reduce_sum_p, "psum")
pmax_p = _reduction_prim("pmax", _red.reduce_max_p, "pmax")
pmin_p = _reduction_prim("pmin", _red.reduce_min_p, "pmin")


def _reduction_collective_batch(prim, if_unmapped):
  def rule(axis_data, args, dims, *, axes, axis_index_groups):
    _no_groups(axis_index_groups)
    others = tuple(a for a in axes if a != axis_data.name)
    named, pos = _named(others), _positional(others)
    outs = []
    for x, d in zip(args, dims):
      if d is _nm:
        y = prim.bind(x, axes=pos, axis_index_groups=None)[0] if pos else x
        y = if_unmapped(y, axis_data.size)
      else:
        y = prim.bind(x, axes=batching.shift_axes(pos, d) + (d,), axis_index_groups=None)[0]
      if named:
        y = prim.bind(y, axes=named, axis_index_groups=None)[0]
      outs.append(y)
    return outs, [_nm] * len(outs)
  return rule


def _reduction_passthrough_batch(prim):
  def rule(args, dims, *, axes, axis_index_groups):
    outs, out_dims = [], []
    named, pos = _named(axes), _positional(axes)
    for x, d in zip(args, dims):
      if d is _nm:
        outs.append(prim.bind(x, axes=axes, axis_index_groups=axis_index_groups)[0])
        out_dims.append(_nm)
        continue
      new_axes = named + batching.shift_axes(pos, d)
      outs.append(prim.bind(x, axes=new_axes, axis_index_groups=axis_index_groups)[0])
      out_dims.append(d - sum(1 for a in pos if a < d))
    return outs, out_dims
  return rule


for _p, _unmapped in ((psum_p, _times), (pmax_p, lambda x, n: x), (pmin_p, lambda x, n: x)):
  batching.collective_batchers[_p] = _reduction_collective_batch(_p, _unmapped)
  batching.primitive_batchers[_p] = _reduction_passthrough_batch(_p)


def _psum_transpose(cts, *args, axes, axis_index_groups):
  pos = _positional(axes)
  named = _named(axes)
  outs = []
  for ct, x in zip(cts, args):
    aval = x.aval if ad.is_undefined_primal(x) else core.get_aval(x)
    ct = ad.instantiate_zeros(ct) if type(ct) is ad.Zero else ct
    if named:
      ct = psum_p.bind(ct, axes=named, axis_index_groups=axis_index_groups)[0]
    if pos:
      kept = tuple(i for i in range(len(aval.shape)) if i not in pos)
      ct = _shapes.broadcast_in_dim_p.bind(ct, shape=tuple(aval.shape),
                                           broadcast_dimensions=kept, sharding=None)
    outs.append(ct)
  return outs


ad.deflinear2(psum_p, _psum_transpose)


def _bool_to_int(x):
  if core.get_aval(x).dtype == dtypes.bool_:
    return _ew.convert_element_type_p.bind(_as_array(x), new_dtype=np.dtype(np.int32),
                                           weak_type=False, sharding=None)
  return x


def psum(x, axis_name, *, axis_index_groups=None):
  """Sum of ``x`` (a pytree) over the named axis (or tuple of axes) across the vmapped
  batch; every member gets the total.  Booleans are summed as int32.  A concrete value
  (not depending on the mapped arguments) is multiplied by the axis size, as in JAX."""
  names = _names_tuple(axis_name)
  leaves, tree = tree_util.tree_flatten(x)
  leaves = [_bool_to_int(v) for v in leaves]
  if all(not isinstance(v, core.Tracer) for v in leaves) and not _positional(names):
    size = axis_size(names)
    return tree_util.tree_unflatten(
        tree, [v * size if type(v) in (int, float, complex) else _times(v, size)
               for v in leaves])
  outs = psum_p.bind(*leaves, axes=names, axis_index_groups=axis_index_groups)
  return tree_util.tree_unflatten(tree, outs)


def pmean(x, axis_name, *, axis_index_groups=None):
  """Mean of ``x`` (a pytree) over the named axis: ``psum(x) / axis size`` (integer
  inputs give floating results, like JAX)."""
  from pyjax._src.numpy import ufuncs
  total = psum(x, axis_name, axis_index_groups=axis_index_groups)
  n = psum(1, axis_name, axis_index_groups=axis_index_groups)
  return tree_util.tree_map(lambda v: ufuncs.true_divide(v, n), total)


def _order_reduction(prim, x, axis_name, axis_index_groups):
  names = _names_tuple(axis_name)
  leaves, tree = tree_util.tree_flatten(x)
  outs = prim.bind(*leaves, axes=names, axis_index_groups=axis_index_groups)
  return tree_util.tree_unflatten(tree, outs)


def pmax(x, axis_name, *, axis_index_groups=None):
  """Maximum of ``x`` (a pytree) over the named axis.  Not differentiable (as in JAX)."""
  return _order_reduction(pmax_p, x, axis_name, axis_index_groups)


def pmin(x, axis_name, *, axis_index_groups=None):
  """Minimum of ``x`` (a pytree) over the named axis.  Not differentiable (as in JAX)."""
  return _order_reduction(pmin_p, x, axis_name, axis_index_groups)


# --- axis_index / axis_size ----------------------------------------------------------------
axis_index_p = core.Primitive("axis_index")


@axis_index_p.def_abstract_eval
def _axis_index_abstract(*, axis_name):
  batching.check_axis_names("axis_index", (axis_name,))
  return ShapedArray((), np.dtype(np.int32), False)


@axis_index_p.def_impl
def _axis_index_impl(*, axis_name):
  ctx = _spmd((axis_name,))
  if ctx is None:
    _unbound((axis_name,), "axis_index")
  from pyjax._src.runtime.array import ArrayImpl
  return ArrayImpl(np.asarray(ctx.coords[axis_name], np.int32),
                   ShapedArray((), np.dtype(np.int32), False), ctx.device, False)


def _axis_index_collective(axis_data, args, dims, *, axis_name):
  out = _shapes.iota_p.bind(dtype=np.dtype(np.int32), shape=(axis_data.size,), dimension=0,
                            sharding=None)
  return out, 0


batching.axis_name_getters[axis_index_p] = lambda params: (params["axis_name"],)
batching.collective_batchers[axis_index_p] = _axis_index_collective
ad.defjvp_zero(axis_index_p)


def axis_size(axis_name):
  """The size of the named axis (a Python int; the product for a tuple of names), or
  JAX's NameError when no enclosing vmap binds it."""
  size = 1
  for n in _names_tuple(axis_name):
    size *= batching.axis_size(n)
  return size


def axis_index(axis_name):
  """The index of the current member along the named axis (int32); for a tuple of names,
  the row-major index over all of them."""
  names = _names_tuple(axis_name)
  out = None
  for n in names:
    i = axis_index_p.bind(axis_name=n)
    if out is None:
      out = i
    else:
      out = _ew.add_p.bind(_ew.mul_p.bind(out, np.int32(batching.axis_size(n))), i)
  return out


# --- all_gather ----------------------------------------------------------------------------
all_gather_p = core.Primitive("all_gather")


@all_gather_p.def_abstract_eval
def _all_gather_abstract(x, *, all_gather_dimension, axis_name, axis_index_groups, axis_size,
                         tiled):
  batching.check_axis_names("all_gather", _named(axis_name))
  shape = list(x.shape)
  if tiled:
    shape[all_gather_dimension] *= axis_size
  else:
    shape.insert(all_gather_dimension, axis_size)
  return ShapedArray(tuple(shape), x.dtype, x.weak_type)


@all_gather_p.def_impl
def _all_gather_impl(x, **params):
  names = _named(params["axis_name"])
  ctx = _spmd(names)
  if ctx is None:
    _unbound(names, "all_gather")
  _no_groups(params["axis_index_groups"])
  x = _as_array(x)
  return _spmd_out(ctx, _collectives.all_gather(ctx, x._data(), names,
                                                params["all_gather_dimension"],
                                                params["tiled"]), x)


def _gathered(x, d, size, g, tiled):
  """``x`` (batched at ``d`` or unbatched) as the gathered value with the members along
  dimension ``g`` (merged into it when ``tiled``)."""
  x = batching.bdim_to(x, d, g, size)
  if not tiled:
    return x
  shape = list(core.get_aval(x).shape)
  shape[g:g + 2] = [shape[g] * shape[g + 1]]
  return _shapes.reshape_p.bind(x, new_sizes=tuple(shape), dimensions=None, sharding=None)


def _all_gather_collective(axis_data, args, dims, *, all_gather_dimension, axis_name,
                           axis_index_groups, axis_size, tiled):
  _no_groups(axis_index_groups)
  if tuple(axis_name) != (axis_data.name,):
    raise NotImplementedError("all_gather over several named axes at once is not supported; "
                              "gather one axis at a time")
  x, = args
  d, = dims
  return _gathered(x, d, axis_data.size, all_gather_dimension, tiled), _nm


def _all_gather_passthrough(args, dims, *, all_gather_dimension, **params):
  x, = args
  d, = dims
  g = all_gather_dimension
  if params["tiled"]:
    g2, out_d = (g, d) if g < d else (g + 1, d)
  else:
    g2, out_d = (g, d + 1) if g <= d else (g + 1, d)
  return all_gather_p.bind(x, all_gather_dimension=g2, **params), out_d


batching.axis_name_getters[all_gather_p] = lambda params: params["axis_name"]
batching.collective_batchers[all_gather_p] = _all_gather_collective
batching.primitive_batchers[all_gather_p] = _all_gather_passthrough


def all_gather(x, axis_name, *, axis_index_groups=None, axis=0, tiled=False):
  """Gather ``x`` (a pytree) from every member of the named axis: a new dimension at
  ``axis`` (or, with ``tiled``, concatenated along ``axis``)."""
  names = _names_tuple(axis_name)
  size = globals()["axis_size"](names)

  def one(leaf):
    leaf = _as_array(leaf)
    nd = len(core.get_aval(leaf).shape)
    ax = axis
    limit = nd if tiled else nd + 1
    if not -limit <= ax < limit:
      raise ValueError(f"axis {ax} is out of bounds for array of dimension {limit}")
    if ax < 0:
      ax += limit
    return all_gather_p.bind(leaf, all_gather_dimension=ax, axis_name=names,
                             axis_index_groups=axis_index_groups, axis_size=size,
                             tiled=bool(tiled))
  return tree_util.tree_map(one, x)


def _all_gather_transpose(ct, x, *, all_gather_dimension, axis_name, axis_index_groups,
                          axis_size, tiled):
  return [reduce_scatter_p.bind(ad.instantiate_zeros(ct), scatter_dimension=all_gather_dimension,
                                axis_name=axis_name, axis_index_groups=axis_index_groups,
                                axis_size=axis_size, tiled=tiled)]


ad.deflinear2(all_gather_p, _all_gather_transpose)


# --- psum_scatter (reduce_scatter) ---------------------------------------------------------
reduce_scatter_p = core.Primitive("reduce_scatter")


@reduce_scatter_p.def_abstract_eval
def _reduce_scatter_abstract(x, *, scatter_dimension, axis_name, axis_index_groups, axis_size,
                             tiled):
  batching.check_axis_names("psum_scatter", _named(axis_name))
  shape = list(x.shape)
  n = shape[scatter_dimension]
  if tiled:
    if n % axis_size:
      raise ValueError(f"psum_scatter: the scatter dimension of size {n} must be divisible "
                       f"by the axis size {axis_size} when tiled")
    shape[scatter_dimension] = n // axis_size
  else:
    if n != axis_size:
      raise ValueError(f"psum_scatter: the scatter dimension of size {n} must equal the axis "
                       f"size {axis_size} (or use tiled=True)")
    del shape[scatter_dimension]
  return ShapedArray(tuple(shape), x.dtype, x.weak_type)


@reduce_scatter_p.def_impl
def _reduce_scatter_impl(x, **params):
  names = _named(params["axis_name"])
  ctx = _spmd(names)
  if ctx is None:
    _unbound(names, "psum_scatter")
  _no_groups(params["axis_index_groups"])
  x = _as_array(x)
  return _spmd_out(ctx, _collectives.reduce_scatter(ctx, x._data(), names,
                                                    params["scatter_dimension"],
                                                    params["tiled"]), x)


def _reduce_scatter_collective(axis_data, args, dims, *, scatter_dimension, axis_name,
                               axis_index_groups, axis_size, tiled):
  _no_groups(axis_index_groups)
  if tuple(axis_name) != (axis_data.name,):
    raise NotImplementedError("psum_scatter over several named axes at once is not "
                              "supported; scatter one axis at a time")
  x, = args
  d, = dims
  size = axis_data.size
  if d is _nm:
    total = _times(x, size)
  else:
    total = _red.reduce_sum_p.bind(x, axes=(d,), out_sharding=None)
  s = scatter_dimension
  if tiled:
    shape = list(core.get_aval(total).shape)
    shape[s:s + 1] = [size, shape[s] // size]
    total = _shapes.reshape_p.bind(total, new_sizes=tuple(shape), dimensions=None,
                                   sharding=None)
  return total, s


def _reduce_scatter_passthrough(args, dims, *, scatter_dimension, **params):
  x, = args
  d, = dims
  s = scatter_dimension
  if params["tiled"]:
    s2, out_d = (s, d) if s < d else (s + 1, d)
  else:
    s2, out_d = (s, d - 1) if s < d else (s + 1, d)
  return reduce_scatter_p.bind(x, scatter_dimension=s2, **params), out_d


batching.axis_name_getters[reduce_scatter_p] = lambda params: params["axis_name"]
batching.collective_batchers[reduce_scatter_p] = _reduce_scatter_collective
batching.primitive_batchers[reduce_scatter_p] = _reduce_scatter_passthrough


def _reduce_scatter_transpose(ct, x, *, scatter_dimension, axis_name, axis_index_groups,
                              axis_size, tiled):
  return [all_gather_p.bind(ad.instantiate_zeros(ct), all_gather_dimension=scatter_dimension,
                            axis_name=axis_name, axis_index_groups=axis_index_groups,
                            axis_size=axis_size, tiled=tiled)]


ad.deflinear2(reduce_scatter_p, _reduce_scatter_transpose)


def psum_scatter(x, axis_name, *, scatter_dimension=0, axis_index_groups=None, tiled=False):
  """Sum ``x`` (a pytree) over the named axis and give member ``i`` the ``i``-th slice of
  the total along ``scatter_dimension`` (whose size must equal the axis size; with
  ``tiled``, a multiple of it, each member getting one block)."""
  names = _names_tuple(axis_name)
  size = axis_size(names)

  def one(leaf):
    leaf = _as_array(leaf)
    nd = len(core.get_aval(leaf).shape)
    s = scatter_dimension + nd if scatter_dimension < 0 else scatter_dimension
    return reduce_scatter_p.bind(leaf, scatter_dimension=s, axis_name=names,
                                 axis_index_groups=axis_index_groups, axis_size=size,
                                 tiled=bool(tiled))
  return tree_util.tree_map(one, x)


# --- ppermute --------------------------------------------------------------------------------
ppermute_p = core.Primitive("ppermute")


@ppermute_p.def_abstract_eval
def _ppermute_abstract(x, *, axis_name, perm):
  batching.check_axis_names("ppermute", _named(axis_name))
  return x


@ppermute_p.def_impl
def _ppermute_impl(x, **params):
  names = _named(params["axis_name"])
  ctx = _spmd(names)
  if ctx is None:
    _unbound(names, "ppermute")
  x = _as_array(x)
  return _spmd_out(ctx, _collectives.ppermute(ctx, x._data(), names, params["perm"]), x)


def _ppermute_collective(axis_data, args, dims, *, axis_name, perm):
  if tuple(axis_name) != (axis_data.name,):
    raise NotImplementedError("ppermute over several named axes at once is not supported")
  x, = args
  d, = dims
  size = axis_data.size
  for s, t in perm:
    if not (0 <= s < size and 0 <= t < size):
      raise ValueError(f"ppermute: permutation {perm} has indices out of range for an axis "
                       f"of size {size}")
  src = {t: s for s, t in perm}
  full = len(src) == size
  if d is _nm and full:
    return x, _nm
  x = batching.bdim_at_front(x, d, size)
  from pyjax._src.lax import gather_scatter
  aval = core.get_aval(x)
  nd = len(aval.shape)
  idx = np.array([[src.get(t, 0)] for t in range(size)], np.int32)
  dn = gather_scatter.GatherDimensionNumbers(offset_dims=tuple(range(1, nd)), collapsed_slice_dims=(0,),
                                      start_index_map=(0,))
  out = gather_scatter.gather_p.bind(x, idx, dimension_numbers=dn, slice_sizes=(1,) + aval.shape[1:],
                              unique_indices=full, indices_are_sorted=False,
                              mode=gather_scatter.GatherScatterMode.PROMISE_IN_BOUNDS, fill_value=None)
  if not full:
    mask = np.array([t in src for t in range(size)])
    mask = _shapes.broadcast_in_dim_p.bind(mask, shape=aval.shape, broadcast_dimensions=(0,),
                                           sharding=None)
    zeros = ad.zeros_like_aval(ShapedArray(aval.shape, aval.dtype, aval.weak_type))
    out = _ew.select_n_p.bind(mask, zeros, out)
  return out, 0


def _ppermute_passthrough(args, dims, **params):
  x, = args
  d, = dims
  return ppermute_p.bind(x, **params), d


batching.axis_name_getters[ppermute_p] = lambda params: params["axis_name"]
batching.collective_batchers[ppermute_p] = _ppermute_collective
batching.primitive_batchers[ppermute_p] = _ppermute_passthrough
ad.deflinear(ppermute_p, lambda ct, *, axis_name, perm: [
    ppermute_p.bind(ad.instantiate_zeros(ct), axis_name=axis_name,
                    perm=tuple((t, s) for s, t in perm))])


def ppermute(x, axis_name, perm):
  """Send member ``s``'s value of ``x`` (a pytree) to member ``t`` for each ``(s, t)`` in
  ``perm``; members nobody sends to get zeros.  Differs from JAX: under vmap a partial
  permutation is allowed (JAX asserts a full one)."""
  names = _names_tuple(axis_name)
  perm = tuple((int(s), int(t)) for s, t in perm)
  srcs, dsts = [s for s, _ in perm], [t for _, t in perm]
  if len(set(srcs)) != len(srcs) or len(set(dsts)) != len(dsts):
    raise ValueError(f"ppermute sources and destinations must be unique, got {perm}.")
  return tree_util.tree_map(
      lambda leaf: ppermute_p.bind(_as_array(leaf), axis_name=names, perm=perm), x)


def pshuffle(x, axis_name, perm):
  """Member ``i`` gets the value of member ``perm[i]`` (``perm`` a full permutation)."""
  perm = list(perm)
  if set(perm) != set(range(len(perm))):
    raise ValueError(f"`perm` does not represent a permutation: {perm}")
  return ppermute(x, axis_name, list(zip(perm, range(len(perm)))))


# --- all_to_all ------------------------------------------------------------------------------
# The primitive has JAX's "tiled" semantics: member j gets, concatenated along
# ``concat_axis`` in member order, the j-th of the axis-size chunks of every member's value
# along ``split_axis``.  The public function adds/removes the size-1 axes of the untiled form.
all_to_all_p = core.Primitive("all_to_all")


@all_to_all_p.def_abstract_eval
def _all_to_all_abstract(x, *, split_axis, concat_axis, axis_name, axis_index_groups, tiled):
  batching.check_axis_names("all_to_all", _named(axis_name))
  n = 1
  for name in _named(axis_name):
    n *= batching.bound_axis_sizes()[name]
  shape = list(x.shape)
  if shape[split_axis] % n:
    raise ValueError(f"all_to_all: the split axis of size {shape[split_axis]} must be "
                     f"divisible by the axis size {n}")
  shape[split_axis] //= n
  shape[concat_axis] *= n
  return ShapedArray(tuple(shape), x.dtype, x.weak_type)


@all_to_all_p.def_impl
def _all_to_all_impl(x, **params):
  names = _named(params["axis_name"])
  ctx = _spmd(names)
  if ctx is None:
    _unbound(names, "all_to_all")
  _no_groups(params["axis_index_groups"])
  x = _as_array(x)
  return _spmd_out(ctx, _collectives.all_to_all(ctx, x._data(), names, params["split_axis"],
                                                params["concat_axis"]), x)


def _all_to_all_collective(axis_data, args, dims, *, split_axis, concat_axis, axis_name,
                           axis_index_groups, tiled):
  _no_groups(axis_index_groups)
  if tuple(axis_name) != (axis_data.name,):
    raise NotImplementedError("all_to_all over several named axes at once is not supported")
  x, = args
  d, = dims
  n = axis_data.size
  x = batching.bdim_at_front(x, d, n)                  # (i, *S)
  shape = list(core.get_aval(x).shape)
  s = split_axis + 1
  k = shape[s] // n
  shape[s:s + 1] = [n, k]                              # (i, ..., j, k, ...)
  x = _shapes.reshape_p.bind(x, new_sizes=tuple(shape), dimensions=None, sharding=None)
  nd = len(shape)
  rest = [a for a in range(1, nd) if a != s]           # per-member axes (split now of size k)
  perm = [s] + rest
  perm.insert(1 + concat_axis, 0)                      # member i just before the concat axis
  x = _shapes.transpose_p.bind(x, permutation=tuple(perm))
  out_shape = list(core.get_aval(x).shape)
  c = 1 + concat_axis
  out_shape[c:c + 2] = [out_shape[c] * out_shape[c + 1]]
  out = _shapes.reshape_p.bind(x, new_sizes=tuple(out_shape), dimensions=None, sharding=None)
  return out, 0


def _all_to_all_passthrough(args, dims, *, split_axis, concat_axis, **params):
  x, = args
  d, = dims
  return all_to_all_p.bind(x, split_axis=split_axis + int(split_axis >= d),
                           concat_axis=concat_axis + int(concat_axis >= d), **params), d


batching.axis_name_getters[all_to_all_p] = lambda params: params["axis_name"]
batching.collective_batchers[all_to_all_p] = _all_to_all_collective
batching.primitive_batchers[all_to_all_p] = _all_to_all_passthrough
ad.deflinear(all_to_all_p, lambda ct, *, split_axis, concat_axis, **params: [
    all_to_all_p.bind(ad.instantiate_zeros(ct), split_axis=concat_axis,
                      concat_axis=split_axis, **params)])


def all_to_all(x, axis_name, split_axis, concat_axis, *, axis_index_groups=None, tiled=False):
  """Member ``j`` gets the ``j``-th chunk (along ``split_axis``) of every member's ``x`` (a
  pytree), stacked (or with ``tiled``, concatenated) along ``concat_axis`` in member
  order.  Untiled, ``x.shape[split_axis]`` must equal the axis size."""
  names = _names_tuple(axis_name)
  n = axis_size(names)

  def one(leaf):
    leaf = _as_array(leaf)
    shape = core.get_aval(leaf).shape
    sa, ca = split_axis, concat_axis
    if tiled:
      if shape[sa] % n:
        raise ValueError(f"The size of all_to_all split_axis ({shape[sa]}) has to be "
                         f"divisible by the size of the named axis {axis_name} ({n})")
      return all_to_all_p.bind(leaf, split_axis=sa, concat_axis=ca, axis_name=names,
                               axis_index_groups=axis_index_groups, tiled=True)
    if shape[sa] != n:
      raise ValueError(f"all_to_all requires the size of the mapped axis axis_name to equal "
                       f"x.shape[split_axis], but they are {n} and {shape[sa]} respectively.")
    if sa == ca:   # chunks of size 1 come back along the same axis
      return all_to_all_p.bind(leaf, split_axis=sa, concat_axis=ca, axis_name=names,
                               axis_index_groups=axis_index_groups, tiled=False)
    if sa < ca:
      ca += 1
    else:
      sa += 1
    x = _shapes.expand_dims(leaf, (ca,))
    out = all_to_all_p.bind(x, split_axis=sa, concat_axis=ca, axis_name=names,
                            axis_index_groups=axis_index_groups, tiled=False)
    return _shapes.squeeze(out, (sa,))
  return tree_util.tree_map(one, x)


def _names(axis_name):
  return tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)


# --- pbroadcast -----------------------------------------------------------------------------
pbroadcast_p = core.Primitive("pbroadcast")


@pbroadcast_p.def_abstract_eval
def _pbroadcast_abstract(x, *, axis_name, source):
  batching.check_axis_names("pbroadcast", _named(_names(axis_name)))
  return ShapedArray(x.shape, x.dtype, x.weak_type)


@pbroadcast_p.def_impl
def _pbroadcast_impl(x, *, axis_name, source):
  _unbound(_named(_names(axis_name)), "pbroadcast")


def _pbroadcast_collective(axis_data, args, dims, *, axis_name, source):
  names = _names(axis_name)
  if tuple(names) != (axis_data.name,):
    raise NotImplementedError("pbroadcast batcher only supports a single axis")
  x, = args
  d, = dims
  size = axis_data.size
  if not 0 <= source < size:
    raise ValueError(f"pbroadcast: source {source} is out of range for an axis of size {size}")
  if d is _nm:
    return x, _nm
  piece = _shapes.slice_in_dim(x, source, source + 1, axis=d)
  shape = list(core.get_aval(x).shape)
  return _shapes.broadcast_in_dim(piece, tuple(shape), tuple(range(len(shape)))), d


def _pbroadcast_passthrough(args, dims, **params):
  x, = args
  d, = dims
  return pbroadcast_p.bind(x, **params), d


def _pbroadcast_transpose(ct, x, *, axis_name, source):
  is_source = _ew.eq(axis_index(axis_name), np.int32(source))
  total = psum(ad.instantiate_zeros(ct), axis_name)
  zeros = ad.zeros_like(total)
  return [_ew.select(_shapes.broadcast_in_dim(is_source, core.get_aval(total).shape, ()),
                     total, zeros)]


batching.axis_name_getters[pbroadcast_p] = lambda params: _names(params["axis_name"])
batching.collective_batchers[pbroadcast_p] = _pbroadcast_collective
batching.primitive_batchers[pbroadcast_p] = _pbroadcast_passthrough
ad.deflinear2(pbroadcast_p, _pbroadcast_transpose)


def pbroadcast(x, axis_name, source):
  """Every member of ``axis_name`` gets the value of ``x`` (a pytree) at member
  ``source``."""
  return tree_util.tree_map(
      lambda leaf: pbroadcast_p.bind(_as_array(leaf), axis_name=axis_name,
                                     source=source), x)


def pswapaxes(x, axis_name, axis, *, axis_index_groups=None):
  """Swap the named axis with positional ``axis`` (whose size must equal the axis size):
  ``all_to_all(x, axis_name, axis, axis)``."""
  return all_to_all(x, axis_name, axis, axis, axis_index_groups=axis_index_groups)


# --- pcast ------------------------------------------------------------------------------------
_PCAST_TO = ("reduced", "unreduced", "varying")

# ``pvary[axes=...]``: the identity on values, recorded so that ``shard_map``'s check_vma
# walk (``shard_map_vma.py``) sees that the result varies along ``axes``.  Its transpose
# is the identity too: pyjax's shard_map transpose sums an input's cotangent over the
# axes its in_spec leaves out (where JAX transposes pvary to psum inside the body).
pvary_p = core.Primitive("pvary")
pvary_p.def_abstract_eval(lambda aval, *, axes: aval)
batching.primitive_batchers[pvary_p] = (
    lambda args, dims, *, axes: (pvary_p.bind(args[0], axes=axes), dims[0]))
ad.deflinear2(pvary_p, lambda ct, x, *, axes: [ct])


def pcast(x, axis_name, *, to):
  """Cast the varying-manual-axes type of ``x`` over ``axis_name`` (``to`` is 'varying',
  'reduced' or 'unreduced').  Those types exist only inside ``shard_map``: there, over
  its manual axes, ``to='varying'`` binds ``pvary`` (the identity on each device's value;
  ``shard_map``'s check_vma walk reads it; pyjax has no varying types on avals).
  Elsewhere (and for 'reduced'/'unreduced', which pyjax does not model) it raises as JAX
  does outside ``shard_map``; it is the identity for an empty ``axis_name``."""
  if isinstance(axis_name, (set, frozenset)):
    raise TypeError(f"axis_name={axis_name!r} must be a tuple or a str. Got {axis_name}")
  if not axis_name:
    return x
  if to not in _PCAST_TO:
    raise ValueError("Got unexpected `to` value. Allowed `to` values are: "
                     f"{{{', '.join(repr(t) for t in _PCAST_TO)}}}")

  manual = {n for n, _ in getattr(batching._axis_env, "frames", ())}   # shard_map's axes
  if to == "varying" and all(n in manual for n in _names(axis_name)):
    axes = tuple(_names(axis_name))
    return tree_util.tree_map(lambda leaf: pvary_p.bind(leaf, axes=axes), x)

  def one(leaf):
    if to == "varying":
      raise ValueError("pvary should be called under jax.shard_map.")
    if to == "reduced":
      raise ValueError("preduced should be called under jax.shard_map.")
    raise ValueError(f"Unsupported pcast from=invarying, to={to!r}")
  return tree_util.tree_map(one, x)


# --- psend / precv ----------------------------------------------------------------------------
_P2P_MSG = ("{} is a point-to-point transfer between devices (jax.shard_map); a vmap axis "
            "cannot pair a send with its receive, and pyjax has no shard_map")

psend_p = core.Primitive("psend")


@psend_p.def_abstract_eval
def _psend_abstract(x, *, axis_name, perm):
  batching.check_axis_names("psend", _named(axis_name))
  return _tok.abstract_token


@psend_p.def_impl
def _psend_impl(x, *, axis_name, perm):
  _unbound(_named(axis_name), "psend")


def _p2p_collective(name):
  def rule(axis_data, args, dims, **params):
    raise NotImplementedError(_P2P_MSG.format(name))
  return rule


def _p2p_passthrough(name):
  def rule(args, dims, **params):
    raise NotImplementedError(_P2P_MSG.format(name))
  return rule


precv_p = core.Primitive("precv")


@precv_p.def_abstract_eval
def _precv_abstract(token, *, out_shape, axis_name, perm):
  batching.check_axis_names("precv", _named(axis_name))
  return out_shape


@precv_p.def_impl
def _precv_impl(token, *, out_shape, axis_name, perm):
  _unbound(_named(axis_name), "precv")


for _p, _n in ((psend_p, "psend"), (precv_p, "precv")):
  batching.axis_name_getters[_p] = lambda params: params["axis_name"]
  batching.collective_batchers[_p] = _p2p_collective(_n)
  batching.primitive_batchers[_p] = _p2p_passthrough(_n)


def psend(x, axis_name, perm):
  """Send ``x`` (a pytree) along ``axis_name`` by ``perm`` ((source, destination) pairs);
  returns a token for ``precv``.  Stages with an axis environment; cannot run in pyjax
  (see the module docstring)."""
  names = _names(axis_name)
  perm = tuple(tuple(int(i) for i in p) for p in perm)
  return tree_util.tree_map(
      lambda leaf: psend_p.bind(_as_array(leaf), axis_name=names, perm=perm), x)


def precv(token, out_shape, axis_name, perm):
  """Receive a value of ``out_shape`` (a ShapeDtypeStruct) sent by ``psend``.  Stages
  with an axis environment; cannot run in pyjax (see the module docstring)."""
  names = _names(axis_name)
  return precv_p.bind(token, out_shape=ShapedArray(tuple(out_shape.shape),
                                                   np.dtype(out_shape.dtype)),
                      axis_name=names, perm=tuple(tuple(int(i) for i in p) for p in perm))


# --- ragged_all_to_all ------------------------------------------------------------------------
ragged_all_to_all_p = core.Primitive("ragged_all_to_all")


@ragged_all_to_all_p.def_abstract_eval
def _ragged_a2a_abstract(operand, output, input_offsets, send_sizes, output_offsets,
                         recv_sizes, *, axis_name, axis_index_groups):
  for name, a in (("input_offsets", input_offsets), ("send_sizes", send_sizes),
                  ("output_offsets", output_offsets), ("recv_sizes", recv_sizes)):
    if not dtypes.is_int(a.dtype):
      raise ValueError(f"ragged_all_to_all {name} must be integer type.")
  for name, a in (("input_offsets", input_offsets), ("send_sizes", send_sizes),
                  ("output_offsets", output_offsets), ("recv_sizes", recv_sizes)):
    if len(a.shape) != 1 or a.shape[0] < 1:
      raise ValueError(f"ragged_all_to_all {name} must be rank 1 with positive dimension "
                       f"size, but got shape {a.shape}")
  batching.check_axis_names("ragged_all_to_all", _named(axis_name))
  return ShapedArray(output.shape, output.dtype, False)


@ragged_all_to_all_p.def_impl
def _ragged_a2a_impl(*args, **params):
  raise RuntimeError("ragged_all_to_all must be used within a mapped context like vmap or "
                     "shard_map.")


def _ragged_a2a_collective(axis_data, args, dims, *, axis_name, axis_index_groups):
  """Every member's slices written into the receivers' outputs: member d's slice i (rows
  ``input_offsets[d, i] + [0, send_sizes[d, i])``) goes to member ``i // (K / N)`` at rows
  ``output_offsets[d, i] + [0, send_sizes[d, i])``."""
  _no_groups(axis_index_groups)
  if tuple(axis_name) != (axis_data.name,):
    raise NotImplementedError("ragged_all_to_all over several named axes at once is not "
                              "supported")
  n = axis_data.size
  operand, output, in_off, send, out_off, _ = [batching.bdim_at_front(x, d, n)
                                               for x, d in zip(args, dims)]
  oa, ua = core.get_aval(operand), core.get_aval(output)
  r, m = oa.shape[1], ua.shape[1]
  k = core.get_aval(in_off).shape[1]
  if k % n:
    raise ValueError(f"ragged_all_to_all: the number of slices ({k}) must be divisible by the "
                     f"axis size ({n})")
  spd = k // n
  idt = np.dtype(np.int32)
  conv = lambda x: _ew.convert_element_type(x, idt)
  in_off, send, out_off = conv(in_off), conv(send), conv(out_off)
  shape3 = (n, k, r)
  rows = _shapes.broadcasted_iota(idt, shape3, 2)
  b = lambda x: _shapes.broadcast_in_dim(x, shape3, (0, 1))
  lo = b(in_off)
  inside = _ew.bitwise_and(_ew.ge(rows, lo), _ew.lt(rows, _ew.add(lo, b(send))))
  dest_dev = _ew.div(_shapes.broadcasted_iota(idt, shape3, 1), np.int32(spd))
  dest_row = _ew.add(b(out_off), _ew.sub(rows, lo))
  inside = _ew.bitwise_and(inside, _ew.bitwise_and(_ew.ge(dest_row, np.int32(0)),
                                                   _ew.lt(dest_row, np.int32(m))))
  flat = _ew.add(_ew.mul(dest_dev, np.int32(m)), dest_row)
  flat = _ew.select(inside, flat, _shapes.full(shape3, n * m, idt))   # out of range: dropped
  rest = oa.shape[2:]
  upd = _shapes.broadcast_in_dim(operand, (n, k, r) + rest,
                                 (0, 2) + tuple(range(3, 3 + len(rest))))
  upd = _shapes.reshape(upd, (n * k * r,) + rest)
  idx = _shapes.reshape(flat, (n * k * r, 1))
  target = _shapes.reshape(output, (n * m,) + rest)
  dn = _sl.ScatterDimensionNumbers(update_window_dims=tuple(range(1, 1 + len(rest))),
                                   inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))
  out = _sl.scatter(target, idx, upd, dn, mode=_sl.GatherScatterMode.FILL_OR_DROP)
  return _shapes.reshape(out, (n, m) + rest), 0


def _ragged_a2a_passthrough(args, dims, *, axis_name, axis_index_groups):
  # Another axis is vmapped: fold its members into the ragged rows (each example's rows
  # and output rows become consecutive blocks), as JAX does.
  if axis_index_groups:
    raise NotImplementedError("Please open a feature request!")
  size = next(core.get_aval(x).shape[d] for x, d in zip(args, dims) if d is not _nm)
  operand, output = [batching.bdim_at_front(x, d, size) for x, d in zip(args[:2], dims[:2])]
  nrows, mrows = core.get_aval(operand).shape[1], core.get_aval(output).shape[1]

  def second(x, d):
    return batching.bdim_to(x, d, 1, size)
  in_off, send, out_off, recv = [second(x, d) for x, d in zip(args[2:], dims[2:])]
  it = lambda x, nn: _ew.add(x, _shapes.broadcast_in_dim(
      _ew.mul(_shapes.iota(core.get_aval(x).dtype, size),
              np.array(nn, core.get_aval(x).dtype)), core.get_aval(x).shape, (1,)))
  in_off, out_off = it(in_off, nrows), it(out_off, mrows)
  def merge(x):
    shape = core.get_aval(x).shape
    return _shapes.reshape(x, (shape[0] * shape[1],) + tuple(shape[2:]))
  vals = [merge(v) for v in (operand, output, in_off, send, out_off, recv)]
  out = ragged_all_to_all_p.bind(*vals, axis_name=axis_name, axis_index_groups=None)
  return _shapes.reshape(out, (size, mrows) + tuple(core.get_aval(out).shape[1:])), 0


def _ragged_a2a_jvp(primals, tangents, **params):
  operand, output, *rest = primals
  dop, dout, *_ = tangents
  res = ragged_all_to_all_p.bind(operand, output, *rest, **params)
  if type(dop) is ad.Zero and type(dout) is ad.Zero:
    return res, ad.Zero.from_primal_value(res)
  t = ragged_all_to_all_p.bind(ad.instantiate_zeros(dop), ad.instantiate_zeros(dout), *rest,
                               **params)
  return res, t


def _ragged_a2a_transpose(ct, operand, output, input_offsets, send_sizes, output_offsets,
                          recv_sizes, *, axis_name, axis_index_groups):
  ct = ad.instantiate_zeros(ct)
  op_aval = operand.aval if ad.is_undefined_primal(operand) else core.get_aval(operand)
  zero = ad.zeros_like_aval(op_aval)
  out_off_ = all_to_all(output_offsets, axis_name, 0, 0, tiled=True)
  in_off_ = all_to_all(input_offsets, axis_name, 0, 0, tiled=True)
  operand_t = ragged_all_to_all_p.bind(ct, zero, out_off_, recv_sizes, in_off_, send_sizes,
                                       axis_name=axis_name, axis_index_groups=axis_index_groups)
  # the output's cotangent: zero where received rows overwrote it
  m = core.get_aval(ct).shape[0]
  rows = _shapes.broadcasted_iota(np.dtype(np.int32), (core.get_aval(out_off_).shape[0], m), 1)
  lo = _shapes.broadcast_in_dim(_ew.convert_element_type(out_off_, np.int32), core.get_aval(rows).shape, (0,))
  hi = _ew.add(lo, _shapes.broadcast_in_dim(_ew.convert_element_type(recv_sizes, np.int32),
                                            core.get_aval(rows).shape, (0,)))
  from pyjax._src.lax import reductions as _red
  hit = _red.reduce_or(_ew.bitwise_and(_ew.ge(rows, lo), _ew.lt(rows, hi)), (0,))
  ca = core.get_aval(ct)
  hit = _shapes.broadcast_in_dim(hit, ca.shape, (0,))
  output_t = _ew.select(hit, ad.zeros_like_aval(ca), ct)
  return [operand_t if ad.is_undefined_primal(operand) else None,
          output_t if ad.is_undefined_primal(output) else None, None, None, None, None]


batching.axis_name_getters[ragged_all_to_all_p] = lambda params: params["axis_name"]
batching.collective_batchers[ragged_all_to_all_p] = _ragged_a2a_collective
batching.primitive_batchers[ragged_all_to_all_p] = _ragged_a2a_passthrough
ad.primitive_jvps[ragged_all_to_all_p] = _ragged_a2a_jvp
ad.primitive_transposes[ragged_all_to_all_p] = _ragged_a2a_transpose


def ragged_all_to_all(operand, output, input_offsets, send_sizes, output_offsets, recv_sizes,
                      *, axis_name, axis_index_groups=None):
  """Ragged all-to-all over ``axis_name``: each member sends rows
  ``operand[input_offsets[i]:input_offsets[i]+send_sizes[i]]`` to member
  ``i // (len(input_offsets) / axis_size)``, which writes them at rows
  ``output_offsets[i]`` (the *sender's* offsets) of its copy of ``output``; ``recv_sizes``
  are the sizes each member receives.  Differs from JAX: works under ``vmap`` over the
  named axis (JAX raises NotImplementedError there)."""
  names = _names(axis_name)
  groups = None if axis_index_groups is None else tuple(tuple(g) for g in axis_index_groups)
  return ragged_all_to_all_p.bind(operand, output, input_offsets, send_sizes, output_offsets,
                                  recv_sizes, axis_name=names, axis_index_groups=groups)
