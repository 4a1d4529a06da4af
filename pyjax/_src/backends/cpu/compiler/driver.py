"""The compiler's driver: jaxpr -> simplified program -> fusion groups -> plan -> C ->
shared object -> a host function that runs the plan.

``lower(closed_jaxpr, name)`` does everything up to the C source (no compiler involved);
``NativeProgram.build()`` compiles (or finds in a cache) and instantiates it.  The host
function is generated Python: it calls each native segment (one C call each) and, between
segments, the NumPy implementations of the equations the code generator does not handle.
When the whole program is one segment whose inputs and outputs are the program's, the
segment's native callable *is* the host function.
"""
from __future__ import annotations

import itertools
import math
import logging
import os
import time

import numpy as np

from pyjax._src.backends.cpu import debug
from pyjax._src.backends.cpu.compiler import cmodule, fusion, kernel_times
from pyjax._src.backends.cpu.compiler.native import build
from pyjax._src.backends.cpu.compiler.native import cache
from pyjax._src.backends.cpu.compiler.kernels import control_flow_host
from pyjax._src.backends.cpu.compiler.kernels import dot
from pyjax._src.backends.cpu.compiler.kernels import sgemm
from pyjax._src.backends.cpu.compiler.kernels import control_flow as control_flow_c
from pyjax._src.backends.cpu.compiler.native import outpool
from pyjax._src.backends.cpu.compiler import plan
from pyjax._src.backends.cpu.compiler.native import runtime
from pyjax._src.backends.cpu.compiler import simplify as simplify_mod
from pyjax._src.backends.cpu.compiler.ir import CONST, INPUT, Lit, Value, from_closed_jaxpr

_log = logging.getLogger("pyjax.compiler")
_counter = itertools.count()


class Unsupported(Exception):
  """Nothing in this program is worth compiling natively."""


class NativeProgram:
  """A lowered program: C source, the plan, and (after ``build``) the host function."""

  def __init__(self, name, program, fu, steps, source, n_kernels, toolchain):
    self.name = name
    self.program = program
    self.fusion = fu
    self.steps = steps
    self.source = source
    self.n_kernels = n_kernels
    self.toolchain = toolchain
    self.host_source = None
    self.fn = None
    self.lib = None          # the loaded library (segments only)
    self.stats = {}
    self.whole = None        # a control_flow_c.LoopUnit when the whole program runs in one C call
    # donated inputs whose buffer an output reuses: {input index: the output's index among
    # the segment's}; ``fn`` then also accepts ``fn(*arrays, mask)`` (bit j set: that
    # output may take its donated input's buffer)
    self.donation = {}
    self.donation_segment = None   # the index of the segment they belong to

  @property
  def native_loops(self):
    """How many loops run inside C (no Python per iteration)."""
    if self.whole is not None:
      return self.whole.n_loops
    return sum(getattr(s, "native_loops", 0) for s in self.steps if isinstance(s, plan.HostStep))

  @property
  def native_conds(self):
    """How many ``cond``s choose their branch inside C (no Python per choice)."""
    if self.whole is not None:
      return self.whole.n_conds
    return sum(getattr(s, "native_conds", 0) for s in self.steps if isinstance(s, plan.HostStep))

  @property
  def segments(self):
    return [s for s in self.steps if isinstance(s, plan.Segment)]

  @property
  def host_steps(self):
    if self.whole is not None:
      return []
    return [s for s in self.steps if isinstance(s, plan.HostStep) and s.group.kind == "host"]

  def build(self):
    """Compile (or load from a cache) and instantiate; sets ``self.fn``."""
    t0 = time.perf_counter()
    if self.whole is not None:   # one native call: the whole program, loops included
      self.fn = self.whole.build(self.toolchain, self.stats)
      if "pyjax_kernel_report" in self.whole.source:
        kernel_times.track(self.name, self)
      self.host_source = ("# host program: none -- one native call runs the whole program "
                          f"({self.whole.n_loops} loop(s), {self.whole.n_conds} cond(s) in C)\n")
      self.stats["compile_s"] = time.perf_counter() - t0
      self.stats["total_s"] = self.stats["compile_s"]
      return self.fn
    if not self.segments:   # only control flow (with native bodies, built below)
      self.fn, self.host_source = _host_function(self, [])
      self.stats["compile_s"] = 0.0
      self.stats["total_s"] = time.perf_counter() - t0
      self.stats.setdefault("cache", "none")
      return self.fn
    lib = self.lib = cache.get_library(self.source, self.toolchain, self.stats)
    t1 = time.perf_counter()
    seg_fns = [make_entry(lib, seg.index, [v.dtype for v in seg.inputs],
                          [(tuple(v.shape), v.dtype) for v in seg.outputs],
                          [v.const for v in seg.consts], self.toolchain)
               for seg in self.segments]
    self.fn, self.host_source = _host_function(self, seg_fns)
    self.stats["compile_s"] = t1 - t0
    self.stats["total_s"] = time.perf_counter() - t0
    if "pyjax_kernel_report" in self.source:
      kernel_times.track(self.name, self)
    return self.fn

  def kernel_times(self):
    """Per-kernel call counts and times of a program built with ``PYJAX_KERNEL_TIMES=1``
    (``kernel_times.read``); [] otherwise."""
    lib = self.whole.lib if self.whole is not None else self.lib
    return kernel_times.read(lib) if lib is not None else []

  def _split_source(self):
    """(the shared prelude every translation unit starts with, this program's kernels and
    run functions, their Python entry points); the source is their concatenation."""
    src = self.source
    head = cmodule.unit_head(self.toolchain.float16, self.toolchain.mvec)
    if not src.startswith(head):
      head = ""
    own = src[len(head):]
    k = own.find(cmodule.ENTRY_MARK)
    if k < 0:
      return head, own.strip("\n") + "\n", ""
    return head, own[:k].strip("\n") + "\n", own[k:]

  def own_source(self):
    """The C of this program's kernels and run functions (no prelude, no Python entry
    points)."""
    return self._split_source()[1]

  def as_text(self):
    """The host program, this program's kernels, their Python entry points, then the
    shared C prelude (which the translation unit compiles first)."""
    head, own, entries = self._split_source()
    parts = []
    if self.host_source:
      parts.append("# host program (Python): native segments and NumPy steps\n" + self.host_source)
    parts.append("/* native code (C): this program's kernels and run functions */\n" + own)
    if entries:
      parts.append("/* Python entry points */\n" + entries)
    if head:
      parts.append("/* the shared prelude (the same in every program; compiled first) */\n" + head)
    return "\n".join(parts)


