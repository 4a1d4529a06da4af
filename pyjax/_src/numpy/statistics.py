"""Order statistics, histograms and covariances of jax.numpy: quantile, percentile (and
their nan-variants), histogram, histogram2d, histogramdd, histogram_bin_edges, bincount,
digitize, cov and corrcoef.

``quantile`` methods are JAX's: 'linear', 'lower', 'higher', 'midpoint', 'nearest' (ties go
to the lower value) and 'inverted_cdf' (the only one accepting ``weights``).  ``bincount``
needs a concrete input or a static ``length``; histograms use the bin edges' values, so
they work under jit when ``bins`` is an int and ``range`` is given (or inputs concrete).
"""
from __future__ import annotations

import builtins
import math
import operator

import numpy as np

from pyjax._src import core, dtypes
from pyjax._src.lax import lax_api as lax
from pyjax._src.numpy import creation as _creation
from pyjax._src.numpy import linalg_ops as _ops
from pyjax._src.numpy import manipulation as _manip
from pyjax._src.numpy import reductions as _red
from pyjax._src.numpy import sorting as _sorting
from pyjax._src.numpy import ufuncs as _uf
from pyjax._src.numpy.array_constructors import asarray as _asarray_c
from pyjax._src.numpy.util import library_function as _library_function
from pyjax._src.numpy.util import (canonicalize_axis, check_arraylike, promote_dtypes_inexact,
                                   promote_args_inexact)

__all__ = ["quantile", "percentile", "nanquantile", "nanpercentile", "histogram",
           "histogram2d", "histogramdd", "histogram_bin_edges", "bincount", "digitize",
           "cov", "corrcoef"]

_range = builtins.range
_METHODS = ("linear", "lower", "higher", "midpoint", "nearest", "inverted_cdf")


def _arr(name, x):
  check_arraylike(name, x)
  return _red._asarray(name, x)


def _int():
  return dtypes.default_int_dtype()


# --- quantiles --------------------------------------------------------------------------------
def _gather_last(a, idx):
  """a[..., idx] where a is [*batch, n] and idx is [*qshape, *batch] (integers)."""
  qnd = idx.ndim - (a.ndim - 1)
  batch = a.shape[:-1]
  qshape = idx.shape[:qnd]
  # move q dims after the batch dims, take along the last axis, move them back
  perm = tuple(_range(qnd, idx.ndim)) + tuple(_range(qnd))
  it = lax.transpose(idx, perm) if qnd else idx
  flat_q = math.prod(qshape)
  it = lax.reshape(it, batch + (flat_q,))
  out = _sorting_take_along(a, it)
  out = lax.reshape(out, batch + qshape)
  inv = tuple(_range(len(batch), len(batch) + qnd)) + tuple(_range(len(batch)))
  return lax.transpose(out, inv) if qnd else out


def _sorting_take_along(a, idx):
  from pyjax._src.lax import sorting as _lsort
  return _lsort._take_along(a, idx, a.ndim - 1)


