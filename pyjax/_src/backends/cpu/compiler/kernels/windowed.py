"""Native windowed reductions: ``reduce_window_sum``, ``reduce_window_max``,
``reduce_window_min``, ``select_and_scatter_add`` and ``select_and_gather_add`` as opaque
kernels (``opaque.py``), bit for bit equal to the NumPy tier (``eager/reductions.py``).

Geometry is XLA's (as ``_Windows`` there): element ``i`` of an operand dimension sits at
dilated position ``i * base_dilation``; window ``o`` at offset ``k`` covers position
``o * stride + k * window_dilation - pad_lo``, which holds an element when it is in
``[0, (n - 1) * base_dilation]`` and a multiple of the base dilation (padding, holes and
cropped elements hold none).  Every valid-range bound is computed in closed form from the
shapes, so no address outside an operand is ever formed, whatever the padding, window or
stride sizes (0-size dimensions included).

A kernel walks the output one *row* (every output dimension but the last) at a time: for
each window offset -- nested loops in the window's visit order, each limited to the
offsets that can reach an element -- an innermost loop over the row's last output
dimension folds the element into a row of accumulators.  So every output element sees its
window's elements in the visit order, and a channels-last pooling (window 1 over the last
dimension) is a contiguous loop.  Rows run on pyjax's pool when the work is large.

Order rules (the NumPy tier's):

- ``reduce_window_sum``: windows of at most 64 elements fold in row-major window order in
  the operand's type (float16/bfloat16 rounded at every step, integers wrapping), from
  +0, so a float result is never -0 (the NumPy tier adds a final +0).  Integer sums of any
  window size are exact; float sums over larger windows (NumPy's own ``add.reduce`` order)
  stay NumPy steps.  A sum meeting two NaNs of different sign or payload may keep either
  (so do NumPy's own loops: C leaves the operand order of ``+`` to the compiler).
- ``reduce_window_max``/``min``: XLA's max/min (the first NaN in window order propagates,
  ``-0.0 < +0.0``), the identity (-inf / the integer extreme / False) for an empty window;
  float16/bfloat16 compare in float32; bool is or/and.  For windows of more than 64
  elements the NumPy tier reduces in NumPy's order: values agree, a window holding NaNs
  of different payloads or signs may pick another one.
- ``select_and_gather_add``: per window, the first valid element in visit order is
  selected, then a later one replaces it when ``select(selected, candidate)`` is false
  (NaNs always replace); the visit order is row-major with the last padded dimension
  moved outermost (the NumPy tier's, measured on JAX); the tangent there is copied (0 for
  a window without elements).
- ``select_and_scatter_add``: the same selection in row-major order; each operand
  position starts from +0 and adds the source values of the windows that selected it in
  *descending* row-major window order (the NumPy tier's ascending window-offset order),
  float16/bfloat16 in float32 rounded once at the end, integers wrapping.  Windows that
  overlap along an output dimension write the same positions, so only output dimensions
  whose windows are disjoint (window <= stride) are split across the pool.

Literal operands, complex dtypes, ``select_prim`` other than ge/le/gt/lt and float sums
over more than 64 elements are not claimed (they stay NumPy steps).
"""
from __future__ import annotations

import math

import numpy as np

from pyjax._src.backends.cpu.compiler import opaque
from pyjax._src.backends.cpu.compiler.kernels import elementwise as elementwise_c
from pyjax._src.backends.cpu.compiler.kernels.sorting import _values

_REDUCE = ("reduce_window_sum", "reduce_window_max", "reduce_window_min")
_ORDERED_SUM_MAX = 64       # float window sums up to this many elements fold in order
_SELECT_OPS = {"ge": ">=", "le": "<=", "gt": ">", "lt": "<"}
_GRAIN_WORK = 32768         # elementary steps per pool chunk
_BOOL = np.dtype(np.bool_)


