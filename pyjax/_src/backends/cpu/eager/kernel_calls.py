"""Eager transcendental functions on the compiler's own kernels, at every size.

``exp``, ``log``, ``tanh``, ``logistic``, ``sin``, ... (the primitives whose lowering is not
correctly rounded, ``primitive_table.INEXACT``) are computed by jit's native code with the
compiler's vector math (``compiler/kernels/vmath.py``), and jit's NumPy tier runs the same
C expressions (``numpy_tier/native.py``).  Eager operations use those kernels too, at
every size, so an eager op gives the bits of the same op under ``jit`` (as in JAX, where an
eager op is an XLA computation) and eager results never depend on an array's size.

``install()`` replaces the eager implementations of those primitives in
``registry.impls`` by wrappers (``impl(*bufs, **params)``; the NumPy function stays as
``__wrapped__``).  The call path is cheap: one CPython builtin per primitive (written
against CPython's stable C API and NumPy's array struct, like the compiler's segment
entries, ``compiler/cmodule.py``) takes the operands, checks that each is a C-contiguous,
aligned, native-order array of the output's shape or 0-d, finds the kernel for (primitive,
dtypes, layout) in a small table, allocates the output (``np.empty_like``; 1 MB and more
from the output pool) and calls the kernel, releasing the GIL from ``GIL_MIN_ELEMENTS``.
The kernels are ``numpy_tier/native.py``'s (one library per primitive, dtypes and layout
class, in the compiler's memory and disk caches) and run on the compiler's thread pool
from ``eager_native.INEXACT_PAR_MIN`` elements (elementwise: the same bits on any number of
threads).  Other operands (strided, broadcast rows, other dtypes) take the tier's general
path (``tier_native.run``); complex operands and primitives without a kernel keep the NumPy
function.

Nothing changes without a C compiler or with ``PYJAX_TIER_NATIVE=0``: the wrapper then
puts the NumPy function back in ``registry.impls`` on its first call.
"""
from __future__ import annotations

import ctypes
import os
import threading

import numpy as np

from pyjax._src.backends.cpu.eager import native as _en
from pyjax._src.backends.cpu.eager.registry import impls

ENABLED = os.environ.get("PYJAX_TIER_NATIVE", "1").strip().lower() not in (
    "0", "off", "false", "no")
GIL_MIN_ELEMENTS = 1 << 12     # the call releases the GIL from this many elements

