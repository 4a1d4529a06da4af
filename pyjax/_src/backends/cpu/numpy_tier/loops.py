"""Long loops on jit's NumPy tier run in C.

A jitted function's first calls run the NumPy plan (``executable.py``).  A ``scan`` there
(``fori_loop`` with static bounds is one) runs its body once per iteration through the
body's plan (``eager/control_flow.py``): a microsecond or more per equation per
iteration, so a 10,000-step loop on four floats took longer than JAX's whole compile.
``eqn_impl(eqn, numpy_impl)`` gives the plan a runner for such an equation that executes
the *whole loop* as one native call: the equation alone is lowered to C (the compiler's
loops-in-C path, ``compiler/kernels/control_flow.py``) and its library comes from the compiler's caches.

When the loop runs in C:

- its library is in the memory or disk cache (``cache.is_cached``): at once -- lowering
  the equation costs a fraction of a millisecond per body equation, loading the library
  less (so only loops of at least ``_MIN_TRIPS`` iterations whose plan would take at
  least ``_WORTH_US`` are considered);
- otherwise, when the plan would take longer than a C compile (estimated from the trip
  count, the body's equations and the elements they write): built now, on the calling
  thread (``PYJAX_COMPILE=sync`` always builds now);
- otherwise the plan runs this call and the library is built on the compiler's background
  thread for the next call (and the next process: the disk cache keeps it).

A ``while`` loop's trip count is unknown: its plan hands over to the native loop after
``eager_control_flow._WHILE_NATIVE_AFTER`` iterations, continuing from the carry reached.
``PYJAX_COMPILE=off``, loops with effects or host callbacks, and loops whose body cannot
run in C keep the plan.  The native loop computes the plan's bits: both tiers use the
same implementations (``numpy_tier/native.py``); ``tests/compiler/test_loop_first_call.py`` checks it.
"""
from __future__ import annotations

import os
import threading

from pyjax._src.backends.cpu.eager import control_flow as _cf

LOOP_PRIMS = frozenset({"scan", "while"})
_EQN_US = 1.5            # the plan's cost per body equation per iteration (µs), about
_ELEMENT_US = 0.002      # ... and per element written
_WORTH_US = 5_000.0      # a loop whose plan takes less stays on the plan (lowering costs)
_MIN_TRIPS = 200         # ... and one of fewer iterations (lowering: ~0.3 ms per equation)
_BUILD_US = 400_000.0    # a C compile of a small loop, about: build now when the plan is slower

stats = {"native": 0, "plan": 0, "builds": 0, "background": 0}
_NONE = object()


def _enabled():
  return os.environ.get("PYJAX_LOOP_NATIVE", "1").strip().lower() not in (
      "0", "off", "false", "no")


def _eqn_count(closed):
  """Equations run by one pass of a jaxpr (nested jaxprs counted once each)."""
  jaxpr, _ = _cf._closed_parts(closed)
  n = 0
  for eqn in jaxpr.eqns:
    n += 1
    for val in eqn.params.values():
      for sub in (val if isinstance(val, (tuple, list)) else (val,)):
        if type(sub).__name__ in ("ClosedJaxpr", "Jaxpr"):
          n += _eqn_count(sub)
  return n


def plan_estimate_us(body, trips):
  """The NumPy plan's time for ``trips`` runs of ``body``, roughly (µs)."""
  return trips * (_EQN_US * _eqn_count(body) + _ELEMENT_US * _cf._body_work(body))


def _one_eqn_program(eqn):
  from pyjax._src import core
  ins = [core.Var(v.aval) for v in eqn.invars]
  outs = [core.Var(v.aval) for v in eqn.outvars]
  jx = core.Jaxpr([], ins, outs, [eqn.replace(invars=ins, outvars=outs)])
  return core.ClosedJaxpr(jx, [])


