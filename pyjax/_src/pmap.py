"""``pmap`` in a single process: the mapped axis runs over this process's devices.

``pmap(f, axis_name)(x)`` maps ``f`` over the leading axis (``in_axes``) of its arguments,
one index per device, with collectives over ``axis_name``.  A pyjax process computes on
one device at a time, so the map is a compiled ``vmap`` (``jit(vmap(f, axis_name=...))``)
run on the first of the devices, after checking -- as JAX does -- that the mapped size
does not exceed the number of devices available.  Differences from JAX: the result is an
ordinary Array (JAX's is sharded over the devices); ``devices`` only sets the device
count checked; ``backend`` is ignored.
"""
from __future__ import annotations

import functools

from pyjax._src import tree_util
from pyjax._src.api import jit
from pyjax._src.api_vmap import vmap
from pyjax._src.runtime import devices as _devices


def _mapped_size(args, in_axes):
  leaves_axes = []
  if isinstance(in_axes, (int, type(None))):
    in_axes = (in_axes,) * len(args)
  for a, ax in zip(args, in_axes):
    if isinstance(ax, (int, type(None))):
      leaves_axes.extend((leaf, ax) for leaf in tree_util.tree_leaves(a))
    else:
      leaves_axes.extend(zip(tree_util.tree_leaves(a), tree_util.tree_leaves(ax)))
  for leaf, ax in leaves_axes:
    if ax is not None:
      shape = getattr(leaf, "shape", ())
      return shape[ax] if len(shape) > ax else None
  return None


def pmap(fun=None, axis_name=None, *, in_axes=0, out_axes=0, static_broadcasted_argnums=(),
         devices=None, backend=None, axis_size=None, donate_argnums=(),
         global_arg_shapes=None):
  """Parallel map over devices (see the module docstring for how pyjax runs it)."""
  del backend, donate_argnums, global_arg_shapes
  if fun is None:
    return functools.partial(pmap, axis_name=axis_name, in_axes=in_axes, out_axes=out_axes,
                             static_broadcasted_argnums=static_broadcasted_argnums,
                             devices=devices, axis_size=axis_size)
  if isinstance(static_broadcasted_argnums, int):
    static_broadcasted_argnums = (static_broadcasted_argnums,)
  static = tuple(static_broadcasted_argnums)

  @functools.wraps(fun)
  def pmapped(*args):
    n_dev = len(devices) if devices is not None else _devices.local_device_count()
    dyn_idx = [i for i in range(len(args)) if i not in static]
    dyn_args = [args[i] for i in dyn_idx]
    axes = in_axes
    if isinstance(axes, tuple) and static:
      axes = tuple(a for i, a in enumerate(axes) if i not in static) if len(axes) == len(args) else axes
    size = _mapped_size(dyn_args, axes) if axis_size is None else axis_size
    if size is None:
      raise ValueError("pmap requires at least one argument with a mapped axis.")
    if size > n_dev:
      raise ValueError(f"compiling computation that requires {size} logical devices, but "
                       f"only {n_dev} XLA devices are available (num_replicas={size})")

    def body(*dyn):
      full = list(args)
      for i, x in zip(dyn_idx, dyn):
        full[i] = x
      return fun(*full)
    mapped = vmap(body, in_axes=axes, out_axes=out_axes, axis_name=axis_name,
                  axis_size=axis_size)
    return jit(mapped)(*dyn_args)

  return pmapped
