"""Gather and scatter primitives (``gather_p``, ``scatter_p``, ``scatter-add`` …) and the
public ``lax.gather`` / ``lax.scatter*`` functions, with XLA's dimension-number semantics.

Dimension numbers follow JAX: the index vector dimension is always the last dimension of
the indices; batching dimensions (``operand_batching_dims`` and
``start_indices_batching_dims`` / ``scatter_indices_batching_dims``) are supported.

Out-of-bounds behaviour (``GatherScatterMode``):

* ``CLIP``: start indices are clamped so the whole slice / update window is in bounds.
* ``FILL_OR_DROP``: a gathered slice that is partly out of bounds is replaced by
  ``fill_value``; a scattered window that is partly out of bounds is dropped.
* ``PROMISE_IN_BOUNDS``: what XLA does: gathers clamp, scatters drop.

Scatter primitives carry ``update_jaxpr`` (the scalar combiner, as a jaxpr: ``None`` for
a plain scatter) and ``update_consts``, as JAX's jaxprs show them.
"""
from __future__ import annotations

import enum
import operator
import weakref
from typing import NamedTuple, Sequence

import numpy as np

from pyjax._src import core, dtypes
from pyjax._src.avals import ShapedArray
from pyjax._src.lax import elementwise as _ew
from pyjax._src.lax import shapes as lax_s
from pyjax._src.lax import utils

__all__ = ["GatherDimensionNumbers", "ScatterDimensionNumbers", "GatherScatterMode",
           "gather", "scatter", "scatter_add", "scatter_sub", "scatter_mul", "scatter_min",
           "scatter_max", "scatter_apply", "index_take",
           "gather_p", "scatter_p", "scatter_add_p", "scatter_sub_p", "scatter_mul_p",
           "scatter_min_p", "scatter_max_p"]


# --- dimension numbers and modes --------------------------------------------------------
class GatherDimensionNumbers(NamedTuple):
  """The dimension numbers of XLA's Gather (``index_vector_dim`` is always the last
  dimension of the indices, as in JAX)."""
  offset_dims: tuple[int, ...]
  collapsed_slice_dims: tuple[int, ...]
  start_index_map: tuple[int, ...]
  operand_batching_dims: tuple[int, ...] = ()
  start_indices_batching_dims: tuple[int, ...] = ()


class ScatterDimensionNumbers(NamedTuple):
  """The dimension numbers of XLA's Scatter (``index_vector_dim`` is always the last
  dimension of the indices, as in JAX)."""
  update_window_dims: Sequence[int]
  inserted_window_dims: Sequence[int]
  scatter_dims_to_operand_dims: Sequence[int]
  operand_batching_dims: Sequence[int] = ()
  scatter_indices_batching_dims: Sequence[int] = ()


class GatherScatterMode(enum.Enum):
  """How gathers and scatters treat out-of-bounds indices.

  CLIP: indices are clamped so the whole window is in bounds.
  FILL_OR_DROP: a gathered window that is partly out of bounds is filled with a constant;
    a scattered window that is partly out of bounds is dropped.
  PROMISE_IN_BOUNDS: the user promises in-bounds indices; in practice gathers clamp and
    scatters drop.
  ONE_HOT: only meaningful to ``jnp.take_along_axis``; the eager ``lax.gather`` treats it
    as PROMISE_IN_BOUNDS (JAX fails with an AssertionError).
  """
  CLIP = enum.auto()
  FILL_OR_DROP = enum.auto()
  PROMISE_IN_BOUNDS = enum.auto()
  ONE_HOT = enum.auto()

  @staticmethod
  def from_any(s):
    if isinstance(s, GatherScatterMode):
      return s
    if s == "clip":
      return GatherScatterMode.CLIP
    if s is None or s == "fill" or s == "drop":
      return GatherScatterMode.FILL_OR_DROP
    if s == "promise_in_bounds":
      return GatherScatterMode.PROMISE_IN_BOUNDS
    if s == "one_hot":
      return GatherScatterMode.ONE_HOT
    raise ValueError(f'Unknown gather mode "{s}"')


def _canon_dims(dims):
  return tuple(int(operator.index(d)) for d in dims)


def _canon_gather_dnums(dn):
  if not isinstance(dn, GatherDimensionNumbers):
    if isinstance(dn, dict):
      dn = GatherDimensionNumbers(**dn)
    else:
      raise TypeError("dimension_numbers must be a lax.GatherDimensionNumbers, got "
                      f"{type(dn)}")
  return GatherDimensionNumbers(*(_canon_dims(f) for f in dn))


def _canon_scatter_dnums(dn):
  if not isinstance(dn, ScatterDimensionNumbers):
    if isinstance(dn, dict):
      dn = ScatterDimensionNumbers(**dn)
    else:
      raise TypeError("dimension_numbers must be a lax.ScatterDimensionNumbers, got "
                      f"{type(dn)}")
  return ScatterDimensionNumbers(*(_canon_dims(f) for f in dn))


# --- shared checks (worded as JAX's) ----------------------------------------------------
def _is_sorted(dims, op_name, name):
  for i in range(1, len(dims)):
    if dims[i] < dims[i - 1]:
      raise TypeError(f"{name} in {op_name} op must be sorted; got {dims}")


def _dims_in_range(dims, rank, op_name, name):
  for dim in dims:
    if dim < 0 or dim >= rank:
      raise TypeError(f"Invalid {name} set in {op_name} op; valid range is "
                      f"[0, {rank}); got: {dim}.")


def _sorted_dims_in_range(dims, rank, op_name, name):
  if len(dims) == 0:
    return
  invalid_dim = None
  if dims[0] < 0:
    invalid_dim = dims[0]
  elif dims[-1] >= rank:
    invalid_dim = dims[-1]
  if invalid_dim:
    raise TypeError(f"Invalid {name} set in {op_name} op; valid range is "
                    f"[0, {rank}); got: {invalid_dim}.")


def _no_duplicate_dims(dims, op_name, name):
  if len(set(dims)) != len(dims):
    raise TypeError(f"{name} in {op_name} op must not repeat; got: {dims}.")


def _disjoint_dims(dims1, dims2, op_name, name1, name2):
  if not set(dims1).isdisjoint(set(dims2)):
    raise TypeError(f"{name1} and {name2} in {op_name} op must be disjoint; "
                    f"got: {dims1} and {dims2}.")


