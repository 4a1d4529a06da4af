"""jax.scipy.stats.mode, rankdata and sem."""
from __future__ import annotations

import math
from functools import partial
from typing import NamedTuple

import numpy as np

from pyjax._src import dtypes
from pyjax._src.api import jit
from pyjax._src.lax import lax_api as lax
from pyjax._src.numpy.util import canonicalize_axis, check_arraylike, promote_args_inexact
import pyjax.numpy as jnp

__all__ = ["ModeResult", "mode", "rankdata", "sem"]


class ModeResult(NamedTuple):
  mode: object
  count: object


def _check_nan_policy(name, nan_policy):
  if nan_policy not in ["propagate", "omit", "raise"]:
    raise ValueError(f"Illegal nan_policy value {nan_policy!r}; expected one of "
                     "{'propagate', 'omit', 'raise'}")
  if nan_policy == "omit":
    raise NotImplementedError(f"Logic for `nan_policy` of {nan_policy} is not implemented")
  if nan_policy == "raise":
    raise NotImplementedError(
        f"In order to best JIT compile `{name}`, we cannot know whether `x` contains nans. "
        f"Please check if nans exist in `x` outside of the `{name}` function.")


@partial(jit, static_argnames=["axis", "nan_policy", "keepdims"])
def mode(a, axis: int | None = 0, nan_policy: str = "propagate", keepdims: bool = False):
  """The most common value along ``axis`` (the smallest on ties; all NaNs count as one
  value) and its count."""
  check_arraylike("mode", a)
  x = jnp.atleast_1d(a)
  _check_nan_policy("mode", nan_policy)
  if axis is not None:
    axis = canonicalize_axis(axis, x.ndim)
  shape = x.shape
  if keepdims:
    out_shape = tuple(1 for _ in shape) if axis is None else tuple(
        1 if i == axis else s for i, s in enumerate(shape))
  else:
    out_shape = () if axis is None else tuple(s for i, s in enumerate(shape) if i != axis)
  if axis is None:
    axis = 0
    x = x.ravel()
  x = jnp.moveaxis(x, axis, 0)
  x = x.reshape(x.shape[0], math.prod(x.shape[1:]))
  n, m = x.shape
  if n == 0:
    f = dtypes.default_float_dtype()
    return ModeResult(jnp.full(out_shape, np.nan, f), jnp.zeros(out_shape, f))
  s = jnp.sort(x, axis=0)
  nan = jnp.isnan(s) if dtypes.issubdtype(s.dtype, np.inexact) else jnp.zeros(s.shape, bool)
  same = (s[:, None, :] == s[None, :, :]) | (nan[:, None, :] & nan[None, :, :])
  counts = jnp.sum(same, axis=1, dtype=np.int32)            # (n, m)
  best = jnp.argmax(counts, axis=0)
  vals = jnp.take_along_axis(s, best[None, :], axis=0)[0]
  cnt = jnp.max(counts, axis=0)
  return ModeResult(vals.reshape(out_shape), cnt.reshape(out_shape))


@partial(jit, static_argnames=["method", "axis", "nan_policy"])
def rankdata(a, method: str = "average", *, axis: int | None = None,
             nan_policy: str = "propagate"):
  """Ranks (from 1) of the data: ``method`` 'average', 'min', 'max', 'dense' or 'ordinal';
  all NaN if any NaN is present (per slice along ``axis``)."""
  check_arraylike("rankdata", a)
  _check_nan_policy("rankdata", nan_policy)
  if method not in ("average", "min", "max", "dense", "ordinal"):
    raise ValueError(f"unknown method '{method}'")
  a = jnp.asarray(a)
  if axis is None:
    x = jnp.ravel(a)[None, :]
  else:
    axis = canonicalize_axis(axis, a.ndim)
    x = jnp.moveaxis(a, axis, -1)
  lead = x.shape[:-1]
  n = x.shape[-1]
  x2 = x.reshape((-1, n))
  out_dtype = dtypes.default_float_dtype()
  idx = jnp.broadcast_to(jnp.arange(n), x2.shape)
  srt, perm = lax.sort_key_val(x2, idx, dimension=1)
  rows = jnp.arange(x2.shape[0])[:, None]
  inv = jnp.zeros_like(perm).at[rows, perm].set(idx)
  if method == "ordinal":
    r = (inv + 1).astype(out_dtype)
  else:
    starts = jnp.concatenate([jnp.ones((x2.shape[0], 1), bool), srt[:, 1:] != srt[:, :-1]], 1)
    dense_sorted = jnp.cumsum(starts, axis=1)
    dense = jnp.take_along_axis(dense_sorted, inv, axis=1)
    if method == "dense":
      r = dense.astype(out_dtype)
    else:
      # first / one-past-last sorted position of each element's group
      pos = jnp.broadcast_to(jnp.arange(n), x2.shape)
      first = jnp.where(starts, pos, 0)
      first = lax.cummax(first, axis=1)
      ends = jnp.concatenate([starts[:, 1:], jnp.ones((x2.shape[0], 1), bool)], 1)
      last = jnp.where(ends, pos + 1, n)
      last = lax.cummin(last, axis=1, reverse=True)
      lo = jnp.take_along_axis(first, inv, axis=1).astype(out_dtype)
      hi = jnp.take_along_axis(last, inv, axis=1).astype(out_dtype)
      if method == "max":
        r = hi
      elif method == "min":
        r = lo + 1
      else:
        r = 0.5 * (hi + lo + 1)
  if dtypes.issubdtype(x2.dtype, np.inexact):
    anynan = jnp.any(jnp.isnan(x2), axis=1, keepdims=True)
    r = jnp.where(anynan, jnp.full_like(r, np.nan), r)
  r = r.reshape(lead + (n,))
  if axis is None:
    return r[0]
  return jnp.moveaxis(r, -1, axis)


@partial(jit, static_argnames=["axis", "nan_policy", "keepdims"])
def sem(a, axis: int | None = 0, ddof: int = 1, nan_policy: str = "propagate", *,
        keepdims: bool = False):
  """The standard error of the mean, ``std(a, ddof) / sqrt(n)``; ``nan_policy='omit'``
  ignores NaNs."""
  b, = promote_args_inexact("sem", a)
  if nan_policy == "propagate":
    size = b.size if axis is None else b.shape[axis]
    return b.std(axis, ddof=ddof, keepdims=keepdims) / jnp.sqrt(size).astype(b.dtype)
  if nan_policy == "omit":
    count = (~jnp.isnan(b)).sum(axis, keepdims=keepdims)
    return jnp.nanstd(b, axis, ddof=ddof, keepdims=keepdims) / jnp.sqrt(count).astype(b.dtype)
  raise ValueError(f"{nan_policy} is not supported")
