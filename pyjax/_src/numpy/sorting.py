"""Sorting and searching of jax.numpy: sort, argsort, lexsort, partition, argpartition,
sort_complex and searchsorted, on lax.sort / lax.top_k / lax.gather.

The order is lax.sort's total order: NaNs sort after everything (and compare equal to
each other), -0.0 and 0.0 compare equal, complex numbers order by (real, imag).
"""
from __future__ import annotations

import math

import numpy as np

from pyjax._src import dtypes
from pyjax._src.numpy.reductions import (lax, _asarray, _convert, _canonicalize_axis,
                                         _full, _const)
from pyjax._src.numpy.util import check_arraylike, promote_dtypes
from pyjax._src.numpy.util import library_function as _library_function

__all__ = ["sort", "argsort", "lexsort", "partition", "argpartition", "sort_complex",
           "searchsorted"]


def _index_dtype(n):
  """The default int, or int64 for dimensions int32 can't index (as JAX)."""
  if n > np.iinfo(np.int32).max:
    return dtypes.canonicalize_dtype(dtypes.int64)
  return dtypes.default_int_dtype()


def _flatten(x):
  return lax.reshape(x, (math.prod(x.shape),))


def _swap_to_last(x, axis):
  if axis == x.ndim - 1:
    return x
  perm = list(range(x.ndim))
  perm[axis], perm[-1] = perm[-1], perm[axis]
  return lax.transpose(x, tuple(perm))


@_library_function(jit=('sort', ('axis', 'kind', 'order', 'stable', 'descending')))
def sort(a, axis=-1, *, kind=None, order=None, stable=True, descending=False):
  """Sorted copy along ``axis`` (``None`` flattens).  ``kind`` and ``order`` are not
  supported (TypeError, as JAX); use ``stable``/``descending``."""
  arr = _asarray("sort", a)
  if kind is not None:
    raise TypeError("'kind' argument to sort is not supported. Use stable=True or "
                    "stable=False to specify sort stability.")
  if order is not None:
    raise TypeError("'order' argument to sort is not supported.")
  if axis is None:
    arr = _flatten(arr)
    axis = 0
  dim = _canonicalize_axis(axis, arr.ndim)
  result = lax.sort(arr, dimension=dim, is_stable=stable)
  return lax.rev(result, (dim,)) if descending else result


@_library_function(jit=('argsort', ('axis', 'kind', 'order', 'stable', 'descending', 'dtype')))
def argsort(a, axis=-1, *, kind=None, order=None, stable=True, descending=False, dtype=None):
  """Indices that sort ``a`` along ``axis``; a stable descending sort keeps equal elements
  in their original order (like JAX)."""
  arr = _asarray("argsort", a)
  if kind is not None:
    raise TypeError("'kind' argument to argsort is not supported. Use stable=True or "
                    "stable=False to specify sort stability.")
  if order is not None:
    raise TypeError("'order' argument to argsort is not supported.")
  if axis is None:
    arr = _flatten(arr)
    axis = 0
  dim = _canonicalize_axis(axis, arr.ndim)
  if dtype is not None:
    idx_dtype = dtypes.check_user_dtype(dtype, "argsort")
  else:
    idx_dtype = _index_dtype(arr.shape[dim])
  iota = lax.broadcasted_iota(idx_dtype, arr.shape, dim)
  if descending and stable:
    arr = lax.rev(arr, (dim,))
    iota = lax.rev(iota, (dim,))
  _, indices = lax.sort_key_val(arr, iota, dimension=dim, is_stable=stable)
  return lax.rev(indices, (dim,)) if descending else indices


def _partition_prep(name, a, kth, axis):
  arr = _asarray("partition", a)
  if dtypes.is_complex(arr.dtype):
    raise NotImplementedError(f"jnp.{name} for complex dtype is not implemented.")
  axis = _canonicalize_axis(axis, arr.ndim)
  kth = _canonicalize_axis(kth, arr.shape[axis])
  return _swap_to_last(arr, axis), axis, kth


def _negated_for_bottom(arr):
  """A key whose top_k are ``arr``'s smallest values (unsigned ints wrap around)."""
  if dtypes.is_unsigned(arr.dtype):
    return lax.neg(lax.add(arr, _const(arr, 1)))
  return lax.neg(arr)


def partition(a, kth, axis=-1):
  """The ``kth`` smallest element moves to position ``kth``; smaller ones (ascending)
  before it, larger ones (descending, as JAX's top_k yields them) after it."""
  arr, axis, kth = _partition_prep("partition", a, kth, axis)
  bottom = lax.neg(lax.top_k(_negated_for_bottom(arr), kth + 1)[0])
  if dtypes.is_unsigned(arr.dtype):
    bottom = lax.sub(bottom, _const(bottom, 1))
  top = lax.top_k(arr, arr.shape[-1] - kth - 1)[0]
  out = lax.concatenate([bottom, top], arr.ndim - 1)
  return _swap_to_last(out, axis)


def argpartition(a, kth, axis=-1):
  """Indices that would partition ``a``: the kth+1 smallest first (ascending, like
  jnp.partition), then the other indices in increasing index order (as JAX)."""
  arr, axis, kth = _partition_prep("argpartition", a, kth, axis)
  n = arr.shape[-1]
  bottom_ind = lax.top_k(_negated_for_bottom(arr), kth + 1)[1]
  # every index not among bottom_ind, in increasing order: top_k of a 0/1 mask
  lead = tuple(arr.shape[:-1])
  nd = arr.ndim
  grid = lead + (kth + 1, n)
  iota = lax.broadcasted_iota(bottom_ind.dtype, grid, nd)
  hits = lax.eq(iota, lax.broadcast_in_dim(bottom_ind, grid, tuple(range(nd))))
  taken = lax.reduce_or(hits, (nd - 1,))
  proxy = lax.select(taken, _full(arr.shape, 0.0, dtypes.float32),
                     _full(arr.shape, 1.0, dtypes.float32))
  top_ind = lax.top_k(proxy, n - kth - 1)[1]
  out = lax.concatenate([bottom_ind, top_ind], nd - 1)
  return _swap_to_last(out, axis)


