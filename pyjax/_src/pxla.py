"""``jax.interpreters.pxla`` over pyjax's single-process runtime: turning result buffers
into Arrays (``global_avals_to_results_handler``) and converting avals between a
process's local view and the global view of a mesh (``mesh_local_to_global`` /
``mesh_global_to_local``: with one process both views are the same).
"""
from __future__ import annotations

import numpy as np

from pyjax._src import dtypes


class ResultsHandler:
  """Builds output Arrays from raw buffers: ``handlers[i](buffer)`` makes the ``i``-th
  output; calling the handler applies them all."""

  def __init__(self, handlers, out_shardings, out_avals):
    self.handlers = handlers
    self.out_shardings = out_shardings
    self.out_avals = out_avals

  def __call__(self, out_bufs):
    if len(out_bufs) != len(self.handlers):
      raise ValueError(f"expected {len(self.handlers)} result buffers, got {len(out_bufs)}")
    return [h(b) for h, b in zip(self.handlers, out_bufs)]


def _device_of(sharding):
  devs = getattr(sharding, "_device_assignment", None)
  if devs:
    return devs[0]
  return next(iter(sharding.device_set))


def _array_handler(aval, sharding, committed):
  from pyjax._src.runtime.array import ArrayImpl

  def handle(buf):
    if isinstance(buf, (list, tuple)):   # per-device buffers: one process holds all
      if len(buf) != 1:
        raise ValueError("pyjax arrays hold one buffer; got "
                         f"{len(buf)} per-device buffers")
      buf = buf[0]
    data = np.asarray(buf)
    if data.shape != tuple(aval.shape):
      raise ValueError(f"result buffer of shape {data.shape} does not match the aval "
                       f"{aval.str_short()}")
    data = data.astype(dtypes.canonicalize_dtype(aval.dtype), copy=False)
    return ArrayImpl(data, aval, _device_of(sharding), committed)
  return handle


def global_avals_to_results_handler(global_out_avals, shardings, committed):
  """A ``ResultsHandler`` making one Array per aval, placed by its sharding."""
  handlers = [_array_handler(a, s, committed)
              for a, s in zip(global_out_avals, shardings)]
  return ResultsHandler(handlers, list(shardings), list(global_out_avals))


def mesh_local_to_global(mesh, axes, aval):
  """The global aval of a process-local ``aval`` sharded over ``axes`` of ``mesh``
  (``{dim: axis name(s)}``): each sharded dimension grows by the number of processes along
  its axes, which is 1 in pyjax -- the aval is returned unchanged after checking the axes
  exist."""
  for names in (axes or {}).values():
    for n in (names if isinstance(names, (tuple, list)) else (names,)):
      if n not in mesh.shape:
        raise ValueError(f"axis {n!r} is not an axis of the mesh {mesh}")
  return aval


def mesh_global_to_local(mesh, axes, aval):
  """The process-local aval of a global ``aval`` (the inverse of
  ``mesh_local_to_global``; the same aval with one process)."""
  return mesh_local_to_global(mesh, axes, aval)
