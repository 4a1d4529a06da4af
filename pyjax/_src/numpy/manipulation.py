"""Shape manipulation: reshape/ravel/transpose and friends, stacking and splitting,
flips/rolls/tiling/repeating, broadcasting, where/clip/select/choose, append/insert/
delete/resize, pad, trim_zeros, block, and the small introspection helpers (ndim, shape,
size, isscalar, iscomplexobj, isrealobj).

Functions are built on lax's structural primitives so that they trace; arguments that
decide a shape (axes, sizes, split points, static repeats, pad widths) must be concrete,
with JAX's errors when they are not.
"""
from __future__ import annotations

import builtins
import math
import operator
import warnings

import numpy as np

from pyjax._src import core, dtypes
from pyjax._src.lax import elementwise as lax_e
from pyjax._src.numpy import ufuncs
from pyjax._src.numpy.creation import (_asarray, _const, _full, _shape, _is_tracer,
                                       _value_dtype_weak, canonicalize_shape, zeros_like)
from pyjax._src.numpy.util import check_arraylike, is_arraylike, promote_dtypes
from pyjax._src.numpy.util import library_function as _library_function
from pyjax._src.runtime.array import Array, ArrayImpl

from pyjax import lax
from pyjax._src.lax.shapes import reshape_p as _reshape_p

__all__ = ["reshape", "ravel", "transpose", "permute_dims", "matrix_transpose", "moveaxis",
           "swapaxes", "rollaxis", "squeeze", "expand_dims", "stack", "hstack", "vstack",
           "dstack", "column_stack", "concatenate", "concat", "split", "array_split", "hsplit",
           "vsplit", "dsplit", "flip", "fliplr", "flipud", "rot90", "roll", "tile", "repeat",
           "broadcast_to", "broadcast_arrays", "broadcast_shapes", "atleast_1d", "atleast_2d",
           "atleast_3d", "where", "clip", "select", "choose", "append", "insert", "delete",
           "resize", "pad", "trim_zeros", "unstack", "block", "ndim", "shape", "size",
           "isscalar", "iscomplexobj", "isrealobj"]

_min, _max = builtins.min, builtins.max


# --- helpers ----------------------------------------------------------------------------
def _arr(name, x):
  check_arraylike(name, x)
  return _asarray(x)


def _index_tuple(x):
  """An int or a sequence of ints as a tuple of Python ints (TypeError otherwise)."""
  try:
    return (operator.index(x),)
  except TypeError:
    return tuple(operator.index(i) for i in x)


def _canon_axis(axis, ndim):
  """JAX's axis check (no special case for 0-d arrays); raises AxisError (a ValueError)."""
  axis = operator.index(axis)
  if not -ndim <= axis < ndim:
    from numpy.exceptions import AxisError
    raise AxisError(f"axis {axis} is out of bounds for array of dimension {ndim}")
  return axis + ndim if axis < 0 else axis


def _axes(axis, ndim):
  return tuple(_canon_axis(a, ndim) for a in _index_tuple(axis))


def _static(x, context):
  return core.concrete_or_error(None, x, context)


def _weak_like(x, weak):
  """``x`` with the given weak type (no-op when it already has it)."""
  if x.weak_type == weak:
    return x
  return lax_e._convert_element_type(x, x.dtype, weak)


def _take(arr, indices, axis):
  """``arr`` indexed by in-bounds integer ``indices`` (1-D, static or traced) along ``axis``
  (a gather, like ``jnp.take``)."""
  nd = arr.ndim
  if isinstance(indices, (np.ndarray, list, tuple)):
    idx = np.asarray(indices, dtype=np.int32).reshape(-1)
    if idx.size and np.array_equal(idx, np.arange(idx[0], idx[0] + idx.size)):
      return lax.slice_in_dim(arr, int(idx[0]), int(idx[0]) + idx.size, axis=axis)
    indices = _const(idx, dtypes.int32)
  indices = lax.reshape(indices, (indices.shape[0], 1))
  offset_dims = tuple(i for i in range(nd) if i != axis)
  dnums = lax.GatherDimensionNumbers(offset_dims=offset_dims, collapsed_slice_dims=(axis,),
                                     start_index_map=(axis,))
  slice_sizes = tuple(1 if i == axis else d for i, d in enumerate(arr.shape))
  return lax.gather(arr, indices, dnums, slice_sizes, mode=lax.GatherScatterMode.PROMISE_IN_BOUNDS)


def _maybe_lax(name):
  return getattr(lax, name, None)


