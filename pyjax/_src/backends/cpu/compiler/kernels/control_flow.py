"""Native control flow: ``scan`` and ``while`` run as C loops and ``cond`` as a C
``switch`` in the same translation unit as the kernels of their bodies and branches, so an
iteration or a branch choice costs no Python.

A program (the jitted one, a loop body, a ``while`` condition, a ``cond`` branch) whose
steps are all native -- segments, views and control flow with native programs inside --
becomes one C function

    static void pj_p<n>(void **In, void **Out, void **C, char *A)

``In`` holds the program inputs' data pointers, ``Out`` the destinations of its outputs
(written by the function; never aliasing an input), ``C`` the translation unit's constant
table and ``A`` scratch memory (``arena_size`` bytes, 64-byte aligned).  The steps run in
order: a segment through its run function (``B`` built from the value storage), a loop
through its loop function (same signature as a program).  Storage: program inputs are
``In``, a value computed here that is also a program output is written straight into its
``Out`` slot, other computed values get their own arena slot after a scratch region shared
by the steps' own arenas (steps run one after the other).  Outputs that are inputs,
constants, literals or repeated values are copied at the end.

A ``scan`` loop keeps two carry buffers in its arena (the body reads one and writes the
other; they swap after each iteration), passes the ``i``-th slice of each ``xs`` by
pointer and has the body write the ``i``-th slice of each ``ys`` in place (``i`` counts
down for ``reverse``); a ``while`` loop evaluates its condition into an arena byte before
each iteration.  A scan without carries (independent iterations: ``lax.map``, Pallas grids
whose outputs are written block by block) runs its iterations on the thread pool, each
task on its own arena, BLAS kept on one thread meanwhile.  A batched predicate (``vmap`` of a loop) keeps iterating while any lane
holds and restores the finished lanes of each carry after the body, as the eager
implementation's select does.  Zero-length scans run no iteration and write no ``ys``.
A ``cond`` reads its index (any integer or bool dtype) from ``In[0]``, sends an
out-of-range one (negative included) to the last branch, as XLA and the eager
implementation do, and calls that branch's program function on ``In + 1`` with its own
``Out`` and ``A`` (the branches write the cond's outputs directly).

Semantics are ``eager/control_flow.py``'s; anything that would need Python inside the
program (a NumPy step, an effect) raises ``NotNative`` and the caller falls back to the
host-driven loop or branch choice of ``kernels/control_flow_host.py``.
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from pyjax._src.backends.cpu.compiler import cmodule, plan, primitive_table
from pyjax._src.backends.cpu.compiler.ir import CONST, Lit, Value

ALIGN = 64
CONTROL_PRIMS = primitive_table.CONTROL   # the steps that run natively around inner programs


class NotNative(Exception):
  """Something in the program needs Python."""


def _nbytes(x):
  return int(math.prod(x.shape)) * np.dtype(x.dtype).itemsize


def _up(n):
  return (max(int(n), 1) + ALIGN - 1) // ALIGN * ALIGN


class ProgFn:
  """A generated C function ``name(In, Out, C, A)`` and the arena it needs; for a program
  (``emit_steps``), ``writers``: {output j: index of the step writing ``Out[j]`` in place}
  (other outputs are copied at the end)."""

  def __init__(self, name, arena_size, writers=None):
    self.name = name
    self.arena_size = arena_size
    self.writers = writers or {}


class TU:
  """One translation unit under construction: C parts, the constant table, counts."""

  def __init__(self, toolchain):
    self.toolchain = toolchain
    self.parts = []
    self.consts = []
    self._const_ids = {}
    self._ids = itertools.count()
    self.n_kernels = 0
    self.n_loops = 0
    self.n_conds = 0

  def uid(self):
    return next(self._ids)

  def const(self, arr):
    """Index of ``arr`` in the constant table (C-contiguous, aligned)."""
    key = id(arr)
    hit = self._const_ids.get(key)
    if hit is not None and hit[1] is arr:
      return hit[0]
    idx = len(self.consts)
    self.consts.append(np.require(arr, requirements=["C", "A"]))
    self._const_ids[key] = (idx, arr)
    return idx

  def lit(self, lit):
    return self.const(np.asarray(lit.value, lit.dtype).reshape(()))


def lower_parts(closed):
  """(program, fusion, steps) of ``closed``: the compiler's pipeline up to the plan."""
  from pyjax._src.backends.cpu.compiler import driver
  return driver.lower_parts(closed)


