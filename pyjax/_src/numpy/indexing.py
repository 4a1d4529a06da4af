"""NumPy-style indexing of arrays: ``x[idx]``, ``x.at[idx].get/set/add/...``, and the jnp
functions built on gathers and scatters (``take``, ``take_along_axis``, ``put_along_axis``,
``place``, ``put``).

Like JAX, ``x[idx]`` is computed, in order of preference, as a static slice (``slice``,
``rev``, ``squeeze``, ``expand_dims``) when every index is a static int, slice, ``None`` or
``...``; as a ``dynamic_slice`` when the ints are traced scalars; and otherwise as a
``gather``.  Updates through ``.at`` are always scatters.  Out-of-bounds semantics follow
JAX: gets clamp by default (``mode='fill'`` returns ``fill_value``), updates drop
out-of-bounds windows by default (``mode='clip'`` clamps them).  Boolean masks need
concrete values (``NonConcreteBooleanIndexError`` under tracing).
"""
from __future__ import annotations

import operator
import warnings
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from pyjax._src import core, dtypes, errors
from pyjax._src.config import config
from pyjax._src.lax import elementwise as lax_e
from pyjax._src.lax import shapes as lax_s
from pyjax._src.lax import gather_scatter
from pyjax._src.numpy import array_constructors as _ac
from pyjax._src.numpy import ufuncs
from pyjax._src.numpy.util import check_arraylike, promote_dtypes, canonicalize_axis
from pyjax._src.runtime.array import Array, ArrayImpl

__all__ = ["take", "take_along_axis", "put_along_axis", "place", "put", "nonzero",
           "flatnonzero", "argwhere"]

_NONE, _SLICE, _ELLIPSIS, _INTEGER, _BOOLEAN, _ARRAY = (
    "none", "slice", "ellipsis", "integer", "boolean", "array")
_Mode = gather_scatter.GatherScatterMode


class _NotApplicable(Exception):
  """This indexing strategy does not apply; try the next one."""


class _Idx(NamedTuple):
  index: object
  typ: str
  axes: tuple


# --- small helpers ----------------------------------------------------------------------
def _is_tracer(x):
  return isinstance(x, core.Tracer)


def _concrete(fn, *args, **kw):
  """Evaluate ``fn`` now on concrete values (JAX constant-folds these)."""
  from pyjax._src.transfer_guard import constant_folding
  with constant_folding():
    out = fn(*args, **kw)
  return core.folded_host_constant(out, args)


def _ndim(x):
  if isinstance(x, (Array, np.ndarray, np.generic)):
    return len(x.shape)
  return np.ndim(x)


def _shape(x):
  if isinstance(x, (Array, np.ndarray, np.generic)):
    return tuple(x.shape)
  return np.shape(x)


def _dtype_of(x):
  if isinstance(x, (Array, np.ndarray, np.generic)):
    return x.dtype
  return core.get_aval(x).dtype


def _index_dtype(shape):
  """int32, or int64 (with x64) when an axis is too large for int32 (JAX's rule)."""
  if config.jax_enable_x64:
    if any(d >= np.iinfo(np.int32).max for d in shape):
      return dtypes.canonicalize_dtype(np.int64)
  return dtypes.canonicalize_dtype(np.int32)


def _convert(x, dtype):
  """lax.convert_element_type to a strong ``dtype``, folded for Python/NumPy scalars."""
  if type(x) in dtypes.python_scalar_types or isinstance(x, (np.generic, np.ndarray)):
    return np.asarray(x).astype(dtype)
  return lax_e.convert_element_type(x, dtype)


def _asarray(x):
  if type(x) is ArrayImpl or _is_tracer(x):
    return x
  return _ac.asarray(x)


def _broadcast_to(x, shape):
  """lax.broadcast_to with JAX's messages (the weak type is kept)."""
  x = _asarray(x)
  aval = core.get_aval(x)
  xs = aval.shape
  shape = tuple(shape)
  if xs == shape:
    return x
  if len(shape) < len(xs):
    raise ValueError(f"Cannot broadcast to shape with fewer dimensions: arr_shape={xs} "
                     f"shape={shape}")
  nlead = len(shape) - len(xs)
  if not all(a in (1, b) for a, b in zip(xs, shape[nlead:])):
    fmt = lambda s, weak: f"{'~' if weak else ''}{aval.dtype.name}[{','.join(map(str, s))}]"
    raise ValueError(f"Incompatible types for broadcasting: input type={fmt(xs, aval.weak_type)}"
                     f" and requested type={fmt(shape, False)}")
  return lax_s.broadcast_in_dim(x, shape, tuple(range(nlead, len(shape))))


def _broadcast_arrays(*args):
  shapes = [_shape(a) for a in args]
  if all(s == shapes[0] for s in shapes):
    return [_asarray(a) for a in args]
  try:
    out = np.broadcast_shapes(*shapes)
  except ValueError:
    raise ValueError("Incompatible shapes for broadcasting: shapes="
                     f"{[tuple(s) for s in shapes]}") from None
  return [_broadcast_to(a, out) for a in args]


def _full(shape, value, dtype, weak=False):
  v = np.array(value, dtype)
  if weak:
    v = _concrete(lax_e._convert_element_type, v, dtype, True)
  return lax_s.broadcast_in_dim(v, tuple(shape), ())


def _static_int(v):
  """A slice component as a Python int (None stays None)."""
  if v is None:
    return None
  return operator.index(v)


def _slice_indices(s, size):
  start, stop, step = (_static_int(s.start), _static_int(s.stop), _static_int(s.step))
  return slice(start, stop, step).indices(size)


# --- parsing ----------------------------------------------------------------------------
def _is_integer_index(idx):
  return isinstance(idx, (int, np.integer)) and not isinstance(idx, (bool, np.bool_))


def _is_scalar(x):
  return np.isscalar(x) or (isinstance(x, (np.ndarray, Array)) and _ndim(x) == 0)


def _is_boolean_index(i):
  if isinstance(i, list):
    return bool(i) and all(_is_scalar(e) and np.dtype(_dtype_of(e)) == np.bool_ for e in i)
  try:
    aval = core.get_aval(i)
  except TypeError:
    return False
  return aval.dtype == dtypes.bool_


