"""Large eager elementwise operations on prebuilt native kernels and on threads.

An eager primitive normally runs its NumPy implementation (``eager_*.py``) on one thread.
For arrays of at least ``MIN_ELEMENTS`` elements (65,536), ``run`` takes one of three
faster routes, each bit for bit equal to that implementation:

- **C kernels** for the primitives whose results are exact (integer arithmetic and
  bitwise operations, correctly rounded float ``+ - * /`` and ``sqrt``, comparisons,
  max/min, select, conversions, ...): the element expression comes from the CPU
  compiler's own rules (``compiler/kernels/elementwise.py``, so XLA's semantics are the ones the
  NumPy implementations emulate), inside a loop over a runtime element count.  One small
  library is built per (primitive, dtypes, layout class), never per shape: the operands
  are collapsed to at most two dimensions (outer, inner) and each operand's inner layout
  is contiguous, broadcast (stride 0) or strided; sizes and outer strides are runtime
  arguments.  Libraries go through the compiler's caches (memory and disk); a missing one
  is built on the compiler's background thread (``PYJAX_COMPILE=sync``: on the calling
  thread; ``off``: never) while the NumPy implementation serves the call.  The loop runs
  on the compiler's thread pool (``pj_parallel_for``) from ``PAR_MIN_ELEMENTS`` (262,144),
  with the GIL released.  Operands that are all contiguous go native only from
  ``CONTIG_MIN_ELEMENTS`` (262,144: below it NumPy's loops are as fast on one thread);
  broadcast and strided ones from ``MIN_ELEMENTS``, where NumPy runs one short loop per
  row.  Short rows (``(10000, 10) - (1, 10)``) are joined into rows of ``TILE_ROW``
  elements by tiling the repeated row.
- **Reductions** (``reduce_sum``/``reduce_max``/``reduce_min``) of C-contiguous operands
  over their leading axes keeping fewer than ``COLS_MAX`` elements (a column mean: NumPy
  runs one short loop per row), full float sums, and float sums of long rows in the lanes
  order (``row_lanes``; the compiled row kernels' ``pj_lanes_*`` helper, rows in parallel):
  one library per (primitive, dtype), the order of float sums being the one
  ``eager_reductions.sum_layout`` and ``lanes_sum`` define for the NumPy implementation
  (columns folded row after row; full sums in levels of 32 slices).
- **Threads** for transcendental functions (``exp``, ``expm1``, ``tanh``, ``log``, ...)
  where their eager implementation is NumPy's: without a C compiler or with
  ``PYJAX_TIER_NATIVE=0`` (otherwise the compiler's kernels serve them at every size, the
  bits of jit's tiers: ``eager/kernel_calls.py``, and ``run`` declines them).  The NumPy
  implementation runs on row blocks of the operands on
  ``PYJAX_NUM_THREADS`` threads (NumPy releases the GIL inside its loops; bare float
  ufuncs write straight into the output).  After a stall (a worker not running: a loaded
  machine) the next calls run NumPy on the caller alone.  This needs no C compiler.  With
  one (and ``PYJAX_TIER_NATIVE=0``), a bare float ufunc on a contiguous operand runs NumPy's own inner loop on chunks on
  the compiler's thread pool instead (``eager/ufunc_loops.py``: the same function, so the same
  bits; ~10% less CPU than Python threads, the GIL released once).

Outputs of 1 MB or more come from the compiler's output pool (``compiler/native/outpool.py``),
so a steady stream of large eager results does not page-fault fresh memory.
``PYJAX_EAGER_NATIVE=0`` turns every route off; ``PYJAX_EAGER_NATIVE_MIN`` and
``PYJAX_EAGER_NATIVE_CONTIG_MIN`` set the thresholds (elements of the output; of the
operand for reductions).
"""
from __future__ import annotations

import ctypes
import itertools
import os
import threading
import time

import ml_dtypes
import numpy as np

from pyjax._src.backends.cpu.compiler.kernels.reductions import row_lanes
from pyjax._src.backends.cpu.eager.registry import impls


def _env_int(name, default):
  try:
    return int(os.environ.get(name, default))
  except ValueError:
    return default


ENABLED = os.environ.get("PYJAX_EAGER_NATIVE", "1").strip().lower() not in (
    "0", "off", "false", "no")
# the smallest operand (or output) any route looks at: reductions and elementwise kernels
# on broadcast or strided operands, where NumPy's per-row loops are slow
MIN_ELEMENTS = _env_int("PYJAX_EAGER_NATIVE_MIN", 1 << 16)
# elementwise kernels on operands that are all contiguous (or 0-d): NumPy's own loops are
# as fast on one thread, so these go native only where the kernel runs on several threads
CONTIG_MIN_ELEMENTS = _env_int("PYJAX_EAGER_NATIVE_CONTIG_MIN", 1 << 18)
THREAD_MIN_ELEMENTS = _env_int("PYJAX_EAGER_THREADS_MIN", 1 << 18)   # NumPy on threads
# kernels run on the thread pool from this many elements (below: the calling thread; at
# 100k the pool's spinning workers slowed the NumPy ops that follow on a loaded machine)
PAR_MIN_ELEMENTS = 1 << 18
# the transcendental functions' kernels (jit's NumPy tier, eager/kernel_calls.py) cost
# several times more per element: the pool from this many
INEXACT_PAR_MIN = 1 << 16
GRAIN = 1 << 14            # elements per chunk of the thread pool, at least
MIN_ROW = 8                # shorter inner rows (of several): no C kernel (per-row overhead)