# --- reshaping and transposing ----------------------------------------------------------
def _compute_newshape(arr, newshape):
  orig = newshape
  if not isinstance(newshape, (tuple, list)):
    newshape = [newshape] if getattr(newshape, "ndim", 1) == 0 or np.ndim(newshape) == 0 \
        else list(newshape)
  newshape = canonicalize_shape(newshape)
  neg = [i for i, d in enumerate(newshape) if d == -1]
  size = arr.size
  if len(neg) > 1:
    raise TypeError(f"can only specify one unknown axis size with a `-1` value, got {orig}")
  if neg:
    i, = neg
    others = newshape[:i] + newshape[i + 1:]
    if size % math.prod(others) != 0:
      raise TypeError(f"cannot reshape array of shape {arr.shape} (size {size}) into shape "
                      f"{orig} because the product of specified axis sizes "
                      f"({math.prod(others)}) does not evenly divide {size}")
    return newshape[:i] + (size // math.prod(others),) + newshape[i + 1:]
  if size != math.prod(newshape):
    raise TypeError(f"cannot reshape array of shape {arr.shape} (size {size}) into shape "
                    f"{orig} (size {math.prod(newshape)})")
  return newshape


def reshape(a, shape, order="C", *, copy=None, out_sharding=None):
  """Reshape ``a``; one dimension may be -1.  ``order`` 'C' or 'F' ('A' is not supported,
  as in JAX)."""
  if order == "C" and type(a) is ArrayImpl and out_sharding is None:
    new = _fast_newshape(a, shape)
    if new is not None:
      return a if new == a.shape and new else _reshape_p.bind(
          a, new_sizes=new, dimensions=None, sharding=None)
  a = _arr("reshape", a)
  new = _compute_newshape(a, shape)
  if order == "C":
    return lax.reshape(a, new, out_sharding=out_sharding)
  if order == "F":
    nd = a.ndim
    out = lax.reshape(a, new[::-1], tuple(range(nd - 1, -1, -1)))
    return lax.transpose(out, tuple(range(len(new) - 1, -1, -1)))
  if order == "A":
    raise NotImplementedError("np.reshape order=A is not implemented.")
  raise ValueError(f"Unexpected value for 'order' argument: {order}.")


def _fast_newshape(a, shape):
  """The new shape for the eager fast path (a concrete Array, a tuple of non-negative
  Python ints or one int, same total size), or None to take the general path."""
  if type(shape) is int:
    shape = (shape,)
  elif type(shape) is not tuple:
    return None
  n = 1
  for d in shape:
    if type(d) is not int or d < 0:
      return None
    n *= d
  return shape if n == a.size else None


def ravel(a, order="C", *, out_sharding=None):
  """Flatten to 1-D (order 'C' or 'F')."""
  a = _arr("ravel", a)
  if order == "K":
    raise NotImplementedError("Ravel not implemented for order='K'.")
  return reshape(a, (a.size,), order)


def transpose(a, axes=None):
  """Permute the axes (reverse them by default)."""
  a = _arr("transpose", a)
  if axes is None:
    perm = tuple(range(a.ndim - 1, -1, -1))
  else:
    perm = tuple(_canon_axis(i, a.ndim) for i in _index_tuple(axes))
  return lax.transpose(a, perm)


def permute_dims(a, /, axes):
  """Array API name for :func:`transpose` (``axes`` required)."""
  a = _arr("permute_dims", a)
  return transpose(a, axes)


def matrix_transpose(x, /):
  """Swap the last two axes."""
  x = _arr("matrix_transpose", x)
  nd = x.ndim
  if nd < 2:
    raise ValueError(f"x must be at least two-dimensional for matrix_transpose; got ndim={nd}")
  return lax.transpose(x, (*range(nd - 2), nd - 1, nd - 2))


def moveaxis(a, source, destination):
  """Move axes ``source`` to positions ``destination`` (others keep their order)."""
  a = _arr("moveaxis", a)
  nd = a.ndim
  src = _axes(source, nd)
  dst = _axes(destination, nd)
  if len(src) != len(dst):
    raise ValueError(f"Inconsistent number of elements: {len(src)} vs {len(dst)}")
  perm = [i for i in range(nd) if i not in src]
  for d, s in sorted(zip(dst, src)):
    perm.insert(d, s)
  return lax.transpose(a, tuple(perm))


def swapaxes(a, axis1, axis2):
  """Interchange two axes."""
  a = _arr("swapaxes", a)
  perm = np.arange(a.ndim)
  perm[axis1], perm[axis2] = perm[axis2], perm[axis1]
  return lax.transpose(a, tuple(int(p) for p in perm))


def rollaxis(a, axis, start=0):
  """Roll ``axis`` backwards until it lies before ``start`` (prefer :func:`moveaxis`)."""
  a = _arr("rollaxis", a)
  nd = a.ndim
  axis = _canon_axis(axis, nd)
  start = core.concrete_or_error(operator.index, start, "'start' argument of jnp.rollaxis()")
  if not -nd <= start <= nd:
    raise ValueError(f"start={start} must satisfy {-nd}<=start<={nd}")
  if start < 0:
    start += nd
  if start > axis:
    start -= 1
  return moveaxis(a, axis, start)


def squeeze(a, axis=None):
  """Remove size-1 axes (all of them, or those in ``axis``)."""
  a = _arr("squeeze", a)
  if axis is None:
    dims = tuple(i for i, d in enumerate(a.shape) if d == 1)
  else:
    dims = _axes(axis, a.ndim)
  if not dims:
    return a
  return lax.squeeze(a, dims)


def expand_dims(a, axis):
  """Insert size-1 axes at positions ``axis`` of the result."""
  a = _arr("expand_dims", a)
  axis = _index_tuple(axis)
  nd_out = a.ndim + len(axis)
  canon = [_canon_axis(i, nd_out) for i in axis]
  if len(set(canon)) != len(canon):
    raise ValueError(f"repeated axis in lax.expand_dims: {axis}")
  return lax.expand_dims(a, tuple(canon))


# --- joining ----------------------------------------------------------------------------
def _concatenate_array(arr, axis, dtype):
  """Concatenate the rows of one array (no unstacking)."""
  arr = _asarray(arr, dtype=dtype)
  if axis is None:
    return lax.reshape(arr, (arr.size,))
  if arr.ndim == 0 or arr.shape[0] == 0:
    raise ValueError("Need at least one array to concatenate.")
  if arr.ndim == 1:
    raise ValueError("Zero-dimensional arrays cannot be concatenated.")
  axis = _canon_axis(axis, arr.ndim - 1)
  shp = arr.shape
  new = shp[1:axis + 1] + (shp[0] * shp[axis + 1],) + shp[axis + 2:]
  dims = (*range(1, axis + 1), 0, *range(axis + 1, arr.ndim))
  return lax.reshape(arr, new, dims)


def _key_arrays(name, arrays):
  """The typed PRNG key arrays among ``arrays`` if any is one (then all must be, of one
  key dtype), else None."""
  ks = [dtypes.has_extended_dtype(a) for a in arrays]
  if not any(ks):
    return None
  if not all(ks) or any(a.dtype != arrays[0].dtype for a in arrays):
    key_dt = next(a.dtype for a, k in zip(arrays, ks) if k)
    raise ValueError(f"dtype={key_dt} is not a valid dtype for JAX type promotion.")
  return arrays


def concatenate(arrays, axis=0, dtype=None):
  """Join arrays along an existing axis (``axis=None`` flattens first), promoting dtypes
  like JAX.  Typed PRNG key arrays (all of one key dtype) concatenate as in JAX."""
  if isinstance(arrays, (np.ndarray, Array)):
    return _concatenate_array(arrays, axis, dtype)
  arrays = tuple(arrays)
  check_arraylike("concatenate", *arrays)
  if not arrays:
    raise ValueError("Need at least one array to concatenate.")
  if _key_arrays("concatenate", arrays) is not None:
    if arrays[0].ndim == 0:
      raise ValueError("Zero-dimensional arrays cannot be concatenated.")
    ax = _canon_axis(0 if axis is None else axis, arrays[0].ndim)
    bases = [a.ravel()._base_array if axis is None else a._base_array for a in arrays]
    return arrays[0]._wrap(lax.concatenate(bases, ax))
  arrays = [_asarray(a) for a in arrays]
  if axis is None:
    return concatenate([ravel(a) for a in arrays], 0, dtype)
  if arrays[0].ndim == 0:
    raise ValueError("Zero-dimensional arrays cannot be concatenated.")
  axis = _canon_axis(axis, arrays[0].ndim)
  if dtype is None:
    arrays = promote_dtypes(*arrays)
  else:
    arrays = [_asarray(a, dtype=dtype) for a in arrays]
  return lax.concatenate(arrays, axis)


def concat(arrays, /, *, axis=0):
  """Array API name for :func:`concatenate`."""
  check_arraylike("concat", *arrays)
  return concatenate(arrays, axis=axis)


def _stack(arrays, axis):
  """lax.stack when lax has it; else expand each operand and concatenate."""
  nd = arrays[0].ndim
  for a in arrays[1:]:
    if a.ndim != nd:
      raise ValueError("Cannot stack arrays with different numbers of dimensions: got "
                       f"{', '.join(str(x.shape) for x in arrays)}.")
  axis = _canon_axis(axis, nd + 1)
  lax_stack = _maybe_lax("stack")
  if lax_stack is not None:
    return lax_stack(arrays, axis=axis)
  for a in arrays[1:]:
    if a.shape != arrays[0].shape:
      raise ValueError("All input arrays must have the same shape.")
  return lax.concatenate([lax.expand_dims(a, (axis,)) for a in arrays], axis)


def stack(arrays, axis=0, out=None, dtype=None):
  """Join arrays of equal shape along a new axis."""
  if not len(arrays):
    raise ValueError("Need at least one array to stack.")
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.stack is not supported.")
  if isinstance(arrays, (np.ndarray, Array)):
    axis = _canon_axis(axis, arrays.ndim)
    return concatenate(expand_dims(arrays, axis + 1), axis=axis, dtype=dtype)
  arrays = tuple(arrays)
  check_arraylike("stack", *arrays)
  if _key_arrays("stack", arrays) is not None:
    shape0 = arrays[0].shape
    if any(a.shape != shape0 for a in arrays):
      raise ValueError("All input arrays must have the same shape.")
    ax = _canon_axis(axis, len(shape0) + 1)
    return arrays[0]._wrap(_stack([a._base_array for a in arrays], ax))
  if dtype is not None:
    arrays = [_asarray(a, dtype=dtype) for a in arrays]
  else:
    arrays = promote_dtypes(*arrays)
  return _stack(arrays, axis)


def _row_map(arr, fn_shape):
  """Apply a per-row reshape to an array's rows at once (``vmap`` of a reshape)."""
  return lax.reshape(arr, (arr.shape[0],) + fn_shape(arr.shape[1:]))


def _atleast_1d_shape(s):
  return s if len(s) >= 1 else (1,)


def _atleast_2d_shape(s):
  return (1,) * _max(0, 2 - len(s)) + s


def _atleast_3d_shape(s):
  if len(s) == 0:
    return (1, 1, 1)
  if len(s) == 1:
    return (1,) + s + (1,)
  if len(s) == 2:
    return s + (1,)
  return s


def hstack(tup, dtype=None):
  """Stack horizontally (along axis 1; axis 0 for 1-D inputs)."""
  if isinstance(tup, (np.ndarray, Array)):
    arrs = _row_map(_asarray(tup), _atleast_1d_shape)
    nd0 = arrs.ndim - 1
  else:
    arrs = [atleast_1d(m) for m in tup]
    nd0 = arrs[0].ndim if arrs else 1
  return concatenate(arrs, axis=0 if nd0 == 1 else 1, dtype=dtype)


def vstack(tup, dtype=None):
  """Stack vertically (along axis 0, after making inputs at least 2-D)."""
  if isinstance(tup, (np.ndarray, Array)):
    arrs = _row_map(_asarray(tup), _atleast_2d_shape)
  else:
    arrs = [atleast_2d(m) for m in tup]
  return concatenate(arrs, axis=0, dtype=dtype)


def dstack(tup, dtype=None):
  """Stack along the third axis (after making inputs at least 3-D)."""
  if isinstance(tup, (np.ndarray, Array)):
    arrs = _row_map(_asarray(tup), _atleast_3d_shape)
  else:
    arrs = [atleast_3d(m) for m in tup]
  return concatenate(arrs, axis=2, dtype=dtype)


def column_stack(tup):
  """Stack 1-D arrays as columns of a 2-D array (2-D inputs are joined along axis 1)."""
  if isinstance(tup, (np.ndarray, Array)):
    arrs = _asarray(tup)
    if arrs.ndim < 3:
      n = arrs.shape[0]
      if arrs.ndim == 1:
        arrs = lax.reshape(arrs, (n, 1, 1))
      else:
        arrs = lax.reshape(arrs, (n, arrs.shape[1], 1))
  else:
    tup = tuple(tup)
    check_arraylike("column_stack", *tup)
    arrs = []
    for a in map(_asarray, tup):
      arrs.append(transpose(atleast_2d(a)) if a.ndim < 2 else a)
  return concatenate(arrs, axis=1)


# --- splitting --------------------------------------------------------------------------
def _split(op, ary, indices_or_sections, axis):
  ary = _arr(op, ary)
  axis = core.concrete_or_error(operator.index, axis, f"Argument 'axis' of jnp.{op}()")
  size = ary.shape[axis]
  ios = indices_or_sections
  if isinstance(ios, (tuple, list)) or (isinstance(ios, (np.ndarray, Array)) and ios.ndim > 0):
    pts = [core.concrete_or_error(operator.index, i, f"in jax.numpy.{op} argument 1")
           for i in (ios if not isinstance(ios, Array) else
                     core.concrete_or_error(np.asarray, ios, f"in jax.numpy.{op} argument 1"))]
    sizes = list(np.diff(np.asarray([0] + pts + [size], dtype=np.int64)))
  else:
    n = core.concrete_or_error(int, ios, f"in jax.numpy.{op} argument 1")
    part, r = divmod(size, n)
    if r == 0:
      sizes = [part] * n
    elif op == "array_split":
      sizes = [part + 1] * r + [part] * (n - r)
    else:
      raise ValueError(f"array split does not result in an equal division: rest is {r}")
    sizes = [np.int64(s) for s in sizes]
  if any(s < 0 for s in sizes):
    raise ValueError(f"Sizes passed to split must be nonnegative, got {sizes}")
  axis = _canon_axis(axis, ary.ndim)
  lax_split = _maybe_lax("split")
  if lax_split is not None:
    return list(lax_split(ary, tuple(int(s) for s in sizes), axis=axis))
  out, start = [], 0
  for s in sizes:
    s = int(s)
    out.append(lax.slice_in_dim(ary, start, start + s, axis=axis))
    start += s
  return out


def split(ary, indices_or_sections, axis=0):
  """Split into equal sections, or at the given (concrete, nondecreasing) indices."""
  return _split("split", ary, indices_or_sections, axis)


def array_split(ary, indices_or_sections, axis=0):
  """Like :func:`split`, allowing sections of unequal size."""
  return _split("array_split", ary, indices_or_sections, axis)


def hsplit(ary, indices_or_sections):
  """Split along axis 1 (axis 0 for 1-D inputs)."""
  a = _arr("hsplit", ary)
  return _split("hsplit", a, indices_or_sections, 0 if a.ndim == 1 else 1)


def vsplit(ary, indices_or_sections):
  """Split along axis 0."""
  return _split("vsplit", ary, indices_or_sections, 0)


def dsplit(ary, indices_or_sections):
  """Split along axis 2."""
  return _split("dsplit", ary, indices_or_sections, 2)


def unstack(x, /, *, axis=0):
  """The slices of ``x`` along ``axis``, as a tuple."""
  x = _arr("unstack", x)
  axis = _canon_axis(axis, x.ndim)
  lax_unstack = _maybe_lax("unstack")
  if lax_unstack is not None:
    return tuple(lax_unstack(x, axis=axis))
  return tuple(lax.index_in_dim(x, i, axis, keepdims=False) for i in range(x.shape[axis]))


# --- reordering -------------------------------------------------------------------------
def flip(m, axis=None):
  """Reverse the order of elements along ``axis`` (all axes by default)."""
  m = _arr("flip", m)
  dims = tuple(range(m.ndim)) if axis is None else _axes(axis, m.ndim)
  if not dims:
    return m
  return lax.rev(m, dims)


def fliplr(m):
  """Reverse along axis 1."""
  return flip(_arr("fliplr", m), 1)


def flipud(m):
  """Reverse along axis 0."""
  return flip(_arr("flipud", m), 0)


def rot90(m, k=1, axes=(0, 1)):
  """Rotate by 90 degrees ``k`` times in the plane of ``axes``."""
  m = _arr("rot90", m)
  if m.ndim < 2:
    raise ValueError("rot90 requires its first argument to have ndim at least two, but got "
                     f"first argument of shape {m.shape}, which has ndim {m.ndim}")
  ax1, ax2 = axes
  ax1, ax2 = _canon_axis(ax1, m.ndim), _canon_axis(ax2, m.ndim)
  if ax1 == ax2:
    raise ValueError("Axes must be different")
  k = operator.index(k) % 4
  if k == 0:
    return m
  if k == 2:
    return lax.rev(m, (ax1, ax2))
  perm = list(range(m.ndim))
  perm[ax1], perm[ax2] = perm[ax2], perm[ax1]
  if k == 1:
    return lax.transpose(lax.rev(m, (ax2,)), tuple(perm))
  return lax.rev(lax.transpose(m, tuple(perm)), (ax2,))


def roll(a, shift, axis=None):
  """Roll elements along ``axis`` (the flattened array by default); ``shift`` may be
  traced."""
  a = _arr("roll", a)
  if axis is None:
    return lax.reshape(roll(lax.reshape(a, (a.size,)), shift, 0), a.shape)
  axis = _axes(axis, a.ndim)
  try:
    shifts = _index_tuple(shift)
  except TypeError:
    return _roll_dynamic(a, _asarray(shift), axis)
  for ax, s in zip(*np.broadcast_arrays(np.asarray(axis), np.asarray(shifts))):
    ax, s = int(ax), int(s)
    n = a.shape[ax]
    if n == 0:
      continue
    s %= n
    if s == 0:
      continue
    a = lax.concatenate([lax.slice_in_dim(a, n - s, n, axis=ax),
                         lax.slice_in_dim(a, 0, n - s, axis=ax)], ax)
  return a


def _roll_dynamic(a, shift, axis):
  bshape = np.broadcast_shapes(shift.shape, np.shape(axis))
  if len(bshape) != 1:
    raise ValueError("'shift' and 'axis' arguments to roll must be scalars or 1D arrays")
  shift = broadcast_to(shift, bshape)
  axes = np.broadcast_to(np.asarray(axis), bshape)
  i32 = dtypes.int32
  for j, ax in enumerate(axes):
    ax = int(ax)
    n = a.shape[ax]
    s = lax_e._convert_element_type(lax.index_in_dim(shift, j, 0, keepdims=False), i32, False)
    s = ufuncs.remainder(s, _const(_max(n, 1), i32))
    doubled = lax.concatenate([a, a], ax)
    a = lax.dynamic_slice_in_dim(doubled, lax_e.sub(_const(n, i32), s), n, axis=ax)
  return a


def tile(A, reps):
  """Repeat the whole array ``reps`` times along each axis."""
  A = _arr("tile", A)
  if not isinstance(reps, (tuple, list)) and (getattr(reps, "ndim", None) == 0 or np.ndim(reps) == 0):
    reps = (reps,)
  reps = tuple(int(r) if isinstance(r, (float, np.floating)) and float(r).is_integer()
               else operator.index(r) for r in reps)
  a_shape = (1,) * (len(reps) - A.ndim) + A.shape
  reps = (1,) * (len(a_shape) - len(reps)) + reps
  if any(r < 0 for r in reps):
    raise ValueError(f"tile: reps must be nonnegative, got {reps}")
  lax_tile = _maybe_lax("tile")
  if lax_tile is not None:
    return lax_tile(lax.reshape(A, a_shape), reps)
  inter = tuple(j for d in a_shape for j in (1, d))
  big = tuple(k for pair in zip(reps, a_shape) for k in pair)
  x = lax.reshape(A, inter)
  x = lax.broadcast_in_dim(x, big, tuple(range(len(big))))
  return lax.reshape(x, tuple(r * d for r, d in zip(reps, a_shape)))


def repeat(a, repeats, axis=None, *, total_repeat_length=None, out_sharding=None):
  """Repeat each element ``repeats`` times (an int, or one count per element along
  ``axis``).  Traced ``repeats`` need a static ``total_repeat_length``, as in JAX."""
  if type(repeats) is int:
    check_arraylike("repeat", a)
  else:
    check_arraylike("repeat", a, repeats)
  a = _asarray(a)
  if axis is None:
    a = lax.reshape(a, (a.size,))
    axis = 0
  axis = core.concrete_or_error(operator.index, axis, "'axis' argument of jnp.repeat()")
  if total_repeat_length is None:
    repeats = _static(repeats, "When jit-compiling jnp.repeat, the total number of repeats "
                      "must be static. To fix this, either specify a static value for "
                      "`repeats`, or pass a static value to `total_repeat_length`.")
    if np.ndim(repeats) == 0 and a.ndim != 0:
      axis = _canon_axis(axis, a.ndim)
      r = repeats._data()[()] if type(repeats) is ArrayImpl else repeats
      try:
        r = operator.index(r)
      except TypeError:
        out_shape = list(a.shape)
        out_shape[axis] *= r
        raise TypeError("Shapes must be 1D sequences of concrete values of integer type, got "
                        f"{out_shape}.") from None
      aux = list(a.shape)
      aux.insert(axis + 1, r)
      x = lax.broadcast_in_dim(a, tuple(aux), tuple(i for i in range(len(aux)) if i != axis + 1))
      out_shape = list(a.shape)
      out_shape[axis] *= r
      return lax.reshape(x, tuple(out_shape))
    reps = np.ravel(np.asarray(repeats))
    if a.ndim != 0:
      axis = _canon_axis(axis, a.ndim)
      reps = np.broadcast_to(reps, [a.shape[axis]])
    total = int(np.sum(reps))
    static_reps = reps
  else:
    total = operator.index(total_repeat_length)
    static_reps = None
    if not _is_tracer(repeats):
      reps = np.ravel(np.asarray(repeats._data() if type(repeats) is ArrayImpl else repeats))
      if a.ndim != 0:
        axis = _canon_axis(axis, a.ndim)
        reps = np.broadcast_to(reps, [a.shape[axis]])
      static_reps = reps
    else:
      reps = lax.reshape(repeats, (repeats.size,))
      if a.ndim != 0:
        axis = _canon_axis(axis, a.ndim)
        reps = broadcast_to(reps, (a.shape[axis],))
  if a.ndim == 0:
    if np.shape(reps) == (1,):
      return _broadcast_full((total,), a)
    raise ValueError("`repeat` with a scalar parameter `a` is only implemented for scalar "
                     "values of the parameter `repeats`.")
  if total == 0:
    out_shape = list(a.shape)
    out_shape[axis] = 0
    return lax.slice_in_dim(a, 0, 0, axis=axis) if a.shape[axis] else lax.reshape(a, tuple(out_shape))
  if a.shape[axis] == 0:
    return a
  if static_reps is not None:
    idx = np.repeat(np.arange(a.shape[axis]), np.maximum(static_reps, 0).astype(np.int64))
    if idx.size < total:
      idx = np.concatenate([idx, np.full(total - idx.size, a.shape[axis] - 1)])
    return _take(a, idx[:total], axis)
  return _take(a, _repeat_gather_indices(reps, total), axis)


def _broadcast_full(shape, x):
  return lax.broadcast_in_dim(x, shape, ())


def _repeat_gather_indices(reps, total):
  """For traced per-element counts: the source element of each of the ``total`` output
  slots (exclusive cumsum -> scatter-add of ones at the block starts -> cumsum - 1); slots
  past the last block repeat the last element, starts past ``total`` are dropped."""
  i32 = dtypes.int32
  reps = lax_e._convert_element_type(reps, i32, False)
  n = reps.shape[0]
  starts = lax.cumsum(lax.concatenate([_const(np.zeros(1), i32),
                                       lax.slice_in_dim(reps, 0, n - 1)], 0), 0)
  dnums = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                      scatter_dims_to_operand_dims=(0,))
  marks = lax.scatter_add(_full((total,), 0, i32, False), lax.reshape(starts, (n, 1)),
                          _full((n,), 1, i32, False), dnums,
                          mode=lax.GatherScatterMode.FILL_OR_DROP)
  return lax_e.sub(lax.cumsum(marks, 0), _const(1, i32))


