"""Eager NumPy implementations of the control-flow primitives (``cond``, ``while``,
``scan``), registered by name like every other eager implementation.

Each takes NumPy buffers and the primitive's params (which carry ``ClosedJaxpr``s) and
runs the inner jaxprs with ``run_jaxpr``: a small evaluator over NumPy buffers that
calls each equation's implementation for jit's tiers (``tier_native.impl``: the native
tier's bits) directly (no abstract evaluation, no
Array wrapping), inlines nested ``jit``/custom-derivative calls, and falls back to a
primitive's Python ``impl`` (on Arrays) for the few primitives that only have one.  The
per-jaxpr plan (liveness, literal conversion, implementation look-up) is built once and
cached weakly on the jaxpr.  The jit executable calls these same implementations by
name, so control flow runs identically eagerly and under ``jit``.

Semantics (as XLA's): ``cond`` clamps its index into range; ``while`` with a batched
(non-scalar) predicate keeps iterating while any lane's predicate holds and only updates
the lanes whose predicate holds (``vmap`` of a while loop); ``scan`` writes its stacked
outputs in iteration order (reversed for ``reverse=True``).
"""
from __future__ import annotations

import weakref

import numpy as np

from pyjax._src.backends.cpu.eager.registry import impls, register
from pyjax._src.backends.cpu import reciprocal_div
from pyjax._src.backends.cpu.numpy_tier import native as tier_native
from pyjax._src.backends.cpu.compiler import primitive_table as _table

_nd = np.ndarray
_plans = weakref.WeakKeyDictionary()   # Jaxpr -> _Plan
# calls whose jaxpr is inlined: name -> the param holding it (the compiler's table)
_INLINE_PARAM = _table.INLINE_CALLS


def _is_literal(v):
  return type(v).__name__ == "Literal"


def _closed_parts(c):
  if type(c).__name__ == "ClosedJaxpr":
    return c.jaxpr, c.consts
  return c, ()


def _as_buffer(x, dtype):
  data = x._data() if hasattr(x, "_data") else x
  if type(data) is not _nd or data.dtype != dtype:
    data = np.asarray(data, dtype)
  return data


