"""Reductions of jax.numpy: sum, prod, max, min, all, any, mean, var, std, average, ptp,
argmax/argmin, count_nonzero, cumulative reductions, the nan* variants and median.

Every function is written on lax primitives (reduce_sum, reduce_max, argmax, cumsum, ...)
with JAX's dtype rules: integer sums and products promote to the default integer width
(bool and int8 -> int32, uint8 -> uint32), means and variances of integers are floats,
half-precision sums are accumulated in float32, and results are strongly typed.
"""
from __future__ import annotations

import builtins
import math
import operator

import numpy as np

from pyjax._src import core, dtypes
from pyjax._src.lax import elementwise as lax_e
from pyjax._src.lax import lax_api as lax
from pyjax._src.lax import reductions as _lax_r
from pyjax._src.numpy.util import library_function as _library_function
from pyjax._src.numpy.util import (check_arraylike, promote_dtypes, promote_dtypes_inexact,
                                   canonicalize_axis)
from pyjax._src.runtime.array import ArrayImpl

__all__ = ["sum", "prod", "max", "min", "amax", "amin", "all", "any", "mean", "var", "std",
           "average", "ptp", "argmax", "argmin", "count_nonzero", "cumsum", "cumprod",
           "cumulative_sum", "cumulative_prod", "nansum", "nanprod", "nanmax", "nanmin",
           "nanmean", "nanvar", "nanstd", "nanargmax", "nanargmin", "nancumsum", "nancumprod",
           "median", "nanmedian"]

_sum, _all, _any, _max, _min = builtins.sum, builtins.all, builtins.any, builtins.max, builtins.min




# --- small helpers shared by the jnp modules written on lax ------------------------------
def _asarray(name, a):
  """check_arraylike, then an Array (Python scalars become weakly typed arrays)."""
  check_arraylike(name, a)
  if type(a) is ArrayImpl or isinstance(a, core.Tracer):
    return a
  if dtypes.has_extended_dtype(a):
    return a   # a typed PRNG key array is an Array already
  aval = core.get_aval(a)
  return lax_e._convert_element_type(a, aval.dtype, aval.weak_type)


def _convert(x, dtype, weak_type=False):
  return lax_e._convert_element_type(x, dtype, weak_type)


def _const(x, value):
  """A strongly typed NumPy scalar of x's dtype (like lax._const)."""
  return np.array(value, dtype=x.dtype)


_canonicalize_axis = canonicalize_axis


def _ensure_optional_axes(axis):
  if axis is None:
    return None
  if isinstance(axis, core.Tracer):
    return core.concrete_or_error(None, axis, "The axis argument must be known statically.")
  try:
    return operator.index(axis)
  except TypeError:
    return tuple(operator.index(i) for i in axis)


def _reduction_dims(ndim, axis):
  if axis is None:
    return tuple(range(ndim))
  axes = axis if isinstance(axis, (tuple, list, np.ndarray)) else (axis,)
  canon = tuple(_canonicalize_axis(x, ndim) for x in axes)
  if len(canon) != len(set(canon)):
    raise ValueError(f"duplicate value in 'axis': {axis}")
  return canon


def _axis_tuple(axis, ndim):
  """Canonical axes (no duplicate check), all axes for None."""
  if axis is None:
    return tuple(range(ndim))
  axes = axis if isinstance(axis, (tuple, list)) else (axis,)
  return tuple(_canonicalize_axis(x, ndim) for x in axes)


def _broadcast_shapes_or_error(*shapes):
  try:
    return tuple(np.broadcast_shapes(*shapes))
  except ValueError:
    raise ValueError("Incompatible shapes for broadcasting: shapes="
                     f"{[tuple(s) for s in shapes]}") from None


def _broadcast_to(x, shape):
  """NumPy-style broadcast of an Array to ``shape``: squeeze the size-1 dimensions that
  grow, then broadcast_in_dim (as jnp.broadcast_to)."""
  shape = tuple(shape)
  if type(x) is not ArrayImpl and not isinstance(x, core.Tracer):
    x = _asarray("broadcast_to", x)
  xs = tuple(x.shape)
  if xs == shape:
    return x
  lead = len(shape) - len(xs)
  if lead < 0 or _any(d != 1 and d != s for d, s in zip(xs, shape[lead:])):
    raise ValueError(f"Incompatible shapes for broadcasting: {xs} and requested shape {shape}")
  grow = tuple(i for i, d in enumerate(xs) if d != shape[lead + i])
  if grow:
    x = lax.squeeze(x, grow)
  kept = tuple(lead + i for i in range(len(xs)) if i not in grow)
  return lax.broadcast_in_dim(x, shape, kept)


def _where(cond, x, y):
  """jnp.where(cond, x, y) on lax: promotes x and y, broadcasts all three."""
  x, y = promote_dtypes(x, y)
  cond = _asarray("where", cond)
  if cond.dtype != dtypes.bool_:
    cond = lax.ne(cond, _const(cond, 0))
  shape = _broadcast_shapes_or_error(np.shape(cond), np.shape(x), np.shape(y))
  return lax.select(_broadcast_to(cond, shape), _broadcast_to(x, shape), _broadcast_to(y, shape))