def make_entry(lib, index, in_dtypes, out_specs, consts, toolchain):
  """Entry ``index`` of ``lib`` as a CPython callable ``f(*arrays) -> list``."""
  make = lib.pyjax_make
  make.restype = ctypes_py_object()
  make.argtypes = [ctypes_int(), ctypes_py_object()]
  blas = dot.blas_pointers()
  par = runtime.parallel_for_address(toolchain)
  scratch = runtime.scratch_addresses(toolchain)
  in_dtypes = [np.dtype(d) for d in in_dtypes]

  def normalize(x, i, _d=in_dtypes):
    return np.require(np.asarray(x), dtype=_d[i], requirements=["C", "A"])
  empty = outpool.empty if outpool.wants_pool(out_specs) else np.empty
  spec = (empty, normalize, np.ndarray,
          tuple(int(d.num) for d in in_dtypes),
          tuple((tuple(s), np.dtype(d)) for s, d in out_specs),
          tuple(np.require(c, requirements=["C", "A"]) for c in consts),
          tuple(int(p) for p in blas + dot.blas_thread_control()
                + (sgemm.address(toolchain),)), int(par),
          *(int(a) for a in scratch))
  own = cache.owner(lib)
  if own is not None:   # the entry point holds it: the library is unloaded after the last
    spec += (own,)
  return make(index, spec)


def ctypes_py_object():
  import ctypes
  return ctypes.py_object


def ctypes_int():
  import ctypes
  return ctypes.c_int


def lower_parts(closed):
  """(program, fusion, steps) of ``closed``: the pipeline up to the plan."""
  program = from_closed_jaxpr(closed)
  simplify_mod.simplify(program)
  dot.canonicalize(program)
  fu = fusion.fuse(program)
  steps = plan.schedule(fu)
  for seg in steps:
    if isinstance(seg, plan.Segment):
      seg.inputs.sort(key=lambda v: (0, v.index) if v.kind == INPUT else (1, v.id))
  return program, fu, steps


def lower(closed, name="jaxpr", donate=()):
  """Lower ``closed`` (a ClosedJaxpr) to a NativeProgram (not yet built).  Raises
  ``Unsupported`` when no C compiler exists or nothing would run natively.  A program with
  loops whose every step can run in C becomes one translation unit with one entry (the
  loops run natively, ``control_flow_c.py``).  ``donate``: (input index, output index) pairs of
  donated inputs and the outputs that may reuse their buffers (see
  ``plan.donation_candidates``)."""
  tc = build.toolchain()
  if tc is None:
    raise Unsupported("no C compiler")
  program, fu, steps = lower_parts(closed)
  if debug.level() >= 3:
    debug.log(3, f"pyjax: simplified program of jit({name}):\n{program}\n"
                 f"pyjax: fusion groups of jit({name}):\n{_describe_groups(fu)}")
  prog = _lower_native(name, donate, tc, program, fu, steps)
  if debug.level() >= 4:
    debug.log(4, f"pyjax: C of jit({name}) (without the shared prelude):\n{prog.own_source()}")
  return prog


