"""Native GEMM for the dtypes BLAS does not cover: integers (int8..int64, uint8..uint64),
bool, float16 and bfloat16.  One C kernel serves both tiers: the eager ``dot_general``
(``eager/dot.py``, through a small library built per dtype combination) and the
compiled tier (registered in ``opaque.py``, so fusion runs it like a BLAS dot).

The kernel computes ``C[b, i, j] = sum_k A[b, i, k] * B[b, k, j]`` for operands given by
a base pointer and three element strides each (so eager transposed or strided views
need no copy) into a C-contiguous ``(nb, m, n)`` result:

- cache blocking as in GotoBLAS/BLIS: the contraction is cut into ``kc`` (256) slices;
  a ``kc x nc`` slice of ``B`` is packed into panels of ``NR`` columns and a ``mc x kc``
  slice of ``A`` into panels of ``MR`` rows, both converted to the accumulator type and
  zero-padded at the edges, so the micro-kernel always runs a full tile and nothing is
  read out of bounds; scratch memory is bounded (a few hundred KB per thread);
- a register-blocked ``MR x NR`` micro-kernel written with GCC vector types (``NR`` is
  two vectors of the widest the target has: 6 x 32 int32 with AVX-512), which the
  compiler turns into broadcast, multiply and add instructions over 12 accumulators kept
  in registers (no intrinsics: the same C builds for AVX2 or SSE);
- only the valid part of each tile is stored; work items (batch element, block column,
  group of block rows) run on pyjax's thread pool (``native/runtime.py``).

Semantics (XLA's):

- integers wrap around: products and sums are computed modulo ``2**bits`` in an unsigned
  accumulator at least as wide as the output (uint16 for 8- and 16-bit outputs, uint32,
  uint64), operands sign- or zero-extended from their own type, so ``int8 x int8 ->
  int32`` (``preferred_element_type``) accumulates in 32 bits and ``int8 x int8 -> int8``
  wraps to 8 bits; the order of the sums does not matter (exact);
- bool x bool -> bool is ``any(a & b)``;
- float16/bfloat16 are widened to float32 (float16 operands in one vectorized pass
  before the product, as XLA converts them) and each output element is accumulated in
  float32 in one fixed order, then rounded once to the output type (nearest even).
  float16 sums run in order ``k = 0, 1, 2, ...``; bfloat16 sums take the elements in
  pairs, the odd one first (``k = 1, 0, 3, 2, ...``), as the AVX512-BF16 dot-product
  instruction XLA's CPU backend uses does (denormals aside: that instruction flushes
  them).  Between contraction slices the micro-kernel resumes from the float32 partial
  sums, so the order is the same for every shape, block size and thread count, and the
  eager and compiled tiers give identical bits.  XLA's own float32 GEMM regroups long
  contractions and thin products, so float16 results differ from JAX's in the last bit
  for some elements of such products (bit-identical on the shapes the tests list).
"""
from __future__ import annotations

import ctypes
import math
import threading

import numpy as np

from pyjax._src.backends.cpu.compiler.kernels import elementwise as elementwise_c
from pyjax._src.backends.cpu.compiler import opaque
from pyjax._src.backends.cpu.compiler.ir import Value, dot_dims as _dims

PRIM = "dot_general"

_BOOL = np.dtype(np.bool_)
_F16 = np.dtype(np.float16)
_F32 = np.dtype(np.float32)
_INTS = tuple(np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64,
                                    np.uint8, np.uint16, np.uint32, np.uint64))

# micro-kernel rows and vectors per row (accumulators: MR * NV vector registers)
MR = 6
NV = 2
# contraction slice (integers) and block byte budgets
_KC = 256
_A_BLOCK_BYTES = 192 * 1024
_B_BLOCK_BYTES = 512 * 1024


def _bf16():
  return elementwise_c.BF16


def _tag(d):
  """A C identifier fragment for dtype ``d``."""
  d = np.dtype(d)
  if d == _BOOL:
    return "b1"
  if d == _F16:
    return "f16"
  if d == _bf16():
    return "bf16"
  return d.name