# primitives with a C kernel (exact results: equal to the NumPy implementations bit for bit)
C_PRIMS = frozenset({
    "add", "sub", "mul", "div", "max", "min", "neg", "abs", "sqrt", "square", "floor",
    "ceil", "sign", "is_finite", "eq", "ne", "lt", "le", "gt", "ge", "and", "or", "xor",
    "not", "select_n", "clamp", "convert_element_type", "shift_left",
    "shift_right_logical", "shift_right_arithmetic", "population_count"})
# elementwise primitives whose NumPy implementation runs on row blocks on threads
THREAD_PRIMS = frozenset({
    "exp", "exp2", "expm1", "log", "log1p", "tanh", "logistic", "sin", "cos", "tan",
    "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "erf", "erfc",
    "cbrt", "atan2", "pow", "rsqrt", "erf_inv", "lgamma", "digamma", "round", "rem",
    "nextafter", "integer_pow"})
# reductions over the leading axes of a C-contiguous operand keeping few elements (NumPy
# runs one short loop per row) and full float sums (the order
# ``eager_reductions.sum_layout`` defines, on threads)
REDUCE_PRIMS = frozenset({"reduce_sum", "reduce_max", "reduce_min"})
PRIMS = C_PRIMS | THREAD_PRIMS | REDUCE_PRIMS

_C_DTYPES = frozenset(np.dtype(t) for t in (
    np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
    np.uint64, np.float16, np.float32, np.float64, ml_dtypes.bfloat16))
_BF16 = np.dtype(ml_dtypes.bfloat16)
_FLOATS = frozenset(np.dtype(t) for t in (np.float16, np.float32, np.float64,
                                           ml_dtypes.bfloat16))

stats = {"native": 0, "threads": 0, "numpy": 0, "builds": 0}


# --- entry point ---------------------------------------------------------------------------
def run(name, bufs, params, out_aval):
  """The result of primitive ``name`` on NumPy buffers ``bufs`` (an array of
  ``out_aval``'s shape and dtype), or None: the caller runs the NumPy implementation."""
  if not ENABLED:
    return None
  if name in REDUCE_PRIMS:
    out = _run_reduce(name, bufs[0], params["axes"], out_aval)
    stats["native" if out is not None else "numpy"] += 1
    return out
  shape = out_aval.shape
  n = 1
  for d in shape:
    n *= d
  if n < MIN_ELEMENTS:
    return None
  if name in C_PRIMS:
    out = _run_c(name, bufs, params, out_aval.dtype, shape, n)
    if out is not None:
      stats["native"] += 1
      return out
  elif n >= THREAD_MIN_ELEMENTS:
    out = _run_threads(name, bufs, params, out_aval.dtype, shape)
    if out is not None:
      stats["threads"] += 1
      return out
  stats["numpy"] += 1
  return None


def _empty(shape, dtype):
  """A C-contiguous output: pooled when large (a pooled array an Array held before was
  made read-only by it; nothing references it now)."""
  from pyjax._src.backends.cpu.compiler.native import outpool
  out = outpool.empty(shape, dtype)
  if not out.flags.writeable:
    out.flags.writeable = True
  return out