# --- broadcasting -----------------------------------------------------------------------
def broadcast_to(array, shape, *, out_sharding=None):
  """Broadcast ``array`` to ``shape`` (NumPy rules; the weak type is kept)."""
  check_arraylike("broadcast_to", array)
  arr = array if isinstance(array, Array) else _asarray(array)
  if not isinstance(shape, tuple) and (getattr(shape, "ndim", None) == 0 or
                                       (not _is_tracer(shape) and np.ndim(shape) == 0)):
    shape = (shape,)
  shape = canonicalize_shape(shape)
  arr_shape = tuple(arr.shape)
  if arr_shape == shape:
    return arr
  if len(shape) < len(arr_shape):
    raise ValueError("Cannot broadcast to shape with fewer dimensions: "
                     f"arr_shape={arr_shape} shape={shape}")
  nlead = len(shape) - len(arr_shape)
  tail = shape[nlead:]
  # (a negative size that passes this check is broadcast_in_dim's TypeError, as in JAX)
  if not all(d == 1 or d == t for d, t in zip(arr_shape, tail)):
    fmt = lambda s, weak: f"{'~' if weak else ''}{arr.dtype.name}[{','.join(map(str, s))}]"
    raise ValueError("Incompatible types for broadcasting: input type="
                     f"{fmt(arr_shape, arr.weak_type)} and requested type={fmt(shape, False)}")
  if dtypes.has_extended_dtype(arr):   # typed PRNG keys: on the key data
    base = arr._base_array
    full = shape + tuple(base.shape[len(arr_shape):])
    return arr._wrap(lax.broadcast_in_dim(base, full, tuple(range(nlead, len(full)))))
  return lax.broadcast_in_dim(arr, shape, tuple(range(nlead, len(shape))))