def acc_of(ta, tb, tc):
  """The accumulator kind for operands ``ta``, ``tb`` and result ``tc``, or None when
  this kernel does not cover the combination."""
  ta, tb, tc = np.dtype(ta), np.dtype(tb), np.dtype(tc)
  if ta != tb:
    return None
  if ta in (_F16, _bf16()):
    return "f32" if tc in (ta, _F32) else None
  if tc == _BOOL:
    return "b8" if ta == _BOOL else None
  if ta != _BOOL and ta not in _INTS:
    return None
  if tc not in _INTS:
    return None
  bits = tc.itemsize * 8
  return "u16" if bits <= 16 else f"u{bits}"


_ACC_CTYPE = {"b8": "uint8_t", "u16": "uint16_t", "u32": "uint32_t", "u64": "uint64_t",
              "f32": "float"}
_ACC_SIZE = {"b8": 1, "u16": 2, "u32": 4, "u64": 8, "f32": 4}


_BASE = r"""
#ifndef PJ_XG_BASE
#define PJ_XG_BASE 1
#if defined(__AVX512F__) && defined(__AVX512BW__)
#define PJ_XG_VB 64
#elif defined(__AVX__)
#define PJ_XG_VB 32
#else
#define PJ_XG_VB 16
#endif
/* C[b, i, j] = sum_k A[b, i, k] B[b, k, j]: strides in elements; C is contiguous */
typedef struct { int64_t nb, m, n, k, sab, sam, sak, sbb, sbk, sbn; const void *a, *b;
                 void *c; } pj_xg_t;
typedef struct { int64_t kc, mc, nc, mt, nt, ng, gs; } pj_xg_blocks_t;
/* block sizes: kc the contraction slice, mc x kc of A and kc x nc of B within byte
   budgets.  A work item is (batch element, block column, group
   of gs block rows): it packs each slice of its B block once and reuses it for every
   block row of its group; blocks and groups are cut small enough for a few work items
   per thread */
static inline pj_xg_blocks_t pj_xg_blocks(const pj_xg_t *G, int64_t mr, int64_t nr,
                                          int64_t esize) {
  pj_xg_blocks_t Z;
  Z.kc = G->k < %(KC)d ? G->k : %(KC)d;
  if (Z.kc < 1) Z.kc = 1;
  int64_t mc = %(ABYTES)d / (Z.kc * esize) / mr * mr, nc = %(BBYTES)d / (Z.kc * esize) / nr * nr;
  if (mc < mr) mc = mr;
  if (nc < nr) nc = nr;
  const int64_t mfull = (G->m + mr - 1) / mr * mr, nfull = (G->n + nr - 1) / nr * nr;
  if (mc > mfull) mc = mfull;
  if (nc > nfull) nc = nfull;
  while (G->nb * ((G->n + nc - 1) / nc) < 8 && nc >= 2 * nr) nc = (nc / 2 + nr - 1) / nr * nr;
  Z.mc = mc; Z.nc = nc;
  Z.mt = (G->m + mc - 1) / mc; Z.nt = (G->n + nc - 1) / nc;
  const int64_t cols = G->nb * Z.nt;
  Z.ng = cols >= 8 ? 1 : (8 + cols - 1) / cols;
  if (Z.ng > Z.mt) Z.ng = Z.mt;
  Z.gs = (Z.mt + Z.ng - 1) / Z.ng;
  Z.ng = (Z.mt + Z.gs - 1) / Z.gs;
  return Z;
}
#endif
""" % {"KC": _KC, "ABYTES": _A_BLOCK_BYTES, "BBYTES": _B_BLOCK_BYTES}


