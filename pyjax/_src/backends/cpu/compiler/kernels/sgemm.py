"""pyjax's own float32 GEMM micro-kernel (AVX-512), part of the ``dot_general`` family:
both jit tiers run each float32 BLAS block (``dot.py``'s ``pj_gemm_block``, the NumPy
tier's ``numpy_tier/native.py``) through ``pj_sgemm_rm`` first and fall back to OpenBLAS's
``sgemm`` where it declines, so a product gives the same bits on either tier.

``pj_sgemm_rm(ta, tb, m, n, k, a, lda, b, ldb, c, ldc)`` computes the row-major
``C[m, n] = op(A)[m, k] @ B[k, n]`` (``ta``: ``A`` stored ``k x m``) with an 8 x 32 register
tile (16 AVX-512 accumulators), reading ``A`` and an untransposed ``B`` in place (no
packing: at the MLP step's sizes a block's operands sit in L2); a transposed ``B``
(``tb``: stored ``n x k``) is packed 256 products x 32 columns at a time.  Each element of
``C`` is the float32 sum of fixed chunks of 256 products, each chunk one fused
multiply-add chain from +0 in ``k`` order, the chunks added in order -- the bits depend on
the operands' values and ``k`` only: never on the layout (``ta``, ``tb``), the blocks, the
threads or the load, so the two tiers agree even where they lay an operand out
differently.  Columns past ``n`` are masked (nothing outside the operands is read or
written); a last strip of fewer than 8 rows runs the same code, its missing rows reading
the first row again and never stored.

It declines (returns -1, the caller runs OpenBLAS) without AVX-512 (the runtime is built
with ``-march=native``), for products of fewer than 64 columns or 16 rows (partly
masked vectors and partial strips: OpenBLAS is faster there, e.g. 37x45x300 at 72 against
102 GFLOP/s) and for a ``B`` of more than 2**18 elements (1 MB: read in place, it no longer
stays in L2; OpenBLAS's packing blocks it for the cache -- 1000x2000x300 at 95 against 100)
-- a rule on the shape alone, so both tiers decide alike.

Single thread, at the MLP step's block shapes (quiet machine): 128x256x784 and 128x256x512
(forward) 109-111 GFLOP/s against OpenBLAS's 96-97, 256-400x512x128 (weight gradients)
107 against 98-100, 128x256x512 with a transposed ``B`` (input gradient) 87-94 against 96
(the FMA peak is 117).
"""
from __future__ import annotations

import ctypes

