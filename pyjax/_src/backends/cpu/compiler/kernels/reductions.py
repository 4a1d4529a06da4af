"""Vectorized C helpers for float sums and products in XLA's CPU order (the row kernels of
``codegen_c.py`` call them; docs/compiler.md, "row kernels" and "split rows").

``TREE1_SOURCE`` is emitted once per translation unit, ahead of the first kernel that uses
it: ``pj_tree1_*`` (one dimension), ``pj_tree1_*_win`` (the first-level window sums of a
range of windows: split rows run it in parallel), ``pj_tree1sq_sum_*`` (the sum of a row's
squares, each element squared as it is loaded: ``PJ_TREE1``'s ``MAP``) and ``pj_treen_*``
(several dimensions, tiles in lanes, bands of tiles in parallel).  Every helper is bit for
bit the scalar ``pj_tree_*`` helper of ``kernels/elementwise.py`` (on the squared row).
``pj_lanes_*`` (and ``pj_lanessq_*``) sum long rows of large arrays in the lanes order
instead (``row_lanes`` says when; docs/compiler.md, "row kernels").
"""
from __future__ import annotations

import numpy as np

# Vectorized 1-D form of XLA's tree order for float32/float64 sums and products (the row
# kernels' common case).  Each window of 32 is still reduced sequentially from the identity,
# but eight (four for double) windows advance together in the lanes of one vector: eight
# loads, an 8x8 transpose in registers, eight vector adds; four such blocks advance together
# (independent accumulators hide the add latency).  Only the first and last windows can be
# partial (the padding is split between both ends and is shorter than a window): scalar
# loops reduce them.  Bit for bit what the scalar ``pj_tree_*`` helpers (kernels/elementwise.py)
# compute.  Emitted once per translation unit, ahead of the first kernel that uses it.
TREE1_SOURCE = r"""
#ifndef PJ_TREE1_DEFINED
#define PJ_TREE1_DEFINED 1
typedef float pj_v8f __attribute__((vector_size(32)));
typedef float pj_v8fu __attribute__((vector_size(32), aligned(4)));
typedef int pj_v8i __attribute__((vector_size(32)));
typedef double pj_v4d __attribute__((vector_size(32)));
typedef double pj_v4du __attribute__((vector_size(32), aligned(8)));
typedef long long pj_v4l __attribute__((vector_size(32)));
#if defined(__clang__)
#define PJ_SH8(a, b, i0, i1, i2, i3, i4, i5, i6, i7) \
  __builtin_shufflevector(a, b, i0, i1, i2, i3, i4, i5, i6, i7)
#define PJ_SH4(a, b, i0, i1, i2, i3) __builtin_shufflevector(a, b, i0, i1, i2, i3)
#else
#define PJ_SH8(a, b, i0, i1, i2, i3, i4, i5, i6, i7) \
  __builtin_shuffle(a, b, (pj_v8i){i0, i1, i2, i3, i4, i5, i6, i7})
#define PJ_SH4(a, b, i0, i1, i2, i3) __builtin_shuffle(a, b, (pj_v4l){i0, i1, i2, i3})
#endif
/* the code is built at -O2: the loops over the vectors of one block must be unrolled
   explicitly, or the vectors live in memory (unrolling the outer loops too spills) */
#define PJ_UNROLL _Pragma("GCC unroll 8")
#define PJ_TRANSPOSE_8(v) do {                                                             \
  pj_v8f t0 = PJ_SH8(v[0], v[1], 0, 8, 1, 9, 4, 12, 5, 13);                                 \
  pj_v8f t1 = PJ_SH8(v[0], v[1], 2, 10, 3, 11, 6, 14, 7, 15);                               \
  pj_v8f t2 = PJ_SH8(v[2], v[3], 0, 8, 1, 9, 4, 12, 5, 13);                                 \
  pj_v8f t3 = PJ_SH8(v[2], v[3], 2, 10, 3, 11, 6, 14, 7, 15);                               \
  pj_v8f t4 = PJ_SH8(v[4], v[5], 0, 8, 1, 9, 4, 12, 5, 13);                                 \
  pj_v8f t5 = PJ_SH8(v[4], v[5], 2, 10, 3, 11, 6, 14, 7, 15);                               \
  pj_v8f t6 = PJ_SH8(v[6], v[7], 0, 8, 1, 9, 4, 12, 5, 13);                                 \
  pj_v8f t7 = PJ_SH8(v[6], v[7], 2, 10, 3, 11, 6, 14, 7, 15);                               \
  pj_v8f s0 = PJ_SH8(t0, t2, 0, 1, 8, 9, 4, 5, 12, 13);                                     \
  pj_v8f s1 = PJ_SH8(t0, t2, 2, 3, 10, 11, 6, 7, 14, 15);                                   \
  pj_v8f s2 = PJ_SH8(t1, t3, 0, 1, 8, 9, 4, 5, 12, 13);                                     \
  pj_v8f s3 = PJ_SH8(t1, t3, 2, 3, 10, 11, 6, 7, 14, 15);                                   \
  pj_v8f s4 = PJ_SH8(t4, t6, 0, 1, 8, 9, 4, 5, 12, 13);                                     \
  pj_v8f s5 = PJ_SH8(t4, t6, 2, 3, 10, 11, 6, 7, 14, 15);                                   \
  pj_v8f s6 = PJ_SH8(t5, t7, 0, 1, 8, 9, 4, 5, 12, 13);                                     \
  pj_v8f s7 = PJ_SH8(t5, t7, 2, 3, 10, 11, 6, 7, 14, 15);                                   \
  v[0] = PJ_SH8(s0, s4, 0, 1, 2, 3, 8, 9, 10, 11);                                          \
  v[1] = PJ_SH8(s1, s5, 0, 1, 2, 3, 8, 9, 10, 11);                                          \
  v[2] = PJ_SH8(s2, s6, 0, 1, 2, 3, 8, 9, 10, 11);                                          \
  v[3] = PJ_SH8(s3, s7, 0, 1, 2, 3, 8, 9, 10, 11);                                          \
  v[4] = PJ_SH8(s0, s4, 4, 5, 6, 7, 12, 13, 14, 15);                                        \
  v[5] = PJ_SH8(s1, s5, 4, 5, 6, 7, 12, 13, 14, 15);                                        \
  v[6] = PJ_SH8(s2, s6, 4, 5, 6, 7, 12, 13, 14, 15);                                        \
  v[7] = PJ_SH8(s3, s7, 4, 5, 6, 7, 12, 13, 14, 15); } while (0)
#define PJ_TRANSPOSE_4(v) do {                                                             \
  pj_v4d t0 = PJ_SH4(v[0], v[1], 0, 4, 2, 6);                                               \
  pj_v4d t1 = PJ_SH4(v[0], v[1], 1, 5, 3, 7);                                               \
  pj_v4d t2 = PJ_SH4(v[2], v[3], 0, 4, 2, 6);                                               \
  pj_v4d t3 = PJ_SH4(v[2], v[3], 1, 5, 3, 7);                                               \
  v[0] = PJ_SH4(t0, t2, 0, 1, 4, 5);                                                        \
  v[1] = PJ_SH4(t1, t3, 0, 1, 4, 5);                                                        \
  v[2] = PJ_SH4(t0, t2, 2, 3, 6, 7);                                                        \
  v[3] = PJ_SH4(t1, t3, 2, 3, 6, 7); } while (0)
#define PJ_TREE1(NAME, T, VT, VTU, L, OP, ID, MAP, BASE)                                    \
static const T NAME##_pad[32] = {ID, ID, ID, ID, ID, ID, ID, ID, ID, ID, ID, ID, ID, ID, ID, \
  ID, ID, ID, ID, ID, ID, ID, ID, ID, ID, ID, ID, ID, ID, ID, ID, ID};                       \
static inline void NAME##_blk4(const T *const *w, T *out, int cont) {                      \
  VT a[4]; PJ_UNROLL for (int q = 0; q < 4; q++)                                             \
    a[q] = cont ? *(const VTU *)(out + L * q) : (VT){0} + ID;                                \
  for (int j0 = 0; j0 < 32; j0 += L)                                                         \
    for (int q = 0; q < 4; q++) {                                                            \
      VT v[L]; PJ_UNROLL for (int k = 0; k < L; k++) {                                     \
        const VT t_ = *(const VTU *)(w[L * q + k] + j0); v[k] = MAP(t_); }                 \
      PJ_TRANSPOSE_##L(v);                                                                   \
      PJ_UNROLL for (int k = 0; k < L; k++) a[q] = OP(a[q], v[k]); }                         \
  PJ_UNROLL for (int q = 0; q < 4; q++) *(VTU *)(out + L * q) = a[q]; }                      \
static inline void NAME##_blk1(const T *const *w, T *out, int cont) {                      \
  VT a0 = cont ? *(const VTU *)out : (VT){0} + ID;                                           \
  for (int j0 = 0; j0 < 32; j0 += L) {                                                       \
    VT v0[L];                                                                                \
    PJ_UNROLL for (int k = 0; k < L; k++) {                                                  \
      const VT t_ = *(const VTU *)(w[k] + j0); v0[k] = MAP(t_); }                            \
    PJ_TRANSPOSE_##L(v0);                                                                    \
    PJ_UNROLL for (int k = 0; k < L; k++) a0 = OP(a0, v0[k]); }                              \
  *(VTU *)out = a0; }                                                                        \
/* the window sums part[c] of windows c in [c_lo, c_hi) of a row of d > 32 elements, the  \
   row's element i read at xs[i - e0] (only those windows' elements are read) */            \
static void NAME##_win(const T *xs, int64_t e0, int64_t d, int64_t c_lo, int64_t c_hi,      \
                       T *part) {                                                           \
  const int64_t g = (d + 31) / 32, pd = (g * 32 - d) / 2;                                   \
  const int64_t cf = pd > 0 ? 1 : 0, ce = (d + pd) / 32, b = ce < c_hi ? ce : c_hi;         \
  if (cf && c_lo == 0) { T a = ID;                                                           \
    for (int64_t i = 0; i < 32 - pd; i++) a = OP(a, MAP(xs[i - e0])); part[0] = a; }         \
  for (int64_t c = ce > c_lo ? ce : c_lo; c < c_hi; c++) { T a = ID;                         \
    for (int64_t i = c * 32 - pd; i < d; i++) a = OP(a, MAP(xs[i - e0])); part[c] = a; }     \
  const T *w[4 * L]; T out[4 * L];                                                           \
  for (int64_t c = cf > c_lo ? cf : c_lo; c < b; ) {                                         \
    const int nw = b - c > 2 * L ? 4 * L : L;                                                \
    for (int k = 0; k < nw; k++) w[k] = c + k < b ? xs + ((c + k) * 32 - pd - e0) : NAME##_pad; \
    if (nw == 4 * L) NAME##_blk4(w, out, 0); else NAME##_blk1(w, out, 0);                    \
    for (int k = 0; k < nw && c + k < b; k++) part[c + k] = out[k];                          \
    c += nw; } }                                                                             \
static T NAME(const T *x, int64_t d) {                                                      \
  if (d <= 32) { T a = ID; for (int64_t i = 0; i < d; i++) a = OP(a, MAP(x[i])); return a; } \
  const int64_t g = (d + 31) / 32;                                                          \
  T stackbuf[512]; T *part = g <= 512 ? stackbuf : (T *)pj_scratch(sizeof(T) * (size_t)g);  \
  NAME##_win(x, 0, d, 0, g, part);                                                           \
  T r = BASE(part, g);                                                                       \
  if (part != stackbuf) pj_unscratch(part);                                                  \
  return r; }
/* Reductions over nd >= 2 dimensions whose last is longer than 32 (XLA's order: tiles of
   32 per dimension -- the whole dimension when it is not longer -- padded evenly, each
   summed in row-major order, then the grid of tile sums the same way; bit for bit the
   scalar pj_tree_* helper).  Tiles side by side along the last dimension advance together
   in vector lanes, one 32-element row of each at a time; bands of tiles along the first
   dimension run in parallel. */
#define PJ_TREE_ND(NAME, T1, T, L, OP, ID, SCALAR)                                           \
typedef struct { const T *x; int nd; const int64_t *dims, *st, *g, *p; T *part; } NAME##_job; \
static void NAME##_band(void *ctx, int64_t lo0, int64_t hi0) {                               \
  const NAME##_job *J = (const NAME##_job *)ctx;                                             \
  const int nd = J->nd, m = nd - 1;                                                          \
  const int64_t d = J->dims[m], pd = J->p[m], gl = J->g[m];                                  \
  const int64_t cf = pd > 0 ? 1 : 0, ce = (d + pd) / 32;                                     \
  int64_t nlead = 1; for (int k = 1; k < m; k++) nlead *= J->g[k];                           \
  const T *w[4 * L]; T out[4 * L];                                                           \
  for (int64_t cell = lo0 * nlead; cell < hi0 * nlead; cell++) {   /* leading tile coords */ \
    int64_t lo[8], hi[8], idx[8], rem = cell; int empty = 0;                                 \
    for (int k = m - 1; k >= 0; k--) { const int64_t c = rem % J->g[k]; rem /= J->g[k];      \
      const int64_t wk = J->dims[k] > 32 ? 32 : J->dims[k];                                  \
      lo[k] = c * wk - J->p[k]; hi[k] = lo[k] + wk;                                          \
      if (lo[k] < 0) lo[k] = 0; if (hi[k] > J->dims[k]) hi[k] = J->dims[k];                  \
      if (lo[k] >= hi[k]) empty = 1; }                                                        \
    T *part = J->part + cell * gl;                                                            \
    for (int64_t c = 0; c < gl; ) {                                                          \
      const int full = c >= cf && c < ce;                                                    \
      const int nw = !full ? 1 : (ce - c > 2 * L ? 4 * L : L);                               \
      const int64_t clo = c * 32 - pd < 0 ? 0 : c * 32 - pd, chi = c * 32 - pd + 32 < d ?    \
        c * 32 - pd + 32 : d;                                                                \
      T a = ID; int first = 1;                                                               \
      for (int k = 0; k < m; k++) idx[k] = lo[k];                                            \
      if (!empty) for (;;) {                                                                 \
        int64_t off = 0; for (int k = 0; k < m; k++) off += idx[k] * J->st[k];               \
        const T *row = J->x + off;                                                           \
        if (full) {                                                                          \
          for (int k = 0; k < nw; k++) w[k] = c + k < ce ? row + (c + k) * 32 - pd : T1##_pad; \
          if (nw == 4 * L) T1##_blk4(w, out, !first); else T1##_blk1(w, out, !first);       \
        } else {                                                                             \
          for (int64_t i = clo; i < chi; i++) a = OP(a, row[i]);                             \
        }                                                                                    \
        first = 0;                                                                           \
        int k = m - 1;                                                                       \
        while (k >= 0) { if (++idx[k] < hi[k]) break; idx[k] = lo[k]; k--; }                 \
        if (k < 0) break; }                                                                  \
      if (!full) { part[c] = a; c++; continue; }                                             \
      for (int k = 0; k < nw && c + k < ce; k++) part[c + k] = first ? ID : out[k];          \
      c += nw < ce - c ? nw : ce - c; } } }                                                  \
static T NAME(const T *x, int nd, const int64_t *dims) {                                     \
  int64_t g[8], p[8], st[8], ng = 1, n = 1;                                                  \
  for (int k = 0; k < nd; k++) n *= dims[k];                                                 \
  if (n == 0) return ID;   /* (a 0-size dimension has no windows) */                         \
  for (int k = 0; k < nd; k++) { const int64_t wk = dims[k] > 32 ? 32 : dims[k];             \
    g[k] = (dims[k] + wk - 1) / wk; p[k] = (g[k] * wk - dims[k]) / 2; ng *= g[k]; }          \
  st[nd - 1] = 1; for (int k = nd - 2; k >= 0; k--) st[k] = st[k + 1] * dims[k + 1];         \
  T stackbuf[512]; T *part = ng <= 512 ? stackbuf : (T *)pj_scratch(sizeof(T) * (size_t)ng); \
  NAME##_job J = {x, nd, dims, st, g, p, part};                                              \
  if (pj_parallel_for && n >= (1 << 16) && g[0] > 1) pj_parallel_for(NAME##_band, &J, g[0], 1); \
  else NAME##_band(&J, 0, g[0]);                                                             \
  T r = SCALAR(part, nd, g);                                                                 \
  if (part != stackbuf) pj_unscratch(part);                                                  \
  return r; }
#define PJ_T1_ADD(a, b) ((a) + (b))
#define PJ_T1_MUL(a, b) ((a) * (b))
#define PJ_T1_ID(x) (x)
#define PJ_T1_SQ(x) ((x) * (x))
PJ_TREE1(pj_tree1_sum_f, float, pj_v8f, pj_v8fu, 8, PJ_T1_ADD, 0.0f, PJ_T1_ID, pj_tree1_sum_f)
PJ_TREE1(pj_tree1_prod_f, float, pj_v8f, pj_v8fu, 8, PJ_T1_MUL, 1.0f, PJ_T1_ID, pj_tree1_prod_f)
PJ_TREE1(pj_tree1_sum_d, double, pj_v4d, pj_v4du, 4, PJ_T1_ADD, 0.0, PJ_T1_ID, pj_tree1_sum_d)
PJ_TREE1(pj_tree1_prod_d, double, pj_v4d, pj_v4du, 4, PJ_T1_MUL, 1.0, PJ_T1_ID, pj_tree1_prod_d)
/* the sum of the squares of a row, x[i] * x[i] rounded as a row buffer would hold it: no
   row buffer written and read back (the window sums are the plain helper's) */
PJ_TREE1(pj_tree1sq_sum_f, float, pj_v8f, pj_v8fu, 8, PJ_T1_ADD, 0.0f, PJ_T1_SQ, pj_tree1_sum_f)
PJ_TREE1(pj_tree1sq_sum_d, double, pj_v4d, pj_v4du, 4, PJ_T1_ADD, 0.0, PJ_T1_SQ, pj_tree1_sum_d)
/* Float sums of long rows in large arrays (``row_lanes``): lane j of W = 8 * L lanes
   (64 for float, 32 for double) sums elements j, j + W, j + 2W, ... in order from +0, the
   lanes then fold by halves (lane j + W/2 into lane j, ..., lane 1 into lane 0).  Eight
   independent vector accumulators and no shuffles until the end: a float32 row of 1,000
   costs 2-3x less than in XLA's window order.  A lane never holds -0 (it starts from +0),
   so the partial last step adds +0 to the lanes past the row's end exactly. */
#define PJ_LANES(NAME, T, VT, VTU, L, MAP)                                                 \
static T NAME(const T *x, int64_t d) {                                                      \
  VT a[8]; PJ_UNROLL for (int q = 0; q < 8; q++) a[q] = (VT){0};                             \
  const int64_t W = 8 * L, K = d / W, t = d - K * W;                                         \
  for (int64_t k = 0; k < K; k++) {                                                          \
    const T *p = x + k * W;                                                                  \
    PJ_UNROLL for (int q = 0; q < 8; q++) { const VT v_ = *(const VTU *)(p + L * q);         \
      a[q] += MAP(v_); } }                                                                   \
  if (t) { const T *p = x + K * W; const int nv = (int)(t / L), rem = (int)(t % L);        \
    for (int q = 0; q < nv; q++) { const VT v_ = *(const VTU *)(p + L * q); a[q] += MAP(v_); } \
    if (rem) { VT v_ = (VT){0}; for (int j = 0; j < rem; j++) v_[j] = MAP(p[L * nv + j]);  \
      a[nv] += v_; } }                                                                       \
  PJ_UNROLL for (int q = 0; q < 4; q++) a[q] += a[q + 4];                                    \
  a[0] += a[2]; a[1] += a[3]; a[0] += a[1];                                                   \
  T r[L]; *(VTU *)r = a[0];                                                                  \
  for (int h = L / 2; h >= 1; h /= 2) for (int j = 0; j < h; j++) r[j] += r[j + h];          \
  return r[0]; }
PJ_LANES(pj_lanes_sum_f, float, pj_v8f, pj_v8fu, 8, PJ_T1_ID)
PJ_LANES(pj_lanes_sum_d, double, pj_v4d, pj_v4du, 4, PJ_T1_ID)
PJ_LANES(pj_lanessq_sum_f, float, pj_v8f, pj_v8fu, 8, PJ_T1_SQ)
PJ_LANES(pj_lanessq_sum_d, double, pj_v4d, pj_v4du, 4, PJ_T1_SQ)
PJ_TREE_ND(pj_treen_sum_f, pj_tree1_sum_f, float, 8, PJ_T1_ADD, 0.0f, pj_tree_sum_f)
PJ_TREE_ND(pj_treen_prod_f, pj_tree1_prod_f, float, 8, PJ_T1_MUL, 1.0f, pj_tree_prod_f)
PJ_TREE_ND(pj_treen_sum_d, pj_tree1_sum_d, double, 4, PJ_T1_ADD, 0.0, pj_tree_sum_d)
PJ_TREE_ND(pj_treen_prod_d, pj_tree1_prod_d, double, 4, PJ_T1_MUL, 1.0, pj_tree_prod_d)
#endif
"""