def _check_indices_dtype(indices):
  if not dtypes.is_int(indices.dtype):
    raise ValueError("indices must have an integer type")


# --- gather -----------------------------------------------------------------------------
gather_p = core.Primitive("gather")
gather_p.arg_names = ("operand", "indices")


def _gather_shape_rule(operand, indices, dimension_numbers, slice_sizes):
  dn = dimension_numbers
  offset_dims = dn.offset_dims
  collapsed_slice_dims = dn.collapsed_slice_dims
  operand_batching_dims = dn.operand_batching_dims
  start_indices_batching_dims = dn.start_indices_batching_dims
  start_index_map = dn.start_index_map
  op_rank = len(operand.shape)
  idx_rank = len(indices.shape)
  index_vector_dim = idx_rank - 1
  if index_vector_dim < 0:
    raise TypeError(f"Gather index leaf dimension must be within [0, rank("
                    f"indices) + 1). rank(indices) is {idx_rank} and "
                    f"gather index leaf dimension is {index_vector_dim}.")
  _is_sorted(offset_dims, "gather", "offset_dims")
  _no_duplicate_dims(offset_dims, "gather", "offset_dims")
  output_shape_rank = len(offset_dims) + idx_rank - 1
  for i, offset_dim in enumerate(offset_dims):
    if offset_dim < 0 or offset_dim >= output_shape_rank:
      raise TypeError(f"Offset dimension {i} in gather op is out of bounds; "
                      f"got {offset_dim}, but should have been in "
                      f"[0, {output_shape_rank})")
  if len(start_index_map) != indices.shape[index_vector_dim]:
    raise TypeError(f"Gather op has {len(start_index_map)} elements in "
                    f"start_index_map and the bound of dimension "
                    f"index_vector_dim={index_vector_dim} of indices is "
                    f"{indices.shape[index_vector_dim]}. These two "
                    f"numbers must be equal.")
  for i, d in enumerate(start_index_map):
    if d < 0 or d >= op_rank:
      raise TypeError(f"Invalid start_index_map; domain is "
                      f"[0, {op_rank}), got: {i}->{d}.")
  _no_duplicate_dims(start_index_map, "gather", "start_index_map")
  _is_sorted(collapsed_slice_dims, "gather", "collapsed_slice_dims")
  _sorted_dims_in_range(collapsed_slice_dims, op_rank, "gather", "collapsed_slice_dims")
  _no_duplicate_dims(collapsed_slice_dims, "gather", "collapsed_slice_dims")
  _no_duplicate_dims(operand_batching_dims, "gather", "operand_batching_dims")
  _is_sorted(operand_batching_dims, "gather", "operand_batching_dims")
  _sorted_dims_in_range(operand_batching_dims, op_rank, "gather", "operand_batching_dims")
  _disjoint_dims(collapsed_slice_dims, operand_batching_dims, "gather",
                 "collapsed_slice_dims", "operand_batching_dims")
  _disjoint_dims(start_index_map, operand_batching_dims, "gather",
                 "start_index_map", "operand_batching_dims")
  _no_duplicate_dims(start_indices_batching_dims, "gather", "start_indices_batching_dims")
  _dims_in_range(start_indices_batching_dims, idx_rank, "gather",
                 "start_indices_batching_dims")
  if index_vector_dim in start_indices_batching_dims:
    raise TypeError("Gather op cannot have the index vector dimension as a batching "
                    f"dimension; got {start_indices_batching_dims}.")
  if len(operand_batching_dims) != len(start_indices_batching_dims):
    raise TypeError("Gather op requires equal numbers of operand_batching_dims and "
                    f"start_indices_batching_dims, got {operand_batching_dims} and"
                    f"{start_indices_batching_dims}.")
  operand_batch_shape = tuple(operand.shape[i] for i in operand_batching_dims)
  indices_batch_shape = tuple(indices.shape[i] for i in start_indices_batching_dims)
  if operand_batch_shape != indices_batch_shape:
    raise TypeError("Gather op requires operand batching dimensions and indices batching "
                    f"dimensions to have the same shape, got {operand_batch_shape} and "
                    f"{indices_batch_shape}.")
  if op_rank != len(slice_sizes):
    raise TypeError(f"Gather op must have one slice size for every input "
                    f"dimension; got: len(slice_sizes)={len(slice_sizes)}, "
                    f"input_shape.rank={op_rank}")
  if len(slice_sizes) != len(offset_dims) + len(collapsed_slice_dims) + len(operand_batching_dims):
    raise TypeError("All components of the offset index in a gather op must "
                    "either be a offset dimension or explicitly collapsed/batching; "
                    f"got len(slice_sizes)={len(slice_sizes)}, "
                    f"output_slice_sizes={offset_dims}, collapsed_slice_dims="
                    f"{collapsed_slice_dims}, operand_batching_dims="
                    f"{operand_batching_dims}.")
  indices_empty = any(d == 0 for d in indices.shape)
  for i, slice_size in enumerate(slice_sizes):
    size = operand.shape[i]
    if not indices_empty and not (slice_size >= 0 and size >= slice_size):
      raise TypeError(f"Slice size at index {i} in gather op is out of range, "
                      f"must be within [0, {size} + 1), got {slice_size}.")
  for i, d in enumerate(collapsed_slice_dims):
    bound = slice_sizes[d]
    if bound != 1:
      raise TypeError(f"Gather op can only collapse slice dims with bound 1, "
                      f"but bound is {bound} for index {d} at position {i}.")
  for i, d in enumerate(operand_batching_dims):
    bound = slice_sizes[d]
    if bound > 1:
      raise TypeError(f"Gather op can only have operand batching dims with "
                      f"bound 0/1, but bound is {bound} for index {d} at position {i}.")
  return _gather_shape_computation(indices, dn, slice_sizes)


def _gather_shape_computation(indices, dn, slice_sizes):
  batch_shape = iter(indices.shape[:-1])
  window = iter(s for i, s in enumerate(slice_sizes)
                if i not in dn.collapsed_slice_dims and i not in dn.operand_batching_dims)
  rank = len(dn.offset_dims) + len(indices.shape) - 1
  return tuple(next(window) if i in dn.offset_dims else next(batch_shape) for i in range(rank))


