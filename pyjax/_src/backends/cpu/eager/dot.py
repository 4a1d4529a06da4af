"""Eager NumPy implementation of ``dot_general`` (``lax/dot.py``), and the compute-type
helpers the convolution (``convolution.py``) shares.

It reduces to (batched) ``np.matmul`` so floating-point work goes to BLAS: the operands
are transposed to (batch, free, contracting) and (batch, contracting, free).

Compute types (XLA's semantics): half and 8-bit floats are computed in float32;
integer and bool contractions are exact modulo 2**64 and then wrap to the output type
(small integer types go through float64 BLAS when that is exact); a float result
requested as an integer type (``preferred_element_type``) converts with saturation.

Integer, bool, float16 and bfloat16 products run on pyjax's native GEMM
(``compiler/kernels/gemm.py``, the kernel the compiled tier uses too) when a C compiler exists:
integers wrap in the output width, halves accumulate in float32 in the kernel's fixed
order (see there), so eager, NumPy-tier and compiled results are bit-identical.
"""
from __future__ import annotations

import math

import numpy as np

from pyjax._src.backends.cpu.eager.registry import impls, register

_f32 = np.dtype(np.float32)
_f64 = np.dtype(np.float64)
_c64 = np.dtype(np.complex64)
_c128 = np.dtype(np.complex128)
_i64 = np.dtype(np.int64)


def _kind(d):
  """'c', 'f' or 'i' (bool counts as integer); ml_dtypes floats are 'f'."""
  k = d.kind
  if k == "c":
    return "c"
  if k == "f" or k == "V":
    return "f"
  if k in "iub":
    return "i"
  return "f"  # ml_dtypes custom floats report kind 'V' or similar


_compute_dtype_cache = {}


def _compute_dtype(d1, d2, pref):
  key = (d1, d2, pref)
  ct = _compute_dtype_cache.get(key)
  if ct is None:
    kinds = {_kind(d1), _kind(d2)}
    wide = _f64 in (d1, d2) or _c128 in (d1, d2) or (pref is not None and pref in (_f64, _c128))
    if "c" in kinds:
      ct = _c128 if wide else _c64
    elif "f" in kinds:
      ct = _f64 if wide else _f32
    else:
      ct = _i64
    _compute_dtype_cache[key] = ct
  return ct


def _int_work_dtype(a, b, k):
  """float64 when every partial sum of an int/bool product is exactly representable
  (so BLAS can be used), else int64 (exact, wrapping mod 2**64)."""
  if a.size and b.size and a.dtype.itemsize <= 2 and b.dtype.itemsize <= 2:
    amax = max(abs(int(a.min())), abs(int(a.max())))
    bmax = max(abs(int(b.min())), abs(int(b.max())))
    if amax * bmax * max(k, 1) < 2 ** 53:
      return _f64
  return _i64


def _int_matmul(a, b):
  """Exact integer matmul of int/bool arrays shaped (..., m, k) and (..., k, n)."""
  work = _int_work_dtype(a, b, a.shape[-1])
  out = np.matmul(a.astype(work, copy=False), b.astype(work, copy=False))
  return out if work == _i64 else out.astype(_i64)


def _matmul(a, b, ct):
  if ct == _i64:
    return _int_matmul(a, b)
  return np.matmul(a.astype(ct, copy=False), b.astype(ct, copy=False))


def _finish(out, pref):
  """Convert the computed result to ``preferred_element_type`` with XLA's conversion
  semantics (saturating float->int, real part of complex); otherwise leave the cast
  to the dispatcher (integer wrap-around, nonzero -> True)."""
  if pref is None:
    return out
  pref = np.dtype(pref)
  if out.dtype == pref:
    return out
  if out.dtype.kind in "fc" and pref.kind in "iuc" or (out.dtype.kind == "c" and pref.kind != "c"):
    return impls["convert_element_type"](out, new_dtype=pref)
  return out


def _is_fp8(d):
  return d.kind == "V" and d.itemsize == 1 and d.name.startswith("float8")


def _convert_mixed(lhs, rhs, out_dtype):
  """Operands of different dtypes: as JAX's CPU lowering does, convert both to the output
  type first (XLA's conversion: float -> int truncates and saturates), except for two
  float8 operands."""
  if _is_fp8(lhs.dtype) and _is_fp8(rhs.dtype):
    return lhs, rhs
  conv = impls["convert_element_type"]
  return conv(lhs, new_dtype=out_dtype), conv(rhs, new_dtype=out_dtype)


# --- dot_general -------------------------------------------------------------------------
_HALVES = frozenset(["float16", "bfloat16"])
# integer products smaller than this (multiply-adds) stay on NumPy (a native call costs a
# few microseconds); half-precision ones always run natively, so that the summation order
# is the compiled tier's at every size
NATIVE_INT_MIN_WORK = 16384
_gemm = None