# (after the prelude and ``cmodule._PYABI``: CPython's and NumPy's declarations)
_SOURCE = r"""
extern PyObject _Py_NoneStruct, _Py_NotImplementedStruct;
typedef void (*pj_ee_fn)(int64_t, int64_t, void **, const int64_t *, const int64_t *);

/* kernels by (primitive, operand count, type numbers, 0-d operand mask); fn NULL: none
   (the NumPy function serves) */
#define PJ_EK_MAX 4096
typedef struct { int prim, nin, t0, t1, t2, cls; pj_ee_fn fn; int64_t pool_min; } pj_ek_entry;
static pj_ek_entry pj_ek_tab[PJ_EK_MAX];
static int pj_ek_n;
static PyObject *pj_ek_ndarray, *pj_ek_empty_like, *pj_ek_pool;
static int64_t pj_ek_gil_min;

/* pool_min: outputs of this many elements or more come from the output pool */
int pj_ek_add(int prim, int nin, int t0, int t1, int t2, int cls, void *fn, int64_t pool_min) {
  for (int i = 0; i < pj_ek_n; i++) {
    pj_ek_entry *e = &pj_ek_tab[i];
    if (e->prim == prim && e->nin == nin && e->t0 == t0 && e->t1 == t1 && e->t2 == t2
        && e->cls == cls) { e->fn = (pj_ee_fn)fn; e->pool_min = pool_min; return 1; }
  }
  if (pj_ek_n >= PJ_EK_MAX) return 0;
  pj_ek_entry e = {prim, nin, t0, t1, t2, cls, (pj_ee_fn)fn, pool_min};
  pj_ek_tab[pj_ek_n] = e;
  /* published after the entry is written: ctypes calls this without the GIL, so a
     pj_ek_call on another thread may be scanning the table (it reads the count with
     acquire order and never sees a half-written entry); writers hold ``_lock`` */
  __atomic_store_n(&pj_ek_n, pj_ek_n + 1, __ATOMIC_RELEASE);
  return 1;
}

/* f(*arrays): the output array; None: no entry for this key (or operands of another
   layout); NotImplemented: no kernel exists for the key */
static PyObject *pj_ek_call(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
  if (nargs < 1 || nargs > 3) goto none;
  int t[3] = {0, 0, 0}, cls = 0;
  pj_array *like = NULL;
  void *P[4];
  int64_t s0[3] = {0, 0, 0}, s1[3];
  for (int i = 0; i < nargs; i++) {
    PyObject *o = args[i];
    if (o->ob_type != pj_ek_ndarray) goto none;
    pj_array *a = (pj_array *)o;
    if (!(a->flags & PJ_ALIGNED) || a->descr->byteorder == '>') goto none;
    if (a->nd == 0) {
      cls |= 1 << i;
      s1[i] = 0;
    } else {
      if (!(a->flags & PJ_C_CONTIGUOUS)) goto none;
      if (!like) like = a;
      else {
        if (a->nd != like->nd) goto none;
        for (int k = 0; k < a->nd; k++) if (a->dimensions[k] != like->dimensions[k]) goto none;
      }
      s1[i] = 1;
    }
    t[i] = a->descr->type_num;
    P[i] = a->data;
  }
  const int prim = (int)PyLong_AsLong(self);
  const pj_ek_entry *hit = NULL;
  const int n_entries = __atomic_load_n(&pj_ek_n, __ATOMIC_ACQUIRE);
  for (int i = 0; i < n_entries; i++) {
    const pj_ek_entry *e = &pj_ek_tab[i];
    if (e->prim == prim && e->nin == nargs && e->t0 == t[0] && e->t1 == t[1]
        && e->t2 == t[2] && e->cls == cls) { hit = e; break; }
  }
  if (!hit) goto none;
  pj_ee_fn fn = hit->fn;
  if (!fn) { Py_IncRef(&_Py_NotImplementedStruct); return &_Py_NotImplementedStruct; }
  pj_array *first = (pj_array *)args[0];
  if (!like) like = first;
  int64_t n = 1;
  for (int k = 0; k < like->nd; k++) n *= like->dimensions[k];
  PyObject *out;
  if (n >= hit->pool_min)
    out = PyObject_CallFunctionObjArgs(pj_ek_pool, (PyObject *)like, (PyObject *)first->descr, NULL);
  else
    out = PyObject_CallFunctionObjArgs(pj_ek_empty_like, (PyObject *)like, (PyObject *)first->descr, NULL);
  if (!out) return NULL;
  P[nargs] = ((pj_array *)out)->data;
  if (n > 0) {
    if (n >= pj_ek_gil_min) {
      void *ts = PyEval_SaveThread();
      fn(1, n, P, s0, s1);
      PyEval_RestoreThread(ts);
    } else {
      fn(1, n, P, s0, s1);
    }
  }
  return out;
none:
  Py_IncRef(&_Py_NoneStruct);
  return &_Py_NoneStruct;
}

static PyMethodDef pj_ek_def = {"eager_kernel_call", (PyCFunction)(void (*)(void))pj_ek_call,
                                PJ_METH_FASTCALL, NULL};

void pj_ek_init(PyObject *ndarray, PyObject *empty_like, PyObject *pool, int64_t gil_min) {
  Py_IncRef(ndarray); Py_IncRef(empty_like); Py_IncRef(pool);
  pj_ek_ndarray = ndarray; pj_ek_empty_like = empty_like; pj_ek_pool = pool;
  pj_ek_gil_min = gil_min;
}

PyObject *pj_ek_make(PyObject *prim_id, PyObject *owner) {
  return PyCFunction_NewEx(&pj_ek_def, prim_id, owner);
}
"""

_lock = threading.Lock()
_state = []          # [] before the first call; then [lib] or [None] (no kernels)
_prim_ids = {}       # primitive name -> the int the C table keys it by
stats = {"fast": 0, "general": 0, "numpy": 0}


def _library():
  """The loaded call library, or None (no C compiler, or it failed to build)."""
  if _state:
    return _state[0]
  with _lock:
    if _state:
      return _state[0]
    lib = None
    try:
      from pyjax._src.backends.cpu.compiler.native import build
      from pyjax._src.backends.cpu.compiler.native import cache
      tc = build.toolchain()
      if tc is not None:
        from pyjax._src.backends.cpu.compiler import cmodule
        from pyjax._src.backends.cpu.compiler.kernels import elementwise
        lib = cache.get_library("\n".join([elementwise.prelude(tc.float16, tc.mvec),
                                           cmodule._PYABI, _SOURCE]), tc)
        lib.pj_ek_init.argtypes = [ctypes.py_object] * 3 + [ctypes.c_int64]
        lib.pj_ek_init.restype = None
        lib.pj_ek_add.argtypes = [ctypes.c_int] * 6 + [ctypes.c_void_p, ctypes.c_int64]
        lib.pj_ek_add.restype = ctypes.c_int
        lib.pj_ek_make.argtypes = [ctypes.py_object, ctypes.py_object]
        lib.pj_ek_make.restype = ctypes.py_object
        lib.pj_ek_init(np.ndarray, np.empty_like, _pool_empty, GIL_MIN_ELEMENTS)
    except Exception:  # noqa: BLE001  -- no kernels: NumPy's functions serve
      from pyjax._src.backends.cpu import debug
      if debug.level() >= 1:
        import traceback
        traceback.print_exc()
      lib = None
    _state.append(lib)
    return lib