@gather_p.def_abstract_eval
def _gather_abstract(operand, indices, *, dimension_numbers, slice_sizes, unique_indices,
                     indices_are_sorted, mode, fill_value):
  shape = _gather_shape_rule(operand, indices, dimension_numbers, slice_sizes)
  _check_indices_dtype(indices)
  return ShapedArray(shape, operand.dtype, operand.weak_type)


def _default_fill_value(dtype):
  if dtypes.is_inexact(dtype):
    return np.nan
  if dtypes.is_int(dtype):
    info = np.iinfo(dtype)
    return int(info.max) if dtypes.is_unsigned(dtype) else int(info.min)
  if dtype == dtypes.bool_:
    return True
  raise ValueError(f"Unsupported dtype for gather fill_value {dtype}")


def _static_scalar(v):
  """A hashable Python scalar for a fill value given as a 0-d array."""
  if isinstance(v, (np.ndarray, np.generic)) and np.ndim(v) == 0:
    return v.item()
  if type(v).__name__ == "ArrayImpl" and not v.shape:
    return v.item()
  return v


def gather(operand, start_indices, dimension_numbers, slice_sizes, *,
           unique_indices=False, indices_are_sorted=False, mode=None, fill_value=None):
  """XLA's Gather.  ``mode=None`` means PROMISE_IN_BOUNDS (clamping, in practice).

  For ``mode='fill'`` the default ``fill_value`` is NaN for inexact dtypes, the minimum
  for signed integers, the maximum for unsigned integers and True for booleans."""
  if mode is None:
    mode = GatherScatterMode.PROMISE_IN_BOUNDS
  parsed_mode = GatherScatterMode.from_any(mode)
  if parsed_mode == GatherScatterMode.FILL_OR_DROP:
    if fill_value is None:
      fill_value = _default_fill_value(core.get_aval(operand).dtype)
    else:
      fill_value = _static_scalar(fill_value)
  else:
    fill_value = None
  return gather_p.bind(
      operand, start_indices, dimension_numbers=_canon_gather_dnums(dimension_numbers),
      slice_sizes=utils.canonicalize_shape(slice_sizes), unique_indices=bool(unique_indices),
      indices_are_sorted=bool(indices_are_sorted), mode=parsed_mode, fill_value=fill_value)


# --- scatter ----------------------------------------------------------------------------
def _get_updates_batching_dims(indices_batching_dims, update_window_dims, index_vector_dim,
                               updates_shape):
  scatter_dim_in_updates = list(range(index_vector_dim))
  for i in update_window_dims:
    scatter_dim_in_updates.insert(i, None)
  return tuple(scatter_dim_in_updates.index(i) for i in indices_batching_dims)


def _scatter_shape_rule(operand, indices, updates, dn):
  update_window_dims = dn.update_window_dims
  inserted_window_dims = dn.inserted_window_dims
  operand_batching_dims = dn.operand_batching_dims
  scatter_indices_batching_dims = dn.scatter_indices_batching_dims
  scatter_dims_to_operand_dims = dn.scatter_dims_to_operand_dims
  op_rank = len(operand.shape)
  idx_rank = len(indices.shape)
  upd_rank = len(updates.shape)
  index_vector_dim = idx_rank - 1
  if index_vector_dim < 0:
    raise TypeError(f"Scatter index leaf dimension must be within [0, "
                    f"rank(indices) + 1). rank(indices) is {idx_rank} "
                    f"and scatter index leaf dimension is {index_vector_dim}.")
  expanded_indices_shape = list(indices.shape)
  expected_updates_rank = len(expanded_indices_shape) - 1 + len(update_window_dims)
  if upd_rank != expected_updates_rank:
    raise TypeError(f"Updates tensor must be of rank {expected_updates_rank}; "
                    f"got {upd_rank}.")
  _is_sorted(update_window_dims, "scatter", "update_window_dims")
  _no_duplicate_dims(update_window_dims, "scatter", "update_window_dims")
  _sorted_dims_in_range(update_window_dims, upd_rank, "scatter", "update_window_dims")
  _is_sorted(inserted_window_dims, "scatter", "inserted_window_dims")
  _no_duplicate_dims(inserted_window_dims, "scatter", "inserted_window_dims")
  _sorted_dims_in_range(inserted_window_dims, op_rank, "scatter", "inserted_window_dims")
  _is_sorted(operand_batching_dims, "scatter", "operand_batching_dims")
  _no_duplicate_dims(operand_batching_dims, "scatter", "operand_batching_dims")
  _sorted_dims_in_range(operand_batching_dims, op_rank, "scatter", "operand_batching_dims")
  _disjoint_dims(inserted_window_dims, operand_batching_dims, "scatter",
                 "inserted_window_dims", "operand_batching_dims")
  _disjoint_dims(scatter_dims_to_operand_dims, operand_batching_dims, "scatter",
                 "scatter_dims_to_operand_dims", "operand_batching_dims")
  _no_duplicate_dims(scatter_indices_batching_dims, "scatter", "scatter_indices_batching_dims")
  _dims_in_range(scatter_indices_batching_dims, idx_rank, "scatter",
                 "scatter_indices_batching_dims")
  if index_vector_dim in scatter_indices_batching_dims:
    raise TypeError("Scatter op cannot have the index vector dimension as a batching "
                    f"dimension; got {scatter_indices_batching_dims}.")
  if len(operand_batching_dims) != len(scatter_indices_batching_dims):
    raise TypeError("Scatter op requires equal numbers of operand_batching_dims and "
                    f"scatter_indices_batching_dims, got {operand_batching_dims} and "
                    f"{scatter_indices_batching_dims}.")
  operand_batch_shape = tuple(operand.shape[i] for i in operand_batching_dims)
  indices_batch_shape = tuple(indices.shape[i] for i in scatter_indices_batching_dims)
  if operand_batch_shape != indices_batch_shape:
    raise TypeError("Scatter op requires operand batching dimensions and indices batching "
                    f"dimensions to have the same shape, got {operand_batch_shape} and "
                    f"{indices_batch_shape}.")
  updates_batching_dims = _get_updates_batching_dims(
      scatter_indices_batching_dims, update_window_dims, index_vector_dim, updates.shape)
  updates_batch_shape = tuple(updates.shape[i] for i in updates_batching_dims)
  if operand_batch_shape != updates_batch_shape:
    raise TypeError("Scatter op requires operand batching dimensions and updates batching "
                    f"dimensions to have the same shape, got {operand_batch_shape} and "
                    f"{updates_batch_shape}.")
  window_size = len(update_window_dims) + len(inserted_window_dims) + len(operand_batching_dims)
  if op_rank != window_size:
    raise TypeError(f"Scatter op has window of size {window_size}; doesn't "
                    f"match operand of rank {op_rank}.")
  if len(scatter_dims_to_operand_dims) != indices.shape[index_vector_dim]:
    raise TypeError(f"Scatter op has {len(scatter_dims_to_operand_dims)} "
                    f"elements in scatter_dims_to_operand_dims and the bound "
                    f"of dimension index_vector_dim={index_vector_dim} of "
                    f"indices is {indices.shape[index_vector_dim]}. These two "
                    f"numbers must be equal")
  for i, dim in enumerate(scatter_dims_to_operand_dims):
    if dim < 0 or dim >= op_rank:
      raise TypeError(f"Invalid scatter_dims_to_operand_dims mapping; domain "
                      f"is [0, {op_rank}), got: {i}->{dim}.")
  _no_duplicate_dims(scatter_dims_to_operand_dims, "scatter", "scatter_dims_to_operand_dims")
  max_update_slice_sizes = [operand.shape[i] for i in range(op_rank)
                            if i not in inserted_window_dims and i not in operand_batching_dims]
  for i, update_window_dim in enumerate(update_window_dims):
    if max_update_slice_sizes[i] < updates.shape[update_window_dim]:
      raise TypeError(f"Bounds of the window dimensions of updates must not "
                      f"exceed the bounds of the corresponding dimensions of "
                      f"operand. For dimension {update_window_dim}, updates "
                      f"bound is {updates.shape[update_window_dim]}, operand "
                      f"bound is {max_update_slice_sizes[i]}.")
  update_scatter_dims = [d for d in range(upd_rank) if d not in update_window_dims]
  seen = 0
  for i in update_scatter_dims:
    if seen == index_vector_dim:
      seen += 1
    if updates.shape[i] != expanded_indices_shape[seen]:
      raise TypeError(f"Bounds of the scatter dimensions of updates must be "
                      f"the same as the bounds of the corresponding dimensions "
                      f"of scatter indices. For scatter dimension {i}, updates "
                      f"bound is {updates.shape[i]}, indices bound is "
                      f"{expanded_indices_shape[seen]}.")
    seen += 1
  return operand.shape


