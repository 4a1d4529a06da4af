"""dot_general on BLAS: float32/float64 contractions call SciPy's BLAS ``sgemm``/``dgemm``
through their function pointers (``scipy.linalg.cython_blas``), from native code, once per
batch element.

``canonicalize(program)`` makes every BLAS-able dot read operands laid out as
``(batch..., free..., contracting...)`` or ``(batch..., contracting..., free...)`` for
the left operand and ``(batch..., contracting..., free...)`` or
``(batch..., free..., contracting...)`` for the right one (either orientation maps onto
a BLAS transpose flag): other layouts get an explicit ``transpose`` in front, which fusion
then computes from the operand's producers (so ``dot(exp(x).T, y)`` costs one fused
kernel, not a copy).  The result is ``(batch..., lhs free..., rhs free...)``, as XLA
lays it out.
"""
from __future__ import annotations

import ctypes
import math

from pyjax._src.backends.cpu.compiler.kernels import gemm
from pyjax._src.backends.cpu.compiler.kernels import elementwise as elementwise_c
from pyjax._src.backends.cpu.compiler.ir import Node, Value, dot_dims as _dims

_INT_MAX = 2 ** 31 - 1


def orientation(node):
  """(lhs transposed?, rhs transposed?) for a canonical dot, or None."""
  lc, rc, lb, rb, lf, rf = _dims(node)
  lhs, rhs = node.ins
  ident_l = list(range(lhs.ndim))
  ident_r = list(range(rhs.ndim))
  if lb + lf + lc == ident_l:
    tl = False
  elif lb + lc + lf == ident_l:
    tl = True
  else:
    return None
  if rb + rc + rf == ident_r:
    tr = False
  elif rb + rf + rc == ident_r:
    tr = True
  else:
    return None
  return tl, tr


def blas_able(node):
  lhs, rhs = node.ins
  out = node.outs[0]
  if type(lhs) is not Value or type(rhs) is not Value:
    return False
  d = out.dtype
  if d not in (elementwise_c.F32, elementwise_c.F64) or lhs.dtype != d or rhs.dtype != d:
    return False
  lc, rc, lb, rb, lf, rf = _dims(node)
  m = math.prod(lhs.shape[i] for i in lf)
  n = math.prod(rhs.shape[i] for i in rf)
  k = math.prod(lhs.shape[i] for i in lc)
  return max(m, n, k) <= _INT_MAX


def canonicalize(program):
  """Insert transposes so that every BLAS-able dot, and every dot the native GEMM
  (``gemm.py``) runs, has a canonical operand layout."""
  new_nodes = []
  for node in program.nodes:
    if node.prim == "dot_general" and (blas_able(node) or gemm.node_supported(node)) \
        and orientation(node) is None:
      lc, rc, lb, rb, lf, rf = _dims(node)
      lhs, rhs = node.ins
      nb = len(lb)
      ident_l = list(range(lhs.ndim))
      if not (lb + lf + lc == ident_l or lb + lc + lf == ident_l):
        perm = lb + lf + lc
        t = Value(tuple(lhs.shape[i] for i in perm), lhs.dtype)
        new_nodes.append(Node("transpose", {"permutation": tuple(perm)}, [lhs], [t]))
        lhs = t
        lb, lc = list(range(nb)), list(range(nb + len(lf), lhs.ndim))
      ident_r = list(range(rhs.ndim))
      if not (rb + rc + rf == ident_r or rb + rf + rc == ident_r):
        perm = rb + rc + rf
        t = Value(tuple(rhs.shape[i] for i in perm), rhs.dtype)
        new_nodes.append(Node("transpose", {"permutation": tuple(perm)}, [rhs], [t]))
        rhs = t
        rb, rc = list(range(nb)), list(range(nb, nb + len(rc)))
      node.ins = [lhs, rhs]
      node.params = dict(node.params, dimension_numbers=((tuple(lc), tuple(rc)),
                                                         (tuple(lb), tuple(rb))))
    new_nodes.append(node)
  program.nodes = new_nodes
  return program


def epilogue_columns(node):
  """The column count of dot ``node``'s result seen as a matrix (its rhs free size)."""
  lc, rc, lb, rb, lf, rf = _dims(node)
  return math.prod(node.ins[1].shape[i] for i in rf)