SOURCE = r"""
/* --- pj_sgemm_rm: float32 GEMM (compiler/kernels/sgemm.py) --- */
#if defined(__AVX512F__)
#include <immintrin.h>
#define PJ_SG_MR 8
#define PJ_SG_KC 256

/* one tile: rows [0, mr) x 32 columns (masks m0, m1) of C over the ``kc`` products from
   ``a`` (element (r, p) at a[r * as_i + p * as_p]) and ``b`` (row p at b + p * ldb);
   ``first``: store, else add to C */
static inline void pj_sg_tile(int64_t kc, const float *a, int64_t as_i,
                              int64_t as_p, const float *b, int64_t ldb, float *c,
                              int64_t ldc, int mr, __mmask16 m0, __mmask16 m1, int first) {
  /* rows past mr read row 0 again (valid memory; their sums are never stored), so every
     tile runs the same code with its 16 accumulators in registers */
  int64_t o[PJ_SG_MR];
  for (int r = 0; r < PJ_SG_MR; r++) o[r] = (r < mr ? r : 0) * as_i;
  const int64_t o0 = o[0], o1 = o[1], o2 = o[2], o3 = o[3], o4 = o[4], o5 = o[5], o6 = o[6],
                o7 = o[7];
  __m512 c00 = _mm512_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00,
         c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00, c60 = c00,
         c61 = c00, c70 = c00, c71 = c00;
  for (int64_t p = 0; p < kc; p++) {
    const float *bp = b + p * ldb, *ap = a + p * as_p;
    const __m512 b0 = _mm512_maskz_loadu_ps(m0, bp), b1 = _mm512_maskz_loadu_ps(m1, bp + 16);
    __m512 v;
#define PJ_SG_ROW(off, x0, x1) \
    v = _mm512_set1_ps(ap[off]); x0 = _mm512_fmadd_ps(v, b0, x0); x1 = _mm512_fmadd_ps(v, b1, x1);
    PJ_SG_ROW(o0, c00, c01) PJ_SG_ROW(o1, c10, c11) PJ_SG_ROW(o2, c20, c21)
    PJ_SG_ROW(o3, c30, c31) PJ_SG_ROW(o4, c40, c41) PJ_SG_ROW(o5, c50, c51)
    PJ_SG_ROW(o6, c60, c61) PJ_SG_ROW(o7, c70, c71)
#undef PJ_SG_ROW
  }
  const __m512 acc[PJ_SG_MR][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31},
                                   {c40, c41}, {c50, c51}, {c60, c61}, {c70, c71}};
  for (int r = 0; r < mr; r++) {
    float *cr = c + r * ldc;
    __m512 x0 = acc[r][0], x1 = acc[r][1];
    if (!first) {
      x0 = _mm512_add_ps(_mm512_maskz_loadu_ps(m0, cr), x0);
      x1 = _mm512_add_ps(_mm512_maskz_loadu_ps(m1, cr + 16), x1);
    }
    _mm512_mask_storeu_ps(cr, m0, x0);
    _mm512_mask_storeu_ps(cr + 16, m1, x1);
  }
}

/* op(B)[p0:p1, j0:j0+nr] of a transposed B (row j of ``b`` holds column j) as rows of 32 */
static void pj_sg_pack(const float *b, int64_t ldb, int64_t j0, int64_t nr, int64_t p0,
                       int64_t p1, float *panel) {
  int64_t j = 0;
  for (; j + 16 <= nr; j += 16) {   /* 16 x 16 blocks: 16 row loads, strided stores */
    int64_t p = p0;
    for (; p + 16 <= p1; p += 16) {
      __m512 r[16];
      for (int q = 0; q < 16; q++) r[q] = _mm512_loadu_ps(b + (j0 + j + q) * ldb + p);
      float t[16][16];
      for (int q = 0; q < 16; q++) _mm512_storeu_ps(t[q], r[q]);
      for (int pp = 0; pp < 16; pp++)
        for (int q = 0; q < 16; q++) panel[(p - p0 + pp) * 32 + j + q] = t[q][pp];
    }
    for (; p < p1; p++)
      for (int q = 0; q < 16; q++) panel[(p - p0) * 32 + j + q] = b[(j0 + j + q) * ldb + p];
  }
  for (; j < nr; j++)
    for (int64_t p = p0; p < p1; p++) panel[(p - p0) * 32 + j] = b[(j0 + j) * ldb + p];
}

int pj_sgemm_rm(int ta, int tb, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                const float *b, int64_t ldb, float *c, int64_t ldc) {
  /* (a rule on the shape only: both tiers decide alike) */
  if (n < 64 || m < 16 || k < 1 || k * n > ((int64_t)1 << 18)) return -1;
  const int64_t as_i = ta ? 1 : lda, as_p = ta ? lda : 1;
  float panel[PJ_SG_KC * 32] __attribute__((aligned(64)));
  for (int64_t j0 = 0; j0 < n; j0 += 32) {
    const int64_t nr = n - j0 < 32 ? n - j0 : 32;
    const __mmask16 m0 = nr >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << nr) - 1);
    const __mmask16 m1 = nr >= 32 ? (__mmask16)0xFFFF
                         : nr <= 16 ? (__mmask16)0 : (__mmask16)((1u << (nr - 16)) - 1);
    for (int64_t p0 = 0; p0 < k; p0 += PJ_SG_KC) {
      const int64_t p1 = p0 + PJ_SG_KC < k ? p0 + PJ_SG_KC : k;
      const float *bp = b + p0 * ldb + j0;
      int64_t ldbp = ldb;
      if (tb) {
        pj_sg_pack(b, ldb, j0, nr, p0, p1, panel);
        bp = panel;
        ldbp = 32;
      }
      for (int64_t i0 = 0; i0 < m; i0 += PJ_SG_MR) {
        const int mr = (int)(m - i0 < PJ_SG_MR ? m - i0 : PJ_SG_MR);
        pj_sg_tile(p1 - p0, a + i0 * as_i + p0 * as_p, as_i, as_p, bp, ldbp,
                   c + i0 * ldc + j0, ldc, mr, m0, m1, p0 == 0);
      }
    }
  }
  return 0;
}
#else
int pj_sgemm_rm(int ta, int tb, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                const float *b, int64_t ldb, float *c, int64_t ldc) {
  (void)ta; (void)tb; (void)m; (void)n; (void)k; (void)a; (void)lda; (void)b; (void)ldb;
  (void)c; (void)ldc;
  return -1;
}
#endif
"""

_fn = []


def address(toolchain):
  """The runtime's ``pj_sgemm_rm`` address, or 0 (no runtime)."""
  from pyjax._src.backends.cpu.compiler.native import runtime
  lib = runtime.load(toolchain) if toolchain is not None else None
  if lib is None:
    return 0
  return ctypes.cast(lib.pj_sgemm_rm, ctypes.c_void_p).value or 0


def function():
  """``pj_sgemm_rm`` as a ctypes function (the NumPy tier's entry; the call releases the
  GIL), or None when no runtime exists."""
  if not _fn:
    from pyjax._src.backends.cpu.compiler.native import build
    try:
      addr = address(build.toolchain())
    except Exception:  # noqa: BLE001  -- no runtime: OpenBLAS everywhere
      addr = 0
    i64, p = ctypes.c_int64, ctypes.c_void_p
    _fn.append(ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.c_int, i64, i64, i64, p,
                                i64, p, i64, p, i64)(addr) if addr else None)
  return _fn[0]


def block(fn, ta, tb, a, b, c):
  """Run ``c = a @ b`` (float32; ``c`` a row-major view with unit column stride; ``a`` and
  ``b`` views of C-contiguous matrices or, with ``ta`` / ``tb``, of the transpose of one)
  through ``fn`` (``function()``); False when it declined."""
  m, n = c.shape
  k = b.shape[0]
  lda = (a.strides[1] if ta else a.strides[0]) // 4
  ldb = (b.strides[1] if tb else b.strides[0]) // 4
  return fn(int(ta), int(tb), m, n, k, a.ctypes.data, lda, b.ctypes.data, ldb,
            c.ctypes.data, c.strides[0] // 4) == 0
