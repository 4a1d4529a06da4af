"""NumPy's own inner loops of a few unary float ufuncs, run on the native thread pool.

Where the eager implementations of transcendental functions (``exp``, ``sin``, ``tanh``,
...) are NumPy's (``PYJAX_TIER_NATIVE=0``; by default the compiler's kernels serve them,
``eager/kernel_calls.py``), large ones must give NumPy's bits (``eager/native.py``: the
compiler's vector math differs in the last ulp).  NumPy
computes them with one inner-loop function per (ufunc, type), whose address its public C
API lists in the ufunc object (``PyUFuncObject.functions``, beside ``types``).  This module
reads that address and calls the very function from a small C library on row chunks of the
operand on the compiler's thread pool (``pj_parallel_for``: spinning workers, the GIL
released for the whole call), instead of Python threads each calling the ufunc.  Same
function, same elements: the same bits; the first use of each (ufunc, type) also checks
it against the ufunc on special values and random ones, and a loop that differs (or a
NumPy whose ufunc object has another layout) is never used.
"""
from __future__ import annotations

import ctypes
import threading

import numpy as np

from pyjax._src.backends.cpu.eager import native as _en

_ENTRY_T = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                            ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64)
GRAIN = 1 << 15     # elements per chunk of the pool, at least

_SOURCE = r"""
typedef void (*pj_ul_loop_t)(char **args, const int64_t *dims, const int64_t *steps,
                             void *data);
typedef struct { pj_ul_loop_t fn; void *data; const char *x; char *o; int64_t sz; } pj_ul_ctx;
static void pj_ul_range(void *vc, int64_t lo, int64_t hi) {
  const pj_ul_ctx *c = (const pj_ul_ctx *)vc;
  char *args[2] = {(char *)c->x + lo * c->sz, c->o + lo * c->sz};
  const int64_t n = hi - lo;
  const int64_t steps[2] = {c->sz, c->sz};
  c->fn(args, &n, steps, c->data);
}
void pj_ul_entry(void *fn, void *data, const void *x, void *o, int64_t n, int64_t sz,
                 int64_t grain) {
  pj_ul_ctx c = {(pj_ul_loop_t)fn, data, (const char *)x, (char *)o, sz};
  if (n <= 0) return;
  if (pj_parallel_for && n >= 2 * grain) pj_parallel_for(pj_ul_range, &c, n, grain);
  else pj_ul_range(&c, 0, n);
}
"""

_loops = {}          # (ufunc name, dtype char) -> (function address, data) | None
_lock = threading.Lock()


def _source(tc):
  from pyjax._src.backends.cpu.compiler import cmodule
  from pyjax._src.backends.cpu.compiler.kernels import elementwise
  return "\n".join([elementwise.prelude(tc.float16, tc.mvec), cmodule._RUNTIME_DECL, _SOURCE])


def _entry():
  return _en._cached_kernel(("ufunc_loops",),
                            lambda: _en._load_library(_source, "pj_ul_entry", _ENTRY_T))


def _read_loop(ufunc, ch):
  """(address, data) of the inner loop NumPy selects for ``ufunc`` on type ``ch``
  (the first ``ch->ch`` entry of its type list), or None when the object does not have
  the layout of NumPy's public ``PyUFuncObject``."""
  sig = f"{ch}->{ch}"
  if ufunc.nin != 1 or ufunc.nout != 1 or sig not in ufunc.types:
    return None
  i = ufunc.types.index(sig)
  base = id(ufunc)
  ptr = ctypes.sizeof(ctypes.c_void_p)
  head = 2 * ptr                         # PyObject_HEAD
  ints = (ctypes.c_int * 4).from_address(base + head)   # nin, nout, nargs, identity
  if (ints[0], ints[1], ints[2]) != (1, 1, 2):
    return None
  funcs, data = (ctypes.c_void_p * 2).from_address(base + head + 16)
  ntypes = ctypes.c_int.from_address(base + head + 16 + 2 * ptr).value
  name_p, types_p = (ctypes.c_void_p * 2).from_address(base + head + 24 + 2 * ptr)
  if (ntypes != ufunc.ntypes or not funcs or not name_p or not types_p
      or ctypes.string_at(name_p) != ufunc.__name__.encode()):
    return None
  codes = ctypes.string_at(types_p, 2 * ntypes)
  want = np.dtype(ch).num
  if codes[2 * i] != want or codes[2 * i + 1] != want:
    return None
  fn = ctypes.c_void_p.from_address(funcs + i * ptr).value
  d = ctypes.c_void_p.from_address(data + i * ptr).value if data else None
  return None if not fn else (fn, d)


def _probe(dtype):
  rng = np.random.default_rng(0)
  x = np.concatenate([
      np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, 1e-30, -1e-30,
                88.7, -103.9, 709.0, -745.0, 1e30, -1e30, 3.14159, 1.5e-45]),
      rng.standard_normal(4099) * np.exp(rng.uniform(-6, 6, 4099))]).astype(dtype)
  return x


def _check(entry, ufunc, loop, dtype):
  x = _probe(dtype)
  want = ufunc(x)
  got = np.empty_like(x)
  entry(loop[0], loop[1], x.ctypes.data, got.ctypes.data, x.size, x.itemsize, 1024)
  return np.array_equal(got.view(np.uint8), want.view(np.uint8))


def run(ufunc, x, out):
  """``ufunc(x, out=out)`` (contiguous float32/float64 ``x`` and ``out`` of one dtype) on
  the native pool with NumPy's own loop; False (nothing done) when that is not
  available."""
  entry = _entry()
  if entry is None:
    return False
  key = (ufunc.__name__, x.dtype.char)
  loop = _loops.get(key, False)
  if loop is False:
    with _lock:
      loop = _loops.get(key, False)
      if loop is False:
        try:
          loop = _read_loop(ufunc, x.dtype.char)
          if loop is not None and not _check(entry, ufunc, loop, x.dtype):
            loop = None
        except Exception:  # noqa: BLE001  -- an unexpected layout: Python threads instead
          loop = None
        _loops[key] = loop
  if loop is None:
    return False
  entry(loop[0], loop[1], x.ctypes.data, out.ctypes.data, x.size, x.itemsize, GRAIN)
  return True