def emit_call(node, slot, ctype_of, epilogue=None):
  """C statements computing the dot ``node``; ``slot(v)`` gives a value's pointer
  expression.  The product runs through ``pj_gemm_run`` (GEMM_HELPERS): BLAS itself runs
  single-threaded and pyjax's pool splits the work (batch items, or blocks of the larger
  of the output's rows and columns: ``block_size``) across threads.

  ``epilogue``: (kernel name, its parameter expressions, form) of a map kernel that reads
  the product only at the index it computes (``fusion.Fusion._epilogue_able``): each
  thread runs it on a block as soon as BLAS wrote the block, while it is in cache -- an
  optimizer's ``w - lr * grad`` or a layer's activation no longer reads the product back
  from memory, and takes no pass of the pool of its own.  The kernel's values do not
  depend on the blocks, so the bits are those of the product then the kernel."""
  lhs, rhs = node.ins
  out = node.outs[0]
  tl, tr = orientation(node)
  lc, rc, lb, rb, lf, rf = _dims(node)
  nb = math.prod(lhs.shape[i] for i in lb)
  m = math.prod(lhs.shape[i] for i in lf)
  n = math.prod(rhs.shape[i] for i in rf)
  k = math.prod(lhs.shape[i] for i in lc)
  t = elementwise_c.storage_type(out.dtype)
  a, b, c = slot(lhs), slot(rhs), slot(out)
  lines = ["{"]
  lines.append(f"  const {t} *pa = (const {t} *)({a}); const {t} *pb = (const {t} *)({b});")
  lines.append(f"  {t} *pc = ({t} *)({c});")
  if epilogue is not None:
    kname, args, _ = epilogue
    lines.append(f"  void *P[{max(len(args), 1)}] = {{{', '.join(args) or '0'}}};")
  if m == 0 or n == 0 or nb == 0:
    lines.append("  (void)pa; (void)pb; (void)pc;")
  elif k == 0:
    lines.append(f"  (void)pa; (void)pb; memset(pc, 0, sizeof({t}) * {nb * m * n});")
  else:
    dbl = 1 if out.dtype == elementwise_c.F64 else 0
    ep = (f"{epilogue[0]}_tile, (void *)P, {epilogue[2]}" if epilogue is not None
          else "0, 0, 0")
    lines.append(f"  pj_gemm_job job = {{{dbl}, {int(tl)}, {int(tr)}, {m}, {n}, {k}, {nb}, "
                 f"pa, pb, pc, {block_size(m, n, k, nb)}, {ep}, 1}};")
    lines.append("  pj_gemm_run(&job);")
    epilogue = None
  if epilogue is not None:   # nothing to split: the kernel runs on its own
    lines.append(f"  {epilogue[0]}(P);")
  lines.append("}")
  return lines


