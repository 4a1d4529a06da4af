"""Set routines of jax.numpy: unique (and the array-API unique_*), union1d, intersect1d,
setdiff1d, setxor1d and isin.

Results whose length depends on the values need concrete inputs, unless ``size=`` is
given: then the result has exactly ``size`` entries, padded with ``fill_value`` (by
default the smallest result value, as in JAX), and the function works under ``jit``.
"""
from __future__ import annotations

import math
import operator
from typing import NamedTuple

import numpy as np

from pyjax._src import core, dtypes
from pyjax._src.lax import lax_api as lax
from pyjax._src.numpy import manipulation as _manip
from pyjax._src.numpy import reductions as _red
from pyjax._src.numpy import sorting as _sorting
from pyjax._src.numpy import ufuncs as _uf
from pyjax._src.numpy.util import check_arraylike, promote_dtypes

__all__ = ["unique", "unique_all", "unique_counts", "unique_inverse", "unique_values",
           "union1d", "intersect1d", "setdiff1d", "setxor1d", "isin"]

UNIQUE_SIZE_HINT = (
    "To make jnp.unique() compatible with JIT and other transforms, you can specify a "
    "concrete value for the size argument, which will determine the output size.")


def _arr(name, x):
  check_arraylike(name, x)
  return _red._asarray(name, x)


def _int():
  return dtypes.default_int_dtype()


def _iota(n, dtype=None):
  return lax.iota(_int() if dtype is None else dtype, n)


def _nonzero1(mask, size, fill_value=0):
  """Positions of the True entries of a 1-D bool ``mask``: the first ``size`` of them,
  padded with ``fill_value`` (works on traced masks)."""
  n = mask.shape[0]
  d = _int()
  pos = lax.sub(_red.cumsum(lax.convert_element_type(mask, d)), np.array(1, d))
  pos = _red._where(mask, pos, np.array(size, d))
  out = lax.full((size,), fill_value, d)
  return out.at[pos].set(_iota(n), mode="drop")


def _concrete_nonzero(mask, context):
  m = core.concrete_or_error(np.asarray, mask, context)
  return np.nonzero(m)[0].astype(_int())


def _take0(x, idx):
  """x[idx] along axis 0 for integer idx (NumPy or traced)."""
  return x[idx]


def _unique_sorted_mask(ar, axis, equal_nan):
  aux = _manip.moveaxis(ar, axis, 0)
  if dtypes.is_complex(aux.dtype):
    # NaN anywhere in a complex value: make the whole value NaN so all NaNs sort together
    aux = _red._where(_uf.isnan(aux), np.array(np.nan, aux.dtype), aux)
  size, *rest = aux.shape
  if math.prod(rest) == 0:
    size = 1
    perm = lax.full((1,), 0, _int())
  else:
    keys = lax.transpose(lax.reshape(aux, (size, math.prod(rest))), (1, 0))
    if keys.shape[0] == 1:
      perm = _sorting.argsort(keys[0], stable=True)
    else:
      perm = _sorting.lexsort(tuple(keys[i] for i in range(keys.shape[0] - 1, -1, -1)))
  aux = aux[perm]
  if aux.size:
    a, b = aux[1:], aux[:-1]
    neq = lax.ne(a, b)
    if dtypes.is_inexact(aux.dtype) and equal_nan:
      both_nan = _uf.logical_and(_uf.isnan(a), _uf.isnan(b))
      neq = _uf.logical_and(neq, _uf.logical_not(both_nan))
    if aux.ndim > 1:
      neq = _red.any(neq, axis=tuple(range(1, aux.ndim)))
    mask = _manip.concatenate([lax.full((1,), True, dtypes.bool_), neq])
  else:
    mask = lax.full((size,), False, dtypes.bool_)
  return aux, mask, perm


