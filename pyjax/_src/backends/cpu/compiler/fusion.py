"""Fusion: partition a simplified program into kernels (groups).

Kinds of nodes:

- *elementwise* (``EW``): one C expression per element (``elementwise_c.supports``);
- *layout* (``LAYOUT``): ``broadcast_in_dim``, ``transpose``, ``reshape``, ``squeeze``,
  ``rev``, ``slice``, ``iota`` -- they only change which element is read, so consumers
  compute them inline at a remapped index (affine index maps);
- *reductions* (``REDUCE``): ``reduce_{sum,prod,max,min,and,or,xor}``, ``argmax/argmin``;
- ``dot_general`` on float32/float64 (``DOT``): a BLAS call; a primitive with a native
  kernel of its own (``opaque.py``: convolutions, ...) is a ``DOT`` group too;
- everything else (``HOST``): run on the NumPy backend between native kernels.

Groups are formed greedily in reverse topological order (consumers first), as XLA's
instruction fusion does: a producer joins the group of its consumers when all of them are
in one group and the join is cheap (an expensive producer -- exp, log, ... -- is never
recomputed more often than it has elements); cheap elementwise producers and layout
operations used by several groups are duplicated into each; anything else is
materialized (written to a buffer) by a group of its own.

A loop group iterates over a *full* index space (``full_shape``).  Reductions over
``axes`` of that space join a group whose space is their operand's shape: the group then
loops over the kept dimensions outside and the reduced ones inside.  When the reduced axes
are the trailing ones (*row* form), the reduction's consumers -- elementwise on the reduced
shape, or broadcast back to the full shape -- stay in the group as later *phases* of the
same outer iteration: softmax and layer-norm are one kernel each (max, then sum, then
the normalized row, all while the row is in cache).  When kept axes follow the reduced
ones (*column* form), a reduction ends the group except for elementwise consumers on the
reduced shape (an epilogue).  Index maps are affine: each access is a tuple of affine
forms ``(const, c_0, ..., c_{r-1})`` over the group's loop variables.
"""
from __future__ import annotations

import math

import numpy as np

from pyjax._src.backends.cpu.compiler import opaque, primitive_table as _table
from pyjax._src.backends.cpu.compiler.kernels import elementwise as elementwise_c
from pyjax._src.backends.cpu.compiler.ir import CONST, INPUT, Lit, Value

EW, LAYOUT, REDUCE, DOT, HOST = "ew", "layout", "reduce", "dot", "host"
LAYOUT_PRIMS = _table.LAYOUT
REDUCE_PRIMS = _table.REDUCE
ORDERED_REDUCTIONS = _table.ORDERED_REDUCTIONS
EPILOGUE_MIN = 1 << 14    # products with fewer elements run their consumers on their own


def classify(node):
  """The fusion kind of ``node``."""
  p = node.prim
  if opaque.lookup(node) is not None:  # a native kernel of its own, like a BLAS dot
    return DOT
  if len(node.outs) != 1 or node.effects:
    return HOST
  out = node.out
  if p in LAYOUT_PRIMS:
    if p == "reshape" and node.params.get("dimensions") is not None:
      return HOST
    if not elementwise_c.storable(out.dtype):
      return HOST
    return LAYOUT
  if p in REDUCE_PRIMS:
    x = node.ins[0]
    if type(x) is not Value or not elementwise_c.reduction_supported(p, x.dtype, out.dtype):
      return HOST
    return REDUCE
  if p == "dot_general":
    return DOT if _blas_dot(node) else HOST
  if elementwise_c.supports(node):
    return EW
  return HOST


def _blas_dot(node):
  lhs, rhs = node.ins
  out = node.out
  if type(lhs) is not Value or type(rhs) is not Value:
    return False
  d = out.dtype
  return d in (np.dtype(np.float32), np.dtype(np.float64)) and lhs.dtype == d and rhs.dtype == d


# --- affine forms --------------------------------------------------------------------------
def zero_form(r):
  return (0,) * (r + 1)


def var_form(r, k):
  f = [0] * (r + 1)
  f[k + 1] = 1
  return tuple(f)


def form_add(a, b):
  return tuple(x + y for x, y in zip(a, b))


