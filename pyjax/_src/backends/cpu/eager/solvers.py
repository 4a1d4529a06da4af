"""Eager implementation of ``custom_linear_solve`` (``lax/solvers.py``): the solve jaxpr run
as it is.
"""
from __future__ import annotations

from pyjax._src.backends.cpu.eager.registry import register


@register("custom_linear_solve")
def _custom_linear_solve(*args, const_lengths, jaxprs):
  from pyjax._src.backends.cpu.eager.control_flow import run_jaxpr
  n = sum(const_lengths)
  start = const_lengths[0] + const_lengths[1]
  solve_consts = args[start:start + const_lengths[2]]
  return run_jaxpr(jaxprs.solve, list(solve_consts) + list(args[n:]))