def check_native(steps):
  """Raise ``NotNative`` unless every step of ``steps`` can run inside C (loop bodies are
  checked when their programs are emitted)."""
  for step in steps:
    if isinstance(step, plan.Segment) or step.group.kind == "view":
      continue
    node = step.node
    if node.prim not in CONTROL_PRIMS or node.effects:
      raise NotNative(node.prim)


# --- programs ----------------------------------------------------------------------------
def emit_program(tu, closed):
  """Emit the C function of ``closed`` (a ClosedJaxpr) into ``tu``."""
  program, fu, steps = lower_parts(closed)
  return emit_steps(tu, program, fu, steps)


def emit_steps(tu, program, fu, steps):
  check_native(steps)
  uid = tu.uid()
  root = lambda v: plan.root(fu, v)  # noqa: E731
  storage = {}
  for k, v in enumerate(program.inputs):
    storage[v] = f"In[{k}]"
  produced = set()
  for step in steps:
    if isinstance(step, plan.Segment):
      produced.update(step.outputs)
    elif step.group.kind != "view":
      produced.update(step.node.outs)
  out_owner = {}
  for j, x in enumerate(program.outputs):
    if type(x) is Value:
      r = root(x)
      if r in produced and r not in out_owner:
        out_owner[r] = j
        storage[r] = f"Out[{j}]"
  slots = []      # (value, size) of intermediates, placed after the scratch region
  scratch = 0

  def ptr(x):
    if type(x) is Lit:
      return f"C[{tu.lit(x)}]"
    r = root(x)
    if r.kind == CONST:
      return f"C[{tu.const(r.const)}]"
    return storage[r]

  def place(v):
    if v not in storage:
      storage[v] = f"(A + PJ_S{uid}_{len(slots)})"
      slots.append(v)

  body = []
  writers = {}
  for k, step in enumerate(steps):
    writes = step.outputs if isinstance(step, plan.Segment) else step.node.outs
    writers.update((out_owner[v], k) for v in writes if v in out_owner)
    if isinstance(step, plan.Segment):
      srcs, kernels = cmodule.group_kernels(fu, step, f"pj_u{uid}_k")
      tu.parts.extend(srcs)
      tu.n_kernels += len(step.groups)
      fname = f"pj_u{uid}_s{step.index}"
      tu.parts.append(cmodule.segment_run_c(fu, step, kernels, fname, static=True))
      for v in step.outputs:
        place(v)
      bs = ([ptr(v) for v in step.inputs] + [storage[v] for v in step.outputs]
            + [f"C[{tu.const(v.const)}]" for v in step.consts])
      body.append(f"  {{ void *B[{max(len(bs), 1)}] = {{{', '.join(f'(void *)({b})' for b in bs) or '0'}}}; "
                  f"{fname}(B, A); }}")
      scratch = max(scratch, step.arena_size)
      continue
    if step.group.kind == "view":
      continue
    node = step.node
    lf = emit_loop(tu, node)
    for o in node.outs:
      place(o)
    ins = [ptr(x) for x in node.ins]
    outs = [storage[o] for o in node.outs]
    body.append(f"  {{ void *I[{max(len(ins), 1)}] = {{{', '.join(f'(void *)({b})' for b in ins) or '0'}}}; "
                f"void *O[{max(len(outs), 1)}] = {{{', '.join(f'(void *)({b})' for b in outs) or '0'}}}; "
                f"{lf.name}(I, O, C, A); }}")
    scratch = max(scratch, lf.arena_size)
  # outputs not written in place
  for j, x in enumerate(program.outputs):
    if type(x) is Value and out_owner.get(root(x)) == j:
      continue
    n = _nbytes(x)
    if n:
      body.append(f"  memcpy(Out[{j}], {ptr(x)}, {n});")
  scratch = _up(scratch) if scratch else 0
  defs = []
  off = scratch
  for i, v in enumerate(slots):
    defs.append(f"#define PJ_S{uid}_{i} {off}")
    off += _up(_nbytes(v))
  name = f"pj_p{uid}"
  src = defs + [f"static void {name}(void **In, void **Out, void **C, char *A) {{",
                "  (void)In; (void)Out; (void)C; (void)A;"] + body + ["}"]
  tu.parts.append("\n".join(src) + "\n")
  return ProgFn(name, off, writers)