def _quantile(name, a, q, axis, method, keepdims, squash_nans, weights=None):
  if method not in _METHODS:
    raise ValueError("method can only be 'linear', 'lower', 'higher', 'midpoint', 'nearest' "
                     "or 'inverted_cdf'")
  if weights is not None:
    if dtypes.is_complex(weights.dtype):
      raise ValueError("Weights cannot be complex types.")
    if method != "inverted_cdf":
      raise NotImplementedError(f"{method} doesn't support weights. Only method "
                                "'inverted_cdf' supports weights.")
    a, weights = promote_dtypes_inexact(a, weights)
    if weights.shape != a.shape:
      if axis is None:
        raise ValueError("Weights shape must match 'a' shape when axis is None.")
      axes_t = (axis,) if not isinstance(axis, tuple) else axis
      axes_t = tuple(canonicalize_axis(ax, a.ndim) for ax in axes_t)
      if weights.shape != tuple(a.shape[ax] for ax in axes_t):
        raise ValueError(f"Weights shape {weights.shape} must match reduction axes "
                         f"{tuple(a.shape[ax] for ax in axes_t)}")
      weights = lax.broadcast_in_dim(weights, a.shape, axes_t)
  else:
    a, = promote_dtypes_inexact(a)
  if dtypes.is_complex(a.dtype):
    raise ValueError("quantile does not support complex input, as the operation is poorly "
                     "defined.")
  nd = a.ndim
  if axis is None:
    axes = tuple(_range(nd))
  elif isinstance(axis, tuple):
    axes = tuple(canonicalize_axis(ax, nd) for ax in axis)
    if len(set(axes)) != len(axes):
      raise ValueError("repeated axis")
  else:
    axes = (canonicalize_axis(axis, nd),)
  if q.ndim > 1:
    raise ValueError(f"q must be have rank <= 1, got shape {q.shape}")
  keep_shape = tuple(1 if i in axes else d for i, d in enumerate(a.shape))
  kept = tuple(i for i in _range(nd) if i not in axes)
  batch = tuple(a.shape[i] for i in kept)
  n = math.prod(a.shape[i] for i in axes)
  if n == 0:
    # JAX reads the empty reduced axis with a gather (quantile) or integer indexing
    # (nanquantile), whose shape checks raise; the axis is counted in JAX's layout.
    ax = axes[0] if axis is not None and not isinstance(axis, tuple) else len(kept)
    out_size = math.prod(q.shape) * math.prod(batch)
    if squash_nans and q.ndim == 0 and not keepdims and not batch:
      raise IndexError(f"index is out of bounds for axis {ax} with size 0")
    if not squash_nans or out_size:
      raise TypeError(f"Slice size at index {ax} in gather op is out of range, must be "
                      "within [0, 0 + 1), got 1.")
  perm = kept + axes

  def to_rows(x):
    return lax.reshape(lax.transpose(x, perm) if perm != tuple(_range(nd)) else x, batch + (n,))
  a = to_rows(a)
  if weights is not None:
    weights = to_rows(weights)
  qd = q.dtype
  nan = np.array(np.nan, a.dtype)
  isnan = _uf.isnan(a)
  if squash_nans:
    a = _red._where(isnan, nan, a)     # positive NaNs sort last
  else:
    a = _red._where(_red.any(isnan, axis=-1, keepdims=True), nan, a)
  if weights is not None:
    a, weights = lax.sort_key_val(a, weights, dimension=a.ndim - 1)
  else:
    a = lax.sort(a, dimension=a.ndim - 1) if n else a
  if n == 0:
    out = lax.full(q.shape + batch, np.nan, a.dtype)
    return _finish(out, q, keepdims, keep_shape)
  nan_sorted = _uf.isnan(a)
  if squash_nans:
    counts = _red.sum(_uf.logical_not(nan_sorted), axis=-1, dtype=qd)
  else:
    counts = lax.full(batch, n, qd)
  qb = lax.broadcast_in_dim(q, q.shape + batch, tuple(_range(q.ndim)))
  cb = lax.broadcast_in_dim(counts, q.shape + batch, tuple(_range(q.ndim, q.ndim + len(batch))))
  one = np.array(1, qd)
  if method == "inverted_cdf":
    result = _inverted_cdf(a, q, weights, counts, nan_sorted, squash_nans, batch)
    return _finish(lax.convert_element_type(result, a.dtype), q, keepdims, keep_shape)
  pos = lax.mul(qb, lax.sub(cb, one))
  low = lax.floor(pos)
  high = lax.ceil(pos)
  high_w = lax.sub(pos, low)
  low_w = lax.sub(one, high_w)
  zero = np.array(0, qd)
  top = lax.sub(cb, one)
  low = lax.max(zero, lax.min(low, top))
  high = lax.max(zero, lax.min(high, top))
  d = _int()
  low_v = _gather_last(a, lax.convert_element_type(low, d))
  high_v = _gather_last(a, lax.convert_element_type(high, d))
  if method == "linear":
    result = lax.add(lax.mul(lax.convert_element_type(low_v, qd), low_w),
                     lax.mul(lax.convert_element_type(high_v, qd), high_w))
  elif method == "lower":
    result = low_v
  elif method == "higher":
    result = high_v
  elif method == "nearest":
    result = lax.select(lax.le(high_w, np.array(0.5, qd)), low_v, high_v)
  else:  # midpoint
    result = lax.mul(lax.add(low_v, high_v), np.array(0.5, low_v.dtype))
  return _finish(lax.convert_element_type(result, a.dtype), q, keepdims, keep_shape)


