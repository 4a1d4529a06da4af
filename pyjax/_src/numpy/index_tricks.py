"""Index helpers of jax.numpy: ix_, indices, the tril/triu/diag/mask index functions,
ravel_multi_index, unravel_index, fill_diagonal, and the index objects r_, c_, s_,
index_exp, mgrid and ogrid.

Index arrays are of the default integer type.  Functions whose results depend on values
(``mask_indices``) need concrete inputs unless ``size=`` is given.
"""
from __future__ import annotations

import operator

import numpy as np

from pyjax._src import core, dtypes
from pyjax._src.lax import lax_api as lax
from pyjax._src.numpy import creation as _creation
from pyjax._src.numpy import manipulation as _manip
from pyjax._src.numpy import reductions as _red
from pyjax._src.numpy import ufuncs as _uf
from pyjax._src.numpy.array_constructors import array as _array
from pyjax._src.numpy.util import check_arraylike, promote_dtypes

__all__ = ["ix_", "indices", "tril_indices", "triu_indices", "tril_indices_from",
           "triu_indices_from", "diag_indices", "diag_indices_from", "mask_indices",
           "ravel_multi_index", "unravel_index", "fill_diagonal", "r_", "c_", "s_",
           "index_exp", "mgrid", "ogrid"]


def _int():
  return dtypes.default_int_dtype()


def _op_index(x, what):
  return core.concrete_or_error(operator.index, x, what)


def ix_(*args):
  """Open mesh from 1-D index arrays: argument i reshaped to have its length in
  dimension i and 1 elsewhere."""
  check_arraylike("ix_", *args)
  args = [_red._asarray("ix_", a) for a in args]
  n = len(args)
  out = []
  for i, a in enumerate(args):
    if a.ndim != 1:
      raise ValueError(f"Arguments to jax.numpy.ix_ must be 1-dimensional, got shape {a.shape}")
    if a.dtype == dtypes.bool_:
      raise NotImplementedError("Boolean arguments to jax.numpy.ix_ are not implemented")
    shape = [1] * n
    shape[i] = a.shape[0]
    if a.size == 0:
      out.append(lax.full(shape, 0, dtypes.canonicalize_dtype(np.intp)))
    else:
      out.append(lax.broadcast_in_dim(a, tuple(shape), (i,)))
  return tuple(out)


def indices(dimensions, dtype=None, sparse=False):
  """Grid indices: an array ``[len(dimensions), *dimensions]`` (or, ``sparse``, a tuple of
  broadcastable arrays)."""
  dtype = _int() if dtype is None else dtypes.check_user_dtype(dtype, "indices")
  dims = tuple(_op_index(d, "dimensions argument of jnp.indices") for d in dimensions)
  N = len(dims)
  out = []
  for i, d in enumerate(dims):
    idx = lax.iota(dtype, d)
    shape = (1,) * i + (d,) + (1,) * (N - i - 1) if sparse else dims
    out.append(lax.broadcast_in_dim(idx, shape, (i,)))
  if sparse:
    return tuple(out)
  return _manip.stack(out, 0) if out else _array([], dtype=dtype)


def _np_indices(fn, *args):
  return tuple(_array(np.asarray(i, dtype=_int())) for i in fn(*args))


def tril_indices(n, k=0, m=None):
  """Row and column indices of the lower triangle of an ``(n, m)`` array."""
  n = _op_index(n, "n argument of jnp.tril_indices")
  k = _op_index(k, "k argument of jnp.tril_indices")
  m = n if m is None else _op_index(m, "m argument of jnp.tril_indices")
  return _np_indices(np.tril_indices, n, k, m)


def triu_indices(n, k=0, m=None):
  """Row and column indices of the upper triangle of an ``(n, m)`` array."""
  n = _op_index(n, "n argument of jnp.triu_indices")
  k = _op_index(k, "k argument of jnp.triu_indices")
  m = n if m is None else _op_index(m, "m argument of jnp.triu_indices")
  return _np_indices(np.triu_indices, n, k, m)


def tril_indices_from(arr, k=0):
  """tril_indices for the shape of the 2-D ``arr``."""
  shape = np.shape(arr)
  if len(shape) != 2:
    raise ValueError("Only 2-D inputs are accepted")
  return tril_indices(shape[0], k=k, m=shape[1])


def triu_indices_from(arr, k=0):
  """triu_indices for the shape of the 2-D ``arr``."""
  shape = np.shape(arr)
  if len(shape) != 2:
    raise ValueError("Only 2-D inputs are accepted")
  return triu_indices(shape[0], k=k, m=shape[1])