def _isnan(x):
  return lax.ne(x, x)


def _full(shape, value, dtype, weak_type=False):
  return _broadcast_to(_convert(np.array(value, dtype), dtype, weak_type), shape)


def _expand_dims(x, dims):
  return lax.expand_dims(x, tuple(dims))


def _ravel(x):
  if x.ndim == 1:
    return x
  return lax.reshape(x, (math.prod(x.shape),))


def _to_inexact(d):
  """JAX's to_inexact_dtype: 8-32 bit ints and bool -> float32, 64-bit ints -> float64."""
  if dtypes.is_inexact(d):
    return d
  if d in (dtypes.int64, dtypes.uint64):
    return dtypes.canonicalize_dtype(dtypes.float64)
  return dtypes.float32


def _upcast_f16(d):
  return dtypes.float32 if d in (dtypes.float16, dtypes.bfloat16) else d


def _promote_integer_dtype(d):
  """The dtype integer sums promote to (JAX uses the default int/uint width)."""
  if d == dtypes.bool_:
    return dtypes.default_int_dtype()
  if dtypes.is_unsigned(d):
    du = dtypes.default_uint_dtype()
    return du if dtypes.iinfo(d).bits < dtypes.iinfo(du).bits else d
  if dtypes.is_int(d):
    di = dtypes.default_int_dtype()
    return di if dtypes.iinfo(d).bits < dtypes.iinfo(di).bits else d
  return d


def _check_where(name, where):
  if where is None:
    return None
  where = _asarray(name, where)
  if where.dtype != dtypes.bool_:
    raise ValueError(f"jnp.{name}: where must be None or a boolean array; got "
                     f"where.dtype={where.dtype!r}.")
  return where


def _user_dtype(dtype, name):
  return dtypes.check_user_dtype(dtype, name)


def _reduction_init_val(dtype, init):
  """The identity ``init`` (0, 1, +-inf) as a NumPy scalar of ``dtype``."""
  if dtype == dtypes.bool_:
    return np.array(init > 0, dtype)
  if np.isinf(init) and dtypes.is_float(dtype):
    fi = dtypes.finfo(dtype)
    if not _supports_inf(dtype):
      return np.array(fi.min if init < 0 else fi.max, dtype)
  if dtypes.is_int(dtype) and np.isinf(init):
    ii = dtypes.iinfo(dtype)
    return np.array(ii.min if init < 0 else ii.max, dtype)
  return np.array(init, dtype)


def _supports_inf(d):
  try:
    return bool(np.isinf(np.array(np.inf, d)))
  except (OverflowError, ValueError):
    return False


# --- the generic reduction --------------------------------------------------------------
# kind -> (lax reduction, lax reduction for bool, binary op, binary op for bool, identity)
_KINDS = {
    "sum": ("reduce_sum", "reduce_or", "add", "bitwise_or", 0),
    "prod": ("reduce_prod", "reduce_and", "mul", "bitwise_and", 1),
    "max": ("reduce_max", "reduce_max", "max", "max", -np.inf),
    "min": ("reduce_min", "reduce_min", "min", "min", np.inf),
    "and": ("reduce_and", "reduce_and", "bitwise_and", "bitwise_and", True),
    "or": ("reduce_or", "reduce_or", "bitwise_or", "bitwise_or", False),
}


def _cast_to_numeric(a):
  if a.dtype == dtypes.bool_:
    return _convert(a, dtypes.default_int_dtype(), a.weak_type)
  return a


def _cast_to_bool(a):
  if dtypes.is_complex(a.dtype):
    a = lax.real(a)
  return _convert(a, dtypes.bool_)


def _reduction(a, name, kind, *, has_identity=True, preproc=None, upcast_f16=False,
               axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None,
               promote_integers=False):
  if out is not None:
    raise NotImplementedError(f"The 'out' argument to jnp.{name} is not supported.")
  a = _asarray(name, a)
  where = _check_where(name, where)
  axis = _ensure_optional_axes(axis)
  if initial is None and not has_identity and where is not None:
    raise ValueError(f"reduction operation {name} does not have an identity, so to use a "
                     "where mask one has to specify 'initial'")
  if preproc is not None:
    a = preproc(a)
  dims = _reduction_dims(a.ndim, axis)
  if initial is None and not has_identity:
    if not _all(a.shape[d] >= 1 for d in dims):
      raise ValueError(f"zero-size array to reduction operation {name} which has no identity")
  if dtype is None:
    result_dtype = _promote_integer_dtype(a.dtype) if promote_integers else a.dtype
  else:
    result_dtype = _user_dtype(dtype, name)
  comp_dtype = _upcast_f16(result_dtype) if upcast_f16 and dtypes.is_inexact(result_dtype) \
      else result_dtype
  a = _convert(a, comp_dtype)
  red_name, bool_red_name, op_name, bool_op_name, identity = _KINDS[kind]
  is_bool = comp_dtype == dtypes.bool_
  reducer = getattr(lax, bool_red_name if is_bool else red_name)
  op = getattr(lax, bool_op_name if is_bool else op_name)
  if where is not None:
    a = _where(where, a, _reduction_init_val(comp_dtype, identity))
  result = reducer(a, dims)
  if initial is not None:
    initial_arr = _convert(initial, a.dtype)
    if np.shape(initial_arr) != ():
      raise ValueError("initial value must be a scalar. "
                       f"Got array of shape {np.shape(initial_arr)}")
    result = op(initial_arr, result)
  if keepdims:
    result = _expand_dims(result, dims)
  return _convert(result, result_dtype)


