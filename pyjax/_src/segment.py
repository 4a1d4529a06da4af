"""Segment reductions (``jax.ops.segment_sum/prod/max/min``) as scatters into an output
with one row per segment."""
from __future__ import annotations

import numpy as np

from pyjax._src import core, dtypes
from pyjax._src.lax import gather_scatter
from pyjax._src.numpy import array_constructors as _ac
from pyjax._src.numpy import creation as _cr
from pyjax._src.numpy import reductions as _red
from pyjax._src.numpy.indexing import _scatter_update
from pyjax._src.numpy.util import check_arraylike

__all__ = ["segment_sum", "segment_prod", "segment_max", "segment_min"]


def _identity(op, dtype):
  """The value every segment starts from (what an empty segment returns)."""
  if op is gather_scatter.scatter_add:
    return 0
  if op is gather_scatter.scatter_mul:
    return 1
  if op is gather_scatter.scatter_min:
    if dtype == np.bool_:
      return True
    return np.iinfo(dtype).max if dtypes.is_int(dtype) else float("inf")
  if dtype == np.bool_:
    return False
  return np.iinfo(dtype).min if dtypes.is_int(dtype) else -float("inf")


def _segment_update(name, data, segment_ids, op, reducer, num_segments, indices_are_sorted,
                    unique_indices, bucket_size, mode):
  check_arraylike(name, data, segment_ids)
  mode = gather_scatter.GatherScatterMode.FILL_OR_DROP if mode is None else mode
  data = _ac.asarray(data)
  segment_ids = _ac.asarray(segment_ids)
  dtype = core.get_aval(data).dtype
  shape = tuple(core.get_aval(data).shape)
  if num_segments is None:
    num_segments = core.concrete_or_error(
        lambda s: int(np.max(np.asarray(s))) + 1, segment_ids,
        f"{name}() `num_segments` argument.")
  num_segments = core.concrete_or_error(int, num_segments,
                                        f"{name}() `num_segments` argument.")
  if num_segments < 0:
    raise ValueError("num_segments must be non-negative.")
  init = _identity(op, dtype)
  if bucket_size is None:
    out = _cr.full((num_segments,) + shape[1:], init, dtype=dtype)
    return _scatter_update(out, segment_ids, data, op, indices_are_sorted, unique_indices,
                           mode=mode, normalize_indices=False)
  # Reduce each bucket of ``bucket_size`` consecutive entries separately, then combine the
  # buckets (fewer terms per accumulation: better precision for long segments).
  n = int(np.prod(core.get_aval(segment_ids).shape, dtype=np.int64))
  num_buckets = -(-n // int(bucket_size))
  out = _cr.full((num_buckets, num_segments) + shape[1:], init, dtype=dtype)
  bucket = _cr.arange(core.get_aval(segment_ids).shape[0]) // int(bucket_size)
  out = _scatter_update(out, (bucket, segment_ids), data, op, indices_are_sorted,
                        unique_indices, mode=mode, normalize_indices=False)
  return reducer(out, axis=0).astype(dtype)


def segment_sum(data, segment_ids, num_segments=None, indices_are_sorted=False,
                unique_indices=False, bucket_size=None, mode=None, out_sharding=None):
  """Sum of ``data``'s rows per segment: ``out[s] = sum(data[i] for segment_ids[i] == s)``.

  ``num_segments`` (static; default ``max(segment_ids) + 1``, which needs concrete ids)
  sets the number of output rows; empty segments are 0.  ``mode`` defaults to
  ``'drop'``: out-of-range ids (negative ones too) are ignored; ``'clip'`` clamps them.
  ``bucket_size`` sums buckets of that many consecutive entries separately first.
  ``indices_are_sorted``/``unique_indices`` are promises passed to the scatter.
  ``out_sharding`` is accepted and ignored (one device).
  """
  del out_sharding
  return _segment_update("segment_sum", data, segment_ids, gather_scatter.scatter_add, _red.sum,
                         num_segments, indices_are_sorted, unique_indices, bucket_size, mode)


def segment_prod(data, segment_ids, num_segments=None, indices_are_sorted=False,
                 unique_indices=False, bucket_size=None, mode=None, out_sharding=None):
  """Product of ``data``'s rows per segment; empty segments are 1.  Arguments as
  :func:`segment_sum`."""
  del out_sharding
  return _segment_update("segment_prod", data, segment_ids, gather_scatter.scatter_mul, _red.prod,
                         num_segments, indices_are_sorted, unique_indices, bucket_size, mode)


def segment_max(data, segment_ids, num_segments=None, indices_are_sorted=False,
                unique_indices=False, bucket_size=None, mode=None, out_sharding=None):
  """Maximum of ``data``'s rows per segment; empty segments are ``-inf`` (the smallest
  integer for integers, False for bool).  Arguments as :func:`segment_sum`."""
  del out_sharding
  return _segment_update("segment_max", data, segment_ids, gather_scatter.scatter_max, _red.max,
                         num_segments, indices_are_sorted, unique_indices, bucket_size, mode)


def segment_min(data, segment_ids, num_segments=None, indices_are_sorted=False,
                unique_indices=False, bucket_size=None, mode=None, out_sharding=None):
  """Minimum of ``data``'s rows per segment; empty segments are ``inf`` (the largest
  integer for integers, True for bool).  Arguments as :func:`segment_sum`."""
  del out_sharding
  return _segment_update("segment_min", data, segment_ids, gather_scatter.scatter_min, _red.min,
                         num_segments, indices_are_sorted, unique_indices, bucket_size, mode)