def diag_indices(n, ndim=2):
  """Indices of the main diagonal of an ``ndim``-dimensional array of side ``n``."""
  n = _op_index(n, "'n' argument of jnp.diag_indices()")
  ndim = _op_index(ndim, "'ndim' argument of jnp.diag_indices()")
  if n < 0:
    raise ValueError(f"n argument to diag_indices must be nonnegative, got {n}")
  if ndim < 0:
    raise ValueError(f"ndim argument to diag_indices must be nonnegative, got {ndim}")
  return (lax.iota(_int(), n),) * ndim


def diag_indices_from(arr):
  """diag_indices for the (hyper-cubic) shape of ``arr``."""
  check_arraylike("diag_indices_from", arr)
  shape = np.shape(arr)
  if len(shape) < 2:
    raise ValueError("input array must be at least 2-d")
  if len(set(shape)) != 1:
    raise ValueError("All dimensions of input must be of equal length")
  return diag_indices(shape[0], ndim=len(shape))


def mask_indices(n, mask_func, k=0, *, size=None):
  """Indices where ``mask_func(ones((n, n)), k)`` is nonzero (e.g. ``jnp.triu``);
  ``size`` pads/truncates them to a static length (zeros as padding)."""
  a = mask_func(_creation.ones((n, n)), k)
  if size is None:
    m = core.concrete_or_error(np.asarray, a, "The error arose in jnp.mask_indices()")
    return tuple(_array(i.astype(_int())) for i in np.nonzero(m))
  size = _op_index(size, "size argument of jnp.mask_indices")
  flat = _manip.ravel(lax.ne(a, np.array(0, a.dtype)))
  d = _int()
  pos = lax.sub(_red.cumsum(lax.convert_element_type(flat, d)), np.array(1, d))
  pos = _red._where(flat, pos, np.array(size, d))
  lin = lax.full((size,), 0, d).at[pos].set(lax.iota(d, n * n), mode="drop")
  return tuple(unravel_index(lin, (n, n)))


def ravel_multi_index(multi_index, dims, mode="raise", order="C"):
  """Flat indices of the coordinate arrays ``multi_index`` into an array of shape
  ``dims``; ``mode`` 'raise' (concrete inputs only), 'wrap' or 'clip'."""
  if len(multi_index) != len(dims):
    raise ValueError(f"len(multi_index)={len(multi_index)} != len(dims)={len(dims)}")
  dims = tuple(_op_index(d, "in `dims` argument of ravel_multi_index().") for d in dims)
  check_arraylike("ravel_multi_index", *multi_index)
  idx = [_red._asarray("ravel_multi_index", i) for i in multi_index]
  for i in idx:
    if mode == "raise":
      core.concrete_or_error(None, i, "The error occurred because ravel_multi_index was "
                             "jit-compiled with mode='raise'. Use mode='wrap' or mode='clip' "
                             "instead.")
    if not dtypes.is_int(i.dtype):
      raise TypeError("only int indices permitted")
  if mode == "raise":
    if any(bool(np.any((np.asarray(i) < 0) | (np.asarray(i) >= d))) for i, d in zip(idx, dims)):
      raise ValueError("invalid entry in coordinates array")
  elif mode == "clip":
    idx = [_manip.clip(i, 0, d - 1) for i, d in zip(idx, dims)]
  elif mode == "wrap":
    idx = [_uf.remainder(i, d) for i, d in zip(idx, dims)]
  else:
    raise ValueError(f"invalid mode={mode!r}. Expected 'raise', 'wrap', or 'clip'")
  if order == "F":
    strides = np.cumprod((1,) + dims[:-1])
  elif order == "C":
    strides = np.cumprod((1,) + dims[1:][::-1])[::-1]
  else:
    raise ValueError(f"invalid order={order!r}. Expected 'C' or 'F'")
  result = _array(0, dtype=idx[0].dtype if idx else _int())
  for i, s in zip(idx, strides):
    result = _uf.add(result, _uf.multiply(i, int(s)))
  return result


def unravel_index(indices, shape):
  """Coordinates of flat ``indices`` in an array of ``shape``; out-of-range indices are
  clipped (JAX's behaviour; NumPy raises)."""
  check_arraylike("unravel_index", indices)
  idx = _red._asarray("unravel_index", indices)
  try:
    shape = list(shape)
  except TypeError:
    shape = [shape]
  if any(np.ndim(s) != 0 for s in shape):
    raise ValueError("unravel_index: shape should be a scalar or 1D sequence.")
  out = [0] * len(shape)
  for i, s in reversed(list(enumerate(shape))):
    idx, out[i] = _uf.divmod(idx, s)
  oob_pos = _uf.greater(idx, 0)
  oob_neg = _uf.less(idx, -1)
  return tuple(_red._where(oob_pos, _uf.subtract(s, 1), _red._where(oob_neg, 0, i))
               for s, i in zip(shape, out))