# --- layouts -------------------------------------------------------------------------------
def _layout(shape, bufs):
  """(n0, n1, views, outer strides, inner strides, classes) with every operand seen as a
  (n0, n1) grid of elements in the output's row-major order, or None (more than two
  dimensions remain after merging, rows shorter than ``MIN_ROW``, or a misaligned
  operand)."""
  n = 1
  for d in shape:
    n *= d
  fast = True
  for b in bufs:   # the common case: C-contiguous operands of the output's shape, or 0-d
    if (b.shape != shape and b.ndim) or not b.flags.c_contiguous or not b.flags.aligned:
      fast = False
      break
  if fast:
    k = len(bufs)
    return (1, n, bufs, [0] * k, [1 if b.ndim else 0 for b in bufs],
            "".join("c" if b.ndim else "b" for b in bufs))
  rows = _row_broadcast(shape, bufs)
  if rows is not None:
    return rows
  for b in bufs:
    if b.ndim and b.ndim != len(shape):
      return None
    if not b.flags.aligned:
      return None
  dims = []          # [(size, [stride per operand in elements])], outermost first
  for ax, size in enumerate(shape):
    if size == 1:
      continue
    st = []
    for b in bufs:
      if not b.ndim or b.shape[ax] == 1:
        st.append(0)     # broadcast along this dimension
        continue
      s = b.strides[ax]
      if s % b.itemsize:
        return None
      st.append(s // b.itemsize)
    dims.append((size, st))
  views = bufs
  merged = []
  for size, st in dims:
    if merged:
      psize, pst = merged[-1]
      if all(p == s * size for p, s in zip(pst, st)):
        merged[-1] = (psize * size, st)
        continue
    merged.append((size, st))
  if len(merged) > 2:
    return None
  while len(merged) < 2:
    merged.insert(0, (1, [0] * len(views)))
  (n0, s0), (n1, s1) = merged
  if n0 > 1 and n1 < MIN_ROW:
    return None
  classes = "".join("c" if s == 1 else "b" if s == 0 else "g" for s in s1)
  return n0, n1, views, s0, s1, classes


def _row_broadcast(shape, bufs):
  """``_layout`` of the common broadcast (``(10000, 10) - (1, 10)``): C-contiguous operands
  of the output's shape, 0-d, or of shape ``(1,) * k + shape[k:]`` with one ``k`` (a row
  repeated down the ``n0 = prod(shape[:k])`` rows), found without the general merge (the
  same result); None otherwise."""
  k = 0
  for b in bufs:
    if not b.ndim or b.shape == shape:
      continue
    if b.ndim != len(shape) or not b.flags.c_contiguous or not b.flags.aligned:
      return None
    j = 0
    bs = b.shape
    while j < len(bs) and bs[j] == 1 and shape[j] != 1:
      j += 1
    if not j or (k and j != k) or bs[j:] != shape[j:] or 1 in bs[j:]:
      return None
    k = j
  if not k:
    return None
  n0 = n1 = 1
  for d in shape[:k]:
    n0 *= d
  for d in shape[k:]:
    n1 *= d
  if n1 < MIN_ROW:
    return None
  s0, s1, classes = [], [], ""
  for b in bufs:
    if not b.ndim:
      s0.append(0)
      s1.append(0)
      classes += "b"
    else:
      if b.shape == shape and (not b.flags.c_contiguous or not b.flags.aligned):
        return None
      s0.append(n1 if b.shape == shape else 0)
      s1.append(1)
      classes += "c"
  return n0, n1, bufs, s0, s1, classes


# --- C kernels -----------------------------------------------------------------------------
_kernels = {}               # key -> entry function | _BUILDING | _NONE
_kernels_lock = threading.Lock()
_BUILDING = object()
_NONE = object()
_ENTRY_T = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p,
                            ctypes.c_void_p, ctypes.c_void_p)


def _node(name, params, in_dtypes, out_dtype):
  from pyjax._src.backends.cpu.compiler import ir
  ins = [ir.Value((), d) for d in in_dtypes]
  return ir.Node(name, dict(params), ins, [ir.Value((), out_dtype)])


def supported(name, params, in_dtypes, out_dtype):
  """Whether a C kernel exists for ``name`` on these dtypes."""
  if name not in C_PRIMS or out_dtype not in _C_DTYPES:
    return False
  if any(d not in _C_DTYPES for d in in_dtypes):
    return False
  if name == "square" and in_dtypes[0] == _BF16:
    return False   # ml_dtypes' bfloat16 square drops a NaN's sign: the threads route keeps it
  from pyjax._src.backends.cpu.compiler.kernels import elementwise as lower_c
  return lower_c.supports(_node(name, params, in_dtypes, out_dtype))


def kernel_source(name, params, in_dtypes, out_dtype, classes, par_min=PAR_MIN_ELEMENTS):
  """The C of the library for one (primitive, dtypes, layout class): the compiler's
  prelude, a range function over flat element indices and ``pj_ee_entry(n0, n1, P, S0,
  S1)`` (``P``: the operands' then the output's data pointers; ``S0``/``S1``: the
  operands' outer/inner strides in elements; the output is C-contiguous), on the thread
  pool from ``par_min`` elements."""
  from pyjax._src.backends.cpu.compiler.kernels import elementwise as elementwise_c
  node = _node(name, params, in_dtypes, out_dtype)
  k = len(in_dtypes)
  decls, args = [], []
  for i, (d, c) in enumerate(zip(in_dtypes, classes)):
    t = elementwise_c.storage_type(d)
    decls.append(f"    const {t} *restrict a{i} = (const {t} *)C->p[{i}] + r * C->s0[{i}];")
    if c == "c":
      args.append(elementwise_c.load(d, f"a{i}[j]"))
    elif c == "b":
      decls.append(f"    const {elementwise_c.compute_type(d)} v{i} = {elementwise_c.load(d, f'a{i}[0]')};")
      args.append(f"v{i}")
    else:
      decls.append(f"    const int64_t t{i} = C->s1[{i}];")
      args.append(elementwise_c.load(d, f"a{i}[j * t{i}]"))
  expr = elementwise_c.lower(node, args)
  ot = elementwise_c.storage_type(out_dtype)
  body = elementwise_c.store(out_dtype, expr)
  src = f"""
typedef struct {{ int64_t n1; char *p[{k + 1}]; int64_t s0[{k}]; int64_t s1[{k}]; }} pj_ee_ctx;
static void pj_ee_range(void *vc, int64_t lo, int64_t hi) {{
  const pj_ee_ctx *C = (const pj_ee_ctx *)vc;
  const int64_t n1 = C->n1;
  int64_t r = lo / n1, c = lo - r * n1;
  while (lo < hi) {{
    int64_t e = n1 - c;
    if (e > hi - lo) e = hi - lo;
    e += c;
{chr(10).join(decls)}
    {ot} *restrict o = ({ot} *)C->p[{k}] + r * n1;
#pragma omp simd
    for (int64_t j = c; j < e; j++) o[j] = {body};
    lo += e - c;
    c = 0;
    r++;
  }}
}}
void pj_ee_entry(int64_t n0, int64_t n1, void **P, const int64_t *S0, const int64_t *S1) {{
  pj_ee_ctx C;
  C.n1 = n1;
  for (int i = 0; i <= {k}; i++) C.p[i] = (char *)P[i];
  for (int i = 0; i < {k}; i++) {{ C.s0[i] = S0[i]; C.s1[i] = S1[i]; }}
  int64_t n = n0 * n1;
  if (n <= 0) return;
  if (pj_parallel_for && n >= {par_min}) pj_parallel_for(pj_ee_range, &C, n, {GRAIN});
  else pj_ee_range(&C, 0, n);
}}
"""
  return src


