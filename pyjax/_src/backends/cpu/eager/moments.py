"""Eager ``jnp.var``/``jnp.std`` over leading axes in one step, bit for bit op by op.

``jnp.var(x, axis)`` is about sixteen eager primitives (a mean: a sum, a broadcast and a
division; the centered operand, its square, their sum, the normalizer, a division, a
``where``); on a (10000, 10) float32 operand they cost ~250 µs, most of it dispatch and
two full-size temporaries.  For the layout whose float sums the native reductions own
(``eager_reductions.sum_layout``'s "cols": the reduced dimensions lead, fewer than
``eager_native.COLS_MAX`` elements are kept, more than ``_ORDERED_MAX_SIZE`` elements in
all) the CPU backend's ``run_composite("column_var", ...)`` computes the variance here
instead: a C kernel (one per float dtype, through ``eager_native``'s caches) folds each
column's sum row after row, divides by the count, then folds each column's squared
deviations the same way and divides by the normalizer -- the very operations, in the very
order and rounding, that the primitives perform one by one (``-ffp-contract=off``: no
fused multiply-add), so the result is the same bits.  While the kernel builds (or with no
C compiler) the same steps run as a few NumPy calls, again the same bits.
"""
from __future__ import annotations

import ctypes

import numpy as np

from pyjax._src.backends.cpu.eager import native as _en
from pyjax._src.backends.cpu.eager import reductions as _er

_DTYPES = frozenset((np.dtype(np.float32), np.dtype(np.float64)))
_ENTRY_T = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                            ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p)
stats = {"native": 0, "numpy": 0}

# after eager_native's reduction code (T, pj_er_op = +, pj_er_fix = + 0, pj_er_cols_run):
# the column means into m, the variances into v; nn = {count, normalizer}
_MOMENTS_C = r"""
#define PJ_EM_COLS_N(N)                                                                   \
static void pj_em_sq_##N(const T *restrict x, const T *restrict m, T *restrict acc,       \
                         int64_t R) {                                                     \
  T a[N], mm[N];                                                                          \
  for (int j = 0; j < N; j++) { mm[j] = m[j]; T d = x[j] - mm[j]; a[j] = d * d; }         \
  for (int64_t i = 1; i < R; i++) {                                                       \
    const T *restrict xi = x + i * N;                                                     \
    _Pragma("GCC unroll 16") for (int j = 0; j < N; j++) {                                \
      T d = xi[j] - mm[j];                                                                \
      a[j] = a[j] + d * d;                                                                \
    }                                                                                     \
  }                                                                                       \
  for (int j = 0; j < N; j++) acc[j] = a[j];                                              \
}
PJ_EM_COLS_N(2) PJ_EM_COLS_N(3) PJ_EM_COLS_N(4) PJ_EM_COLS_N(5) PJ_EM_COLS_N(6)
PJ_EM_COLS_N(7) PJ_EM_COLS_N(8) PJ_EM_COLS_N(9) PJ_EM_COLS_N(10) PJ_EM_COLS_N(11)
PJ_EM_COLS_N(12) PJ_EM_COLS_N(13) PJ_EM_COLS_N(14) PJ_EM_COLS_N(15) PJ_EM_COLS_N(16)
static void pj_em_sq(const T *restrict x, const T *restrict m, T *restrict acc, int64_t R,
                     int64_t C) {
  switch (C) {
#define PJ_EM_CASE(N) case N: pj_em_sq_##N(x, m, acc, R); return;
    PJ_EM_CASE(2) PJ_EM_CASE(3) PJ_EM_CASE(4) PJ_EM_CASE(5) PJ_EM_CASE(6) PJ_EM_CASE(7)
    PJ_EM_CASE(8) PJ_EM_CASE(9) PJ_EM_CASE(10) PJ_EM_CASE(11) PJ_EM_CASE(12)
    PJ_EM_CASE(13) PJ_EM_CASE(14) PJ_EM_CASE(15) PJ_EM_CASE(16)
#undef PJ_EM_CASE
    default: break;
  }
  for (int64_t j = 0; j < C; j++) { T d = x[j] - m[j]; acc[j] = d * d; }
  for (int64_t i = 1; i < R; i++) {
    const T *restrict xi = x + i * C;
#pragma omp simd
    for (int64_t j = 0; j < C; j++) {
      T d = xi[j] - m[j];
      acc[j] = acc[j] + d * d;
    }
  }
}
void pj_em_entry(const void *xv, void *mv, void *vv, int64_t R, int64_t C, const void *nv) {
  const T *x = (const T *)xv;
  T *m = (T *)mv, *v = (T *)vv;
  const T n = ((const T *)nv)[0], norm = ((const T *)nv)[1];
  pj_er_cols_run(x, m, R, C);
  for (int64_t j = 0; j < C; j++) m[j] = pj_er_fix(m[j]) / n;
  pj_em_sq(x, m, v, R, C);
  for (int64_t j = 0; j < C; j++) v[j] = pj_er_fix(v[j]) / norm;
}
"""