def _inverted_cdf(a, q, weights, counts, nan_data, squash_nans, batch):
  qd = q.dtype
  if weights is None:
    weights = lax.full(a.shape, 1, a.dtype)
  zero = np.array(0, weights.dtype)
  bad = _uf.logical_or(lax.lt(weights, zero), _uf.isnan(weights))
  clean = _red._where(_uf.logical_or(bad, nan_data), zero, weights)
  cw = _red.cumsum(clean, axis=-1)
  total = cw[..., -1]
  nb = len(batch)
  qb = lax.broadcast_in_dim(lax.convert_element_type(q, cw.dtype), q.shape + batch,
                            tuple(_range(q.ndim)))
  tb = lax.broadcast_in_dim(total, q.shape + batch, tuple(_range(q.ndim, q.ndim + nb)))
  target = lax.mul(qb, tb)
  cwb = lax.broadcast_in_dim(cw, q.shape + cw.shape, tuple(_range(q.ndim, q.ndim + nb + 1)))
  less = lax.lt(cwb, lax.expand_dims(target, (target.ndim,)))
  idx = _red.sum(lax.convert_element_type(less, _int()), axis=-1)
  limit = lax.convert_element_type(lax.sub(counts, np.array(1, counts.dtype)), _int())
  lim_b = lax.broadcast_in_dim(limit, idx.shape, tuple(_range(q.ndim, q.ndim + nb)))
  idx = lax.max(np.array(0, idx.dtype), lax.min(idx, lim_b))
  result = _gather_last(a, idx)
  any_bad = _red.any(bad, axis=-1)
  if squash_nans:
    force = _uf.logical_or(any_bad, lax.eq(counts, np.array(0, counts.dtype)))
  else:
    force = _uf.logical_or(any_bad, _red.any(nan_data, axis=-1))
  force = lax.broadcast_in_dim(force, result.shape, tuple(_range(q.ndim, q.ndim + nb)))
  return _red._where(force, np.array(np.nan, result.dtype), result)


def _finish(result, q, keepdims, keep_shape):
  if keepdims:
    # (a 0-d input keeps the size-1 axis of its raveled form, as in JAX)
    result = lax.reshape(result, q.shape + (keep_shape or (1,)))
  return result


def _check_out(name, out, overwrite_input):
  if overwrite_input or out is not None:
    raise ValueError(f"jax.numpy.{name} does not support overwrite_input=True or out != None")


@_library_function(dynamic=("q",), jit=(
    'quantile', ('axis', 'out', 'overwrite_input', 'method', 'keepdims')))
def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
             keepdims=False, *, weights=None):
  """The ``q``-th quantiles (``q`` in [0, 1], scalar or 1-D) along ``axis``; NaN where the
  data contains NaN."""
  a, q = _arr("quantile", a), _arr("quantile", q)
  if weights is not None:
    weights = _arr("quantile", weights)
  _check_out("quantile", out, overwrite_input)
  return _quantile("quantile", a, _q_inexact(q), axis, method, keepdims, False, weights)


@_library_function(jit=('nanquantile', ('axis', 'out', 'overwrite_input', 'method', 'keepdims')))
def nanquantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                keepdims=False, *, weights=None):
  """quantile ignoring NaNs (NaN only where a slice is all NaN)."""
  a, q = _arr("nanquantile", a), _arr("nanquantile", q)
  if weights is not None:
    weights = _arr("nanquantile", weights)
  _check_out("nanquantile", out, overwrite_input)
  return _quantile("nanquantile", a, _q_inexact(q), axis, method, keepdims, True, weights)


def _q_inexact(q):
  q, = promote_dtypes_inexact(q)
  return q


@_library_function(dynamic=("q",), jit=(
    'percentile', ('axis', 'out', 'overwrite_input', 'method', 'keepdims', 'out_sharding')))
def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
               keepdims=False, *, weights=None, out_sharding=None):
  """The ``q``-th percentiles (``q`` in [0, 100])."""
  a, q = _arr("percentile", a), _arr("percentile", q)
  q = _q_inexact(q)
  q = _uf.true_divide(q, 100)
  return quantile(a, q, axis=axis, out=out, overwrite_input=overwrite_input, method=method,
                  keepdims=keepdims, weights=weights)


@_library_function(jit=('nanpercentile', ('axis', 'out', 'overwrite_input', 'method', 'keepdims')))
def nanpercentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                  keepdims=False, *, weights=None):
  """percentile ignoring NaNs."""
  a, q = _arr("nanpercentile", a), _arr("nanpercentile", q)
  q = _uf.true_divide(_q_inexact(q), 100)
  return nanquantile(a, q, axis=axis, out=out, overwrite_input=overwrite_input, method=method,
                     keepdims=keepdims, weights=weights)