def library_source(name, params, in_dtypes, out_dtype, classes, toolchain,
                   par_min=PAR_MIN_ELEMENTS):
  from pyjax._src.backends.cpu.compiler import cmodule
  from pyjax._src.backends.cpu.compiler.kernels import elementwise as lower_c
  return "\n".join([lower_c.prelude(toolchain.float16, toolchain.mvec), cmodule._RUNTIME_DECL,
                    kernel_source(name, params, in_dtypes, out_dtype, classes, par_min)])


def _load_library(source, entry, ftype):
  """Build (or fetch from the compiler's caches) and load the library whose C
  ``source(toolchain)`` gives; its ``entry`` as a ``ftype`` function, or _NONE."""
  try:
    from pyjax._src.backends.cpu.compiler.native import build
    from pyjax._src.backends.cpu.compiler.native import cache
    from pyjax._src.backends.cpu.compiler.native import runtime
    tc = build.toolchain()
    if tc is None:
      return _NONE
    lib = cache.get_library(source(tc), tc)
    lib.pyjax_set_runtime.argtypes = [ctypes.c_void_p] * 3
    lib.pyjax_set_runtime.restype = None
    sa, sf = runtime.scratch_addresses(tc)
    lib.pyjax_set_runtime(runtime.parallel_for_address(tc) or None, sa or None, sf or None)
    # a plain C function pointer: the call releases the GIL (the library is a PyDLL)
    fn = ftype(ctypes.cast(getattr(lib, entry), ctypes.c_void_p).value)
    fn._pyjax_lib = lib
    stats["builds"] += 1
    return fn
  except Exception:  # noqa: BLE001  -- no kernel: NumPy serves this key
    from pyjax._src.backends.cpu import debug
    if debug.level() >= 1:
      import traceback
      traceback.print_exc()
    return _NONE


def _load(key, name, params, in_dtypes, out_dtype, classes, par_min=PAR_MIN_ELEMENTS):
  """Build (or fetch from the caches) and load one kernel library; its entry or _NONE."""
  return _load_library(
      lambda tc: library_source(name, params, in_dtypes, out_dtype, classes, tc, par_min),
      "pj_ee_entry", _ENTRY_T)


class _BuildJob:
  """A background build for the compiler's worker thread (``executable._worker``):
  ``load()`` gives the entry (or _NONE) stored under ``key``."""

  def __init__(self, key, load):
    self.key = key
    self.load = load
    self._claimed = False
    self._lock = threading.Lock()

  def claim(self):
    with self._lock:
      if self._claimed:
        return False
      self._claimed = True
      return True

  def run(self):
    _kernels[self.key] = self.load()


def _cached_kernel(key, load, supported=None):
  """The entry stored under ``key``, or None while it builds on the compiler's thread
  (``PYJAX_COMPILE=sync``: built now by ``load()``; ``off``: never) or when it cannot
  exist (``supported()`` false, or the build failed)."""
  fn = _kernels.get(key)
  if fn is not None:
    return None if fn is _NONE or fn is _BUILDING else fn
  from pyjax._src.backends.cpu import executable
  mode = executable.compile_mode()
  if mode == "off":
    return None
  with _kernels_lock:
    fn = _kernels.get(key)
    if fn is not None:
      return None if fn is _NONE or fn is _BUILDING else fn
    if supported is not None and not supported():
      _kernels[key] = _NONE
      return None
    _kernels[key] = _BUILDING
    if mode != "sync":
      executable._worker().submit(_BuildJob(key, load))
      return None
  fn = _kernels[key] = load()
  return None if fn is _NONE else fn


def _kernel(name, params, in_dtypes, out_dtype, classes):
  """The entry for this (primitive, dtypes, layout class), or None while it builds (or
  when it cannot exist)."""
  key = (name, in_dtypes, out_dtype, classes)
  return _cached_kernel(
      key, lambda: _load(key, name, params, in_dtypes, out_dtype, classes),
      lambda: supported(name, params, in_dtypes, out_dtype))


_I64x4 = ctypes.c_int64 * 4
_Px5 = ctypes.c_void_p * 5


