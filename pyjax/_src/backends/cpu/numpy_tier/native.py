"""``jit``'s NumPy tier computing what the native tier computes, bit for bit.

A jitted function's first calls run the NumPy plan (``executable.py``) and later ones the
native code (``compiler/``).  The native code computes ``exp``, ``log``, ``tanh``, ... with
``compiler/kernels/vmath.py`` (or libm's scalar functions), NumPy with its own SIMD libm: they
differ in the last ulps, so a training loop's result would depend on the step at which
the native code arrived.  ``impl(name, numpy_impl)`` gives the implementation the NumPy
plan, the native executable's NumPy steps and the compiler's constant folding use for
such a primitive: a small prebuilt C kernel whose element expression is the compiler's own
(``compiler/elementwise.py``, through ``eager_native.kernel_source``), so every tier gives the
same bits.  One library per (primitive, dtypes, layout class), built once on first use on
the calling thread (whatever ``PYJAX_COMPILE`` says: determinism is not optional) and kept
in the compiler's caches (memory and disk).

Float sums and products (``reduce_sum``/``reduce_prod``) follow XLA's order at every size
(``eager/reductions.py``, ``ordered_reduce``; eager operands over 65,536 elements use NumPy's
pairwise order, ~20x faster, which the native tier does not reproduce), except sums of
long rows of large operands: the lanes order on every tier (``row_lanes``).  Float32/float64
``dot_general`` runs on SciPy's BLAS, single-threaded, as the native tier calls it
(``_blas_dot``); ``conv_general_dilated`` runs the native tier's own kernel (``eqn_impl``).
The reductions and dots need no C compiler but only matter when one exists.

Without a C compiler the NumPy implementation runs (the native tier does not exist then
either).  Eager (un-jitted) operations run the same kernels (``eager/kernel_calls.py``
replaces the eager implementations of ``PRIMS``; ``impl`` passes those through), so an
eager transcendental function gives the bits of the jitted one, at every size.
``PYJAX_TIER_NATIVE=0`` turns this off (NumPy's functions everywhere: the tiers then
differ in those ulps).
"""
from __future__ import annotations

import math
import os
import threading

import numpy as np

from pyjax._src.backends.cpu.eager import native as _en
from pyjax._src.backends.cpu.numpy_tier import random as _tr
from pyjax._src.backends.cpu.compiler.kernels import dot as _dot
from pyjax._src.backends.cpu.compiler.kernels import sgemm as _sgemm
from pyjax._src.backends.cpu.compiler import primitive_table as _table

ENABLED = os.environ.get("PYJAX_TIER_NATIVE", "1").strip().lower() not in (
    "0", "off", "false", "no")

# the primitives whose lowering (compiler/elementwise.py) is not an exactly rounded operation
PRIMS = _table.INEXACT

_kernels = {}
_lock = threading.Lock()
_wrappers = {}
stats = {"native": 0, "numpy": 0}


# float sums/products: XLA's order at every size (the eager implementation sums operands of
# more than 65,536 elements in NumPy's faster pairwise order)
REDUCE_PRIMS = _table.ORDERED_REDUCTIONS