def _index_type(idx):
  if idx is None:
    return _NONE
  if idx is Ellipsis:
    return _ELLIPSIS
  if isinstance(idx, slice):
    return _SLICE
  if _is_integer_index(idx):
    return _INTEGER
  if _is_boolean_index(idx):
    return _BOOLEAN
  if isinstance(idx, (Array, np.ndarray)):
    if dtypes.is_int(idx.dtype):
      return _ARRAY
    raise TypeError(f"Indexer must have integer or boolean type, got indexer with type "
                    f"{idx.dtype}")
  if isinstance(idx, str):
    raise TypeError(f"JAX does not support string indexing; got idx={idx!r}")
  if isinstance(idx, Sequence):
    if not idx:
      return _ARRAY
    d = core.get_aval(_ac.asarray(idx)).dtype
    if d == dtypes.bool_:
      return _BOOLEAN
    if dtypes.is_int(d):
      return _ARRAY
    raise TypeError(f"Indexer must have integer or boolean type, got indexer with type {d}")
  if isinstance(idx, (float, complex, np.generic)):
    raise TypeError(f"Indexer must have integer or boolean type, got indexer with type "
                    f"{np.dtype(type(idx))}")
  raise IndexError("only integers, slices (`:`), ellipsis (`...`), newaxis (`None`)"
                   f" and integer or boolean arrays are valid indices. Got {idx}")


def _should_unpack_list_index(x):
  return ((isinstance(x, (np.ndarray, Array)) and _ndim(x) != 0)
          or isinstance(x, (Sequence, slice)) or x is Ellipsis or x is None)


def _eliminate_list_indexing(idx):
  if not isinstance(idx, tuple):
    if isinstance(idx, Sequence) and not isinstance(idx, (Array, np.ndarray, str)):
      if any(_should_unpack_list_index(i) for i in idx):
        hint = "tuple"
      else:
        hint = "array"
      raise TypeError("Using a non-tuple sequence for multidimensional indexing is not "
                      f"allowed; use `arr[{hint}(seq)]` instead of `arr[seq]`. "
                      "See https://github.com/jax-ml/jax/issues/4564 for more information.")
    idx = (idx,)
  return idx


def _parse(idx, shape):
  idx = _eliminate_list_indexing(idx)
  types, consumed, ellipses = [], [], []
  for i, e in enumerate(idx):
    t = _index_type(e)
    types.append(t)
    if t in (_NONE, _ELLIPSIS):
      consumed.append(0)
      if t == _ELLIPSIS:
        ellipses.append(i)
    elif t == _BOOLEAN:
      consumed.append(_ndim(e))
    else:
      consumed.append(1)
  if len(ellipses) > 1:
    raise IndexError("an index can only have a single ellipsis ('...')")
  total = sum(consumed)
  if total > len(shape):
    raise IndexError(f"Too many indices: array is {len(shape)}-dimensional,"
                     f" but {total} were indexed")
  if ellipses:
    consumed[ellipses[0]] = len(shape) - total
  out, cur = [], 0
  for e, t, n in zip(idx, types, consumed):
    out.append(_Idx(e, t, tuple(range(cur, cur + n))))
    cur += n
  return out


def _expand_ellipses(parsed, shape):
  out, consumed = [], 0
  for p in parsed:
    consumed += len(p.axes)
    if p.typ == _ELLIPSIS:
      out.extend(_Idx(slice(None), _SLICE, (a,)) for a in p.axes)
    else:
      out.append(p)
  out.extend(_Idx(slice(None), _SLICE, (a,)) for a in range(consumed, len(shape)))
  return out


def _validate_static_indices(parsed, shape, normalize):
  for p in parsed:
    if p.typ == _INTEGER:
      i = operator.index(p.index)
      axis, = p.axes
      size = shape[axis]
      n = i + size if normalize and i < 0 else i
      if not 0 <= n < size:
        raise IndexError(f"index {i} out of bounds for axis {axis} with size {size}"
                         f" (normalize_indices={normalize})")


def _validate_slices(parsed):
  for pos, p in enumerate(parsed):
    if p.typ == _SLICE:
      s = p.index
      if any(_is_tracer(v) for v in (s.start, s.stop, s.step)):
        raise IndexError(f"Slice entries must be static integers. Got {s} at position {pos}")


# --- strategy 1: static slice -----------------------------------------------------------
def _static_slice(arr, parsed, shape, mode, normalize):
  m = _Mode.PROMISE_IN_BOUNDS if mode is None else _Mode.from_any(mode)
  if m not in (_Mode.PROMISE_IN_BOUNDS, _Mode.CLIP):
    raise _NotApplicable
  for p in parsed:
    if p.typ not in (_INTEGER, _ELLIPSIS, _SLICE, _NONE):
      raise _NotApplicable
  if m == _Mode.PROMISE_IN_BOUNDS:
    try:
      _validate_static_indices(parsed, shape, normalize)
    except IndexError:
      raise _NotApplicable from None
  try:
    _validate_slices(parsed)
  except IndexError:
    raise _NotApplicable from None
  starts, limits, strides, rev_axes, squeeze_axes, newaxis = [], [], [], [], [], []
  for p in _expand_ellipses(parsed, shape):
    if p.typ == _NONE:
      newaxis.append(len(starts) - len(squeeze_axes) + len(newaxis))
    elif p.typ == _INTEGER:
      axis, = p.axes
      if shape[axis] == 0:
        raise _NotApplicable
      s = int(p.index)
      if normalize and s < 0:
        s += shape[axis]
      s = min(max(s, 0), shape[axis] - 1)
      starts.append(s)
      limits.append(s + 1)
      strides.append(1)
      squeeze_axes.append(axis)
    else:
      axis, = p.axes
      size = shape[axis]
      try:
        start, stop, step = _slice_indices(p.index, size)
      except (TypeError, ValueError):
        raise _NotApplicable from None
      if step < 0:
        new_start = min(size, stop + 1 + abs(start - stop - 1) % abs(step))
        starts.append(new_start)
        limits.append(max(new_start, start + 1))
        strides.append(abs(step))
        rev_axes.append(axis)
      else:
        starts.append(start)
        limits.append(max(start, stop))
        strides.append(step)
  strides = None if all(s == 1 for s in strides) else strides
  result = arr
  trivial = strides is None and len(starts) == len(shape) and all(
      (s, l) == (0, d) for s, l, d in zip(starts, limits, shape))
  if not trivial:
    result = lax_s.slice(arr, starts, limits, strides)
  if rev_axes:
    result = lax_s.rev(result, rev_axes)
  if squeeze_axes:
    result = lax_s.squeeze(result, squeeze_axes)
  if newaxis:
    result = lax_s.expand_dims(result, newaxis)
  return _asarray(result)


