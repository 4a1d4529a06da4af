"""Find the equations of a jitted program whose two CPU tiers round differently.

``tier_diff(fun, *args)`` traces ``fun``, inlines nested ``jit``/``closed_call`` bodies
and runs the program equation by equation: each equation alone, compiled on the NumPy tier
and natively (``PYJAX_COMPILE`` ``off`` and ``sync``), on the NumPy tier's values of its
inputs.  Returns one ``Diff`` per equation whose outputs differ in any bit (primitive,
params, avals, the number of differing elements and the largest difference in ulps), in
program order.  ``chains=True`` also compiles every window of ``window`` consecutive
equations at once, which shows differences that only fusion brings (FMA contraction).

    python tests/tier_diff.py            # the digits MLP step and the CNN step of
                                         # tests/_tier_worker.py
"""
from __future__ import annotations

import dataclasses
import os
import sys

import numpy as np


@dataclasses.dataclass
class Diff:
  index: int
  primitive: str
  params: str
  avals: str
  n_diff: int
  max_ulps: float

  def __str__(self):
    return (f"eqn {self.index}: {self.primitive} {self.avals} {self.params}: {self.n_diff} "
            f"elements differ (max {self.max_ulps:g} ulp)")


def _flat_eqns(jaxpr):
  """Equations with nested jit/closed_call bodies inlined (by variable renaming)."""
  from pyjax._src import core
  out = []

  def go(jx, rename):
    def r(v):
      return v if type(v) is core.Literal else rename.get(v, v)
    for e in jx.eqns:
      sub = e.params.get("jaxpr") if e.primitive.name in ("pjit", "jit", "closed_call",
                                                            "core_call") else None
      if sub is not None:
        inner = sub.jaxpr if hasattr(sub, "jaxpr") else sub
        consts = getattr(sub, "consts", [])
        m = {}
        for v, c in zip(inner.constvars, consts):
          lit = core.Literal(np.asarray(c), v.aval)
          m[v] = lit
        for v, a in zip(inner.invars, e.invars):
          m[v] = r(a)
        go(inner, m)
        for o, io in zip(e.outvars, inner.outvars):
          rename[o] = m.get(io, io) if type(io) is not core.Literal else io
          if type(io) is core.Literal:
            rename[o] = io
        continue
      ins = [r(v) for v in e.invars]
      out.append(e.replace(invars=ins))
  go(jaxpr, {})
  return out


def _ulps(a, b):
  a, b = np.asarray(a), np.asarray(b)
  if a.dtype.kind != "f" or a.dtype.itemsize not in (4, 8):
    return float(np.sum(a != b))
  it = np.int32 if a.dtype.itemsize == 4 else np.int64
  ia, ib = a.view(it).astype(np.int64), b.view(it).astype(np.int64)
  ia = np.where(ia < 0, np.iinfo(it).min - ia, ia)
  ib = np.where(ib < 0, np.iinfo(it).min - ib, ib)
  return float(np.max(np.abs(ia - ib))) if a.size else 0.0


def _same(a, b):
  a, b = np.asarray(a), np.asarray(b)
  if a.shape != b.shape or a.dtype != b.dtype:
    return False, -1
  if a.dtype.kind in "fc":
    eq = (a == b) | (np.isnan(a) & np.isnan(b))
    eq &= np.signbit(a.real) == np.signbit(b.real)
  else:
    eq = a == b
  return bool(eq.all()), int((~eq).sum())


def _run(eqns, invars, outvars, values, mode):
  from pyjax._src import core
  from pyjax._src.backends.cpu import executable
  jx = core.Jaxpr([], invars, outvars, eqns)
  with executable.compile_mode_override(mode):
    exe = executable.compile_jaxpr(core.ClosedJaxpr(jx, []), name="tier_diff")
    return [np.asarray(o) for o in exe.fn(*[values[v] for v in invars])]