# --- loops -------------------------------------------------------------------------------
def emit_loop(tu, node):
  if node.prim == "scan":
    return _emit_scan(tu, node)
  if node.prim == "while":
    return _emit_while(tu, node)
  if node.prim == "cond":
    return _emit_cond(tu, node)
  raise NotNative(node.prim)


def _carry_buffers(carry, base):
  """Arena offsets of the two buffers of each carry, starting at ``base``; (cur, nxt, end)."""
  cur, nxt = [], []
  off = base
  for x in carry:
    cur.append(off)
    off += _up(_nbytes(x))
  for x in carry:
    nxt.append(off)
    off += _up(_nbytes(x))
  return cur, nxt, off


def _carry_setup(carry, cur, nxt, first_in):
  n = len(carry)
  lines = [f"  char *cur[{max(n, 1)}], *nxt[{max(n, 1)}], *sw;", "  (void)sw;"]
  for j, x in enumerate(carry):
    lines.append(f"  cur[{j}] = A + {cur[j]}; nxt[{j}] = A + {nxt[j]};")
    nb = _nbytes(x)
    if nb:
      lines.append(f"  memcpy(cur[{j}], In[{first_in + j}], {nb});")
  return lines


def _carry_finish(carry):
  lines = []
  for j, x in enumerate(carry):
    nb = _nbytes(x)
    if nb:
      lines.append(f"  memcpy(Out[{j}], cur[{j}], {nb});")
  return lines


def _swap(n):
  return [f"    for (int j = 0; j < {n}; j++) {{ sw = cur[j]; cur[j] = nxt[j]; nxt[j] = sw; }}"] if n else []


def _emit_scan(tu, node):
  p = node.params
  nconst, ncarry = int(p["num_consts"]), int(p["num_carry"])
  length, reverse = int(p["length"]), bool(p["reverse"])
  body = emit_program(tu, p["jaxpr"])
  carry = list(node.ins[nconst:nconst + ncarry])
  xs = list(node.ins[nconst + ncarry:])
  ys = list(node.outs[ncarry:])
  bscratch = _up(body.arena_size) if body.arena_size else 0
  cur, nxt, end = _carry_buffers(carry, bscratch)
  nin_b = nconst + ncarry + len(xs)
  nout_b = ncarry + len(ys)
  name = f"pj_scan{tu.uid()}"
  tu.n_loops += 1
  par = _parallel_scan_task(tu, name, body, nconst, xs, ys, length, reverse) \
      if not carry and length > 1 else None
  lines = [f"static void {name}(void **In, void **Out, void **C, char *A) {{",
           "  (void)In; (void)Out; (void)C; (void)A;"]
  if par:   # BLAS kept on one thread for the whole loop (its segments then leave it be)
    lines += ["  if (pj_parallel_for) {",
              "    void *X[3] = {In, Out, C};",
              "    int prev = pj_blas_get_threads ? pj_blas_get_threads() : 0;",
              "    if (pj_blas_set_threads && prev != 1) pj_blas_set_threads(1);",
              f"    pj_parallel_for({par}, (void *)X, {length}, 1);",
              "    if (pj_blas_set_threads && prev != 1) pj_blas_set_threads(prev);",
              "    return;",
              "  }"]
  lines += _carry_setup(carry, cur, nxt, nconst)
  lines.append(f"  void *bi[{max(nin_b, 1)}], *bo[{max(nout_b, 1)}];")
  lines.append("  (void)bi; (void)bo;")
  for k in range(nconst):
    lines.append(f"  bi[{k}] = In[{k}];")
  lines.append(f"  for (int64_t t = 0; t < {length}; t++) {{")
  lines.append(f"    const int64_t i = {f'{length - 1} - t' if reverse else 't'};")
  lines.append("    (void)i;")
  for j in range(ncarry):
    lines.append(f"    bi[{nconst + j}] = cur[{j}]; bo[{j}] = nxt[{j}];")
  for k, x in enumerate(xs):
    sl = _nbytes(x) // length if length else 0
    lines.append(f"    bi[{nconst + ncarry + k}] = (char *)In[{nconst + ncarry + k}] + i * {sl};")
  for k, y in enumerate(ys):
    sl = _nbytes(y) // length if length else 0
    lines.append(f"    bo[{ncarry + k}] = (char *)Out[{ncarry + k}] + i * {sl};")
  lines.append(f"    {body.name}(bi, bo, C, A);")
  lines += _swap(ncarry)
  lines.append("  }")
  lines += _carry_finish(carry)
  lines.append("}")
  tu.parts.append("\n".join(lines) + "\n")
  return ProgFn(name, end)


