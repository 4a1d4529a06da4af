"""Native ``lu``, ``triangular_solve`` and ``lu_pivots_to_permutation``: C kernels
(``opaque.py``) so that programs and loops holding a small dense solve (lineax's LU
solver, an optimistix Newton step) stay native instead of stopping at a NumPy step.

Results are the NumPy tier's (``eager/linalg.py``) bit for bit: the kernels call the
*same* LAPACK/BLAS routines SciPy's wrappers call (``getrf``, ``trsm`` of the OpenBLAS
library SciPy ships, found with ``dlopen(..., RTLD_NOLOAD)`` on the library SciPy has
already loaded) on the same column-major copies SciPy's wrappers make, with the same
arguments; pivots become 0-based and the permutation is built by the same sequence of
row swaps.  Only where both tiers surely run single-threaded inside OpenBLAS (``getrf``
below 10,000 elements, ``trsm`` below 1,024 right-hand-side elements, OpenBLAS's own
thresholds) and only for real float32/float64 operands; anything else (and a SciPy not
built on its bundled OpenBLAS) stays a NumPy step, as before.
"""
from __future__ import annotations

import glob
import os
import threading

import numpy as np

from pyjax._src.backends.cpu.compiler import opaque

_LU_MAX = 10000      # OpenBLAS getrf: single-threaded below m * n = 10000
_TRSM_MAX = 1024     # OpenBLAS trsm: single-threaded below m * n = 1024 (of B)
_lib = None
_lib_lock = threading.Lock()


def _library():
  """The path of SciPy's bundled OpenBLAS (exporting ``scipy_dgetrf_`` ...), or ''.
  Searched once, under a lock: a concurrent caller (the compiler's background thread and
  another lowering on the calling thread) waits for the answer, never sees a provisional
  '' (which would lower the op as a NumPy step depending on timing)."""
  global _lib
  if _lib is not None:
    return _lib
  with _lib_lock:
    if _lib is not None:
      return _lib
    found = ""
    try:
      import ctypes

      import scipy
      import scipy.linalg.lapack  # noqa: F401  -- loads the library the kernels look up
      base = os.path.join(os.path.dirname(os.path.dirname(scipy.__file__)), "scipy.libs")
      for p in sorted(glob.glob(os.path.join(base, "libscipy_openblas*.so*"))):
        if "openblas64" in os.path.basename(p):
          continue
        lib = ctypes.CDLL(p)
        if all(hasattr(lib, f"scipy_{t}{r}_") for t in "sd" for r in ("getrf", "trsm")):
          found = os.path.realpath(p)
          break
    except Exception:  # noqa: BLE001  -- no such library: these ops stay NumPy steps
      found = ""
    _lib = found
  return _lib


def _real(d):
  return np.dtype(d) in (np.dtype(np.float32), np.dtype(np.float64))


def _c_string(s):
  return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _lookup(name, sym, proto):
  """C lines binding ``{name}_fn`` (a ``proto`` function pointer) to ``sym`` of the
  library, once per process (a benign race: every thread stores the same address)."""
  return [
      "#include <dlfcn.h>",
      f"typedef {proto.format('(*' + name + '_t)')};",
      f"static {name}_t {name}_fn;",
      f"static int {name}_bind(void) {{",
      f"  if (__atomic_load_n(&{name}_fn, __ATOMIC_ACQUIRE)) return 1;",
      f"  void *h = dlopen({_c_string(_library())}, RTLD_NOW | RTLD_NOLOAD);",
      "  if (!h) return 0;",
      f"  void *f = dlsym(h, \"{sym}\");",
      "  if (!f) return 0;",
      f"  __atomic_store_n(&{name}_fn, ({name}_t)f, __ATOMIC_RELEASE);",
      "  return 1;",
      "}",
  ]


def _batch(shape, core):
  b = 1
  for d in shape[:len(shape) - core]:
    b *= d
  return b