# --- counting ---------------------------------------------------------------------------------
def bincount(x, weights=None, minlength=0, *, length=None, out_sharding=None):
  """Counts (or summed ``weights``) of each non-negative integer in ``x``; negative values
  count as 0 (JAX clips them).  Needs concrete ``x`` unless ``length`` is given."""
  x = _arr("bincount", x)
  if x.dtype == dtypes.bool_:
    x = lax.convert_element_type(x, np.int32)
  if not dtypes.is_int(x.dtype):
    raise TypeError(f"x argument to bincount must have an integer type; got {x.dtype}")
  if x.ndim != 1:
    raise ValueError("only 1-dimensional input supported.")
  minlength = core.concrete_or_error(
      operator.index, minlength,
      "The error occurred because of argument 'minlength' of jnp.bincount.")
  if length is None:
    xc = core.concrete_or_error(
        np.asarray, x, "The error occurred because of argument 'x' of jnp.bincount. To avoid "
        "this error, pass a static `length` argument.")
    length = builtins.max(minlength, xc.size and int(builtins.max(0, xc.max())) + 1)
  else:
    length = core.concrete_or_error(
        operator.index, length,
        "The error occurred because of argument 'length' of jnp.bincount.")
  if weights is None:
    weights = np.array(1, _int())
  else:
    weights = _arr("bincount", weights)
    if weights.shape != x.shape:
      raise ValueError(f"type of weights must match type of x. Got typeof(x)="
                       f"{x.aval.str_short(short_dtypes=True)}({{}}) and typeof(weights)={weights.aval.str_short(short_dtypes=True)}({{}})")
  wd = dtypes.canonicalize_dtype(np.asarray(weights).dtype) if isinstance(weights, np.ndarray) \
      else weights.dtype
  idx = lax.max(x, np.array(0, x.dtype))
  return lax.full((length,), 0, wd).at[idx].add(weights, mode="drop")


def digitize(x, bins, right=False, *, method=None):
  """Indices of the bins each value of ``x`` falls into (increasing or decreasing
  ``bins``)."""
  check_arraylike("digitize", x, bins)
  x, bins_arr = _red._asarray("digitize", x), _red._asarray("digitize", bins)
  right = core.concrete_or_error(bool, right, "right argument of jnp.digitize()")
  if bins_arr.ndim != 1:
    raise ValueError(f"digitize: bins must be a 1-dimensional array; got bins={bins}")
  if bins_arr.shape[0] == 0:
    return lax.full(x.shape, 0, np.int32)
  side = "left" if right else "right"
  kw = {} if method is None else {"method": method}
  inc = _sorting.searchsorted(bins_arr, x, side=side, **kw)
  dec = lax.sub(np.array(bins_arr.shape[0], inc.dtype),
                _sorting.searchsorted(lax.rev(bins_arr, (0,)), x, side=side, **kw))
  return _red._where(lax.ge(bins_arr[-1], bins_arr[0]), inc, dec)


# --- histograms -------------------------------------------------------------------------------
def histogram_bin_edges(a, bins=10, range=None, weights=None):
  """Bin edges: ``bins`` itself when it is 1-D, else ``bins + 1`` evenly spaced edges over
  ``range`` (default the data's min and max)."""
  if isinstance(bins, str):
    raise NotImplementedError("string values for `bins` not implemented.")
  check_arraylike("histogram_bin_edges", a, bins)
  arr = _red._asarray("histogram_bin_edges", a)
  dt = dtypes.canonicalize_dtype(dtypes.to_inexact_dtype(arr.dtype))
  if np.ndim(bins) == 1:
    return _asarray_c(bins, dtype=dt)
  nb = core.concrete_or_error(operator.index, bins, "bins argument of histogram_bin_edges")
  if range is None:
    range = [_red.min(arr), _red.max(arr)]
  r = _asarray_c(_manip.stack([_asarray_c(v) for v in range]) if isinstance(range, (list, tuple))
                 else range, dtype=dt)
  if r.shape != (2,):
    raise ValueError(f"`range` must be either None or a sequence of scalars, got {r}")
  same = lax.eq(r[0], r[1])
  lo = _red._where(same, lax.sub(r[0], np.array(0.5, dt)), r[0])
  hi = _red._where(same, lax.add(r[1], np.array(0.5, dt)), r[1])
  return _creation.linspace(lo, hi, nb + 1, dtype=dt)