def _parallel_scan_task(tu, name, body, nconst, xs, ys, length, reverse):
  """A scan without carries has independent iterations (each reads its slice of the
  ``xs`` and writes its slice of the ``ys``): a task running iterations ``[lo, hi)`` on
  its own arena, for ``pj_parallel_for`` (Pallas grids whose outputs are written block by
  block become such scans).  Same results as the sequential loop, in any order."""
  task = f"{name}_task"
  nin_b, nout_b = nconst + len(xs), len(ys)
  size = _up(body.arena_size) if body.arena_size else 0
  lines = [f"static void {task}(void *ctx, int64_t lo, int64_t hi) {{",
           "  void **X = (void **)ctx;",
           "  void **In = (void **)X[0], **Out = (void **)X[1], **C = (void **)X[2];",
           "  (void)In; (void)Out;",
           f"  char *raw = {size} ? (char *)pj_scratch({size} + {ALIGN}) : (char *)0;",
           f"  char *A = raw ? (char *)(((uintptr_t)raw + {ALIGN - 1}) & ~(uintptr_t){ALIGN - 1})"
           " : (char *)0;",
           f"  void *bi[{max(nin_b, 1)}], *bo[{max(nout_b, 1)}];",
           "  (void)bi; (void)bo;"]
  for k in range(nconst):
    lines.append(f"  bi[{k}] = In[{k}];")
  lines.append("  for (int64_t t = lo; t < hi; t++) {")
  lines.append(f"    const int64_t i = {f'{length - 1} - t' if reverse else 't'};")
  for k, x in enumerate(xs):
    lines.append(f"    bi[{nconst + k}] = (char *)In[{nconst + k}] + i * {_nbytes(x) // length};")
  for k, y in enumerate(ys):
    lines.append(f"    bo[{k}] = (char *)Out[{k}] + i * {_nbytes(y) // length};")
  lines.append(f"    {body.name}(bi, bo, C, A);")
  lines.append("  }")
  lines.append("  if (raw) pj_unscratch(raw);")
  lines.append("}")
  tu.parts.append("\n".join(lines) + "\n")
  return task


def _emit_while(tu, node):
  p = node.params
  nc, nb = int(p["cond_nconsts"]), int(p["body_nconsts"])
  cond_j, body_j = p["cond_jaxpr"], p["body_jaxpr"]
  carry = list(node.ins[nc + nb:])
  pshape = tuple(cond_j.out_avals[0].shape)
  nlanes = int(math.prod(pshape))
  inner = []
  for x in carry:
    if tuple(x.shape[:len(pshape)]) != pshape:
      raise NotNative("batched predicate does not prefix a carry")
    inner.append(int(math.prod(x.shape[len(pshape):])) * np.dtype(x.dtype).itemsize)
  cond = emit_program(tu, cond_j)
  body = emit_program(tu, body_j)
  scratch = _up(max(cond.arena_size, body.arena_size)) if max(cond.arena_size, body.arena_size) else 0
  pred_off = scratch
  cur, nxt, end = _carry_buffers(carry, pred_off + _up(nlanes))
  n = len(carry)
  name = f"pj_while{tu.uid()}"
  tu.n_loops += 1
  lines = [f"static void {name}(void **In, void **Out, void **C, char *A) {{",
           "  (void)In; (void)Out; (void)C; (void)A;"]
  lines += _carry_setup(carry, cur, nxt, nc + nb)
  lines.append(f"  void *ci[{max(nc + n, 1)}], *co[1], *bi[{max(nb + n, 1)}], *bo[{max(n, 1)}];")
  lines.append(f"  const uint8_t *pred = (const uint8_t *)(A + {pred_off});")
  lines.append(f"  co[0] = (void *)(A + {pred_off});")
  for k in range(nc):
    lines.append(f"  ci[{k}] = In[{k}];")
  for k in range(nb):
    lines.append(f"  bi[{k}] = In[{nc + k}];")
  lines.append("  for (;;) {")
  for j in range(n):
    lines.append(f"    ci[{nc + j}] = cur[{j}]; bi[{nb + j}] = cur[{j}]; bo[{j}] = nxt[{j}];")
  lines.append(f"    {cond.name}(ci, co, C, A);")
  if pshape:
    lines.append("    int any = 0;")
    lines.append(f"    for (int64_t l = 0; l < {nlanes}; l++) any |= pred[l] != 0;")
    lines.append("    if (!any) break;")
  else:
    lines.append("    if (!pred[0]) break;")
  lines.append(f"    {body.name}(bi, bo, C, A);")
  if pshape:
    for j in range(n):
      if inner[j]:
        lines.append(f"    for (int64_t l = 0; l < {nlanes}; l++) if (!pred[l]) "
                     f"memcpy(nxt[{j}] + l * {inner[j]}, cur[{j}] + l * {inner[j]}, {inner[j]});")
  lines += _swap(n)
  lines.append("  }")
  lines += _carry_finish(carry)
  lines.append("}")
  tu.parts.append("\n".join(lines) + "\n")
  return ProgFn(name, end)


