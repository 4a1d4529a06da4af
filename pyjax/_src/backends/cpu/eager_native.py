"""Large eager elementwise operations on prebuilt native kernels and on threads.

An eager primitive normally runs its NumPy implementation (``eager_*.py``) on one thread.
For arrays of at least ``MIN_ELEMENTS`` elements, ``run`` takes one of two faster routes,
both bit for bit equal to that implementation:

- **C kernels** for the primitives whose results are exact (integer arithmetic and
  bitwise operations, correctly rounded float ``+ - * /`` and ``sqrt``, comparisons,
  max/min, select, conversions, ...): the element expression comes from the CPU
  compiler's own rules (``compiler/lower_c.py``, so XLA's semantics are the ones the
  NumPy implementations emulate), inside a loop over a runtime element count.  One small
  library is built per (primitive, dtypes, layout class), never per shape: the operands
  are collapsed to at most two dimensions (outer, inner) and each operand's inner layout
  is contiguous, broadcast (stride 0) or strided; sizes and outer strides are runtime
  arguments.  Libraries go through the compiler's caches (memory and disk); a missing one
  is built on the compiler's background thread (``PYJAX_COMPILE=sync``: on the calling
  thread; ``off``: never) while the NumPy implementation serves the call.  The loop runs
  on the compiler's thread pool (``pj_parallel_for``), with the GIL released.
- **Threads** for transcendental functions (``exp``, ``expm1``, ``tanh``, ``log``, ...):
  the compiler's vector math is not NumPy's libm (they differ in the last ulp; jit's NumPy
  tier uses the compiler's, ``tier_native.py``, eager ops keep NumPy's), so the NumPy
  implementation itself runs on row blocks of the operands on
  ``PYJAX_NUM_THREADS`` threads (NumPy releases the GIL inside its loops).  This needs no
  C compiler.

Outputs of 1 MB or more come from the compiler's output pool (``compiler/outpool.py``),
so a steady stream of large eager results does not page-fault fresh memory.
``PYJAX_EAGER_NATIVE=0`` turns both routes off; ``PYJAX_EAGER_NATIVE_MIN`` sets the
threshold (elements of the output).
"""
from __future__ import annotations

import ctypes
import itertools
import os
import threading

import ml_dtypes
import numpy as np

from pyjax._src.backends.cpu.registry import impls


def _env_int(name, default):
  try:
    return int(os.environ.get(name, default))
  except ValueError:
    return default


ENABLED = os.environ.get("PYJAX_EAGER_NATIVE", "1").strip().lower() not in (
    "0", "off", "false", "no")
MIN_ELEMENTS = _env_int("PYJAX_EAGER_NATIVE_MIN", 1 << 18)
THREAD_MIN_ELEMENTS = _env_int("PYJAX_EAGER_THREADS_MIN", 1 << 18)   # NumPy on threads
GRAIN = 1 << 14            # elements per chunk of the thread pool, at least
MIN_ROW = 64               # shorter inner rows (of several): no C kernel (per-row overhead)

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
PRIMS = C_PRIMS | THREAD_PRIMS

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
  from pyjax._src.backends.cpu.compiler import outpool
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
    if (b.shape != shape and b.ndim) or not b.flags.c_contiguous or b.ctypes.data % b.itemsize:
      fast = False
      break
  if fast:
    k = len(bufs)
    return (1, n, bufs, [0] * k, [1 if b.ndim else 0 for b in bufs],
            "".join("c" if b.ndim else "b" for b in bufs))
  views = []
  for b in bufs:
    if b.shape != shape:
      if b.ndim and b.ndim != len(shape):
        return None
      b = np.broadcast_to(b, shape)
    isz = b.itemsize
    if b.ctypes.data % isz:
      return None
    views.append(b)
  dims = []          # [(size, [stride per operand in elements])], outermost first
  for ax, size in enumerate(shape):
    if size == 1:
      continue
    st = []
    for v in views:
      s = v.strides[ax]
      if s % v.itemsize:
        return None
      st.append(s // v.itemsize)
    dims.append((size, st))
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
  from pyjax._src.backends.cpu.compiler import lower_c
  return lower_c.supports(_node(name, params, in_dtypes, out_dtype))


def kernel_source(name, params, in_dtypes, out_dtype, classes):
  """The C of the library for one (primitive, dtypes, layout class): the compiler's
  prelude, a range function over flat element indices and ``pj_ee_entry(n0, n1, P, S0,
  S1)`` (``P``: the operands' then the output's data pointers; ``S0``/``S1``: the
  operands' outer/inner strides in elements; the output is C-contiguous)."""
  from pyjax._src.backends.cpu.compiler import lower_c as L
  node = _node(name, params, in_dtypes, out_dtype)
  k = len(in_dtypes)
  decls, args = [], []
  for i, (d, c) in enumerate(zip(in_dtypes, classes)):
    t = L.storage_type(d)
    decls.append(f"    const {t} *restrict a{i} = (const {t} *)C->p[{i}] + r * C->s0[{i}];")
    if c == "c":
      args.append(L.load(d, f"a{i}[j]"))
    elif c == "b":
      decls.append(f"    const {L.compute_type(d)} v{i} = {L.load(d, f'a{i}[0]')};")
      args.append(f"v{i}")
    else:
      decls.append(f"    const int64_t t{i} = C->s1[{i}];")
      args.append(L.load(d, f"a{i}[j * t{i}]"))
  expr = L.lower(node, args)
  ot = L.storage_type(out_dtype)
  body = L.store(out_dtype, expr)
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
  if (pj_parallel_for && n >= 2 * {GRAIN}) pj_parallel_for(pj_ee_range, &C, n, {GRAIN});
  else pj_ee_range(&C, 0, n);
}}
"""
  return src


def library_source(name, params, in_dtypes, out_dtype, classes, toolchain):
  from pyjax._src.backends.cpu.compiler import cmodule, lower_c
  return "\n".join([lower_c.prelude(toolchain.float16, toolchain.mvec), cmodule._RUNTIME_DECL,
                    kernel_source(name, params, in_dtypes, out_dtype, classes)])


def _load(key, name, params, in_dtypes, out_dtype, classes):
  """Build (or fetch from the caches) and load one kernel library; its entry or _NONE."""
  try:
    from pyjax._src.backends.cpu.compiler import build, cache, runtime
    tc = build.toolchain()
    if tc is None:
      return _NONE
    lib = cache.get_library(
        library_source(name, params, in_dtypes, out_dtype, classes, tc), tc)
    lib.pyjax_set_runtime.argtypes = [ctypes.c_void_p] * 3
    lib.pyjax_set_runtime.restype = None
    sa, sf = runtime.scratch_addresses(tc)
    lib.pyjax_set_runtime(runtime.parallel_for_address(tc) or None, sa or None, sf or None)
    # a plain C function pointer: the call releases the GIL (the library is a PyDLL)
    fn = _ENTRY_T(ctypes.cast(lib.pj_ee_entry, ctypes.c_void_p).value)
    fn._pyjax_lib = lib
    stats["builds"] += 1
    return fn
  except Exception:  # noqa: BLE001  -- no kernel: NumPy serves this key
    if os.environ.get("PYJAX_DEBUG", "") not in ("", "0"):
      import traceback
      traceback.print_exc()
    return _NONE


class _BuildJob:
  """A background build for the compiler's worker thread (``executable._worker``)."""

  def __init__(self, key, spec):
    self.key = key
    self.spec = spec
    self._claimed = False
    self._lock = threading.Lock()

  def claim(self):
    with self._lock:
      if self._claimed:
        return False
      self._claimed = True
      return True

  def run(self):
    fn = _load(self.key, *self.spec)
    _kernels[self.key] = fn