def _run_c(name, bufs, params, out_dtype, shape, n):
  if name == "select_n" and len(bufs) > 4:
    return None
  lay = _layout(shape, bufs)
  if lay is None:
    return None
  n0, n1, views, s0, s1, classes = lay
  if n < CONTIG_MIN_ELEMENTS and n0 == 1 and "g" not in classes:
    return None   # contiguous: NumPy is as fast on one thread
  in_dtypes = tuple(v.dtype for v in views)
  fn = _kernel(name, params if name == "convert_element_type" else {}, in_dtypes,
               out_dtype, classes)
  if fn is None:
    return None
  out = _empty(shape, out_dtype)
  if n0 > 1 and n1 < TILE_ROW and _tile_rows(fn, n0, n1, views, s0, s1, classes, out):
    return out
  ptrs = _Px5(*[v.ctypes.data for v in views], out.ctypes.data)
  fn(n0, n1, ptrs, _I64x4(*s0), _I64x4(*s1))
  return out


TILE_ROW = 256   # shorter rows are joined into rows of at least this many elements


def _tile_rows(fn, n0, n1, views, s0, s1, classes, out):
  """Short rows (``n1`` elements; the kernel pays a few ns per row) run as rows of ``t *
  n1`` elements: every operand is contiguous along the rows (outer stride ``n1``), a row
  repeated down the rows (outer stride 0: it is tiled ``t`` times, a small copy) or a
  scalar; the ``n0 % t`` rows left over run as they are.  False (nothing done) for other
  layouts (a scalar per row, strided rows)."""
  for st, c in zip(s0, classes):
    if not ((c == "c" and (st == n1 or st == 0)) or (c == "b" and st == 0)):
      return False
  t = -(-TILE_ROW // n1)
  q = n0 // t
  if q < 2:
    return False
  keep, ptrs, t0 = [], [], []
  addr = [v.ctypes.data for v in views]   # (each .ctypes costs ~1 us)
  oaddr = out.ctypes.data
  for v, a, st, c in zip(views, addr, s0, classes):
    if st == 0 and c == "c":   # a repeated row: tile it
      if v.flags.c_contiguous and v.size >= n1:
        row = v.reshape(-1)[:n1]
      else:
        row = np.lib.stride_tricks.as_strided(v, shape=(n1,), strides=(v.itemsize,))
      tiled = np.empty(t * n1, v.dtype)
      tiled.reshape(t, n1)[...] = row
      keep.append(tiled)
      ptrs.append(tiled.ctypes.data)
      t0.append(0)
    else:
      ptrs.append(a)
      t0.append(st * t)
  fn(q, t * n1, _Px5(*ptrs, oaddr), _I64x4(*t0), _I64x4(*s1))
  rest = n0 - q * t
  if rest:
    done = q * t
    ptrs = [a + done * st * v.itemsize for v, a, st in zip(views, addr, s0)]
    fn(rest, n1, _Px5(*ptrs, oaddr + done * n1 * out.itemsize), _I64x4(*s0),
       _I64x4(*s1))
  return True


# --- reductions ----------------------------------------------------------------------------
_RED_DTYPES = frozenset(np.dtype(t) for t in (
    np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
    np.float32, np.float64))
_RED_KINDS = {"cols": 0, "rows": 1, "full": 2}
COLS_MAX = 256    # reductions over leading axes keeping fewer elements: a native kernel
_RED_ENTRY_T = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                                ctypes.c_int64, ctypes.c_int)

