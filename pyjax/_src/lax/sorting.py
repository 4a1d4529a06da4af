"""Sorting: the ``sort`` primitive (several operands sorted together, lexicographically on
the first ``num_keys``) and ``top_k``; public ``lax.sort``, ``lax.sort_key_val`` and
``lax.top_k``.

Order (as JAX's comparator): NaNs sort after everything, -0.0 equals 0.0, complex
numbers compare by (real, imag); sorting is stable when ``is_stable`` (the CPU backend is
always stable).  ``top_k`` uses the IEEE total order instead (NaN largest, -NaN smallest,
0.0 above -0.0) and breaks ties by the lower index.
"""
from __future__ import annotations

import operator

from pyjax._src import core, dtypes
from pyjax._src.avals import ShapedArray

__all__ = ["sort", "sort_key_val", "top_k", "sort_p", "top_k_p"]


def _canonicalize_axis(axis, ndim):
  axis = operator.index(axis)
  if not -ndim <= axis < ndim:
    raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
  return axis % ndim if ndim else axis


def _aval_of(x, fun_name, pos):
  try:
    if isinstance(x, (list, tuple)):
      raise TypeError
    return core.get_aval(x)
  except TypeError:
    raise TypeError(f"Error interpreting argument to {fun_name} as a JAX value. The "
                    f"problematic value is of type {type(x)} and was passed to {fun_name} at "
                    f"position {pos}.\n") from None


# --- sort --------------------------------------------------------------------------------
sort_p = core.Primitive("sort")
sort_p.multiple_results = True


@sort_p.def_abstract_eval
def _sort_abstract(*operands, dimension, is_stable, num_keys):
  if not operands:
    raise TypeError("Sort requires at least one operand")
  shape = operands[0].shape
  if any(o.shape != shape for o in operands[1:]):
    raise TypeError("Arguments to sort must have equal shapes, got: "
                    + " ".join(str(o.shape) for o in operands))
  if not 0 <= dimension < len(shape):
    raise ValueError(f"axis {dimension} is out of bounds for array of dimension {len(shape)}")
  if not 1 <= num_keys <= len(operands):
    raise ValueError(f"num_keys={num_keys} must be between 1 and len(operand)={len(operands)}")
  return list(operands)


def sort(operand, dimension=-1, is_stable=True, num_keys=1):
  """Sort along ``dimension``.  A sequence of operands is sorted together (lexicographic on
  the first ``num_keys``) and a tuple is returned; a single array returns an array."""
  if isinstance(operand, (list, tuple)):
    if len(operand) == 0:
      raise TypeError("Sort requires at least one operand")
    num_keys = operator.index(num_keys) if not isinstance(num_keys, float) else int(num_keys)
    if not 1 <= num_keys <= len(operand):
      raise ValueError(f"num_keys={num_keys} must be between 1 and len(operand)={len(operand)}")
    ndim = len(core.get_aval(operand[0]).shape)
    dimension = _canonicalize_axis(dimension, ndim)
    return tuple(sort_p.bind(*operand, dimension=dimension, is_stable=bool(is_stable),
                             num_keys=num_keys))
  if num_keys != 1:
    raise ValueError(f"num_keys={num_keys} must equal 1 for a single operand.")
  ndim = len(_aval_of(operand, "sort", 0).shape)
  dimension = _canonicalize_axis(dimension, ndim)
  return sort_p.bind(operand, dimension=dimension, is_stable=bool(is_stable), num_keys=1)[0]


def sort_key_val(keys, values, dimension=-1, is_stable=True):
  """Sort ``keys`` along ``dimension`` and permute ``values`` the same way."""
  ndim = len(_aval_of(keys, "sort", 0).shape)
  dimension = _canonicalize_axis(dimension, ndim)
  k, v = sort_p.bind(keys, values, dimension=dimension, is_stable=bool(is_stable), num_keys=1)
  return k, v


# --- top_k -------------------------------------------------------------------------------
top_k_p = core.Primitive("top_k")
top_k_p.multiple_results = True
top_k_p.arg_names = ("operand",)


@top_k_p.def_abstract_eval
def _top_k_abstract(operand, *, k, axis):
  if dtypes.is_complex(operand.dtype):
    raise ValueError("top_k is not compatible with complex inputs.")
  if k < 0:
    raise ValueError(f"k argument to top_k must be nonnegative, got {k}")
  shape = operand.shape
  if not 0 <= axis < len(shape):
    raise ValueError(f"axis {axis} is out of bounds for array of dimension {len(shape)}")
  if shape[axis] < k:
    raise ValueError("k argument to top_k must be no larger than size along axis; got "
                     f"k={k} with shape={list(shape)} and axis={axis}")
  out_shape = shape[:axis] + (k,) + shape[axis + 1:]
  return [ShapedArray(out_shape, operand.dtype, operand.weak_type),
          ShapedArray(out_shape, dtypes.int32, operand.weak_type)]