def _acc_source(acc):
  """Vector type and micro-kernel of accumulator kind ``acc`` (guarded)."""
  t = _ACC_CTYPE[acc]
  size = _ACC_SIZE[acc]
  v = f"pj_xg_v_{acc}"
  lines = [f"#ifndef PJ_XG_ACC_{acc}", f"#define PJ_XG_ACC_{acc} 1",
           f"typedef {t} {v} __attribute__((vector_size(PJ_XG_VB)));",
           f"#define PJ_XG_VL_{acc} (PJ_XG_VB / {size})",
           f"#define PJ_XG_NR_{acc} ({NV} * PJ_XG_VL_{acc})",
           f"/* t[MR][NR] = (init ? t : 0) + sum_p a[p][0..MR) (x) b[p][0..NR): a {MR}x{NV}-vector "
           "register tile */",
           f"static inline void pj_xg_ukr_{acc}(int64_t kc, const {t} *restrict a, "
           f"const {t} *restrict b, {t} *restrict t, int init) {{",
           f"  enum {{ VL = PJ_XG_VL_{acc}, NR = PJ_XG_NR_{acc} }};"]
  names = [f"c{i}_{j}" for i in range(MR) for j in range(NV)]
  lines.append(f"  {v} " + ", ".join(f"{n} = {{0}}" for n in names) + ";")
  lines.append("  if (init) {   /* continue the sums held in t (float32: the same order) */")
  for i in range(MR):
    for j in range(NV):
      lines.append(f"    memcpy(&c{i}_{j}, t + {i} * NR + {j} * VL, sizeof c{i}_{j});")
  lines.append("  }")
  lines.append("  for (int64_t p = 0; p < kc; p++) {")
  lines.append(f"    {v} " + ", ".join(f"b{j}" for j in range(NV)) + ";")
  for j in range(NV):
    lines.append(f"    memcpy(&b{j}, b + p * NR + {j} * VL, sizeof b{j});")
  lines.append(f"    const {t} *ap = a + p * {MR};")
  for i in range(MR):
    if acc == "b8":
      stmts = [f"c{i}_{j} |= b{j} & ap[{i}];" for j in range(NV)]
    else:
      stmts = [f"c{i}_{j} += b{j} * ap[{i}];" for j in range(NV)]
    lines.append(f"    {{ " + " ".join(stmts) + " }")
  lines.append("  }")
  for i in range(MR):
    for j in range(NV):
      lines.append(f"  memcpy(t + {i} * NR + {j} * VL, &c{i}_{j}, sizeof c{i}_{j});")
  lines.append("}")
  lines.append("#endif")
  return "\n".join(lines) + "\n"


def _load_expr(d, acc, x):
  """C converting the element ``x`` (storage type of ``d``) to accumulator ``acc``."""
  d = np.dtype(d)
  if d == _F16:
    return f"pj_h2f({x})"
  if d == _bf16():
    return f"pj_bf2f({x})"
  if d == _BOOL:
    return f"({_ACC_CTYPE[acc]})({x} != 0)"
  return f"({_ACC_CTYPE[acc]})({x})"   # sign- or zero-extension, or truncation, modulo 2**w