# --- strategy 2: dynamic slice ----------------------------------------------------------
def _dynamic_slice(arr, parsed, shape, mode, normalize):
  if mode is not None and _Mode.from_any(mode) not in (_Mode.PROMISE_IN_BOUNDS, _Mode.CLIP):
    raise _NotApplicable
  for p in parsed:
    if p.typ in (_INTEGER, _ELLIPSIS, _NONE):
      continue
    if p.typ == _SLICE:
      step = p.index.step
      if step is not None and not _is_tracer(step) and step in (-1, 1):
        continue
      if step is None:
        continue
      raise _NotApplicable
    if p.typ == _ARRAY and not isinstance(p.index, Sequence) and _shape(p.index) == ():
      continue
    raise _NotApplicable
  starts, sizes, rev_axes, squeeze_axes, newaxis = [], [], [], [], []
  trivial = True
  for p in _expand_ellipses(parsed, shape):
    if p.typ == _NONE:
      newaxis.append(len(starts) - len(squeeze_axes) + len(newaxis))
    elif p.typ in (_INTEGER, _ARRAY):
      trivial = False
      axis, = p.axes
      if shape[axis] == 0:
        raise _NotApplicable
      starts.append(_ac.asarray(p.index) if not _is_tracer(p.index) else p.index)
      sizes.append(1)
      squeeze_axes.append(axis)
    else:
      if p.index != slice(None):
        trivial = False
      axis, = p.axes
      size = shape[axis]
      try:
        start, stop, step = _slice_indices(p.index, size)
      except (TypeError, ValueError):
        raise _NotApplicable from None
      if step < 0:
        new_start = stop + 1
        starts.append(new_start)
        sizes.append(max(0, start + 1 - new_start))
        rev_axes.append(axis)
      else:
        starts.append(start)
        sizes.append(max(0, stop - start))
  if len(starts) > 1:
    dt = _index_dtype(shape)
    starts = [_concrete(_ac.asarray, np.asarray(s, dt)) if type(s) is int else
              (_concrete(lax_e.convert_element_type, s, dt) if type(s) is ArrayImpl else
               lax_e.convert_element_type(s, dt)) for s in starts]
  result = arr
  if not trivial:
    result = lax_s.dynamic_slice(arr, starts, sizes, allow_negative_indices=normalize)
  if rev_axes:
    result = lax_s.rev(result, rev_axes)
  if squeeze_axes:
    result = lax_s.squeeze(result, squeeze_axes)
  if newaxis:
    result = lax_s.expand_dims(result, newaxis)
  return _asarray(result)


# --- strategy 3: gather -----------------------------------------------------------------
def _expand_bool_indices(parsed, shape):
  out = []
  for pos, p in enumerate(parsed):
    if p.typ != _BOOLEAN:
      out.append(p)
      continue
    if _is_tracer(p.index):
      raise errors.NonConcreteBooleanIndexError(p.index.aval.str_short(short_dtypes=True))
    if _ndim(p.index) == 0:
      out.append(_Idx(bool(p.index), _BOOLEAN, ()))
      continue
    mask = np.asarray(p.index)
    expected = [shape[i] for i in p.axes]
    if not all(s1 in (0, s2) for s1, s2 in zip(mask.shape, expected)):
      raise IndexError("boolean index did not match shape of indexed array in index"
                       f" {pos}: got {mask.shape}, expected {expected}")
    for i, axis in zip(np.where(mask), p.axes):
      out.append(_Idx(i, _ARRAY, (axis,)))
  return out


class _GatherIndexer(NamedTuple):
  slice_shape: tuple
  gather_slice_shape: tuple
  gather_indices: object
  dnums: gather_scatter.GatherDimensionNumbers
  unique_indices: bool
  indices_are_sorted: bool
  reversed_y_dims: tuple
  newaxis_dims: tuple
  scalar_bool_dims: tuple


def _normalize_indices(parsed, shape):
  out = []
  for p in parsed:
    if p.typ == _INTEGER:
      axis, = p.axes
      if isinstance(p.index, np.unsignedinteger):
        out.append(p)
      else:
        out.append(p._replace(index=p.index + shape[axis] if p.index < 0 else p.index))
    elif p.typ == _ARRAY:
      i = p.index
      axis, = p.axes
      d = _dtype_of(i)
      if dtypes.is_unsigned(d):
        out.append(p)
      else:
        size = np.array(shape[axis], d)
        out.append(p._replace(index=lax_e.select(i < 0, lax_e.add(i, size), i)))
    else:
      out.append(p)
  return out


