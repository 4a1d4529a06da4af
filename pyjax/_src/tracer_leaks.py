"""``jax_check_tracer_leaks`` / ``jax.checking_leaks()``: raise when a tracer outlives the
transformation that created it (saved to a global, appended to an outer list, ...).

While the option is on, every interpreter that finishes is remembered (weakly).  When a
``jit`` trace, a ``make_jaxpr`` or a ``vmap`` call returns, the garbage collector runs and
any such interpreter still alive is kept alive by a leaked tracer: JAX's "Leaked trace"
``Exception`` is raised, listing each leaked tracer and what refers to it.

Differs from JAX: as in JAX, ``grad``/``jvp`` are not checked; the referrer chain shows
one level (the object holding the tracer), not the path from a global name.
"""
from __future__ import annotations

import gc
import threading
import weakref

from pyjax._src import core

_lock = threading.Lock()
_pending = []        # weakrefs to finished interpreters not yet checked
_installed = False


def _get_finished(self):
  return self.__dict__.get("finished", False)


def _set_finished(self, value):
  self.__dict__["finished"] = value
  if value:
    try:
      ref = weakref.ref(self)
    except TypeError:
      return
    with _lock:
      _pending.append(ref)


def set_enabled(on):
  """Install (or remove) the hook on ``core.Interpreter.finished``."""
  global _installed
  if on and not _installed:
    core.Interpreter.finished = property(_get_finished, _set_finished)
    _installed = True
  elif not on and _installed:
    core.Interpreter.finished = False   # instances keep their own ``finished`` values
    _installed = False
    with _lock:
      _pending.clear()


def mark():
  """A position in the list of finished interpreters (checked by ``check(mark)``)."""
  with _lock:
    return len(_pending)


_KIND = {"StagingInterpreter": "DynamicJaxprTrace", "BatchInterpreter": "BatchTrace",
         "JVPInterpreter": "JVPTrace"}
_TRACER = {"DynamicJaxprTrace": "JitTracer", "BatchTrace": "VmapTracer"}


def _describe(t):
  try:
    aval = t.aval.str_short(short_dtypes=False)
  except Exception:  # noqa: BLE001
    aval = "?"
  return aval


def check(start=0):
  """Raise if an interpreter finished since ``start`` is still alive after collection."""
  if not _installed:
    return
  with _lock:
    refs = _pending[start:]
    del _pending[start:]
  if not refs:
    return
  gc.collect()
  for r in refs:
    interp = r()
    if interp is None:
      continue
    internal = {id(v) for v in vars(interp).values()}
    internal.add(id(vars(interp)))
    leaked = []
    for t in gc.get_referrers(interp):
      if not isinstance(t, core.Tracer) or t._trace is not interp:
        continue
      holders = [h for h in gc.get_referrers(t)
                 if id(h) not in internal and not isinstance(h, core.Tracer)
                 and type(h).__name__ != "frame"]
      if holders:
        leaked.append((t, holders))
    if not leaked:
      continue
    kind = _KIND.get(type(interp).__name__, type(interp).__name__)
    lines = [f"Leaked trace {kind}. Leaked tracer(s):", ""]
    for t, holders in leaked:
      if kind == "BatchTrace":
        try:
          batched = core.get_aval(t.val).str_short(short_dtypes=False)
        except Exception:  # noqa: BLE001
          batched = "?"
        lines.append(f"VmapTracer(aval={_describe(t)}, batched={batched})")
      else:
        lines.append(f"{_TRACER.get(kind, type(t).__name__)}({_describe(t)})")
      for h in holders[:3]:
        where = ""
        if isinstance(h, (list, tuple)):
          where = "".join(f"[{i}]" for i, x in enumerate(h) if x is t)
        elif isinstance(h, dict):
          where = "".join(f"[{k!r}]" for k, x in h.items() if x is t)
        lines.append(f"<{type(t).__name__} {id(t)}> is referred to by "
                     f"<{type(h).__name__} {id(h)}>{where}")
    raise Exception("\n".join(lines))  # noqa: TRY002  (JAX raises a bare Exception)


if __import__("pyjax._src.config", fromlist=["config"]).config.jax_check_tracer_leaks:
  set_enabled(True)   # JAX_CHECK_TRACER_LEAKS=1 in the environment