def form_scale(a, s):
  return tuple(x * s for x in a)


def form_const(a, c):
  return (a[0] + c,) + a[1:]


def form_vars(forms):
  """Loop variables (indices) that ``forms`` (a tuple of forms) depend on."""
  vs = set()
  for f in forms:
    for k, c in enumerate(f[1:]):
      if c:
        vs.add(k)
  return vs


def ravel_form(forms, shape):
  """The affine form of the row-major linear index of ``forms`` into ``shape``."""
  r = len(forms[0]) - 1 if forms else None
  if r is None:
    return None
  acc = zero_form(r)
  stride = 1
  for f, d in zip(reversed(forms), reversed(shape)):
    acc = form_add(acc, form_scale(f, stride))
    stride *= d
  return acc


def elementwise_operand_forms(out_shape, x_shape, forms):
  """Forms of an elementwise operand (rank 0, or same rank with size-1 broadcasting)."""
  if len(x_shape) == 0:
    return ()
  r = len(forms[0]) - 1 if forms else 0
  off = len(out_shape) - len(x_shape)
  res = []
  for k, d in enumerate(x_shape):
    if d == 1 and out_shape[off + k] != 1:
      res.append(zero_form(r))
    else:
      res.append(forms[off + k])
  return tuple(res)


def layout_operand_access(node, forms, r):
  """The access of a layout node's operand when its output is read at ``forms``:
  ("idx", forms) or ("lin", form) (linear index into a contiguous buffer)."""
  p = node.prim
  prm = node.params
  x = node.ins[0] if node.ins else None
  out = node.out
  if p == "broadcast_in_dim":
    dims = prm["broadcast_dimensions"]
    res = []
    for k, d in enumerate(x.shape):
      if d == 1:
        res.append(zero_form(r))
      else:
        res.append(forms[dims[k]])
    return ("idx", tuple(res))
  if p == "transpose":
    perm = prm["permutation"]
    res = [None] * len(perm)
    for k, pk in enumerate(perm):
      res[pk] = forms[k]
    return ("idx", tuple(res))
  if p == "rev":
    dims = set(prm["dimensions"])
    return ("idx", tuple(form_const(form_scale(f, -1), x.shape[k] - 1) if k in dims else f
                         for k, f in enumerate(forms)))
  if p == "slice":
    starts = prm["start_indices"]
    strides = prm.get("strides") or (1,) * len(starts)
    return ("idx", tuple(form_const(form_scale(f, st), s0)
                         for f, s0, st in zip(forms, starts, strides)))
  if p == "squeeze":
    dims = set(d % max(x.ndim, 1) for d in prm["dimensions"])
    it = iter(forms)
    return ("idx", tuple(zero_form(r) if k in dims else next(it) for k in range(x.ndim)))
  if p == "reshape":
    res = _reshape_forms(x.shape, out.shape, forms, r)
    if res is not None:
      return ("idx", res)
    return ("lin", ravel_form(forms, out.shape) if forms else zero_form(r))
  raise ValueError(p)


def _reshape_forms(xs, ys, forms, r):
  if math.prod(xs) == 0:
    return tuple(zero_form(r) for _ in xs)
  xi = [k for k, d in enumerate(xs) if d != 1]
  yi = [k for k, d in enumerate(ys) if d != 1]
  res = [zero_form(r)] * len(xs)
  a = b = 0
  while a < len(xi) or b < len(yi):
    gx, gy = [xi[a]], [yi[b]]
    px, py = xs[xi[a]], ys[yi[b]]
    a += 1
    b += 1
    while px != py:
      if px < py:
        gx.append(xi[a])
        px *= xs[xi[a]]
        a += 1
      else:
        gy.append(yi[b])
        py *= ys[yi[b]]
        b += 1
    if len(gx) != 1:
      return None
    acc = zero_form(r)
    stride = 1
    for k in reversed(gy):
      acc = form_add(acc, form_scale(forms[k], stride))
      stride *= ys[k]
    res[gx[0]] = acc
  return tuple(res)