def top_k(operand, k, *, axis=-1):
  """The ``k`` largest entries along ``axis`` and their int32 indices, returned as a list
  [values, indices] (as JAX does)."""
  aval = _aval_of(operand, "top_k", 0)
  k = int(core.concrete_or_error(None, k, "The k argument of top_k must be concrete."))
  if k < 0:
    raise ValueError(f"k argument to top_k must be nonnegative, got {k}")
  axis = _canonicalize_axis(axis, aval.ndim)
  return top_k_p.bind(operand, k=k, axis=axis)


# --- differentiation rules ----------------------------------------------------------------
# sort permutes every operand the same way: its JVP sorts an iota along with the operands
# and gathers the tangents with the resulting permutation (JAX's rule); top_k gathers the
# tangent at the returned indices.  Indices carry no tangent.
from pyjax._src.interpreters import ad as _ad  # noqa: E402


def _take_along(t, idx, axis):
  """``t`` gathered at integer ``idx`` along ``axis`` (other dimensions batch)."""
  from pyjax._src.lax import shapes as _shapes
  from pyjax._src.lax import gather_scatter as _slicing
  idx_shape = core.get_aval(idx).shape
  nd = len(idx_shape)
  batch = tuple(i for i in range(nd) if i != axis)
  indices = _shapes.reshape_p.bind(idx, new_sizes=idx_shape + (1,), dimensions=None,
                                   sharding=None)
  dn = _slicing.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(axis,),
                                       start_index_map=(axis,), operand_batching_dims=batch,
                                       start_indices_batching_dims=batch)
  return _slicing.gather_p.bind(t, indices, dimension_numbers=dn, slice_sizes=(1,) * nd,
                                unique_indices=False, indices_are_sorted=False,
                                mode=_slicing.GatherScatterMode.PROMISE_IN_BOUNDS,
                                fill_value=None)


def _sort_jvp(primals, tangents, *, dimension, is_stable, num_keys):
  from pyjax._src.lax import shapes as _shapes
  shape = core.get_aval(primals[0]).shape
  idx_dtype = dtypes.canonicalize_dtype(dtypes.int64)
  iota = _shapes.iota_p.bind(dtype=idx_dtype, shape=tuple(shape), dimension=dimension,
                             sharding=None)
  outs = sort_p.bind(*primals, iota, dimension=dimension, is_stable=is_stable,
                     num_keys=num_keys)
  perm = outs[-1]
  t_out = [t if type(t) is _ad.Zero else _take_along(t, perm, dimension) for t in tangents]
  return list(outs[:-1]), t_out


def _top_k_jvp(primals, tangents, *, k, axis):
  operand, = primals
  g, = tangents
  vals, idx = top_k_p.bind(operand, k=k, axis=axis)
  t = _take_along(g, idx, axis)
  return [vals, idx], [t, _ad.Zero.from_primal_value(idx)]


_ad.primitive_jvps[sort_p] = _sort_jvp
_ad.primitive_jvps[top_k_p] = _top_k_jvp


# --- batching rules -----------------------------------------------------------------------
from pyjax._src.interpreters import batching as _bt  # noqa: E402


def _sort_batch(args, dims, *, dimension, is_stable, num_keys):
  mapped = [d for d in dims if d is not _bt.not_mapped]
  size = next(core.get_aval(x).shape[d] for x, d in zip(args, dims) if d is not _bt.not_mapped)
  d0 = mapped[0] if all(d == mapped[0] for d in mapped) else 0
  xs = [_bt.bdim_to(x, d, d0, size) for x, d in zip(args, dims)]
  new_dim = dimension + 1 if dimension >= d0 else dimension
  outs = sort_p.bind(*xs, dimension=new_dim, is_stable=is_stable, num_keys=num_keys)
  return outs, [d0] * len(outs)


_bt.primitive_batchers[sort_p] = _sort_batch


def _top_k_batch(args, dims, *, k, axis):
  x, = args
  d, = dims
  outs = top_k_p.bind(x, k=k, axis=axis + 1 if axis >= d else axis)
  return outs, [d, d]


_bt.primitive_batchers[top_k_p] = _top_k_batch