def _describe_groups(fu):
  lines = []
  for g in fu.groups:
    if g.node is not None and not g.members:
      lines.append(f"  Group{g.id}({g.kind}: {g.node.prim})")
    else:
      lines.append(f"  {g!r}")
  return "\n".join(lines)


def _lower_native(name, donate, tc, program, fu, steps):
  segs = [s for s in steps if isinstance(s, plan.Segment)]
  has_loop = any(isinstance(s, plan.HostStep) and s.node.prim in control_flow_c.CONTROL_PRIMS for s in steps)
  if has_loop and loops_enabled():
    try:
      unit = control_flow_c.whole_program(program, fu, steps, tc, donate)
    except control_flow_c.NotNative:
      unit = None
    if unit is not None:
      prog = NativeProgram(name, program, fu, steps, unit.source, unit.n_kernels, tc)
      prog.whole = unit
      prog.donation = dict(unit.donation)
      return prog
  if not segs and not any(isinstance(s, plan.HostStep) and s.node.prim in control_flow_host.RUNNERS
                          for s in steps):
    raise Unsupported("no native kernels")
  cands, seg = plan.donation_candidates(fu, steps, donate)
  source, nk = cmodule.module_source(fu, steps, tc.float16, tc.mvec)
  prog = NativeProgram(name, program, fu, steps, source, nk, tc)
  if cands:
    prog.donation_segment = seg.index
    for i, j in cands.items():
      v = seg.outputs[j]
      if any(g.alias_ok.get(v) for g in seg.groups if g.kind == "loop"):
        prog.donation[i] = j
  return prog


def loops_enabled():
  """Native loops are on unless ``PYJAX_NATIVE_LOOPS=0`` (the host-driven loop of
  ``control_flow_host.py`` then runs every loop)."""
  return os.environ.get("PYJAX_NATIVE_LOOPS", "1") not in ("0", "")


# --- the host function --------------------------------------------------------------------
def _impls():
  from pyjax._src.backends.cpu import eager as cpu_eager
  from pyjax._src.backends.cpu.numpy_tier import native as tier_native
  # transcendental steps run the compiler's own math, as the fused kernels and the NumPy
  # tier do (numpy_tier/native.py)
  impls = {k: tier_native.impl(k, v) for k, v in cpu_eager.impls.items()}
  tf = impls.get("threefry2x32")
  if tf is not None:   # the per-output nodes of simplify._split_pairs, should they run here
    impls["threefry2x32_0"] = lambda *a: tf(*a)[0]
    impls["threefry2x32_1"] = lambda *a: tf(*a)[1]
  return impls


def _host_function(np_prog, seg_fns):
  program = np_prog.program
  steps = np_prog.steps
  segs = np_prog.segments
  # the fast case: one segment computing exactly the program's outputs from its inputs
  if (len(steps) == 1 and len(segs) == 1
      and list(segs[0].inputs) == list(program.inputs)
      and all(type(x) is Value for x in program.outputs)
      and list(segs[0].outputs) == list(program.outputs)):
    src = _host_source(np_prog, seg_fns)[0]
    return seg_fns[0], src
  src, namespace = _host_source(np_prog, seg_fns)
  code = compile(src, f"<pyjax native host {np_prog.name} #{next(_counter)}>", "exec")
  namespace["__name__"] = "pyjax._src.backends.cpu.generated"   # (see executable.py)
  exec(code, namespace)  # noqa: S102  -- our own generated source
  return namespace["host"], src


