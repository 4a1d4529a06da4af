"""Kernel-side operations beyond ``ref[...]``: masked ``load`` / ``store`` (Triton style),
atomic read-modify-writes, ``dot``, ``debug_print``, ``reciprocal``.

They act on refs (or ``ref.at[...]`` views) the way JAX's interpret mode discharges them:
a load or store at a window index pads the ref with uninitialized values first, so a
window running past the end reads NaN (floats) instead of being shifted back as
``dynamic_slice`` would shift it, and writes past the end are dropped; with a ``mask``,
a load takes ``other`` where the mask is False and a store keeps the old values there.
"""
from __future__ import annotations

import enum

import numpy as np

from pyjax._src.pallas import core as plc
from pyjax._src.state import indexing


def _full_idx(ref, idx):
  if idx is None:
    return (slice(None),) * len(ref.shape)
  return idx if isinstance(idx, tuple) else (idx,)


def _padded_window(x, idx):
  import pyjax.lax as lax
  starts, sizes, strides, squeeze = indexing._window(x.shape, idx)
  if any(s != 1 for s in strides):
    raise NotImplementedError("Unimplemented stride support.")
  fill = plc.uninitialized_value((), x.dtype)
  padded = lax.pad(x, fill, [(0, n, 0) for n in sizes])
  return padded, indexing._starts(starts), sizes, squeeze


def _read_window(x, idx):
  """``x[idx]`` as JAX's interpret mode loads it, and (padded x, starts, sizes) when
  ``idx`` is a window (None for array indices)."""
  import pyjax.lax as lax
  if not (indexing.is_window(idx) or all(
      isinstance(i, (slice, int, np.integer)) or i is Ellipsis for i in idx)):
    return x[idx], None
  padded, starts, sizes, squeeze = _padded_window(x, idx)
  out = lax.dynamic_slice(padded, starts, sizes)
  return (lax.squeeze(out, squeeze) if squeeze else out), (padded, starts, sizes)


def load(ref, idx=None, *, mask=None, other=None, cache_modifier=None,
         eviction_policy=None, volatile=False):
  """``ref[idx]`` (``idx=None``: the whole ref); where ``mask`` is False the result is
  ``other`` (when given).  Reads past the end of the ref give uninitialized values (NaN)
  rather than clamped ones, as in JAX's interpret mode.  The cache and eviction hints are
  accepted and ignored."""
  import pyjax.numpy as jnp
  from pyjax._src.pallas import stateful
  if stateful.is_kernel_ref(ref):   # the kernel's stateful trace: a masked_load equation
    return stateful.masked_load(ref, idx, mask, other)
  x = ref[...]
  out, _ = _read_window(x, _full_idx(ref, idx))
  if mask is not None and other is not None:
    out = jnp.where(mask, out, other)
  return out


def swap(ref, idx, val, *, mask=None):
  """Write ``val`` at ``ref[idx]`` where ``mask`` holds (everywhere without a mask) and
  return the previous values (masked-out positions give ``val``, as in JAX)."""
  import pyjax.lax as lax
  import pyjax.numpy as jnp
  from pyjax._src.pallas import stateful
  if stateful.is_kernel_ref(ref):   # the kernel's stateful trace: a masked_swap equation
    return stateful.masked_swap(ref, idx, val, mask)
  x = ref[...]
  idx = _full_idx(ref, idx)
  val = jnp.asarray(val, dtype=x.dtype) if not hasattr(val, "dtype") else val
  out, win = _read_window(x, idx)
  if mask is not None:
    old = out
    out = jnp.where(mask, out, val)
    val = jnp.where(mask, val, old)
  if win is not None:
    padded, starts, sizes = win
    new = lax.dynamic_update_slice(padded, lax.reshape(val, tuple(sizes)), starts)
    new = lax.slice(new, (0,) * x.ndim, x.shape)
  else:
    new = x.at[idx].set(val)
  ref[...] = new
  return out


def store(ref, idx, val, *, mask=None, eviction_policy=None):
  """``ref[idx] = val`` where ``mask`` holds; writes past the end of the ref are
  dropped."""
  swap(ref, idx, val, mask=mask)


class AtomicOpType(enum.Enum):
  XCHG = "xchg"
  ADD = "add"
  MAX = "max"
  MIN = "min"
  AND = "and"
  OR = "or"
  XOR = "xor"


def atomic_rmw(ref, idx, val, *, mask=None, atomic_type):
  """Combine ``val`` into ``ref[idx]`` and return the previous values (a kernel
  invocation runs alone, so this is a read-modify-write)."""
  import pyjax.lax as lax
  import pyjax.numpy as jnp
  if mask is not None:
    raise NotImplementedError("atomic operations with a mask")
  ops = {AtomicOpType.XCHG: lambda old, v: v, AtomicOpType.ADD: lambda old, v: v + old,
         AtomicOpType.MAX: jnp.maximum, AtomicOpType.MIN: jnp.minimum,
         AtomicOpType.AND: lax.bitwise_and, AtomicOpType.OR: lax.bitwise_or,
         AtomicOpType.XOR: lax.bitwise_xor}
  idx = _full_idx(ref, idx)
  old = ref[idx]
  ref[idx] = ops[atomic_type](val, old) if atomic_type is not AtomicOpType.XCHG else val
  return old


def atomic_cas(ref, cmp, val):
  """Where ``ref`` equals ``cmp``, store ``val``; returns the previous value."""
  import pyjax.numpy as jnp
  old = ref[...]
  ref[...] = jnp.where(old == cmp, val, old)
  return old


def dot(a, b, trans_a=False, trans_b=False, allow_tf32=None, precision=None):
  """2-D matrix product (optionally transposing either operand) accumulated in int32,
  float32 or float64 by the operands' promoted dtype, as JAX's Pallas ``dot``."""
  import pyjax.lax as lax
  import pyjax.numpy as jnp
  if a.ndim != 2 or b.ndim != 2:
    raise ValueError("`a` and `b` must be 2D arrays.")
  if allow_tf32 is not None:
    if precision is not None:
      raise ValueError("Only one of allow_tf32 and precision can be specified")
    precision = lax.Precision.HIGH if allow_tf32 else lax.Precision.HIGHEST
  dtype = jnp.promote_types(a.dtype, b.dtype)
  if jnp.issubdtype(dtype, jnp.integer):
    out = jnp.int32
  elif dtype == jnp.float64:
    out = jnp.float64
  else:
    out = jnp.float32
  return lax.dot_general(a, b, (((0 if trans_a else 1,), (1 if trans_b else 0,)), ((), ())),
                         precision=precision, preferred_element_type=out)


def debug_print(fmt, *args):
  """Print ``fmt.format(*args)`` when the kernel runs (``jax.debug.print``)."""
  from pyjax._src import debugging
  debugging.debug_print(fmt, *args)


def reciprocal(x, *, approx=False, full_range=True):
  """``1 / x`` (``approx`` is ignored on CPU: the result is exact)."""
  import pyjax.lax as lax
  return lax.div(lax.full_like(x, 1), x)


def max_contiguous(x, values):
  """A hint for Triton; returns ``x``."""
  return x