# --- fast paths ---------------------------------------------------------------------------
# A full reduction of a concrete, strongly typed Array whose dtype the reduction keeps is one
# primitive: bind it directly (the general path below does the same after many checks).
_ALL_AXES = [tuple(range(n)) for n in range(65)]
_KEEP_DTYPE = frozenset([dtypes.float32, dtypes.float64, dtypes.complex64, dtypes.complex128])


def _keeps_dtype_for_sum(d):
  return d in _KEEP_DTYPE or d is dtypes.default_int_dtype() or d is dtypes.default_uint_dtype()


def _full_reduce_fast(a, prim, sum_like):
  """The result of reducing all of ``a`` with ``prim`` (reduce_sum/prod/max/min), or None
  when ``a`` is not a plain concrete Array this shortcut applies to."""
  aval = a.aval
  d = aval.dtype
  if aval.weak_type or not (_keeps_dtype_for_sum(d) if sum_like else
                            (d in _KEEP_DTYPE or dtypes.is_int(d))):
    return None
  shape = aval.shape
  if not sum_like and 0 in shape:
    return None  # max/min of an empty array: the general path raises
  axes = _ALL_AXES[len(shape)]
  if prim is _lax_r.reduce_sum_p:
    return prim.bind(a, axes=axes, out_sharding=None)
  return prim.bind(a, axes=axes)


def sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None,
        promote_integers=True):
  """Sum of array elements over the given axes (jnp.sum).

  bool and narrow integers accumulate in the default integer width unless
  ``promote_integers=False``; float16/bfloat16 accumulate in float32."""
  if (type(a) is ArrayImpl and axis is None and dtype is None and out is None
      and not keepdims and initial is None and where is None and promote_integers):
    aval = a.aval
    if aval.dtype in _KEEP_DTYPE and not aval.weak_type:  # the hot path, inlined
      return _lax_r.reduce_sum_p.bind(a, axes=_ALL_AXES[len(aval.shape)], out_sharding=None)
    r = _full_reduce_fast(a, _lax_r.reduce_sum_p, True)
    if r is not None:
      return r
  return _reduction(a, "sum", "sum", preproc=_cast_to_numeric, upcast_f16=dtype is None,
                    axis=axis, dtype=dtype, out=out, keepdims=keepdims, initial=initial,
                    where=where, promote_integers=promote_integers)


def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None,
         promote_integers=True):
  """Product of array elements over the given axes (jnp.prod)."""
  if (type(a) is ArrayImpl and axis is None and dtype is None and out is None
      and not keepdims and initial is None and where is None and promote_integers):
    r = _full_reduce_fast(a, _lax_r.reduce_prod_p, True)
    if r is not None:
      return r
  return _reduction(a, "prod", "prod", preproc=_cast_to_numeric, upcast_f16=dtype is None,
                    axis=axis, dtype=dtype, out=out, keepdims=keepdims, initial=initial,
                    where=where, promote_integers=promote_integers)


def max(a, axis=None, out=None, keepdims=False, initial=None, where=None):
  """Maximum over the given axes (jnp.max); NaNs propagate."""
  if (type(a) is ArrayImpl and axis is None and out is None and not keepdims
      and initial is None and where is None):
    aval = a.aval
    if aval.dtype in _KEEP_DTYPE and not aval.weak_type and 0 not in aval.shape:  # hot path
      return _lax_r.reduce_max_p.bind(a, axes=_ALL_AXES[len(aval.shape)])
    r = _full_reduce_fast(a, _lax_r.reduce_max_p, False)
    if r is not None:
      return r
  return _reduction(a, "max", "max", has_identity=False, axis=axis, out=out,
                    keepdims=keepdims, initial=initial, where=where)


def min(a, axis=None, out=None, keepdims=False, initial=None, where=None):
  """Minimum over the given axes (jnp.min); NaNs propagate."""
  if (type(a) is ArrayImpl and axis is None and out is None and not keepdims
      and initial is None and where is None):
    aval = a.aval
    if aval.dtype in _KEEP_DTYPE and not aval.weak_type and 0 not in aval.shape:  # hot path
      return _lax_r.reduce_min_p.bind(a, axes=_ALL_AXES[len(aval.shape)])
    r = _full_reduce_fast(a, _lax_r.reduce_min_p, False)
    if r is not None:
      return r
  return _reduction(a, "min", "min", has_identity=False, axis=axis, out=out,
                    keepdims=keepdims, initial=initial, where=where)