def _native_dot(lhs, rhs, lc, rc, lb, rb, pref):
  """dot_general on the native GEMM (``compiler/kernels/gemm.py``) for integer, bool and
  half-precision operands: the operands are viewed (or copied, when no view exists) as
  (batch, free, contracting) and (batch, contracting, free); None when the kernel does
  not cover the dtypes or no C compiler exists."""
  global _gemm
  dt = lhs.dtype
  if dt != rhs.dtype or dt.kind not in "iub" and dt.name not in _HALVES:
    return None
  out_dt = dt if pref is None else np.dtype(pref)
  lf = [i for i in range(lhs.ndim) if i not in lb and i not in lc]
  rf = [i for i in range(rhs.ndim) if i not in rb and i not in rc]
  bshape = tuple(lhs.shape[i] for i in lb)
  lfs = tuple(lhs.shape[i] for i in lf)
  rfs = tuple(rhs.shape[i] for i in rf)
  nb, m, n = math.prod(bshape), math.prod(lfs), math.prod(rfs)
  k = math.prod(lhs.shape[i] for i in lc)
  if dt.kind in "iub" and nb * m * n * k < NATIVE_INT_MIN_WORK:
    return None
  if _gemm is None:
    from pyjax._src.backends.cpu.compiler.kernels import gemm as gemm_c
    _gemm = gemm_c
  if _gemm.acc_of(dt, dt, out_dt) is None:
    return None
  a = np.transpose(lhs, list(lb) + lf + list(lc)).reshape(nb, m, k)
  b = np.transpose(rhs, list(rb) + list(rc) + rf).reshape(nb, k, n)
  out = _gemm.eager_matmul(a, b, out_dt)
  return None if out is None else out.reshape(bshape + lfs + rfs)


@register("dot_general")
def _dot_general(lhs, rhs, *, dimension_numbers, precision=None,
                 preferred_element_type=None, out_sharding=None):
  (lc, rc), (lb, rb) = dimension_numbers
  if preferred_element_type is not None and lhs.dtype != rhs.dtype:
    lhs, rhs = _convert_mixed(lhs, rhs, np.dtype(preferred_element_type))
  out = _native_dot(lhs, rhs, lc, rc, lb, rb, preferred_element_type)
  if out is not None:
    return out
  ct = _compute_dtype(lhs.dtype, rhs.dtype, preferred_element_type)
  # fast path: plain matrix/vector products
  if not lb and len(lc) == 1 and rc == (0,) and lc[0] == lhs.ndim - 1 and lhs.ndim <= 2 \
      and rhs.ndim <= 2:
    if lhs.ndim == 1 or rhs.ndim == 1:
      a = lhs if lhs.ndim == 2 else lhs[None, :]
      b = rhs if rhs.ndim == 2 else rhs[:, None]
      out = _matmul(a, b, ct)
      out = out.reshape(lhs.shape[:-1] + rhs.shape[1:])
    else:
      out = _matmul(lhs, rhs, ct)
    return _finish(out, preferred_element_type)
  lf = [i for i in range(lhs.ndim) if i not in lb and i not in lc]
  rf = [i for i in range(rhs.ndim) if i not in rb and i not in rc]
  bshape = tuple(lhs.shape[i] for i in lb)
  lfs = tuple(lhs.shape[i] for i in lf)
  rfs = tuple(rhs.shape[i] for i in rf)
  ksize = math.prod(lhs.shape[i] for i in lc)
  a = np.transpose(lhs, list(lb) + lf + list(lc))
  b = np.transpose(rhs, list(rb) + list(rc) + rf)
  nb, m, n = math.prod(bshape), math.prod(lfs), math.prod(rfs)
  if lb:
    a = a.reshape(nb, m, ksize)
    b = b.reshape(nb, ksize, n)
  else:
    a = a.reshape(m, ksize)
    b = b.reshape(ksize, n)
  out = _matmul(a, b, ct)
  return _finish(out.reshape(bshape + lfs + rfs), preferred_element_type)


def _grouped_matmul(kern, cols, ct):
  """(G, m, k) x (G, N, k, n) -> (G, N, m, n).  NumPy's matmul does not use BLAS for
  broadcast batch dimensions, so loop over 2-D products (or materialize the kernel for
  many small products)."""
  g, nb = cols.shape[:2]
  m, n = kern.shape[1], cols.shape[-1]
  work = _int_work_dtype(kern, cols, kern.shape[-1]) if ct == _i64 else ct
  kern = kern.astype(work, copy=False)
  cols = cols.astype(work, copy=False)
  if g * nb > 64:
    kb = np.ascontiguousarray(np.broadcast_to(kern[:, None], (g, nb) + kern.shape[1:]))
    out = np.matmul(kb.reshape((g * nb,) + kern.shape[1:]),
                    cols.reshape((g * nb,) + cols.shape[2:])).reshape(g, nb, m, n)
  else:
    out = np.empty((g, nb, m, n), work)
    for i in range(g):
      for j in range(nb):
        np.matmul(kern[i], cols[i, j], out=out[i, j])
  return out.astype(ct, copy=False)