def _to_gather(parsed, shape, normalize=True):
  _validate_slices(parsed)
  parsed = [p._replace(index=_ac.asarray(p.index)) if isinstance(p.index, Sequence)
            and not isinstance(p.index, str) else p for p in parsed]
  adv = [i for i, p in enumerate(parsed) if p.typ in (_ARRAY, _INTEGER)]
  contiguous = bool(np.all(np.diff(adv) == 1))
  parsed = _expand_ellipses(parsed, shape)
  scalar_bool_dims = tuple(n for n, p in enumerate(parsed) if p.typ == _BOOLEAN)
  # scalar booleans become a new axis of size 1 (True) or 0 (False), indexed by arange
  if scalar_bool_dims:
    new_shape = list(shape)
    new_parsed, cur = [], 0
    for i, p in enumerate(parsed):
      if p.typ == _BOOLEAN:
        new_shape.insert(i, 1)
        new_parsed.append(_Idx(np.arange(int(p.index)), _ARRAY, (cur,)))
        cur += 1
      else:
        n = len(p.axes)
        new_parsed.append(p._replace(axes=tuple(range(cur, cur + n))))
        cur += n
    parsed, shape = new_parsed, tuple(new_shape)
  if normalize:
    parsed = _normalize_indices(parsed, shape)

  advanced, idx_adv_axes, x_adv_axes = [], [], []
  if any(p.typ in (_ARRAY, _BOOLEAN) and _ndim(p.index) > 0 for p in parsed):
    j = 0
    for i, p in enumerate(parsed):
      if p.typ == _NONE:
        continue
      if p.typ in (_ARRAY, _INTEGER):
        advanced.append(_asarray(p.index))
        idx_adv_axes.append(i)
        x_adv_axes.append(j)
      j += 1

  x_axis = y_axis = collapsed_y_axis = 0
  offset_dims, collapsed, start_index_map = [], [], []
  index_dtype = _index_dtype(shape)
  gather_indices, gather_indices_shape = [], []
  slice_shape, newaxis_dims, reversed_y_dims, gather_slice_shape = [], [], [], []

  for idx_pos, p in enumerate(parsed):
    if advanced and ((contiguous and idx_pos == idx_adv_axes[0]) or
                     (not contiguous and idx_pos == 0)):
      arrs = _broadcast_arrays(*advanced)
      ashape = _shape(arrs[0])
      start_dim = len(gather_indices_shape)
      gather_indices.extend((lax_e.convert_element_type(a, index_dtype), start_dim) for a in arrs)
      gather_indices_shape += list(ashape)
      start_index_map.extend(x_adv_axes)
      collapsed.extend(x_adv_axes)
      slice_shape.extend(ashape)
      y_axis += len(ashape)
      collapsed_y_axis += len(ashape)
    if idx_pos in idx_adv_axes:
      x_axis += 1
      gather_slice_shape.append(1)
      continue
    if p.typ in (_INTEGER, _ARRAY) and _ndim(p.index) == 0:
      if shape[x_axis] == 0:
        raise IndexError(f"index is out of bounds for axis {x_axis} with size 0")
      gather_indices.append((_convert(p.index, index_dtype), len(gather_indices_shape)))
      collapsed.append(x_axis)
      gather_slice_shape.append(1)
      start_index_map.append(x_axis)
      x_axis += 1
    elif p.typ == _NONE:
      slice_shape.append(1)
      newaxis_dims.append(y_axis)
      y_axis += 1
    elif p.typ == _SLICE:
      start, stop, step = _slice_indices(p.index, shape[x_axis])
      size = len(range(start, stop, step))
      slice_shape.append(size)
      if step == 1:
        if size != shape[x_axis]:
          gather_indices.append((np.array(start, index_dtype), len(gather_indices_shape)))
          start_index_map.append(x_axis)
        gather_slice_shape.append(size)
        offset_dims.append(collapsed_y_axis)
      else:
        ind = ufuncs.add(_ac.array(start, dtype=index_dtype),
                         ufuncs.multiply(_ac.array(step, dtype=index_dtype),
                                         lax_s.iota(index_dtype, size)))
        if step < 0:
          reversed_y_dims.append(collapsed_y_axis)
          ind = lax_s.rev(ind, (0,))
        gather_slice_shape.append(1)
        gather_indices.append((ind, len(gather_indices_shape)))
        start_index_map.append(x_axis)
        gather_indices_shape.append(size)
        collapsed.append(x_axis)
      collapsed_y_axis += 1
      y_axis += 1
      x_axis += 1
    else:
      raise IndexError(f"Got unsupported indexer at position {idx_pos}: {p!r}")

  if not gather_indices:
    gather_indices_array = np.zeros((0,), index_dtype)
  elif len(gather_indices) == 1:
    g, _ = gather_indices[0]
    gather_indices_array = lax_s.expand_dims(g, (_ndim(g),))
  else:
    last = len(gather_indices_shape)
    gather_indices_shape.append(1)
    gather_indices_array = lax_s.concatenate(
        [lax_s.broadcast_in_dim(g, gather_indices_shape, tuple(range(i, i + _ndim(g))))
         for g, i in gather_indices], last)
  dnums = gather_scatter.GatherDimensionNumbers(offset_dims=tuple(offset_dims),
                                         collapsed_slice_dims=tuple(sorted(collapsed)),
                                         start_index_map=tuple(start_index_map))
  return _GatherIndexer(tuple(slice_shape), tuple(gather_slice_shape), gather_indices_array,
                        dnums, not advanced, not advanced, tuple(reversed_y_dims),
                        tuple(newaxis_dims), scalar_bool_dims)


def _gather(arr, parsed, shape, indices_are_sorted, unique_indices, mode, fill_value,
            normalize):
  indexer = _to_gather(parsed, shape, normalize)
  y = arr
  if fill_value is not None:
    core.concrete_or_error(None, fill_value, "fill_value argument to indexed get()")
    if np.ndim(fill_value) != 0:
      raise ValueError("fill_value argument to indexed get() must be a scalar")
    if isinstance(fill_value, (np.ndarray, ArrayImpl)):
      fill_value = fill_value.item()
  if indexer.scalar_bool_dims:
    y = lax_s.expand_dims(y, indexer.scalar_bool_dims)
  if 0 in indexer.slice_shape:
    aval = core.get_aval(y)
    return _full(indexer.slice_shape, 0, aval.dtype, aval.weak_type)
  if 0 not in _shape(indexer.gather_indices):
    y = gather_scatter.gather(y, indexer.gather_indices, indexer.dnums, indexer.gather_slice_shape,
                       unique_indices=unique_indices or indexer.unique_indices,
                       indices_are_sorted=indices_are_sorted or indexer.indices_are_sorted,
                       mode=mode, fill_value=fill_value)
  if indexer.reversed_y_dims:
    y = lax_s.rev(y, indexer.reversed_y_dims)
  if indexer.newaxis_dims:
    y = lax_s.expand_dims(y, indexer.newaxis_dims)
  return y


def _rewriting_take(arr, idx, indices_are_sorted=False, unique_indices=False, mode=None,
                    fill_value=None, normalize_indices=True):
  arr = _asarray(arr)
  shape = tuple(core.get_aval(arr).shape)
  parsed = _parse(idx, shape)
  try:
    return _static_slice(arr, parsed, shape, mode, normalize_indices)
  except _NotApplicable:
    pass
  try:
    return _dynamic_slice(arr, parsed, shape, mode, normalize_indices)
  except _NotApplicable:
    pass
  parsed = _expand_bool_indices(parsed, shape)
  return _gather(arr, parsed, shape, indices_are_sorted, unique_indices, mode, fill_value,
                 normalize_indices)


def getitem(x, idx):
  """``x[idx]`` with NumPy's indexing rules and JAX's out-of-bounds behaviour (clamping)."""
  return _rewriting_take(x, idx)


# --- scatter ----------------------------------------------------------------------------
def _safe_to_cast(y, x_dtype):
  d = _dtype_of(y)
  if d == x_dtype:
    return True
  return dtypes.result_type(y, x_dtype) == x_dtype


def _promote_folded(*args):
  """promote_dtypes, evaluating the casts of concrete scalars now (JAX folds those)."""
  avals = [core.get_aval(a) for a in args]
  to, weak = dtypes.lattice_result_type(*[(a.dtype, a.weak_type) for a in avals])
  out = []
  for a, av in zip(args, avals):
    if av.dtype == to and av.weak_type == weak:
      out.append(a)
    elif not _is_tracer(a) and not av.shape:
      out.append(_concrete(lax_e._convert_element_type, a, to, weak))
    else:
      out.append(lax_e._convert_element_type(a, to, weak))
  return out