# --- cond --------------------------------------------------------------------------------
def _index_c(d, n):
  """C statements setting ``int64_t k`` from the index at ``In[0]`` (dtype ``d``): the
  branch number, out-of-range values (negative included) sent to the last branch."""
  if d == np.bool_:
    return ["  const int64_t k = *(const uint8_t *)In[0] != 0;"]
  if d.kind == "i":
    return [f"  int64_t k = (int64_t)*(const int{8 * d.itemsize}_t *)In[0];",
            f"  if (k < 0 || k > {n - 1}) k = {n - 1};"]
  if d.kind == "u":
    return [f"  const uint64_t u = (uint64_t)*(const uint{8 * d.itemsize}_t *)In[0];",
            f"  const int64_t k = u > {n - 1} ? {n - 1} : (int64_t)u;"]
  raise NotNative(f"cond index of dtype {d}")


def _emit_cond(tu, node):
  branches = node.params["branches"]
  idx = node.ins[0]
  if tuple(idx.shape) != () or not branches:
    raise NotNative("cond index not a scalar")
  fns, seen = [], {}
  for b in branches:   # a branch repeated (same jaxpr) is emitted once
    if id(b) not in seen:
      seen[id(b)] = (b, emit_program(tu, b))
    fns.append(seen[id(b)][1])
  n = len(fns)
  name = f"pj_cond{tu.uid()}"
  tu.n_conds += 1
  lines = [f"static void {name}(void **In, void **Out, void **C, char *A) {{",
           "  (void)In; (void)Out; (void)C; (void)A;"]
  if n == 1:
    lines.append(f"  {fns[0].name}(In + 1, Out, C, A);")
  else:
    lines += _index_c(np.dtype(idx.dtype), n)
    lines.append("  switch (k) {")
    for i, fn in enumerate(fns):
      lines.append(f"    {'default' if i == n - 1 else f'case {i}'}: {fn.name}(In + 1, Out, C, A); break;")
    lines.append("  }")
  lines.append("}")
  tu.parts.append("\n".join(lines) + "\n")
  return ProgFn(name, max(f.arena_size for f in fns))


# --- translation units -------------------------------------------------------------------
def _entry_source(tu, fn, in_specs, out_specs, aliases=None):
  """The whole translation unit: prelude, the parts, one entry (segment 0) running ``fn``
  (``aliases``: {output j: donated input i}, see ``cmodule.entry_c``)."""
  tc = tu.toolchain
  nin, nout, ncon = len(in_specs), len(out_specs), len(tu.consts)
  run = (f"void pyjax_run_0(void **B, char *A) {{\n"
         f"  {fn.name}(B, B + {nin}, B + {nin + nout}, A);\n}}\n")
  head = cmodule.unit_head(tc.float16, tc.mvec)
  entry = cmodule.entry_c(0, in_specs, nout, ncon, fn.arena_size, heavy=True, aliases=aliases)
  tail = cmodule.unit_tail([fn.arena_size])
  return "\n".join([head] + tu.parts + [run, entry, tail])


