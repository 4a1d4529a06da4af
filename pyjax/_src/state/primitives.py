"""Reading and writing refs: ``get``, ``set``, ``swap``, ``addupdate``, ``new_ref``,
``freeze``, ``empty_ref``, ``free_ref`` (as ``jax.ref``).

Each access is an array operation on the ref's current value (see ``types.py``): a read is
an indexing operation, a write an ``.at[idx].set`` / ``.add`` producing the new value.
Values written must have exactly the indexed shape and the ref's dtype (JAX's ValueError
otherwise; Python scalars are weakly typed ``int32``/``float32`` values, so ``ref[0] = 1``
into a float ref is a dtype error, as in JAX).
"""
from __future__ import annotations

import operator

import numpy as np

from pyjax._src import core
from pyjax._src.state import indexing, types
from pyjax._src.state.types import Ref, slot, check_write


def _norm_idx(idx):
  if idx is None:
    return ()
  if not isinstance(idx, tuple):
    idx = (idx,)
  return idx


def _is_full(idx):
  return idx == () or idx == (Ellipsis,)


def _check_static_bounds(ref, idx):
  dim_iter = iter(ref.shape)
  for i in idx:
    if i is Ellipsis:
      return
    if i is None:
      continue
    d = next(dim_iter, None)
    if d is None:
      return
    if isinstance(i, (int, np.integer)) and not isinstance(i, bool):
      if not -d <= int(i) < d:
        raise ValueError(f"Out of bound indexer: idx={int(i)}, dim={d}.")


def _transforms(ref, idx):
  return "()" if _is_full(idx) else f"({idx!r},)"


def _as_value(x):
  if isinstance(x, core.Tracer) or hasattr(x, "_buf"):
    return x
  from pyjax._src.numpy import array_constructors
  return array_constructors.asarray(x)


def _check_value(op, ref, idx, expected_shape, v):
  a = core.get_aval(v)
  if tuple(a.shape) != tuple(expected_shape):
    raise ValueError(f"Invalid shape for `{op}`. Ref shape: {ref.shape}. Expected shape: "
                     f"{tuple(expected_shape)}. Value shape: {tuple(a.shape)}. Transforms: "
                     f"{_transforms(ref, idx)}. ")
  if a.dtype != ref.dtype:
    raise ValueError(f"Invalid dtype for `{op}`. Ref dtype: {ref.dtype}. Value dtype: "
                     f"{a.dtype}. ")


def _read(value, idx):
  if _is_full(idx):
    return value
  if indexing.is_window(idx):   # pl.ds slices / traced scalar indices: a dynamic_slice
    return indexing.read(value, idx)
  return value[idx]


def _keep_weak(new, old_aval):
  from pyjax._src.lax import elementwise
  if core.get_aval(new).weak_type != old_aval.weak_type:
    return elementwise._convert_element_type(new, old_aval.dtype, weak_type=old_aval.weak_type)
  return new


def _write(s, ref, idx, new):
  check_write(s, new)
  cur = s.value
  if _is_full(idx):
    out = new
  elif indexing.is_window(idx):
    out = indexing.write(cur, idx, new)
  else:
    out = cur.at[idx].set(new)
  s.value = _keep_weak(out, ref.aval.inner_aval)
  s.written = True


def ref_get(ref, idx=()):
  """``ref[idx]``: the indexed part of the ref's current value (an Array)."""
  _check_ref(ref)
  idx = _norm_idx(idx)
  _check_static_bounds(ref, idx)
  return _read(slot(ref).value, idx)


def ref_swap(ref, idx, value):
  """Write ``value`` at ``ref[idx]`` and return what was there."""
  _check_ref(ref)
  idx = _norm_idx(idx)
  _check_static_bounds(ref, idx)
  s = slot(ref)
  old = _read(s.value, idx)
  v = _as_value(value)
  _check_value("swap", ref, idx, core.get_aval(old).shape, v)
  _write(s, ref, idx, v)
  return old


def ref_set(ref, idx, value):
  """``ref[idx] = value``."""
  ref_swap(ref, idx, value)


def ref_addupdate(ref, idx, x):
  """``ref[idx] += x`` (``x`` of exactly the indexed shape and the ref's dtype)."""
  _check_ref(ref)
  idx = _norm_idx(idx)
  _check_static_bounds(ref, idx)
  s = slot(ref)
  cur = s.value
  old = _read(cur, idx)
  v = _as_value(x)
  _check_value("addupdate", ref, idx, core.get_aval(old).shape, v)
  check_write(s, v)
  if _is_full(idx):
    out = cur + v
  elif indexing.is_window(idx):
    out = indexing.write(cur, idx, v, add=True)
  else:
    out = cur.at[idx].add(v)
  s.value = _keep_weak(out, ref.aval.inner_aval)
  s.written = True


def _check_ref(ref):
  if type(ref) is not Ref:
    raise TypeError(f"expected a Ref (from jax.new_ref), got {type(ref)}")


def new_ref(init_val, *, memory_space=None, kind=None):
  """A new mutable reference holding ``init_val`` (converted to an Array; a Python scalar
  gives a weakly typed ref, as in JAX).  ``memory_space`` and ``kind`` are accepted for
  compatibility and must be None (pyjax has one memory space)."""
  if memory_space is not None or kind is not None:
    raise NotImplementedError("pyjax.new_ref: memory_space and kind must be None")
  if type(init_val) is Ref:
    raise TypeError("new_ref: the initial value must be an array, not a Ref")
  v = _as_value(init_val)
  frames = types.current_frames()
  return Ref(v, frames[-1] if frames else None)


def empty_ref(ty, *, memory_space=None, kind=None):
  """A new reference of the type ``ty`` (a ShapeDtypeStruct or aval) holding zeros
  (JAX leaves its contents uninitialized)."""
  from pyjax._src.lax import shapes
  shape = tuple(operator.index(d) for d in ty.shape)
  return new_ref(shapes.full(shape, 0, np.dtype(ty.dtype)), memory_space=memory_space,
                 kind=kind)


def freeze(ref):
  """The ref's current value as an immutable Array (JAX: the ref should not be used after)."""
  _check_ref(ref)
  return slot(ref).value


def free_ref(ref):
  """Release the ref's storage; any later use raises ValueError."""
  _check_ref(ref)
  ref._freed = True
  ref._value = None
