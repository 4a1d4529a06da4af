"""C code generation for fused loop groups.

A loop group becomes one C function (a *kernel*) over the group's full index space:

- *map* kernels (no reductions): dimensions that every access walks contiguously are
  coalesced; the outer dimensions become one ``#pragma omp parallel for`` loop (above a
  work threshold) and the innermost one a ``#pragma omp simd`` loop;
- *row* kernels: a parallel loop over the kept dimensions; inside, one loop over the
  reduced dimensions per phase (reductions that depend on earlier reductions come later),
  then the full-size outputs, then the reduced-size outputs;
- *column* kernels: a parallel loop over (leading kept dims x tiles of the trailing kept
  dims); the reduced dimensions outside, the tile (``#pragma omp simd``) inside, so the
  reduction streams through memory; then the epilogue over the tile.

Floating-point sums and products follow XLA's CPU order (windows of 32 along each reduced
dimension, padded evenly at both ends, reduced sequentially, then the grid of partial
results the same way; see ``eager_reductions._arith_reduce``), so they match JAX and the
NumPy backend bit for bit.  Other reductions (max/min/integer/logical) are order-free and
use vector lanes.

Values are generated on demand from the expression DAG (members and inline nodes of the
group); every value is declared at the shallowest loop depth its indices allow
(loop-invariant hoisting), and memoized per (value, index) within its block.
"""
from __future__ import annotations

import math

import numpy as np

from pyjax._src.backends.cpu.compiler import fusion
from pyjax._src.backends.cpu.compiler.kernels import dot as dot_mod
from pyjax._src.backends.cpu.compiler.kernels import elementwise as elementwise_c
from pyjax._src.backends.cpu.compiler.kernels import vmath
from pyjax._src.backends.cpu.compiler.ir import Lit, Value
from pyjax._src.backends.cpu.compiler.kernels.reductions import TREE1_SOURCE
from pyjax._src.backends.cpu.compiler.kernels.reductions import row_lanes as _row_lanes
from pyjax._src.backends.cpu.compiler.kernels.reductions import tree1_helper as _tree1_helper

PAR_THRESHOLD = 1 << 15     # parallelize loops doing at least this much work
SPLIT_ROW_MIN = 1 << 16     # a single row this long reduces its windows in parallel
XLA_WINDOW = 32
COL_TILE = 256
TINY_SIMD = 8                # map loops over fewer elements get no simd pragma


def _dims_literal(ext):
  """A C compound literal of the extents ``ext`` (the ``dims`` argument of the tree helpers)."""
  return f"(const int64_t[{len(ext)}]){{{', '.join(map(str, ext))}}}"


def _strides(shape):
  s, acc = [], 1
  for d in reversed(shape):
    s.append(acc)
    acc *= d
  return tuple(reversed(s))


class _Block:
  __slots__ = ("lines", "depth", "id", "head")
  _ids = [0]

  def __init__(self, depth, head=()):
    self.lines = []
    self.depth = depth
    self.head = [h for h in head if h]
    _Block._ids[0] += 1
    self.id = _Block._ids[0]