def broadcast_shapes(*shapes):
  """The shape that ``shapes`` broadcast to (ints are 1-D shapes)."""
  if not shapes:
    return ()
  shapes = [(s,) if np.ndim(s) == 0 else tuple(s) for s in shapes]
  return tuple(int(d) for d in lax.broadcast_shapes(*shapes))


def broadcast_arrays(*args):
  """Broadcast all arguments to their common shape (weak types kept)."""
  check_arraylike("broadcast_arrays", *args)
  shapes = [tuple(_shape(a)) for a in args]
  if not shapes or all(s == shapes[0] for s in shapes):
    return [_asarray(a) for a in args]
  out_shape = lax.broadcast_shapes(*shapes)
  return [broadcast_to(a, out_shape) for a in args]


def _atleast(name, arys, fn_shape):
  check_arraylike(name, *arys)
  outs = []
  for a in arys:
    a = _asarray(a)
    s = fn_shape(a.shape)
    outs.append(a if s == a.shape else lax.reshape(a, s))
  return outs[0] if len(outs) == 1 else outs


def atleast_1d(*arys):
  """Inputs viewed with at least one dimension (one array, or a list for several)."""
  return _atleast("atleast_1d", arys, _atleast_1d_shape)


def atleast_2d(*arys):
  """Inputs with at least two dimensions (leading size-1 axes added)."""
  return _atleast("atleast_2d", arys, _atleast_2d_shape)