# --- groups -------------------------------------------------------------------------------
class Group:
  """A kernel: a loop group (``kind == "loop"``), a BLAS call (``"dot"``), a NumPy step
  (``"host"``) or a view (``"view"``: a reshape of a materialized value, no code)."""

  def __init__(self, gid, kind, full_shape=None):
    self.id = gid
    self.kind = kind
    self.full_shape = tuple(full_shape) if full_shape is not None else None
    self.axes = None           # reduced axes of the full space (loop groups with reductions)
    self.members = []          # nodes computed by this group
    self.forms = {}            # member node -> set of forms tuples (index of its output)
    self.outputs = []          # values this group writes to memory
    self.node = None           # the node of a dot/host/view group
    self.alias_req = {}        # output value -> donated input value sharing its buffer
    self.alias_ok = {}         # output value -> the kernel generator's verdict (plan.py)
    self.epilogue = None       # a dot group: the map group run on each block of its result
    self.epilogue_of = None    # a map group: the dot group running it as its epilogue
    self.epilogue_mode = 0     # set by the kernel generator: 0 (run on its own), 1, 2

  @property
  def rank(self):
    return len(self.full_shape)

  @property
  def form_kind(self):
    """'map' (no reductions), 'row' (reduced axes innermost) or 'col'."""
    if self.axes is None:
      return "map"
    return reduction_form(self.full_shape, self.axes)

  def kept(self):
    return [d for d in range(self.rank) if d not in self.axes]

  def eval_count(self, vars_):
    """How many times a value depending on loop variables ``vars_`` is computed."""
    shape = self.full_shape
    total = math.prod(shape)
    if not vars_:
      return 1
    fk = self.form_kind
    if fk == "map":
      nz = [d for d in range(self.rank) if shape[d] != 1]
      if not nz:
        return 1
      last = nz[-1]
      if last in vars_:
        return total
      return total // max(shape[last], 1) if shape[last] else 0
    red = set(self.axes)
    kept = [d for d in range(self.rank) if d not in red]
    ksize = math.prod(shape[d] for d in kept)
    if fk == "row":
      return total if vars_ & red else ksize
    pre, post = split_col(shape, self.axes)
    if vars_ & set(post):
      return total
    if vars_ & red:
      return math.prod(shape[d] for d in pre) * math.prod(shape[d] for d in self.axes)
    return math.prod(shape[d] for d in pre)

  def __repr__(self):
    extra = f" full={self.full_shape} axes={self.axes}" if self.kind == "loop" else ""
    return f"Group{self.id}({self.kind}{extra}: {[n.prim for n in self.members]})"


def reduction_form(shape, axes):
  axes = sorted(axes)
  nz_after = [d for d in range(len(shape)) if d > axes[-1] and shape[d] != 1] if axes else []
  if not nz_after:
    return "row"
  red = set(axes)
  # reduced axes must be one contiguous block (ignoring size-1 dims) for column form
  span = [d for d in range(axes[0], axes[-1] + 1) if shape[d] != 1]
  if all(d in red for d in span):
    return "col"
  return "row"


def split_col(shape, axes):
  """(pre-kept dims, post-kept dims) of a column-form reduction space."""
  lo, hi = min(axes), max(axes)
  pre = [d for d in range(lo) if d not in axes]
  post = [d for d in range(hi + 1, len(shape))]
  mid_kept = [d for d in range(lo, hi + 1) if d not in axes]
  return pre + mid_kept, post


def expensive(node):
  return node.prim in _table.EXPENSIVE


def _identity_forms(shape, r, dims=None):
  dims = range(len(shape)) if dims is None else dims
  return tuple(zero_form(r) if shape[i] == 1 else var_form(r, d)
               for i, d in enumerate(dims))