def histogram(a, bins=10, range=None, weights=None, density=None):
  """Histogram of ``a`` (flattened): (counts or weight sums, bin edges); the last bin
  includes its right edge."""
  if weights is None:
    check_arraylike("histogram", a, bins)
    a, = promote_dtypes_inexact(_red._asarray("histogram", a))
    weights = lax.full(a.shape, 1, a.dtype)
  else:
    check_arraylike("histogram", a, bins, weights)
    a, weights = _red._asarray("histogram", a), _red._asarray("histogram", weights)
    if a.shape != weights.shape:
      raise ValueError("weights should have the same shape as a.")
    a, weights = promote_dtypes_inexact(a, weights)
  edges = histogram_bin_edges(a, bins, range, weights)
  ne = edges.shape[0]
  idx = _sorting.searchsorted(edges, a, side="right")
  idx = _red._where(lax.eq(a, edges[-1]), np.array(ne - 1, idx.dtype), idx)
  counts = lax.full((ne,), 0, weights.dtype).at[idx].add(weights)[1:]
  if density:
    widths = lax.sub(edges[1:], edges[:-1])
    counts = _uf.true_divide(_uf.true_divide(counts, widths), _red.sum(counts))
  return counts, edges


def histogramdd(sample, bins=10, range=None, weights=None, density=None):
  """Multidimensional histogram of ``sample`` ([N, D]): (counts, list of D edge arrays)."""
  if weights is None:
    sample = _arr("histogramdd", sample)
    sample, = promote_dtypes_inexact(sample)
  else:
    check_arraylike("histogramdd", sample, weights)
    sample, weights = _red._asarray("histogramdd", sample), _red._asarray("histogramdd", weights)
    if weights.shape != sample.shape[:1]:
      raise ValueError("should have one weight for each sample.")
    sample, weights = promote_dtypes_inexact(sample, weights)
  N, D = sample.shape
  if range is not None and (len(range) != D or builtins.any(
      r is not None and np.shape(r)[0] != 2 for r in range)):
    raise ValueError(f"For sample.shape={(N, D)}, range must be a sequence of {D} pairs or "
                     f"Nones; got range={range}")
  try:
    per_dim = list(bins)
  except TypeError:
    per_dim = D * [bins]
  else:
    if len(per_dim) != D:
      raise ValueError("should be a bin for each dimension.")
  idx_by_dim, edges_by_dim = [], []
  for i in _range(D):
    col = sample[:, i]
    e = histogram_bin_edges(col, per_dim[i], None if range is None else range[i], weights)
    bi = _sorting.searchsorted(e, col, side="right")
    bi = _red._where(lax.eq(col, e[-1]), lax.sub(bi, np.array(1, bi.dtype)), bi)
    idx_by_dim.append(bi)
    edges_by_dim.append(e)
  nbins = tuple(e.shape[0] + 1 for e in edges_by_dim)
  from pyjax._src.numpy.index_tricks import ravel_multi_index
  xy = ravel_multi_index(tuple(idx_by_dim), nbins, mode="clip")
  hist = bincount(xy, weights, length=math.prod(nbins))
  hist = lax.reshape(hist, nbins)
  hist = hist[D * (slice(1, -1),)]
  if density:
    hist = lax.convert_element_type(hist, sample.dtype)
    hist = _uf.true_divide(hist, _red.sum(hist))
    for i, e in enumerate(edges_by_dim):
      w = lax.sub(e[1:], e[:-1])
      shape = [1] * D
      shape[i] = w.shape[0]
      hist = _uf.true_divide(hist, lax.reshape(w, tuple(shape)))
  return hist, edges_by_dim


def histogram2d(x, y, bins=10, range=None, weights=None, density=None):
  """Two-dimensional histogram: (counts, x edges, y edges)."""
  check_arraylike("histogram2d", x, y)
  x, y = _red._asarray("histogram2d", x), _red._asarray("histogram2d", y)
  try:
    nb = len(bins)
  except TypeError:
    nb = 1
  if nb != 1 and nb != 2:
    edges = _asarray_c(bins)
    bins = [edges, edges]
  sample = lax.transpose(_manip.stack(list(promote_dtypes_inexact(x, y))), (1, 0))
  hist, edges = histogramdd(sample, bins, range, weights, density)
  return hist, edges[0], edges[1]