def atleast_3d(*arys):
  """Inputs with at least three dimensions ((N,) becomes (1, N, 1), (M, N) (M, N, 1))."""
  return _atleast("atleast_3d", arys, _atleast_3d_shape)


# --- selection --------------------------------------------------------------------------
from pyjax._src.runtime.array import ArrayImpl as _ArrayImpl  # noqa: E402
from pyjax._src.runtime import dispatch as _dispatch  # noqa: E402


def where(condition, x=None, y=None, /, *, size=None, fill_value=None):
  """``x`` where ``condition`` else ``y`` (with broadcasting and promotion).  The one-argument
  form is ``jnp.nonzero(condition, size=..., fill_value=...)``."""
  if x is None and y is None:
    check_arraylike("where", condition)
    from pyjax._src.numpy.indexing import nonzero
    return nonzero(condition, size=size, fill_value=fill_value)
  if size is not None or fill_value is not None:
    raise ValueError("size and fill_value arguments cannot be used in three-term where function.")
  # eagerly, a bool Array condition and two Arrays of one shape, dtype and weak type: one
  # select of x's aval, cheaper than the cached executable (the same bits: a select is exact)
  if (type(condition) is _ArrayImpl and type(x) is _ArrayImpl and type(y) is _ArrayImpl
      and condition.dtype == dtypes.bool_ and x.aval == y.aval
      and condition.shape == x.shape and core._state.interp is core.eval_interpreter
      and not (x.aval.weak_type and x.dtype == dtypes.bool_)):  # weak bools: strong result
    return _dispatch.apply_known(lax_e.select_n_p, x.aval, (condition, y, x), {})
  return _where(condition, x, y)


@_library_function(jit=("_where", ()))
def _where(condition, x, y):
  check_arraylike("where", condition, x, y)
  condition = _asarray(condition)
  if condition.dtype != dtypes.bool_:
    condition = lax_e.ne(condition, _const(0, condition.dtype))
  if _key_arrays("where", (x, y)) is not None:
    # typed PRNG keys (as JAX): select on the raw key data, the condition broadcast over
    # the key-array shape and then along the trailing key dimensions
    shape = np.broadcast_shapes(condition.shape, x.shape, y.shape)
    c = broadcast_to(condition, shape)
    xb, yb = x._base_array, y._base_array
    kshape = tuple(xb.shape[x.ndim:])
    full = shape + kshape
    c = lax.broadcast_in_dim(c, full, tuple(range(len(shape))))
    xb = lax.broadcast_in_dim(xb, full, tuple(range(len(full) - xb.ndim, len(full))))
    yb = lax.broadcast_in_dim(yb, full, tuple(range(len(full) - yb.ndim, len(full))))
    return x._wrap(lax_e.select_n(c, yb, xb))
  x, y = promote_dtypes(x, y)
  c, x, y = broadcast_arrays(condition, x, y)
  return lax_e.select_n(c, y, x)


@_library_function(dynamic=("arr", "min", "max"), jit=("clip", ()))
def clip(arr=None, /, min=None, max=None):
  """Clip values to ``[min, max]`` (either bound may be None); where ``min > max`` the
  result is ``max``.  Complex inputs are rejected, as in JAX."""
  if arr is None:
    raise ValueError("No input was provided to the clip function.")
  check_arraylike("clip", arr)
  if any(iscomplexobj(t) for t in (arr, min, max)):
    raise ValueError("Clip received a complex value either through the input or the min/max "
                     "keywords. Complex values have no ordering and cannot be clipped. Please "
                     "convert to a real value or array by taking the real or imaginary "
                     "components via jax.numpy.real/imag respectively.")
  if min is not None:
    arr = ufuncs.maximum(min, arr)
  if max is not None:
    arr = ufuncs.minimum(max, arr)
  return _asarray(arr)


def select(condlist, choicelist, default=0):
  """The element of the first ``choicelist`` entry whose condition holds, else ``default``."""
  if len(condlist) != len(choicelist):
    raise ValueError("condlist must have length equal to choicelist "
                     f"({len(condlist)} vs {len(choicelist)})")
  if len(condlist) == 0:
    raise ValueError("condlist must be non-empty")
  check_arraylike("select", *condlist, *choicelist, default)
  conds = [_asarray(c) for c in condlist]
  choices = promote_dtypes(_asarray(default), *[_asarray(c) for c in choicelist])
  conds = broadcast_arrays(*conds)
  conds = [c if c.dtype == dtypes.bool_ else lax_e.ne(c, _const(0, c.dtype)) for c in conds]
  # which = index (1-based) of the first true condition, 0 (the default) if none
  i32 = dtypes.int32
  which = _full(conds[0].shape, 0, i32, False)
  for i in range(len(conds) - 1, -1, -1):
    which = lax_e.select_n(conds[i], which, _full(conds[0].shape, i + 1, i32, False))
  which, *choices = broadcast_arrays(which, *choices)
  return lax_e.select_n(which, *choices)


def choose(a, choices, out=None, mode="raise"):
  """``choices[a]`` elementwise (``mode`` 'raise' needs a concrete ``a``; 'wrap', 'clip')."""
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.choose is not supported.")
  check_arraylike("choose", a, *choices)
  if not dtypes.is_int(_value_dtype_weak(a)[0]):
    raise ValueError("`a` array must be integer typed")
  n = len(choices)
  if mode == "raise":
    arr = core.concrete_or_error(_asarray, a, "The error occurred because jnp.choose was "
                                 "jit-compiled with mode='raise'. Use mode='wrap' or "
                                 "mode='clip' instead.")
    data = np.asarray(arr._data())
    if np.any((data < 0) | (data >= n)):
      raise ValueError("invalid entry in choice array")
  elif mode == "wrap":
    arr = ufuncs.remainder(_asarray(a), n)
  elif mode == "clip":
    arr = clip(a, 0, n - 1)
  else:
    raise ValueError(f"mode={mode!r} not understood. Must be 'raise', 'wrap', or 'clip'")
  chs = promote_dtypes(*[_asarray(c) for c in choices])
  arr, *chs = broadcast_arrays(arr, *chs)
  chs = [_weak_like(c, False) for c in chs]
  if arr.dtype != dtypes.int32:
    arr = lax_e._convert_element_type(arr, dtypes.int32, False)
  return lax_e.select_n(arr, *chs)


