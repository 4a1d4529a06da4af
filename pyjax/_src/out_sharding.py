"""The ``out_sharding=`` argument of array constructors and ``random`` samplers.

JAX accepts ``None``, a ``NamedSharding`` or a ``PartitionSpec`` (the latter only inside a
mesh context) and rejects anything else with a ``TypeError``.  A sharding over one device
changes nothing (the result is uncommitted, on the default device, as JAX's result on a
one-device mesh is).  A sharding over several devices is checked as JAX checks it (the
context mesh must match its mesh, its spec may name Explicit axes only, the shape must
divide evenly, and eagerly a context mesh -- ``jax.set_mesh`` -- is required), then the
result is computed whole and split over the devices: bit for bit the unsharded values,
typed ``float32[8@x,4]`` as JAX's.  Under a trace the result takes the sharding through a
``sharding_constraint`` equation.
"""
from __future__ import annotations

import functools
import inspect

__all__ = ["check_out_sharding", "accepts_out_sharding", "resolve_out_sharding", "lay_out",
           "choose_device_or_out_sharding", "sharded_call"]


def _num_devices(sharding):
  """Devices a sharding spans: its mesh's size (1 for the empty abstract mesh an aval's
  ``sharding`` has outside a mesh context), else the size of its device set."""
  mesh = getattr(sharding, "mesh", None)
  size = getattr(mesh, "size", None)
  if isinstance(size, int):
    return size
  try:
    return len(sharding.device_set)
  except Exception:
    return None


def _concrete_mesh(sharding):
  """Whether ``sharding``'s mesh is a non-empty concrete ``Mesh`` (it has devices)."""
  mesh = getattr(sharding, "mesh", None)
  return getattr(mesh, "devices", None) is not None and not getattr(mesh, "empty", True)


def _is_named_sharding(s):
  return type(s).__name__ == "NamedSharding" or (
      hasattr(s, "mesh") and hasattr(s, "spec") and hasattr(s, "device_set"))


def _is_partition_spec(s):
  return type(s).__name__ == "PartitionSpec"


def _mesh_context_size():
  """The number of devices of the mesh context (``jax.sharding.use_mesh`` / ``set_mesh``)
  in effect, or None when there is none (or no mesh support is loaded)."""
  import sys
  mod = sys.modules.get("pyjax._src.sharding")
  getter = getattr(mod, "get_abstract_mesh", None)
  if getter is None:
    return None
  mesh = getter()
  if mesh is None or getattr(mesh, "empty", False):
    return None
  size = getattr(mesh, "size", None)
  return size if isinstance(size, int) and size > 0 else None


def check_out_sharding(out_sharding, name):
  """Validate ``out_sharding`` for the function ``name`` (as JAX names it in messages) as
  JAX's ``canonicalize_sharding`` does; returns the NamedSharding the result is laid out
  by (``lay_out``) -- over the context mesh for a PartitionSpec -- or None for None and
  shardings over one device (which change nothing)."""
  if out_sharding is None:
    return None
  if _is_partition_spec(out_sharding):
    return _checked_axes(spec_to_named(out_sharding), name)
  if not _is_named_sharding(out_sharding):
    raise TypeError(
        f"`out_sharding` argument of {name} only supports instances of `NamedSharding` or "
        f"`PartitionSpec`. Got {out_sharding} of type: {type(out_sharding)}")
  if _num_devices(out_sharding) == 1 and not _concrete_mesh(out_sharding):
    return None   # (over a concrete one-device mesh the result keeps the NamedSharding)
  from pyjax._src import sharding as _sh
  cur = _sh.get_abstract_mesh()
  mine = out_sharding.mesh.abstract_mesh
  if not cur.empty and mine != cur and not (mine.are_all_axes_auto and cur.are_all_axes_auto):
    raise ValueError(f"Context mesh {cur} should match the mesh of sharding {mine} passed to "
                     f"{name}.")
  return _checked_axes(out_sharding, name)


def _checked_axes(sharding, name):
  """JAX's error for a spec naming an Auto or Manual mesh axis."""
  mesh = sharding.mesh
  types = dict(zip(mesh.axis_names, mesh.axis_types))
  for e in sharding.spec:
    for n in (e if isinstance(e, tuple) else (e,)):
      if isinstance(n, str) and types.get(n) is not None and types[n].name != "Explicit":
        raise ValueError(
            f"PartitionSpec passed to {name} cannot contain axis names that are of type Auto "
            f"or Manual. Got PartitionSpec: {sharding.spec} with axis name: {n} of type: "
            f"{types[n]}.")
  return sharding


def _typed_aval_str(aval, sharding):
  """``f32[8@x,4@y]({Explicit: ('x', 'y')})``: an aval with its sharding type, as JAX
  prints it in messages."""
  spec = tuple(sharding.spec) + (None,) * (len(aval.shape) - len(sharding.spec))
  dims = []
  for d, e in zip(aval.shape, spec):
    names = [n for n in (e if isinstance(e, tuple) else (e,)) if isinstance(n, str)]
    if not names:
      dims.append(str(d))
    else:
      dims.append(f"{d}@{names[0] if len(names) == 1 else '(' + ','.join(names) + ')'}")
  mesh = sharding.mesh
  groups = {}
  for n, t in zip(mesh.axis_names, mesh.axis_types):
    groups.setdefault(t.name, []).append(n)
  kinds = ", ".join(f"{k}: {tuple(v)}" for k, v in groups.items())
  short = aval.str_short(short_dtypes=True).split("[", 1)[0]
  return f"{short}[{','.join(dims)}]({{{kinds}}})"