def _pack_source(d, acc):
  """Packing routines of operands of dtype ``d`` into ``acc`` panels (guarded)."""
  key = f"{_tag(d)}_{acc}"
  st = elementwise_c.storage_type(d)
  t = _ACC_CTYPE[acc]
  swap = np.dtype(d) == _bf16()
  # the contraction index in packed order: bfloat16 pairs odd element first
  kk = "((p ^ 1) < kc ? (p ^ 1) : p)" if swap else "p"
  return f"""#ifndef PJ_XG_PACK_{key}
#define PJ_XG_PACK_{key} 1
/* A[mc x kc] (strides sam, sak) -> panels of {MR} rows: dst[panel][p][0..{MR}) */
static void pj_xg_packa_{key}({t} *restrict dst, const {st} *restrict A, int64_t sam,
                              int64_t sak, int64_t mc, int64_t kc) {{
  for (int64_t i0 = 0; i0 < mc; i0 += {MR}) {{
    const int64_t mr = mc - i0 < {MR} ? mc - i0 : {MR};
    {t} *restrict q = dst + i0 * kc;
    for (int64_t p = 0; p < kc; p++) {{
      const {st} *restrict s = A + (i0 * sam + {kk} * sak);
      int64_t i = 0;
      for (; i < mr; i++) q[p * {MR} + i] = {_load_expr(d, acc, "s[i * sam]")};
      for (; i < {MR}; i++) q[p * {MR} + i] = 0;
    }}
  }}
}}
/* B[kc x nc] (strides sbk, sbn) -> panels of nr columns: dst[panel][p][0..nr) */
static void pj_xg_packb_{key}({t} *restrict dst, const {st} *restrict B, int64_t sbk,
                              int64_t sbn, int64_t kc, int64_t nc, int64_t nr) {{
  for (int64_t j0 = 0; j0 < nc; j0 += nr) {{
    const int64_t w = nc - j0 < nr ? nc - j0 : nr;
    {t} *restrict q = dst + j0 * kc;
    for (int64_t p = 0; p < kc; p++) {{
      const {st} *restrict s = B + ({kk} * sbk + j0 * sbn);
      int64_t j = 0;
      if (sbn == 1) {{
        #pragma omp simd
        for (int64_t jj = 0; jj < w; jj++) q[p * nr + jj] = {_load_expr(d, acc, "s[jj]")};
        j = w;
      }} else {{
        for (; j < w; j++) q[p * nr + j] = {_load_expr(d, acc, "s[j * sbn]")};
      }}
      for (; j < nr; j++) q[p * nr + j] = 0;
    }}
  }}
}}
#endif
"""


def _store_source(acc, tc):
  """Tile store of accumulator ``acc`` into results of dtype ``tc`` (guarded): the first
  contraction slice overwrites, later ones add (integers) -- floats have one slice."""
  key = f"{acc}_{_tag(tc)}"
  st = elementwise_c.storage_type(tc)
  t = _ACC_CTYPE[acc]
  tc = np.dtype(tc)
  if acc == "f32":
    conv = {_F16: "pj_f2h(v)", _bf16(): "pj_f2bf(v)"}.get(tc, "v")
    body = f"C[i * ldc + j] = {conv};"
  elif acc == "b8":
    body = "C[i * ldc + j] = (uint8_t)(first ? v : (uint8_t)(C[i * ldc + j] | v));"
  else:
    body = f"C[i * ldc + j] = ({st})(first ? v : ({t})(({t})C[i * ldc + j] + v));"
  return f"""#ifndef PJ_XG_STORE_{key}
#define PJ_XG_STORE_{key} 1
static inline void pj_xg_store_{key}({st} *restrict C, int64_t ldc, int64_t mr, int64_t nr,
                                     int64_t NR, const {t} *restrict T, int first) {{
  (void)first;
  if (nr == NR) {{     /* a full row: NR is a constant once inlined, so this vectorizes */
    for (int64_t i = 0; i < mr; i++)
      for (int64_t j = 0; j < NR; j++) {{ const {t} v = T[i * NR + j]; {body} }}
    return;
  }}
  for (int64_t i = 0; i < mr; i++)
    for (int64_t j = 0; j < nr; j++) {{ const {t} v = T[i * NR + j]; {body} }}
}}
#endif
"""


def combo_name(ta, tb, tc):
  return f"pj_xg_run_{_tag(ta)}_{_tag(tb)}_{_tag(tc)}"