# --- inserting and deleting -------------------------------------------------------------
def append(arr, values, axis=None):
  """``arr`` with ``values`` appended (both flattened when ``axis`` is None)."""
  if axis is None:
    return concatenate([ravel(arr), ravel(values)], 0)
  return concatenate([arr, values], axis=axis)


def insert(arr, obj, values, axis=None):
  """Insert ``values`` before the indices ``obj`` along ``axis``.

  Differs from JAX: ``obj`` must be concrete (JAX also accepts traced indices)."""
  check_arraylike("insert", arr, 0 if isinstance(obj, slice) else obj, values)
  a = _asarray(arr)
  values_arr = _asarray(values)
  if axis is None:
    a = lax.reshape(a, (a.size,))
    axis = 0
  axis = core.concrete_or_error(None, axis, "axis argument of jnp.insert()")
  axis = _canon_axis(axis, a.ndim)
  n_in = a.shape[axis]
  if isinstance(obj, slice):
    idx = np.arange(*obj.indices(n_in))
  else:
    idx = core.concrete_or_error(lambda v: np.asarray(v._data() if type(v) is ArrayImpl else v),
                                 obj, "'obj' argument of jnp.insert()")
  if idx.ndim > 1:
    raise ValueError("jnp.insert(): obj must be a slice, a one-dimensional array, or a scalar; "
                     f"got {obj}")
  if not np.issubdtype(idx.dtype, np.integer):
    if idx.size == 0 and not isinstance(obj, Array):
      idx = idx.astype(np.int64)
    else:
      raise ValueError(f"jnp.insert(): index array must be integer typed; got {obj}")
  vals = _const(values_arr, a.dtype)
  if vals.ndim < a.ndim:
    vals = lax.reshape(vals, (1,) * (a.ndim - vals.ndim) + vals.shape)
  if idx.size == 1:
    index = int(idx.reshape(-1)[0])
    if idx.ndim == 0:
      vals = moveaxis(vals, 0, axis)
    idx = np.full(vals.shape[axis], index)
  n_ins = np.broadcast_shapes(idx.shape, (vals.shape[axis],))[0]
  idx = np.broadcast_to(idx, (n_ins,))
  idx = np.where(idx < 0, idx + n_in, idx)
  idx = np.clip(idx, 0, n_in)
  order = np.argsort(idx, kind="stable")
  values_pos = idx.copy()
  values_pos[order] += np.arange(n_ins)
  out_len = n_in + n_ins
  gather = np.empty(out_len, np.int64)
  mask = np.ones(out_len, bool)
  mask[values_pos] = False
  gather[mask] = np.arange(n_in)
  gather[values_pos] = n_in + np.arange(n_ins)
  target = list(a.shape)
  target[axis] = n_ins
  vals = broadcast_to(vals, tuple(target))
  joined = lax.concatenate([_weak_like(a, False), vals], axis)
  return _weak_like(_take(joined, gather, axis), a.weak_type)


def delete(arr, obj, axis=None, *, assume_unique_indices=False):
  """``arr`` without the entries ``obj`` (int, slice, integer or boolean array) along
  ``axis``.  Array ``obj`` must be concrete unless ``assume_unique_indices=True``."""
  a = _arr("delete", arr)
  if axis is None:
    a = lax.reshape(a, (a.size,))
    axis = 0
  axis = _canon_axis(axis, a.ndim)
  n = a.shape[axis]
  try:
    i = operator.index(obj)
  except TypeError:
    pass
  else:
    i = _canon_axis(i, n)
    return lax.concatenate([lax.slice_in_dim(a, 0, i, axis=axis),
                            lax.slice_in_dim(a, i + 1, n, axis=axis)], axis)
  if isinstance(obj, slice):
    keep = np.ones(n, bool)
    keep[np.arange(n)[obj]] = False
    return _take(a, np.nonzero(keep)[0], axis)
  check_arraylike("delete", a, obj)
  if hasattr(obj, "__jax_array__"):
    obj = obj.__jax_array__()
  if dtypes.is_int(_value_dtype_weak(obj)[0]) and assume_unique_indices and _is_tracer(obj):
    return _delete_unique_traced(a, obj, axis)
  obj_np = core.concrete_or_error(lambda v: np.asarray(v._data() if type(v) is ArrayImpl else v),
                                  obj, "'obj' array argument of jnp.delete()")
  if np.issubdtype(obj_np.dtype, np.integer):
    mask = np.ones(n, bool)
    mask[obj_np] = False
  elif obj_np.dtype == bool:
    if obj_np.shape != (n,):
      raise ValueError("np.delete(arr, obj): for boolean indices, obj must be one-dimensional "
                       "with length matching specified axis.")
    mask = ~obj_np
  else:
    raise ValueError(f"np.delete(arr, obj): got obj.dtype={obj_np.dtype}; must be integer or bool.")
  return _take(a, np.nonzero(mask)[0], axis)


def _delete_unique_traced(a, obj, axis):
  """Delete traced, unique integer indices: index i of the result reads source element
  ``i + #(sorted_obj - rank <= i)``."""
  i32 = dtypes.int32
  n = a.shape[axis]
  obj = lax_e._convert_element_type(lax.reshape(obj, (obj.size,)), i32, False)
  k = obj.shape[0]
  obj = lax_e.select_n(lax_e.lt(obj, _const(0, i32)), obj, lax_e.add(obj, _const(n, i32)))
  obj = lax_e.clamp(_const(0, i32), obj, _const(n, i32))
  obj = lax.sort(obj, dimension=0)
  obj = lax_e.sub(obj, lax.broadcasted_iota(i32, (k,), 0))
  m = n - k
  i = lax.broadcasted_iota(i32, (m,), 0)
  hits = lax_e.ge(lax.broadcast_in_dim(i, (k, m), (1,)), lax.broadcast_in_dim(obj, (k, m), (0,)))
  counts = lax.reduce_sum(lax_e._convert_element_type(hits, i32, False), (0,))
  return _take(a, lax_e.add(i, counts), axis)