def block_size(m, n, k, nb):
  """Rows of C (when ``m >= n``) or columns of C that one BLAS call computes in a single
  product (``nb <= 1``; a batched product makes one call per item).  OpenBLAS's bits
  depend on the shape of each call (its small-matrix and edge kernels accumulate in other
  orders), so the blocks are a function of the shapes alone -- never of the thread count
  or of the load (a busy pool runs the same blocks serially) -- and the NumPy tier makes
  the same calls (``tier_native``): a product gives the same bits on every tier, machine
  and load.  One block below 2**18 multiply-adds, else 2, 4 or 8 blocks of equal size
  (a multiple of 16; the last may be shorter by less than 16), each at least 256 rows (two
  blocks of at least 128 rows for 256 to 511 rows, so those run on two threads: a vmapped
  256x256 matvec over 100 vectors in one block took 1.5x JAX's time): each call
  packs the whole other operand, so 128-row blocks of a 1000x1000 float32 product cost
  ~10% more work than 256-row ones, and a power of two of equal blocks keeps 2 or 4 threads
  evenly loaded (the MLP step's 784-row weight gradient in 256, 256, 256 and 16 rows left
  one of two threads idle, and the pool took the wait for a stall)."""
  if nb > 1:
    return 0
  u, v = (m, n) if m >= n else (n, m)
  if u * v * k < 1 << 18:
    return max(u, 1)
  blocks = min(8, max(1, u // 256))
  blocks = 1 << (blocks.bit_length() - 1)
  if blocks == 1 and u >= 256:   # a mid-size product: two blocks of >= 128 rows, so it
    blocks = 2                   # runs on two threads (one packing of the other operand more)
  bs = -(-u // blocks)
  return min(-(-bs // 16) * 16, max(u, 1))


GEMM_HELPERS = r"""
/* Row-major C[m,n] = A[m,k] B[k,n] (A stored k x m when ta, B stored n x k when tb), per
   batch item, on Fortran BLAS (column-major: C^T = B^T A^T).  Work is split over batch
   items, or over blocks of ``bs`` rows (m >= n) or columns of C (dot.block_size: fixed by
   the shapes, so the bits never depend on the threads), on pyjax's thread pool. */
typedef struct { int dbl, ta, tb; int64_t m, n, k, nb; const void *a, *b; void *c; int64_t bs;
                 void (*ep)(void *, int64_t, int64_t, int64_t, int64_t); void *ep_ctx;
                 int ep_form, own; }
  pj_gemm_job;

/* the epilogue (dot.emit_call) on the block of rows [r0, r1) x columns [c0, c1) of C just
   written (unbatched products only): form 2 takes rows and a column range, form 1 linear
   element ranges (one per row unless the block spans whole rows) */
static void pj_gemm_epilogue(const pj_gemm_job *J, int64_t r0, int64_t r1, int64_t c0,
                             int64_t c1) {
  if (J->ep_form == 2) {
    J->ep(J->ep_ctx, r0, r1, c0, c1);
  } else if (c0 == 0 && c1 == J->n) {
    J->ep(J->ep_ctx, r0 * J->n, r1 * J->n, 0, 0);
  } else {
    for (int64_t r = r0; r < r1; r++) J->ep(J->ep_ctx, r * J->n + c0, r * J->n + c1, 0, 0);
  }
}

static void pj_gemm_block(const pj_gemm_job *J, int64_t bi, int64_t r0, int64_t r1,
                          int64_t c0, int64_t c1) {
  char opb = J->tb ? 'T' : 'N', opa = J->ta ? 'T' : 'N';
  int M = (int)(c1 - c0), N = (int)(r1 - r0), K = (int)J->k;
  int ldb = (int)(J->tb ? J->k : J->n), lda = (int)(J->ta ? J->m : J->k), ldc = (int)J->n;
  if (ldb < 1) ldb = 1; if (lda < 1) lda = 1; if (ldc < 1) ldc = 1;
  int64_t ao = bi * J->m * J->k + (J->ta ? r0 : r0 * J->k);
  int64_t bo = bi * J->k * J->n + (J->tb ? c0 * J->k : c0);
  int64_t co = bi * J->m * J->n + r0 * J->n + c0;
  if (M <= 0 || N <= 0) return;
  if (J->dbl) {
    double one = 1, zero = 0;
    pj_dgemm(&opb, &opa, &M, &N, &K, &one, (double *)J->b + bo, &ldb, (double *)J->a + ao,
             &lda, &zero, (double *)J->c + co, &ldc);
  } else {
    /* dot_general's blocks (``own``) try pyjax's kernel first (kernels/sgemm.py), as the
       NumPy tier does (a convolution's products stay on BLAS on both tiers) */
    if (J->own && pj_sgemm_rm &&
        pj_sgemm_rm(J->ta, J->tb, N, M, K, (const float *)J->a + ao, lda,
                    (const float *)J->b + bo, ldb, (float *)J->c + co, ldc) == 0)
      return;
    float one = 1, zero = 0;
    pj_sgemm(&opb, &opa, &M, &N, &K, &one, (float *)J->b + bo, &ldb, (float *)J->a + ao,
             &lda, &zero, (float *)J->c + co, &ldc);
  }
}

/* units [lo, hi): batch items, or blocks of bs rows / columns; one BLAS call each */
static void pj_gemm_range(void *ctx, int64_t lo, int64_t hi) {
  const pj_gemm_job *J = (const pj_gemm_job *)ctx;
  for (int64_t u = lo; u < hi; u++) {
    if (J->nb > 1) {
      pj_gemm_block(J, u, 0, J->m, 0, J->n);
      continue;
    }
    int64_t bs = J->bs > 0 ? J->bs : (J->m >= J->n ? J->m : J->n);
    int64_t a0 = u * bs, a1 = a0 + bs;
    if (J->m >= J->n) {
      if (a1 > J->m) a1 = J->m;
      pj_gemm_block(J, 0, a0, a1, 0, J->n);
      if (J->ep && a0 < a1) pj_gemm_epilogue(J, a0, a1, 0, J->n);
    } else {
      if (a1 > J->n) a1 = J->n;
      pj_gemm_block(J, 0, 0, J->m, a0, a1);
      if (J->ep && a0 < a1) pj_gemm_epilogue(J, 0, J->m, a0, a1);
    }
  }
}

static void pj_gemm_run(pj_gemm_job *J) {
  int64_t units;
  if (J->nb > 1) {
    units = J->nb;
  } else {
    int64_t u = J->m >= J->n ? J->m : J->n, bs = J->bs > 0 ? J->bs : u;
    units = bs > 0 ? (u + bs - 1) / bs : 0;
  }
  if (pj_parallel_for && units > 1 && J->m * J->n * J->k * (J->nb > 1 ? J->nb : 1) >= (1 << 18))
    pj_parallel_for(pj_gemm_range, (void *)J, units, 1);
  else
    pj_gemm_range((void *)J, 0, units);
}
"""


_ptrs = None


_thread_control = []


def blas_thread_control():
  """(set_num_threads, get_num_threads) addresses for SciPy's OpenBLAS, or (0, 0): native
  dots run BLAS single-threaded (pyjax's pool parallelizes them) and restore the setting.
  With the compiler's runtime these are its shared-depth wrappers
  (``native/runtime.py``, ``pj_blas_enter``/``pj_blas_leave``), so concurrent callers on
  several threads never restore the setting under one another's products."""
  if not _thread_control:
    set_a, get_a = _openblas_thread_functions()
    try:
      from pyjax._src.backends.cpu.compiler.native import build, runtime
      tc = build.toolchain()
      if tc is not None:
        set_a, get_a = runtime.blas_thread_shim(tc, set_a, get_a)
    except Exception:  # noqa: BLE001  -- no runtime: the real functions
      pass
    _thread_control.append((set_a, get_a))
  return _thread_control[0]


def _openblas_thread_functions():
  """The real (set_num_threads, get_num_threads) addresses of SciPy's OpenBLAS, or (0, 0)."""
  try:
    import glob
    import os
    import scipy
    libs = glob.glob(os.path.join(os.path.dirname(scipy.__file__), "..", "scipy.libs",
                                  "*openblas*"))
    for path in libs:
      lib = ctypes.CDLL(path)
      for set_name, get_name in (("scipy_openblas_set_num_threads", "scipy_openblas_get_num_threads"),
                                 ("openblas_set_num_threads", "openblas_get_num_threads")):
        if hasattr(lib, set_name) and hasattr(lib, get_name):
          return (ctypes.cast(getattr(lib, set_name), ctypes.c_void_p).value or 0,
                  ctypes.cast(getattr(lib, get_name), ctypes.c_void_p).value or 0)
  except Exception:  # noqa: BLE001
    pass
  return (0, 0)


def blas_pointers():
  """(sgemm, dgemm) addresses from SciPy's BLAS, or (0, 0)."""
  global _ptrs
  if _ptrs is None:
    try:
      from scipy.linalg import cython_blas
      api = ctypes.pythonapi
      api.PyCapsule_GetName.restype = ctypes.c_char_p
      api.PyCapsule_GetName.argtypes = [ctypes.py_object]
      api.PyCapsule_GetPointer.restype = ctypes.c_void_p
      api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
      res = []
      for name in ("sgemm", "dgemm"):
        cap = cython_blas.__pyx_capi__[name]
        res.append(api.PyCapsule_GetPointer(cap, api.PyCapsule_GetName(cap)) or 0)
      _ptrs = tuple(res)
    except Exception:  # noqa: BLE001  -- no SciPy BLAS: dots run on NumPy
      _ptrs = (0, 0)
  return _ptrs