# --- lu ---------------------------------------------------------------------------------
def _lu_supported(node):
  if not _library() or len(node.ins) != 1 or len(node.outs) != 3:
    return False
  x = node.ins[0]
  if type(x).__name__ == "Lit" or not _real(x.dtype) or x.ndim < 2:
    return False
  m, n = x.shape[-2:]
  k = min(m, n)
  lu, piv, perm = node.outs
  return (0 < m * n < _LU_MAX and _batch(x.shape, 2) > 0 and lu.dtype == x.dtype
          and tuple(lu.shape) == tuple(x.shape)
          and piv.dtype == np.int32 and tuple(piv.shape) == tuple(x.shape[:-2]) + (k,)
          and perm.dtype == np.int32 and tuple(perm.shape) == tuple(x.shape[:-2]) + (m,))


def _perm_lines(piv, perm, k, m, ind):
  """C: ``perm`` (m entries) from ``k`` sequential row swaps ``piv`` (out-of-range: none)."""
  return [
      f"{ind}for (int i = 0; i < {m}; i++) {perm}[i] = i;",
      f"{ind}for (int i = 0; i < {k}; i++) {{",
      f"{ind}  int j = {piv}[i];",
      f"{ind}  if (j < 0 || j >= {m}) j = i;",
      f"{ind}  int32_t t = {perm}[i]; {perm}[i] = {perm}[j]; {perm}[j] = t;",
      f"{ind}}}",
  ]


def _lu_source(node, name):
  x = node.ins[0]
  m, n = (int(d) for d in x.shape[-2:])
  k = min(m, n)
  B = _batch(x.shape, 2)
  t = "float" if x.dtype == np.float32 else "double"
  sym = f"scipy_{'s' if t == 'float' else 'd'}getrf_"
  L = _lookup(name, sym, "void {}(int *, int *, " + t + " *, int *, int *, int *)")
  L += [
      f"static void {name}(void *const *P) {{",
      f"  const {t} *x = (const {t} *)P[0];",
      f"  {t} *lu = ({t} *)P[1];",
      "  int32_t *piv = (int32_t *)P[2], *perm = (int32_t *)P[3];",
      f"  if (!{name}_bind()) abort();",
      f"  {t} *a = ({t} *)pj_scratch(sizeof({t}) * {m * n});",
      f"  int *ip = (int *)pj_scratch(sizeof(int) * {k});",
      f"  for (int64_t b = 0; b < {B}; b++) {{",
      f"    const {t} *xb = x + b * {m * n};",
      f"    {t} *ob = lu + b * {m * n};",
      f"    int32_t *pb = piv + b * {k}, *qb = perm + b * {m};",
      f"    for (int i = 0; i < {m}; i++) for (int j = 0; j < {n}; j++) a[j * {m} + i] = xb[i * {n} + j];",
      f"    int M = {m}, N = {n}, LDA = {m}, info = 0;",
      f"    {name}_fn(&M, &N, a, &LDA, ip, &info);",
      f"    for (int i = 0; i < {m}; i++) for (int j = 0; j < {n}; j++) ob[i * {n} + j] = a[j * {m} + i];",
      f"    for (int i = 0; i < {k}; i++) pb[i] = ip[i] - 1;",
  ]
  L += _perm_lines("pb", "qb", k, m, "    ")
  L += ["  }", "  pj_unscratch(ip);", "  pj_unscratch(a);", "}"]
  return "\n".join(L) + "\n"


def _lu_work(node):
  m, n = node.ins[0].shape[-2:]
  return _batch(node.ins[0].shape, 2) * m * n * min(m, n) + 1


# --- lu_pivots_to_permutation -------------------------------------------------------------
def _p2p_supported(node):
  if len(node.ins) != 1 or len(node.outs) != 1:
    return False
  p, o = node.ins[0], node.outs[0]
  if type(p).__name__ == "Lit" or p.ndim < 1 or np.dtype(p.dtype) != np.int32:
    return False
  size = int(node.params["permutation_size"])
  return (o.dtype == np.int32 and tuple(o.shape) == tuple(p.shape[:-1]) + (size,)
          and size > 0)


def _p2p_source(node, name):
  p = node.ins[0]
  k = int(p.shape[-1])
  m = int(node.params["permutation_size"])
  B = _batch(p.shape, 1)
  L = [f"static void {name}(void *const *P) {{",
       "  const int32_t *piv = (const int32_t *)P[0];",
       "  int32_t *perm = (int32_t *)P[1];",
       f"  for (int64_t b = 0; b < {B}; b++) {{",
       f"    const int32_t *pb = piv + b * {k};",
       f"    int32_t *qb = perm + b * {m};"]
  L += _perm_lines("pb", "qb", k, m, "    ")
  L += ["  }", "}"]
  return "\n".join(L) + "\n"