class Fusion:
  """The result of fusion: ``groups`` in execution order, ``materialized`` values (the
  values some group writes), ``inline`` nodes (computed wherever they are read)."""

  def __init__(self, program):
    self.program = program
    self.groups = []
    self.group_of = {}       # node -> group (members and dot/host/view nodes)
    self.inline = set()      # nodes computed inline by their readers
    self.inline_uses = {}    # inline node -> [(group, access)]
    self.materialized = set()
    self.views = {}          # value -> the value whose storage it shares (reshape views)
    self._consumers = {}
    self._run()

  # -- helpers -------------------------------------------------------------------------
  def _new_group(self, kind, full_shape=None):
    g = Group(len(self.groups), kind, full_shape)
    self.groups.append(g)
    return g

  def _uses(self, v):
    """[(group or None, access)] of value v: None means an external use (program output,
    a dot/host/view consumer)."""
    res = []
    if v in self._outset:
      res.append((None, None))
    for c in self._consumers.get(v, ()):
      g = self.group_of.get(c)
      if c in self.inline:
        for (cg, cacc) in self.inline_uses[c]:
          res.append((cg, self._operand_access(c, v, cacc, cg)))
      elif g is not None and g.kind == "loop":
        for forms in g.forms[c]:
          res.append((g, self._operand_access(c, v, ("idx", forms), g)))
      else:
        res.append((None, None))
    # distinct uses only: a value reached through chains of inlined nodes that share
    # operands (a recurrence) would otherwise count each path, exponentially many
    return list(dict.fromkeys(res)) if len(res) > 1 else res

  def _operand_access(self, c, v, cacc, g):
    """Access of ``v`` (an operand of ``c``) when ``c``'s output is read with ``cacc``."""
    if cacc is None or cacc[0] != "idx":
      return None  # ``c`` itself is only readable linearly: v cannot be computed through it
    forms = cacc[1]
    r = g.rank
    kind = self.kind[c]
    if kind == REDUCE:
      # the operand is read at the full index of the group (only for members)
      return ("idx", _identity_forms(v.shape, r))
    if kind == LAYOUT:
      return layout_operand_access(c, forms, r)
    return ("idx", elementwise_operand_forms(c.out.shape, v.shape, forms))

  # -- the pass ------------------------------------------------------------------------
  def _run(self):
    prog = self.program
    self.kind = {n: classify(n) for n in prog.nodes}
    self._outset = {x for x in prog.outputs if type(x) is Value}
    for n in prog.nodes:
      for x in n.ins:
        if type(x) is Value:
          self._consumers.setdefault(x, []).append(n)
    for n in reversed(prog.nodes):
      kind = self.kind[n]
      if kind in (DOT, HOST):
        g = self._new_group(kind)
        g.node = n
        self.group_of[n] = g
        for x in n.ins:
          if type(x) is Value:
            self._need(x)
        for o in n.outs:
          self.materialized.add(o)
        continue
      self._place(n, kind)
    self._merge_maps()
    self._order_groups()

  def _need(self, v):
    """``v`` must be in memory."""
    self.materialized.add(v)

  def _place(self, n, kind):
    v = n.out
    uses = self._uses(v)
    ext = any(g is None for g, _ in uses)
    if not uses:
      return  # dead (DCE removes these; keep the pass robust)
    lin = any(acc is not None and acc[0] == "lin" for _, acc in uses)
    groups = {g for g, _ in uses if g is not None}
    if kind == LAYOUT:
      if lin or (ext and not self._as_view(n, uses)):
        self._root(n, kind)
        return
      if ext:
        return  # a view: handled by _as_view
      self.inline.add(n)
      self.inline_uses[n] = [(g, acc) for g, acc in uses]
      return
    if lin:
      self._root(n, kind)
      return
    if len(groups) == 1:
      g = next(iter(groups))
      forms = {acc[1] for gg, acc in uses if gg is g}
      if ext and self._feeds_back(v, g):
        self._root(n, kind)
        return
      if kind == EW and self._ew_can_join(n, g, forms, ext):
        self._join(n, g, forms, ext)
        return
      if kind == REDUCE and self._reduce_can_join(n, g, forms, uses, ext):
        self._join(n, g, forms, ext)
        return
    if kind == EW and not ext and not expensive(n) and len(groups) > 1 and self._cheap_inputs(n):
      self.inline.add(n)
      self.inline_uses[n] = [(g, acc) for g, acc in uses]
      return
    self._root(n, kind)

  def _feeds_back(self, v, g):
    """Whether a non-fused consumer of ``v`` (a dot, NumPy step or view) leads back into
    group ``g``: then ``v`` cannot be an extra output of ``g`` (the groups would form a
    cycle)."""
    members = set(g.members)
    stack = [c for c in self._consumers.get(v, ())
             if c not in members and c not in self.inline]
    seen = set()
    while stack:
      c = stack.pop()
      if c in seen:
        continue
      seen.add(c)
      if c in members:
        return True
      for o in c.outs:
        stack.extend(self._consumers.get(o, ()))
    return False

  def _cheap_inputs(self, n):
    """Duplicate a cheap elementwise node into several groups only when its operands are
    in memory or are themselves cheap to recompute (bounds the duplicated work).  An
    expensive elementwise operand qualifies: read by several groups through the copies, it
    is never recomputed but written to memory (``_place``), so the copies cost a cheap
    operation each instead of a buffer (a gelu's ``1 + tanh``, which its backward pass reads
    too, next to ``tanh`` itself)."""
    for x in n.ins:
      if type(x) is Lit or x.kind in (INPUT, CONST):
        continue
      p = x.producer
      if p is None or self.kind.get(p) == REDUCE:
        return False
    return True

  def _as_view(self, n, uses):
    """An externally used reshape of a value: no code, the value's storage reshaped.
    Returns True when ``n`` became a view."""
    x = n.ins[0] if n.ins else None
    if type(x) is not Value or n.prim not in ("reshape", "squeeze", "broadcast_in_dim"):
      return False
    if n.prim == "broadcast_in_dim":
      dims = n.params["broadcast_dimensions"]
      if math.prod(x.shape) != math.prod(n.out.shape) or list(dims) != sorted(dims):
        return False
      if any(x.shape[i] != n.out.shape[d] for i, d in enumerate(dims)):
        return False
    if any(g is not None for g, _ in uses):
      return False  # also read by fused consumers: let one group materialize it
    g = self._new_group("view")
    g.node = n
    self.group_of[n] = g
    self.views[n.out] = x
    self._need(x)
    return True

  def _ew_can_join(self, n, g, forms, ext):
    if any(f is None for f in forms):
      return False
    if ext:
      if len(forms) != 1:
        return False
      f = next(iter(forms))
      if not self._covers(g, f, n.out):
        return False
    if expensive(n):
      if len(forms) != 1:
        return False
      f = next(iter(forms))
      if g.eval_count(form_vars(f)) > max(n.out.size, 1):
        return False
    if g.form_kind == "col":
      # column groups: only the reductions' operands (full level) and epilogues (kept level)
      pass
    return True

  def _covers(self, g, forms, v):
    """Whether writing ``v`` at ``forms`` in group ``g`` writes every element once."""
    used = []
    for f, d in zip(forms, v.shape):
      if d == 1:
        if any(f):
          return False
        continue
      nz = [k for k, c in enumerate(f[1:]) if c]
      if f[0] != 0 or len(nz) != 1 or f[1 + nz[0]] != 1 or g.full_shape[nz[0]] != d:
        return False
      used.append(nz[0])
    if len(set(used)) != len(used):
      return False
    return g.eval_count(set(used)) == v.size

  def _reduce_can_join(self, n, g, forms, uses, ext):
    if len(forms) != 1:
      return False
    f = next(iter(forms))
    x = n.ins[0]
    axes = tuple(sorted(n.params["axes"]))
    if len(x.shape) == 0 or not axes:
      return False
    kept = [d for d in range(x.ndim) if d not in axes]
    if g.full_shape == x.shape and (g.axes is None or tuple(g.axes) == axes):
      if _identity_forms(n.out.shape, g.rank, kept) != f:
        return False
      form = reduction_form(x.shape, axes)
      if form == "col" and self._has_full_members(g, set(axes)):
        return False
      if g.axes is None and form == "col" and any(
          form_vars(ff) & set(axes) for m in g.members for ff in g.forms[m]):
        return False
      return True
    if g.axes is None and g.full_shape == n.out.shape:
      if _identity_forms(n.out.shape, g.rank) != f:
        return False
      return True
    return False

  def _has_full_members(self, g, red):
    return any(form_vars(ff) & red for m in g.members for ff in g.forms[m]
               if self.kind[m] != REDUCE)

  def _join(self, n, g, forms, ext):
    if self.kind[n] == REDUCE:
      x = n.ins[0]
      axes = tuple(sorted(n.params["axes"]))
      kept = [d for d in range(x.ndim) if d not in axes]
      if g.axes is None and g.full_shape == n.out.shape and g.full_shape != x.shape:
        self._rebase(g, x.shape, kept)
        forms = {_identity_forms(n.out.shape, g.rank, kept)}
      g.axes = axes
    g.members.append(n)
    g.forms[n] = set(forms)
    self.group_of[n] = g
    if ext:
      g.outputs.append(n.out)
      self._need(n.out)

  def _rebase(self, g, full_shape, kept):
    """Re-express group ``g`` (looping over the reduced shape) in the reduction's full
    space: old loop variable k becomes variable kept[k]."""
    r = len(full_shape)

    def remap(f):
      nf = [f[0]] + [0] * r
      for k, c in enumerate(f[1:]):
        if c:
          nf[1 + kept[k]] += c
      return tuple(nf)
    for m in g.members:
      g.forms[m] = {tuple(remap(ff) for ff in forms) for forms in g.forms[m]}
    for c, uses in self.inline_uses.items():
      self.inline_uses[c] = [(gg, (acc[0], tuple(remap(ff) for ff in acc[1]) if acc[0] == "idx"
                                   else remap(acc[1])) if gg is g and acc is not None else acc)
                             for gg, acc in uses]
    g.full_shape = tuple(full_shape)

  def _root(self, n, kind):
    v = n.out
    if kind == REDUCE:
      x = n.ins[0]
      axes = tuple(sorted(n.params["axes"]))
      g = self._new_group("loop", x.shape)
      g.axes = axes
      kept = [d for d in range(x.ndim) if d not in axes]
      forms = _identity_forms(v.shape, g.rank, kept)
    else:
      g = self._new_group("loop", v.shape)
      forms = _identity_forms(v.shape, g.rank)
    g.members.append(n)
    g.forms[n] = {forms}
    g.outputs.append(v)
    self.group_of[n] = g
    self._need(v)

  # -- ordering --------------------------------------------------------------------------
  def reads(self, g):
    """Values group ``g`` reads from memory (in first-use order)."""
    if g.kind != "loop":
      return [x for x in g.node.ins if type(x) is Value]
    seen, out = set(), []
    members = set(g.members)

    def walk(x):
      if type(x) is not Value or x in seen:
        return
      seen.add(x)
      p = x.producer
      if p is not None and p in members:
        for y in p.ins:
          walk(y)
        return
      if x.kind in (INPUT, CONST) or x in self.materialized:
        out.append(x)
        return
      if p is not None and p in self.inline:
        for y in p.ins:
          walk(y)
        return
      raise AssertionError(f"value {x} is neither computed nor materialized")
    for m in g.members:
      for y in m.ins:
        walk(y)
    return out

  def _writers(self):
    """{materialized value: the group writing it}."""
    writer = {}
    for g in self.groups:
      for v in (g.outputs if g.kind == "loop" else g.node.outs):
        writer[v] = g
    return writer

  def _deps(self, writer):
    """{group: the groups whose values it reads}."""
    return {g: {writer[x] for x in self.reads(g) if x in writer and writer[x] is not g}
            for g in self.groups}

  # -- multi-output fusion -----------------------------------------------------------------
  def _merge_maps(self):
    """Producer-consumer multi-output fusion: an elementwise loop group P whose values a
    loop group C over the same index space reads only at the index it computes joins C,
    and C writes those of P's values that other groups still read.  The greedy pass
    materializes a value read by several groups in a group of its own (a gelu's ``tanh``,
    which its backward pass reads too); merged, a gelu layer's forward pass is one kernel
    instead of three.  A merge that would close a cycle (P feeds a group that feeds C) is
    not made."""
    if not any(g.kind == "loop" and g.axes is None for g in self.groups):
      return
    writer = self._writers()
    deps = self._deps(writer)
    users = {g: set() for g in self.groups}
    for g, ds in deps.items():
      for d in ds:
        users[d].add(g)
    gone = set()
    for c in list(self.groups):
      if c in gone or c.kind != "loop" or c.axes is not None:
        continue
      progress = True
      while progress:
        progress = False
        for p in sorted(deps[c], key=lambda g: g.id):
          if self._can_merge(p, c, users):
            self._merge(p, c, deps, users)
            gone.add(p)
            progress = True
            break
    if gone:
      self.groups = [g for g in self.groups if g not in gone]

  def _can_merge(self, p, c, users):
    if p.kind != "loop" or p.axes is not None or p.full_shape != c.full_shape:
      return False
    ident = _identity_forms(c.full_shape, c.rank)
    read = False
    for v in p.outputs:
      for g, acc in self._uses(v):
        if g is c:
          if v.shape != c.full_shape or acc != ("idx", ident) or p.forms[v.producer] != {ident}:
            return False
          read = True
    if not read:
      return False
    # no path p -> x -> c through another group (bounded search: unsure means no merge)
    stack = [x for x in users[p] if x is not c]
    seen = set()
    while stack:
      x = stack.pop()
      if x is c:
        return False
      if x in seen:
        continue
      seen.add(x)
      if len(seen) > 256:
        return False
      stack.extend(users[x])
    return True

  def _merge(self, p, c, deps, users):
    c.members.extend(p.members)
    c.forms.update(p.forms)
    for m in p.members:
      self.group_of[m] = c
    for n, uses in self.inline_uses.items():
      if any(g is p for g, _ in uses):
        self.inline_uses[n] = [(c if g is p else g, acc) for g, acc in uses]
    kept = []
    for v in p.outputs:
      if all(g is c for g, _ in self._uses(v)):
        self.materialized.discard(v)    # computed in c's loop, read nowhere else
      else:
        kept.append(v)
    c.outputs = kept + c.outputs
    deps[c] = (deps[c] | deps[p]) - {p, c}
    for d in deps[p]:
      users[d].discard(p)
      if d is not c:
        users[d].add(c)
    for u in users[p]:
      if u is not c:
        deps[u].discard(p)
        deps[u].add(c)
    users[c] = (users[c] | users[p]) - {p, c}
    del deps[p], users[p]

  def _epilogue_able(self, d, c):
    """Whether map group ``c`` (placed right after dot group ``d``) can run as ``d``'s
    epilogue: on each block of the product as soon as BLAS wrote it, while it is in cache
    (``kernels/dot.py``).  ``d`` must be a BLAS product without batch dimensions whose
    result is large enough to be split into blocks, and ``c`` must loop over the product's
    shape and read the product only at the index it computes (a block's elements only)."""
    node = d.node
    if node.prim != "dot_general" or opaque.lookup(node) is not None or not _blas_dot(node):
      return False
    (_, _), (lb, _) = node.params["dimension_numbers"]
    out = node.out
    if lb or out.size < EPILOGUE_MIN or c.full_shape != out.shape:
      return False
    ident = ("idx", _identity_forms(out.shape, c.rank))
    uses = [acc for g, acc in self._uses(out) if g is c]
    return bool(uses) and all(acc == ident for acc in uses)

  def _order_groups(self):
    order = {n: i for i, n in enumerate(self.program.nodes)}
    for g in self.groups:
      g.members.sort(key=lambda n: order[n])
    writer = self._writers()
    deps = self._deps(writer)
    pos = {n: i for i, n in enumerate(self.program.nodes)}
    key = {g: min(pos[m] for m in (g.members if g.kind == "loop" else [g.node]))
           for g in self.groups}
    done, ordered = set(), []
    remaining = sorted(self.groups, key=lambda g: key[g])
    while remaining:
      for i, g in enumerate(remaining):
        if deps[g] <= done:
          ordered.append(g)
          done.add(g)
          del remaining[i]
          break
      else:
        raise AssertionError("cyclic fusion groups")
      # elementwise consumers of a product run right after it, while its result is in
      # cache (an optimizer's ``w - lr * grad`` after the gradient's product; XLA's
      # schedule does the same), when nothing else holds them back
      if g.kind == "dot":
        for c in [c for c in remaining if g in deps[c] and c.kind == "loop"
                  and c.axes is None and deps[c] <= done]:
          if ordered[-1] is g and self._epilogue_able(g, c):
            g.epilogue, c.epilogue_of = c, g
          ordered.append(c)
          done.add(c)
          remaining.remove(c)
    self.groups = ordered
    self.deps = deps
    self.writer = writer


def fuse(program):
  """Partition ``program`` (simplified) into groups; see the module docstring."""
  return Fusion(program)