def _unique(ar, axis, return_index=False, return_inverse=False, return_counts=False,
            equal_nan=True, size=None, fill_value=None, return_true_size=False):
  if ar.shape[axis] == 0 and size and fill_value is None:
    raise ValueError("jnp.unique: for zero-sized input with nonzero size argument, "
                     "fill_value must be specified")
  aux, mask, perm = _unique_sorted_mask(ar, axis, equal_nan)
  if size is None:
    ind = _concrete_nonzero(mask, "The error arose in jnp.unique(). " + UNIQUE_SIZE_HINT)
  else:
    ind = _nonzero1(mask, size)
  result = _take0(aux, ind) if aux.size else aux
  if size is not None and fill_value is not None:
    fv = lax.convert_element_type(_red._asarray("unique", fill_value), result.dtype)
    if result.shape[0]:
      n_true = _red.sum(mask)
      valid = lax.lt(_iota(size), n_true)
      valid = lax.expand_dims(valid, tuple(range(1, result.ndim)))
      result = _red._where(valid, result, fv)
    else:
      result = lax.full((size,) + result.shape[1:], 0, result.dtype)
      result = _red._where(True, fv, result)
  result = _manip.moveaxis(result, 0, axis)
  ret = (result,)
  d = _int()
  if return_index:
    ret += (_take0(perm, ind) if aux.size else perm,)
  if return_inverse:
    if aux.size:
      imask = lax.sub(_red.cumsum(lax.convert_element_type(mask, d)), np.array(1, d))
      inv = lax.full(mask.shape, 0, d).at[perm].set(imask)
    else:
      inv = lax.full((ar.shape[axis],), 0, d)
    ret += (inv,)
  if return_counts:
    if aux.size:
      n = mask.shape[0]
      if size is None:
        idx = np.append(ind, n).astype(d)
        ret += (lax.convert_element_type(idx[1:] - idx[:-1], d),)
      else:
        idx = _nonzero1(mask, size + 1)
        tail = idx[1:]
        tail = _red._where(lax.ne(tail, np.array(0, d)), tail, np.array(n, d))
        idx = _manip.concatenate([idx[:1], tail])
        ret += (lax.sub(idx[1:], idx[:-1]),)
    elif ar.shape[axis]:
      ret += (lax.full((1,), ar.shape[axis], d),)
    else:
      ret += (lax.full((0,), 0, d),)
  if return_true_size:
    ret += (_red.sum(mask),)
  return ret[0] if len(ret) == 1 else ret


def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None, *,
           equal_nan=True, size=None, fill_value=None, sorted=True):
  """Sorted unique values (of the flattened array, or unique slices along ``axis``),
  optionally with first-occurrence indices, inverse indices (shaped like ``ar`` when
  ``axis`` is None) and counts.  ``size``/``fill_value`` give a fixed-size result usable
  under jit."""
  arr = _arr("unique", ar)
  if size is None:
    arr = core.concrete_or_error(None, arr, "The error arose for the first argument of "
                                 "jnp.unique(). " + UNIQUE_SIZE_HINT)
  else:
    size = core.concrete_or_error(operator.index, size, "The error arose for the size "
                                  "argument of jnp.unique(). " + UNIQUE_SIZE_HINT)
  shape = arr.shape
  if axis is None:
    axis_int = 0
    arr = _manip.ravel(arr)
  else:
    from pyjax._src.numpy.util import canonicalize_axis
    axis_int = canonicalize_axis(axis, arr.ndim)
  result = _unique(arr, axis_int, return_index, return_inverse, return_counts,
                   equal_nan=equal_nan, size=size, fill_value=fill_value)
  if return_inverse and axis is None:
    i = 2 if return_index else 1
    result = (*result[:i], lax.reshape(result[i], shape), *result[i + 1:])
  return result


class _UniqueAllResult(NamedTuple):
  values: object
  indices: object
  inverse_indices: object
  counts: object


class _UniqueCountsResult(NamedTuple):
  values: object
  counts: object


class _UniqueInverseResult(NamedTuple):
  values: object
  inverse_indices: object


def unique_all(x, /, *, size=None, fill_value=None):
  """Array-API unique_all: (values, indices, inverse_indices, counts); NaNs distinct."""
  x = _arr("unique_all", x)
  v, i, inv, c = unique(x, return_index=True, return_inverse=True, return_counts=True,
                        equal_nan=False, size=size, fill_value=fill_value)
  return _UniqueAllResult(v, i, inv, c)


def unique_counts(x, /, *, size=None, fill_value=None):
  """Array-API unique_counts: (values, counts); NaNs distinct."""
  x = _arr("unique_counts", x)
  v, c = unique(x, return_counts=True, equal_nan=False, size=size, fill_value=fill_value)
  return _UniqueCountsResult(v, c)