# Shared by every reduction library (T, pj_er_op and pj_er_fix defined first).
_REDUCE_C = r"""
typedef struct { const T *x; T *out; int64_t R, C, n; } pj_er_ctx;
#define PJ_ER_B 2048     /* columns folded together: their accumulators stay in L1 */
/* columns [lo, hi) of the (R, C) matrix: one fold per column, row after row */
static void pj_er_cols(void *vc, int64_t lo, int64_t hi) {
  const pj_er_ctx *c = (const pj_er_ctx *)vc;
  const int64_t C = c->C, R = c->R;
  T acc[PJ_ER_B];
  for (int64_t b = lo; b < hi; b += PJ_ER_B) {
    const int64_t w = hi - b < PJ_ER_B ? hi - b : PJ_ER_B;
    const T *restrict x = c->x + b;
    for (int64_t j = 0; j < w; j++) acc[j] = x[j];
    for (int64_t i = 1; i < R; i++) {
      const T *restrict xi = x + i * C;
#pragma omp simd
      for (int64_t j = 0; j < w; j++) acc[j] = pj_er_op(acc[j], xi[j]);
    }
    for (int64_t j = 0; j < w; j++) c->out[b + j] = acc[j];
  }
}
/* a few columns (C <= 16): their accumulators in registers, the row loop unrolled */
#define PJ_ER_COLS_N(N)                                                                   \
static void pj_er_cols_##N(const T *restrict x, T *restrict out, int64_t R) {             \
  T acc[N];                                                                               \
  for (int j = 0; j < N; j++) acc[j] = x[j];                                              \
  for (int64_t i = 1; i < R; i++) {                                                       \
    const T *restrict xi = x + i * N;                                                     \
    _Pragma("GCC unroll 16") for (int j = 0; j < N; j++) acc[j] = pj_er_op(acc[j], xi[j]); \
  }                                                                                       \
  for (int j = 0; j < N; j++) out[j] = acc[j];                                            \
}
PJ_ER_COLS_N(2) PJ_ER_COLS_N(3) PJ_ER_COLS_N(4) PJ_ER_COLS_N(5) PJ_ER_COLS_N(6)
PJ_ER_COLS_N(7) PJ_ER_COLS_N(8) PJ_ER_COLS_N(9) PJ_ER_COLS_N(10) PJ_ER_COLS_N(11)
PJ_ER_COLS_N(12) PJ_ER_COLS_N(13) PJ_ER_COLS_N(14) PJ_ER_COLS_N(15) PJ_ER_COLS_N(16)
static void pj_er_cols_run(const T *x, T *out, int64_t R, int64_t C) {
  switch (C) {
#define PJ_ER_CASE(N) case N: pj_er_cols_##N(x, out, R); return;
    PJ_ER_CASE(2) PJ_ER_CASE(3) PJ_ER_CASE(4) PJ_ER_CASE(5) PJ_ER_CASE(6) PJ_ER_CASE(7)
    PJ_ER_CASE(8) PJ_ER_CASE(9) PJ_ER_CASE(10) PJ_ER_CASE(11) PJ_ER_CASE(12)
    PJ_ER_CASE(13) PJ_ER_CASE(14) PJ_ER_CASE(15) PJ_ER_CASE(16)
#undef PJ_ER_CASE
    default: break;
  }
  pj_er_ctx ctx = {x, out, R, C, R * C};
  if (pj_parallel_for && R * C >= PJ_ER_PAR && C >= 2 * PJ_ER_B)
    pj_parallel_for(pj_er_cols, &ctx, C, PJ_ER_B);
  else pj_er_cols(&ctx, 0, C);
}
static void pj_er_full(const T *x, T *out, int64_t n);
static void pj_er_rows_run(const T *x, T *out, int64_t R, int64_t C);
void pj_er_entry(const void *xv, void *outv, int64_t R, int64_t C, int kind) {
  const T *x = (const T *)xv;
  T *out = (T *)outv;
  if (kind == 0) {
    pj_er_cols_run(x, out, R, C);
    for (int64_t j = 0; j < C; j++) out[j] = pj_er_fix(out[j]);
  } else if (kind == 1) {
    pj_er_rows_run(x, out, R, C);
  } else {
    pj_er_full(x, out, R * C);
  }
}
"""

# float sums of the R rows of C elements in the lanes order (the compiled row kernels'
# pj_lanes_* helper: compiler/kernels/reductions.py, row_lanes), rows in parallel
_REDUCE_ROWS_SUM_C = r"""
typedef struct { const T *x; T *out; int64_t C; } pj_er_rctx;
static void pj_er_rows(void *vc, int64_t lo, int64_t hi) {
  const pj_er_rctx *c = (const pj_er_rctx *)vc;
  for (int64_t i = lo; i < hi; i++) c->out[i] = PJ_ER_LANES(c->x + i * c->C, c->C);
}
static void pj_er_rows_run(const T *x, T *out, int64_t R, int64_t C) {
  pj_er_rctx ctx = {x, out, C};
  if (pj_parallel_for && R * C >= PJ_ER_PAR && R >= 2)
    pj_parallel_for(pj_er_rows, &ctx, R, 1);
  else pj_er_rows(&ctx, 0, R);
}
"""

# full float sum in eager_reductions._tree_sum's order: levels of 32 equal slices added in
# order (the columns of a (32, k) matrix), the leftover elements appended, then the last 32
# or fewer folded in order; never -0
_REDUCE_FULL_SUM_C = r"""
static void pj_er_full(const T *x, T *out, int64_t n) {
  T *buf = NULL, *other = NULL;
  const T *src = x;
  int64_t m = n;
  if (m > 32) {
    buf = (T *)malloc(sizeof(T) * (size_t)(n / 32 + 32) * 2);
    if (!buf) { out[0] = (T)NAN; return; }
    other = buf + n / 32 + 32;
  }
  T *dst = buf;
  while (m > 32) {
    int64_t k = m / 32, t = m - 32 * k;
    if (k == 1) {
      T a = src[0];
      for (int i = 1; i < 32; i++) a = a + src[i];
      dst[0] = a;
    } else {
      pj_er_cols_run(src, dst, 32, k);
    }
    memcpy(dst + k, src + 32 * k, sizeof(T) * (size_t)t);
    src = dst;
    m = k + t;
    dst = dst == buf ? other : buf;
  }
  T a = src[0];
  for (int64_t i = 1; i < m; i++) a = a + src[i];
  out[0] = a + (T)0;
  free(buf);
}
"""