def _scatter_primitive(name):
  p = core.Primitive(name)
  p.arg_names = ("operand", "indices", "updates")

  @p.def_abstract_eval
  def _abstract(operand, indices, updates, *, update_jaxpr, update_consts,
                dimension_numbers, indices_are_sorted, unique_indices, mode):
    shape = _scatter_shape_rule(operand, indices, updates, dimension_numbers)
    _check_indices_dtype(indices)
    if operand.dtype != updates.dtype:
      raise TypeError(f"lax.scatter requires arguments to have the same dtypes, got "
                      f"{operand.dtype}, {updates.dtype}.")
    return ShapedArray(shape, operand.dtype, operand.weak_type)
  return p


scatter_p = _scatter_primitive("scatter")
scatter_add_p = _scatter_primitive("scatter-add")
scatter_sub_p = _scatter_primitive("scatter-sub")
scatter_mul_p = _scatter_primitive("scatter-mul")
scatter_min_p = _scatter_primitive("scatter-min")
scatter_max_p = _scatter_primitive("scatter-max")


# The scalar combiners, traced once per (function, dtype) like JAX's _reduction_jaxpr.
_combiner_cache = {}


def _combiner_jaxpr(fn, dtype):
  key = (fn, dtype)
  hit = _combiner_cache.get(key)
  if hit is None:
    aval = ShapedArray((), dtype, False)
    closed = core.trace_to_jaxpr(lambda x, y: [fn(x, y)], [aval, aval])
    hit = _combiner_cache[key] = (closed.jaxpr, tuple(closed.consts))
  return hit


def _bind_scatter(prim, combiner, operand, scatter_indices, updates, dimension_numbers,
                  indices_are_sorted, unique_indices, mode):
  if combiner is None:
    jaxpr, consts = None, ()
  else:
    jaxpr, consts = _combiner_jaxpr(combiner, core.get_aval(operand).dtype)
  return prim.bind(operand, scatter_indices, updates, update_jaxpr=jaxpr,
                   update_consts=consts,
                   dimension_numbers=_canon_scatter_dnums(dimension_numbers),
                   indices_are_sorted=bool(indices_are_sorted),
                   unique_indices=bool(unique_indices),
                   mode=GatherScatterMode.from_any(mode))


def _scatter_doc(what):
  return (f"XLA's Scatter, combining with {what}.  ``mode=None`` means FILL_OR_DROP: "
          "out-of-bounds update windows are dropped; 'clip' clamps them into bounds.  "
          "Duplicate indices all apply.")


def scatter(operand, scatter_indices, updates, dimension_numbers, *,
            indices_are_sorted=False, unique_indices=False, mode=None):
  return _bind_scatter(scatter_p, None, operand, scatter_indices, updates,
                       dimension_numbers, indices_are_sorted, unique_indices, mode)


def scatter_add(operand, scatter_indices, updates, dimension_numbers, *,
                indices_are_sorted=False, unique_indices=False, mode=None):
  return _bind_scatter(scatter_add_p, _ew.add, operand, scatter_indices, updates,
                       dimension_numbers, indices_are_sorted, unique_indices, mode)


def scatter_sub(operand, scatter_indices, updates, dimension_numbers, *,
                indices_are_sorted=False, unique_indices=False, mode=None):
  return _bind_scatter(scatter_sub_p, _ew.sub, operand, scatter_indices, updates,
                       dimension_numbers, indices_are_sorted, unique_indices, mode)


