"""``jax.experimental.colocated_python`` for pyjax's single-process runtime.

Colocated Python runs a Python function (or the methods of an object) on the hosts of
the devices its array arguments live on.  pyjax has one process, so that host is this
process: a colocated function runs here, on its arguments moved to the colocated CPU
devices, and its outputs are checked against the specialization's output specs (shape
and dtype) as JAX checks them.

Differs from JAX: no remote execution, no serialization of the function (it may be any
Python callable), calls are synchronous.
"""
from __future__ import annotations

import functools

import numpy as np

from pyjax._src import tree_util
from pyjax._src.runtime import devices as _devices


def _cpu_devices():
  return _devices.devices("cpu")


def colocated_cpu_devices(devices_or_mesh):
  """The CPU devices on the same hosts as ``devices_or_mesh`` (a sequence of devices, or a
  Mesh: then a Mesh of the same shape).  CPU devices map to themselves; accelerator device
  ``i`` of this process maps to CPU device ``i`` modulo the number of CPU devices."""
  from pyjax._src.sharding import Mesh
  if isinstance(devices_or_mesh, Mesh):
    mesh = devices_or_mesh
    flat = colocated_cpu_devices(tuple(mesh.devices.flat))
    return Mesh(np.array(flat, dtype=object).reshape(mesh.devices.shape), mesh.axis_names,
                axis_types=getattr(mesh, "axis_types", None))
  cpus = _cpu_devices()
  out = []
  for d in devices_or_mesh:
    if getattr(d, "platform", None) == "cpu":
      out.append(d)
    else:
      out.append(cpus[getattr(d, "id", 0) % len(cpus)])
  return tuple(out)


def _spec_of(x):
  return (tuple(np.shape(x)), np.dtype(x.dtype)) if hasattr(x, "dtype") else None


class ColocatedPythonCallable:
  """A colocated Python function: ``specialize(in_specs=, out_specs_fn=, devices=)``
  returns a copy with that specialization; calling runs the function in this process."""

  def __init__(self, fun, in_specs=None, out_specs_fn=None, devices=None):
    self.fun = fun
    self.in_specs = in_specs
    self.out_specs_fn = out_specs_fn
    self.devices = devices
    functools.update_wrapper(self, fun)

  def specialize(self, in_specs=None, out_specs_fn=None, devices=None):
    """A copy specialized with input specs, an output-spec function and/or devices
    (each may be given once)."""
    for name, new in (("in_specs", in_specs), ("out_specs_fn", out_specs_fn),
                      ("devices", devices)):
      if new is not None and getattr(self, name) is not None:
        raise ValueError(f"{name} has already been specialized")
    return ColocatedPythonCallable(
        self.fun, in_specs if in_specs is not None else self.in_specs,
        out_specs_fn if out_specs_fn is not None else self.out_specs_fn,
        devices if devices is not None else self.devices)

  def __call__(self, *args, **kwargs):
    out = self.fun(*args, **kwargs)
    if self.out_specs_fn is not None:
      in_specs = tree_util.tree_map(
          lambda x: x, (args, kwargs),
          is_leaf=lambda x: hasattr(x, "shape") and hasattr(x, "dtype"))
      want = self.out_specs_fn(*in_specs[0], **in_specs[1])
      got_leaves, got_tree = tree_util.tree_flatten(out)
      want_leaves, want_tree = tree_util.tree_flatten(want)
      if got_tree != want_tree:
        raise ValueError(f"colocated Python function {getattr(self.fun, '__name__', '')} "
                         f"returned a tree {got_tree}, its output specs say {want_tree}")
      for g, w in zip(got_leaves, want_leaves):
        if _spec_of(g) != _spec_of(w):
          raise ValueError(f"colocated Python output of shape/dtype {_spec_of(g)} does not "
                           f"match the output spec {_spec_of(w)}")
    return out


def make_callable(fun, fun_sourceinfo=None, fun_signature=None):
  """A colocated Python callable of ``fun`` with no specialization (JAX's
  ``colocated_python.func.make_callable``)."""
  del fun_sourceinfo, fun_signature
  return ColocatedPythonCallable(fun)


def colocated_python(fun):
  """Wrap ``fun`` to run on the hosts of its arguments' devices (here: this process)."""
  return make_callable(fun)


def colocated_python_class(cls):
  """Wrap ``cls`` so its instances live on the hosts of the devices of their method
  arguments (here: this process).  The object is created on its first method call, as
  in JAX."""

  class Wrapper:
    def __init__(self, *args, **kwargs):
      self._colocated_init = (args, kwargs)
      self._colocated_obj = None

    def _colocated_get(self):
      if self._colocated_obj is None:
        args, kwargs = self._colocated_init
        self._colocated_obj = cls(*args, **kwargs)
      return self._colocated_obj

    def __getattr__(self, name):
      if name.startswith("_colocated"):
        raise AttributeError(name)
      attr = getattr(cls, name)
      if not callable(attr):
        raise AttributeError(f"colocated Python objects expose methods only; {name!r} "
                             "is not a method")
      return lambda *a, **k: getattr(self._colocated_get(), name)(*a, **k)

  Wrapper.__name__ = cls.__name__
  Wrapper.__qualname__ = cls.__qualname__
  Wrapper.__doc__ = cls.__doc__
  return Wrapper