# Float32/float64 sums over the trailing dimensions of operands of at least this many
# elements follow the lanes order (``row_lanes``): JAX 0.10.2 itself keeps XLA's window
# order only for smaller reductions (larger ones go to YNNPACK, whose order differs).
LANES_MIN_SIZE = 4096
LANES_MIN_ROW = 64


def row_lanes(prim, shape, axes, dtype):
  """The lane count W of the lanes order (``PJ_LANES``: lane j sums elements j, j + W, ...
  of a row in order from +0, then the lanes fold by halves) when ``prim`` over ``axes`` of
  an operand of ``shape`` and ``dtype`` uses it, else 0.  It does for float32 (W = 64) and
  float64 (W = 32) ``reduce_sum`` whose reduced dimensions, ignoring those of size 1, are
  the trailing ones, forming rows of more than 64 elements, at least two of them, in an
  operand of at least 4,096 elements.  Every tier decides by this function: the native
  row kernels call ``pj_lanes_*``, the NumPy tier and eager operations
  (``eager_reductions.lanes_sum``) compute the same order, so they give the same bits."""
  if prim != "reduce_sum":
    return 0
  name = np.dtype(dtype).name
  if name not in ("float32", "float64"):
    return 0
  red = set(axes)
  d = m = 1
  seen_red = False
  for i, n in enumerate(shape):
    if n == 1:
      continue
    if i in red:
      d *= n
      seen_red = True
    elif seen_red:
      return 0
    else:
      m *= n
  if d <= LANES_MIN_ROW or m < 2 or d * m < LANES_MIN_SIZE:
    return 0
  return 64 if name == "float32" else 32


def tree1_helper(prim, d):
  """The vectorized 1-D helper (TREE1_SOURCE) for float32/float64, else None."""
  name = np.dtype(d).name
  if name not in ("float32", "float64"):
    return None
  return f"pj_tree1_{'sum' if prim == 'reduce_sum' else 'prod'}_{'f' if name == 'float32' else 'd'}"