def scatter_mul(operand, scatter_indices, updates, dimension_numbers, *,
                indices_are_sorted=False, unique_indices=False, mode=None):
  return _bind_scatter(scatter_mul_p, _ew.mul, operand, scatter_indices, updates,
                       dimension_numbers, indices_are_sorted, unique_indices, mode)


def scatter_min(operand, scatter_indices, updates, dimension_numbers, *,
                indices_are_sorted=False, unique_indices=False, mode=None):
  return _bind_scatter(scatter_min_p, _ew.min, operand, scatter_indices, updates,
                       dimension_numbers, indices_are_sorted, unique_indices, mode)


def scatter_max(operand, scatter_indices, updates, dimension_numbers, *,
                indices_are_sorted=False, unique_indices=False, mode=None):
  return _bind_scatter(scatter_max_p, _ew.max, operand, scatter_indices, updates,
                       dimension_numbers, indices_are_sorted, unique_indices, mode)


scatter.__doc__ = _scatter_doc("replacement (some update wins for duplicate indices; on "
                               "the CPU backend, the last one)")
scatter_add.__doc__ = _scatter_doc("addition")
scatter_sub.__doc__ = _scatter_doc("subtraction")
scatter_mul.__doc__ = _scatter_doc("multiplication")
scatter_min.__doc__ = _scatter_doc("minimum")
scatter_max.__doc__ = _scatter_doc("maximum")

_apply_cache = weakref.WeakKeyDictionary()


def _full(shape, value, dtype):
  return lax_s.full(tuple(shape), value, dtype)


def _apply_jaxpr(func, dtype):
  """The update jaxpr ``lambda x, _: func(x)``, cached per (func, dtype) without keeping
  ``func`` alive (a weak-keyed cache, like JAX's)."""
  try:
    per_func = _apply_cache.get(func)
  except TypeError:  # not weak-referenceable
    per_func = None
  if per_func is None:
    per_func = {}
    try:
      _apply_cache[func] = per_func
    except TypeError:
      pass
  hit = per_func.get(dtype)
  if hit is None:
    aval = ShapedArray((), dtype, False)
    closed = core.trace_to_jaxpr(lambda x, _: [func(x)], [aval, aval])
    hit = per_func[dtype] = (closed.jaxpr, tuple(closed.consts))
  return hit


def scatter_apply(operand, scatter_indices, func, dimension_numbers, *, update_shape=(),
                  indices_are_sorted=False, unique_indices=False, mode=None):
  """operand[idx] = func(operand[idx]) at each scattered index (duplicates apply ``func``
  repeatedly).  Bound as ``scatter`` with ``func`` as its update_jaxpr, like JAX."""
  dtype = core.get_aval(operand).dtype
  unused = _full(utils.canonicalize_shape(update_shape), 0, dtype)
  jaxpr, consts = _apply_jaxpr(func, dtype)
  return scatter_p.bind(operand, scatter_indices, unused, update_jaxpr=jaxpr,
                        update_consts=consts,
                        dimension_numbers=_canon_scatter_dnums(dimension_numbers),
                        indices_are_sorted=bool(indices_are_sorted),
                        unique_indices=bool(unique_indices),
                        mode=GatherScatterMode.from_any(mode))


def index_take(src, idxs, axes):
  """Gather ``src`` at the index arrays ``idxs`` along ``axes`` (indices wrap modulo the
  axis sizes), as ``jax.lax.index_take``."""
  from pyjax._src.numpy import ufuncs
  indices = lax_s.concatenate([lax_s.expand_dims(i, (1,)) for i in idxs], 1)
  max_idx = lax_s.expand_dims(np.array([src.shape[ax] for ax in axes]),
                              tuple(range(indices.ndim - 1)))
  indices = ufuncs.remainder(indices, max_idx)
  slice_sizes = list(src.shape)
  for ax in axes:
    slice_sizes[ax] = 1
  offset_dims = tuple(range(1, src.ndim - indices.shape[1] + 1))
  dnums = GatherDimensionNumbers(offset_dims=offset_dims, collapsed_slice_dims=tuple(axes),
                                 start_index_map=tuple(axes))
  return gather(src, indices, dimension_numbers=dnums, slice_sizes=tuple(slice_sizes))


# --- differentiation rules ----------------------------------------------------------------
# JVPs and transposes (pyjax._src.interpreters.ad's tables).  gather, scatter-add and
# scatter-sub are linear in their array operands (never in the indices); gather's
# transpose is a scatter-add and scatter-add's is a gather.  scatter (replacement) uses
# JAX's trick for duplicate indices: scatter unique ids to find the update that wins at
# each position, then scatter-add the masked operand and updates.  scatter-min/max split
# the tangent evenly among tied contributors; scatter-mul differentiates in the updates
# only with unique indices (as JAX).
from pyjax._src.interpreters import ad as _ad  # noqa: E402


def _t_aval(x):
  return x.aval if _ad.is_undefined_primal(x) else core.get_aval(x)


def _gather_dnums_of_scatter(dn):
  return GatherDimensionNumbers(
      offset_dims=tuple(dn.update_window_dims),
      collapsed_slice_dims=tuple(dn.inserted_window_dims),
      start_index_map=tuple(dn.scatter_dims_to_operand_dims),
      operand_batching_dims=tuple(dn.operand_batching_dims),
      start_indices_batching_dims=tuple(dn.scatter_indices_batching_dims))


def _scatter_dnums_of_gather(dn):
  return ScatterDimensionNumbers(
      update_window_dims=tuple(dn.offset_dims),
      inserted_window_dims=tuple(dn.collapsed_slice_dims),
      scatter_dims_to_operand_dims=tuple(dn.start_index_map),
      operand_batching_dims=tuple(dn.operand_batching_dims),
      scatter_indices_batching_dims=tuple(dn.start_indices_batching_dims))


def _scatter_slice_sizes(operand_shape, updates_shape, dn):
  sizes = []
  pos = 0
  for i in range(len(operand_shape)):
    if i in dn.inserted_window_dims or i in dn.operand_batching_dims:
      sizes.append(1)
    else:
      sizes.append(updates_shape[dn.update_window_dims[pos]])
      pos += 1
  return tuple(sizes)


