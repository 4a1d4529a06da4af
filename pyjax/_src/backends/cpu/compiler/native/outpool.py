"""A pool for large output buffers of native executables.

A fresh multi-megabyte NumPy array is fresh memory from the kernel: the first write to each
page faults, and for an elementwise kernel over a 64 MB array those faults cost more than
the kernel itself.  Executables whose outputs are large allocate them with ``empty``
instead of ``np.empty``: a pooled array of the same shape and dtype that nothing but the
pool references any more (no Array, view, NumPy reference or pending work: every holder of
the memory holds a reference to the array object) is handed out again; otherwise a new one
is allocated and, within the byte budget, pooled.  Arrays in use are never handed out, so
results never share memory.
"""
from __future__ import annotations

import sys

import numpy as np

MIN_BYTES = 1 << 20       # smaller outputs use np.empty
MAX_BYTES = 256 << 20     # memory the pool may hold (in use or idle)

_pool = {}                # (shape, dtype) -> [arrays]
_bytes = 0


# references to an idle pooled array while a loop below looks at it: the pool's list, the
# loop variable and getrefcount's argument
_IDLE = 3


def empty(shape, dtype):
  """``np.empty(shape, dtype)``, reusing an idle pooled array when one exists."""
  global _bytes
  key = (shape, dtype)
  arrays = _pool.get(key)
  if arrays:
    for a in arrays:
      if sys.getrefcount(a) == _IDLE:
        return a
  a = np.empty(shape, dtype)
  n = a.nbytes
  if n < MIN_BYTES:
    return a
  if _bytes + n > MAX_BYTES:
    _evict(n)
  if _bytes + n <= MAX_BYTES:
    _pool.setdefault(key, []).append(a)
    _bytes += n
  return a


def _evict(need):
  """Drop idle arrays (any shape) until ``need`` more bytes fit in the budget."""
  global _bytes
  for key in list(_pool):
    keep = []
    for a in _pool[key]:
      if _bytes + need > MAX_BYTES and sys.getrefcount(a) == _IDLE:
        _bytes -= a.nbytes
      else:
        keep.append(a)
    if keep:
      _pool[key] = keep
    else:
      del _pool[key]


def pooled(a):
  """1 if the pool holds a reference to array ``a``, else 0."""
  return int(any(p is a for p in _pool.get((a.shape, a.dtype), ())))


def wants_pool(out_specs):
  """Whether an executable with these (shape, dtype) outputs should allocate from the
  pool."""
  for shape, dtype in out_specs:
    n = np.dtype(dtype).itemsize
    for d in shape:
      n *= int(d)
    if n >= MIN_BYTES:
      return True
  return False
