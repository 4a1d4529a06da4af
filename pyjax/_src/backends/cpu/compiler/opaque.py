"""Opaque native operations: primitives with a hand-written C kernel of their own.

A convolution, a gather, a sort ... is not a loop nest fusion can merge with its
neighbours, but it should still run inside the native segment (and inside native loops)
instead of as a NumPy step between segments.  Such a primitive registers here:

- ``supported(node) -> bool``: whether this node (params, dtypes, shapes) has a kernel;
- ``kernel_source(node, name) -> str``: C defining ``static void name(void *const *P)``,
  where ``P`` holds the data pointers of the node's inputs, then of its outputs (all
  C-contiguous, in storage types: ``lower_c.storage_type``; a scalar-literal input is a
  null pointer -- a kernel that accepts literals bakes them into its C, the others'
  ``supported`` rejects them); the kernel may use the
  prelude's helpers and ``pj_parallel_for`` (``native/runtime.py``);
- ``work(node) -> int``: a rough count of elementary operations (for the GIL-release
  threshold).

Fusion makes every supported node a group of its own (kind ``"dot"``, like a BLAS call):
its operands are materialized before it and its outputs after it.  Multi-output nodes are
allowed.  Modules that register: ``kernels/convolution.py`` (convolutions), ``kernels/sorting.py`` (sort, top_k,
cumulative ops), ``kernels/gather_scatter.py`` (gather and the scatters), ``kernels/shapes.py``
(dynamic_slice, dynamic_update_slice, concatenate, stack, split), ``kernels/windowed.py``
(reduce_window_sum/max/min, select_and_scatter_add, select_and_gather_add), ``kernels/gemm.py``
(dot_general on integer, bool and half-precision operands; float32/float64 dots call BLAS),
``kernels/linalg.py`` (small real lu, triangular_solve, lu_pivots_to_permutation via SciPy's LAPACK),
``kernels/sparse.py`` (sparse x dense products and the sampled dense-dense product).
"""
from __future__ import annotations

import importlib
import threading

_REGISTRY = {}
# modules whose import registers kernels (imported lazily, once)
_MODULES = ["pyjax._src.backends.cpu.compiler.kernels.convolution",
            "pyjax._src.backends.cpu.compiler.kernels.sorting",
            "pyjax._src.backends.cpu.compiler.kernels.gather_scatter",
            "pyjax._src.backends.cpu.compiler.kernels.shapes",
            "pyjax._src.backends.cpu.compiler.kernels.windowed",
            "pyjax._src.backends.cpu.compiler.kernels.gemm",
            "pyjax._src.backends.cpu.compiler.kernels.linalg",
            "pyjax._src.backends.cpu.compiler.kernels.sparse"]
_loaded = False
# held while the modules register: the compiler's background thread and a NumPy-tier
# convolution building its kernel on the calling thread can look up at the same time, and
# a caller must never see a half-filled registry (it would lower a convolution, say, as a
# NumPy step: another program, other bits)
_load_lock = threading.RLock()


class Entry:
  __slots__ = ("prim", "supported", "kernel_source", "work")

  def __init__(self, prim, supported, kernel_source, work):
    self.prim, self.supported, self.kernel_source, self.work = prim, supported, kernel_source, work


def register(prim, supported, kernel_source, work):
  """Register a native kernel for primitive ``prim`` (see the module docstring)."""
  _REGISTRY[prim] = Entry(prim, supported, kernel_source, work)


def _load():
  """Import the registering modules once; ``_loaded`` is set only after all of them have
  registered (a concurrent caller waits for that)."""
  global _loaded
  if _loaded:
    return
  with _load_lock:
    if not _loaded:
      for m in _MODULES:
        importlib.import_module(m)
      _loaded = True


def lookup(node):
  """The entry that runs ``node`` natively, or None."""
  _load()
  e = _REGISTRY.get(node.prim)
  if e is None or node.effects:
    return None
  try:
    return e if e.supported(node) else None
  except (KeyError, TypeError, ValueError):
    return None