def amax(a, axis=None, out=None, keepdims=False, initial=None, where=None):
  """Alias of jnp.max."""
  return max(a, axis=axis, out=out, keepdims=keepdims, initial=initial, where=where)


def amin(a, axis=None, out=None, keepdims=False, initial=None, where=None):
  """Alias of jnp.min."""
  return min(a, axis=axis, out=out, keepdims=keepdims, initial=initial, where=where)


def all(a, axis=None, out=None, keepdims=False, *, where=None):
  """True where every element (cast to bool; complex uses the real part, as JAX) is."""
  return _reduction(a, "all", "and", preproc=_cast_to_bool, axis=axis, out=out,
                    keepdims=keepdims, where=where)


def any(a, axis=None, out=None, keepdims=False, *, where=None):
  """True where any element (cast to bool; complex uses the real part, as JAX) is."""
  return _reduction(a, "any", "or", preproc=_cast_to_bool, axis=axis, out=out,
                    keepdims=keepdims, where=where)


# --- mean, var, std, average ------------------------------------------------------------
def _axis_size(shape, axis):
  axes = axis if isinstance(axis, (tuple, list)) else (axis,)
  return math.prod(shape[a] for a in axes)


def _count(a, axis, keepdims, where, dtype):
  if where is None:
    n = math.prod(a.shape) if axis is None else _axis_size(a.shape, axis)
    return np.array(n, dtype)  # a literal in jaxprs (`div x 4.0:f32[]`), as JAX stages it
  return sum(_broadcast_to(where, a.shape), axis, dtype=dtype, keepdims=keepdims)


@_library_function
def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
  """Arithmetic mean (jnp.mean): integers give the default float; half types accumulate
  in float32."""
  if (type(a) is ArrayImpl and dtype is None and out is None and where is None
      and not keepdims and core._state.interp is core.eval_interpreter):
    r = _eager_float_mean(a, axis)
    if r is not None:
      return r
  return _mean(a, _ensure_optional_axes(axis), dtype, out, keepdims, where=where,
               upcast_f16=dtype is None)


_F32_F64 = frozenset([dtypes.float32, dtypes.float64])


def _eager_float_mean(a, axis):
  """Eager mean of a strongly typed float32/float64 Array: ``_mean``'s two primitives
  (the sum, the division by the count) without its per-call checks and the count's
  conversion primitive (a NumPy scalar of the dtype instead: the same bits), or None."""
  aval = a.aval
  if aval.dtype not in _F32_F64 or aval.weak_type:
    return None
  try:
    dims = _reduction_dims(a.ndim, _ensure_optional_axes(axis))
  except Exception:  # noqa: BLE001  -- the general path raises JAX's error
    return None
  if not dims:
    return None
  n = math.prod(aval.shape[d] for d in dims)
  return lax.div(lax.reduce_sum(a, dims), np.array(n, aval.dtype))


def _mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=None, upcast_f16=True):
  a = _asarray("mean", a)
  where = _check_where("mean", where)
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.mean is not supported.")
  if dtype is None:
    result_dtype = _to_inexact(a.dtype)
  else:
    result_dtype = _user_dtype(dtype, "mean")
  comp_dtype = _upcast_f16(result_dtype) if upcast_f16 and dtypes.is_inexact(result_dtype) \
      else result_dtype
  normalizer = _count(a, axis, keepdims, where, comp_dtype)
  total = sum(a, axis, dtype=comp_dtype, keepdims=keepdims, where=where)
  return _convert(lax.div(total, normalizer), result_dtype)


def _var_promote_types(a_dtype, dtype):
  if dtype is not None:
    if not dtypes.is_complex(dtype) and dtypes.is_complex(a_dtype):
      raise ValueError(
          "jax.numpy.var does not yet support real dtype parameters when computing the "
          "variance of an array of complex values. The semantics of numpy.var seem unclear "
          "in this case. Please comment on https://github.com/jax-ml/jax/issues/2283 if this "
          "behavior is important to you.")
    comp = dtype
  elif not dtypes.is_inexact(a_dtype):
    dtype = _to_inexact(a_dtype)
    comp = dtype
  else:
    dtype = {dtypes.complex64: dtypes.float32, dtypes.complex128: dtypes.float64}.get(a_dtype, a_dtype)
    comp = a_dtype
  return _upcast_f16(comp), np.dtype(dtype)


def _ddof_or_correction(ddof, correction):
  if correction is None:
    return ddof
  if not isinstance(ddof, int) or ddof != 0:
    raise ValueError("ddof and correction can't be provided simultaneously.")
  return correction


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None,
        mean=None, correction=None):
  """Variance (jnp.var); ``correction`` is the array-API name of ``ddof``.  Returns NaN
  where the normalizer is not positive."""
  return _var_jit(a, axis, dtype, out, _ddof_or_correction(ddof, correction), keepdims,
                  where, mean)


