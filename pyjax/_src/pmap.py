"""``jax.pmap`` built on ``shard_map`` (as JAX 0.10 builds it).

``pmap(f, axis_name)(x)`` maps ``f`` over the leading axis (``in_axes``) of its arguments,
one index per device: the mapped axis becomes a one-dimensional mesh over the first
``size`` local devices (or ``devices``), each argument is split along it
(``PartitionSpec(axis_name)``; ``in_axes=None`` arguments are replicated), and the
per-device program -- ``f`` on one slice -- runs on every device's stream in parallel
through ``shard_map``; collectives over ``axis_name`` meet in the collective runtime.
Outputs are sharded Arrays (``NamedSharding(mesh, P(axis_name))``, mapped dimension at
``out_axes``).  The traced program is cached per function, axis name, ``out_axes``,
argument structure, shapes and dtypes (so ``jax.pmap(f)`` made anew for each call traces
``f`` once).

With several processes (``jax.distributed.initialize``), as in JAX, each process passes
one slice per local device and the mapped axis spans every process's devices (global
``axis_index``; collectives across processes through MPI); each process gets back the
slices of its own devices.

Differs from JAX: ``backend`` and ``global_arg_shapes`` are ignored; donated arguments
are deleted after the call (their buffers are not reused for outputs).
"""
from __future__ import annotations

import functools
import weakref

import numpy as np

from pyjax._src import core, tree_util
from pyjax._src import api_util as _api_util
from pyjax._src.runtime import devices as _devices
from pyjax._src.runtime.array import ArrayImpl
from pyjax._src.sharding import Mesh, PartitionSpec, AxisType

_PMAP_AXIS = "_internal_pmap_axis_name"


def _moveaxis(x, a, b):
  from pyjax._src.numpy.manipulation import moveaxis
  return moveaxis(x, a, b)


def _asarray(x):
  from pyjax._src.numpy.array_constructors import asarray
  return asarray(x)


def _norm_axis(ax, ndim, what):
  if ax is None:
    return None
  if not -ndim <= ax < ndim:
    raise ValueError(f"pmap {what} {ax} out of bounds for an argument of rank {ndim}")
  return ax + ndim if ax < 0 else ax