_BLAS_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _blas_dot(numpy_impl):
  """dot_general of float32/float64 operands on SciPy's BLAS ``sgemm``/``dgemm``, the
  library the native tier calls (``compiler/kernels/dot.py``), one call per batch item (NumPy's
  ``matmul`` runs NumPy's own BLAS build, or no BLAS for strided operands: other bits);
  other dtypes: ``numpy_impl``."""
  from scipy.linalg import blas

  def run(lhs, rhs, *, dimension_numbers, precision=None, preferred_element_type=None,
          out_sharding=None):
    lhs, rhs = np.asarray(lhs), np.asarray(rhs)
    d = lhs.dtype
    if (d not in _BLAS_DTYPES or rhs.dtype != d
        or (preferred_element_type is not None and np.dtype(preferred_element_type) != d)):
      return numpy_impl(lhs, rhs, dimension_numbers=dimension_numbers, precision=precision,
                        preferred_element_type=preferred_element_type,
                        out_sharding=out_sharding)
    (lc, rc), (lb, rb) = dimension_numbers
    lf = [i for i in range(lhs.ndim) if i not in lb and i not in lc]
    rf = [i for i in range(rhs.ndim) if i not in rb and i not in rc]
    bshape = tuple(lhs.shape[i] for i in lb)
    shape = bshape + tuple(lhs.shape[i] for i in lf) + tuple(rhs.shape[i] for i in rf)
    nb = math.prod(bshape)   # (math.prod: np.prod costs ~4 us a call, a loop body's dot
    m = math.prod([lhs.shape[i] for i in lf])   # on the NumPy tier runs this per step)
    n = math.prod([rhs.shape[i] for i in rf])
    k = math.prod([lhs.shape[i] for i in lc])
    if 0 in (nb, m, n, k) or max(m, n, k) > 2 ** 31 - 1:
      return numpy_impl(lhs, rhs, dimension_numbers=dimension_numbers, precision=precision,
                        preferred_element_type=preferred_element_type,
                        out_sharding=out_sharding)
    a = np.transpose(lhs, list(lb) + lf + list(lc)).reshape(nb, m, k)
    b = np.transpose(rhs, list(rb) + list(rc) + rf).reshape(nb, k, n)
    gemm = blas.sgemm if d == _BLAS_DTYPES[0] else blas.dgemm
    # float32 blocks try pyjax's own kernel first, as the native tier's do (sgemm.py)
    own = _sgemm.function() if d == _BLAS_DTYPES[0] else None
    out = np.empty((nb, m, n), d)
    # BLAS single-threaded, as the native tier runs it: OpenBLAS's threaded driver blocks
    # the contraction differently (other bits once k > 2 * GEMM_Q)
    # a single product runs in the native tier's blocks of rows or columns (OpenBLAS's
    # bits depend on each call's shape: compiler/kernels/dot.py's block_size)
    bs = _dot.block_size(m, n, k, nb)
    with _blas_one_thread():
      for i in range(nb):
        # row-major C = A B is column-major C^T = B^T A^T; an operand that is a transposed
        # view is read in place with BLAS's transpose flag, as compiler/kernels/dot.py's
        # canonical layouts do (OpenBLAS's result depends on the flags)
        ai, bi = a[i], b[i]
        ta = not ai.flags.c_contiguous and ai.T.flags.c_contiguous
        tb = not bi.flags.c_contiguous and bi.T.flags.c_contiguous
        if not ta:
          ai = np.ascontiguousarray(ai)
        if not tb:
          bi = np.ascontiguousarray(bi)
        rows = m >= n
        for s0 in (range(0, m if rows else n, bs) if nb <= 1 else (0,)):
          sl = slice(s0, s0 + bs) if nb <= 1 else slice(None)
          ab, bb = (ai[sl], bi) if rows else (ai, bi[:, sl])
          if own is not None and _sgemm.block(
              own, ta, tb, ab, bb, out[i, sl] if rows else out[i, :, sl]):
            continue
          cb = gemm(1.0, bb if tb else bb.T, ab if ta else ab.T, trans_a=int(tb),
                    trans_b=int(ta)).T
          if rows:
            out[i, sl] = cb
          else:
            out[i, :, sl] = cb
    return out.reshape(shape)
  run.__name__ = "tier_dot_general"
  return run


_blas_threads = []


class _blas_one_thread:
  """``with``: SciPy's OpenBLAS on one thread (restored after), where it can be set."""

  def __enter__(self):
    if not _blas_threads:
      from pyjax._src.backends.cpu.compiler.kernels import dot
      set_a, get_a = dot.blas_thread_control()
      if set_a and get_a:
        _blas_threads.append((_en.ctypes.CFUNCTYPE(None, _en.ctypes.c_int)(set_a),
                              _en.ctypes.CFUNCTYPE(_en.ctypes.c_int)(get_a)))
      else:
        _blas_threads.append(None)
    fns = _blas_threads[0]
    self.prev = None
    if fns is not None:
      self.prev = fns[1]()
      if self.prev != 1:
        fns[0](1)
    return self

  def __exit__(self, *exc):
    fns = _blas_threads[0]
    if fns is not None and self.prev is not None and self.prev != 1:
      fns[0](self.prev)


def _have_cc():
  from pyjax._src.backends.cpu.compiler.native import build
  return build.toolchain() is not None


def _ordered_reduce(name):
  from pyjax._src.backends.cpu.eager import reductions as eager_reductions

  def run(x, *, axes, **_):
    return eager_reductions.ordered_reduce(name, np.asarray(x), tuple(axes))
  run.__name__ = f"tier_{name}"
  return run


def impl(name, numpy_impl):
  """The implementation of primitive ``name`` for jit's tiers: ``numpy_impl`` itself, or
  for a transcendental primitive a wrapper running the compiler's kernel (falling back to
  ``numpy_impl`` where none can exist), or for a float sum/product one in XLA's order at
  every size."""
  if not ENABLED or numpy_impl is None:
    return numpy_impl
  if name in REDUCE_PRIMS:
    if not _have_cc():
      return numpy_impl   # one tier only: NumPy's faster order is fine
    w = _wrappers.get(name)
    if w is None:
      w = _wrappers[name] = _ordered_reduce(name)
    return w
  if name == "dot_general":
    if not _have_cc():
      return numpy_impl
    w = _wrappers.get((name, numpy_impl))
    if w is None:
      w = _wrappers[(name, numpy_impl)] = _blas_dot(numpy_impl)
    return w
  if name in _tr.PRIMS:   # threefry2x32, fma: exact C kernels (numpy_tier/random.py)
    return _tr.impl(name, numpy_impl)
  if name not in PRIMS or getattr(numpy_impl, "_pyjax_kernel_impl", False):
    return numpy_impl   # (the eager implementation runs these kernels: eager/kernel_calls.py)
  w = _wrappers.get((name, numpy_impl))
  if w is None:
    def w(*args, **params):
      out = run(name, args, params)
      if out is None:
        stats["numpy"] += 1
        return numpy_impl(*args, **params)
      stats["native"] += 1
      return out
    w.__name__ = f"tier_{name}"
    w.__wrapped__ = numpy_impl
    _wrappers[(name, numpy_impl)] = w
  return w