@_library_function(jit=("_var", ("axis", "dtype", "out", "keepdims")))
def _var_jit(a, axis, dtype, out, correction, keepdims, where, mean):
  """var once its correction is known: JAX's jitted ``_var`` (``correction`` is traced)."""
  a = _asarray("var", a)
  return _var(a, axis=_ensure_optional_axes(axis), dtype=dtype, out=out,
              correction=correction, keepdims=keepdims, where=where, a_mean=mean)


def _var(a, *, axis=None, dtype=None, out=None, correction=0, keepdims=False, where=None,
         a_mean=None):
  where = _check_where("var", where)
  if dtype is not None:
    dtype = _user_dtype(dtype, "var")
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.var is not supported.")
  comp_dtype, dtype = _var_promote_types(a.dtype, dtype)
  if (a_mean is None and where is None and type(a) is ArrayImpl
      and core._state.interp is core.eval_interpreter):
    res = _eager_column_var(a, axis, comp_dtype, dtype, correction, keepdims)
    if res is not None:
      return res
  a = _convert(a, comp_dtype)
  if a_mean is None:
    a_mean = _mean(a, axis, dtype=comp_dtype, keepdims=True, where=where)
  else:
    a_mean = _convert(_asarray("var", a_mean), comp_dtype)
  centered = lax.sub(a, a_mean)
  if dtypes.is_complex(comp_dtype):
    centered = lax.real(lax.mul(centered, lax.conj(centered)))
    comp_dtype = centered.dtype
  else:
    centered = lax.square(centered)
  normalizer = _count(a, axis, keepdims, where, comp_dtype)
  normalizer = lax.sub(normalizer, _convert(correction, comp_dtype))
  result = sum(centered, axis, dtype=comp_dtype, keepdims=keepdims, where=where)
  result = _convert(lax.div(result, normalizer), dtype)
  return _where(lax.gt(normalizer, _const(normalizer, 0)), result, np.nan)


def _eager_column_var(a, axis, comp_dtype, dtype, correction, keepdims):
  """Eager ``_var`` of a concrete float32/float64 Array in one backend step
  (``run_composite("column_var")``: the same bits as the primitives below one by one),
  or None: the backend has no such step for this layout."""
  d = a.dtype
  if (d != comp_dtype or d != dtype or a.aval.weak_type or a.size <= 65536
      or type(correction) not in (int, float)):
    return None
  try:
    axes = _axis_tuple(axis, a.ndim)
  except Exception:  # noqa: BLE001  -- the primitives raise JAX's error
    return None
  if len(set(axes)) != len(axes):
    return None
  from pyjax._src.avals import ShapedArray
  from pyjax._src.runtime import dispatch
  shape = tuple(1 if i in axes else n for i, n in enumerate(a.shape) if keepdims or i not in axes)
  res = dispatch.run_composite("column_var", (a,), {"axes": axes, "correction": correction},
                               (ShapedArray(shape, d),))
  return None if res is None else res[0]


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None,
        mean=None, correction=None):
  """Standard deviation (jnp.std): sqrt of jnp.var."""
  return _std_jit(a, axis, dtype, out, _ddof_or_correction(ddof, correction), keepdims,
                  where, mean)


@_library_function(jit=("_std", ("axis", "dtype", "out", "keepdims")))
def _std_jit(a, axis, dtype, out, correction, keepdims, where, mean):
  """std once its correction is known: JAX's jitted ``_std`` (``correction`` is traced)."""
  a = _asarray("std", a)
  where = _check_where("std", where)
  if dtype is not None:
    dtype = _user_dtype(dtype, "std")
    if not dtypes.is_inexact(dtype):
      raise ValueError(f"dtype argument to jnp.std must be inexact; got {dtype}")
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.std is not supported.")
  return lax.sqrt(_var_jit(a, axis, dtype, None, correction, keepdims, where, mean))


@_library_function
def average(a, axis=None, weights=None, returned=False, keepdims=False):
  """Weighted average (jnp.average); with ``returned=True`` also the sum of weights."""
  axis = _ensure_optional_axes(axis)
  if weights is None:
    a = _asarray("average", a)
    a, = promote_dtypes_inexact(a)
    axis_tuple = _axis_tuple(axis, a.ndim)
    avg = mean(a, axis=axis, keepdims=keepdims)
    weights_sum = _full((), math.prod(a.shape[d] for d in axis_tuple), avg.dtype)
  else:
    check_arraylike("average", a, weights)
    a, weights = promote_dtypes_inexact(_asarray("average", a), _asarray("average", weights))
    axis_tuple = _axis_tuple(axis, a.ndim)
    if a.shape != weights.shape:
      if axis is None:
        raise ValueError("Axis must be specified when shapes of a and weights differ.")
      if weights.shape != tuple(a.shape[ax] for ax in axis_tuple):
        raise ValueError("Shape of weights must be consistent with shape of a along "
                         "specified axis.")
      order = tuple(int(i) for i in np.argsort(axis_tuple))
      if order != tuple(range(len(order))):
        weights = lax.transpose(weights, order)
      new_shape = tuple(d if i in axis_tuple else 1 for i, d in enumerate(a.shape))
      weights = lax.reshape(weights, new_shape)
    from pyjax._src.numpy import ufuncs
    weights_sum = sum(weights, axis=axis, keepdims=keepdims)
    avg = ufuncs.true_divide(sum(ufuncs.multiply(a, weights), axis=axis, keepdims=keepdims),
                             weights_sum)
  if returned:
    if avg.shape != weights_sum.shape:
      weights_sum = _broadcast_to(weights_sum, avg.shape)
    return avg, weights_sum
  return avg