def _scatter_update(x, idx, y, scatter_op, indices_are_sorted, unique_indices, mode=None,
                    normalize_indices=True):
  x = _asarray(x)
  x_aval = core.get_aval(x)
  if (type(y) is int and dtypes.is_int(x_aval.dtype)
      and np.iinfo(x_aval.dtype).min <= y <= np.iinfo(x_aval.dtype).max):
    y = _ac.asarray(y, dtype=x_aval.dtype)
  else:
    y = _ac.asarray(y)
  shape = tuple(x_aval.shape)
  parsed = _expand_bool_indices(_parse(idx, shape), shape)
  dtype, weak_type = x_aval.dtype, x_aval.weak_type
  if not _safe_to_cast(y, dtype):
    warnings.warn(
        "scatter inputs have incompatible types: cannot safely cast value "
        f"from dtype={_dtype_of(y)} to dtype={dtype} with "
        f"jax_numpy_dtype_promotion={config.jax_numpy_dtype_promotion}. "
        "In future JAX releases this will result in an error.", FutureWarning, stacklevel=4)
  indexer = _to_gather(parsed, shape, normalize_indices)
  if 0 in indexer.slice_shape:
    return x
  x, y = _promote_folded(x, y)
  y = _broadcast_to(y, indexer.slice_shape)
  if indexer.newaxis_dims:
    y = lax_s.squeeze(y, indexer.newaxis_dims)
  if indexer.reversed_y_dims:
    y = lax_s.rev(y, indexer.reversed_y_dims)
  if indexer.scalar_bool_dims:
    x = lax_s.expand_dims(x, indexer.scalar_bool_dims)
  dn = indexer.dnums
  dnums = gather_scatter.ScatterDimensionNumbers(
      update_window_dims=dn.offset_dims, inserted_window_dims=dn.collapsed_slice_dims,
      scatter_dims_to_operand_dims=dn.start_index_map,
      operand_batching_dims=dn.operand_batching_dims,
      scatter_indices_batching_dims=dn.start_indices_batching_dims)
  out = scatter_op(x, indexer.gather_indices, y, dnums,
                   indices_are_sorted=indexer.indices_are_sorted or indices_are_sorted,
                   unique_indices=indexer.unique_indices or unique_indices, mode=mode)
  if indexer.scalar_bool_dims:
    out = lax_s.squeeze(out, indexer.scalar_bool_dims)
  return lax_e._convert_element_type(out, dtype, weak_type)


class _IndexUpdateHelper:
  """The ``x.at`` property: ``x.at[idx].set(y)`` is the pure form of ``x[idx] = y``.

  Methods of ``x.at[idx]``: ``get``, ``set``, ``add``, ``subtract``, ``multiply`` (``mul``),
  ``divide``, ``power``, ``min``, ``max``, ``apply``; each takes ``indices_are_sorted``,
  ``unique_indices``, ``mode`` and ``wrap_negative_indices`` (``get`` also
  ``fill_value``).  Repeated indices all apply.  By default out-of-bound indices are
  clamped by ``get`` and dropped by updates.  ``out_sharding`` is accepted and ignored
  (a single device)."""
  __slots__ = ("array",)

  def __init__(self, array):
    self.array = array

  def __getitem__(self, index):
    return _IndexUpdateRef(self.array, index)

  def __repr__(self):
    return f"_IndexUpdateHelper({self.array!r})"


class _IndexUpdateRef:
  """``x.at[idx]``: methods return updated copies of ``x``."""
  __slots__ = ("array", "index")

  def __init__(self, array, index):
    self.array = array
    self.index = index

  def __repr__(self):
    return f"_IndexUpdateRef({self.array!r}, {self.index!r})"

  def get(self, *, indices_are_sorted=False, unique_indices=False, mode=None,
          fill_value=None, out_sharding=None, wrap_negative_indices=True):
    """``x[idx]``; ``mode='fill'`` returns ``fill_value`` for out-of-bounds indices."""
    return _rewriting_take(self.array, self.index, indices_are_sorted=indices_are_sorted,
                           unique_indices=unique_indices, mode=mode, fill_value=fill_value,
                           normalize_indices=wrap_negative_indices)

  def _update(self, values, op, indices_are_sorted, unique_indices, mode,
              wrap_negative_indices):
    return _scatter_update(self.array, self.index, values, op, indices_are_sorted,
                           unique_indices, mode=mode, normalize_indices=wrap_negative_indices)

  def set(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
          out_sharding=None, wrap_negative_indices=True):
    """Pure ``x[idx] = values``."""
    return self._update(values, gather_scatter.scatter, indices_are_sorted, unique_indices, mode,
                        wrap_negative_indices)

  def apply(self, func, *, indices_are_sorted=False, unique_indices=False, mode=None,
            wrap_negative_indices=True):
    """Pure ``func.at(x, idx)``: ``func`` is applied once per (repeated) index."""
    def _scatter_apply(x, indices, y, dims, **kw):
      return gather_scatter.scatter_apply(x, indices, func, dims, update_shape=_shape(y), **kw)
    zero = np.zeros((), _dtype_of(self.array))
    return self._update(zero, _scatter_apply, indices_are_sorted, unique_indices, mode,
                        wrap_negative_indices)

  def add(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
          out_sharding=None, wrap_negative_indices=True):
    """Pure ``x[idx] += values`` (repeated indices accumulate)."""
    return self._update(values, gather_scatter.scatter_add, indices_are_sorted, unique_indices,
                        mode, wrap_negative_indices)

  def subtract(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
               out_sharding=None, wrap_negative_indices=True):
    """Pure ``x[idx] -= values``."""
    return self._update(values, gather_scatter.scatter_sub, indices_are_sorted, unique_indices,
                        mode, wrap_negative_indices)

  def multiply(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
               out_sharding=None, wrap_negative_indices=True):
    """Pure ``x[idx] *= values``."""
    return self._update(values, gather_scatter.scatter_mul, indices_are_sorted, unique_indices,
                        mode, wrap_negative_indices)

  mul = multiply

  def _scattered_factors(self, values, indices_are_sorted, unique_indices, mode,
                         wrap_negative_indices):
    """Ones like the array with ``values`` multiplied in at the index (repeats multiply)."""
    aval = core.get_aval(self.array)
    ones = _full(aval.shape, 1, aval.dtype, aval.weak_type)
    return _scatter_update(ones, self.index, values, gather_scatter.scatter_mul, indices_are_sorted,
                           unique_indices, mode=mode, normalize_indices=wrap_negative_indices)

  def divide(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
             out_sharding=None, wrap_negative_indices=True):
    """Pure ``x[idx] /= values`` (as x / scatter_mul(ones, values), like JAX)."""
    return ufuncs.divide(self.array, self._scattered_factors(
        values, indices_are_sorted, unique_indices, mode, wrap_negative_indices))

  def power(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
            out_sharding=None, wrap_negative_indices=True):
    """Pure ``x[idx] **= values`` (as x ** scatter_mul(ones, values), like JAX)."""
    return ufuncs.power(self.array, self._scattered_factors(
        values, indices_are_sorted, unique_indices, mode, wrap_negative_indices))

  def min(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
          out_sharding=None, wrap_negative_indices=True):
    """Pure ``x[idx] = minimum(x[idx], values)``."""
    return self._update(values, gather_scatter.scatter_min, indices_are_sorted, unique_indices,
                        mode, wrap_negative_indices)

  def max(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
          out_sharding=None, wrap_negative_indices=True):
    """Pure ``x[idx] = maximum(x[idx], values)``."""
    return self._update(values, gather_scatter.scatter_max, indices_are_sorted, unique_indices,
                        mode, wrap_negative_indices)