def reduce_source(name, dtype):
  """The C of one reduction library, ``name`` on ``dtype``: ``pj_er_entry(x, out, R, C,
  kind)`` reduces the C-contiguous (R, C) matrix ``x`` over its rows (kind 0, "cols":
  ``out[j]`` folds ``x[0, j], x[1, j], ...`` in that order) or, for float sums, over its
  columns in the lanes order (kind 1, "rows": ``row_lanes``) or entirely (kind 2, "full":
  in ``eager_reductions._tree_sum``'s order).  Float sums never give -0
  (XLA's fold starts from +0); max/min are XLA's (NaN wins, -0 below +0: ``lower_c``'s
  helpers).  Full max/min/integer sums and reductions over trailing axes stay on NumPy,
  whose SIMD loops are as fast."""
  from pyjax._src.backends.cpu.compiler.kernels import elementwise as elementwise_c
  d = np.dtype(dtype)
  float_sum = name == "reduce_sum" and d.kind == "f"
  head = "\n".join([
      f"typedef {elementwise_c.storage_type(d)} T;",
      f"#define PJ_ER_PAR {PAR_MIN_ELEMENTS}",
      f"static inline T pj_er_op(T a, T b) {{ return {elementwise_c.combine(name, d, 'a', 'b')}; }}",
      f"static inline T pj_er_fix(T v) {{ return {'v + (T)0' if float_sum else 'v'}; }}"])
  full = _REDUCE_FULL_SUM_C if float_sum else (
      "static void pj_er_full(const T *x, T *out, int64_t n) { (void)x; (void)out; (void)n; }\n")
  if float_sum:
    from pyjax._src.backends.cpu.compiler.kernels.reductions import TREE1_SOURCE
    rows = "\n".join([TREE1_SOURCE, f"#define PJ_ER_LANES pj_lanes_sum_{'f' if d == np.float32 else 'd'}",
                      _REDUCE_ROWS_SUM_C])
  else:
    rows = ("static void pj_er_rows_run(const T *x, T *out, int64_t R, int64_t C) "
            "{ (void)x; (void)out; (void)R; (void)C; }\n")
  return head + _REDUCE_C + full + rows


def _load_reduce(name, dtype):
  """Build (or fetch from the caches) and load one reduction library; its entry or _NONE."""
  def source(tc):
    from pyjax._src.backends.cpu.compiler import cmodule
    from pyjax._src.backends.cpu.compiler.kernels import elementwise as lower_c
    return "\n".join([lower_c.prelude(tc.float16, tc.mvec), cmodule._RUNTIME_DECL,
                      reduce_source(name, dtype)])
  return _load_library(source, "pj_er_entry", _RED_ENTRY_T)


def _run_reduce(name, x, axes, out_aval):
  """``name`` over ``axes`` of the C-contiguous ``x`` on a native kernel, or None.  Float
  sums only above ``eager_reductions._ORDERED_MAX_SIZE`` elements (smaller ones follow
  XLA's order) and only for the layouts whose order the NumPy implementation defines
  (``sum_layout``'s "full" and "cols"), or in the lanes order (``row_lanes``) at any
  size from ``MIN_ELEMENTS``."""
  from pyjax._src.backends.cpu.eager import reductions as er
  d = x.dtype
  n = x.size
  if (n < MIN_ELEMENTS or d not in _RED_DTYPES or out_aval.dtype != d or not axes
      or not x.flags.c_contiguous or not x.flags.aligned):
    return None
  lay = er.sum_layout(x.shape, sorted(axes))
  if lay is None:
    return None
  kind, R, C = lay
  float_sum = name == "reduce_sum" and d.kind == "f"
  lanes = float_sum and kind == "rows" and row_lanes(name, x.shape, axes, d)
  if float_sum and n <= er._ORDERED_MAX_SIZE and not lanes:
    return None
  if not ((kind == "cols" and C < COLS_MAX) or (kind == "full" and float_sum) or lanes):
    return None   # NumPy's SIMD loops are as fast
  fn = _cached_kernel(("reduce", name, d), lambda: _load_reduce(name, d))
  if fn is None:
    return None
  out = _empty(out_aval.shape, d)
  fn(x.ctypes.data, out.ctypes.data, R, C, _RED_KINDS[kind])
  return out


# --- NumPy on threads ----------------------------------------------------------------------
class _Pool:
  """``nthreads - 1`` worker threads that, with the caller, run the blocks of one job."""

  def __init__(self, nthreads):
    import queue
    self.n = nthreads
    self.q = queue.SimpleQueue()
    self.threads = []
    for i in range(nthreads - 1):
      t = threading.Thread(target=self._loop, name=f"pyjax-eager-{i}", daemon=True)
      t.start()
      self.threads.append(t)

  def _loop(self):
    while True:
      job = self.q.get()
      job.work()

  skip = 0       # calls left to run on the caller alone (after a stall)
  penalty = 0

  def run(self, fn, nblocks):
    """Call ``fn(i)`` for every block ``i`` in ``range(nblocks)``; re-raises the first
    exception.  As the native runtime's ``pj_parallel_for``: when the caller waited for
    a worker longer than its own share of the work took (a worker was not running: a
    loaded machine), the next calls (``backing_off``) run the NumPy implementation on
    the caller alone, more of them after each stall."""
    job = _Job(fn, nblocks)
    for _ in range(min(self.n - 1, nblocks - 1)):
      self.q.put(job)
    t0 = time.perf_counter()
    job.work()
    t1 = time.perf_counter()
    job.done.wait()
    t2 = time.perf_counter()
    if t2 - t1 > (t1 - t0) / 2 + 5e-5:
      self.penalty = min(self.penalty * 2, 4096) if self.penalty else 8
      self.skip = self.penalty
    elif self.penalty:
      self.penalty //= 2
    if job.error is not None:
      raise job.error

  def backing_off(self):
    """True (and one call fewer to skip) while calls run on the caller alone."""
    if self.skip > 0:
      self.skip -= 1
      return True
    return False