def _host_source(np_prog, seg_fns):
  fu = np_prog.fusion
  program = np_prog.program
  impls = _impls()
  g = {"_asarray": np.asarray, "_nd": np.ndarray, "_fix": _fix_output}
  names = {}
  counter = itertools.count()

  def glob(value, prefix):
    n = f"{prefix}{next(counter)}"
    g[n] = value
    return n

  for v in program.inputs:
    names[v] = f"a{v.index}"

  def ref(x):
    if type(x) is Lit:
      return glob(np.asarray(x.value, x.dtype), "c")
    if x.kind == CONST and x not in names:
      names[x] = glob(x.const, "c")
    return names[x]

  # with donated buffers (``NativeProgram.donation``) the host function takes the mask too
  # and hands it to the segment whose outputs may reuse them
  mask = ", *_m" if np_prog.donation else ""
  lines = [f"def host({', '.join(names[v] for v in program.inputs)}{mask}):"]
  for step in np_prog.steps:
    if isinstance(step, plan.Segment):
      fn = glob(seg_fns[step.index], "seg")
      outs = [f"v{v.id}" for v in step.outputs]
      m = mask if step.index == np_prog.donation_segment else ""
      call = f"{fn}({', '.join(ref(v) for v in step.inputs)}{m})"
      if outs:
        lines.append(f"  {', '.join(outs)}, = {call}")
      else:
        lines.append(f"  {call}")
      for v in step.outputs:
        names[v] = f"v{v.id}"
      continue
    node = step.node
    if step.group.kind == "view":
      src = plan.root(fu, node.outs[0])
      out = node.outs[0]
      lines.append(f"  v{out.id} = {ref(src)}.reshape({tuple(out.shape)!r})")
      names[out] = f"v{out.id}"
      continue
    ins = [ref(x) for x in node.ins]
    outs = [f"v{o.id}" for o in node.outs]
    impl = control_flow_host.runner(node) or impls.get(node.prim)
    if impl is not None and impl is not impls.get(node.prim):
      # control flow with native bodies: the runner takes the buffers only
      tmp = f"r{next(counter)}"
      step.native_loops = getattr(impl, "native_loops", 0)
      step.native_conds = getattr(impl, "native_conds", 0)
      how = ("native body): loop in C" if step.native_loops
             else "native branches): in C" if step.native_conds else "native body)")
      lines.append(f"  {tmp} = {glob(impl, 'cf')}({', '.join(ins)})  # {node.prim} ({how}")
      for i, o in enumerate(outs):
        lines.append(f"  {o} = {tmp}[{i}]")
    elif impl is not None:
      call = f"{glob(impl, 'f')}({', '.join(ins)}"
      if node.params:
        call += (", " if ins else "") + f"**{glob(dict(node.params), 'p')}"
      call += ")"
      if len(node.outs) > 1 or (node.primitive is not None and node.primitive.multiple_results):
        tmp = f"r{next(counter)}"
        lines.append(f"  {tmp} = {call}  # {node.prim}")
        for i, o in enumerate(outs):
          lines.append(f"  {o} = {tmp}[{i}]")
      else:
        lines.append(f"  {outs[0]} = {call}  # {node.prim}")
      for o, v in zip(outs, node.outs):
        d = glob(v.dtype, "d")
        shp = tuple(v.shape)
        lines.append(f"  if {o}.__class__ is not _nd or {o}.dtype != {d} or {o}.shape != {shp!r}: "
                     f"{o} = _fix({o}, {d}, {shp!r})")
    elif node.primitive is not None and node.primitive.impl is not None:
      runner = glob(_python_impl_runner(node), "h")
      lines.append(f"  {', '.join(outs)}, = {runner}({', '.join(ins)})  # {node.prim}")
    else:
      raise NotImplementedError(f"The cpu backend has no implementation of {node.prim}")
    for o, v in zip(outs, node.outs):
      names[v] = o
  lines.append(f"  return [{', '.join(ref(x) for x in program.outputs)}]")
  return "\n".join(lines) + "\n", g


def _fix_output(x, dtype, shape):
  """A NumPy step's result as an array of exactly the equation's dtype and shape (native
  segments check both).  An elementwise step whose operands are all 0-d (the simplifier
  drops broadcasts of scalars feeding elementwise operations) gives one element: it is
  broadcast to the equation's shape."""
  x = np.asarray(x, dtype)
  if x.shape != shape:
    if x.size == 1 and x.size != math.prod(shape):
      x = np.full(shape, x.reshape(()), dtype)
    else:
      x = x.reshape(shape)
  return x


def _python_impl_runner(node):
  from pyjax._src import core
  from pyjax._src.runtime.array import ArrayImpl
  from pyjax._src.avals import ShapedArray
  in_avals = [ShapedArray(x.shape, x.dtype) for x in node.ins]
  out_avals = [ShapedArray(o.shape, o.dtype) for o in node.outs]
  params = dict(node.params)
  prim = node.primitive
  multiple = prim.multiple_results

  def run(*bufs):
    args = [ArrayImpl(np.asarray(b), a) for b, a in zip(bufs, in_avals)]
    with core.set_interpreter(core.eval_interpreter):
      out = prim.impl(*args, **params)
    outs = out if multiple else [out]
    res = []
    for o, a in zip(outs, out_avals):
      b = o._data() if type(o) is ArrayImpl else np.asarray(o)
      if b.dtype != a.dtype or b.shape != a.shape:
        b = _fix_output(b, a.dtype, a.shape)
      res.append(b)
    return res
  return run

