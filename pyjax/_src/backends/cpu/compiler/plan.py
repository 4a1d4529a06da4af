"""The static execution plan: native segments, NumPy steps between them, and each
segment's buffer plan.

``schedule(fusion)`` orders the groups into *steps*: a ``Segment`` is a run of native
groups (loop kernels and BLAS calls) executed by one native call; a ``HostStep`` is one
equation run on the NumPy backend (gather, sort, control flow, ...) or a view (a NumPy
reshape of a materialized value).  Native groups are scheduled as early as their inputs
allow, so programs with few fallbacks get few segments (usually exactly one).

Each segment's intermediate buffers (values written and read only inside it) live in one
*arena*: offsets are assigned by liveness (first fit over the segment's group order; a
buffer becomes free after its last reader), 64-byte aligned, and the arena is allocated
once per executable instance and kept between calls.  A steady-state call allocates only
the segment's outputs -- and not even those that reuse a donated input's buffer
(``donation_candidates``: ``jit(f, donate_argnums=...)``).
"""
from __future__ import annotations

from pyjax._src.backends.cpu.compiler.ir import CONST, Value

ALIGN = 64


class Segment:
  """Native groups run by one call: ``inputs`` (values passed in), ``outputs`` (values
  returned, freshly allocated), ``consts`` (bound at instance creation) and the arena."""

  def __init__(self, index, groups):
    self.index = index
    self.groups = groups
    self.inputs = []
    self.outputs = []
    self.consts = []
    self.arena = {}          # value -> byte offset
    self.arena_size = 0

  def slots(self):
    """value -> C expression of its storage pointer (``B`` the pointer array, ``A`` the
    arena)."""
    s = {}
    for i, v in enumerate(self.inputs):
      s[v] = f"B[{i}]"
    n = len(self.inputs)
    for i, v in enumerate(self.outputs):
      s[v] = f"B[{n + i}]"
    n += len(self.outputs)
    for i, v in enumerate(self.consts):
      s[v] = f"B[{n + i}]"
    for v, off in self.arena.items():
      s[v] = f"(A + {off})"
    return s

  @property
  def n_buffers(self):
    return len(self.inputs) + len(self.outputs) + len(self.consts)


class HostStep:
  """One node run on the NumPy backend (or a view: a reshape of a materialized value)."""

  def __init__(self, group):
    self.group = group
    self.node = group.node


def root(fusion, v):
  """The value whose storage ``v`` shares (views are reshapes of their operand)."""
  while v in fusion.views:
    v = fusion.views[v]
  return v


def schedule(fusion):
  """The steps of ``fusion``'s program (see the module docstring)."""
  groups = list(fusion.groups)
  deps = fusion.deps
  done = set()
  steps = []
  remaining = list(groups)
  while remaining:
    seg = []
    progress = True
    while progress:
      progress = False
      for g in list(remaining):
        if g.kind in ("loop", "dot") and deps[g] <= done:
          seg.append(g)
          done.add(g)
          remaining.remove(g)
          progress = True
    if seg:
      steps.append(Segment(len([s for s in steps if isinstance(s, Segment)]), seg))
    progress = True
    host_added = False
    while progress:
      progress = False
      for g in list(remaining):
        if g.kind in ("host", "view") and deps[g] <= done:
          steps.append(HostStep(g))
          done.add(g)
          remaining.remove(g)
          progress = True
          host_added = True
    if not seg and not host_added and remaining:
      raise AssertionError("unschedulable groups")
  _assign_io(fusion, steps)
  return steps


def _group_reads(fusion, g):
  return [root(fusion, x) for x in fusion.reads(g)]


def _group_writes(fusion, g):
  if g.kind == "loop":
    return list(g.outputs)
  return list(g.node.outs)


def _assign_io(fusion, steps):
  program = fusion.program
  out_roots = [root(fusion, x) for x in program.outputs if type(x) is Value]
  # values needed after each step (later reads, host steps, program outputs)
  later_reads = []
  needed = set(out_roots)
  for step in reversed(steps):
    later_reads.append(set(needed))
    if isinstance(step, Segment):
      for g in step.groups:
        needed.update(_group_reads(fusion, g))
    else:
      needed.update(root(fusion, x) for x in step.node.ins if type(x) is Value)
  later_reads.reverse()
  for step, after in zip(steps, later_reads):
    if not isinstance(step, Segment):
      continue
    written = []
    for g in step.groups:
      written.extend(_group_writes(fusion, g))
    written_set = set(written)
    ins, consts = [], []
    for g in step.groups:
      for x in _group_reads(fusion, g):
        if x in written_set:
          continue
        if x.kind == CONST:
          if x not in consts:
            consts.append(x)
        elif x not in ins:
          ins.append(x)
    step.inputs = ins
    step.consts = consts
    step.outputs = [v for v in written if v in after]
    internal = [v for v in written if v not in after]
    _plan_arena(fusion, step, internal)


