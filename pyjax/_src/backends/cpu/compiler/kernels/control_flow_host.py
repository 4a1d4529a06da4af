"""Control flow with native bodies: ``scan``, ``while`` and ``cond`` steps of a native
program compile their bodies (branches, condition) to native executables too, and the
host program drives the loop: one native call per iteration instead of one NumPy call per
equation of the body.  Loops whose bodies are entirely native run as C loops instead, and
conds whose branches are entirely native as a C ``switch`` (``control_flow_c.py``; ``native_loop``),
one native call per step; the Python-driven loop or branch choice here is the fallback for
bodies and branches with NumPy steps.  A body that cannot be compiled (no C compiler,
nothing native in it, a batched ``while`` predicate) leaves the step to the eager
implementation.

Semantics are the eager implementations' (``eager/control_flow.py``): ``cond`` clamps its
index, ``scan`` stacks outputs in iteration order (reversed when ``reverse``).
"""
from __future__ import annotations

import numpy as np

_nd = np.ndarray


def _native_fn(closed, name):
  """A native function ``f(*buffers) -> list`` for ``closed``, or None."""
  from pyjax._src.backends.cpu.compiler import driver
  try:
    prog = driver.lower(closed, name)
    return prog.build()
  except driver.Unsupported:
    return None


def _fixed(fn, closed):
  """Wrap ``fn`` so its results always have the jaxpr's output dtypes and shapes."""
  avals = [(np.dtype(a.dtype), tuple(a.shape)) for a in closed.out_avals]

  def run(*bufs):
    outs = fn(*bufs)
    res = []
    for o, (d, s) in zip(outs, avals):
      if type(o) is not _nd or o.dtype != d or o.shape != s:
        o = np.asarray(o, d).reshape(s)
      res.append(o)
    return res
  return run


def scan_runner(params):
  body = params["jaxpr"]
  fn = _native_fn(body, "scan_body")   # native results already have exact dtypes/shapes
  if fn is None:
    return None
  length, reverse = int(params["length"]), bool(params["reverse"])
  nconst, ncarry = int(params["num_consts"]), int(params["num_carry"])
  y_avals = [(tuple(a.shape), np.dtype(a.dtype)) for a in body.out_avals[ncarry:]]

  def run(*args):
    consts = tuple(args[:nconst])
    carry = list(args[nconst:nconst + ncarry])
    xs = args[nconst + ncarry:]
    order = range(length - 1, -1, -1) if reverse else range(length)
    if not xs and not y_avals:       # a loop over the carry only (fori_loop, ...)
      for _ in order:
        carry = fn(*consts, *carry)
      return carry
    ys = [np.empty((length,) + s, d) for s, d in y_avals]
    for i in order:
      outs = fn(*consts, *carry, *[x[i] for x in xs])
      carry = outs[:ncarry]
      for y, o in zip(ys, outs[ncarry:]):
        y[i] = o
    return carry + ys
  return run


def while_runner(params):
  cond, body = params["cond_jaxpr"], params["body_jaxpr"]
  if cond.out_avals[0].shape:
    return None   # a batched predicate (vmap of a loop): the eager implementation
  cfn, bfn = _native_fn(cond, "while_cond"), _native_fn(body, "while_body")
  if cfn is None and bfn is None:
    return None
  from pyjax._src.backends.cpu.eager.control_flow import run_jaxpr
  if cfn is None:
    cfn = lambda *a: run_jaxpr(cond, a)  # noqa: E731
  if bfn is None:
    bfn = _fixed(lambda *a: run_jaxpr(body, a), body)  # noqa: E731
  nc, nb = int(params["cond_nconsts"]), int(params["body_nconsts"])

  def run(*args):
    cconsts = list(args[:nc])
    bconsts = list(args[nc:nc + nb])
    carry = list(args[nc + nb:])
    while cfn(*cconsts, *carry)[0]:
      carry = bfn(*bconsts, *carry)
    return carry
  return run


def cond_runner(params):
  branches = params["branches"]
  fns = []
  any_native = False
  from pyjax._src.backends.cpu.eager.control_flow import run_jaxpr
  for i, br in enumerate(branches):
    fn = _native_fn(br, f"cond_branch{i}")
    if fn is None:
      fn = _fixed((lambda b: lambda *a: run_jaxpr(b, a))(br), br)
    else:
      any_native = True
    fns.append(fn)
  if not any_native:
    return None
  n = len(fns)

  def run(index, *args):
    i = int(index)
    if i < 0 or i >= n:
      i = n - 1
    return fns[i](*args)
  return run


RUNNERS = {"scan": scan_runner, "while": while_runner, "cond": cond_runner}


def native_loop(node):
  """The whole control-flow ``node`` (scan / while / cond) as one native call
  (``control_flow_c.py``), or None when its body or a branch needs Python."""
  from pyjax._src.backends.cpu.compiler.native import build
  from pyjax._src.backends.cpu.compiler.kernels import control_flow as control_flow_c
  from pyjax._src.backends.cpu.compiler import driver
  tc = build.toolchain()
  if tc is None or not driver.loops_enabled():
    return None
  try:
    unit = control_flow_c.loop_unit(node, tc)
  except control_flow_c.NotNative:
    return None
  fn = unit.build(tc)

  def run(*bufs):
    return fn(*bufs)
  run.native_loops = unit.n_loops
  run.native_conds = unit.n_conds
  run.unit = unit
  return run


def runner(node):
  """A host runner for a control-flow node: the whole loop in C when its body allows
  (``native_loop``), else a Python loop over native bodies; None when neither applies."""
  make = RUNNERS.get(node.prim)
  if make is None or node.effects:
    return None
  if node.prim in ("scan", "while", "cond"):
    try:
      fn = native_loop(node)
    except Exception:  # noqa: BLE001  -- a failed build: the host-driven loop still works
      fn = None
    if fn is not None:
      return fn
  try:
    return make(node.params)
  except Exception:  # noqa: BLE001  -- the eager implementation still works
    return None