def _gather_like_scatter(x, indices, updates_shape, dn, mode, unique_indices,
                         indices_are_sorted, fill_value=0):
  """The gather that reads, at each update position, the operand element a scatter with
  dimension numbers ``dn`` would write."""
  sizes = _scatter_slice_sizes(core.get_aval(x).shape, updates_shape, dn)
  fill = fill_value if mode == GatherScatterMode.FILL_OR_DROP else None
  return gather_p.bind(x, indices, dimension_numbers=_gather_dnums_of_scatter(dn),
                       slice_sizes=sizes, unique_indices=unique_indices,
                       indices_are_sorted=indices_are_sorted, mode=mode, fill_value=fill)


def _zeros(shape, dtype):
  return _ad.zeros_like_aval(ShapedArray(tuple(shape), dtype))


def _gather_jvp(primals, tangents, *, dimension_numbers, slice_sizes, unique_indices,
                indices_are_sorted, mode, fill_value):
  operand, indices = primals
  t = tangents[0]
  params = dict(dimension_numbers=dimension_numbers, slice_sizes=slice_sizes,
                unique_indices=unique_indices, indices_are_sorted=indices_are_sorted,
                mode=mode)
  out = gather_p.bind(operand, indices, fill_value=fill_value, **params)
  if type(t) is _ad.Zero:
    return out, _ad.Zero.from_primal_value(out)
  fill = 0 if mode == GatherScatterMode.FILL_OR_DROP else None
  return out, gather_p.bind(t, indices, fill_value=fill, **params)


def _gather_transpose(ct, operand, indices, *, dimension_numbers, slice_sizes, unique_indices,
                      indices_are_sorted, mode, fill_value):
  aval = _t_aval(operand)
  dt = core.get_aval(ct).dtype
  zeros = _zeros(aval.shape, dt)
  out = _bind_scatter(scatter_add_p, _ew.add, zeros, indices, ct,
                      _scatter_dnums_of_gather(dimension_numbers), indices_are_sorted,
                      unique_indices, mode)
  return [out, None]


_ad.primitive_jvps[gather_p] = _gather_jvp
_ad.primitive_transposes[gather_p] = _gather_transpose


def _scatter_params(p):
  return {k: p[k] for k in ("update_jaxpr", "update_consts", "dimension_numbers",
                            "indices_are_sorted", "unique_indices", "mode")}


def _linear_scatter_jvp(prim):
  def rule(primals, tangents, **params):
    operand, indices, updates = primals
    t_op, _, t_up = tangents
    out = prim.bind(operand, indices, updates, **params)
    if type(t_op) is _ad.Zero and type(t_up) is _ad.Zero:
      return out, _ad.Zero.from_primal_value(out)
    t_op = _ad.instantiate_zeros(t_op)
    t_up = _ad.instantiate_zeros(t_up)
    return out, prim.bind(t_op, indices, t_up, **params)
  return rule


def _scatter_add_transpose(ct, operand, indices, updates, *, update_jaxpr, update_consts,
                           dimension_numbers, indices_are_sorted, unique_indices, mode,
                           negate=False):
  op_t = ct if _ad.is_undefined_primal(operand) else None
  up_t = None
  if _ad.is_undefined_primal(updates):
    up_t = _gather_like_scatter(ct, indices, updates.aval.shape, dimension_numbers, mode,
                                unique_indices, indices_are_sorted)
    if negate:
      up_t = _ew.neg_p.bind(up_t)
  return [op_t, None, up_t]


_ad.primitive_jvps[scatter_add_p] = _linear_scatter_jvp(scatter_add_p)
_ad.primitive_transposes[scatter_add_p] = _scatter_add_transpose
_ad.primitive_jvps[scatter_sub_p] = _linear_scatter_jvp(scatter_sub_p)
_ad.primitive_transposes[scatter_sub_p] = (
    lambda ct, *args, **params: _scatter_add_transpose(ct, *args, negate=True, **params))


def _scatter_add_like(operand, indices, updates, params):
  return _bind_scatter(scatter_add_p, _ew.add, operand, indices, updates,
                       params["dimension_numbers"], params["indices_are_sorted"],
                       params["unique_indices"], params["mode"])


def _scatter_mul_jvp(primals, tangents, **params):
  operand, indices, updates = primals
  t_op, _, t_up = tangents
  out = scatter_mul_p.bind(operand, indices, updates, **params)
  t_out = None
  if type(t_op) is not _ad.Zero:
    t_out = scatter_mul_p.bind(t_op, indices, updates, **params)
  if type(t_up) is not _ad.Zero:
    if not params["unique_indices"]:
      raise NotImplementedError("scatter_mul gradients are only implemented if "
                                "`unique_indices=True`")
    zeros = _zeros(core.get_aval(operand).shape, core.get_aval(t_up).dtype)
    c = _ew.mul_p.bind(operand, _scatter_add_like(zeros, indices, t_up, params))
    t_out = c if t_out is None else _ad.add_tangents(t_out, c)
  return out, t_out


def _scatter_mul_transpose(ct, operand, indices, updates, **params):
  if _ad.is_undefined_primal(updates):
    raise NotImplementedError("scatter_mul transpose with respect to the updates is not "
                              "implemented")
  return [scatter_mul_p.bind(ct, indices, updates, **params), None, None]


_ad.primitive_jvps[scatter_mul_p] = _scatter_mul_jvp
_ad.primitive_transposes[scatter_mul_p] = _scatter_mul_transpose