def lay_out(x, sharding, name):
  """The result ``x`` of the function ``name`` laid out by ``sharding`` (from
  ``check_out_sharding``; None: ``x`` itself): the value is computed whole, then split
  over the devices (bit for bit the unsharded value); under a trace it takes the sharding
  through a ``sharding_constraint``.  Eagerly, as JAX, a context mesh is required (JAX
  has no device assignment for the computation without one)."""
  if sharding is None:
    return x
  from pyjax._src import core
  from pyjax._src import sharding as _sh
  from pyjax._src.jit_sharding import reshard
  aval = core.get_aval(x)
  spec = sharding.spec
  if len(spec) > len(aval.shape):
    raise ValueError(f"{name}: the sharding {sharding} has more entries than the rank "
                     f"{len(aval.shape)} of the result (shape {aval.shape})")
  sizes = dict(zip(sharding.mesh.axis_names, sharding.mesh.axis_sizes))
  for d, e in enumerate(spec):
    names = tuple(n for n in (e if isinstance(e, tuple) else (e,)) if isinstance(n, str))
    f = 1
    for n in names:
      f *= sizes[n]
    if aval.shape[d] % f:
      raise ValueError(
          f"Sharding spec {names} implies that array axis {d} is partitioned {f} times, but "
          f"does not evenly divide the dimension size {aval.shape[d]}. Got shape: "
          f"{tuple(aval.shape)} and sharding {sharding}")
  if not isinstance(x, core.Tracer):
    cur = _sh.get_mesh()
    if (cur is None or cur.empty) and sharding.mesh.size != 1:
      raise ValueError(
          f"Length of device assignment 1 is not equal to the size of the mesh "
          f"{sharding.mesh.size} of aval {_typed_aval_str(aval, sharding)}. Please enter "
          "your `jit` into a mesh context via `jax.set_mesh`.")
    if (cur is not None and not cur.empty
        and cur.abstract_mesh == sharding.mesh.abstract_mesh):   # the context mesh's devices
      sharding = _sh.NamedSharding(cur, spec)
  if len(spec) < len(aval.shape):   # the spec covers every dimension, as JAX's result's
    sharding = _sh.NamedSharding(sharding.mesh, _sh.PartitionSpec(
        *spec, *(None,) * (len(aval.shape) - len(spec))))
  return reshard(x, sharding)


def sharded_call(out_sharding, name, fn):
  """``fn()`` (a constructor's result computed without sharding) laid out by
  ``out_sharding`` (checked as ``check_out_sharding``)."""
  sharding = check_out_sharding(out_sharding, name)
  return lay_out(fn(), sharding, name)


def choose_device_or_out_sharding(device, out_sharding, name):
  """JAX's error when both ``device`` and ``out_sharding`` are given; else
  ``check_out_sharding(out_sharding, name)``."""
  if device is not None and out_sharding is not None:
    raise ValueError(f"Only one of `device` or `out_sharding` can be set. Got {device=} and "
                     f"{out_sharding=}")
  return check_out_sharding(out_sharding, name)


def accepts_out_sharding(name=None):
  """Decorator: give ``fn`` a keyword-only ``out_sharding=None`` parameter (checked with
  ``check_out_sharding``; the result is laid out by it, ``lay_out``), with a matching
  signature."""
  def wrap(fn):
    label = name or fn.__name__
    sig = inspect.signature(fn)
    params = list(sig.parameters.values())
    params.append(inspect.Parameter("out_sharding", inspect.Parameter.KEYWORD_ONLY,
                                    default=None))

    @functools.wraps(fn)
    def wrapper(*args, out_sharding=None, **kwargs):
      sharding = check_out_sharding(out_sharding, label)
      return lay_out(fn(*args, **kwargs), sharding, label)
    wrapper.__signature__ = sig.replace(parameters=params)
    return wrapper
  return wrap


def resolve_out_sharding(out_sharding, name):
  """The NamedSharding an ``out_sharding=`` argument of a contraction or reshape asks for
  (a PartitionSpec under a context mesh becomes one), or None for None and shardings
  over one device (which change nothing)."""
  if out_sharding is None:
    return None
  if _is_partition_spec(out_sharding):
    out_sharding = spec_to_named(out_sharding)
  elif not _is_named_sharding(out_sharding):
    raise TypeError(
        f"`out_sharding` argument of {name} only supports instances of `NamedSharding` or "
        f"`PartitionSpec`. Got {out_sharding} of type: {type(out_sharding)}")
  return out_sharding if _num_devices(out_sharding) != 1 else None


def spec_to_named(spec):
  """A NamedSharding over the context mesh (``jax.set_mesh``) for ``spec``; JAX's
  ValueError outside a mesh context."""
  from pyjax._src import sharding as _sh
  mesh = _sh.get_mesh()
  if mesh is None or mesh.empty:
    raise ValueError(
        "Using PartitionSpec when you are not under a mesh context is not allowed. "
        "Please pass a NamedSharding instance or enter into a mesh context via "
        f"`jax.set_mesh`. Got {spec}")
  return _sh.NamedSharding(mesh, spec)