def unique_inverse(x, /, *, size=None, fill_value=None):
  """Array-API unique_inverse: (values, inverse_indices); NaNs distinct."""
  x = _arr("unique_inverse", x)
  v, inv = unique(x, return_inverse=True, equal_nan=False, size=size, fill_value=fill_value)
  return _UniqueInverseResult(v, inv)


def unique_values(x, /, *, size=None, fill_value=None):
  """Array-API unique_values; NaNs distinct."""
  x = _arr("unique_values", x)
  return unique(x, equal_nan=False, size=size, fill_value=fill_value)


# --- membership -------------------------------------------------------------------------------
def _in1d(ar1, ar2, invert, method="auto", assume_unique=False):
  arr1, arr2 = promote_dtypes(_arr("in1d", ar1), _arr("in1d", ar2))
  arr1, arr2 = _manip.ravel(arr1), _manip.ravel(arr2)
  if arr1.size == 0 or arr2.size == 0:
    return lax.full(arr1.shape, bool(invert), dtypes.bool_)
  if method in ("auto", "compare_all"):
    if invert:
      return _red.all(lax.ne(arr1[:, None], arr2[None, :]), axis=-1)
    return _red.any(lax.eq(arr1[:, None], arr2[None, :]), axis=-1)
  if method == "binary_search":
    s2 = lax.sort(arr2)
    ind = _sorting.searchsorted(s2, arr1)
    found = s2.at[ind].get(mode="clip")
    return lax.ne(arr1, found) if invert else lax.eq(arr1, found)
  if method == "sort":
    n1 = arr1.size
    if assume_unique:
      ind_out = None
    else:
      arr1, ind_out = unique(arr1, size=n1, return_inverse=True, fill_value=_red.max(arr2))
    both = _manip.concatenate([arr1, arr2])
    aux, ind = lax.sort_key_val(both, _iota(both.shape[0]))
    same = lax.ne(aux[1:], aux[:-1]) if invert else lax.eq(aux[1:], aux[:-1])
    base = lax.full(arr1.shape, bool(invert), dtypes.bool_)
    out = base.at[ind[:-1]].set(same, mode="drop")
    return out if ind_out is None else out[ind_out]
  raise ValueError(f"method={method!r} is not implemented; options are 'compare_all', "
                   "'binary_search', 'sort', and 'auto'")


def isin(element, test_elements, assume_unique=False, invert=False, *, method="auto"):
  """Elementwise membership of ``element`` in ``test_elements`` (shape of ``element``).
  ``method``: 'auto'/'compare_all' (all pairs), 'binary_search' or 'sort'."""
  element = _arr("isin", element)
  test_elements = _arr("isin", test_elements)
  result = _in1d(element, test_elements, invert=invert, method=method,
                 assume_unique=assume_unique)
  return lax.reshape(result, element.shape)


# --- set operations ---------------------------------------------------------------------------
def _fill_after(vals, num, fill_value):
  """vals with entries at positions >= num replaced: by fill_value, or (None) by the
  smallest valid value (JAX's default)."""
  n = vals.shape[0]
  keep = lax.lt(_iota(n), num)
  if fill_value is None:
    vals = _red._where(keep, vals, _red.max(vals) if n else vals)
    return _red._where(keep, vals, _red.min(vals) if n else vals)
  fv = lax.convert_element_type(_red._asarray("fill_value", fill_value), vals.dtype)
  return _red._where(keep, vals, fv)


def _gather_fill(x, idx, fill=0):
  return x.at[idx].get(mode="fill", fill_value=fill)


def _concat_unique(arr1, arr2):
  arr1, arr2 = _manip.ravel(arr1), _manip.ravel(arr2)
  arr1, n1 = _unique(arr1, 0, size=arr1.size, return_true_size=True)
  arr2, n2 = _unique(arr2, 0, size=arr2.size, return_true_size=True)
  arr = lax.full((arr1.size + arr2.size,), 0, dtypes.result_type(arr1, arr2))
  arr = lax.dynamic_update_slice(arr, arr1, (0,))
  arr = lax.dynamic_update_slice(arr, arr2, (n1,))
  return arr, lax.add(n1, n2)


def union1d(ar1, ar2, *, size=None, fill_value=None):
  """Sorted unique values present in either input (flattened)."""
  ar1, ar2 = _arr("union1d", ar1), _arr("union1d", ar2)
  if size is None:
    core.concrete_or_error(None, ar1, "The error arose in union1d()")
    core.concrete_or_error(None, ar2, "The error arose in union1d()")
  else:
    size = core.concrete_or_error(operator.index, size, "The error arose in union1d()")
  both = _manip.concatenate([_manip.ravel(x) for x in promote_dtypes(ar1, ar2)])
  return unique(both, size=size, fill_value=fill_value)