def run(name, args, params):
  """``name`` applied to ``args`` by the compiler's C expression, or None."""
  bufs = [np.asarray(a) for a in args]
  if not bufs or any(b.dtype not in _en._FLOATS and b.dtype.kind not in "iu" for b in bufs):
    return None
  out_dtype = bufs[0].dtype
  if out_dtype not in _en._FLOATS:
    return None
  return run_kernel(_kernel, name, bufs, out_dtype)


def run_kernel(kernel, name, bufs, out_dtype):
  """The entry ``kernel(name, in_dtypes, out_dtype, layout classes)`` (None: no kernel)
  applied to the NumPy buffers ``bufs`` broadcast together: a new ``out_dtype`` array, or
  None."""
  try:
    shape = np.broadcast_shapes(*[b.shape for b in bufs])
  except ValueError:
    return None
  n = 1
  for d in shape:
    n *= d
  if n == 0:
    return None
  lay = _en._layout(shape, bufs)
  if lay is None:
    bufs = [np.ascontiguousarray(np.broadcast_to(b, shape)) for b in bufs]
    lay = _en._layout(shape, bufs)
    if lay is None:
      return None
  n0, n1, views, s0, s1, classes = lay
  fn = kernel(name, tuple(v.dtype for v in views), out_dtype, classes)
  if fn is None:
    return None
  out = _en._empty(shape, out_dtype)
  k = len(views)
  ptrs = (_en.ctypes.c_void_p * (k + 1))(*[v.ctypes.data for v in views], out.ctypes.data)
  fn(n0, n1, ptrs, (_en.ctypes.c_int64 * k)(*s0), (_en.ctypes.c_int64 * k)(*s1))
  return out


def _kernel(name, in_dtypes, out_dtype, classes):
  key = (name, in_dtypes, out_dtype, classes)
  fn = _kernels.get(key)
  if fn is None:
    with _lock:
      fn = _kernels.get(key)
      if fn is None:
        node = _en._node(name, {}, in_dtypes, out_dtype)
        from pyjax._src.backends.cpu.compiler.kernels import elementwise
        if any(d not in _en._C_DTYPES for d in in_dtypes) or not elementwise.supports(node):
          fn = _en._NONE
        else:
          fn = _en._load(key, name, {}, in_dtypes, out_dtype, classes, _en.INEXACT_PAR_MIN)
        _kernels[key] = fn
  return None if fn is _en._NONE else fn


# --- convolutions ---------------------------------------------------------------------------
# The native tier runs a float convolution as im2col + BLAS products whose contraction order
# follows the operands' layouts (compiler/kernels/convolution.py); the NumPy implementation orders it
# otherwise, so long contractions (a kernel gradient) differ in the last bits.  The NumPy
# plan therefore runs the compiler's convolution itself: a one-equation program built
# natively on first use (memory and disk caches make later builds of the same shape cheap).
OPAQUE_PRIMS = frozenset({"conv_general_dilated"})


def eqn_impl(eqn, numpy_impl):
  """For an equation of ``OPAQUE_PRIMS``: a function of the equation's input buffers that
  runs the native tier's kernel for it (``numpy_impl(*bufs, **params)`` where none can be
  built); for a long ``scan``/``while``: ``loop_native.eqn_impl``'s runner (its outputs a
  list); None for other equations."""
  if eqn.primitive.name in ("scan", "while"):   # long loops: in C (numpy_tier/loops.py)
    from pyjax._src.backends.cpu.numpy_tier import loops as loop_native
    return loop_native.eqn_impl(eqn, numpy_impl)
  if not ENABLED or numpy_impl is None or eqn.primitive.name not in OPAQUE_PRIMS:
    return None
  if any(np.dtype(v.aval.dtype) not in (np.dtype(np.float32), np.dtype(np.float64))
         for v in eqn.outvars):
    return None
  params = dict(eqn.params)
  state = []

  def build():
    from pyjax._src import core
    from pyjax._src.backends.cpu import executable
    ins = [core.Var(v.aval) for v in eqn.invars]
    outs = [core.Var(v.aval) for v in eqn.outvars]
    jx = core.Jaxpr([], ins, outs, [eqn.replace(invars=ins, outvars=outs)])
    try:
      return executable._build_native(core.ClosedJaxpr(jx, []), f"tier_{eqn.primitive.name}")
    except Exception:  # noqa: BLE001 -- no compiler or unsupported: NumPy serves
      return None

  def run(*bufs):
    if not state:
      with _lock:
        if not state:
          state.append(build())
    prog = state[0]
    if prog is None:
      stats["numpy"] += 1
      return numpy_impl(*bufs, **params)
    stats["native"] += 1
    out, = prog.fn(*[np.asarray(b) for b in bufs])
    return out

  run.__name__ = f"tier_{eqn.primitive.name}"
  return run