def _p2p_work(node):
  return node.outs[0].size + node.ins[0].size + 1


# --- triangular_solve ---------------------------------------------------------------------
def _ts_supported(node):
  if not _library() or len(node.ins) != 2 or len(node.outs) != 1:
    return False
  a, b = node.ins
  o = node.outs[0]
  if any(type(v).__name__ == "Lit" for v in (a, b)):
    return False
  if not _real(a.dtype) or a.dtype != b.dtype or o.dtype != b.dtype or a.ndim < 2 or b.ndim < 2:
    return False
  if tuple(o.shape) != tuple(b.shape) or a.shape[-1] != a.shape[-2]:
    return False
  if tuple(a.shape[:-2]) != tuple(b.shape[:-2]):
    return False
  m, n = b.shape[-2:]
  k = m if node.params["left_side"] else n
  return a.shape[-1] == k and 0 < m * n < _TRSM_MAX and _batch(b.shape, 2) > 0


def _ts_source(node, name):
  a, b = node.ins
  m, n = (int(d) for d in b.shape[-2:])
  k = int(a.shape[-1])
  B = _batch(b.shape, 2)
  p = node.params
  t = "float" if b.dtype == np.float32 else "double"
  sym = f"scipy_{'s' if t == 'float' else 'd'}trsm_"
  side = "R" if not p["left_side"] else "L"
  uplo = "L" if p["lower"] else "U"
  # SciPy's wrapper: trans_a 2 ('C') when conjugating a transpose; real OpenBLAS reads 'C'
  # as 'T' -- pass what the NumPy tier passes
  trans = ("C" if p["conjugate_a"] else "T") if p["transpose_a"] else "N"
  diag = "U" if p["unit_diagonal"] else "N"
  L = _lookup(name, sym, "void {}(char *, char *, char *, char *, int *, int *, " + t
              + " *, " + t + " *, int *, " + t + " *, int *)")
  L += [
      f"static void {name}(void *const *P) {{",
      f"  const {t} *a = (const {t} *)P[0], *bm = (const {t} *)P[1];",
      f"  {t} *out = ({t} *)P[2];",
      f"  if (!{name}_bind()) abort();",
      f"  {t} *af = ({t} *)pj_scratch(sizeof({t}) * {k * k});",
      f"  {t} *bf = ({t} *)pj_scratch(sizeof({t}) * {m * n});",
      f"  for (int64_t q = 0; q < {B}; q++) {{",
      f"    const {t} *aq = a + q * {k * k}, *bq = bm + q * {m * n};",
      f"    {t} *oq = out + q * {m * n};",
      f"    for (int i = 0; i < {k}; i++) for (int j = 0; j < {k}; j++) af[j * {k} + i] = aq[i * {k} + j];",
      f"    for (int i = 0; i < {m}; i++) for (int j = 0; j < {n}; j++) bf[j * {m} + i] = bq[i * {n} + j];",
      f"    char side = '{side}', uplo = '{uplo}', tr = '{trans}', dg = '{diag}';",
      f"    int M = {m}, N = {n}, LDA = {max(k, 1)}, LDB = {max(m, 1)};",
      f"    {t} alpha = 1.0;",
      f"    {name}_fn(&side, &uplo, &tr, &dg, &M, &N, &alpha, af, &LDA, bf, &LDB);",
      f"    for (int i = 0; i < {m}; i++) for (int j = 0; j < {n}; j++) oq[i * {n} + j] = bf[j * {m} + i];",
      "  }",
      "  pj_unscratch(bf);",
      "  pj_unscratch(af);",
      "}",
  ]
  return "\n".join(L) + "\n"


def _ts_work(node):
  a, b = node.ins
  return _batch(b.shape, 2) * a.shape[-1] * b.shape[-1] * b.shape[-2] + 1


opaque.register("lu", _lu_supported, _lu_source, _lu_work)
opaque.register("lu_pivots_to_permutation", _p2p_supported, _p2p_source, _p2p_work)
opaque.register("triangular_solve", _ts_supported, _ts_source, _ts_work)