def setdiff1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
  """Sorted unique values of ``ar1`` not in ``ar2``."""
  arr1, arr2 = _manip.ravel(_arr("setdiff1d", ar1)), _manip.ravel(_arr("setdiff1d", ar2))
  if size is None:
    core.concrete_or_error(None, arr1, "The error arose in setdiff1d()")
  else:
    size = core.concrete_or_error(operator.index, size, "The error arose in setdiff1d()")
  fv = lax.full((), 0 if fill_value is None else fill_value, arr1.dtype) \
      if not hasattr(fill_value, "shape") else lax.convert_element_type(fill_value, arr1.dtype)
  if arr1.size == 0:
    return lax.full((size or 0,), 0, arr1.dtype) if fill_value is None else \
        _red._broadcast_to(fv, (size or 0,))
  if not assume_unique:
    arr1 = unique(arr1, size=size and arr1.size)
  mask = _in1d(arr1, arr2, invert=True, assume_unique=assume_unique)
  if size is None:
    return arr1[_concrete_nonzero(mask, "setdiff1d")]
  if not assume_unique:
    # the unique() padding repeats the first value: not part of the result
    n_unique = lax.sub(np.array(arr1.size + 1, _int()),
                       _red.sum(lax.eq(arr1, arr1[0]), dtype=_int()))
    mask = _red._where(lax.lt(_iota(arr1.size), n_unique), mask, False)
  vals = arr1[_nonzero1(mask, size)]
  return _red._where(lax.lt(_iota(size), _red.sum(mask)), vals, fv)


def setxor1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
  """Sorted values in exactly one of the inputs."""
  a1, a2 = _arr("setxor1d", ar1), _arr("setxor1d", ar2)
  arr1, arr2 = promote_dtypes(_manip.ravel(a1), _manip.ravel(a2))
  if size is not None:
    size = core.concrete_or_error(operator.index, size, "The error arose in setxor1d()")
    return _setxor1d_size(arr1, arr2, fill_value, assume_unique, size)
  if not assume_unique:
    arr1 = unique(arr1)
    arr2 = unique(arr2)
  aux = _manip.concatenate([arr1, arr2])
  if aux.size == 0:
    return aux
  aux = lax.sort(aux)
  c = core.concrete_or_error(np.asarray, aux, "The error arose in setxor1d()")
  flag = np.concatenate([[True], c[1:] != c[:-1], [True]])
  return aux[np.nonzero(flag[1:] & flag[:-1])[0]]


def _setxor1d_size(arr1, arr2, fill_value, assume_unique, size):
  T = np.array(True)
  if assume_unique:
    aux = lax.sort(_manip.concatenate([arr1, arr2]))
    ne = lax.ne(aux[1:], aux[:-1]) if aux.size else lax.full((0,), False, dtypes.bool_)
    flag = _manip.concatenate([lax.full((1,), bool(aux.size), dtypes.bool_), ne,
                               lax.full((1,), True, dtypes.bool_)])
  else:
    arr, num_unique = _concat_unique(arr1, arr2)
    mask = lax.lt(_iota(arr.size + 1), lax.add(num_unique, np.array(1, num_unique.dtype)))
    _, aux = lax.sort((_uf.logical_not(mask[1:]), arr), is_stable=True, num_keys=2)
    ne = lax.ne(aux[1:], aux[:-1]) if aux.size else lax.full((0,), False, dtypes.bool_)
    flag = _manip.concatenate([lax.full((1,), bool(aux.size), dtypes.bool_), ne,
                               lax.full((1,), False, dtypes.bool_)])
    flag = flag.at[num_unique].set(T)
    flag = _uf.logical_and(mask, flag)
  aux_mask = _uf.logical_and(flag[1:], flag[:-1])
  num = _red.sum(aux_mask)
  if aux.size:
    idx = _nonzero1(aux_mask, size, fill_value=aux.shape[0])
    vals = _gather_fill(aux, idx)
  else:
    vals = lax.full((size,), 0, aux.dtype)
  return _fill_after(vals, num, fill_value)