_F16_CONVERT = r"""
#ifndef PJ_XG_F16_CONVERT
#define PJ_XG_F16_CONVERT 1
/* rows [lo, hi) of the float32 copies of A (nb*m rows of k) and then B (nb*k rows of n) */
typedef struct { const pj_xg_t *G; float *a32, *b32; } pj_xg_cvt_t;
static void pj_xg_cvt_range(void *ctx, int64_t lo, int64_t hi) {
  const pj_xg_cvt_t *V = (const pj_xg_cvt_t *)ctx;
  const pj_xg_t *G = V->G;
  const uint16_t *A = (const uint16_t *)G->a, *B = (const uint16_t *)G->b;
  for (int64_t r = lo; r < hi; r++) {
    if (r < G->nb * G->m) {
      const int64_t b = r / G->m, i = r % G->m;
      const uint16_t *s = A + (b * G->sab + i * G->sam);
      float *restrict d = V->a32 + r * G->k;
      if (G->sak == 1) {
        #pragma omp simd
        for (int64_t p = 0; p < G->k; p++) d[p] = pj_h2f(s[p]);
      } else {
        for (int64_t p = 0; p < G->k; p++) d[p] = pj_h2f(s[p * G->sak]);
      }
    } else {
      const int64_t q = r - G->nb * G->m, b = q / G->k, p = q % G->k;
      const uint16_t *s = B + (b * G->sbb + p * G->sbk);
      float *restrict d = V->b32 + q * G->n;
      if (G->sbn == 1) {
        #pragma omp simd
        for (int64_t j = 0; j < G->n; j++) d[j] = pj_h2f(s[j]);
      } else {
        for (int64_t j = 0; j < G->n; j++) d[j] = pj_h2f(s[j * G->sbn]);
      }
    }
  }
}
#endif
"""


def driver_source(ta, tb, tc):
  """C defining ``void <combo_name>(const pj_xg_t *G)`` (guarded) and what it uses.
  float16 operands are first converted to float32 copies (a vectorized pass: the
  conversion costs more than a copy, and packing would repeat it per block), then run
  through the float32-operand driver: the same sums in the same order."""
  acc = acc_of(ta, tb, tc)
  if acc is None:
    raise ValueError(f"no native GEMM for {ta} x {tb} -> {tc}")
  if np.dtype(ta) == _F16:
    name = combo_name(ta, tb, tc)
    inner = combo_name(_F32, _F32, tc)
    sc = elementwise_c.storage_type(tc)
    return (_driver_source(_F32, _F32, tc, acc) + _F16_CONVERT + f"""
#ifndef PJ_XG_DRV_{name}
#define PJ_XG_DRV_{name} 1
static void {name}(const pj_xg_t *G) {{
  if (G->nb <= 0 || G->m <= 0 || G->n <= 0) return;
  if (G->k <= 0) {{ memset(G->c, 0, sizeof({sc}) * (size_t)(G->nb * G->m * G->n)); return; }}
  pj_xg_cvt_t V = {{G, (float *)malloc(sizeof(float) * (size_t)(G->nb * G->m * G->k)),
                    (float *)malloc(sizeof(float) * (size_t)(G->nb * G->k * G->n))}};
  if (!V.a32 || !V.b32) abort();
  const int64_t rows = G->nb * (G->m + G->k);
  const int64_t grain = 65536 / (G->k > G->n ? G->k : G->n) + 1;
  if (pj_parallel_for && G->nb * (G->m * G->k + G->k * G->n) >= (1 << 17))
    pj_parallel_for(pj_xg_cvt_range, (void *)&V, rows, grain);
  else
    pj_xg_cvt_range((void *)&V, 0, rows);
  const pj_xg_t G32 = {{G->nb, G->m, G->n, G->k, G->m * G->k, G->k, 1, G->k * G->n, G->n, 1,
                        V.a32, V.b32, G->c}};
  {inner}(&G32);
  free(V.b32);
  free(V.a32);
}}
#endif
""")
  return _driver_source(ta, tb, tc, acc)


