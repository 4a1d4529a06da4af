"""The ``out_sharding=`` argument of array constructors and ``random`` samplers.

JAX accepts ``None``, a ``NamedSharding`` or a ``PartitionSpec`` (the latter only inside a
mesh context) and rejects anything else with a ``TypeError``.  pyjax places every result
of these functions on one device, so it accepts ``None`` and any ``NamedSharding`` whose
mesh holds a single device (the result is then what it would be without the argument:
uncommitted, on the default device, as JAX's result on a one-device mesh is).  A sharding
over several devices raises ``NotImplementedError`` naming the function; a
``PartitionSpec`` outside a mesh context raises JAX's ``ValueError``.
"""
from __future__ import annotations

import functools
import inspect

__all__ = ["check_out_sharding", "accepts_out_sharding", "resolve_out_sharding"]


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
  """Validate ``out_sharding`` for the function ``name`` (as JAX names it in messages)."""
  if out_sharding is None:
    return None
  if _is_partition_spec(out_sharding):
    n = _mesh_context_size()
    if n is None:
      raise ValueError(
          "Using PartitionSpec when you are not under a mesh context is not allowed. "
          "Please pass a NamedSharding instance or enter into a mesh context via "
          f"`jax.sharding.use_mesh`. Got {out_sharding}")
  elif _is_named_sharding(out_sharding):
    n = _num_devices(out_sharding)
  else:
    raise TypeError(
        f"`out_sharding` argument of {name} only supports instances of `NamedSharding` or "
        f"`PartitionSpec`. Got {out_sharding} of type: {type(out_sharding)}")
  if n != 1:
    raise NotImplementedError(
        f"pyjax: `out_sharding` of {name} over {n} devices is not supported; only None or "
        f"a sharding over a single device. Got {out_sharding}")
  return None


def accepts_out_sharding(name=None):
  """Decorator: give ``fn`` a keyword-only ``out_sharding=None`` parameter (checked with
  ``check_out_sharding``; results stay on one device), with a matching signature."""
  def wrap(fn):
    label = name or fn.__name__
    sig = inspect.signature(fn)
    params = list(sig.parameters.values())
    params.append(inspect.Parameter("out_sharding", inspect.Parameter.KEYWORD_ONLY,
                                    default=None))

    @functools.wraps(fn)
    def wrapper(*args, out_sharding=None, **kwargs):
      check_out_sharding(out_sharding, label)
      return fn(*args, **kwargs)
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