def pmap(fun=None, axis_name=None, *, in_axes=0, out_axes=0, static_broadcasted_argnums=(),
         devices=None, backend=None, axis_size=None, donate_argnums=(),
         global_arg_shapes=None):
  """Parallel map over devices, run as a ``shard_map`` over a one-axis mesh (see the
  module docstring)."""
  del backend, global_arg_shapes
  if fun is None:
    return functools.partial(pmap, axis_name=axis_name, in_axes=in_axes, out_axes=out_axes,
                             static_broadcasted_argnums=static_broadcasted_argnums,
                             devices=devices, axis_size=axis_size,
                             donate_argnums=donate_argnums)
  if not callable(fun):
    raise TypeError(f"Expected a callable value, got {fun}")
  static = ((static_broadcasted_argnums,) if isinstance(static_broadcasted_argnums, int)
            else tuple(static_broadcasted_argnums))
  donate = (donate_argnums,) if isinstance(donate_argnums, int) else tuple(donate_argnums)
  if set(static) & set(donate):
    raise ValueError("static_broadcasted_argnums and donate_argnums cannot intersect.")
  name = axis_name if axis_name is not None else _PMAP_AXIS
  cache = _cache_for(fun, name, out_axes)
  kw_cache = {}

  @_api_util.wraps(fun)
  def pmapped(*args, **kwargs):
    from pyjax._src.shard_map import shard_map
    if kwargs:
      # as JAX: keyword arguments are mapped over their leading axis (in_axes is for the
      # positional ones); they travel as one extra positional dict
      kkey = (len(args), tuple(sorted(kwargs)))
      inner = kw_cache.get(kkey)
      if inner is None:
        axes = (tuple(in_axes) if isinstance(in_axes, (tuple, list))
                else (in_axes,) * len(args))
        inner = kw_cache[kkey] = pmap(
            lambda *a: fun(*a[:-1], **a[-1]), axis_name, in_axes=axes + (0,),
            out_axes=out_axes, static_broadcasted_argnums=static, devices=devices,
            axis_size=axis_size, donate_argnums=donate)
      return inner(*args, dict(kwargs))
    nargs = len(args)
    stat = tuple(i if i >= 0 else i + nargs for i in static)
    dyn_idx = [i for i in range(nargs) if i not in stat]
    dyn_args = [args[i] for i in dyn_idx]
    axes = in_axes
    if isinstance(axes, list):
      axes = tuple(axes)
    if isinstance(axes, tuple):
      if len(axes) != nargs:
        raise ValueError(f"pmap in_axes specification must be a tree prefix of the "
                         f"corresponding value, got specification {in_axes} for value "
                         f"tree of {nargs} arguments.")
      axes = tuple(axes[i] for i in dyn_idx)
    else:
      axes = (axes,) * len(dyn_args)
    flat_axes = tree_util.broadcast_prefix(axes, tuple(dyn_args), is_leaf=lambda v: v is None)
    leaves, in_tree = tree_util.tree_flatten(tuple(dyn_args))
    leaves = [x if isinstance(x, (ArrayImpl, core.Tracer)) else _asarray(x)
              for x in leaves]
    norm = [_norm_axis(a, len(core.get_aval(x).shape), "in_axes")
            for x, a in zip(leaves, flat_axes)]
    size = axis_size
    for x, a in zip(leaves, norm):
      if a is not None:
        n = core.get_aval(x).shape[a]
        if size is None:
          size = n
        elif n != size:
          raise ValueError(f"pmap got inconsistent sizes for array axes to be mapped: "
                           f"{size} and {n}")
    if size is None:
      raise ValueError("pmap requires at least one argument with a mapped axis.")
    devs = list(devices) if devices is not None else _devices.local_devices()
    if size > len(devs):
      raise ValueError(f"compiling computation that requires {size} logical devices, but "
                       f"only {len(devs)} XLA devices are available (num_replicas={size})")
    # the mapped axis first: one slice per device
    moved = [x if a in (None, 0) else _moveaxis(x, a, 0) for x, a in zip(leaves, norm)]
    mapped = [a is not None for a in norm]
    if devices is None and _devices.process_count() > 1 and not any(
        isinstance(x, core.Tracer) for x in moved):
      # many processes: each maps over its local devices, the axis spans all of them
      if size != len(devs):
        raise ValueError(f"pmap over several processes maps over every local device: the "
                         f"mapped axis has size {size}, this process has {len(devs)} "
                         "devices")
      mesh = Mesh(np.array(_devices.devices(), dtype=object), (name,), (AxisType.Auto,))
      moved = [_process_global(x, mesh, name) if m else x for x, m in zip(moved, mapped)]
    else:
      mesh = Mesh(np.array(devs[:size], dtype=object), (name,), (AxisType.Auto,))
    statics = tuple((i, args[i]) for i in stat)
    key = (nargs, stat, in_tree, tuple(core.get_aval(x) for x in moved), tuple(mapped), mesh,
           tuple((i, _hashable(v)) for i, v in statics))
    entry = cache.get(key)
    if entry is None:
      entry = cache[key] = _build(fun, nargs, stat, statics, dyn_idx, in_tree, mapped,
                                  out_axes, name, mesh, shard_map)
    outs = entry(*moved)
    for i in donate:
      if i < nargs and i not in stat:
        for leaf in tree_util.tree_leaves(args[i]):
          if type(leaf) is ArrayImpl or isinstance(leaf, ArrayImpl):
            leaf._donate()
    return outs

  lowering = []

  def lower(*args, **kwargs):
    """Ahead-of-time lowering of the pmapped function for these arguments (``Lowered``:
    ``as_text()``, ``compile()``).  Differs from JAX: the program is the jitted pmap (a
    ``shard_map`` over the device mesh) and its compiled form's outputs are single-device
    arrays."""
    if not lowering:
      from pyjax._src.api import jit
      lowering.append(jit(pmapped, static_argnums=static, donate_argnums=donate))
    return lowering[0].lower(*args, **kwargs)

  pmapped.lower = lower
  return pmapped