@_library_function(jit=('_ptp', ('axis', 'out', 'keepdims')))
def ptp(a, axis=None, out=None, keepdims=False):
  """Range of values (max - min) along the axes (jnp.ptp)."""
  a = _asarray("ptp", a)
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.ptp is not supported.")
  axis = _ensure_optional_axes(axis)
  return lax.sub(amax(a, axis=axis, keepdims=keepdims), amin(a, axis=axis, keepdims=keepdims))


@_library_function(jit=('count_nonzero', ('axis', 'keepdims')))
def count_nonzero(a, axis=None, keepdims=False):
  """Number of non-zero elements, as the default integer dtype."""
  a = _asarray("count_nonzero", a)
  return sum(lax.ne(a, _const(a, 0)), axis=axis, dtype=dtypes.default_int_dtype(),
             keepdims=keepdims)


# --- argmax / argmin --------------------------------------------------------------------
def _arg_reduction(name, lax_name, a, axis, out, keepdims):
  a = _asarray(name, a)
  if out is not None:
    raise NotImplementedError(f"The 'out' argument to jnp.{name} is not supported.")
  axis = None if axis is None else operator.index(axis)
  keepdims = bool(keepdims)
  if axis is None:
    dims = tuple(range(a.ndim))
    a = lax.reshape(a, (math.prod(a.shape),)) if a.ndim != 1 else a
    axis = 0
  else:
    a.shape[axis]  # noqa: B018  (IndexError for out-of-range axes, as JAX)
    axis = _canonicalize_axis(axis, a.ndim)
    dims = (axis,)
  if a.shape[axis] == 0:
    raise ValueError(f"attempt to get {name} of an empty sequence")
  result = getattr(lax, lax_name)(a, axis, dtypes.default_int_dtype())
  return _expand_dims(result, dims) if keepdims else result


def argmax(a, axis=None, out=None, keepdims=None):
  """Index of the maximum (first occurrence; NaN counts as the maximum)."""
  return _arg_reduction("argmax", "argmax", a, axis, out, keepdims)


def argmin(a, axis=None, out=None, keepdims=None):
  """Index of the minimum (first occurrence; NaN counts as the minimum)."""
  return _arg_reduction("argmin", "argmin", a, axis, out, keepdims)


def _nanarg(name, fill, a, axis, out, keepdims):
  if out is not None:
    raise NotImplementedError(f"The 'out' argument to jnp.{name} is not supported.")
  a = _asarray(name, a)
  axis = None if axis is None else operator.index(axis)
  keepdims = bool(keepdims)
  base = argmax if name == "nanargmax" else argmin
  if not dtypes.is_inexact(a.dtype):
    return base(a, axis=axis, keepdims=keepdims)
  nan_mask = _isnan(a)
  res = base(_where(nan_mask, fill, a), axis=axis, keepdims=keepdims)
  return _where(all(nan_mask, axis=axis, keepdims=keepdims), -1, res)


@_library_function(jit=('_nanargmax', ('axis', 'out', 'keepdims')))
def nanargmax(a, axis=None, out=None, keepdims=None):
  """argmax ignoring NaNs; -1 where a slice is all NaN (NumPy raises instead)."""
  return _nanarg("nanargmax", -np.inf, a, axis, out, keepdims)


@_library_function(jit=('_nanargmin', ('axis', 'out', 'keepdims')))
def nanargmin(a, axis=None, out=None, keepdims=None):
  """argmin ignoring NaNs; -1 where a slice is all NaN (NumPy raises instead)."""
  return _nanarg("nanargmin", np.inf, a, axis, out, keepdims)


# --- nan reductions ---------------------------------------------------------------------
def _nan_reduction(a, name, reduction, init_val, nan_if_all_nan, axis=None, keepdims=False,
                   where=None, **kwargs):
  a = _asarray(name, a)
  where = _check_where(name, where)
  if not dtypes.is_inexact(a.dtype):
    return reduction(a, axis=axis, keepdims=keepdims, where=where, **kwargs)
  filled = _where(_isnan(a), _reduction_init_val(a.dtype, init_val), a)
  out = reduction(filled, axis=axis, keepdims=keepdims, where=where, **kwargs)
  if nan_if_all_nan:
    return _where(all(_isnan(a), axis=axis, keepdims=keepdims), _const(a, np.nan), out)
  return out