def _pool_empty(like, dtype):
  return _en._empty(like.shape, dtype)


def _fast_layout(bufs):
  """Whether the C builtin takes these operands: 1-3 aligned, native-order NumPy arrays,
  each C-contiguous of one common shape or 0-d."""
  if not 1 <= len(bufs) <= 3:
    return False
  shape = None
  for b in bufs:
    if type(b) is not np.ndarray or not b.flags.aligned or b.dtype.byteorder == ">":
      return False
    if b.ndim:
      if not b.flags.c_contiguous or (shape is not None and b.shape != shape):
        return False
      shape = b.shape
  return True


def _register(lib, name, bufs):
  """Enter the kernel for ``bufs``' (dtypes, layout) in the C table (none: NULL)."""
  from pyjax._src.backends.cpu.compiler.native import outpool
  from pyjax._src.backends.cpu.numpy_tier import native as tier_native
  in_dtypes = tuple(b.dtype for b in bufs)
  out_dtype = in_dtypes[0]
  fn = None
  if out_dtype in _en._FLOATS and all(d in _en._FLOATS or d.kind in "iu" for d in in_dtypes):
    classes = "".join("c" if b.ndim else "b" for b in bufs)
    fn = tier_native._kernel(name, in_dtypes, out_dtype, classes)
  addr = ctypes.cast(fn, ctypes.c_void_p).value if fn is not None else None
  t = [b.dtype.num for b in bufs] + [0] * (3 - len(bufs))
  cls = sum(1 << i for i, b in enumerate(bufs) if not b.ndim)
  pool_min = -(-outpool.MIN_BYTES // out_dtype.itemsize)
  with _lock:   # one writer at a time (readers need no lock: see pj_ek_add)
    lib.pj_ek_add(_prim_ids[name], len(bufs), *t, cls, addr, pool_min)


def _wrapper(name, numpy_impl):
  """The eager implementation of ``name``: the compiler's kernel, else ``numpy_impl``."""
  call = None

  def impl(*args, **params):
    nonlocal call
    if call is not None:
      out = call(*args)
      if type(out) is np.ndarray:
        return out
      if out is NotImplemented:
        return numpy_impl(*args, **params)
    else:
      lib = _library()
      if lib is None:   # no kernels in this process: NumPy's function from now on
        if impls.get(name) is impl:
          impls[name] = numpy_impl
        return numpy_impl(*args, **params)
      with _lock:
        pid = _prim_ids.setdefault(name, len(_prim_ids))
      call = lib.pj_ek_make(pid, lib)
    return _general(call, name, numpy_impl, args, params)

  impl.__name__ = f"eager_{name}"
  impl.__wrapped__ = numpy_impl
  impl._pyjax_kernel_impl = True
  return impl


def _general(call, name, numpy_impl, args, params):
  """A call the C builtin did not serve: a new key is entered in its table (then it
  serves), other layouts run the tier's general kernel path, other types NumPy."""
  from pyjax._src.backends.cpu.numpy_tier import native as tier_native
  bufs = [np.asarray(a) for a in args]
  if _fast_layout(bufs):
    _register(_state[0], name, bufs)
    out = call(*bufs)
    if type(out) is np.ndarray:
      stats["fast"] += 1
      return out
    if out is NotImplemented:
      stats["numpy"] += 1
      return numpy_impl(*args, **params)
  out = tier_native.run(name, bufs, params)
  if out is None:
    stats["numpy"] += 1
    return numpy_impl(*args, **params)
  stats["general"] += 1
  return out


def install():
  """Put the kernel wrappers in ``registry.impls`` for every primitive of
  ``primitive_table.INEXACT`` that has an eager implementation (nothing with
  ``PYJAX_TIER_NATIVE=0``)."""
  if not ENABLED:
    return
  from pyjax._src.backends.cpu.compiler import primitive_table
  for name in sorted(primitive_table.INEXACT):
    fn = impls.get(name)
    if fn is not None and not getattr(fn, "_pyjax_kernel_impl", False):
      impls[name] = _wrapper(name, fn)


def active():
  """Whether eager transcendental functions run on the compiler's kernels (after the
  first such call; before it, whether they will try)."""
  return ENABLED and (not _state or _state[0] is not None)
