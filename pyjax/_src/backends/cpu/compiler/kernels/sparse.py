"""Native kernels for the sparse products inside ``jit``: sparse x dense vector and matrix
(``bcoo_dot_general`` on an unbatched 2-D BCOO without dense dimensions,
``bcsr_dot_general`` on an unbatched 2-D BCSR contracting its columns, ``coo_matvec``,
``coo_matmat``, ``csr_matvec``, ``csr_matmat``) and the sampled dense-dense product
(``bcoo_dot_general_sampled`` on 2-D indices).  float32/float64; other layouts and dtypes
stay host (NumPy) steps.

Same bits as the NumPy tier (``eager/sparse*.py``): a product adds the stored elements
into their output row *in storage order*, ``y[row, :] += data[n] * b[col, :]`` in the output
dtype (SciPy's COO kernels do exactly that).  With several right-hand sides the kernel
buckets the elements by output row (a stable counting sort into O(nse + rows) scratch) and
runs the rows in parallel, each in storage order; with one it makes a single pass in
storage order -- except where the elements come grouped by row: CSR/BCSR with regular row
pointers run row by row in parallel straight from ``indptr`` (no per-call pass over the
elements), and a BCOO with ``indices_sorted=True`` is cut into element ranges at row
changes that run in parallel (a range meeting a row outside its own -- a broken promise --
makes the serial pass redo the product); a sampled element is ``sum_k a[row, k] * b[k, col]`` summed in
ascending ``k`` from zero (the NumPy tier loops over ``k`` the same way).  Builds use
``-ffp-contract=off``, so no fused multiply-add changes a rounding.

Index safety without bounds checks in the loops: every index is normalized once, up front,
by the primitive's JAX semantics -- BCOO counts a negative index once from the end and
drops an element with an index still out of range; the
COO/CSR primitives read the dense operand at a negative-wrapped, clamped index and drop an
element whose (negative-wrapped) output row is out of range; CSR rows come from ``indptr``
by JAX's rule (running count of ``indptr`` hits, minus one).  No kernel reads or writes
outside its buffers whatever the indices hold.
"""
from __future__ import annotations

import numpy as np

from pyjax._src.backends.cpu.compiler import opaque
from pyjax._src.backends.cpu.compiler.kernels import elementwise
from pyjax._src.backends.cpu.compiler.ir import Value

_F = (np.dtype(np.float32), np.dtype(np.float64))
_IDX = tuple(np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64, np.uint8,
                                   np.uint16, np.uint32))
_PARALLEL_MIN = 1 << 15      # work (multiply-adds) below which one thread runs the product

_HELPERS = r"""
#ifndef PJ_SPARSE_HELPERS
#define PJ_SPARSE_HELPERS
static inline int64_t pj_sp_wrap_drop(int64_t i, int64_t n) {
  if (i < 0) i += n;
  return (i >= 0 && i < n) ? i : -1;
}
static inline int64_t pj_sp_wrap_clamp(int64_t i, int64_t n) {
  if (i < 0) i += n;
  return i < 0 ? 0 : (i >= n ? n - 1 : i);
}
#endif
"""


def _buffers(node, n):
  return (len(node.ins) == n and len(node.outs) == 1 and not node.effects
          and all(type(v) is Value for v in node.ins))