# --- jnp functions ----------------------------------------------------------------------
def _ensure_arraylike(name, *args):
  check_arraylike(name, *args)
  return [_asarray(a) for a in args]


def _ravel(a):
  shape = _shape(a)
  if len(shape) == 1:
    return a
  return lax_s.reshape(a, (int(np.prod(shape, dtype=np.int64)),))


def take(a, indices, axis=None, out=None, mode=None, unique_indices=False,
         indices_are_sorted=False, fill_value=None):
  """jnp.take.  Out-of-bounds indices: ``mode=None``/``'fill'`` returns ``fill_value``
  (NaN, INT_MIN, UINT_MAX or True by default), ``'clip'`` clamps, ``'wrap'`` wraps."""
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.take is not supported.")
  a, indices = _ensure_arraylike("take", a, indices)
  if axis is None:
    a = _ravel(a)
    axis_idx = 0
  else:
    axis_idx = canonicalize_axis(operator.index(axis), _ndim(a))
  a_shape = _shape(a)
  if mode is None or mode == "fill":
    gather_mode = _Mode.FILL_OR_DROP
    size = np.array(a_shape[axis_idx], _dtype_of(indices))
    indices = _where(indices < 0, ufuncs.add(indices, size), indices)
  elif mode == "raise":
    raise NotImplementedError("The 'raise' mode to jnp.take is not supported.")
  elif mode == "wrap":
    indices = ufuncs.remainder(indices, np.array(a_shape[axis_idx], _dtype_of(indices)))
    gather_mode = _Mode.PROMISE_IN_BOUNDS
  elif mode == "clip":
    gather_mode = _Mode.CLIP
  else:
    raise ValueError(f"Invalid mode '{mode}' for np.take")
  index_dims = _ndim(indices)
  slice_sizes = list(a_shape)
  if slice_sizes[axis_idx] == 0:
    if int(np.prod(_shape(indices))) != 0:
      raise IndexError("Cannot do a non-empty jnp.take() from an empty axis.")
    return a
  if int(np.prod(_shape(indices))) == 0:
    out_shape = slice_sizes[:axis_idx] + list(_shape(indices)) + slice_sizes[axis_idx + 1:]
    aval = core.get_aval(a)
    return _full(out_shape, 0, aval.dtype, aval.weak_type)
  slice_sizes[axis_idx] = 1
  dnums = gather_scatter.GatherDimensionNumbers(
      offset_dims=tuple(list(range(axis_idx)) +
                        list(range(axis_idx + index_dims, len(a_shape) + index_dims - 1))),
      collapsed_slice_dims=(axis_idx,), start_index_map=(axis_idx,))
  return gather_scatter.gather(a, lax_s.expand_dims(indices, (index_dims,)), dimension_numbers=dnums,
                        slice_sizes=tuple(slice_sizes), mode=gather_mode,
                        unique_indices=unique_indices, indices_are_sorted=indices_are_sorted,
                        fill_value=fill_value)


def _where(c, x, y):
  x, y = promote_dtypes(x, y)
  c, x, y = _broadcast_arrays(c, x, y)
  return lax_e.select(c, x, y)


def _normalize_index(index, axis_size):
  d = _dtype_of(index)
  if dtypes.is_unsigned(d):
    return index
  size = np.array(axis_size, d)
  return lax_e.select(index < 0, lax_e.add(index, size), index)


def take_along_axis(arr, indices, axis=-1, mode=None, fill_value=None, *,
                    wrap_negative_indices=None):
  """jnp.take_along_axis.  Out-of-bounds indices return ``fill_value`` by default
  (``mode='fill'``); ``'clip'`` clamps.  ``mode='one_hot'`` is computed as a gather."""
  a, indices = _ensure_arraylike("take_along_axis", arr, indices)
  index_dtype = _dtype_of(indices)
  idx_shape = _shape(indices)
  if not dtypes.is_int(index_dtype):
    raise TypeError("take_along_axis indices must be of integer type, got "
                    f"{index_dtype}")
  if axis is None:
    if len(idx_shape) != 1:
      raise ValueError(f"take_along_axis indices must be 1D if axis=None, got shape {idx_shape}")
    a = _ravel(a)
    axis = 0
  rank = _ndim(a)
  if rank != len(idx_shape):
    raise ValueError("indices and arr must have the same number of dimensions; "
                     f"{len(idx_shape)} vs. {rank}")
  axis_int = canonicalize_axis(axis, rank)
  a_shape = _shape(a)

  def replace(tup, val):
    lst = list(tup)
    lst[axis_int] = val
    return tuple(lst)

  axis_size = a_shape[axis_int]
  arr_shape = replace(a_shape, 1)
  try:
    out_shape = tuple(np.broadcast_shapes(idx_shape, arr_shape))
  except ValueError:
    raise ValueError("Incompatible shapes for broadcasting: shapes="
                     f"{[tuple(idx_shape), tuple(arr_shape)]}") from None
  if axis_size == 0:
    return _full(out_shape, 0, _dtype_of(a))
  if wrap_negative_indices is None:
    wrap_negative_indices = mode != "promise_in_bounds"
  if not dtypes.is_unsigned(index_dtype) or axis_size > np.iinfo(index_dtype).max:
    # a signed type wide enough for the axis (JAX: index_dtype_for_axis_size)
    want = index_dtype
    if dtypes.is_unsigned(index_dtype) or np.iinfo(index_dtype).max < axis_size:
      want = dtypes.canonicalize_dtype(np.int32 if axis_size < 2**31 else np.int64)
    if want != index_dtype:
      indices = lax_e.convert_element_type(indices, want)
  if wrap_negative_indices:
    indices = _normalize_index(indices, axis_size)
  if mode == "one_hot":
    mode = None
  index_dims = [i for i, s in enumerate(idx_shape) if i == axis_int or s != 1]
  gather_index_shape = tuple(np.array(out_shape, dtype=np.int64)[index_dims].tolist()) + (1,)
  gather_indices = lax_s.reshape(indices, gather_index_shape)
  slice_sizes, offset_dims, start_index_map, collapsed = [], [], [], []
  operand_batching_dims, start_indices_batching_dims, dims_to_squeeze = [], [], []
  new_i = j = 0
  for i in range(rank):
    if i == axis_int:
      slice_sizes.append(1)
      start_index_map.append(new_i)
      collapsed.append(new_i)
      new_i += 1
      j += 1
    elif idx_shape[i] == 1:
      offset_dims.append(i)
      slice_sizes.append(arr_shape[i])
      new_i += 1
    elif arr_shape[i] == 1:
      dims_to_squeeze.append(i)
      j += 1
    else:
      slice_sizes.append(0 if arr_shape[i] == 0 else 1)
      operand_batching_dims.append(new_i)
      start_indices_batching_dims.append(j)
      new_i += 1
      j += 1
  if dims_to_squeeze:
    a = lax_s.squeeze(a, dims_to_squeeze)
  dnums = gather_scatter.GatherDimensionNumbers(
      offset_dims=tuple(offset_dims), collapsed_slice_dims=tuple(collapsed),
      start_index_map=tuple(start_index_map),
      operand_batching_dims=tuple(operand_batching_dims),
      start_indices_batching_dims=tuple(start_indices_batching_dims))
  return gather_scatter.gather(a, gather_indices, dnums, tuple(slice_sizes),
                        mode="fill" if mode is None else mode, fill_value=fill_value)


