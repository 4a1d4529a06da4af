"""The PRNG's primitives on prebuilt C kernels for jit's NumPy tier.

``random.normal``'s program is ``iota_2x32_shape``, ``threefry2x32`` (20 rounds of
add/rotate/xor on ``uint32``), a few bit operations, ``fma`` and ``erf_inv``.  NumPy runs
Threefry as ~100 passes over the data and emulates ``fma`` in float64 with error-free
transformations (``eager/random.py``), which made a jitted 1M-sample ``normal``'s first
call (the NumPy tier) slower than JAX's compile and run.  ``impl(name, numpy_impl)`` gives
the tiers a wrapper that runs the compiler's own C expression for the element
(``compiler/elementwise.py``: ``threefry2x32_0``/``_1``, ``fma``) in a small library per
(primitive, dtypes, layout class), never per shape -- the same machinery as
``eager/native.py``'s kernels, multi-threaded above ``eager_native.GRAIN`` elements.

Both operations are exact (integer arithmetic; a correctly rounded fused multiply-add),
so the kernel's bits are the NumPy implementation's and the native tier's: unlike
``tier_native``'s transcendental kernels, no tier depends on them for determinism.  A
missing library is therefore built on the compiler's background thread while the NumPy
implementation serves (``PYJAX_COMPILE=sync``, or when the disk cache has it: on the
calling thread; ``off``: never), and kept in the compiler's caches (memory and disk), so a
machine builds each once.
``PYJAX_TIER_RANDOM=0`` turns this off.
"""
from __future__ import annotations

import os
import threading

import numpy as np

from pyjax._src.backends.cpu.eager import native as _en

ENABLED = os.environ.get("PYJAX_TIER_RANDOM", "1").strip().lower() not in (
    "0", "off", "false", "no")
PRIMS = frozenset({"threefry2x32", "fma"})

_U32 = np.dtype(np.uint32)
_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)
_kernels = {}              # key -> entry | _BUILDING | _en._NONE
_lock = threading.Lock()
_BUILDING = object()
_wrappers = {}
stats = {"native": 0, "numpy": 0}


def _load(key):
  name, in_dtypes, out_dtype, classes = key
  from pyjax._src.backends.cpu.compiler.kernels import elementwise
  if not elementwise.supports(_en._node(name, {}, in_dtypes, out_dtype)):
    return _en._NONE
  return _en._load(key, name, {}, in_dtypes, out_dtype, classes)


def _on_disk(key):
  """Whether the library for ``key`` is in the compiler's caches (loading it is cheap)."""
  from pyjax._src.backends.cpu.compiler.native import build
  from pyjax._src.backends.cpu.compiler.native import cache
  tc = build.toolchain()
  if tc is None:
    return False
  name, in_dtypes, out_dtype, classes = key
  try:
    src = _en.library_source(name, {}, in_dtypes, out_dtype, classes, tc)
  except Exception:  # noqa: BLE001  -- unsupported: _load says so
    return True
  return cache.is_cached(src, tc)


def _kernel(name, in_dtypes, out_dtype, classes):
  """The entry for this key, or None (building, or impossible)."""
  key = (name, in_dtypes, out_dtype, classes)
  fn = _kernels.get(key)
  if fn is not None:
    return None if fn is _en._NONE or fn is _BUILDING else fn
  from pyjax._src.backends.cpu import executable
  mode = executable.compile_mode()
  if mode == "off":
    return None
  with _lock:
    if key in _kernels:
      return _kernel(name, in_dtypes, out_dtype, classes)
    _kernels[key] = _BUILDING
  if mode != "sync" and not _on_disk(key):
    executable.submit(lambda: _kernels.__setitem__(key, _load(key)))
    return None
  fn = _kernels[key] = _load(key)
  return None if fn is _en._NONE else fn


def _run(name, bufs, out_dtype):
  """Primitive ``name`` on ``bufs`` by its C kernel (one output of ``out_dtype``), or None."""
  from pyjax._src.backends.cpu.numpy_tier import native as tier_native
  return tier_native.run_kernel(_kernel, name, bufs, out_dtype)


def _threefry(numpy_impl):
  def run(k1, k2, x1, x2):
    bufs = [np.asarray(b) for b in (k1, k2, x1, x2)]
    if all(b.dtype == _U32 for b in bufs):
      a = _run("threefry2x32_0", bufs, _U32)
      if a is not None:
        b = _run("threefry2x32_1", bufs, _U32)
        if b is not None:
          stats["native"] += 1
          return [a, b]
    stats["numpy"] += 1
    return numpy_impl(k1, k2, x1, x2)
  run.__name__ = "tier_threefry2x32"
  return run


def _fma(numpy_impl):
  def run(a, b, c):
    bufs = [np.asarray(x) for x in (a, b, c)]
    d = bufs[0].dtype
    if d in (_F32, _F64) and bufs[1].dtype == d and bufs[2].dtype == d:
      out = _run("fma", bufs, d)
      if out is not None:
        stats["native"] += 1
        return out
    stats["numpy"] += 1
    return numpy_impl(a, b, c)
  run.__name__ = "tier_fma"
  return run


def impl(name, numpy_impl):
  """The tiers' implementation of PRNG primitive ``name`` (``PRIMS``): a wrapper running
  the C kernel where one exists (falling back to ``numpy_impl``), else ``numpy_impl``."""
  if not ENABLED or numpy_impl is None or name not in PRIMS:
    return numpy_impl
  w = _wrappers.get((name, numpy_impl))
  if w is None:
    w = (_threefry if name == "threefry2x32" else _fma)(numpy_impl)
    w.__wrapped__ = numpy_impl
    _wrappers[(name, numpy_impl)] = w
  return w