def _kernel(name, params, in_dtypes, out_dtype, classes):
  """The entry for this key, or None while it builds (or when it cannot exist)."""
  key = (name, in_dtypes, out_dtype, classes)
  fn = _kernels.get(key)
  if fn is not None:
    return None if fn is _NONE or fn is _BUILDING else fn
  from pyjax._src.backends.cpu import executable
  mode = executable.compile_mode()
  if mode == "off":
    return None
  with _kernels_lock:
    fn = _kernels.get(key)
    if fn is None:
      if not supported(name, params, in_dtypes, out_dtype):
        _kernels[key] = _NONE
        return None
      _kernels[key] = _BUILDING
      spec = (name, params, in_dtypes, out_dtype, classes)
      if mode != "sync":
        executable._worker().submit(_BuildJob(key, spec))
        return None
    else:
      return None if fn is _NONE or fn is _BUILDING else fn
  fn = _load(key, *spec)
  _kernels[key] = fn
  return None if fn is _NONE else fn


_I64x4 = ctypes.c_int64 * 4
_Px5 = ctypes.c_void_p * 5


def _run_c(name, bufs, params, out_dtype, shape, n):
  if name == "select_n" and len(bufs) > 4:
    return None
  lay = _layout(shape, bufs)
  if lay is None:
    return None
  n0, n1, views, s0, s1, classes = lay
  in_dtypes = tuple(v.dtype for v in views)
  fn = _kernel(name, params if name == "convert_element_type" else {}, in_dtypes,
               out_dtype, classes)
  if fn is None:
    return None
  out = _empty(shape, out_dtype)
  k = len(views)
  ptrs = _Px5(*[v.ctypes.data for v in views], out.ctypes.data)
  fn(n0, n1, ptrs, _I64x4(*s0), _I64x4(*s1))
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

  def run(self, fn, nblocks):
    """Call ``fn(i)`` for every block ``i`` in ``range(nblocks)``; re-raises the first
    exception."""
    job = _Job(fn, nblocks)
    for _ in range(min(self.n - 1, nblocks - 1)):
      self.q.put(job)
    job.work()
    job.done.wait()
    if job.error is not None:
      raise job.error


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
        from pyjax._src.backends.cpu.compiler import runtime
        _pool = _Pool(runtime._num_threads())
  return _pool


def _run_threads(name, bufs, params, out_dtype, shape):
  """The NumPy implementation on blocks of rows (of the first dimension longer than one
  block) on the pool's threads; None when there is one thread or too few rows."""
  pool = _get_pool()
  if pool.n < 2 or not shape:
    return None
  impl = impls.get(name)
  if impl is None:
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

  def block(i):
    sl = lead + (slice(bounds[i], bounds[i + 1]),)
    res = impl(*[v[sl] for v in views], **params)
    np.copyto(out[sl], res, casting="unsafe")
  pool.run(block, nblocks)
  return out


def wait():
  """Wait for every queued kernel build (tests and benchmarks)."""
  from pyjax._src.backends.cpu import executable
  executable.drain()