def _make_along_axis_idx(shape, indices, axis):
  if axis < 0:
    axis += len(shape)
  nd = len(shape)
  idx = []
  for i, d in enumerate(shape):
    if i == axis:
      idx.append(indices)
    else:
      s = [1] * nd
      s[i] = d
      idx.append(lax_s.broadcasted_iota(dtypes.canonicalize_dtype(np.int32), tuple(s), i))
  return tuple(idx)


def put_along_axis(arr, indices, values, axis, inplace=True, *, mode=None):
  """jnp.put_along_axis: returns an updated copy; ``inplace=False`` is required (JAX
  arrays are immutable)."""
  if inplace:
    raise ValueError(
        "jax.numpy.put_along_axis cannot modify arrays in-place, because JAX arrays"
        "are immutable. Pass inplace=False to instead return an updated array.")
  arr, indices, values = _ensure_arraylike("put_along_axis", arr, indices, values)
  original_axis = axis
  original_shape = _shape(arr)
  if axis is None:
    arr = _ravel(arr)
    axis = 0
  if _ndim(arr) != _ndim(indices):
    raise ValueError("put_along_axis arguments 'arr' and 'indices' must have same ndim. Got "
                     f"arr.ndim={_ndim(arr)} and indices.ndim={_ndim(indices)}.")
  try:
    values = _broadcast_to(values, _shape(indices))
  except ValueError:
    raise ValueError("put_along_axis argument 'values' must be broadcastable to 'indices'. "
                     f"Got values.shape={_shape(values)} and indices.shape={_shape(indices)}.")
  idx = _make_along_axis_idx(_shape(arr), indices, axis)
  result = _IndexUpdateRef(arr, idx).set(values, mode=mode)
  if original_axis is None:
    result = lax_s.reshape(result, original_shape)
  return result


def _tile_to_size(arr, size):
  n = _shape(arr)[0]
  if n == size:
    return arr
  return getitem(arr, np.arange(size) % n)


def _nonzero_sized(mask, size, fill_value):
  """The positions of True entries of a 1-D mask, padded with ``fill_value`` to ``size``."""
  if not _is_tracer(mask):
    pos = np.flatnonzero(np.asarray(mask))[:size]
    out = np.full(size, fill_value, np.int32)
    out[:len(pos)] = pos
    return _ac.asarray(out)
  i32 = dtypes.canonicalize_dtype(np.int32)
  m = lax_e.convert_element_type(mask, i32)
  import pyjax.numpy as jnp
  rank = ufuncs.subtract(jnp.cumsum(m), np.int32(1))
  target = _where(mask, rank, np.int32(size))
  base = _full((size,), fill_value, i32)
  return _IndexUpdateRef(base, target).set(lax_s.iota(i32, _shape(mask)[0]), mode="drop")


def place(arr, mask, vals, *, inplace=True):
  """jnp.place: returns a copy of ``arr`` with masked entries set from ``vals`` (repeated
  or truncated to fit); ``inplace=False`` is required."""
  data, mask_arr, vals_arr = _ensure_arraylike("place", arr, mask, vals)
  vals_arr = _ravel(vals_arr) if _ndim(vals_arr) != 1 else vals_arr
  if inplace:
    raise ValueError(
        "jax.numpy.place cannot modify arrays in-place, because JAX arrays are immutable. "
        "Pass inplace=False to instead return an updated array.")
  dsize = int(np.prod(_shape(data)))
  msize = int(np.prod(_shape(mask_arr)))
  if dsize != msize:
    raise ValueError("place: arr and mask must be the same size")
  if not int(np.prod(_shape(vals_arr))):
    raise ValueError("Cannot place values from an empty array")
  if not dsize:
    return data
  flat_mask = _ravel(mask_arr) if _ndim(mask_arr) != 1 else mask_arr
  if _dtype_of(flat_mask) != dtypes.bool_:
    flat_mask = lax_e.ne(flat_mask, np.zeros((), _dtype_of(flat_mask)))
  indices = _nonzero_sized(flat_mask, msize, msize)
  vals_arr = _tile_to_size(vals_arr, msize)
  flat = _ravel(data) if _ndim(data) != 1 else data
  out = _IndexUpdateRef(flat, indices).set(vals_arr, mode="drop")
  return lax_s.reshape(out, _shape(data)) if _shape(data) != _shape(out) else out