def _scatter_jvp(primals, tangents, **params):
  operand, indices, updates = primals
  t_op, _, t_up = tangents
  if params["update_jaxpr"] is not None:
    raise NotImplementedError("Differentiation of lax.scatter_apply is not implemented")
  out = scatter_p.bind(operand, indices, updates, **params)
  if params["unique_indices"]:
    return out, scatter_p.bind(_ad.instantiate_zeros(t_op), indices,
                               _ad.instantiate_zeros(t_up), **params)
  dn = params["dimension_numbers"]
  op_aval, up_aval = core.get_aval(operand), core.get_aval(updates)
  ids_shape = list(up_aval.shape)
  for d in dn.update_window_dims:
    ids_shape[d] = 1
  num_ids = int(np.prod(ids_shape))
  id_dtype = dtypes.canonicalize_dtype(dtypes.uint32 if num_ids + 1 < 2 ** 32 else dtypes.uint64)
  ids = np.arange(1, num_ids + 1, dtype=id_dtype).reshape(ids_shape)
  update_ids = lax_s.broadcast_in_dim_p.bind(
      ids, shape=tuple(up_aval.shape), broadcast_dimensions=tuple(range(len(ids_shape))),
      sharding=None) if tuple(ids_shape) != tuple(up_aval.shape) else ids
  scattered_ids = scatter_p.bind(_zeros(op_aval.shape, id_dtype), indices, update_ids, **params)
  gathered_ids = _gather_like_scatter(scattered_ids, indices, up_aval.shape, dn,
                                      params["mode"], params["unique_indices"],
                                      params["indices_are_sorted"], fill_value=0)
  op_keep = _ew.eq_p.bind(scattered_ids, np.array(0, id_dtype))
  up_keep = _ew.eq_p.bind(update_ids, gathered_ids)
  t_op = _ad.instantiate_zeros(t_op)
  t_up = _ad.instantiate_zeros(t_up)
  masked_t_op = _ew.select_n_p.bind(op_keep, _zeros(op_aval.shape, core.get_aval(t_op).dtype), t_op)
  masked_t_up = _ew.select_n_p.bind(up_keep, _zeros(up_aval.shape, core.get_aval(t_up).dtype), t_up)
  return out, _scatter_add_like(masked_t_op, indices, masked_t_up, params)


def _scatter_transpose(ct, operand, indices, updates, **params):
  if not params["unique_indices"]:
    raise NotImplementedError("scatter transpose is only implemented where "
                              "unique_indices=True")
  dt = core.get_aval(ct).dtype
  op_t = up_t = None
  if _ad.is_undefined_primal(operand):
    op_t = scatter_p.bind(ct, indices, _zeros(_t_aval(updates).shape, dt), **params)
  if _ad.is_undefined_primal(updates):
    up_t = _gather_like_scatter(ct, indices, updates.aval.shape, params["dimension_numbers"],
                                params["mode"], params["unique_indices"],
                                params["indices_are_sorted"])
  return [op_t, None, up_t]


_ad.primitive_jvps[scatter_p] = _scatter_jvp
_ad.primitive_transposes[scatter_p] = _scatter_transpose


def _scatter_extremal_jvp(prim):
  """The JVP of scatter_min/scatter_max, JAX's: the operand's tangent passes through
  every element no update window addresses; where updates land, the tangent is the
  average of the tangents of the values equal to the result (the updates that won and the
  operand element if it was kept).  A NaN operand or result equals nothing, so there the
  tangent is 0.  As in JAX, the read-back gathers clamp (PROMISE_IN_BOUNDS), the counts
  drop out-of-bounds windows (FILL_OR_DROP) and only the final add uses the scatter's
  mode: with ``mode='clip'`` an out-of-bounds window's count is 0 where it lands, so
  that row's tangent is -inf/NaN, exactly as JAX gives it."""
  def rule(primals, tangents, **params):
    operand, indices, updates = primals
    t_op, _, t_up = tangents
    out = prim.bind(operand, indices, updates, **params)
    if type(t_op) is _ad.Zero and type(t_up) is _ad.Zero:
      return out, _ad.Zero.from_primal_value(out)
    dn = params["dimension_numbers"]
    op_aval, up_aval = core.get_aval(operand), core.get_aval(updates)
    dt = op_aval.dtype
    fod = dict(params, mode=GatherScatterMode.FILL_OR_DROP)

    def read(x):   # at each update position, the element of x the window addresses
      return _gather_like_scatter(x, indices, up_aval.shape, dn,
                                  GatherScatterMode.PROMISE_IN_BOUNDS,
                                  params["unique_indices"], params["indices_are_sorted"])

    def count(per_update):   # per update position: the sum over updates addressing it
      return read(_scatter_add_like(_zeros(op_aval.shape, dt), indices, per_update, fod))
    one = _ad.broadcast_to_shape(np.array(1, dt), up_aval.shape)
    zero = _zeros(up_aval.shape, dt)
    target = read(out)
    won = _ew.eq_p.bind(updates, target)
    kept = _ew.eq_p.bind(read(operand), target)
    n_won = count(_ew.select_n_p.bind(won, zero, one))
    n_ref = count(one)
    share_kept = _ew.div_p.bind(one, _ew.add_p.bind(n_won, one))
    up_coef = _ew.select_n_p.bind(
        won, zero, _ew.select_n_p.bind(kept, _ew.div_p.bind(one, n_won), share_kept))
    op_coef = _ew.div_p.bind(
        _ew.sub_p.bind(_ew.select_n_p.bind(kept, zero, share_kept), one), n_ref)
    t_op = _ad.instantiate_zeros(t_op)
    t_up = _ad.instantiate_zeros(t_up)
    delta = _ew.add_p.bind(_ew.mul_p.bind(read(t_op), op_coef),
                           _ew.mul_p.bind(t_up, up_coef))
    return out, _scatter_add_like(t_op, indices, delta, params)
  _ad.primitive_jvps[prim] = rule


_scatter_extremal_jvp(scatter_min_p)
_scatter_extremal_jvp(scatter_max_p)


# --- batching rules -----------------------------------------------------------------------
# Batched operands/indices become XLA batching dimensions (operand_batching_dims /
# start_indices_batching_dims) when both are batched; a batched operand alone becomes a
# full-size offset (window) dimension; batched indices alone a new index batch dimension.
# The result's batch dimension is always 0.
from pyjax._src.interpreters import batching as _batching  # noqa: E402


def _plus1(dims):
  """Dims shifted past a new leading batch dimension (as NumPy integers: JAX computes them
  with ``np.add`` and its jaxprs print them so)."""
  return tuple(np.add(1, dims)) if len(dims) else ()


def _batch_size(args, dims):
  for x, d in zip(args, dims):
    if d is not _batching.not_mapped:
      return core.get_aval(x).shape[d]
  raise AssertionError("no batched argument")