def intersect1d(ar1, ar2, assume_unique=False, return_indices=False, *, size=None,
                fill_value=None):
  """Sorted unique values in both inputs; with ``return_indices`` also the indices of
  their first occurrences in each input."""
  a1, a2 = _arr("intersect1d", ar1), _arr("intersect1d", ar2)
  arr1, arr2 = promote_dtypes(a1, a2)
  arr1, arr2 = _manip.ravel(arr1), _manip.ravel(arr2)
  if size is not None:
    size = core.concrete_or_error(operator.index, size, "The error arose in intersect1d()")
    return _intersect1d_size(arr1, arr2, fill_value, assume_unique, size, return_indices)
  ind1 = ind2 = None
  if not assume_unique:
    if return_indices:
      arr1, ind1 = unique(arr1, return_index=True)
      arr2, ind2 = unique(arr2, return_index=True)
    else:
      arr1, arr2 = unique(arr1), unique(arr2)
  arr = _manip.concatenate([arr1, arr2])
  if return_indices:
    aux, order = lax.sort_key_val(arr, _iota(arr.shape[0]))
  else:
    aux, order = lax.sort(arr), None
  c = core.concrete_or_error(np.asarray, aux, "The error arose in intersect1d()")
  sel = np.nonzero(c[1:] == c[:-1])[0] if c.size else np.zeros((0,), np.int64)
  sel = sel.astype(_int())
  out = aux[sel]
  if not return_indices:
    return out
  i1 = order[sel]
  i2 = lax.sub(order[sel + 1], np.array(arr1.size, order.dtype))
  if not assume_unique:
    i1, i2 = ind1[i1], ind2[i2]
  return out, i1, i2


def _intersect1d_size(arr1, arr2, fill_value, assume_unique, size, return_indices):
  d = _int()
  if assume_unique:
    ind1, n1 = _iota(arr1.size), np.array(arr1.size, d)
    ind2, n2 = _iota(arr2.size), np.array(arr2.size, d)
    arr = _manip.concatenate([arr1, arr2])
    aux, aux_idx = lax.sort((arr, _iota(arr.size)), is_stable=True, num_keys=1)
    mask = lax.full((arr.size,), True, dtypes.bool_)
  else:
    arr1, ind1, n1 = _unique(arr1, 0, size=arr1.size, return_index=True,
                             return_true_size=True, fill_value=0)
    arr2, ind2, n2 = _unique(arr2, 0, size=arr2.size, return_index=True,
                             return_true_size=True, fill_value=0)
    arr = lax.full((arr1.size + arr2.size,), 0, dtypes.result_type(arr1, arr2))
    arr = lax.dynamic_update_slice(arr, arr1, (0,))
    arr = lax.dynamic_update_slice(arr, arr2, (n1,))
    mask = lax.lt(_iota(arr.size), lax.add(n1, n2))
    _, aux, aux_idx = lax.sort((_uf.logical_not(mask), arr, _iota(arr.size)), is_stable=True,
                               num_keys=2)
  if aux.size:
    aux_mask = _uf.logical_and(lax.eq(aux[1:], aux[:-1]), mask[1:])
  else:
    aux_mask = lax.full((0,), False, dtypes.bool_)
  num = _red.sum(aux_mask)
  if aux.size:
    val_idx = _nonzero1(aux_mask, size, fill_value=aux.size)
    vals = _gather_fill(aux, val_idx)
  else:
    val_idx = _iota(0)
    vals = lax.full((size,), 0, aux.dtype)
  vals = _fill_after(vals, num, fill_value)
  if not return_indices:
    return vals
  valid = lax.lt(_iota(size), num)
  i1 = _gather_fill(aux_idx, val_idx, arr1.size) if aux.size else lax.full((size,), arr1.size, d)
  i1 = _red._where(valid, i1, np.array(arr1.size, d))
  if aux.size:
    i2 = lax.sub(_gather_fill(aux_idx, lax.add(val_idx, np.array(1, val_idx.dtype)), arr2.size),
                 lax.convert_element_type(n1, aux_idx.dtype))
  else:
    i2 = lax.full((size,), arr2.size, d)
  i2 = _red._where(valid, i2, np.array(arr2.size, d))
  if not assume_unique:
    i1 = _gather_fill(ind1, i1, ind1.size)
    i2 = _gather_fill(ind2, i2, ind2.size)
  return vals, i1, i2