def _driver_source(ta, tb, tc, acc):
  name = combo_name(ta, tb, tc)
  t = _ACC_CTYPE[acc]
  sa, sb, sc = elementwise_c.storage_type(ta), elementwise_c.storage_type(tb), elementwise_c.storage_type(tc)
  ka, kb, ks = f"{_tag(ta)}_{acc}", f"{_tag(tb)}_{acc}", f"{acc}_{_tag(tc)}"
  parts = [_BASE, _acc_source(acc), _pack_source(ta, acc)]
  if np.dtype(tb) != np.dtype(ta):
    parts.append(_pack_source(tb, acc))
  parts.append(_store_source(acc, tc))
  head = f"""  {t} *pa = ({t} *)pj_scratch(sizeof({t}) * (size_t)(Z.mc * Z.kc) + 64);
  {t} *pb = ({t} *)pj_scratch(sizeof({t}) * (size_t)(Z.nc * Z.kc) + 64);
  const {sa} *A = (const {sa} *)G->a;
  const {sb} *B = (const {sb} *)G->b;
  {sc} *C = ({sc} *)G->c;
"""
  loop = f"""  for (int64_t u = lo; u < hi; u++) {{
    const int64_t bi = u / (Z.nt * Z.ng), r = u % (Z.nt * Z.ng);
    const int64_t j0 = (r / Z.ng) * Z.nc, g0 = (r % Z.ng) * Z.gs * Z.mc;
    const int64_t g1 = g0 + Z.gs * Z.mc < G->m ? g0 + Z.gs * Z.mc : G->m;
    const int64_t nc = G->n - j0 < Z.nc ? G->n - j0 : Z.nc;
"""
  pack_b = (f"pj_xg_packb_{kb}(pb, B + (bi * G->sbb + p0 * G->sbk + j0 * G->sbn), G->sbk, "
            f"G->sbn, kc, nc, NR);")
  pack_a = (f"pj_xg_packa_{ka}(pa, A + (bi * G->sab + i0 * G->sam + p0 * G->sak), G->sam, "
            f"G->sak, mc, kc);")
  store = (f"pj_xg_store_{ks}(Cb + ir * G->n + jr, G->n, mc - ir < {MR} ? mc - ir : {MR}, "
           f"nc - jr < NR ? nc - jr : NR, NR, {{tile}}, {{first}});")
  if acc != "f32":
    # integers (exact in any order): each contraction slice of the B block is packed once
    # and used by every block row of the group; slices after the first add into C
    body = head + f"""  {t} *T = ({t} *)pj_scratch(sizeof({t}) * {MR} * NR);
  if (!pa || !pb || !T) abort();
""" + loop + f"""    for (int64_t p0 = 0; p0 < G->k; p0 += Z.kc) {{
      const int64_t kc = G->k - p0 < Z.kc ? G->k - p0 : Z.kc;
      {pack_b}
      for (int64_t i0 = g0; i0 < g1; i0 += Z.mc) {{
        const int64_t mc = g1 - i0 < Z.mc ? g1 - i0 : Z.mc;
        {sc} *Cb = C + (bi * G->m + i0) * G->n + j0;
        {pack_a}
        for (int64_t jr = 0; jr < nc; jr += NR)
          for (int64_t ir = 0; ir < mc; ir += {MR}) {{
            pj_xg_ukr_{acc}(kc, pa + ir * kc, pb + jr * kc, T, 0);
            {store.format(tile="T", first="p0 == 0")}
          }}
      }}
    }}
  }}
  pj_unscratch(T);
"""
  else:
    # float32 sums: every output element is summed over the whole contraction in order
    # (the micro-kernel resumes from the partial sums W holds between slices), then
    # rounded once; B slices are packed per block row
    body = head + f"""  {t} *W = ({t} *)pj_scratch(sizeof({t}) * (size_t)(Z.mc * Z.nc) + 64);
  if (!pa || !pb || !W) abort();
""" + loop + f"""    for (int64_t i0 = g0; i0 < g1; i0 += Z.mc) {{
      const int64_t mc = g1 - i0 < Z.mc ? g1 - i0 : Z.mc;
      const int64_t ntj = (nc + NR - 1) / NR;
      {sc} *Cb = C + (bi * G->m + i0) * G->n + j0;
      for (int64_t p0 = 0; p0 < G->k; p0 += Z.kc) {{
        const int64_t kc = G->k - p0 < Z.kc ? G->k - p0 : Z.kc;
        const int last = p0 + kc >= G->k;
        {pack_b}
        {pack_a}
        for (int64_t jr = 0; jr < nc; jr += NR)
          for (int64_t ir = 0; ir < mc; ir += {MR}) {{
            {t} *Wt = W + ((ir / {MR}) * ntj + jr / NR) * ({MR} * NR);
            pj_xg_ukr_{acc}(kc, pa + ir * kc, pb + jr * kc, Wt, p0 > 0);
            if (last) {store.format(tile="Wt", first="1")}
          }}
      }}
    }}
  }}
  pj_unscratch(W);
"""
  parts.append(f"""#ifndef PJ_XG_DRV_{name}
#define PJ_XG_DRV_{name} 1
static void {name}_range(void *ctx, int64_t lo, int64_t hi) {{
  const pj_xg_t *G = (const pj_xg_t *)ctx;
  enum {{ NR = PJ_XG_NR_{acc} }};
  const pj_xg_blocks_t Z = pj_xg_blocks(G, {MR}, NR, {_ACC_SIZE[acc]});
{body}  pj_unscratch(pb);
  pj_unscratch(pa);
}}
static void {name}(const pj_xg_t *G) {{
  if (G->nb <= 0 || G->m <= 0 || G->n <= 0) return;
  if (G->k <= 0) {{ memset(G->c, 0, sizeof({sc}) * (size_t)(G->nb * G->m * G->n)); return; }}
  const pj_xg_blocks_t Z = pj_xg_blocks(G, {MR}, PJ_XG_NR_{acc}, {_ACC_SIZE[acc]});
  const int64_t units = G->nb * Z.nt * Z.ng;
  if (pj_parallel_for && units > 1 && G->m * G->n * G->k >= (1 << 15))
    pj_parallel_for({name}_range, (void *)G, units, 1);
  else
    {name}_range((void *)G, 0, units);
}}
#endif
""")
  return "".join(parts)