def _nbytes(v):
  return max(v.size * v.dtype.itemsize, 1)


def _plan_arena(fusion, seg, internal):
  """Liveness-based first-fit offsets for the segment's internal buffers."""
  if not internal:
    return
  first, last = {}, {}
  for i, g in enumerate(seg.groups):
    # a product's epilogue writes while other blocks of the product still read its
    # operands: its outputs are live from the product on
    w = i - 1 if i and g.epilogue_of is seg.groups[i - 1] else i
    for v in _group_writes(fusion, g):
      first.setdefault(v, w)
    for x in _group_reads(fusion, g):
      last[x] = i
  live = []   # (offset, size, last_use)
  order = sorted(internal, key=lambda v: first[v])
  for v in order:
    start = first[v]
    end = last.get(v, start)
    # free blocks whose last use is before this buffer's definition
    busy = [(o, s) for (o, s, e) in live if e >= start]
    size = (_nbytes(v) + ALIGN - 1) // ALIGN * ALIGN
    off = 0
    for o, s in sorted(busy):
      if off + size <= o:
        break
      off = max(off, o + s)
    live.append((off, size, end))
    seg.arena[v] = off
    seg.arena_size = max(seg.arena_size, off + size)


def donation_candidates(fusion, steps, pairs):
  """Donated inputs whose buffer may hold an output (``pairs``: (input index, output
  index) of equal shape and dtype, from the API's donation plan).  A pair qualifies when
  the output is written by a loop kernel that is the last group reading the input, in the
  last step reading it, and no NumPy step reads the input at all (its result could be a
  view of the buffer); all aliases live in one segment (the first such pair's: one mask
  reaches one segment).  The kernel generator then checks the rest (the input is read
  only at the index being written, and before it is written) and records its verdict in
  the writer's ``group.alias_ok``.  Returns ({program input index: segment output index},
  the segment or None); sets ``seg.aliases`` ({segment output index: segment input index})
  and each writer group's ``alias_req`` ({output value: input value})."""
  program = fusion.program
  outs = program.outputs
  if not pairs:
    return {}, None
  host_reads = {root(fusion, x) for st in steps if not isinstance(st, Segment)
                for x in st.node.ins if type(x) is Value}
  found, seg = {}, None
  for i, j in pairs:
    if i >= len(program.inputs) or j >= len(outs):
      continue
    x, v = program.inputs[i], outs[j]
    # (an output that is a literal, or returned twice, takes no donated buffer; the others
    # still may)
    if type(v) is not Value or sum(o is v for o in outs) != 1:
      continue
    if x in outs or x in host_reads or x.shape != v.shape or x.dtype != v.dtype:
      continue
    k = next((k for k, st in enumerate(steps) if isinstance(st, Segment) and v in st.outputs),
             None)
    if k is None or (seg is not None and steps[k] is not seg) or x not in steps[k].inputs:
      continue
    if any(x in _group_reads(fusion, g) for st in steps[k + 1:] if isinstance(st, Segment)
           for g in st.groups):
      continue   # (NumPy steps never read x: host_reads)
    s = steps[k]
    writer = next((n for n, g in enumerate(s.groups) if v in _group_writes(fusion, g)), None)
    if writer is None:
      continue
    g = s.groups[writer]
    if g.kind != "loop" or any(x in _group_reads(fusion, h) for h in s.groups[writer + 1:]):
      continue
    if g.epilogue_of is not None and x in _group_reads(fusion, g.epilogue_of):
      continue   # an epilogue writes blocks while the product still reads x
    if v in g.alias_req or x in g.alias_req.values():
      continue
    g.alias_req[v] = x
    found[i] = s.outputs.index(v)
    seg = s
  if seg is not None:
    seg.aliases = {jo: seg.inputs.index(program.inputs[i]) for i, jo in found.items()}
  return found, seg


__all__ = ["schedule", "Segment", "HostStep", "root", "donation_candidates"]