def moments_source(dtype, toolchain):
  """The C of the column-variance library for ``dtype`` (float32 or float64)."""
  from pyjax._src.backends.cpu.compiler import cmodule
  from pyjax._src.backends.cpu.compiler.kernels import elementwise
  return "\n".join([elementwise.prelude(toolchain.float16, toolchain.mvec), cmodule._RUNTIME_DECL,
                    _en.reduce_source("reduce_sum", dtype), _MOMENTS_C])


def _layout(x, axes):
  """(R, C) when the variance of ``x`` over ``axes`` runs here, else None."""
  if (not _en.ENABLED or x.dtype not in _DTYPES or not axes or not x.flags.c_contiguous
      or not x.flags.aligned or x.size <= _er._ORDERED_MAX_SIZE
      or x.size < _en.MIN_ELEMENTS):
    return None
  lay = _er.sum_layout(x.shape, sorted(axes))
  if lay is None or lay[0] != "cols" or lay[2] >= _en.COLS_MAX:
    return None
  return lay[1], lay[2]


def column_var(x, *, axes, correction):
  """The variance of the float32/float64 NumPy array ``x`` over ``axes`` (the kept
  elements, flat in row-major order) with ``count - correction`` as the normalizer, each
  bit as ``jnp.var``'s primitives give it one by one; None when this layout is not one
  this module handles or the normalizer is not positive (the caller runs the primitives)."""
  lay = _layout(x, axes)
  if lay is None:
    return None
  R, C = lay
  d = x.dtype
  nn = np.empty(2, d)
  nn[0] = R
  nn[1] = nn[0] - np.asarray(correction, d)   # lax.sub of the two scalars
  if not nn[1] > 0:
    return None   # var's where(normalizer > 0, ..., nan)
  fn = _en._cached_kernel(("column_var", d), lambda: _load(d))
  if fn is None:   # building, or no C compiler: the same steps on NumPy
    stats["numpy"] += 1
    x2 = x.reshape(R, C)
    m = (np.add.reduce(x2, axis=0) + _er._ZEROS[d]) / nn[0]
    c = x2 - m
    np.square(c, out=c)
    return (np.add.reduce(c, axis=0) + _er._ZEROS[d]) / nn[1]
  stats["native"] += 1
  m = np.empty(C, d)
  v = np.empty(C, d)
  fn(x.ctypes.data, m.ctypes.data, v.ctypes.data, R, C, nn.ctypes.data)
  return v


def _load(dtype):
  return _en._load_library(lambda tc: moments_source(dtype, tc), "pj_em_entry", _ENTRY_T)


def run(name, bufs, params):
  """``CpuBackend.run_composite``: the buffers of composite ``name`` or None."""
  if name == "column_var":
    v = column_var(bufs[0], **params)
    return None if v is None else (v,)
  return None