class _Plan:
  """A jaxpr flattened into steps over a list of slots.  A reference is a slot index
  or ``("lit", buffer)``."""
  __slots__ = ("n_slots", "const_slots", "const_vals", "in_slots", "steps", "out_refs")

  def __init__(self, jaxpr, consts):
    self.n_slots = 0
    self.const_slots = []
    self.const_vals = []
    self.steps = []
    env = {}
    for v, c in zip(jaxpr.constvars, consts):
      env[v] = self._const(c, v.aval.dtype)
    self.in_slots = []
    for v in jaxpr.invars:
      env[v] = s = self._new()
      self.in_slots.append(s)
    self.out_refs = self._emit(jaxpr, env)

  def _new(self):
    s = self.n_slots
    self.n_slots += 1
    return s

  def _const(self, c, dtype):
    s = self._new()
    self.const_slots.append(s)
    self.const_vals.append(_as_buffer(c, dtype))
    return s

  def _emit(self, jaxpr, env):
    """Append the steps of ``jaxpr`` (``env`` maps its constvars and invars to
    references); returns the references of its outputs."""
    def ref(v):
      if _is_literal(v):
        return ("lit", np.asarray(v.val, v.aval.dtype))
      return env[v]

    live = {v for v in jaxpr.outvars if not _is_literal(v)}
    keep = []
    for eqn in reversed(jaxpr.eqns):
      if eqn.effects or any(v in live for v in eqn.outvars):
        keep.append(eqn)
        live.update(v for v in eqn.invars if not _is_literal(v))
    keep.reverse()
    pred_of = {}   # XLA's select for a product with a converted boolean (pred_mul.py)
    recip_of = {}  # XLA: a / broadcast(b) and a / sqrt(b) as products (reciprocal_div.py)
    for eqn in keep:
      prim = eqn.primitive
      rw = reciprocal_div.rewrite(eqn, pred_of, recip_of)
      if rw is not None:
        fn, operands, prm = rw
        o, = eqn.outvars
        env[o] = s = self._new()
        self.steps.append((fn, [ref(v) for v in operands], [s], [o.aval.dtype], prm, False,
                           None))
        continue
      ins = [ref(v) for v in eqn.invars]
      pname = _INLINE_PARAM.get(prim.name)
      inner = eqn.params.get(pname) if pname is not None else None
      if inner is not None:
        ij, iconsts = _closed_parts(inner)
        ienv = {}
        for v, c in zip(ij.constvars, iconsts):
          ienv[v] = self._const(c, v.aval.dtype)
        lead = len(ins) - len(ij.invars)   # custom calls pass leading consts
        for v, r in zip(ij.invars, ins[max(lead, 0):]):
          ienv[v] = r
        for v, r in zip(eqn.outvars, self._emit(ij, ienv)):
          env[v] = r
        continue
      outs = []
      for v in eqn.outvars:
        env[v] = s = self._new()
        outs.append(s)
      dts = [v.aval.dtype for v in eqn.outvars]
      # jit's tiers' implementations (transcendentals on the compiler's math, XLA's sum
      # order, ...): a loop's bits do not depend on whether its body ran natively
      impl = tier_native.impl(prim.name, impls.get(prim.name))
      opaque = tier_native.eqn_impl(eqn, impl)
      if opaque is not None:
        self.steps.append((opaque, ins, outs, dts, {}, prim.multiple_results, None))
      elif impl is not None:
        self.steps.append((impl, ins, outs, dts, dict(eqn.params), prim.multiple_results,
                           None))
      elif prim.impl is not None:
        self.steps.append((None, ins, outs, dts, dict(eqn.params), prim.multiple_results,
                           (prim, [v.aval for v in eqn.invars])))
      else:
        raise NotImplementedError(f"The cpu backend has no implementation of {prim.name}")
    return [ref(v) for v in jaxpr.outvars]

  def run(self, args):
    env = [None] * self.n_slots
    for s, c in zip(self.const_slots, self.const_vals):
      env[s] = c
    for s, a in zip(self.in_slots, args):
      env[s] = a
    for impl, ins, outs, dts, params, multiple, py in self.steps:
      vals = [env[r] if type(r) is int else r[1] for r in ins]
      if impl is not None:
        res = impl(*vals, **params)
      else:
        res = _run_python_impl(py[0], py[1], vals, params)
      if not multiple:
        res = (res,)
      for s, o, d in zip(outs, res, dts):
        if type(o) is not _nd or o.dtype != d:
          o = np.asarray(o, d)
        env[s] = o
    return [env[r] if type(r) is int else r[1] for r in self.out_refs]


def _run_python_impl(prim, in_avals, vals, params):
  from pyjax._src import core
  from pyjax._src.runtime.array import ArrayImpl
  args = [ArrayImpl(b, a) for b, a in zip(vals, in_avals)]
  with core.set_interpreter(core.eval_interpreter):
    out = prim.impl(*args, **params)
  outs = out if prim.multiple_results else [out]
  res = [o._data() if type(o) is ArrayImpl else np.asarray(o) for o in outs]
  return res if prim.multiple_results else res[0]


def _plan(closed):
  jaxpr, consts = _closed_parts(closed)
  p = _plans.get(jaxpr)
  if p is None:
    p = _Plan(jaxpr, consts)
    _plans[jaxpr] = p
  return p


def run_jaxpr(closed, args):
  """Evaluate a (Closed)Jaxpr on NumPy buffers; returns the output buffers."""
  return _plan(closed).run(list(args))


# --- long loops: the body as native code ------------------------------------------------
# A loop whose body runs many times is worth compiling: a 30,000-step scan of an optimizer
# update takes seconds on the NumPy plan and a fraction of one on the body's native code
# (plus the C compiler's second or two).  ``scan`` decides from its length, ``while`` after
# _WHILE_NATIVE_AFTER iterations.  Not with PYJAX_COMPILE=off, nor for bodies with effects
# (their callbacks stay on the plan) -- compile_jaxpr's tiers decide the rest.
_NATIVE_LOOP_WORK = 1 << 18     # iterations x elements written by the body
_WHILE_NATIVE_AFTER = 256
_native_bodies = weakref.WeakKeyDictionary()   # Jaxpr -> native fn, or None (not possible)