@_library_function(jit=('nanmin', ('axis', 'out', 'keepdims')))
def nanmin(a, axis=None, out=None, keepdims=False, initial=None, where=None):
  """min ignoring NaNs (NaN where a slice is all NaN and no ``initial`` is given)."""
  return _nan_reduction(a, "nanmin", min, np.inf, initial is None, axis=axis, out=out,
                        keepdims=keepdims, initial=initial, where=where)


@_library_function(jit=('nanmax', ('axis', 'out', 'keepdims')))
def nanmax(a, axis=None, out=None, keepdims=False, initial=None, where=None):
  """max ignoring NaNs (NaN where a slice is all NaN and no ``initial`` is given)."""
  return _nan_reduction(a, "nanmax", max, -np.inf, initial is None, axis=axis, out=out,
                        keepdims=keepdims, initial=initial, where=where)


@_library_function(jit=('nansum', ('axis', 'dtype', 'out', 'keepdims')))
def nansum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
  """sum treating NaNs as zero."""
  if dtype is not None:
    dtype = _user_dtype(dtype, "nanprod")
  return _nan_reduction(a, "nansum", sum, 0, False, axis=axis, dtype=dtype, out=out,
                        keepdims=keepdims, initial=initial, where=where)


@_library_function(jit=('nanprod', ('axis', 'dtype', 'out', 'keepdims')))
def nanprod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
  """prod treating NaNs as one."""
  if dtype is not None:
    dtype = _user_dtype(dtype, "nanprod")
  return _nan_reduction(a, "nanprod", prod, 1, False, axis=axis, dtype=dtype, out=out,
                        keepdims=keepdims, initial=initial, where=where)


@_library_function(jit=('nanmean', ('axis', 'dtype', 'out', 'keepdims')))
def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, where=None):
  """mean ignoring NaNs (NaN where a slice is all NaN)."""
  a = _asarray("nanmean", a)
  where = _check_where("nanmean", where)
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.nanmean is not supported.")
  if not dtypes.is_inexact(a.dtype):
    return mean(a, axis, dtype, out, keepdims, where=where)
  dtype = _to_inexact(a.dtype) if dtype is None else _user_dtype(dtype, "mean")
  normalizer = sum(lax.bitwise_not(_isnan(a)), axis=axis, dtype=dtype, keepdims=keepdims,
                   where=where)
  return lax.div(nansum(a, axis, dtype=dtype, keepdims=keepdims, where=where), normalizer)


@_library_function(jit=('nanvar', ('axis', 'dtype', 'out', 'keepdims')))
def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None, mean=None):
  """var ignoring NaNs (NaN where fewer than ddof+1 values remain)."""
  a = _asarray("nanvar", a)
  where = _check_where("nanvar", where)
  if dtype is not None:
    dtype = _user_dtype(dtype, "nanvar")
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.nanvar is not supported.")
  comp_dtype, dtype = _var_promote_types(a.dtype, dtype)
  a = _convert(a, comp_dtype)
  if mean is None:
    a_mean = nanmean(a, axis, dtype=comp_dtype, keepdims=True, where=where)
  else:
    a_mean = _convert(_asarray("nanvar", mean), comp_dtype)
  centered = _where(_isnan(a), 0, lax.sub(a, a_mean))
  if dtypes.is_complex(centered.dtype):
    centered = lax.real(lax.mul(centered, lax.conj(centered)))
  else:
    centered = lax.square(centered)
  normalizer = sum(lax.bitwise_not(_isnan(a)), axis=axis, keepdims=keepdims, where=where)
  normalizer = lax.sub(normalizer, _convert(ddof, normalizer.dtype))
  mask = lax.le(normalizer, _const(normalizer, 0))
  result = sum(centered, axis, keepdims=keepdims, where=where)
  result = _where(mask, np.nan, result)
  divisor = _where(mask, 1, normalizer)
  result = lax.div(result, _convert(divisor, result.dtype))
  return _convert(result, dtype)


@_library_function(jit=('nanstd', ('axis', 'dtype', 'out', 'keepdims')))
def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None, mean=None):
  """std ignoring NaNs."""
  a = _asarray("nanstd", a)
  where = _check_where("nanstd", where)
  if dtype is not None:
    dtype = _user_dtype(dtype, "nanstd")
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.nanstd is not supported.")
  return lax.sqrt(nanvar(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims,
                         where=where, mean=mean))


