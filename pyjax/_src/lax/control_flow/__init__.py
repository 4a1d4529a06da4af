"""Structured control flow: ``cond``/``switch`` (conditionals), ``while_loop``,
``fori_loop``, ``scan``, ``map`` (loops) and ``associative_scan``."""
from pyjax._src.lax.control_flow.conditionals import cond, switch, cond_p  # noqa: F401
from pyjax._src.lax.control_flow.loops import (  # noqa: F401
    while_loop, fori_loop, scan, map, while_p, scan_p)
from pyjax._src.lax.control_flow.associative_scan import associative_scan  # noqa: F401

__all__ = ["cond", "switch", "while_loop", "fori_loop", "scan", "map", "associative_scan"]