# --- compiled tier (opaque kernel) --------------------------------------------------------
def node_supported(node):
  """Whether the dot ``node`` has this native kernel (dtypes only; layouts are made
  canonical by ``dot.canonicalize``)."""
  if node.prim != PRIM or len(node.ins) != 2 or len(node.outs) != 1:
    return False
  lhs, rhs = node.ins
  if type(lhs) is not Value or type(rhs) is not Value:
    return False
  return acc_of(lhs.dtype, rhs.dtype, node.outs[0].dtype) is not None


def _supported(node):
  if not node_supported(node):
    return False
  from pyjax._src.backends.cpu.compiler.kernels import dot
  return dot.orientation(node) is not None


def _geometry(node):
  """(nb, m, n, k, (sab, sam, sak), (sbb, sbk, sbn)) of a canonical dot."""
  lc, rc, lb, rb, lf, rf = _dims(node)
  lhs, rhs = node.ins
  nb = math.prod(lhs.shape[i] for i in lb)
  m = math.prod(lhs.shape[i] for i in lf)
  n = math.prod(rhs.shape[i] for i in rf)
  k = math.prod(lhs.shape[i] for i in lc)
  from pyjax._src.backends.cpu.compiler.kernels import dot
  tl, tr = dot.orientation(node)
  sa = (m * k, 1, m) if tl else (m * k, k, 1)
  sb = (k * n, 1, k) if tr else (k * n, n, 1)
  return nb, m, n, k, sa, sb


def work(node):
  nb, m, n, k, _, _ = _geometry(node)
  return nb * m * n * max(k, 1)


def kernel_source(node, name):
  """C of ``name(void *const *P)``: ``P`` = (lhs, rhs, out) data pointers."""
  lhs, rhs = node.ins
  out = node.outs[0]
  nb, m, n, k, sa, sb = _geometry(node)
  drv = combo_name(lhs.dtype, rhs.dtype, out.dtype)
  return (driver_source(lhs.dtype, rhs.dtype, out.dtype)
          + f"static void {name}(void *const *P) {{\n"
          f"  pj_xg_t G = {{{nb}, {m}, {n}, {k}, {sa[0]}, {sa[1]}, {sa[2]}, {sb[0]}, {sb[1]}, "
          f"{sb[2]}, P[0], P[1], P[2]}};\n"
          f"  {drv}(&G);\n}}\n")


opaque.register(PRIM, _supported, kernel_source, work)


# --- eager tier ----------------------------------------------------------------------------
_libs = {}
_libs_lock = threading.Lock()
_NONE = object()