def resize(a, new_shape):
  """``a`` flattened, repeated cyclically and reshaped to ``new_shape``."""
  check_arraylike("resize", a)
  new_shape = _index_tuple(new_shape)
  if any(d < 0 for d in new_shape):
    raise ValueError("all elements of `new_shape` must be non-negative")
  arr = ravel(a)
  new_size = math.prod(new_shape)
  if arr.size == 0 or new_size == 0:
    return zeros_like(arr, shape=new_shape)
  reps = -(-new_size // arr.size)
  arr = tile(arr, reps)
  arr = lax.slice_in_dim(arr, 0, new_size)
  return lax.reshape(arr, new_shape)


def trim_zeros(filt, trim="fb", axis=None):
  """Trim leading ('f') and/or trailing ('b') all-zero slices (``filt`` must be
  concrete: the result shape depends on its values)."""
  filt = _arr("trim_zeros", filt)
  data = core.concrete_or_error(lambda v: np.asarray(v._data()), filt,
                                "Error arose in the `filt` argument of trim_zeros()")
  axes = set(range(filt.ndim)) if axis is None else set(_axes(axis, filt.ndim))
  t = trim.lower()
  if not axes or ("f" not in t and "b" not in t):
    return filt
  starts, stops = [], []
  for ax in range(filt.ndim):
    if ax not in axes:
      starts.append(0)
      stops.append(filt.shape[ax])
      continue
    other = tuple(i for i in range(filt.ndim) if i != ax)
    mask = np.any(data != 0, axis=other) if other else data != 0
    if not mask.any():
      starts.append(0)
      stops.append(0)
      continue
    starts.append(int(mask.argmax()) if "f" in t else 0)
    stops.append(filt.shape[ax] - int(mask[::-1].argmax()) if "b" in t else filt.shape[ax])
  if starts == [0] * filt.ndim and stops == list(filt.shape):
    return filt
  return lax.slice(filt, tuple(starts), tuple(stops))


# --- pad --------------------------------------------------------------------------------
def _concrete_leaves(x, context):
  if isinstance(x, (list, tuple)):
    return type(x)(_concrete_leaves(v, context) for v in x)
  x = core.concrete_or_error(None, x, context)
  return x._data() if type(x) is ArrayImpl else x


def _broadcast_to_pairs(nvals, nd, name):
  """A ``(before, after)`` pair per axis from a scalar, a pair, or per-axis pairs (all
  concrete), with JAX's errors."""
  leaves = _concrete_leaves(nvals, f"{name} argument of jnp.pad")
  try:
    arr = np.asarray(leaves)
  except ValueError as e:
    if "inhomogeneous" in str(e):
      raise TypeError(f"`{name}` entries must be the same shape: {nvals}") from e
    raise
  if arr.shape == (nd, 2):
    return tuple((v[0], v[1]) for v in arr)
  if arr.shape == (1, 2):
    return ((arr[0, 0], arr[0, 1]),) * nd
  if arr.shape == (2,):
    return ((arr[0], arr[1]),) * nd
  if arr.shape == (1,):
    return ((arr[0], arr[0]),) * nd
  if arr.shape == ():
    return ((arr[()], arr[()]),) * nd
  raise ValueError(f"jnp.pad: {name} with nd={nd} has unsupported shape {arr.shape}. Valid "
                   f"shapes are ({nd}, 2), (1, 2), (2,), (1,), or ().")


def _is_dim(v):
  return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def _check_no_padding(width, mode):
  if width[0] or width[1]:
    raise ValueError(f"Cannot apply '{mode}' padding to empty axis")


def _pad_constant(x, pw, constant_values):
  nd = x.ndim
  cv = _const(_asarray(constant_values), x.dtype, x.weak_type)
  if cv.ndim == 0:
    return lax.pad(x, cv, tuple((lo, hi, 0) for lo, hi in pw))
  if cv.ndim == 1:
    if cv.shape[-1] == 1:
      return lax.pad(x, lax.reshape(cv, ()), tuple((lo, hi, 0) for lo, hi in pw))
    if cv.shape[-1] != 2:
      raise ValueError(f"jnp.pad: constant_values has unsupported shape {cv.shape}. If the "
                       "shape is 1D or 2D, the last dimension must be of size 1 or 2.")
  cv = broadcast_to(cv, (nd, 2))
  for i in range(nd):
    row = lax.index_in_dim(cv, i, 0, keepdims=False)
    widths = [(0, 0, 0)] * nd
    if pw[i][0]:
      widths[i] = (pw[i][0], 0, 0)
      x = lax.pad(x, lax.index_in_dim(row, 0, 0, keepdims=False), tuple(widths))
    if pw[i][1]:
      widths[i] = (0, pw[i][1], 0)
      x = lax.pad(x, lax.index_in_dim(row, 1, 0, keepdims=False), tuple(widths))
  return x


def _pad_wrap(x, pw):
  for i in range(x.ndim):
    n = x.shape[i]
    if n == 0:
      _check_no_padding(pw[i], "wrap")
      continue
    lrep, lrem = divmod(pw[i][0], n)
    rrep, rrem = divmod(pw[i][1], n)
    parts = []
    if lrem:
      parts.append(lax.slice_in_dim(x, n - lrem, n, axis=i))
    parts += [x] * (lrep + rrep + 1)
    if rrem:
      parts.append(lax.slice_in_dim(x, 0, rrem, axis=i))
    if len(parts) > 1:
      x = lax.concatenate(parts, i)
  return x


def _pad_symmetric_or_reflect(x, pw, mode, reflect_type):
  if reflect_type not in ("even", "odd"):
    raise ValueError(f"reflect_type must be 'even' or 'odd', got {reflect_type!r}")
  for i in range(x.ndim):
    n = x.shape[i]
    if n == 0:
      _check_no_padding(pw[i], mode)
      continue
    if pw[i] == (0, 0):
      continue
    offset = 1 if (mode == "reflect" and n > 1) else 0
    for before, padding in ((True, pw[i][0]), (False, pw[i][1])):
      edge = lax.slice_in_dim(x, 0, 1, axis=i) if before else lax.slice_in_dim(x, -1, None, axis=i)
      while padding > 0:
        cur = _min(padding, n - offset)
        padding -= cur
        if before:
          piece = lax.slice_in_dim(x, offset, offset + cur, axis=i)
        else:
          stop = None if (mode == "symmetric" or n == 1) else -1
          piece = lax.slice_in_dim(x, -(cur + offset), stop, axis=i)
        piece = lax.rev(piece, (i,))
        if reflect_type == "odd":
          piece = ufuncs.subtract(ufuncs.multiply(2, edge), piece)
          if n > 1:
            edge = lax.slice_in_dim(piece, 0, 1, axis=i) if before else \
                lax.slice_in_dim(piece, -1, None, axis=i)
        x = lax.concatenate([piece, x] if before else [x, piece], i)
  return x


def _repeat_along(v, k, axis):
  shape = list(v.shape)
  shape[axis] = k
  return lax.broadcast_in_dim(v, tuple(shape), tuple(range(v.ndim)))


def _pad_edge(x, pw):
  for i in range(x.ndim):
    n = x.shape[i]
    if n == 0:
      _check_no_padding(pw[i], "edge")
      continue
    before = _repeat_along(lax.slice_in_dim(x, 0, 1, axis=i), pw[i][0], i)
    after = _repeat_along(lax.slice_in_dim(x, n - 1, n, axis=i), pw[i][1], i)
    x = lax.concatenate([before, x, after], i)
  return x


def _pad_linear_ramp(x, pw, end_values):
  from pyjax._src.numpy.creation import linspace
  for ax in range(x.ndim):
    edge_before = lax.squeeze(lax.slice_in_dim(x, 0, 1, axis=ax), (ax,))
    edge_after = lax.squeeze(lax.slice_in_dim(x, -1, None, axis=ax), (ax,))
    before = linspace(end_values[ax][0], edge_before, pw[ax][0], endpoint=False,
                      dtype=x.dtype, axis=ax)
    after = linspace(end_values[ax][1], edge_after, pw[ax][1], endpoint=False,
                     dtype=x.dtype, axis=ax)
    before = _weak_like(before, x.weak_type)
    after = _weak_like(lax.rev(after, (ax,)), x.weak_type)
    x = lax.concatenate([before, x, after], ax)
  return x


def _pad_stats(x, pw, stat_length, mode):
  import pyjax.numpy as jnp
  fn = {"maximum": jnp.max, "minimum": jnp.min, "mean": jnp.mean,
        "median": jnp.median}[mode]
  for i in range(x.ndim):
    if stat_length is None:
      sb = fn(x, axis=i, keepdims=True)
      sa = sb
    else:
      lb, la = (int(v) for v in stat_length[i])
      if lb == 0 or la == 0:
        raise ValueError("stat_length of 0 yields no value for padding")
      n = x.shape[i]
      lb, la = _min(lb, n), _min(la, n)
      sb = fn(lax.slice_in_dim(x, 0, lb, axis=i), axis=i, keepdims=True)
      sa = fn(lax.slice_in_dim(x, -la, None, axis=i), axis=i, keepdims=True)
    if dtypes.is_int(x.dtype):
      sb, sa = ufuncs.round(sb), ufuncs.round(sa)
    sb = lax_e._convert_element_type(sb, x.dtype, x.weak_type)
    sa = lax_e._convert_element_type(sa, x.dtype, x.weak_type)
    x = lax.concatenate([_repeat_along(sb, pw[i][0], i), x, _repeat_along(sa, pw[i][1], i)], i)
  return x


_pad_kwargs = {"empty": (), "edge": (), "wrap": (), "constant": ("constant_values",),
               "linear_ramp": ("end_values",), "maximum": ("stat_length",),
               "mean": ("stat_length",), "median": ("stat_length",),
               "minimum": ("stat_length",), "reflect": ("reflect_type",),
               "symmetric": ("reflect_type",)}


def pad(array, pad_width, mode="constant", **kwargs):
  """Pad like ``numpy.pad``: modes constant, edge, reflect, symmetric, wrap, linear_ramp,
  maximum, minimum, mean, median, empty (zeros, as in JAX), or a callable
  ``mode(vector, pad_width, iaxis, kwargs)`` applied along each axis.  ``pad_width``,
  ``end_values`` and ``stat_length`` must be concrete; ``constant_values`` may be traced.

  Differs from JAX: a callable mode is applied row by row (JAX vmaps it)."""
  x = _arr("pad", array)
  pw = _broadcast_to_pairs(pad_width, x.ndim, "pad_width")
  if pw and not all(_is_dim(a) and _is_dim(b) for a, b in pw):
    raise TypeError("`pad_width` must be of integral type.")
  pw = tuple((int(a), int(b)) for a, b in pw)
  if callable(mode):
    return _pad_callable(x, pw, mode, kwargs)
  if mode not in _pad_kwargs:
    raise NotImplementedError(f"Unimplemented padding mode '{mode}' for np.pad.")
  bad = set(kwargs) - set(_pad_kwargs[mode])
  if bad:
    raise ValueError(f"unsupported keyword arguments for mode '{mode}': {bad}")
  if x.ndim == 0:
    return x
  if any(a < 0 or b < 0 for a, b in pw):
    raise ValueError("index can't contain negative values")
  if mode == "constant":
    return _pad_constant(x, pw, kwargs.get("constant_values", 0))
  if mode == "empty":
    return lax.pad(x, _const(0, x.dtype, x.weak_type), tuple((a, b, 0) for a, b in pw))
  if mode == "wrap":
    return _pad_wrap(x, pw)
  if mode in ("reflect", "symmetric"):
    return _pad_symmetric_or_reflect(x, pw, mode, kwargs.get("reflect_type", "even"))
  if mode == "edge":
    return _pad_edge(x, pw)
  if mode == "linear_ramp":
    ev = _broadcast_to_pairs(kwargs.get("end_values", 0), x.ndim, "end_values")
    return _pad_linear_ramp(x, pw, ev)
  sl = kwargs.get("stat_length")
  if sl is not None:
    sl = _broadcast_to_pairs(sl, x.ndim, "stat_length")
  return _pad_stats(x, pw, sl, mode)


def _pad_callable(x, pw, fn, kwargs):
  """Zero-pad, then replace each 1-D vector along each axis by
  ``fn(vector, (before, after), iaxis, kwargs)``."""
  x = _pad_constant(x, pw, 0)
  for ax in range(x.ndim):
    moved = moveaxis(x, ax, -1)
    rows = lax.reshape(moved, (math.prod(moved.shape[:-1]), moved.shape[-1]))
    outs = [_asarray(fn(lax.index_in_dim(rows, r, 0, keepdims=False), pw[ax], ax, kwargs))
            for r in range(rows.shape[0])]
    if outs:
      rows = stack(outs)
    x = moveaxis(lax.reshape(rows, moved.shape), -1, ax)
  return x


# --- block ------------------------------------------------------------------------------
def block(arrays):
  """Assemble an array from nested lists of blocks (tuples are rejected, as in JAX)."""
  out, _ = _block(arrays)
  return out


def _block(xs):
  if isinstance(xs, tuple):
    raise ValueError(f"jax.numpy.block does not allow tuples, got {xs}")
  if isinstance(xs, list):
    if len(xs) == 0:
      raise ValueError("jax.numpy.block does not allow empty list arguments")
    parts, depths = zip(*[_block(x) for x in xs])
    if any(d != depths[0] for d in depths[1:]):
      raise ValueError("Mismatched list depths in jax.numpy.block")
    rank = _max(depths[0], _max(p.ndim for p in parts))
    parts = [p if p.ndim >= rank else lax.reshape(p, (1,) * (rank - p.ndim) + p.shape)
             for p in parts]
    return concatenate(parts, axis=-depths[0]), depths[0] + 1
  return _asarray(xs), 1


# --- introspection ----------------------------------------------------------------------
def _warn_arraylike(name, a):
  if not (is_arraylike(a) or np.isscalar(a)):
    warnings.warn(f"{name} requires ndarray or scalar arguments, got {type(a)} at position 0. "
                  "In a future JAX release this will be an error.", DeprecationWarning,
                  stacklevel=3)


def ndim(a):
  """Number of dimensions (lists are accepted with a DeprecationWarning, as in JAX)."""
  if hasattr(a, "ndim"):
    return a.ndim
  _warn_arraylike("ndim", a)
  m = getattr(a, "__jax_array__", None)
  return np.ndim(m() if m is not None else a)


def shape(a):
  """The shape tuple (lists are accepted with a DeprecationWarning, as in JAX)."""
  if hasattr(a, "shape"):
    return a.shape
  _warn_arraylike("shape", a)
  m = getattr(a, "__jax_array__", None)
  return np.shape(m() if m is not None else a)


def size(a, axis=None):
  """Number of elements (along ``axis``, if given)."""
  _warn_arraylike("size", a)
  if axis is None and hasattr(a, "size"):
    return a.size
  s = a.shape if hasattr(a, "shape") else np.shape(a)
  if axis is None:
    return math.prod(s)
  axes = _axes(axis, len(s))
  if len(set(axes)) != len(axes):
    raise ValueError(f"repeated axis: {axis}")
  return math.prod(s[i] for i in axes)


def isscalar(element):
  """True for Python/NumPy scalars and 0-d arrays (JAX's rule, which differs from NumPy's
  for 0-d arrays)."""
  if np.isscalar(element):
    return True
  if isinstance(element, (np.ndarray, Array)):
    return element.ndim == 0
  if getattr(element, "__jax_array__", None) is not None:
    return _asarray(element).ndim == 0
  return False


def iscomplexobj(x):
  """True if ``x`` has a complex dtype (or is a complex scalar)."""
  if type(x) is ArrayImpl:   # the common case first (eager clip calls this three times)
    return x.aval.dtype.kind == "c"
  if isinstance(x, (complex, np.complexfloating)):
    return True
  if x is None or isinstance(x, (bool, int, float, str, np.generic)):
    return False
  try:
    typ = x.dtype.type
  except AttributeError:
    typ = _asarray(x).dtype.type
  return dtypes.issubdtype(typ, np.complexfloating)


def isrealobj(x):
  """``not iscomplexobj(x)``."""
  return not iscomplexobj(x)