def fill_diagonal(a, val, wrap=False, *, inplace=True):
  """``a`` with its main diagonal set to ``val`` (repeated as needed).  Needs
  ``inplace=False`` (arrays are immutable); ``wrap=True`` is not supported (as in JAX)."""
  if inplace:
    raise NotImplementedError("JAX arrays are immutable, must use inplace=False")
  if wrap:
    raise NotImplementedError("wrap=True is not implemented, must use wrap=False")
  check_arraylike("fill_diagonal", a, val)
  a, val = _red._asarray("fill_diagonal", a), _red._asarray("fill_diagonal", val)
  if a.ndim < 2:
    raise ValueError("array must be at least 2-d")
  if a.ndim > 2 and not all(n == a.shape[0] for n in a.shape[1:]):
    raise ValueError("All dimensions of input must be of equal length")
  n = min(a.shape)
  idx = diag_indices(n, a.ndim)
  if val.ndim:
    flat = _manip.ravel(val)
    if flat.shape[0] == 0:
      return a
    reps = -(-n // flat.shape[0])
    val = _manip.tile(flat, reps)[:n]
  return a.at[idx].set(val)


# --- index objects --------------------------------------------------------------------------
def _grid_1d(s, op_name):
  start = core.concrete_or_error(None, s.start, f"slice start of jnp.{op_name}") or 0
  stop = core.concrete_or_error(None, s.stop, f"slice stop of jnp.{op_name}")
  step = core.concrete_or_error(None, s.step, f"slice step of jnp.{op_name}") or 1
  if np.iscomplex(step):
    return _creation.linspace(start, stop, int(abs(step)))
  return _creation.arange(start, stop, step)


class _Mgrid:
  """``mgrid[a:b:c, ...]``: dense coordinate grids (a complex step ``nj`` means ``n``
  points, endpoint included)."""

  def __getitem__(self, key):
    if isinstance(key, slice):
      return _grid_1d(key, "mgrid")
    out = promote_dtypes(*[_grid_1d(k, "mgrid") for k in key])
    grids = _creation.meshgrid(*out, indexing="ij", sparse=False)
    if len(grids) == 0:
      return _creation.arange(0)
    return _manip.stack(grids, 0)


class _Ogrid:
  """``ogrid[a:b:c, ...]``: open (broadcastable) coordinate grids."""

  def __getitem__(self, key):
    if isinstance(key, slice):
      return _grid_1d(key, "ogrid")
    out = promote_dtypes(*[_grid_1d(k, "ogrid") for k in key])
    return _creation.meshgrid(*out, indexing="ij", sparse=True)


class _AxisConcat:
  """Concatenation by indexing (NumPy's r_/c_): items are arrays, scalars or slices
  (turned into ranges); an optional leading string directive 'axis,ndmin,trans1d' or
  'r'/'c' (make a row/column matrix)."""
  axis = 0
  ndmin = 1
  trans1d = -1
  op_name = ""

  def __getitem__(self, key):
    items = key if isinstance(key, tuple) else (key,)
    params = [self.axis, self.ndmin, self.trans1d, -1]
    directive = items[0]
    if isinstance(directive, str):
      items = items[1:]
      if directive == "r":
        params[-1] = 0
      elif directive == "c":
        params[-1] = 1
      else:
        vec = directive.split(",")
        if len(vec) < 4:
          vec += params[len(vec):]
        else:
          vec = vec[:3] + [params[-1]]
        try:
          params = [int(v) for v in vec]
        except ValueError as err:
          raise ValueError(f"could not understand directive {directive!r}") from err
    axis, ndmin, trans1d, matrix = params
    out = []
    for item in items:
      if isinstance(item, slice):
        obj = _grid_1d(item, self.op_name)
        item_ndim = 0
      elif isinstance(item, str):
        raise ValueError("string directive must be placed at the beginning")
      else:
        obj = _array(item, copy=False)
        item_ndim = obj.ndim
      obj = _array(obj, copy=False, ndmin=ndmin)
      if trans1d != -1 and ndmin - item_ndim > 0:
        order = tuple(range(ndmin))
        shifts = ndmin - abs(ndmin + trans1d + 1) % ndmin
        obj = _manip.transpose(obj, order[shifts:] + order[:shifts])
      out.append(obj)
    res = _manip.concatenate(tuple(out), axis=axis)
    if matrix != -1 and res.ndim == 1:
      res = _manip.expand_dims(res, matrix)
    return res

  def __len__(self):
    return 0


class RClass(_AxisConcat):
  """``r_[...]``: concatenate along the first axis."""
  axis, ndmin, trans1d, op_name = 0, 1, -1, "r_"


class CClass(_AxisConcat):
  """``c_[...]``: stack 1-D items as columns, concatenate along the last axis."""
  axis, ndmin, trans1d, op_name = -1, 2, 0, "c_"


mgrid = _Mgrid()
ogrid = _Ogrid()
r_ = RClass()
c_ = CClass()
s_ = np.s_
index_exp = np.index_exp