def _free_vars(eqns):
  from pyjax._src import core
  defined, free = set(), []
  for e in eqns:
    for v in e.invars:
      if type(v) is not core.Literal and v not in defined and v not in free:
        free.append(v)
    defined.update(e.outvars)
  return free


def tier_diff(fun, *args, chains=False, window=4, limit=None):
  """The equations (or, with ``chains``, windows of equations) of ``jit(fun)(*args)``
  whose NumPy-tier and native results differ; see the module docstring."""
  import pyjax
  from pyjax._src import core, tree_util
  closed = pyjax.make_jaxpr(fun)(*args)
  flat = [np.asarray(x) for x in tree_util.tree_leaves(args)]
  eqns = _flat_eqns(closed.jaxpr)
  values = dict(zip(closed.jaxpr.invars, flat))
  for v, c in zip(closed.jaxpr.constvars, closed.consts):
    values[v] = np.asarray(c)
  diffs = []
  for i, e in enumerate(eqns):
    ins = _free_vars([e])
    outs = [v for v in e.outvars if not isinstance(v, core.DropVar)]
    if not outs:
      continue
    ref = _run([e], ins, outs, values, "off")
    try:
      nat = _run([e], ins, outs, values, "sync")
    except Exception as err:  # noqa: BLE001 -- report, keep going
      diffs.append(Diff(i, e.primitive.name, "", f"error {err!r}", -1, float("nan")))
      nat = ref
    for v, r in zip(outs, ref):
      values[v] = r
    for r, n in zip(ref, nat):
      ok, nd = _same(r, n)
      if not ok:
        diffs.append(Diff(i, e.primitive.name, _short_params(e.params),
                          " ".join(str(v.aval.str_short()) for v in e.invars) + " -> "
                          + " ".join(str(v.aval.str_short()) for v in outs),
                          nd, _ulps(r, n) if r.shape == n.shape else float("nan")))
        break
    if limit and len(diffs) >= limit:
      return diffs
  if chains:
    for i in range(0, len(eqns) - window + 1):
      ws = eqns[i:i + window]
      ins = _free_vars(ws)
      outs = [v for v in ws[-1].outvars if not isinstance(v, core.DropVar)]
      if not outs:
        continue
      ref = _run(ws, ins, outs, values, "off")
      nat = _run(ws, ins, outs, values, "sync")
      for r, n in zip(ref, nat):
        ok, nd = _same(r, n)
        if not ok:
          diffs.append(Diff(i, "chain:" + ",".join(w.primitive.name for w in ws), "",
                            str(outs[0].aval.str_short()), nd, _ulps(r, n)))
          break
  return diffs


def _short_params(params):
  s = ", ".join(f"{k}={v}" for k, v in params.items() if "jaxpr" not in k)
  return s[:120]


def main():
  sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
  import _tier_worker as w
  import pyjax
  import pyjax.numpy as jnp
  import digits_mlp as dm
  rng = np.random.default_rng(0)
  params = dm.init_mlp(pyjax.random.key(0), [64, 256, 128, 10])
  opt = dm.adam_init(params)
  x = jnp.asarray(rng.random((64, 64), dtype=np.float32))
  y = jnp.asarray(rng.integers(0, 10, 64).astype(np.int32))
  chains = "--chains" in sys.argv
  print("digits MLP step:")
  for d in tier_diff(dm.train_step.__wrapped__ if hasattr(dm.train_step, "__wrapped__")
                     else dm.train_step, params, opt, x, y, chains=chains):
    print(" ", d)
  p = w._cnn_init(pyjax.random.key(1))
  opt = {"m": pyjax.tree.map(jnp.zeros_like, p), "v": pyjax.tree.map(jnp.zeros_like, p),
         "t": jnp.zeros((), jnp.int32)}
  xi = jnp.asarray(rng.random((32, 8, 8, 1), dtype=np.float32))
  print("CNN step:")
  for d in tier_diff(w._cnn_step, p, opt, xi, y[:32], chains=chains):
    print(" ", d)


if __name__ == "__main__":
  main()