def _body_work(closed):
  """Elements written by one run of a jaxpr, nested jaxprs (jit, cond, ...) counted once."""
  jaxpr, _ = _closed_parts(closed)
  n = 0
  for eqn in jaxpr.eqns:
    for v in eqn.outvars:
      n += max(int(np.prod(getattr(v.aval, "shape", ()), dtype=np.int64)), 1)
    for val in eqn.params.values():
      for sub in (val if isinstance(val, (tuple, list)) else (val,)):
        if type(sub).__name__ in ("ClosedJaxpr", "Jaxpr"):
          n += _body_work(sub)
  return n


def _native_body(closed):
  """The native function of a loop body (list of buffers -> list of buffers), or None."""
  jaxpr, _ = _closed_parts(closed)
  try:
    fn = _native_bodies[jaxpr]
  except KeyError:
    fn = None
    if type(closed).__name__ == "ClosedJaxpr" and not jaxpr.effects:
      from pyjax._src.backends.cpu import executable
      if executable.compile_mode() == "off":
        return None   # not remembered: a later call in another mode may compile it
      exe = executable.compile_jaxpr(closed, None, "loop_body")
      if exe.wait() == "native":
        fn = exe.native.fn
    _native_bodies[jaxpr] = fn
  return fn


def _loop_runner(closed, trips):
  """``run(list of buffers)`` for a body that runs ``trips`` times."""
  plan = _plan(closed)
  if trips * _body_work(closed) >= _NATIVE_LOOP_WORK:
    fn = _native_body(closed)
    if fn is not None:
      return lambda args: fn(*args)
  return plan.run


# --- cond -------------------------------------------------------------------------------
@register("cond")
def _cond_impl(index, *args, branches, **_):
  i = int(index)
  if i < 0 or i >= len(branches):
    i = len(branches) - 1
  return run_jaxpr(branches[i], args)


# --- while ------------------------------------------------------------------------------
def _lane_select(pred, new, old):
  if pred.ndim < new.ndim:
    pred = pred.reshape(pred.shape + (1,) * (new.ndim - pred.ndim))
  return np.where(pred, new, old)


@register("while")
def _while_impl(*args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts, _finish=None):
  """``_finish(consts + carry)``: the rest of a long loop as one native call, or None
  (``numpy_tier/loops.py``)."""
  cconsts = list(args[:cond_nconsts])
  bconsts = list(args[cond_nconsts:cond_nconsts + body_nconsts])
  carry = list(args[cond_nconsts + body_nconsts:])
  cplan, bplan = _plan(cond_jaxpr), _plan(body_jaxpr)
  if not cond_jaxpr.out_avals[0].shape:
    crun, brun, n = cplan.run, bplan.run, 0
    while crun(cconsts + carry)[0]:
      carry = brun(bconsts + carry)
      n += 1
      if n == _WHILE_NATIVE_AFTER:   # a long loop: the rest on native code if it pays
        if _finish is not None:
          rest = _finish(cconsts + bconsts + carry)
          if rest is not None:
            return list(rest)
        crun = _loop_runner(cond_jaxpr, 1 << 20)
        brun = _loop_runner(body_jaxpr, 1 << 20)
    return carry
  while True:   # a batched predicate: run until every lane is done
    pred = np.asarray(cplan.run(cconsts + carry)[0], bool)
    if not pred.any():
      return carry
    new = bplan.run(bconsts + carry)
    carry = [_lane_select(pred, n, c) for n, c in zip(new, carry)]


# --- scan -------------------------------------------------------------------------------
@register("scan")
def _scan_impl(*args, reverse, length, num_consts, num_carry, jaxpr, unroll=1,
               _body_native=True, **_):
  """``_body_native=False``: the body on the plan whatever the loop's length (the caller,
  ``numpy_tier/loops.py``, has its whole loop built in the background instead)."""
  consts = list(args[:num_consts])
  carry = list(args[num_consts:num_consts + num_carry])
  xs = args[num_consts + num_carry:]
  run = _loop_runner(jaxpr, length) if _body_native else _plan(jaxpr).run
  y_avals = jaxpr.out_avals[num_carry:]
  ys = [np.empty((length,) + tuple(a.shape), a.dtype) for a in y_avals]
  order = range(length - 1, -1, -1) if reverse else range(length)
  for i in order:
    outs = run(consts + carry + [x[i] for x in xs])
    carry = outs[:num_carry]
    for y, o in zip(ys, outs[num_carry:]):
      y[i] = o
  return carry + ys