class _Loop:
  """The native program of one loop equation: lowered once, built once."""

  def __init__(self, eqn):
    self.eqn = eqn
    self.prog = None        # NativeProgram (lowered), _NONE when the loop cannot run in C
    self.fn = None          # the built entry
    self.lock = threading.Lock()
    self.queued = False

  def lowered(self):
    if self.prog is None:
      with self.lock:
        if self.prog is None:
          self.prog = self._lower()
    return None if self.prog is _NONE else self.prog

  def _lower(self):
    from pyjax._src.backends.cpu.compiler import driver
    try:
      prog = driver.lower(_one_eqn_program(self.eqn), f"loop_{self.eqn.primitive.name}")
    except Exception:  # noqa: BLE001  -- unsupported or no compiler: the plan runs it
      return _NONE
    return prog if prog.whole is not None else _NONE   # the loop itself must run in C

  def build(self):
    """The built entry (compiling now when no cache has it), or None."""
    if self.fn is None:
      prog = self.lowered()
      if prog is None:
        return None
      with self.lock:
        if self.fn is None:
          try:
            fn = prog.build()
          except Exception:  # noqa: BLE001  -- a compiler failure: the plan runs it
            self.prog = _NONE
            return None
          stats["builds"] += 1
          self.fn = fn
    return self.fn

  def cached(self):
    if self.fn is not None:
      return True
    prog = self.lowered()
    if prog is None:
      return False
    from pyjax._src.backends.cpu.compiler.native import cache
    return cache.is_cached(prog.source, prog.toolchain)

  def queue(self):
    """Build on the compiler's background thread (once)."""
    if self.queued:
      return
    self.queued = True
    from pyjax._src.backends.cpu import executable
    stats["background"] += 1
    executable.submit(self.build)


def _usable(eqn):
  if eqn.effects:
    return False
  from pyjax._src.backends.cpu import executable
  for val in eqn.params.values():
    for sub in (val if isinstance(val, (tuple, list)) else (val,)):
      if type(sub).__name__ == "ClosedJaxpr" and (sub.jaxpr.effects
                                                  or executable._calls_host(sub.jaxpr)):
        return False
  return True


def _mode():
  from pyjax._src.backends.cpu import executable
  return executable.compile_mode()


def eqn_impl(eqn, numpy_impl):
  """For a ``scan`` or ``while`` equation: a function of its input buffers that runs the
  loop natively when that pays (see the module docstring), else ``numpy_impl``; None for
  other equations and loops that stay on the plan."""
  name = eqn.primitive.name
  if name not in LOOP_PRIMS or numpy_impl is None or not _enabled() or not _usable(eqn):
    return None
  params = dict(eqn.params)
  loop = _Loop(eqn)
  if name == "scan":
    trips = int(params["length"])
    est = plan_estimate_us(params["jaxpr"], trips)
    if est < _WORTH_US or trips < _MIN_TRIPS:
      return None

    def run_scan(*bufs):
      mode = _mode()
      if mode != "off":
        fn = loop.fn
        if fn is None and (mode == "sync" or est >= _BUILD_US or loop.cached()):
          fn = loop.build()
        if fn is not None:
          stats["native"] += 1
          return fn(*bufs)
        if loop.prog is not _NONE:
          loop.queue()   # the plan runs this call, its body on the plan too
          stats["plan"] += 1
          return numpy_impl(*bufs, _body_native=False, **params)
      stats["plan"] += 1
      return numpy_impl(*bufs, **params)
    run_scan.__name__ = "loop_scan"
    return run_scan

  def finish(bufs):
    """The loop run to its end natively from these inputs (consts and the carry reached
    so far), or None."""
    if _mode() == "off":
      return None
    fn = loop.build()
    if fn is None:
      return None
    stats["native"] += 1
    return fn(*bufs)

  def run_while(*bufs):
    return _cf._while_impl(*bufs, _finish=finish, **params)
  run_while.__name__ = "loop_while"
  return run_while