# --- cumulative reductions --------------------------------------------------------------
def _cumulative_reduction(name, lax_name, a, axis, dtype, out=None, fill_nan=False,
                          fill_value=0, promote_integers=False):
  a = _asarray(name, a)
  if out is not None:
    raise NotImplementedError(f"The 'out' argument to jnp.{name} is not supported")
  if axis is None or (a.ndim == 0 and a.weak_type):
    a = lax.reshape(a, (math.prod(a.shape),))
  if axis is None:
    axis = 0
  axis = _canonicalize_axis(axis, a.ndim)
  if fill_nan:
    a = _where(_isnan(a), _const(a, fill_value), a)
  if dtype is None:
    result_dtype = _promote_integer_dtype(a.dtype) \
        if promote_integers or a.dtype == dtypes.bool_ else a.dtype
    comp_dtype = result_dtype
  elif dtypes.to_numpy_dtype(dtype) == dtypes.bool_:
    result_dtype = dtypes.bool_
    if a.dtype != dtypes.bool_:
      a = lax.ne(a, _const(a, 0))
    comp_dtype = _promote_integer_dtype(result_dtype)
  else:
    result_dtype = _user_dtype(dtype, name)
    comp_dtype = result_dtype
  a = _convert(a, comp_dtype)
  result = getattr(lax, lax_name)(a, axis)
  return _convert(result, result_dtype)


@_library_function(jit=('cumsum', ('axis', 'dtype', 'out')))
def cumsum(a, axis=None, dtype=None, out=None):
  """Cumulative sum; ``axis=None`` flattens first.  bool sums as the default int."""
  return _cumulative_reduction("cumsum", "cumsum", a, axis, dtype, out)


@_library_function(jit=('cumprod', ('axis', 'dtype', 'out')))
def cumprod(a, axis=None, dtype=None, out=None):
  """Cumulative product; ``axis=None`` flattens first."""
  return _cumulative_reduction("cumprod", "cumprod", a, axis, dtype, out)


@_library_function(jit=('nancumsum', ('axis', 'dtype', 'out')))
def nancumsum(a, axis=None, dtype=None, out=None):
  """Cumulative sum treating NaNs as zero."""
  return _cumulative_reduction("nancumsum", "cumsum", a, axis, dtype, out, fill_nan=True,
                               fill_value=0)


@_library_function(jit=('nancumprod', ('axis', 'dtype', 'out')))
def nancumprod(a, axis=None, dtype=None, out=None):
  """Cumulative product treating NaNs as one."""
  return _cumulative_reduction("nancumprod", "cumprod", a, axis, dtype, out, fill_nan=True,
                               fill_value=1)


def _array_api_cumulative(name, what, x, axis, dtype, include_initial, lax_name, identity,
                          promote_integers):
  x = _asarray(name, x)
  if x.ndim == 0:
    raise ValueError(f"The input must be non-scalar to take a cumulative {what}, however a "
                     "scalar value or scalar array was given.")
  if axis is None:
    axis = 0
    if x.ndim > 1:
      raise ValueError(f"The input array has rank {x.ndim}, however axis was not set to an "
                       "explicit value. The axis argument is only optional for "
                       "one-dimensional arrays.")
  axis = _canonicalize_axis(axis, x.ndim)
  if dtype is not None:
    dtype = _user_dtype(dtype, None)
  out = _cumulative_reduction(name, lax_name, x, axis, dtype,
                              promote_integers=promote_integers)
  if include_initial:
    shape = list(x.shape)
    shape[axis] = 1
    out = lax.concatenate([_full(tuple(shape), identity, out.dtype), out], axis)
  return out


def cumulative_sum(x, /, *, axis=None, dtype=None, include_initial=False):
  """Array-API cumulative sum (integers promote like jnp.sum)."""
  return _array_api_cumulative("cumulative_sum", "sum", x, axis, dtype, include_initial,
                               "cumsum", 0, True)


def cumulative_prod(x, /, *, axis=None, dtype=None, include_initial=False):
  """Array-API cumulative product (no integer promotion except bool, as JAX)."""
  return _array_api_cumulative("cumulative_prod", "product", x, axis, dtype, include_initial,
                               "cumprod", 1, False)


# --- median -----------------------------------------------------------------------------
def _median(name, a, axis, out, overwrite_input, keepdims, squash_nans):
  """JAX's definition: the midpoint quantile at 0.5 (nanquantile for nanmedian)."""
  from pyjax._src.numpy import statistics
  a = _asarray(name, a)
  if isinstance(axis, list):
    raise ValueError("Non-hashable static arguments are not supported. An error occurred "
                     "while trying to hash an object of type <class 'list'>, "
                     f"{axis}. The error was:\nTypeError: unhashable type: 'list'\n")
  fn = statistics.nanquantile if squash_nans else statistics.quantile
  return fn(a, 0.5, axis=axis, out=out, overwrite_input=overwrite_input, keepdims=keepdims,
            method="midpoint")


@_library_function(jit=('median', ('axis', 'out', 'overwrite_input', 'keepdims')))
def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
  """Median (midpoint of the two middle values); NaN where a slice has a NaN.  ``axis``
  may be an int or a tuple.  Empty inputs raise, as in JAX."""
  return _median("median", a, axis, out, overwrite_input, keepdims, False)


@_library_function(jit=('nanmedian', ('axis', 'out', 'overwrite_input', 'keepdims')))
def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=False):
  """Median ignoring NaNs (NaN where a slice is all NaN)."""
  return _median("nanmedian", a, axis, out, overwrite_input, keepdims, True)