class _Geom:
  """Window geometry of a node (a 0-d operand becomes one element of a 1-d one)."""

  def __init__(self, shape, wd, ws, pads, bd=None, wdil=None):
    nd = len(shape)
    ones = (1,) * nd
    bd = ones if bd is None else bd
    wdil = ones if wdil is None else wdil
    if not (len(wd) == len(ws) == len(pads) == len(bd) == len(wdil) == nd):
      raise ValueError("inconsistent window parameters")
    if nd == 0:
      shape, wd, ws, pads, bd, wdil = (1,), (1,), (1,), ((0, 0),), (1,), (1,)
    self.shape = tuple(int(n) for n in shape)
    self.wd = tuple(int(w) for w in wd)
    self.ws = tuple(int(s) for s in ws)
    self.pads = tuple((int(lo), int(hi)) for lo, hi in pads)
    self.bd = tuple(int(b) for b in bd)
    self.wdil = tuple(int(r) for r in wdil)
    if min(self.wd + self.ws + self.bd + self.wdil) <= 0:
      raise ValueError("non-positive window parameter")
    self.nd = len(self.shape)
    out = []
    for n, w, s, (lo, hi), b, r in zip(self.shape, self.wd, self.ws, self.pads, self.bd,
                                       self.wdil):
      padded = (0 if n == 0 else (n - 1) * b + 1) + lo + hi
      eff = (w - 1) * r + 1
      out.append((padded - eff) // s + 1 if padded >= eff else 0)
    self.out = tuple(out)
    self.wsize = math.prod(self.wd)
    st = [1] * self.nd
    for d in range(self.nd - 2, -1, -1):
      st[d] = st[d + 1] * self.shape[d + 1]
    self.strides = tuple(st)          # operand element strides
    self.outl = self.out[-1]          # the row length
    self.rows = math.prod(self.out[:-1])

  def c_key(self):
    return (f"operand {list(self.shape)}, window {list(self.wd)}, strides {list(self.ws)}, "
            f"padding {[list(p) for p in self.pads]}, base dilation {list(self.bd)}, "
            f"window dilation {list(self.wdil)}")


def _window_params(p):
  return (p["window_dimensions"], p["window_strides"], p["padding"], p.get("base_dilation"),
          p.get("window_dilation"))


def _select_name(p):
  sp = p["select_prim"]
  return getattr(sp, "name", sp)


def _spec(node):
  """(geometry, operand dtype) of a supported node; ValueError otherwise."""
  if not _values(node) or len(node.outs) != 1:
    raise ValueError("literal operand")
  p = node.params
  y = node.outs[0]
  if node.prim in _REDUCE:
    (x,) = node.ins
    d = x.dtype
    g = _Geom(x.shape, *_window_params(p))
    if y.dtype != d or y.shape != _out_shape(g, x.shape):
      raise ValueError("bad output")
    if not elementwise_c.storable(d):
      raise ValueError("dtype")
    if node.prim == "reduce_window_sum":
      if d == _BOOL:
        raise ValueError("bool sum")
      if elementwise_c.is_float(d) and g.wsize > _ORDERED_SUM_MAX:
        raise ValueError("float sum over a large window: NumPy's reduction order")
    return g, d
  if node.prim == "select_and_scatter_add":
    src, x = node.ins
    d = x.dtype
    if _select_name(p) not in _SELECT_OPS:
      raise ValueError("select_prim")
    g = _Geom(x.shape, p["window_dimensions"], p["window_strides"], p["padding"])
    if src.dtype != d or y.dtype != d or y.shape != x.shape or src.shape != _out_shape(g, x.shape):
      raise ValueError("bad shapes")
    if not elementwise_c.storable(d) or d == _BOOL:
      raise ValueError("dtype")
    return g, d
  if node.prim == "select_and_gather_add":
    t, x = node.ins
    d = x.dtype
    if _select_name(p) not in _SELECT_OPS:
      raise ValueError("select_prim")
    g = _Geom(x.shape, *_window_params(p))
    if t.shape != x.shape or y.dtype != t.dtype or y.shape != _out_shape(g, x.shape):
      raise ValueError("bad shapes")
    if not elementwise_c.storable(d) or not elementwise_c.storable(t.dtype):
      raise ValueError("dtype")
    return g, d
  raise ValueError("not a windowed primitive")


def _out_shape(g, shape):
  return g.out if shape else ()


def supported(node):
  """Whether a windowed node has a native kernel here: every storable dtype (bool for
  max/min and as a gather's operand; no float sums over more than 64 elements), no
  literal operands, ``select_prim`` one of ge/le/gt/lt."""
  try:
    g, _ = _spec(node)
  except (ValueError, KeyError, TypeError):
    return False
  return g.wsize < (1 << 40)


def work(node):
  """Rough operation count: every (output element, window offset) pair."""
  g, _ = _spec(node)
  return max(1, g.rows * g.outl * g.wsize)


# --- C generation ---------------------------------------------------------------------------
_HELPERS = r"""
#ifndef PJ_WINDOW_HELPERS
#define PJ_WINDOW_HELPERS 1
/* floor / ceiling of a / b for b > 0 */
static inline int64_t pj_wfdiv(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
static inline int64_t pj_wcdiv(int64_t a, int64_t b) { return -pj_wfdiv(-a, b); }
static inline int64_t pj_wmax(int64_t a, int64_t b) { return a > b ? a : b; }
static inline int64_t pj_wmin(int64_t a, int64_t b) { return a < b ? a : b; }
/* XLA's max/min as pj_max and pj_min of lower_c (the first NaN propagates, -0.0 < +0.0),
   as float selects only, so that a loop of them vectorizes well (pj_max's branches
   mispredict on random data): two zeros combine by addition, +0 unless both are -0 (min:
   negated) */
#define PJ_WMAXMIN(NAME, T, CMP, NEG)                                                      \
static inline T NAME(T a, T b) {                                                            \
  T r = a CMP b ? a : b;                                                                    \
  r = (a == 0) & (b == 0) ? NEG(NEG(a) + NEG(b)) : r;                                       \
  return a != a ? a : r; }
#define PJ_WPOS(x) (x)
#define PJ_WNEG(x) (-(x))
PJ_WMAXMIN(pj_wmaxf, float, >, PJ_WPOS)
PJ_WMAXMIN(pj_wminf, float, <, PJ_WNEG)
PJ_WMAXMIN(pj_wmaxd, double, >, PJ_WPOS)
PJ_WMAXMIN(pj_wmind, double, <, PJ_WNEG)
#endif
"""


def _combine(prim, d, acc, x):
  """C of ``acc (op) x`` for a window reduction (lower_c's, with vectorizable float
  max/min)."""
  if prim != "reduce_sum" and elementwise_c.is_float(d):
    return (f"pj_w{prim[7:]}{'d' if d == np.dtype(np.float64) else 'f'}({acc}, {x})")
  return elementwise_c.combine(prim, d, acc, x)


def _decode(names_dims, var, ind):
  """C lines setting ``const int64_t name = ...`` for each (name, size) from the flat
  row-major index ``var`` (the first name outermost)."""
  L = []
  if not names_dims:
    return L
  L.append(f"{ind}int64_t rem_ = {var};")
  for name, n in reversed(names_dims[1:]):
    L.append(f"{ind}const int64_t {name} = rem_ % {n}; rem_ /= {n};")
  L.append(f"{ind}const int64_t {names_dims[0][0]} = rem_;")
  return L


def _loops(g, order, inner):
  """C lines of the window-offset loops in ``order`` (dimensions, outermost first), around
  ``inner(base, index, step)``: ``base`` the C expression of the operand offset of the
  leading dimensions, ``index`` of the last dimension's position for output column ``j``
  (valid for ``j`` from ``jlo`` to ``jhi`` by ``step``).  Output coordinates ``o<d>`` of
  the leading dimensions must be in scope."""
  L_ = g.nd - 1
  L, ind, base = [], "    ", "0"
  for d in order:
    n, w, s, (lo, _), b, r = (g.shape[d], g.wd[d], g.ws[d], g.pads[d], g.bd[d], g.wdil[d])
    last = (n - 1) * b     # the dilated position of the last element (negative: none)
    if d != L_:
      # offsets whose position can hold an element: 0 <= o*s + k*r - lo <= last
      L.append(f"{ind}const int64_t p{d} = o{d} * {s} - {lo};")
      L.append(f"{ind}const int64_t kh{d} = pj_wmin({w - 1}, pj_wfdiv({last} - p{d}, {r}));")
      L.append(f"{ind}for (int64_t k{d} = pj_wmax(0, pj_wcdiv(-p{d}, {r})); k{d} <= kh{d}; "
               f"k{d}++) {{")
      ind += "  "
      L.append(f"{ind}const int64_t t{d} = p{d} + k{d} * {r};")
      if b != 1:
        L.append(f"{ind}if (t{d} % {b}) continue;")
        pos = f"(t{d} / {b})"
      else:
        pos = f"t{d}"
      L.append(f"{ind}const int64_t a{d} = {base} + {pos} * {g.strides[d]};")
      base = f"a{d}"
    else:
      outl = g.outl
      # offsets that reach an element for some column j in [0, outl)
      klo = f"pj_wmax(0, pj_wcdiv({lo - (outl - 1) * s}, {r}))"
      khi = f"pj_wmin({w - 1}, pj_wfdiv({last + lo}, {r}))"
      L.append(f"{ind}for (int64_t kl = {klo}; kl <= {khi}; kl++) {{")
      ind += "  "
      L.append(f"{ind}const int64_t c = kl * {r} - {lo};")
      L.append(f"{ind}int64_t jlo = pj_wmax(0, pj_wcdiv(-c, {s}));")
      L.append(f"{ind}const int64_t jhi = pj_wmin({outl - 1}, pj_wfdiv({last} - c, {s}));")
      if b != 1:
        step = b // math.gcd(s, b)
        L.append(f"{ind}{{ const int64_t je = pj_wmin(jhi, jlo + {step - 1});")
        L.append(f"{ind}  while (jlo <= je && (jlo * {s} + c) % {b}) jlo++;")
        L.append(f"{ind}  if (jlo > je) continue; }}")
      L.append(f"{ind}if (jlo > jhi) continue;")
  if g.bd[L_] == 1:   # (a pointer at the offset: GCC vectorizes x[j * s], not x[j * s + c])
    step, base, index = 1, f"{base} + c", f"j * {g.ws[L_]}"
  else:
    step = g.bd[L_] // math.gcd(g.ws[L_], g.bd[L_])
    index = f"((j * {g.ws[L_]} + c) / {g.bd[L_]})"
  L.extend(ind + ln for ln in inner(base, index, step))
  for _ in order:
    ind = ind[:-2]
    L.append(f"{ind}}}")
  return L


def _jloop(step):
  return ("for (int64_t j = jlo; j <= jhi; j++)" if step == 1 else
          f"for (int64_t j = jlo; j <= jhi; j += {step})")


def _visit_order(node, g):
  """Window dimensions outermost first: row-major, except select_and_gather_add's last
  padded dimension, moved outermost (the NumPy tier's order)."""
  order = list(range(g.nd))
  if node.prim == "select_and_gather_add":
    padded = [i for i, pd in enumerate(g.pads) if pd != (0, 0)]
    if padded:
      order.remove(padded[-1])
      order.insert(0, padded[-1])
  return order


def _row_head(g, ind):
  """Decode the leading output coordinates o<d> of row ``r``."""
  return _decode([(f"o{d}", g.out[d]) for d in range(g.nd - 1)], "r", ind)


def _selection(node, g, d, ind):
  """Lines selecting, for the row's every column j, the operand offset si[j] (-1: none)."""
  st, ct = elementwise_c.storage_type(d), elementwise_c.compute_type(d)
  op = _SELECT_OPS[_select_name(node.params)]
  xin = 1  # the operand is input 1 of both select_and_* primitives

  def inner(base, index, step):
    return ["#pragma omp simd",
            f"{_jloop(step)} {{",
            f"  const int64_t xi = ({base}) + {index};",
            f"  const {ct} v = {elementwise_c.load(d, 'Xs[xi]')};",
            f"  const int take = (si[j] < 0) | !(sv[j] {op} v);",
            "  sv[j] = take ? v : sv[j];",
            "  si[j] = take ? xi : si[j];",
            "}"]
  L = [f"{ind}const {st} *restrict Xs = (const {st} *)P[{xin}];",
       f"{ind}for (int64_t j = 0; j < {g.outl}; j++) si[j] = -1;"]
  L += [ind[4:] + ln for ln in _loops(g, _visit_order(node, g), inner)]
  return L


def _entry(name, node, g, nitems, per_item, extra_pre=(), extra_post=(), ctx="P"):
  """The kernel's entry: copies an input that is also the output's buffer, runs
  ``name_range`` over ``nitems`` items (on the pool when large)."""
  nin = len(node.ins)
  L = [f"static void {name}(void *const *P0) {{",
       f"  void *P[{nin + 2}]; void *own[{nin}] = {{0}};",
       f"  for (int i = 0; i < {nin + 1}; i++) P[i] = P0[i];",
       f"  P[{nin + 1}] = 0;"]
  sizes = [v.size * v.dtype.itemsize for v in node.ins]
  for i, nb in enumerate(sizes):
    if nb:
      L.append(f"  if (P0[{i}] == P0[{nin}]) {{ own[{i}] = pj_scratch({nb}); if (!own[{i}]) abort(); "
               f"memcpy(own[{i}], P0[{i}], {nb}); P[{i}] = own[{i}]; }}")
  L.extend(extra_pre)
  grain = max(1, _GRAIN_WORK // max(per_item, 1))
  if nitems > 0:
    L.append(f"  if (pj_parallel_for && {nitems} > {grain}) "
             f"pj_parallel_for({name}_range, (void *){ctx}, {nitems}, {grain});")
    L.append(f"  else {name}_range((void *){ctx}, 0, {nitems});")
  L.extend(extra_post)
  L.append(f"  for (int i = 0; i < {nin}; i++) pj_unscratch(own[i]);")
  L.append("}")
  return L


def _reduce_source(node, name):
  g, d = _spec(node)
  prim = "reduce_" + node.prim.rsplit("_", 1)[1]      # reduce_sum / reduce_max / reduce_min
  st, ct = elementwise_c.storage_type(d), elementwise_c.compute_type(d)
  L = [_HELPERS, f"/* pyjax native {node.prim} (kernels/windowed.py): {g.c_key()}, "
                 f"output {list(g.out)}, dtype {d.name} */"]
  L.append(f"static void {name}_range(void *ctx, int64_t lo, int64_t hi) {{")
  L.append("  void *const *P = (void *const *)ctx;")
  L.append(f"  const {st} *restrict X = (const {st} *)P[0];")
  L.append(f"  {st} *restrict Y = ({st} *)P[1];")
  L.append(f"  {ct} *acc = ({ct} *)pj_scratch(sizeof({ct}) * {g.outl});")
  L.append("  if (!acc) abort();")
  L.append("  for (int64_t r = lo; r < hi; r++) {")
  L.extend(_row_head(g, "    "))
  L.append(f"    for (int64_t j = 0; j < {g.outl}; j++) acc[j] = "
           f"{elementwise_c.identity_literal(prim, d)};")

  def inner(base, index, step):
    x = elementwise_c.load(d, f"xr[{index}]")
    val = _combine(prim, d, "acc[j]", x)
    return [f"const {st} *xr = X + ({base});",
            "#pragma omp simd",
            f"{_jloop(step)} acc[j] = {val};"]
  L.extend(_loops(g, list(range(g.nd)), inner))
  L.append(f"    {st} *yr = Y + r * {g.outl};")
  L.append(f"    for (int64_t j = 0; j < {g.outl}; j++) yr[j] = {elementwise_c.store(d, 'acc[j]')};")
  return _close_rows(L, name, node, g, "acc")


def _close_rows(L, name, node, g, scratch):
  """Close a one-row-per-item range function (its loop over rows and the ``scratch`` row
  buffer), add the entry that runs it over every output row, and return the C."""
  L += ["  }", f"  pj_unscratch({scratch});", "}"]
  L.extend(_entry(name, node, g, g.rows if g.outl else 0, g.outl * g.wsize))
  return "\n".join(L) + "\n"


def _selection_scratch(ct, g):
  """C declaring a row's selection scratch: ``si`` (the selected operand index per output
  element, -1 for none) and ``sv`` (the selected value); freed by ``pj_unscratch(mem)``."""
  return [f"  char *mem = (char *)pj_scratch((sizeof({ct}) + 8) * {g.outl});",
          "  if (!mem) abort();",
          f"  int64_t *si = (int64_t *)mem; {ct} *sv = ({ct} *)(si + {g.outl});"]


def _gather_source(node, name):
  g, d = _spec(node)
  td = node.ins[0].dtype
  tu = f"uint{8 * td.itemsize}_t"
  ct = elementwise_c.compute_type(d)
  order = _visit_order(node, g)
  L = [_HELPERS, f"/* pyjax native select_and_gather_add (kernels/windowed.py): {g.c_key()}, "
                 f"select {_select_name(node.params)}, visit order {order}, operand "
                 f"{d.name}, tangents {td.name} */"]
  L.append(f"static void {name}_range(void *ctx, int64_t lo, int64_t hi) {{")
  L.append("  void *const *P = (void *const *)ctx;")
  L.append(f"  const {tu} *restrict T = (const {tu} *)P[0];")
  L.append(f"  {tu} *restrict Y = ({tu} *)P[2];")
  L.extend(_selection_scratch(ct, g))
  L.append("  for (int64_t r = lo; r < hi; r++) {")
  L.extend(_row_head(g, "    "))
  L.extend(_selection(node, g, d, "    "))
  L.append(f"    {tu} *yr = Y + r * {g.outl};")
  L.append(f"    for (int64_t j = 0; j < {g.outl}; j++) yr[j] = si[j] >= 0 ? T[si[j]] : 0;")
  return _close_rows(L, name, node, g, "mem")


def _scatter_source(node, name):
  g, d = _spec(node)
  st, ct = elementwise_c.storage_type(d), elementwise_c.compute_type(d)
  half = elementwise_c.is_half(d)
  at = "float" if half else st                  # accumulator storage
  n_elems = math.prod(g.shape)
  # output dimensions (but the last) whose windows are disjoint split the work
  lead = list(range(g.nd - 1))
  part = [k for k in lead if g.wd[k] <= g.ws[k]]
  rest = [k for k in lead if k not in part]
  items = math.prod(g.out[k] for k in part) if g.outl else 0
  per_item = math.prod(g.out[k] for k in rest)
  L = [_HELPERS, f"/* pyjax native select_and_scatter_add (kernels/windowed.py): {g.c_key()}, "
                 f"select {_select_name(node.params)}, dtype {d.name}, parallel over output "
                 f"dimensions {part} */"]
  L.append(f"static void {name}_range(void *ctx, int64_t lo, int64_t hi) {{")
  L.append("  void *const *P = (void *const *)ctx;")
  L.append(f"  const {st} *restrict S = (const {st} *)P[0];")
  L.append(f"  {at} *restrict A = ({at} *)P[{3 if half else 2}];")
  L.extend(_selection_scratch(ct, g))
  L.append("  for (int64_t it = lo; it < hi; it++) {")
  L.extend(_decode([(f"o{k}", g.out[k]) for k in part], "it", "    "))
  # the other leading coordinates, in descending row-major order
  L.append(f"    for (int64_t q = {per_item - 1}; q >= 0; q--) {{")
  L.extend(_decode([(f"o{k}", g.out[k]) for k in rest], "q", "    "))
  rterms = [f"o{k} * {math.prod(g.out[k + 1:-1])}" for k in lead]
  L.append(f"    const int64_t r = {' + '.join(rterms) or '0'};")
  L.extend(_selection(node, g, d, "    "))
  L.append(f"    const {st} *sr = S + r * {g.outl};")
  L.append(f"    for (int64_t j = {g.outl - 1}; j >= 0; j--)")
  v = elementwise_c.load(d, "sr[j]")
  if elementwise_c.is_int(d):
    upd = f"A[si[j]] = {elementwise_c.combine('reduce_sum', d, 'A[si[j]]', v)};"
  else:
    upd = f"A[si[j]] = A[si[j]] + {v};"           # halves: in float32, rounded at the end
  L.append(f"      if (si[j] >= 0) {upd}")
  L.append("    }")
  L.append("  }")
  L.append("  pj_unscratch(mem);")
  L.append("}")
  nbytes = n_elems * d.itemsize
  pre, post = [], []
  if half:
    pre.append(f"  float *F = (float *)pj_scratch({max(n_elems, 1)} * sizeof(float));")
    pre.append("  if (!F) abort();")
    pre.append(f"  memset(F, 0, {max(n_elems, 1)} * sizeof(float));")
    pre.append("  P[3] = (void *)F;")
    post.append(f"  {{ {st} *Y = ({st} *)P[2];")
    post.append(f"    for (int64_t i = 0; i < {n_elems}; i++) Y[i] = {elementwise_c.store(d, 'F[i]')}; }}")
    post.append("  pj_unscratch(F);")
  elif nbytes:
    pre.append(f"  memset(P[2], 0, {nbytes});")
  L.extend(_entry(name, node, g, items, per_item * g.outl * g.wsize, pre, post))
  return "\n".join(L) + "\n"


def kernel_source(node, name):
  """C of ``name(void *const *P)``: ``P`` = input then output data pointers."""
  if node.prim in _REDUCE:
    return _reduce_source(node, name)
  if node.prim == "select_and_gather_add":
    return _gather_source(node, name)
  return _scatter_source(node, name)


for _p in _REDUCE + ("select_and_scatter_add", "select_and_gather_add"):
  opaque.register(_p, supported, kernel_source, work)