def put(a, ind, v, mode=None, *, inplace=True):
  """jnp.put: returns a copy of ``a`` with flat positions ``ind`` set from ``v``;
  ``inplace=False`` is required.  ``mode=None``: negative indices wrap once and the rest
  clamp into range (as in JAX); 'clip' clamps; 'wrap' wraps."""
  if inplace:
    raise ValueError(
        "jax.numpy.put cannot modify arrays in-place, because JAX arrays are immutable. "
        "Pass inplace=False to instead return an updated array.")
  arr, ind_arr, v_arr = _ensure_arraylike("put", a, ind, v)
  ind_arr = _ravel(ind_arr) if _ndim(ind_arr) != 1 else ind_arr
  v_arr = _ravel(v_arr) if _ndim(v_arr) != 1 else v_arr
  size = int(np.prod(_shape(arr)))
  if not size or not _shape(ind_arr)[0] or not _shape(v_arr)[0]:
    return arr
  v_arr = _tile_to_size(v_arr, _shape(ind_arr)[0])
  if mode is None:
    # JAX computes this through jnp.unravel_index, which wraps negative indices once and
    # clamps the rest into range
    d = _dtype_of(ind_arr)
    if not dtypes.is_unsigned(d):
      ind_arr = _normalize_index(ind_arr, size)
    ind_arr = ufuncs.minimum(ufuncs.maximum(ind_arr, np.zeros((), d)), np.array(size - 1, d))
    scatter_mode = "drop"
  elif mode == "clip":
    d = _dtype_of(ind_arr)
    ind_arr = ufuncs.minimum(ufuncs.maximum(ind_arr, np.zeros((), d)), np.array(size - 1, d))
    scatter_mode = "promise_in_bounds"
  elif mode == "wrap":
    ind_arr = ufuncs.remainder(ind_arr, np.array(size, _dtype_of(ind_arr)))
    scatter_mode = "promise_in_bounds"
  elif mode == "raise":
    raise NotImplementedError("The 'raise' mode to jnp.put is not supported.")
  else:
    raise ValueError(f"mode should be one of 'wrap' or 'clip'; got mode={mode!r}")
  flat = _ravel(arr) if _ndim(arr) != 1 else arr
  out = _IndexUpdateRef(flat, ind_arr).set(v_arr, mode=scatter_mode)
  return lax_s.reshape(out, _shape(arr)) if _shape(arr) != _shape(out) else out


# --- nonzero / flatnonzero / argwhere -------------------------------------------------------
_NONZERO_SIZE_HINT = ("The size argument of jnp.nonzero must be statically specified to use "
                      "jnp.nonzero within JAX transformations.")


def nonzero(a, *, size=None, fill_value=None):
  """Indices of the nonzero elements of ``a``, one integer array per dimension.

  Without ``size`` the result length depends on the values, so ``a`` must be concrete
  (``ConcretizationTypeError`` under ``jit``).  With a static ``size`` the result is
  truncated or padded to that length -- with ``fill_value`` (a scalar or one value per
  dimension) where given and with 0 otherwise -- and works under transformations.  As in
  JAX, a ``fill_value`` takes part in dtype promotion (a float fill gives float indices)."""
  check_arraylike("nonzero", a)
  arr = _asarray(a)
  shape = _shape(arr)
  nd = len(shape)
  if nd == 0:
    raise ValueError("Calling nonzero on 0d arrays is not allowed. "
                     "Use jnp.atleast_1d(scalar).nonzero() instead.")
  n = int(np.prod(shape, dtype=np.int64))
  int_dt = dtypes.default_int_dtype()
  if size is not None:
    size = core.concrete_or_error(operator.index, size, _NONZERO_SIZE_HINT)
    if size < 0:
      raise TypeError(f"nonzero: size must be a nonnegative integer, got {size}.")
  if _is_tracer(arr):
    if size is None:
      raise errors.ConcretizationTypeError(arr, _NONZERO_SIZE_HINT)
    coords, count = _nonzero_traced(arr, shape, n, size, int_dt)
  else:
    m = np.asarray(arr) != 0
    pos = np.flatnonzero(m)
    count = len(pos)
    if size is None:
      size = count
    pos = pos[:size]
    cols = np.unravel_index(pos, shape) if n else [pos] * nd
    coords = []
    for c in cols:
      out = np.zeros(size, int_dt)
      out[:len(c)] = c
      coords.append(_ac.asarray(out))
  if fill_value is None or not n or not size:
    # (as in JAX, an empty input or result is never filled, and keeps the integer dtype)
    return tuple(coords)
  if isinstance(fill_value, tuple):
    fills = fill_value
  elif np.ndim(fill_value) == 0:
    fills = (fill_value,) * nd
  else:
    fills = None
  if fills is None or len(fills) != nd:
    raise ValueError(f"fill_value must be a scalar or a tuple of length {nd}; "
                     f"got {fill_value}")
  from pyjax._src.numpy import manipulation
  fill_mask = lax_e.ge(lax_s.iota(int_dt, size),
                       count if _is_tracer(count) else np.array(count, int_dt))
  return tuple(manipulation.where(fill_mask, fv, c) for fv, c in zip(fills, coords))


def _nonzero_traced(arr, shape, n, size, int_dt):
  """(per-dimension indices padded with 0, number of nonzeros) for a traced ``arr``."""
  from pyjax._src.lax import reductions as lax_r
  zero = np.zeros((), _dtype_of(arr))
  mask = arr if _dtype_of(arr) == dtypes.bool_ else lax_e.ne(arr, zero)
  flat_mask = _ravel(mask)
  m = lax_e.convert_element_type(flat_mask, int_dt)
  count = lax_r.reduce_sum(m, (0,))
  if not n:
    return [_full((size,), 0, int_dt) for _ in shape], count
  # scatter each True entry's flat position to its rank; ranks >= size are dropped, and the
  # padding keeps ``n``, which unravels to index 0 in every dimension
  rank = lax_e.sub(lax_r.cumsum(m, 0), np.ones((), int_dt))
  target = _where(flat_mask, rank, np.array(size, int_dt))
  base = _full((size,), n, int_dt)
  flat = _IndexUpdateRef(base, target).set(lax_s.iota(int_dt, n), mode="drop")
  coords = []
  stride = n
  for d in shape:
    stride //= d
    c = lax_e.div(flat, np.array(stride, int_dt))
    coords.append(lax_e.rem(c, np.array(d, int_dt)))
  return coords, count


def flatnonzero(a, *, size=None, fill_value=None):
  """Indices of the nonzero elements of ``ravel(a)`` (see ``nonzero`` for ``size`` and
  ``fill_value``)."""
  check_arraylike("flatnonzero", a)
  return nonzero(_flat(a), size=size, fill_value=fill_value)[0]


def _flat(a):
  arr = _asarray(a)
  return lax_s.reshape(arr, (int(np.prod(_shape(arr), dtype=np.int64)),))


def argwhere(a, *, size=None, fill_value=None):
  """Indices of the nonzero elements as an ``(N, a.ndim)`` array (see ``nonzero`` for
  ``size`` and ``fill_value``); a 0-d input gives shape ``(N, 0)``."""
  check_arraylike("argwhere", a)
  arr = _asarray(a)
  nd = len(_shape(arr))
  cols = nonzero(_flat(arr) if nd == 0 else arr, size=size, fill_value=fill_value)
  from pyjax._src.numpy import manipulation
  result = manipulation.stack(cols, axis=1)
  if nd == 0:
    return lax_s.reshape(result[:, :0], (_shape(result)[0], 0))
  return result