class _Args(ctypes.Structure):
  _fields_ = [(f, ctypes.c_int64) for f in ("nb", "m", "n", "k", "sab", "sam", "sak",
                                            "sbb", "sbk", "sbn")] + \
             [("a", ctypes.c_void_p), ("b", ctypes.c_void_p), ("c", ctypes.c_void_p)]


def library_source(ta, tb, tc, toolchain):
  """The C of the eager library for one dtype combination: the prelude every compiled
  unit has, the runtime hooks, the driver and an exported entry ``pj_xg_entry``."""
  from pyjax._src.backends.cpu.compiler import cmodule
  return "\n".join([elementwise_c.prelude(toolchain.float16, toolchain.mvec), cmodule._RUNTIME_DECL,
                    driver_source(ta, tb, tc),
                    f"void pj_xg_entry(const pj_xg_t *G) {{ {combo_name(ta, tb, tc)}(G); }}\n"])


def _entry(ta, tb, tc):
  """The loaded ``pj_xg_entry`` for a combination, or None (no C compiler, build error)."""
  key = (ta, tb, tc)
  fn = _libs.get(key)
  if fn is not None:
    return None if fn is _NONE else fn
  with _libs_lock:
    fn = _libs.get(key)
    if fn is None:
      fn = _NONE
      try:
        from pyjax._src.backends.cpu.compiler.native import build
        from pyjax._src.backends.cpu.compiler.native import cache
        from pyjax._src.backends.cpu.compiler.native import runtime
        tc_ = build.toolchain()
        if tc_ is not None:
          lib = cache.get_library(library_source(ta, tb, tc, tc_), tc_)
          lib.pyjax_set_runtime.argtypes = [ctypes.c_void_p] * 3
          lib.pyjax_set_runtime.restype = None
          sa, sf = runtime.scratch_addresses(tc_)
          lib.pyjax_set_runtime(runtime.parallel_for_address(tc_) or None, sa or None,
                                sf or None)
          # through a plain C function pointer: the call releases the GIL (the library is
          # loaded as a PyDLL, whose functions keep it)
          addr = ctypes.cast(lib.pj_xg_entry, ctypes.c_void_p).value
          fn = ctypes.CFUNCTYPE(None, ctypes.POINTER(_Args))(addr)
          fn._pyjax_lib = lib   # keeps the library loaded
      except Exception:  # noqa: BLE001  -- no native kernel: the caller uses NumPy
        fn = _NONE
      _libs[key] = fn
  return None if fn is _NONE else fn


def _strides3(x):
  """Element strides of ``x``, or None when its data or strides are not aligned to its
  element size (then it is copied)."""
  s = x.strides
  isz = x.itemsize
  if x.ctypes.data % isz or any(v % isz for v in s):
    return None
  return tuple(v // isz for v in s)


def eager_matmul(a, b, out_dtype):
  """``a @ b`` for ``a`` shaped (nb, m, k) and ``b`` shaped (nb, k, n) (any strides) into
  a new C-contiguous (nb, m, n) array of ``out_dtype``, or None when no native kernel
  covers the dtypes (or no C compiler exists)."""
  out_dtype = np.dtype(out_dtype)
  if acc_of(a.dtype, b.dtype, out_dtype) is None:
    return None
  fn = _entry(a.dtype, b.dtype, out_dtype)
  if fn is None:
    return None
  sa = _strides3(a)
  if sa is None:
    a = np.array(a, order="C")           # a fresh, aligned copy
    sa = _strides3(a)
  sb = _strides3(b)
  if sb is None:
    b = np.array(b, order="C")
    sb = _strides3(b)
  nb, m, k = a.shape
  n = b.shape[2]
  out = np.empty((nb, m, n), out_dtype)
  args = _Args(nb, m, n, k, sa[0], sa[1], sa[2], sb[0], sb[1], sb[2],
               a.ctypes.data, b.ctypes.data, out.ctypes.data)
  fn(ctypes.byref(args))
  return out