# --- sparse x dense ---------------------------------------------------------------------------
def _product_geometry(node):
  """(mode, out_n, in_n, K, nse, index dtype, transpose / contracting column) or None."""
  p = node.params
  out = node.outs[0]
  if node.prim == "bcoo_dot_general":
    if not _buffers(node, 3):
      return None
    data, idx, rhs = node.ins
    (lc, rc), (lb, rb) = p["dimension_numbers"]
    shape = tuple(p["lhs_spinfo"].shape)
    if (lb or rb or len(shape) != 2 or idx.ndim != 2 or idx.shape[1] != 2 or data.ndim != 1
        or tuple(lc) not in ((0,), (1,)) or tuple(rc) != (0,) or rhs.ndim not in (1, 2)):
      return None
    c = lc[0]
    return ("bcoo", shape[1 - c], shape[c], rhs.size // max(rhs.shape[0], 1), idx.shape[0],
            idx.dtype, c)
  if not _buffers(node, 4):
    return None
  data, i1, i2, b = node.ins
  if node.prim == "bcsr_dot_general":   # unbatched 2-D BCSR contracting its columns
    (lc, rc), (lb, rb) = p["dimension_numbers"]
    shape = tuple(p["lhs_spinfo"].shape)
    if (lb or rb or len(shape) != 2 or data.ndim != 1 or i1.ndim != 1 or i2.ndim != 1
        or tuple(lc) != (1,) or tuple(rc) != (0,) or b.ndim not in (1, 2)
        or i1.dtype != i2.dtype):
      return None
    return ("bcsr", shape[0], shape[1], b.size // max(b.shape[0], 1), data.shape[0],
            i1.dtype, False)
  shape = tuple(p["spinfo"].shape if node.prim.startswith("coo") else p["shape"])
  t = bool(p["transpose"])
  if len(shape) != 2 or data.ndim != 1 or b.ndim not in (1, 2) or i1.dtype != i2.dtype:
    return None
  mode = "coo" if node.prim.startswith("coo") else "csr"
  out_n, in_n = (shape[1], shape[0]) if t else shape
  return (mode, out_n, in_n, b.size // max(b.shape[0], 1), data.shape[0], i1.dtype, t)


def _product_supported(node):
  g = _product_geometry(node)
  if g is None:
    return False
  mode, out_n, in_n, K, nse, idt, _ = g
  dt = node.outs[0].dtype
  if dt not in _F or any(v.dtype != dt for v in (node.ins[0], node.ins[-1])):
    return False
  if node.prim in ("bcoo_dot_general", "bcsr_dot_general") and node.params.get(
      "preferred_element_type") not in (None, dt):
    return False
  return idt in _IDX and out_n > 0 and in_n > 0 and K > 0 and nse > 0


def _product_work(node):
  g = _product_geometry(node)
  return g[3] * g[4] + g[1]


def _entry(mode, g, c="c->"):
  """C computing ``ro`` (output row; outside [lo, hi) or -1: skipped) and then ``ci``
  (dense row read) of stored element ``n``, by the primitive's JAX semantics."""
  _, out_n, in_n, _, _, _, extra = g
  if mode in ("bcoo", "bcsr"):
    o, i = (1, 0) if extra == 0 else (0, 1)
    ro = f"{c}rows[n]" if mode == "bcsr" else f"(int64_t){c}I1[2 * n + {o}]"
    return [f"    int64_t ro = {ro};",
            f"    if (ro < 0) ro += {out_n};",
            "    if (ro < lo || ro >= hi) continue;"] + _column(mode, g, c, i)
  if mode == "coo":
    o, i = ("I2", "I1") if extra else ("I1", "I2")
  else:   # csr: rows (from indptr) and indices
    o, i = ("I1", "rows") if extra else ("rows", "I1")
  return [f"    const int64_t ro = pj_sp_wrap_drop((int64_t){c}{o}[n], {out_n});",
          "    if (ro < lo || ro >= hi) continue;"] + _column(mode, g, c, i)


def _column(mode, g, c="c->", i=1):
  """C computing ``ci``, the dense row that stored element ``n`` reads (``continue``:
  dropped): BCOO/BCSR count a negative column once from the end and drop one still out
  of range; COO/CSR wrap and clamp."""
  in_n = g[2]
  if mode == "bcoo":
    return [f"    int64_t ci = (int64_t){c}I1[2 * n + {i}];",
            f"    if (ci < 0) ci += {in_n};",
            f"    if ((uint64_t)ci >= (uint64_t){in_n}) continue;"]
  if mode == "bcsr":
    return [f"    int64_t ci = (int64_t){c}I1[n];",
            f"    if (ci < 0) ci += {in_n};",
            f"    if ((uint64_t)ci >= (uint64_t){in_n}) continue;"]
  return [f"    const int64_t ci = pj_sp_wrap_clamp((int64_t){c}{i}[n], {in_n});"]


def _sorted_rows(name, mode, g, t):
  """C of the bucketed path (see ``_product_source``): ``{name}_rows`` runs the rows."""
  _, out_n, _, K, nse, _, _ = g
  entry = _entry(mode, g, "c.")
  return ([f"  int64_t *start = (int64_t *)pj_scratch(sizeof(int64_t) * {out_n + 1});",
           f"  int64_t *fill = (int64_t *)pj_scratch(sizeof(int64_t) * {out_n});",
           f"  {t} *sd = ({t} *)pj_scratch(sizeof({t}) * {nse});",
           f"  int64_t *sc = (int64_t *)pj_scratch(sizeof(int64_t) * {nse});",
           "  if (start && fill && sd && sc) {",
           f"  const int64_t lo = 0, hi = {out_n};",
           f"  memset(start, 0, sizeof(int64_t) * {out_n + 1});",
           f"  for (int64_t n = 0; n < {nse}; n++) {{"] + entry +
          ["    (void)ci; start[ro + 1]++;",
           "  }",
           f"  for (int64_t r = 0; r < {out_n}; r++) start[r + 1] += start[r];",
           f"  memcpy(fill, start, sizeof(int64_t) * {out_n});",
           f"  for (int64_t n = 0; n < {nse}; n++) {{"] + entry +
          ["    const int64_t j = fill[ro]++; sd[j] = c.D[n]; sc[j] = ci;",
           "  }",
           f"  {name}_rctx rc = {{start, sd, sc, c.B, c.Y}};",
           f"  const int64_t per = {max(1, K * nse // out_n)};",
           f"  if (pj_parallel_for) pj_parallel_for({name}_rows, &rc, {out_n}, "
           "per >= 4096 ? 1 : 4096 / per);",
           f"  else {name}_rows(&rc, 0, {out_n});",
           "  } else {",
           f"    {name}_part(&c, 0, {out_n});",
           "  }",
           "  pj_unscratch(sc); pj_unscratch(sd); pj_unscratch(fill); pj_unscratch(start);"])


def _locals(t, it):
  """C copying a product context's pointers (``c``) into restrict locals: through ``c->``
  GCC reloads them after every store to ``Y`` (measured 10-15% slower)."""
  return [f"  const {t} *restrict D = c->D; const {t} *restrict B = c->B; {t} *restrict Y = c->Y;",
          f"  const {it} *restrict I1 = c->I1; const {it} *restrict I2 = c->I2;",
          "  const int64_t *restrict rows = c->rows; (void)I2; (void)rows;"]


def _accumulate(t, K, ind):
  """C adding stored element ``n`` into output row ``ro`` (``y[ro, :] += d * b[ci, :]``).
  (A register accumulator over runs of one row measured slower: the run-change branch
  mispredicts at every row of sorted indices.)"""
  return [f"{ind}{t} *restrict y = Y + ro * {K}; const {t} d = D[n];",
          f"{ind}const {t} *restrict b = B + ci * {K};",
          f"{ind}for (int64_t k = 0; k < {K}; k++) y[k] += d * b[k];"]


def _pointer_rows(name, mode, g, t, it):
  """C of ``{name}_prows``: output rows ``[lo, hi)`` of a CSR/BCSR product with regular
  row pointers, row ``r`` summing its elements ``[indptr[r], indptr[r + 1])`` in storage
  order from zero in a register accumulator (the serial pass's sums, bit for bit)."""
  K = g[3]
  return [
      f"static void {name}_prows(void *vc, int64_t lo, int64_t hi) {{",
      f"  const {name}_ctx *c = (const {name}_ctx *)vc;",
      *_locals(t, it),
      "  for (int64_t r = lo; r < hi; r++) {",
      f"    {t} acc[{K}];",
      f"    for (int64_t k = 0; k < {K}; k++) acc[k] = 0;",
      "    const int64_t e = (int64_t)I2[r + 1];",
      "    for (int64_t n = (int64_t)I2[r]; n < e; n++) {",
      *["  " + x for x in _column(mode, g, "", "I1")],
      f"      const {t} d = D[n]; const {t} *restrict b = B + ci * {K};",
      f"      for (int64_t k = 0; k < {K}; k++) acc[k] += d * b[k];",
      "    }",
      f"    memcpy(Y + r * {K}, acc, sizeof acc);",
      "  }",
      "}"]


def _regular_pointers(name, g):
  """C running the product row by row (in parallel) when the row pointers are regular --
  ``indptr[0] == 0``, non-decreasing, ``indptr[-1] <= nse``: then row ``r`` holds exactly
  the elements ``[indptr[r], indptr[r + 1])`` by JAX's running-count rule (the elements
  past ``indptr[-1]`` fall in row ``n_rows`` and are dropped) -- with no per-call
  O(nse) pass.  Other pointers take the general path below."""
  _, out_n, _, K, nse, _, _ = g
  per = max(1, K * nse // out_n)
  return [
      f"  int reg = (int64_t)c.I2[0] == 0 && (int64_t)c.I2[{out_n}] <= {nse};",
      f"  for (int64_t j = 0; reg && j < {out_n}; j++) reg = c.I2[j] <= c.I2[j + 1];",
      "  if (reg) {",
      f"    if (pj_parallel_for && {K * nse} >= {_PARALLEL_MIN}) "
      f"pj_parallel_for({name}_prows, &c, {out_n}, {1 if per >= 4096 else 4096 // per});",
      f"    else {name}_prows(&c, 0, {out_n});",
      "    return;",
      "  }"]


_SPLIT_CHUNKS = 8   # element ranges of a row split (about four per thread of a 2-CPU pool)


def _row_split(node, g):
  """Whether a one-right-hand-side product runs as a row split: the stored elements are
  promised grouped by output row (a BCOO product contracting its columns with
  ``indices_sorted=True``; CSR/BCSR rows run from their pointers instead)."""
  mode, out_n, _, K, nse, _, extra = g
  if K * nse < _PARALLEL_MIN or out_n < 2:
    return False
  return mode == "bcoo" and extra == 1 and bool(node.params["lhs_spinfo"].indices_sorted)


def _split_rows(name, mode, g, t, it):
  """C of the row split: ``nse`` cut into ``_SPLIT_CHUNKS`` element ranges at changes of
  output row, each range owning the rows from its first element's up to the next range's
  (the first from row 0, the last to the end) and run as one task: its rows zeroed, then
  its elements added in storage order -- the serial pass's sums, bit for bit, without
  atomics.  An element whose row lies outside its range's rows (indices not grouped by
  row after all: a broken ``indices_sorted`` promise, negative indices) stops the task
  and the serial pass redoes the whole product."""
  _, out_n, _, K, nse, _, _ = g
  P = _SPLIT_CHUNKS
  row = _entry(mode, g)[:2]
  return [
      f"static int64_t {name}_row(const {name}_ctx *c, int64_t n) {{",
      *row,
      "  return ro;",
      "}",
      f"typedef struct {{ const {name}_ctx *c; int64_t a[{P + 1}], r[{P + 1}]; int bad; }} "
      f"{name}_sctx;",
      f"static void {name}_chunk(void *vs, int64_t t0, int64_t t1) {{",
      f"  {name}_sctx *s = ({name}_sctx *)vs;",
      f"  const {name}_ctx *c = s->c;",
      *_locals(t, it),
      f"  const int64_t lo = 0, hi = {out_n};",
      "  for (int64_t q = t0; q < t1; q++) {",
      "    const int64_t rlo = s->r[q], rhi = s->r[q + 1], e = s->a[q + 1];",
      f"    memset(Y + rlo * {K}, 0, sizeof({t}) * (size_t)((rhi - rlo) * {K}));",
      "    for (int64_t n = s->a[q]; n < e; n++) {",
      # the common case first: a raw row inside the range's rows (one unsigned compare)
      "      int64_t ro = (int64_t)I1[2 * n];",
      "      if (__builtin_expect((uint64_t)(ro - rlo) >= (uint64_t)(rhi - rlo), 0)) {",
      f"        if (ro < 0) ro += {out_n};",
      "        if (ro < lo || ro >= hi) continue;",
      "        if (ro < rlo || ro >= rhi) { __atomic_store_n(&s->bad, 1, __ATOMIC_RELAXED); "
      "return; }",
      "      }",
      *["  " + x for x in _column(mode, g, "", 1)],
      *_accumulate(t, K, "      "),
      "    }",
      "  }",
      "}",
      f"static void {name}_split({name}_ctx *c) {{",
      f"  {name}_sctx s; s.c = c; s.bad = 0; s.a[0] = 0; s.r[0] = 0;",
      f"  s.a[{P}] = {nse}; s.r[{P}] = {out_n};",
      f"  for (int q = 1; q < {P}; q++) {{",
      f"    int64_t a = (int64_t)q * {nse} / {P};",
      "    if (a < s.a[q - 1]) a = s.a[q - 1];",
      f"    while (a > 0 && a < {nse} && {name}_row(c, a) == {name}_row(c, a - 1)) a++;",
      f"    int64_t r = a < {nse} ? {name}_row(c, a) : {out_n};",
      f"    if (r < s.r[q - 1] || r > {out_n}) r = s.r[q - 1];",
      "    s.a[q] = a; s.r[q] = r;",
      "  }",
      f"  if (pj_parallel_for) pj_parallel_for({name}_chunk, &s, {P}, 1);",
      f"  else {name}_chunk(&s, 0, {P});",
      f"  if (__atomic_load_n(&s.bad, __ATOMIC_RELAXED)) {name}_part(c, 0, {out_n});",
      "}",
  ]


def _product_source(node, name):
  g = _product_geometry(node)
  mode, out_n, in_n, K, nse, idt, extra = g
  t = elementwise.storage_type(node.outs[0].dtype)
  it = elementwise.storage_type(idt)
  # several right-hand sides: the elements are bucketed by output row (a stable counting
  # sort into O(nse) scratch, storage order kept within a row) and the rows run in
  # parallel, each row's output staying in cache; one right-hand side: one pass in
  # storage order (the vectors fit in cache, a sort would cost more than it saves)
  sorted_rows = K * nse >= _PARALLEL_MIN and K >= 4 and out_n > 1
  nb = 2 if mode == "bcoo" else 3   # P[0..nb-1]: data and index buffers
  C = [f"/* native sparse product: {node.prim} ({mode}, {out_n}x{in_n}, K={K}, nse={nse}) */",
       _HELPERS,
       f"typedef struct {{ const {t} *D; const {it} *I1; const {it} *I2; const int64_t *rows; "
       f"const {t} *B; {t} *Y; }} {name}_ctx;",
       f"static void {name}_part(void *vc, int64_t lo, int64_t hi) {{",
       f"  const {name}_ctx *c = (const {name}_ctx *)vc;",
       *_locals(t, it),
       f"  memset(Y + lo * {K}, 0, sizeof({t}) * (size_t)((hi - lo) * {K}));",
       f"  for (int64_t n = 0; n < {nse}; n++) {{"]
  C += _entry(mode, g, "")
  C += _accumulate(t, K, "    ")
  C += ["  }", "}",
        f"typedef struct {{ const int64_t *start; const {t} *sd; const int64_t *sc; "
        f"const {t} *B; {t} *Y; }} {name}_rctx;",
        # local restrict copies of the context's pointers and a row accumulator on the
        # stack: GCC vectorizes the k loop only so (through ``c->`` it did not: 7x slower)
        f"static void {name}_rows(void *vc, int64_t lo, int64_t hi) {{",
        f"  const {name}_rctx *c = (const {name}_rctx *)vc;",
        f"  const int64_t *restrict start = c->start; const {t} *restrict sd = c->sd;",
        f"  const int64_t *restrict sc = c->sc; const {t} *restrict B = c->B;",
        f"  {t} *restrict Y = c->Y;",
        "  for (int64_t r = lo; r < hi; r++) {",
        f"    {t} acc[{K}];",
        f"    for (int64_t k = 0; k < {K}; k++) acc[k] = 0;",
        "    const int64_t e = start[r + 1];",
        "    for (int64_t j = start[r]; j < e; j++) {",
        f"      const {t} d = sd[j]; const {t} *restrict b = B + sc[j] * {K};",
        f"      for (int64_t k = 0; k < {K}; k++) acc[k] += d * b[k];",
        "    }",
        f"    memcpy(Y + r * {K}, acc, sizeof acc);",
        "  }",
        "}",
        f"static void {name}(void *const *P) {{",
        f"  {name}_ctx c = {{(const {t} *)P[0], (const {it} *)P[1], "
        f"{'NULL' if mode == 'bcoo' else f'(const {it} *)P[2]'}, NULL, (const {t} *)P[{nb}], "
        f"({t} *)P[{nb + 1}]}};"]
  if mode in ("csr", "bcsr") and not extra and K <= 4096:   # acc[K] on the stack
    at = next(i for i, x in enumerate(C) if x.startswith(f"static void {name}(void"))
    C[at:at] = _pointer_rows(name, mode, g, t, it)
    C += _regular_pointers(name, g)
  if mode in ("csr", "bcsr"):
    # rows from indptr (I2) by JAX's rule: running count of hits, minus 1 (a pointer
    # still negative after wrapping: CSR drops it, BCSR counts it at 0 as the NumPy tier)
    n_ptr = (in_n if extra else out_n) + 1
    keep = (f"if (v < 0) v = 0; if (v < {nse}) rows[v]++;" if mode == "bcsr"
            else f"if (v >= 0 && v < {nse}) rows[v]++;")
    C += [f"  int64_t *rows = (int64_t *)pj_scratch(sizeof(int64_t) * {nse});",
          "  if (!rows) return;",
          f"  memset(rows, 0, sizeof(int64_t) * {nse});",
          f"  for (int64_t j = 0; j < {n_ptr}; j++) {{",
          f"    int64_t v = (int64_t)c.I2[j]; if (v < 0) v += {nse};",
          f"    {keep}",
          "  }",
          f"  {{ int64_t s = 0; for (int64_t n = 0; n < {nse}; n++) {{ s += rows[n]; "
          "rows[n] = s - 1; } }",
          "  c.rows = rows;"]
  if sorted_rows:
    C += _sorted_rows(name, mode, g, t)
  elif _row_split(node, g):
    at = next(i for i, x in enumerate(C) if x.startswith(f"static void {name}(void"))
    C[at:at] = _split_rows(name, mode, g, t, it)
    C += [f"  {name}_split(&c);"]
  else:
    C.append(f"  {name}_part(&c, 0, {out_n});")
  if mode in ("csr", "bcsr"):
    C.append("  pj_unscratch(rows);")
  C.append("}")
  return "\n".join(C) + "\n"


# --- sampled dense-dense ----------------------------------------------------------------------
def _sampled_geometry(node):
  """(M, N, Kc, strides (a_row, a_k, b_col, b_k), nse) or None."""
  if not _buffers(node, 3):
    return None
  a, b, idx = node.ins
  (ca, cb), (ba, bb) = node.params["dimension_numbers"]
  if ba or bb or idx.ndim != 2 or idx.shape[1] != 2 or a.ndim != b.ndim:
    return None
  if a.ndim == 1 and not ca and not cb:
    return a.shape[0], b.shape[0], 0, (1, 0, 1, 0), idx.shape[0]
  if a.ndim != 2 or len(ca) != 1 or len(cb) != 1:
    return None
  xa, xb = ca[0], cb[0]
  fa, fb = 1 - xa, 1 - xb
  sa = (a.shape[1], 1)
  sb = (b.shape[1], 1)
  return (a.shape[fa], b.shape[fb], a.shape[xa], (sa[fa], sa[xa], sb[fb], sb[xb]),
          idx.shape[0])


def _sampled_supported(node):
  g = _sampled_geometry(node)
  if g is None:
    return False
  a, b, idx = node.ins
  dt = node.outs[0].dtype
  return (dt in _F and a.dtype == dt and b.dtype == dt and idx.dtype in _IDX
          and tuple(node.outs[0].shape) == (g[4],))


def _sampled_work(node):
  g = _sampled_geometry(node)
  return g[4] * max(g[2], 1)


def _sampled_source(node, name):
  M, N, Kc, (sar, sak, sbc, sbk), nse = _sampled_geometry(node)
  a, b, idx = node.ins
  t = elementwise.storage_type(node.outs[0].dtype)
  it = elementwise.storage_type(idx.dtype)
  if Kc == 0:
    body = "      y = A[r] * Bm[c];"
  else:
    body = (f"      y = 0; for (int64_t k = 0; k < {Kc}; k++) "
            f"y += A[r * {sar} + k * {sak}] * Bm[c * {sbc} + k * {sbk}];")
  C = [f"/* native sampled dense-dense product ({M}x{N}, K={Kc}, nse={nse}) */",
       f"static void {name}_range(void *ctx, int64_t lo, int64_t hi) {{",
       "  void *const *P = (void *const *)ctx;",
       f"  const {t} *restrict A = (const {t} *)P[0];",
       f"  const {t} *restrict Bm = (const {t} *)P[1];",
       f"  const {it} *restrict I = (const {it} *)P[2];",
       f"  {t} *restrict Y = ({t} *)P[3];",
       "  for (int64_t n = lo; n < hi; n++) {",
       "    int64_t sr = (int64_t)I[2 * n], sc = (int64_t)I[2 * n + 1];",
       f"    if (sr < 0) sr += {M};",
       f"    if (sc < 0) sc += {N};",
       "    const uint64_t r = (uint64_t)sr, c = (uint64_t)sc;",
       f"    {t} y = 0;",
       f"    if (r < (uint64_t){M} && c < (uint64_t){N}) {{",
       body,
       "    }",
       "    Y[n] = y;",
       "  }",
       "}",
       f"static void {name}(void *const *P) {{"]
  if nse * max(Kc, 1) >= _PARALLEL_MIN:
    grain = max(1, 4096 // max(Kc, 1))
    C += [f"  if (pj_parallel_for) pj_parallel_for({name}_range, (void *)P, {nse}, {grain});",
          f"  else {name}_range((void *)P, 0, {nse});"]
  else:
    C.append(f"  {name}_range((void *)P, 0, {nse});")
  C.append("}")
  return "\n".join(C) + "\n"


for _p in ("bcoo_dot_general", "bcsr_dot_general", "coo_matvec", "coo_matmat", "csr_matvec",
           "csr_matmat"):
  opaque.register(_p, _product_supported, _product_source, _product_work)
opaque.register("bcoo_dot_general_sampled", _sampled_supported, _sampled_source, _sampled_work)