def _gather_batch(args, dims, *, dimension_numbers, slice_sizes, unique_indices,
                  indices_are_sorted, mode, fill_value):
  operand, indices = args
  od, idd = dims
  dn = dimension_numbers
  if idd is _batching.not_mapped:
    operand = _batching.moveaxis(operand, od, 0)
    size = core.get_aval(operand).shape[0]
    dn2 = GatherDimensionNumbers(
        offset_dims=(0,) + _plus1(dn.offset_dims),
        collapsed_slice_dims=_plus1(dn.collapsed_slice_dims),
        start_index_map=_plus1(dn.start_index_map),
        operand_batching_dims=_plus1(dn.operand_batching_dims),
        start_indices_batching_dims=tuple(dn.start_indices_batching_dims))
    slice_sizes = (size,) + tuple(slice_sizes)
  elif od is _batching.not_mapped:
    indices = _batching.moveaxis(indices, idd, 0)
    dn2 = GatherDimensionNumbers(
        offset_dims=tuple(1 + int(d) for d in dn.offset_dims),
        collapsed_slice_dims=tuple(dn.collapsed_slice_dims),
        start_index_map=tuple(dn.start_index_map),
        operand_batching_dims=tuple(dn.operand_batching_dims),
        start_indices_batching_dims=_plus1(dn.start_indices_batching_dims))
  else:
    operand = _batching.moveaxis(operand, od, 0)
    indices = _batching.moveaxis(indices, idd, 0)
    dn2 = GatherDimensionNumbers(
        offset_dims=_plus1(dn.offset_dims),
        collapsed_slice_dims=_plus1(dn.collapsed_slice_dims),
        start_index_map=_plus1(dn.start_index_map),
        operand_batching_dims=(0,) + _plus1(dn.operand_batching_dims),
        start_indices_batching_dims=(0,) + _plus1(dn.start_indices_batching_dims))
    slice_sizes = (1,) + tuple(slice_sizes)
  out = gather_p.bind(operand, indices, dimension_numbers=dn2, slice_sizes=tuple(slice_sizes),
                      unique_indices=unique_indices, indices_are_sorted=indices_are_sorted,
                      mode=mode, fill_value=fill_value)
  return out, 0


_batching.primitive_batchers[gather_p] = _gather_batch


def _scatter_batch(prim):
  def rule(args, dims, *, update_jaxpr, update_consts, dimension_numbers, indices_are_sorted,
           unique_indices, mode):
    operand, indices, updates = args
    od, idd, ud = dims
    size = _batch_size(args, dims)
    dn = dimension_numbers
    operand = _batching.bdim_at_front(operand, od, size)
    updates = _batching.bdim_at_front(updates, ud, size)
    if idd is _batching.not_mapped:
      dn2 = ScatterDimensionNumbers(
          update_window_dims=(0,) + _plus1(dn.update_window_dims),
          inserted_window_dims=_plus1(dn.inserted_window_dims),
          scatter_dims_to_operand_dims=_plus1(dn.scatter_dims_to_operand_dims),
          operand_batching_dims=_plus1(dn.operand_batching_dims),
          scatter_indices_batching_dims=tuple(dn.scatter_indices_batching_dims))
    else:
      indices = _batching.moveaxis(indices, idd, 0)
      dn2 = ScatterDimensionNumbers(
          update_window_dims=_plus1(dn.update_window_dims),
          inserted_window_dims=_plus1(dn.inserted_window_dims),
          scatter_dims_to_operand_dims=_plus1(dn.scatter_dims_to_operand_dims),
          operand_batching_dims=(0,) + _plus1(dn.operand_batching_dims),
          scatter_indices_batching_dims=(0,) + _plus1(dn.scatter_indices_batching_dims))
    out = prim.bind(operand, indices, updates, update_jaxpr=update_jaxpr,
                    update_consts=update_consts, dimension_numbers=dn2,
                    indices_are_sorted=indices_are_sorted, unique_indices=unique_indices,
                    mode=mode)
    return out, 0
  return rule


for _p in (scatter_p, scatter_add_p, scatter_sub_p, scatter_mul_p, scatter_min_p,
           scatter_max_p):
  _batching.primitive_batchers[_p] = _scatter_batch(_p)


def _index_vector(idx, dims):
  """Per-example scalar start indices (some maybe batched) as one index vector: shape
  (n,) and not_mapped when none is batched, else (size, n) batched at 0."""
  nm = _batching.not_mapped
  size = next((core.get_aval(i).shape[d] for i, d in zip(idx, dims) if d is not nm), None)
  if size is None:
    cols = [lax_s.broadcast_in_dim_p.bind(i, shape=(1,), broadcast_dimensions=(),
                                           sharding=None) for i in idx]
    dim = nm
    axis = 0
  else:
    cols = [lax_s.broadcast_in_dim_p.bind(i, shape=(size, 1),
                                           broadcast_dimensions=(0,) if d is not nm else (),
                                           sharding=None) for i, d in zip(idx, dims)]
    dim = 0
    axis = 1
  if len(cols) == 1:
    return cols[0], dim
  return lax_s.concatenate_p.bind(*cols, dimension=axis), dim


def batch_dynamic_slice_as_gather(operand, od, idx, idims, slice_sizes):
  """dynamic_slice under vmap, as a batched gather (clamping), as JAX batches it."""
  index, index_dim = _index_vector(idx, idims)
  nd = len(slice_sizes)
  dn = GatherDimensionNumbers(offset_dims=tuple(range(nd)), collapsed_slice_dims=(),
                              start_index_map=tuple(range(nd)))
  return _gather_batch([operand, index], [od, index_dim], dimension_numbers=dn,
                       slice_sizes=tuple(slice_sizes), unique_indices=True,
                       indices_are_sorted=True, mode=GatherScatterMode.CLIP,
                       fill_value=None)


def batch_dynamic_update_slice_as_scatter(operand, od, update, ud, idx, idims):
  """dynamic_update_slice under vmap, as a batched scatter (clamping), as JAX batches it."""
  index, index_dim = _index_vector(idx, idims)
  nd = len(idx)
  dn = ScatterDimensionNumbers(update_window_dims=tuple(range(nd)), inserted_window_dims=(),
                               scatter_dims_to_operand_dims=tuple(range(nd)))
  return _scatter_batch(scatter_p)([operand, index, update], [od, index_dim, ud],
                                   update_jaxpr=None, update_consts=(), dimension_numbers=dn,
                                   indices_are_sorted=True, unique_indices=True,
                                   mode=GatherScatterMode.CLIP)