# traced pmaps: function -> {(axis name, out_axes): {(argument structure, avals, mapped,
# mesh, static arguments): the call}}: ``jax.pmap(f)`` made again (in a function called
# repeatedly) finds the trace and the compiled per-device program of the first
_traces = weakref.WeakKeyDictionary()


def _cache_for(fun, name, out_axes):
  try:
    leaves, tree = tree_util.tree_flatten(out_axes, is_leaf=lambda v: v is None)
    key = (name, tuple(leaves), tree)
    hash(key)
    per_fun = _traces.get(fun)
    if per_fun is None:
      per_fun = _traces[fun] = {}
  except TypeError:   # unhashable out_axes, or a function without weak references
    return {}
  return per_fun.setdefault(key, {})


def _hashable(v):
  try:
    hash(v)
    return v
  except TypeError:
    raise ValueError(f"Non-hashable static arguments are not supported. An error occurred "
                     f"while trying to hash an object of type {type(v)}, {v}. The error "
                     f"was:\nTypeError: unhashable type: '{type(v).__name__}'") from None


def _build(fun, nargs, stat, statics, dyn_idx, in_tree, mapped, out_axes, name, mesh,
           shard_map):
  from pyjax._src.lax import shapes as _shapes
  out_axes_box = []

  def body(*flat):
    flat = [_shapes.squeeze(x, (0,)) if m else x for x, m in zip(flat, mapped)]
    dyn = tree_util.tree_unflatten(in_tree, flat)
    full = [None] * nargs
    for i, v in statics:
      full[i] = v
    for i, v in zip(dyn_idx, dyn):
      full[i] = v
    out = fun(*full)
    out_leaves, out_tree = tree_util.tree_flatten(out)
    oa = tree_util.broadcast_prefix(out_axes, out, is_leaf=lambda v: v is None)
    out_axes_box.append((out_tree, oa))
    # every output leaves each device with a leading axis of 1 (out_specs P(name) for
    # all); an unmapped one (out_axes None) is then device 0's block -- so the function
    # is traced once, with no probe trace to learn which outputs are mapped
    return tuple(_shapes.expand_dims(_asarray(x), (0,)) for x in out_leaves)

  specs_in = tuple(PartitionSpec(name) if m else PartitionSpec() for m in mapped)
  fn = shard_map(body, mesh=mesh, in_specs=specs_in, out_specs=PartitionSpec(name),
                 check_vma=False)

  out_mesh = mesh.local_mesh

  def call(*moved):
    outs = fn(*moved)
    if out_mesh is not mesh:
      outs = [_process_local(x, out_mesh, name) for x in outs]
    out_tree, oa = out_axes_box[-1]
    res = []
    for x, a in zip(outs, oa):
      if a is None:
        x = x[0]
      elif a != 0:
        nd = len(core.get_aval(x).shape)
        a = a + nd if a < 0 else a
        x = _moveaxis(x, 0, a)
        if not isinstance(x, core.Tracer):   # the mapped dimension stays split
          from pyjax._src.runtime import sharded_array
          from pyjax._src.sharding import NamedSharding
          x = sharded_array.shard_global(
              x._data(), x.aval, NamedSharding(out_mesh, PartitionSpec(*(None,) * a, name)))
      res.append(x)
    return tree_util.tree_unflatten(out_tree, res)
  return call


def _process_global(x, mesh, name):
  """This process's mapped argument (one slice per local device) as the global array
  over every process's devices."""
  from pyjax._src.array_construction import make_array_from_process_local_data
  from pyjax._src.sharding import NamedSharding
  return make_array_from_process_local_data(NamedSharding(mesh, PartitionSpec(name)),
                                            np.asarray(x))


def _process_local(x, local_mesh, name):
  """This process's part of a pmap output over every process's devices: the slices of
  its local devices, as an array over them (what each process's pmap returns in JAX)."""
  from pyjax._src.avals import ShapedArray
  from pyjax._src.runtime import sharded_array
  from pyjax._src.sharding import NamedSharding
  shape = (len(x._shards),) + tuple(x.aval.shape[1:])
  aval = ShapedArray(shape, x.aval.dtype, x.aval.weak_type)
  return sharded_array.from_shards(aval, NamedSharding(local_mesh, PartitionSpec(name)),
                                   x._shards)