class LoopUnit:
  """A built translation unit: ``source`` and the entry's interface."""

  def __init__(self, source, in_specs, out_specs, consts, arena_size, n_kernels, n_loops,
               n_conds=0):
    self.source = source
    self.in_specs = in_specs
    self.out_specs = out_specs
    self.consts = consts
    self.arena_size = arena_size
    self.n_kernels = n_kernels
    self.n_loops = n_loops
    self.n_conds = n_conds
    self.donation = {}       # {donated input i: output j that may take its buffer}
    self.fn = None
    self.lib = None          # the loaded library

  def build(self, toolchain, stats=None):
    from pyjax._src.backends.cpu.compiler.native import cache
    from pyjax._src.backends.cpu.compiler import driver
    lib = self.lib = cache.get_library(self.source, toolchain, stats)
    self.fn = driver.make_entry(lib, 0, [d for _, d in self.in_specs], self.out_specs,
                                self.consts, toolchain)
    return self.fn


def _spec(x):
  return (tuple(int(d) for d in x.shape), np.dtype(x.dtype))


def whole_program(program, fu, steps, toolchain, donate=()):
  """A LoopUnit running the whole program (which must contain control flow) in one call;
  its ``donation`` ({input i: output j}) lists the donated inputs (``donate``: candidate
  (input, output) pairs) whose buffer output j may take (``donation_pairs``)."""
  check_native(steps)
  tu = TU(toolchain)
  fn = emit_steps(tu, program, fu, steps)
  in_specs = [_spec(v) for v in program.inputs]
  out_specs = [_spec(x) for x in program.outputs]
  donation = donation_pairs(program, fu, steps, donate, fn.writers)
  src = _entry_source(tu, fn, in_specs, out_specs, {j: i for i, j in donation.items()})
  unit = LoopUnit(src, in_specs, out_specs, tu.consts, fn.arena_size, tu.n_kernels,
                  tu.n_loops, tu.n_conds)
  unit.donation = donation
  return unit


def _step_reads(fu, step):
  """The storage roots a step of ``emit_steps`` reads, with, for a loop, whether each is
  read only when the loop starts (a carry's initial value: copied into the loop's own
  buffers before the first iteration) -- {root: only at the start}."""
  if isinstance(step, plan.Segment):
    return {plan.root(fu, v): False for v in step.inputs}
  if step.group.kind == "view":
    return {}
  node = step.node
  p = node.params
  carry = range(0)
  if node.prim == "scan":
    carry = range(int(p["num_consts"]), int(p["num_consts"]) + int(p["num_carry"]))
  elif node.prim == "while":
    carry = range(int(p["cond_nconsts"]) + int(p["body_nconsts"]), len(node.ins))
  reads = {}
  for k, x in enumerate(node.ins):
    if type(x) is Value:
      r = plan.root(fu, x)
      reads[r] = reads.get(r, True) and k in carry
  return reads


def donation_pairs(program, fu, steps, pairs, writers):
  """The (input i, output j) pairs of ``pairs`` (equal shape and dtype) for which
  ``emit_steps``'s function may be called with ``Out[j] == In[i]``: step ``writers[j]``
  writes output j in place and the input is not read after that step starts -- or, when
  that step is a ``scan``/``while``, the input is only one of its carries' initial values
  (read before the first iteration; the loop writes its outputs after).  The input must
  not be (a view of) an output.  {i: j}."""
  outs = program.outputs
  out_roots = {plan.root(fu, x) for x in outs if type(x) is Value}
  reads = [_step_reads(fu, st) for st in steps]
  found, used = {}, set()
  for i, j in pairs:
    if i in found or j in used or j not in writers or i >= len(program.inputs):
      continue
    x, v = program.inputs[i], outs[j]
    if x in out_roots or x.shape != v.shape or x.dtype != v.dtype:
      continue
    k = writers[j]
    if reads[k].get(x, True) is False or any(x in r for r in reads[k + 1:]):
      continue
    found[i] = j
    used.add(j)
  return found


def loop_unit(node, toolchain):
  """A LoopUnit running one control-flow node (scan, while, cond: its inputs in, its outputs
  out) in one call."""
  if node.prim not in CONTROL_PRIMS or node.effects:
    raise NotNative(node.prim)
  tu = TU(toolchain)
  fn = emit_loop(tu, node)
  in_specs = [_spec(x) for x in node.ins]
  out_specs = [_spec(o) for o in node.outs]
  src = _entry_source(tu, fn, in_specs, out_specs)
  return LoopUnit(src, in_specs, out_specs, tu.consts, fn.arena_size, tu.n_kernels, tu.n_loops,
                  tu.n_conds)