class _Job:
  def __init__(self, fn, nblocks):
    self.fn = fn
    self.nblocks = nblocks
    self.next = itertools.count()
    self.left = nblocks
    self.lock = threading.Lock()
    self.done = threading.Event()
    self.error = None

  def work(self):
    while True:
      i = next(self.next)
      if i >= self.nblocks:
        return
      try:
        if self.error is None:
          self.fn(i)
      except BaseException as e:  # noqa: BLE001  -- re-raised by the caller
        self.error = e
      with self.lock:
        self.left -= 1
        if self.left == 0:
          self.done.set()


_pool = None
_pool_lock = threading.Lock()


def _get_pool():
  global _pool
  if _pool is None:
    with _pool_lock:
      if _pool is None:
        from pyjax._src.backends.cpu.compiler.native import runtime
        _pool = _Pool(runtime._num_threads())
  return _pool


def _run_threads(name, bufs, params, out_dtype, shape):
  """The NumPy implementation on blocks of rows (of the first dimension longer than one
  block) on the pool's threads; None when there is one thread or too few rows."""
  impl = impls.get(name)
  if impl is None or getattr(impl, "_pyjax_kernel_impl", False):
    return None   # (the compiler's kernels serve it: eager/kernel_calls.py)
  if len(bufs) == 1 and shape:   # a bare float ufunc: NumPy's loop on the native pool
    from pyjax._src.backends.cpu.eager import ufunc_loops
    x = bufs[0]
    fn = _direct_ufunc(name, impl, bufs, out_dtype)
    if (fn is not None and x.shape == shape and x.size >= 2 * ufunc_loops.GRAIN
        and x.flags.c_contiguous and x.flags.aligned
        and _get_pool().n > 1):
      out = _empty(shape, out_dtype)
      if ufunc_loops.run(fn, x, out):
        return out
  pool = _get_pool()
  if pool.n < 2 or not shape or pool.backing_off():
    return None
  for b in bufs:
    if b.dtype.kind not in "biuf" and b.dtype not in _FLOATS:
      return None
  ax = 0
  while ax < len(shape) - 1 and shape[ax] == 1:
    ax += 1
  rows = shape[ax]
  nblocks = min(rows, 2 * pool.n)
  if nblocks < 2:
    return None
  views = []
  for b in bufs:
    if b.shape != shape:
      if b.ndim and b.ndim != len(shape):
        return None
      b = np.broadcast_to(b, shape)
    views.append(b)
  out = _empty(shape, out_dtype)
  lead = (slice(None),) * ax
  bounds = [rows * i // nblocks for i in range(nblocks + 1)]
  ufunc = _direct_ufunc(name, impl, views, out_dtype)

  def block(i):
    sl = lead + (slice(bounds[i], bounds[i + 1]),)
    if ufunc is not None:   # straight into the output: no temporary, no copy
      ufunc(views[0][sl], out=out[sl])
      return
    res = impl(*[v[sl] for v in views], **params)
    np.copyto(out[sl], res, casting="unsafe")
  pool.run(block, nblocks)
  return out


# unary primitives whose NumPy implementation on float32/float64 is the bare ufunc
# (eager_elementwise._unary: ``fn(x)`` for real operands of these types)
_BARE_UFUNCS = {"exp": np.exp, "exp2": np.exp2, "log": np.log, "log1p": np.log1p,
                "sin": np.sin, "cos": np.cos, "tan": np.tan, "sinh": np.sinh,
                "cosh": np.cosh, "tanh": np.tanh, "atan": np.arctan, "atanh": np.arctanh,
                "asin": np.arcsin, "acos": np.arccos, "asinh": np.arcsinh,
                "acosh": np.arccosh}
_F32_F64 = frozenset((np.dtype(np.float32), np.dtype(np.float64)))


def _direct_ufunc(name, impl, views, out_dtype):
  """The ufunc that ``impl`` (the registered implementation of ``name``) applies to a
  float32/float64 operand of the output's dtype, or None."""
  fn = _BARE_UFUNCS.get(name)
  if (fn is None or len(views) != 1 or views[0].dtype != out_dtype
      or out_dtype not in _F32_F64 or getattr(impl, "__name__", "") != "_" + name
      or getattr(impl, "__module__", "") != _ELEMENTWISE_MODULE):
    return None
  return fn


_ELEMENTWISE_MODULE = "pyjax._src.backends.cpu.eager.elementwise"


def wait():
  """Wait for every queued kernel build (tests and benchmarks)."""
  from pyjax._src.backends.cpu import executable
  executable.drain()