# --- covariance -------------------------------------------------------------------------------
@_library_function(jit=('cov', ('rowvar', 'bias', 'ddof', 'dtype')))
def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None,
        dtype=None):
  """Covariance matrix of the variables in the rows (``rowvar``) or columns of ``m``
  (and ``y``), optionally frequency/analytic weighted.  Negative weights are used by
  absolute value (NumPy raises)."""
  if y is not None:
    m, y = promote_args_inexact("cov", m, y)
    if y.ndim > 2:
      raise ValueError("y has more than 2 dimensions")
  else:
    m, = promote_args_inexact("cov", m)
  if m.ndim > 2:
    raise ValueError("m has more than 2 dimensions")
  if dtype is not None and not dtypes.issubdtype(dtype, np.inexact):
    raise ValueError(f"cov: dtype must be a subclass of float or complex; got dtype={dtype}")
  X = _manip.atleast_2d(m)
  if not rowvar and m.ndim != 1:
    X = lax.transpose(X, (1, 0))
  if X.shape[0] == 0:
    return lax.full((0, 0), 0, dtypes.default_float_dtype())
  if y is not None:
    Y = _manip.atleast_2d(y)
    if not rowvar and Y.shape[0] != 1:
      Y = lax.transpose(Y, (1, 0))
    X = _manip.concatenate([X, Y], axis=0)
  if X.shape[1] == 0:
    shape = () if X.shape[0] == 1 else (X.shape[0], X.shape[0])
    return lax.full(shape, np.nan, X.dtype)
  if ddof is None:
    ddof = 1 if bias == 0 else 0
  w = None
  if fweights is not None:
    fweights = _arr("cov", fweights)
    if fweights.ndim > 1:
      raise RuntimeError("cannot handle multidimensional fweights")
    if fweights.shape[0] != X.shape[1]:
      raise RuntimeError("incompatible numbers of samples and fweights")
    if not dtypes.is_int(fweights.dtype):
      raise TypeError("fweights must be integer.")
    w = _uf.abs(fweights)
  if aweights is not None:
    aweights = _arr("cov", aweights)
    if aweights.ndim > 1:
      raise RuntimeError("cannot handle multidimensional aweights")
    if aweights.shape[0] != X.shape[1]:
      raise RuntimeError("incompatible numbers of samples and aweights")
    aweights = _uf.abs(aweights)
    w = aweights if w is None else _uf.multiply(w, aweights)
  if dtype is not None:
    X = lax.convert_element_type(X, dtype)
    w = lax.convert_element_type(w, dtype) if w is not None else w
  avg, w_sum = _red.average(X, axis=1, weights=w, returned=True)
  w_sum = w_sum[0]
  if w is None:
    f = X.shape[1] - ddof
  elif ddof == 0:
    f = w_sum
  elif aweights is None:
    f = _uf.subtract(w_sum, ddof)
  else:
    f = _uf.subtract(w_sum, _uf.true_divide(_uf.multiply(ddof, _red.sum(
        _uf.multiply(w, aweights))), w_sum))
  X = _uf.subtract(X, avg[:, None])
  XT = lax.transpose(X if w is None else _uf.multiply(X, w[None, :]), (1, 0))
  c = _uf.true_divide(_ops.dot(X, _uf.conj(XT)), f)
  return _manip.squeeze(c)


@_library_function(jit=('corrcoef', ('rowvar', 'dtype')))
def corrcoef(x, y=None, rowvar=True, dtype=None):
  """Pearson correlation coefficients (clipped to [-1, 1])."""
  check_arraylike("corrcoef", x)
  if dtype is not None and not dtypes.issubdtype(dtype, np.inexact):
    raise ValueError(f"corrcoef: dtype must be a subclass of float or complex; got "
                     f"dtype={dtype}")
  c = cov(x, y, rowvar, dtype=dtype)
  if c.ndim == 0:
    return _uf.divide(c, c)
  d = _ops.diagonal(c)
  std = lax.convert_element_type(_uf.sqrt(_uf.real(d)), c.dtype)
  c = _uf.true_divide(_uf.true_divide(c, std[:, None]), std[None, :])
  re = _manip.clip(_uf.real(c), -1, 1)
  if dtypes.is_complex(c.dtype):
    return lax.complex(re, _manip.clip(_uf.imag(c), -1, 1))
  return re