def sort_complex(a):
  """Sort along the last axis, returning a complex array."""
  a = _asarray("sort_complex", a)
  a = lax.sort(a, dimension=-1)
  return _convert(a, dtypes.to_complex_dtype(a.dtype))


def lexsort(keys, axis=-1):
  """Indirect stable sort by several keys; the last key is the primary one."""
  keys = tuple(keys)
  check_arraylike("lexsort", *keys)
  key_arrays = tuple(_asarray("lexsort", k) for k in keys)
  if len(key_arrays) == 0:
    raise TypeError("need sequence of keys with len > 0 in lexsort")
  if len({tuple(k.shape) for k in key_arrays}) > 1:
    raise ValueError("all keys need to be the same shape")
  if key_arrays[0].ndim == 0:
    return _full((), 0, dtypes.default_int_dtype())
  axis = _canonicalize_axis(axis, key_arrays[0].ndim)
  shape = key_arrays[0].shape
  iota = lax.broadcasted_iota(_index_dtype(shape[axis]), shape, axis)
  return lax.sort((*key_arrays[::-1], iota), dimension=axis, num_keys=len(key_arrays))[-1]


# --- searchsorted -----------------------------------------------------------------------
def _total_lt(x, y):
  """x < y in lax.sort's order (NaN last, -0.0 == 0.0, complex by (real, imag))."""
  d = x.dtype
  if dtypes.is_complex(d):
    xr, xi, yr, yi = lax.real(x), lax.imag(x), lax.real(y), lax.imag(y)
    return lax.bitwise_or(_total_lt(xr, yr),
                          lax.bitwise_and(_total_eq(xr, yr), _total_lt(xi, yi)))
  if dtypes.is_float(d):
    x_nan, y_nan = lax.ne(x, x), lax.ne(y, y)
    return lax.bitwise_or(lax.lt(x, y), lax.bitwise_and(y_nan, lax.bitwise_not(x_nan)))
  return lax.lt(x, y)


def _total_eq(x, y):
  if dtypes.is_float(x.dtype):
    return lax.bitwise_or(lax.eq(x, y), lax.bitwise_and(lax.ne(x, x), lax.ne(y, y)))
  return lax.eq(x, y)


def _total_le(x, y):
  return lax.bitwise_not(_total_lt(y, x))


def _take_1d(arr, idx):
  """arr[idx] for a 1-D ``arr`` and an in-bounds integer index array."""
  dnums = lax.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,),
                                     start_index_map=(0,))
  return lax.gather(arr, lax.reshape(idx, tuple(idx.shape) + (1,)), dnums, (1,),
                    mode=lax.GatherScatterMode.PROMISE_IN_BOUNDS)


_METHODS = ["compare_all", "scan", "scan_unrolled", "sort"]


def searchsorted(a, v, side="left", sorter=None, *, method="scan"):
  """Insertion indices of ``v`` into the sorted 1-D ``a``.  Every ``method`` gives the
  same result; 'scan', 'scan_unrolled' and 'sort' run an unrolled binary search
  (log2(len(a)) gathers), 'compare_all' compares every pair."""
  if sorter is None:
    check_arraylike("searchsorted", a, v)
  else:
    check_arraylike("searchsorted", a, v, sorter)
  a, v = _asarray("searchsorted", a), _asarray("searchsorted", v)
  if a.ndim != 1:
    raise ValueError("a should be 1-dimensional")
  a, v = promote_dtypes(a, v)
  if sorter is not None:
    sorter = _asarray("searchsorted", sorter)
    a = _take_1d(a, sorter)
  if side not in ("left", "right"):
    raise ValueError(f"invalid argument side={side!r}, expected 'left' or 'right'")
  if method not in _METHODS:
    raise ValueError(f"invalid argument method={method!r}, expected one of {_METHODS}")
  n = a.shape[0]
  out_dtype = dtypes.int32 if n <= np.iinfo(np.int32).max else \
      dtypes.canonicalize_dtype(dtypes.int64)
  if n == 0:
    return _full(v.shape, 0, out_dtype)
  if method == "compare_all":
    shape = (n,) + tuple(v.shape)
    aa = lax.broadcast_in_dim(a, shape, (0,))
    vv = lax.broadcast_in_dim(v, shape, tuple(range(1, len(shape))))
    cmp = _total_lt(aa, vv) if side == "left" else _total_le(aa, vv)
    return lax.reduce_sum(_convert(cmp, out_dtype), (0,))
  go_left = _total_le if side == "left" else _total_lt
  work = dtypes.int32 if n < np.iinfo(np.int32).max else dtypes.int64
  low = _full(v.shape, 0, work)
  high = _full(v.shape, n, work)
  two = np.array(2, work)
  for _ in range(int(np.ceil(np.log2(n + 1)))):
    mid = lax.add(low, lax.div(lax.sub(high, low), two))
    left = go_left(v, _take_1d(a, mid))
    low, high = lax.select(left, low, mid), lax.select(left, mid, high)
  return _convert(high, out_dtype)