class KernelGen:
  """Generates the C function of one loop group."""

  def __init__(self, fusion, group, slot_root, name):
    self.fu = fusion
    self.g = group
    self.name = name
    self.r = group.rank
    self.shape = group.full_shape
    self.members = set(group.members)
    self.slot_root = slot_root         # value -> storage root value
    self.params = []                   # root values in parameter order
    self.pnames = {}
    self.blocks = [_Block(0)]
    self.memo = {}
    self.dimexpr = {}                  # dim -> (c expr, depth)
    self.groups = None                 # coalesced dim groups: [(dims, cname, depth)]
    self.counter = 0
    self.collect = None                # set of leaf forms while collecting
    self.work = 0
    self.rowbufs = {}                  # (value id, forms) -> row buffer of an earlier phase
    self.heap_rows = []                # row buffers to free at the end of the row
    self.uses_tree1 = False            # calls a TREE1_SOURCE helper
    self.split = None                  # split row: {reduction: C call finishing it}
    # a product's epilogue (fusion.Fusion._epilogue_able): the product's column count;
    # ``tile`` becomes the form of the tile function the product calls on each block
    # (dot.emit_call): 1 linear, 2 rows x columns, 0 none (the kernel runs on its own)
    self.tile_n, self.tile = None, 0
    if group.epilogue_of is not None and not getattr(group, "alias_req", None):
      self.tile_n = dot_mod.epilogue_columns(group.epilogue_of.node)
    # donated inputs whose buffer an output of this kernel may reuse (plan.py): every read of
    # the input must be at the index being written, and before it is written
    self.alias_out = {v: slot_root(x) for v, x in getattr(group, "alias_req", {}).items()}
    self.alias_in = {x: v for v, x in self.alias_out.items()}
    self._alias_reset()

  # -- donated buffers ---------------------------------------------------------------------
  def _alias_reset(self):
    self.alias_reads = {x: set() for x in self.alias_in}   # offset forms read
    self.alias_store = {}                                   # input root -> store form
    self.alias_bad = set()

  def _alias_read(self, rx, off_form):
    """A read of donated input ``rx`` (``off_form`` None: a whole row, by pointer)."""
    if rx in self.alias_store:
      self.alias_bad.add(rx)        # read after the output sharing its buffer was written
    if off_form is not None:
      self.alias_reads[rx].add(off_form)

  def alias_verdicts(self):
    """{output value: True when it may be written into its donated input's buffer}."""
    res = {}
    for v, rx in self.alias_out.items():
      f = self.alias_store.get(rx)
      res[v] = (f is not None and rx not in self.alias_bad
                and all(r == f for r in self.alias_reads[rx]))
    return res

  # -- names ---------------------------------------------------------------------------
  def fresh(self, p="v"):
    self.counter += 1
    return f"{p}{self.counter}"

  def ptr(self, v):
    rv = self.slot_root(v)
    name = self.pnames.get(rv)
    if name is None:
      name = f"p{len(self.params)}"
      self.params.append(rv)
      self.pnames[rv] = name
    return name

  # -- blocks ----------------------------------------------------------------------------
  @property
  def depth(self):
    return len(self.blocks) - 1

  def line(self, s, depth=None):
    d = self.depth if depth is None else depth
    self.blocks[d].lines.append(s)

  def open(self, *head):
    """Open a loop body; ``head`` (pragma and ``for (...) {``) is written to the parent
    block when the body closes, after anything hoisted into the parent meanwhile."""
    b = _Block(len(self.blocks), head)
    self.blocks.append(b)
    return b

  def close(self):
    b = self.blocks.pop()
    dead = [k for k, (_, blk, _) in self.memo.items() if blk is b]
    for k in dead:
      del self.memo[k]
    parent = self.blocks[-1]
    parent.lines.extend(b.head)
    parent.lines.extend("  " + ln for ln in b.lines)
    parent.lines.append("}")

  def lookup(self, key):
    hit = self.memo.get(key)
    if hit is None:
      return None
    name, blk, depth = hit
    if depth < len(self.blocks) and self.blocks[depth] is blk:
      return name, depth
    return None

  def declare(self, key, ctype, expr, depth):
    name = self.fresh()
    self.line(f"const {ctype} {name} = {expr};", depth)
    self.memo[key] = (name, self.blocks[depth], depth)
    return name, depth

  # -- forms -----------------------------------------------------------------------------
  def form_c(self, f):
    """(C expression, depth) of the affine form ``f``."""
    if self.collect is not None:
      self.collect.add(f)
    terms = [str(f[0])] if f[0] else []
    depth = 0
    if self.groups is not None:
      for dims, cname, dep in self.groups:
        last = dims[-1]
        c = f[1 + last]
        if c:
          terms.append(f"{c}*{cname}" if c != 1 else cname)
          depth = max(depth, dep)
    else:
      for k, c in enumerate(f[1:]):
        if c and self.shape[k] != 1:
          e, dep = self.dimexpr[k]
          terms.append(f"{c}*{e}" if c != 1 else e)
          depth = max(depth, dep)
    if not terms:
      return "0", 0
    return "(" + " + ".join(terms) + ")", depth

  def offset_form(self, v, forms):
    st = _strides(v.shape)
    acc = fusion.zero_form(self.r)
    for f, s, d in zip(forms, st, v.shape):
      if d != 1:
        acc = fusion.form_add(acc, fusion.form_scale(f, s))
    return acc

  # -- values ----------------------------------------------------------------------------
  def value(self, x, forms):
    """(C expression in compute type, depth) of value ``x`` read at ``forms``."""
    if type(x) is Lit:
      return elementwise_c.literal(x.value, x.dtype), 0
    key = (x.id, forms)
    hit = self.lookup(key)
    if hit is not None:
      return hit
    rb = self.rowbufs.get(key)
    if rb is not None:   # computed by an earlier phase of this row: read it back
      buf, inner, st = rb
      if all(self.dimexpr.get(k, ("", 0))[1] > 1 for k in inner):
        lin = " + ".join(f"{s_}*{self.dimexpr[k][0]}" if s_ != 1 else self.dimexpr[k][0]
                         for s_, k in zip(st, inner))
        depth = max(self.dimexpr[k][1] for k in inner)
        return self.declare(key, elementwise_c.compute_type(x.dtype), f"{buf}[{lin}]", depth)
    p = x.producer
    if p is not None and p in self.members:
      kind = self.fu.kind[p]
      if kind == fusion.REDUCE:
        raise AssertionError(f"reduction {p} used before its phase")
      return self._compute(p, x, forms, key)
    if p is not None and p in self.fu.inline:
      return self._compute(p, x, forms, key)
    return self._load(x, self.offset_form(x, forms), key)

  def _load(self, x, off_form, key):
    if self.alias_in and self.collect is None:
      rx = self.slot_root(x)
      if rx in self.alias_in:
        self._alias_read(rx, off_form)
    off, depth = self.form_c(off_form)
    expr = elementwise_c.load(x.dtype, f"{self.ptr(x)}[{off}]")
    return self.declare(key, elementwise_c.compute_type(x.dtype), expr, depth)

  def _compute(self, p, x, forms, key):
    kind = self.fu.kind[p]
    if kind == fusion.LAYOUT:
      if p.prim == "iota":
        dim = p.params["dimension"]
        e, depth = self.form_c(forms[dim]) if x.shape[dim] != 1 else ("0", 0)
        expr = elementwise_c.convert_expr(np.dtype(np.int64), x.dtype, f"((int64_t){e})")
        return self.declare(key, elementwise_c.compute_type(x.dtype), expr, depth)
      acc = fusion.layout_operand_access(p, forms, self.r)
      y = p.ins[0]
      if acc[0] == "idx":
        return self.value(y, acc[1])
      if type(y) is Lit:
        return elementwise_c.literal(y.value, y.dtype), 0
      return self._load(y, acc[1], ("lin", y.id, acc[1]))
    args, depth = [], 0
    for y in p.ins:
      yf = fusion.elementwise_operand_forms(x.shape, y.shape, forms) if type(y) is Value else ()
      e, d = self.value(y, yf)
      args.append(e)
      depth = max(depth, d)
    expr = elementwise_c.lower(p, args)
    self.work += 8 if fusion.expensive(p) else 1
    return self.declare(key, elementwise_c.compute_type(x.dtype), expr, depth)

  def store(self, v, forms, expr_depth):
    rx = self.alias_out.get(v)
    if rx is not None and self.collect is None:
      # the donated input is loaded at this index before the output overwrites it
      # (memoized: later uses in this iteration read the register, not the memory)
      self.value(rx, forms)
      f = self.offset_form(v, forms)
      if self.alias_store.setdefault(rx, f) != f:
        self.alias_bad.add(rx)
    expr, d = expr_depth
    off, od = self.form_c(self.offset_form(v, forms))
    self.line(f"{self.ptr(v)}[{off}] = {elementwise_c.store(v.dtype, expr)};", max(d, od))

  # -- generation --------------------------------------------------------------------------
  def _set_parallel(self, n, work_per_iter):
    """The range function's parallel loop has ``n`` iterations of about
    ``work_per_iter`` operations; parallel when the total is worth a thread hand-off."""
    self.par_n = n
    self.par = n > 1 and n * work_per_iter >= PAR_THRESHOLD
    self.grain = max(1, -(-(PAR_THRESHOLD // 2) // max(work_per_iter, 1)))

  def generate(self):
    self.par_n, self.par, self.grain = 1, False, 1
    kind = self.g.form_kind
    split = self._split_plan() if kind == "row" else None
    if split is not None:
      return self._generate_split(*split)
    if kind == "map":
      body = self._map()
    elif kind == "row":
      body = self._row()
    else:
      body = self._col()
    src = [TREE1_SOURCE] if self.uses_tree1 else []
    if self.tile == 2:   # an epilogue over rows [lo, hi) and columns [c0, c1) of a product
      src += self._range_function("tile", body, cols=True)
      src.append(f"static void {self.name}_range(void *ctx, int64_t lo, int64_t hi) {{ "
                 f"{self.name}_tile(ctx, lo, hi, 0, {self.tile_n}); }}")
    else:
      src += self._range_function("range", body)
    if self.tile == 1:   # an epilogue over elements [lo, hi) of a product
      src.append(f"static void {self.name}_tile(void *ctx, int64_t lo, int64_t hi, "
                 f"int64_t c0, int64_t c1) {{ (void)c0; (void)c1; {self.name}_range(ctx, lo, hi); }}")
    src.append(f"static void {self.name}(void *const *P) {{")
    if self.par:
      src.append(f"  if (pj_parallel_for) pj_parallel_for({self.name}_range, (void *)P, "
                 f"{self.par_n}, {self.grain});")
      src.append(f"  else {self.name}_range((void *)P, 0, {self.par_n});")
    else:
      src.append(f"  {self.name}_range((void *)P, 0, {self.par_n});")
    src.append("}")
    return "\n".join(src) + "\n"

  def _range_function(self, suffix, body, parts=(), cols=False):
    """``static void <name>_<suffix>(void *ctx, int64_t lo, int64_t hi)``: ``ctx`` holds
    the parameters' pointers (after the ``parts`` buffers' of a split row); ``cols``: two
    more parameters, ``int64_t c0, int64_t c1``, bound the innermost loop."""
    outs = set(self.g.outputs)
    decls = [f"void *const *P = (void *const *)ctx + {len(parts)};" if parts else
             "void *const *P = (void *const *)ctx;", "(void)P; (void)lo; (void)hi;"]
    for i, (name, ct) in enumerate(parts):
      decls.append(f"{ct} *{name} = ({ct} *)((void *const *)ctx)[{i}];")
    for i, rv in enumerate(self.params):
      t = elementwise_c.storage_type(rv.dtype)
      const = "" if rv in outs else "const "
      # an output and the donated input whose buffer it may reuse can be the same memory
      res = "" if (rv in self.alias_in or rv in self.alias_out) else "restrict "
      decls.append(f"{const}{t} *{res}{self.pnames[rv]} = ({const}{t} *)P[{i}];")
    extra = ", int64_t c0, int64_t c1" if cols else ""
    return ([f"static void {self.name}_{suffix}(void *ctx, int64_t lo, int64_t hi{extra}) {{"]
            + ["  " + ln for ln in decls + body] + ["}"])

  # -- split rows: one long row's XLA-order sums, the heavy part in parallel --------------
  def _split_plan(self):
    """(reduced dims, the reductions) when this row kernel is a single row (every kept
    dimension 1) of at least SPLIT_ROW_MIN elements whose reductions are all float32/float64
    sums or products (XLA's window order) in the first phase, whose outputs all have the
    reduced shape, and which the vectorized helpers reduce (one dimension, or up to 8 with
    the last longer than a window); else None."""
    g = self.g
    if self.alias_out or any(self.shape[k] != 1 for k in g.kept()):
      return None
    red = set(g.axes)
    inner = [k for k in g.axes if self.shape[k] != 1]
    ext = [self.shape[k] for k in inner]
    if (not inner or len(inner) > 8 or math.prod(ext) < SPLIT_ROW_MIN
            or (len(inner) > 1 and ext[-1] <= XLA_WINDOW)):
      return None
    reds = [m for m in g.members if self.fu.kind[m] == fusion.REDUCE]
    phase = self._phases()
    if not reds or any(m.prim not in fusion.ORDERED_REDUCTIONS or phase[m] != 1
                       or _tree1_helper(m.prim, m.ins[0].dtype) is None for m in reds):
      return None
    if any(fusion.form_vars(self._out_forms(m)) & red for _, m in self._outputs()):
      return None
    if len(inner) > 1 and all(self._direct_row(m.ins[0], inner, _strides(ext),
                                                 self._full_forms()) for m in reds):
      return None   # nothing to compute: the helper itself runs in parallel
    return inner, reds

  def _generate_split(self, inner, reds):
    """Two passes.  ``<name>_win`` runs in parallel: over one dimension it computes the
    first-level window sums of every reduction for a range of windows (the operand computed
    in blocks of 64 windows on the stack); over several it computes the operands into row
    buffers, a range of the first dimension at a time.  Then ``<name>_range`` finishes the
    reductions in XLA's order (``pj_tree1_*`` on the window sums, ``pj_treen_*`` on the
    buffers: bit-identical to one pass) and writes the outputs."""
    ext = [self.shape[k] for k in inner]
    n = math.prod(ext)
    wg = KernelGen(self.fu, self.g, self.slot_root, self.name)
    wg.params, wg.pnames = self.params, self.pnames      # one parameter list for both
    if len(inner) == 1:
      units = -(-n // XLA_WINDOW)
      pad = (units * XLA_WINDOW - n) // 2
      parts = [(f"pj_part{i}", elementwise_c.compute_type(m.ins[0].dtype), units) for i, m in enumerate(reds)]
      wbody = wg._row_windows(inner[0], n, reds, pad, [p for p, _, _ in parts])
      self.split = {m: f"{_tree1_helper(m.prim, m.ins[0].dtype)}({p}, {units})"
                    for m, (p, _, _) in zip(reds, parts)}
      per_unit = XLA_WINDOW
    else:
      units = ext[0]
      dims = _dims_literal(ext)
      bufs, computed = wg._row_fill(inner, reds)
      parts = [(f"pj_part{i}", elementwise_c.compute_type(m.ins[0].dtype), n) for i, m in enumerate(computed)]
      bufs.update((m, p) for m, (p, _, _) in zip(computed, parts))
      self.split = {m: f"{_tree1_helper(m.prim, m.ins[0].dtype).replace('tree1', 'treen')}"
                       f"({bufs[m]}, {len(inner)}, {dims})" for m in reds}
      wbody = wg._row_fill_body
      per_unit = n // units
    body = self._row()
    grain = max(1, -(-(PAR_THRESHOLD // 2) // (per_unit * max(wg.work, 1))))
    ptypes = [(p, ct) for p, ct, _ in parts]
    src = [TREE1_SOURCE]
    src += self._range_function("win", wbody, ptypes)
    src += self._range_function("range", body, ptypes)
    src.append(f"static void {self.name}(void *const *P) {{")
    src.append(f"  void *Q[{len(parts) + len(self.params)}];")
    for i, (p, ct, size) in enumerate(parts):
      src.append(f"  Q[{i}] = pj_scratch(sizeof({ct}) * {size});")
    src.append(f"  for (int i = 0; i < {len(self.params)}; i++) Q[{len(parts)} + i] = P[i];")
    src.append(f"  if (pj_parallel_for) pj_parallel_for({self.name}_win, (void *)Q, {units}, "
               f"{grain});")
    src.append(f"  else {self.name}_win((void *)Q, 0, {units});")
    src.append(f"  {self.name}_range((void *)Q, 0, 1);")
    src.append(f"  for (int i = 0; i < {len(parts)}; i++) pj_unscratch(Q[i]);")
    src.append("}")
    return "\n".join(src) + "\n"

  def _row_fill(self, inner, reds):
    """The body of ``<name>_win`` over several dimensions (kept in ``_row_fill_body``): the
    operands of the reductions that do not read an input in place, computed into the
    ``pj_part<i>`` buffers for the first inner dimension's range [lo, hi).  Returns
    ({reduction: pointer read in place}, the computed reductions)."""
    for j in range(self.r):
      if j not in inner:
        self.dimexpr[j] = ("0", 0)
    full = self._full_forms()
    ext = [self.shape[k] for k in inner]
    st = _strides(ext)
    direct, computed = {}, []
    for m in reds:
      d = self._direct_row(m.ins[0], inner, st, full)
      if d is not None:
        direct[m] = d
      else:
        computed.append(m)
    specs = []
    for j, k in enumerate(inner):
      lo = "lo" if j == 0 else "0"
      hi = "hi" if j == 0 else str(self.shape[k])
      specs.append((f"for (int64_t i{k} = {lo}; i{k} < {hi}; i{k}++)", [],
                    "#pragma omp simd" if j == len(inner) - 1 else None))
      self.dimexpr[k] = (f"i{k}", self.depth + 1 + j)
    lin = " + ".join(f"{s_}*i{k}" if s_ != 1 else f"i{k}" for s_, k in zip(st, inner))

    def body():
      for i, m in enumerate(computed):
        e, _ = self.value(m.ins[0], full)
        self.line(f"pj_part{i}[{lin}] = {e};")
    self._nested(specs, body)
    self._row_fill_body = self.close_all()
    return direct, computed

  def _row_windows(self, k, n, reds, pad, parts):
    """The body of ``<name>_win``: windows [lo, hi) of the row, in blocks of 64."""
    for j in range(self.r):
      if j != k:
        self.dimexpr[j] = ("0", 0)
    full = self._full_forms()
    blk = 64 * XLA_WINDOW
    self.open(None, "for (int64_t pj_c0 = lo; pj_c0 < hi; pj_c0 += 64) {")
    self.line("const int64_t pj_c1 = pj_c0 + 64 < hi ? pj_c0 + 64 : hi;")
    self.line(f"const int64_t pj_e0 = pj_c0 * {XLA_WINDOW} - {pad} > 0 ? "
              f"pj_c0 * {XLA_WINDOW} - {pad} : 0;")
    self.line(f"const int64_t pj_e1 = pj_c1 * {XLA_WINDOW} - {pad} < {n} ? "
              f"pj_c1 * {XLA_WINDOW} - {pad} : {n};")
    srcs, computed = {}, []
    for m in reds:
      direct = self._direct_row(m.ins[0], [k], (1,), full)
      if direct is not None:
        srcs[m] = (direct, "0")
      else:
        b = self.fresh("blk")
        self.line(f"{elementwise_c.compute_type(m.ins[0].dtype)} {b}[{blk}];")
        srcs[m] = (b, "pj_e0")
        computed.append(m)
    if computed:
      self.dimexpr[k] = (f"i{k}", self.depth + 1)

      def body():
        for m in computed:
          e, _ = self.value(m.ins[0], full)
          self.line(f"{srcs[m][0]}[i{k} - pj_e0] = {e};")
      self._nested([(f"for (int64_t i{k} = pj_e0; i{k} < pj_e1; i{k}++)", [],
                     "#pragma omp simd")], body)
    for m, part in zip(reds, parts):
      b, e0 = srcs[m]
      self.line(f"{_tree1_helper(m.prim, m.ins[0].dtype)}_win({b}, {e0}, {n}, pj_c0, pj_c1, "
                f"{part});")
    self.close()
    return self.close_all()

  def _out_forms(self, m):
    return next(iter(self.g.forms[m]))

  def _outputs(self):
    return [(v, v.producer) for v in self.g.outputs]

  # map kernels ---------------------------------------------------------------------------
  def _leaf_forms(self, emit):
    """Run ``emit`` in collect mode: the set of forms of every memory access."""
    saved = (self.blocks, self.memo, self.counter, self.params[:], dict(self.pnames))
    self.blocks = [_Block(0)]
    self.memo = {}
    self.collect = set()
    self.dimexpr = {k: (f"i{k}", 0) for k in range(self.r)}
    self.groups = None
    emit()
    forms = self.collect
    work = self.work
    self.collect = None
    self.blocks, self.memo, self.counter, params, pnames = saved
    self.params[:] = params
    self.pnames.clear()
    self.pnames.update(pnames)
    self.work = 0
    self._alias_reset()
    return forms, work

  def _coalesce(self, dims, forms):
    """Group consecutive ``dims`` (extents > 1) that every form walks as one."""
    dims = [d for d in dims if self.shape[d] != 1]
    groups = []
    for d in dims:
      if groups:
        prev = groups[-1][-1]
        ok = all(f[1 + prev] == f[1 + d] * self.shape[d] for f in forms)
        if ok:
          groups[-1].append(d)
          continue
      groups.append([d])
    return groups

  def _emit_map_body(self):
    for v, m in self._outputs():
      forms = self._out_forms(m)
      self.store(v, forms, self.value(v, forms))

  def _map(self):
    forms, op_work = self._leaf_forms(self._emit_map_body)
    groups = self._coalesce(range(self.r), forms)
    total = math.prod(self.shape)
    ext = [math.prod(self.shape[d] for d in grp) for grp in groups]
    if not groups:
      self.groups = []
      self._emit_map_body()
      return self.close_all()
    work = total * max(op_work, 1)
    if len(groups) == 1:
      self.groups = [(groups[0], "m0", 1)]
      if self.tile_n is not None:
        self.tile = 1   # linear over the product's elements: a block's rows, or row parts
      self._set_parallel(ext[0], max(op_work, 1))
      # a handful of elements: scalar code (a libmvec call on a mostly empty vector costs
      # more than a few scalar libm calls, which overlap; it matters in loop bodies)
      pragma = "#pragma omp simd" if ext[0] >= TINY_SIMD else None
      return self._loop_nest([("m0", None, pragma)], self._emit_map_body)
    outer = ext[:-1]
    n_outer = math.prod(outer)
    inner_name = f"m{len(groups) - 1}"
    self.groups = [(grp, f"m{i}", 1) for i, grp in enumerate(groups[:-1])]
    self.groups.append((groups[-1], inner_name, 2))
    decomp = self._decompose("o", [(f"m{i}", e) for i, e in enumerate(outer)])
    self._set_parallel(n_outer, max(work // max(n_outer, 1), 1))
    inner = ext[-1]
    if self.tile_n is not None and inner == self.tile_n:
      self.tile = 2   # rows of the product outside, its columns inside: any block of it
      inner = ("c0", "c1")
    return self._loop_nest([("o", None, None, decomp), (inner_name, inner, "#pragma omp simd")],
                           self._emit_map_body)

  def _decompose(self, lin, pairs):
    """Lines defining each (name, extent) from the row-major linear index ``lin``."""
    if len(pairs) == 1:
      return [f"const int64_t {pairs[0][0]} = {lin};"]
    lines = []
    stride = 1
    for name, e in reversed(pairs):
      if stride == 1:
        lines.append(f"const int64_t {name} = {lin} % {e};")
      else:
        lines.append(f"const int64_t {name} = ({lin} / {stride}) % {e};")
      stride *= e
    return lines

  def _loop_nest(self, loops, body):
    """Nested loops [(var, extent, pragma[, prologue lines])] around ``body()``."""
    for spec in loops:
      var, e, pragma = spec[:3]
      pro = spec[3] if len(spec) > 3 else []
      if e is None:  # the parallel loop: [lo, hi) of the range function
        self.open(pragma, f"for (int64_t {var} = lo; {var} < hi; {var}++) {{")
      elif isinstance(e, tuple):   # bounds held by variables
        self.open(pragma, f"for (int64_t {var} = {e[0]}; {var} < {e[1]}; {var}++) {{")
      else:
        self.open(pragma, f"for (int64_t {var} = 0; {var} < {e}; {var}++) {{")
      for ln in pro:
        self.line(ln)
    body()
    return self.close_all()

  def close_all(self):
    while len(self.blocks) > 1:
      self.close()
    return self.blocks[0].lines

  def _nested(self, spec_list, body):
    """Emit nested loops (each spec: (header line, [prologue], pragma or None)) and
    ``body`` inside; lines are appended to the current block."""
    depth0 = self.depth
    for header, pro, pragma in spec_list:
      self.open(pragma, header + " {")
      for ln in pro:
        self.line(ln)
    body()
    while self.depth > depth0:
      self.close()

  # row kernels ---------------------------------------------------------------------------
  def _phases(self):
    """Reductions by phase, and the phase of every member (0 = before any reduction)."""
    g = self.g
    phase = {}
    members = self.members

    def dep_phase(x, seen):
      if type(x) is not Value:
        return 0
      p = x.producer
      if p is None or x in seen:
        return 0
      seen.add(x)
      if p in members:
        if self.fu.kind[p] == fusion.REDUCE:
          return node_phase(p)
        return max([dep_phase(y, seen) for y in p.ins] + [0])
      if p in self.fu.inline:
        return max([dep_phase(y, seen) for y in p.ins] + [0])
      return 0

    def node_phase(n):
      if n in phase:
        return phase[n]
      ph = max([dep_phase(y, set()) for y in n.ins] + [0])
      if self.fu.kind[n] == fusion.REDUCE:
        ph += 1
      phase[n] = ph
      return ph
    for m in g.members:
      node_phase(m)
    return phase

  def _red_info(self, n):
    x = n.ins[0]
    return x, x.dtype

  def _row(self):
    g = self.g
    red = list(g.axes)
    kept = g.kept()
    for k in kept:
      self.dimexpr[k] = (f"i{k}", 1)
    phase = self._phases()
    reductions = [m for m in g.members if self.fu.kind[m] == fusion.REDUCE]
    nphase = max([phase[m] for m in reductions] + [0])
    n_outer = math.prod(self.shape[k] for k in kept)
    n_red = math.prod(self.shape[k] for k in red)
    red_set = set(red)
    full_outs, outer_outs = [], []
    for v, m in self._outputs():
      fvars = fusion.form_vars(self._out_forms(m))
      (full_outs if fvars & red_set else outer_outs).append((v, m))
    # which loop writes each full-size output
    out_phase = {}
    for v, m in full_outs:
      ph = phase[m] if self.fu.kind[m] != fusion.REDUCE else phase[m]
      out_phase[v] = ph + 1 if ph < nphase else nphase + 1
    kept_pairs = [(f"i{k}", self.shape[k]) for k in kept]
    decomp = self._decompose("o", kept_pairs) if kept_pairs else []
    self._set_parallel(n_outer if kept else 1, max(n_red, 1) * (nphase + 1) * 2)
    self.open(None, "for (int64_t o = lo; o < hi; o++) {")
    for ln in decomp:
      self.line(ln)
    for ph in range(1, nphase + 2):
      reds = [m for m in reductions if phase[m] == ph]
      outs = [(v, v.producer) for v, _ in full_outs if out_phase[v] == ph]
      if not reds and not outs:
        continue
      self._phase_loop(red, reds, outs)
    for v, m in outer_outs:
      forms = self._out_forms(m)
      self.store(v, forms, self.value(v, forms))
    for b in self.heap_rows:
      self.line(f"pj_unscratch({b});")
    self.close()
    return self.close_all()

  def _full_forms(self):
    return tuple(fusion.var_form(self.r, k) if self.shape[k] != 1 else fusion.zero_form(self.r)
                 for k in range(self.r))

  def _phase_loop(self, red, reds, outs):
    """The loops of one phase: ordered float sums/products (XLA's order, with any
    order-free reductions), arg reductions (sequential) and the rest (vector lanes)."""
    ordered = [m for m in reds if m.prim in fusion.ORDERED_REDUCTIONS and elementwise_c.is_float(m.ins[0].dtype)]
    args = [m for m in reds if m.prim in ("argmax", "argmin")]
    rest = [m for m in reds if m not in ordered and m not in args]
    loops = []
    if ordered:
      inner = [k for k in red if self.shape[k] != 1]
      if 0 < len(inner) <= 8:
        loops.append(("tree", ordered))
      else:   # the lanes order's sums (any number of dimensions) apart from XLA's loops
        lanes = [m for m in ordered if self._lanes(m)]
        if lanes:
          loops.append(("tree", lanes))
        xla = [m for m in ordered if m not in lanes]
        if xla:
          loops.append(("xla", xla + rest))
          rest = []
    if args:
      loops.append(("seq", args + rest))
      rest = []
    if rest:
      loops.append(("lanes", rest))
    if not loops:
      loops.append(("seq", []))
    for i, (mode, ms) in enumerate(loops):
      self._one_loop(red, ms, outs if i == 0 else [], mode)

  def _one_loop(self, red, reds, outs, mode):
    full = self._full_forms()
    accs = {m: self.fresh("acc") for m in reds}
    for m in reds:
      self._init_acc(m, accs[m])

    def element(names=None):
      names = accs if names is None else names
      for m in reds:
        self._accumulate(m, names[m], full)
      for v, m in outs:
        forms = self._out_forms(m)
        self.store(v, forms, self.value(v, forms))

    inner = [k for k in red if self.shape[k] != 1]
    for k in red:
      if self.shape[k] == 1:
        self.dimexpr[k] = ("0", 0)
    if mode == "tree":
      self._tree_loop(inner, reds, accs, outs, full)
    elif mode == "xla":
      self._xla_loops(inner, reds, accs, element)
    elif mode == "lanes" and inner and self.shape[inner[-1]] >= 32 and not outs:
      self._lane_loops(inner, reds, accs, full)
    else:
      specs = []
      for j, k in enumerate(inner):
        pragma = "#pragma omp simd" if (not reds and j == len(inner) - 1) else None
        specs.append((f"for (int64_t i{k} = 0; i{k} < {self.shape[k]}; i{k}++)", [], pragma))
        self.dimexpr[k] = (f"i{k}", self.depth + 1 + j)
      self._nested(specs, element)
    for m in reds:
      self._finish_acc(m, accs[m])

  def _init_acc(self, m, acc):
    x = m.ins[0]
    ct = elementwise_c.compute_type(x.dtype)
    self.line(f"{ct} {acc} = {elementwise_c.identity_literal(m.prim, x.dtype)};")
    if m.prim in ("argmax", "argmin"):
      self.line(f"int64_t {acc}_i = 0;")

  def _accumulate(self, m, acc, full, lane=None):
    x = m.ins[0]
    e, _ = self.value(x, full)
    a = acc if lane is None else f"{acc}_l[{lane}]"
    if m.prim in ("argmax", "argmin"):
      axis = m.params["axes"][0]
      idx, _ = self.form_c(full[axis]) if self.shape[axis] != 1 else ("0", 0)
      op = ">" if m.prim == "argmax" else "<"
      if elementwise_c.is_float(x.dtype):
        cond = f"!({a} != {a}) && ({e} {op} {a} || {e} != {e})"
      else:
        cond = f"{e} {op} {a}"
      self.line(f"if ({cond}) {{ {a} = {e}; {acc}_i = {idx}; }}")
      return
    self.line(f"{a} = {elementwise_c.combine(m.prim, x.dtype, a, e)};")

  def _finish_acc(self, m, acc):
    """Define the reduction's result (memoized at the current depth)."""
    x = m.ins[0]
    v = m.out
    forms = self._out_forms(m)
    if m.prim in ("argmax", "argmin"):
      expr = f"(({elementwise_c.compute_type(v.dtype)}){acc}_i)"
    elif m.prim == "reduce_sum" and elementwise_c.is_float(x.dtype):
      zero = "0.0" if x.dtype == elementwise_c.F64 else "0.0f"
      expr = elementwise_c.round_to(x.dtype, f"({acc} + {zero})")  # XLA's fold starts from +0
    else:
      expr = acc
    self.declare((v.id, forms), elementwise_c.compute_type(v.dtype), expr, self.depth)

  def _lane_loops(self, inner, reds, accs, full):
    """Order-free reductions: the innermost dimension split into vector lanes (at most 64
    bytes of each accumulator: more lanes spill on AVX2/AVX-512, a 1000-float row's max ran
    2x slower with 64).  Float max/min keep the larger (smaller) value per lane with one
    compare, ignoring NaNs, plus a NaN flag; a segment whose result is a zero is scanned
    again for the zero of the right sign (XLA orders -0.0 below +0.0: `max(-0, +0)` is +0
    wherever it occurs), which only rows whose extreme is 0 pay."""
    outer_dims, last = inner[:-1], inner[-1]
    n = self.shape[last]
    width = max(4 if elementwise_c.is_half(m.ins[0].dtype) else np.dtype(m.ins[0].dtype).itemsize
                for m in reds)
    cap = max(8, 64 // width)
    lanes = 8
    while lanes < cap and lanes * 4 <= n:
      lanes *= 2
    specs = []
    for j, k in enumerate(outer_dims):
      specs.append((f"for (int64_t i{k} = 0; i{k} < {self.shape[k]}; i{k}++)", [], None))
      self.dimexpr[k] = (f"i{k}", self.depth + 1 + j)
    keyed = {m for m in reds if m.prim in ("reduce_max", "reduce_min") and elementwise_c.is_float(m.ins[0].dtype)}

    def ftype(m):
      return "double" if m.ins[0].dtype == elementwise_c.F64 else "float"

    def acc_elem(m, a_m, a_n, lane):
      """Accumulate one element into value/NaN accumulators (or the plain accumulator)."""
      x = m.ins[0]
      if m not in keyed:
        self._accumulate(m, accs[m], full, lane=lane)
        return
      e, _ = self.value(x, full)
      op = ">" if m.prim == "reduce_max" else "<"
      self.line(f"{a_m} = {e} {op} {a_m} ? {e} : {a_m};")
      self.line(f"{a_n} |= ({e} != {e});")

    def fix_zero(m, a):
      """The segment's extreme is a zero: +0 for max if any element is +0, else -0 (min:
      -0 if any element is -0)."""
      x = m.ins[0]
      ft = ftype(m)
      it = "uint64_t" if ft == "double" else "uint32_t"
      want = "0" if m.prim == "reduce_max" else ("0x8000000000000000ULL" if ft == "double"
                                                 else "0x80000000u")
      z = self.fresh("z")
      self.open(None, f"if (!{a}_n0 && {a}_m0 == 0) {{")
      self.line(f"int {z} = 0;")
      self.open(f"#pragma omp simd reduction(|:{z})",
                f"for (int64_t i{last} = 0; i{last} < {n}; i{last}++) {{")
      self.dimexpr[last] = (f"i{last}", self.depth)
      e, _ = self.value(x, full)
      self.line(f"{z} |= (({{ union {{ {ft} f; {it} i; }} pj_b_ = {{ .f = {e} }}; pj_b_.i; }}) "
                f"== {want});")
      self._close_into()
      pos, neg = f"({ft})0", f"-({ft})0"
      first, second = (pos, neg) if m.prim == "reduce_max" else (neg, pos)
      self.line(f"{a}_m0 = {z} ? {first} : {second};")
      self._close_into()

    def body():
      for m in reds:
        x = m.ins[0]
        if m in keyed:
          ft = ftype(m)
          start = "-INFINITY" if m.prim == "reduce_max" else "INFINITY"
          self.line(f"{ft} {accs[m]}_m[{lanes}]; int32_t {accs[m]}_n[{lanes}];")
          self.line(f"for (int pj_l = 0; pj_l < {lanes}; pj_l++) {{ {accs[m]}_m[pj_l] = "
                    f"({ft}){start}; {accs[m]}_n[pj_l] = 0; }}")
          self.line(f"{ft} {accs[m]}_m0 = ({ft}){start}; int32_t {accs[m]}_n0 = 0;")
        else:
          ct = elementwise_c.compute_type(x.dtype)
          ident = elementwise_c.identity_literal(m.prim, x.dtype)
          self.line(f"{ct} {accs[m]}_l[{lanes}];")
          self.line(f"for (int pj_l = 0; pj_l < {lanes}; pj_l++) {accs[m]}_l[pj_l] = {ident};")
      jv = self.fresh("jv")
      self.line(f"int64_t {jv} = 0;")
      self.open(None, f"for (; {jv} + {lanes} <= {n}; {jv} += {lanes}) {{")
      self.open("#pragma omp simd", f"for (int pj_l = 0; pj_l < {lanes}; pj_l++) {{")
      self.line(f"const int64_t i{last} = {jv} + pj_l;")
      self.dimexpr[last] = (f"i{last}", self.depth)
      for m in reds:
        acc_elem(m, f"{accs[m]}_m[pj_l]", f"{accs[m]}_n[pj_l]", "pj_l")
      self._close_into()
      self._close_into()
      self.open(None, f"for (int64_t i{last} = {jv}; i{last} < {n}; i{last}++) {{")
      self.dimexpr[last] = (f"i{last}", self.depth)
      for m in reds:
        acc_elem(m, f"{accs[m]}_m0", f"{accs[m]}_n0", None)
      self._close_into()
      for m in reds:
        x = m.ins[0]
        if m in keyed:
          ft = ftype(m)
          op = ">" if m.prim == "reduce_max" else "<"
          a = accs[m]
          self.line(f"for (int pj_l = 0; pj_l < {lanes}; pj_l++) {{ {a}_m0 = {a}_m[pj_l] {op} "
                    f"{a}_m0 ? {a}_m[pj_l] : {a}_m0; {a}_n0 |= {a}_n[pj_l]; }}")
          fix_zero(m, a)
          self.line(f"{{ {ft} pj_f_ = {a}_n0 ? ({ft})NAN : {a}_m0; "
                    f"{a} = {elementwise_c.combine(m.prim, x.dtype, a, 'pj_f_')}; }}")
        else:
          self.line(f"for (int pj_l = 0; pj_l < {lanes}; pj_l++) {accs[m]} = "
                    f"{elementwise_c.combine(m.prim, x.dtype, accs[m], accs[m] + '_l[pj_l]')};")
    self._nested(specs, body)

  def _close_into(self):
    self.close()

  def _xla_levels(self, dims):
    """XLA's CPU tree reduction of the reduced ``dims``: per split level, (window,
    grid, pad) per dimension, finest first."""
    sizes = [self.shape[k] for k in dims]
    levels = []
    while any(s > XLA_WINDOW for s in sizes):
      wins = [XLA_WINDOW if s > XLA_WINDOW else s for s in sizes]
      grid = [-(-s // w) for s, w in zip(sizes, wins)]
      pads = [(gq * w - s) // 2 for s, w, gq in zip(sizes, wins, grid)]
      levels.append((sizes, wins, grid, pads))
      sizes = grid
    return levels, sizes

  def _tree_loop(self, inner, reds, accs, outs, full):
    """Ordered float sums/products over the reduced dimensions ``inner`` of a row: the
    operand is computed into a row buffer by a vectorized loop (or read in place when it is
    a contiguous input row), then reduced in XLA's order by the ``pj_tree_*`` helper."""
    if self.split is not None:   # the heavy part ran in <name>_win
      for m in reds:
        self.line(f"{accs[m]} = {self.split[m]};")
      return
    ext = [self.shape[k] for k in inner]
    n = math.prod(ext)
    st = _strides(ext)
    dims = _dims_literal(ext)
    bufs = {}
    computed = []
    squares = set()
    for m in reds:
      x = m.ins[0]
      ct = elementwise_c.compute_type(x.dtype)
      direct = self._direct_row(x, inner, st, full)
      if direct is not None:
        bufs[m] = (direct, self.slot_root(x))
        continue
      sq = self._squared_row(m, inner, st, full)
      if sq is not None:   # sum(a * a) of a row read in place: squared as it is summed
        base, ptr = sq
        bufs[m] = (ptr, self.slot_root(base))
        squares.add(m)
        continue
      b = self.fresh("row")
      if n <= 4096:
        self.line(f"{ct} {b}[{n}];")
        bufs[m] = (b, None)
      else:
        self.line(f"{ct} *{b} = ({ct} *)pj_scratch(sizeof({ct}) * {n});")
        bufs[m] = (b, None)
        self.heap_rows.append(b)
      computed.append(m)
    if computed or outs:
      specs = []
      for j, k in enumerate(inner):
        pragma = "#pragma omp simd" if j == len(inner) - 1 else None
        specs.append((f"for (int64_t i{k} = 0; i{k} < {self.shape[k]}; i{k}++)", [], pragma))
        self.dimexpr[k] = (f"i{k}", self.depth + 1 + j)
      lin = " + ".join(f"{s_}*i{k}" if s_ != 1 else f"i{k}" for s_, k in zip(st, inner))

      def body():
        for m in computed:
          e, _ = self.value(m.ins[0], full)
          self.line(f"{bufs[m][0]}[{lin}] = {e};")
        for v, mm in outs:
          forms = self._out_forms(mm)
          self.store(v, forms, self.value(v, forms))
      self._nested(specs, body)
    for m in reds:
      b, direct_root = bufs[m]
      x = m.ins[0]
      if direct_root in self.alias_in:
        self._alias_read(direct_root, None)
      fast = _tree1_helper(m.prim, x.dtype)
      if m in squares:
        fast = fast.replace("tree1_", "tree1sq_")
      if self._lanes(m):   # long rows of a large operand: the lanes order (row_lanes)
        self.uses_tree1 = True
        self.line(f"{accs[m]} = {fast.replace('tree1', 'lanes')}({b}, {n});")
      elif fast and len(inner) == 1:
        self.uses_tree1 = True
        self.line(f"{accs[m]} = {fast}({b}, {n});")
      elif fast and len(inner) <= 8 and ext[-1] > XLA_WINDOW:
        self.uses_tree1 = True
        self.line(f"{accs[m]} = {fast.replace('tree1', 'treen')}({b}, {len(inner)}, {dims});")
      else:
        self.line(f"{accs[m]} = {elementwise_c.tree_helper(m.prim, x.dtype)}({b}, {len(inner)}, {dims});")
      if m in computed and type(x) is Value:
        self.rowbufs[(x.id, full)] = (b, inner, st)

  def _lanes(self, m):
    """The lane count of reduction ``m``'s lanes order (``row_lanes``), else 0."""
    x = m.ins[0]
    return _row_lanes(m.prim, x.shape, m.params["axes"], x.dtype)

  def _squared_row(self, m, inner, st, full):
    """For a reduction ``m`` that is a float32/float64 sum over one dimension of
    ``a * a`` (``mul`` of one value, ``square``, ``integer_pow`` 2: one rounded product)
    computed in this kernel from a row ``a`` read in place (``_direct_row``); the
    ``pj_tree1sq_*`` helper then squares the elements as it loads them, the row buffer
    neither written nor read back (a 1000x1000 float32 row normalization: 241 -> 197 us
    on one thread): ``(a, pointer to its row)``.  Else None."""
    x = m.ins[0]
    if (m.prim != "reduce_sum" or len(inner) != 1 or type(x) is not Value
        or _tree1_helper(m.prim, x.dtype) is None):
      return None
    p = x.producer
    if p is None or not (p in self.members or p in self.fu.inline):
      return None
    if not ((p.prim == "mul" and p.ins[0] is p.ins[1]) or p.prim == "square"
            or (p.prim == "integer_pow" and int(p.params["y"]) == 2)):
      return None
    a = p.ins[0]
    if type(a) is not Value or a.dtype != x.dtype or a.shape != x.shape:
      return None
    ptr = self._direct_row(a, inner, st, full)
    return None if ptr is None else (a, ptr)

  def _direct_row(self, x, inner, st, full):
    """A pointer to ``x``'s row when the reduction reads a materialized array whose
    reduced dimensions are contiguous in row-major order (no copy needed), else None."""
    if type(x) is not Value or elementwise_c.is_half(x.dtype):
      return None
    p = x.producer
    if p is not None and (p in self.members or p in self.fu.inline):
      return None
    off = self.offset_form(x, full)
    for k, s_ in zip(inner, st):
      if off[1 + k] != s_:
        return None
    base = list(off)
    for k in inner:
      base[1 + k] = 0
    e, _ = self.form_c(tuple(base))
    return f"({self.ptr(x)} + {e})"

  def _xla_loops(self, dims, reds, accs, element, tile=None):
    """Loops over ``dims`` in XLA's reduction order.  ``accs`` (the final accumulators)
    combine the partial results of each window level; ``element()`` emits the per-element
    code (accumulating into the level-0 accumulators, which are ``accs`` when there is no
    split).  With ``tile`` (column kernels), accumulators are arrays over the tile."""
    levels, top = self._xla_levels(dims)
    nlev = len(levels)
    # accumulator names per level: lvl[0] = elements, lvl[nlev] = final (accs)
    lvl = []
    for s in range(nlev):
      lvl.append({m: self.fresh(f"a{s}_") for m in reds})
    lvl.append(dict(accs))
    real_accs = dict(accs)
    # rebind the element-level accumulators
    for m in reds:
      accs[m] = lvl[0][m]

    def ident_init(level):
      for m in reds:
        x = m.ins[0]
        ident = elementwise_c.identity_literal(m.prim, x.dtype)
        if tile is None:
          self.line(f"{elementwise_c.compute_type(x.dtype)} {lvl[level][m]} = {ident};")
          if m.prim in ("argmax", "argmin"):
            self.line(f"int64_t {lvl[level][m]}_i = 0;")
        else:
          self.line(f"for (int64_t t = 0; t < tn; t++) {lvl[level][m]}[t] = {ident};")

    def fold(level):
      for m in reds:
        x = m.ins[0]
        a, b = lvl[level + 1][m], lvl[level][m]
        if tile is None:
          self.line(f"{a} = {elementwise_c.combine(m.prim, x.dtype, a, b)};")
        else:
          self.line("#pragma omp simd")
          self.line(f"for (int64_t t = 0; t < tn; t++) {a}[t] = "
                    f"{elementwise_c.combine(m.prim, x.dtype, a + '[t]', b + '[t]')};")

    if tile is not None:
      for s in range(nlev):
        for m in reds:
          self.line(f"{elementwise_c.compute_type(m.ins[0].dtype)} {lvl[s][m]}[{COL_TILE}];")

    # top level: row-major over the top grid; cell index names c{nlev}_{k}
    def cell(level, k):
      return f"c{level}_{k}" if level > 0 else f"i{k}"

    def emit_level(level):
      """Loops over the window offsets of split ``level`` (1-based) down to elements."""
      if level == 0:
        element()
        return
      sizes, wins, grid, pads = levels[level - 1]
      ident_init(level - 1)
      specs = []
      for j, k in enumerate(dims):
        w, p, size = wins[j], pads[j], sizes[j]
        parent = cell(level, k)
        var = cell(level - 1, k)
        lo = f"({parent} * {w} - {p})"
        specs.append((f"for (int64_t {var} = {lo} < 0 ? 0 : {lo}; "
                      f"{var} < ({lo} + {w} < {size} ? {lo} + {w} : {size}); {var}++)", [], None))
      base = self.depth
      for j, k in enumerate(dims):
        if level - 1 == 0:
          self.dimexpr[k] = (f"i{k}", base + 1 + j)
      self._nested(specs, lambda: emit_level(level - 1))
      fold(level - 1)

    specs = []
    base = self.depth
    for j, k in enumerate(dims):
      var = cell(nlev, k)
      specs.append((f"for (int64_t {var} = 0; {var} < {top[j]}; {var}++)", [], None))
      if nlev == 0:
        self.dimexpr[k] = (f"i{k}", base + 1 + j)
    self._nested(specs, lambda: emit_level(nlev))
    for m in reds:
      accs[m] = real_accs[m]

  # column kernels --------------------------------------------------------------------------
  def _col(self):
    g = self.g
    red = list(g.axes)
    pre, post = fusion.split_col(self.shape, red)
    reductions = [m for m in g.members if self.fu.kind[m] == fusion.REDUCE]
    n_pre = math.prod(self.shape[k] for k in pre)
    n_post = math.prod(self.shape[k] for k in post)
    n_red = math.prod(self.shape[k] for k in red)
    ntiles = max(-(-n_post // COL_TILE), 1)
    for k in pre:
      self.dimexpr[k] = (f"i{k}", 1)
    for k in red:
      if self.shape[k] == 1:
        self.dimexpr[k] = ("0", 0)
    self._set_parallel(n_pre * ntiles, max(n_red, 1) * min(n_post, COL_TILE) * 2)
    self.open(None, "for (int64_t pt = lo; pt < hi; pt++) {")
    self.line(f"const int64_t t0 = (pt % {ntiles}) * {COL_TILE};")
    self.line(f"const int64_t tn = {n_post} - t0 < {COL_TILE} ? {n_post} - t0 : {COL_TILE};")
    for ln in self._decompose(f"(pt / {ntiles})", [(f"i{k}", self.shape[k]) for k in pre]):
      self.line(ln)
    full = self._full_forms()
    accs = {m: self.fresh("acc") for m in reductions}
    for m in reductions:
      x = m.ins[0]
      ct = elementwise_c.compute_type(x.dtype)
      self.line(f"{ct} {accs[m]}[{COL_TILE}];")
      self.line(f"for (int64_t t = 0; t < tn; t++) {accs[m]}[t] = "
                f"{elementwise_c.identity_literal(m.prim, x.dtype)};")
      if m.prim in ("argmax", "argmin"):
        self.line(f"int64_t {accs[m]}_i[{COL_TILE}];")
        self.line(f"for (int64_t t = 0; t < tn; t++) {accs[m]}_i[t] = 0;")
    post_pairs = [(f"i{k}", self.shape[k]) for k in post if self.shape[k] != 1]
    for k in post:
      if self.shape[k] == 1:
        self.dimexpr[k] = ("0", 0)
    inner = [k for k in red if self.shape[k] != 1]

    red_set = set(red)
    full_outs = [(v, m) for v, m in self._outputs()
                 if fusion.form_vars(self._out_forms(m)) & red_set]
    kept_outs = [(v, m) for v, m in self._outputs() if (v, m) not in full_outs]
    pending_full = [full_outs]

    def tile_element(acc_map, ms):
      def body():
        self.open("#pragma omp simd", "for (int64_t t = 0; t < tn; t++) {")
        for ln in self._decompose("(t0 + t)", post_pairs):
          self.line(ln)
        for name, _ in post_pairs:
          k = int(name[1:])
          self.dimexpr[k] = (name, self.depth)
        for m in ms:
          x = m.ins[0]
          e, _ = self.value(x, full)
          a = f"{acc_map[m]}[t]"
          if m.prim in ("argmax", "argmin"):
            axis = m.params["axes"][0]
            idx, _ = self.form_c(full[axis]) if self.shape[axis] != 1 else ("0", 0)
            op = ">" if m.prim == "argmax" else "<"
            if elementwise_c.is_float(x.dtype):
              cond = f"!({a} != {a}) && ({e} {op} {a} || {e} != {e})"
            else:
              cond = f"{e} {op} {a}"
            self.line(f"if ({cond}) {{ {a} = {e}; {acc_map[m]}_i[t] = {idx}; }}")
          else:
            self.line(f"{a} = {elementwise_c.combine(m.prim, x.dtype, a, e)};")
        for v, m in pending_full[0]:   # full-size outputs: written by the first pass
          forms = self._out_forms(m)
          self.store(v, forms, self.value(v, forms))
        self._close_into()
      return body

    def after_pass():
      pending_full[0] = []

    ordered_ms = [m for m in reductions
                  if m.prim in fusion.ORDERED_REDUCTIONS and elementwise_c.is_float(m.ins[0].dtype)]
    plain_ms = [m for m in reductions if m not in ordered_ms]
    if ordered_ms:
      work_accs = {m: accs[m] for m in ordered_ms}
      self._xla_loops(inner, ordered_ms, work_accs,
                      lambda: tile_element(work_accs, ordered_ms)(), tile=True)
      after_pass()
    if plain_ms or not reductions:
      specs = []
      for j, k in enumerate(inner):
        specs.append((f"for (int64_t i{k} = 0; i{k} < {self.shape[k]}; i{k}++)", [], None))
        self.dimexpr[k] = (f"i{k}", self.depth + 1 + j)
      self._nested(specs, tile_element(accs, plain_ms))
    # epilogue over the tile
    self.open("#pragma omp simd", "for (int64_t t = 0; t < tn; t++) {")
    for ln in self._decompose("(t0 + t)", post_pairs):
      self.line(ln)
    for name, _ in post_pairs:
      k = int(name[1:])
      self.dimexpr[k] = (name, self.depth)
    for m in reductions:
      x = m.ins[0]
      v = m.out
      forms = self._out_forms(m)
      if m.prim in ("argmax", "argmin"):
        expr = f"(({elementwise_c.compute_type(v.dtype)}){accs[m]}_i[t])"
      elif m.prim == "reduce_sum" and elementwise_c.is_float(x.dtype):
        zero = "0.0" if x.dtype == elementwise_c.F64 else "0.0f"
        expr = elementwise_c.round_to(x.dtype, f"({accs[m]}[t] + {zero})")
      else:
        expr = f"{accs[m]}[t]"
      self.declare((v.id, forms), elementwise_c.compute_type(v.dtype), expr, self.depth)
    for v, m in kept_outs:
      forms = self._out_forms(m)
      self.store(v, forms, self.value(v, forms))
    self._close_into()
    self._close_into()
    return self.close_all()


def kernel_source(fusion, group, slot_root, name):
  """(C source of the group's kernel, its parameter root values)."""
  kg = KernelGen(fusion, group, slot_root, name)
  src = kg.generate()
  group.epilogue_mode = kg.tile
  n = math.prod(kg.shape)
  if n <= vmath.SCALAR_MAX:
    src = vmath.small_trig(src, kg.name, not kg.alias_out and n >= TINY_SIMD)
  if kg.alias_out:
    group.alias_ok = kg.alias_verdicts()
  return src, kg.params
