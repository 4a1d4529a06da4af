"""Eager implementation of ``pallas_call`` (``pyjax/_src/pallas/``): the kernel's grid
program (the grid loop built by ``pallas/interpret.py``) run as a jaxpr."""
from __future__ import annotations

from pyjax._src.backends.cpu.eager.registry import register


@register("pallas_call")
def _pallas_call(*args, grid_loop, **_):
  """A Pallas kernel: its grid program (the grid loop, ``pallas/interpret.py``)."""
  from pyjax._src.backends.cpu.eager.control_flow import run_jaxpr
  return run_jaxpr(grid_loop, args)
