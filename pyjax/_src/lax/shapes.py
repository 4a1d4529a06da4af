"""Structural primitives: broadcast_in_dim, reshape, transpose, squeeze, rev, concatenate,
pad, iota, slice, dynamic_slice and dynamic_update_slice, with the public lax functions
built on them (broadcast, expand_dims, collapse, full, slice_in_dim, ...).

Shape rules raise JAX's exception classes and messages.  Every structural result keeps
the operand's weak type; concatenate and pad are weak only if every operand is, and
dynamic_update_slice only if operand, update and all indices are.  Public functions skip
the bind where JAX does (a no-op reshape/transpose/squeeze/broadcast of an Array returns
it), so staged jaxprs print the same equations as JAX's.
"""
from __future__ import annotations

import builtins
import math
import operator

import numpy as np

from pyjax._src import core, dtypes
from pyjax._src.avals import ShapedArray
from pyjax._src.lax import elementwise as _ew
from pyjax._src.lax.reduction_prims import reduce_sum_p
from pyjax._src.lax.utils import canonicalize_shape
from pyjax._src.runtime.array import Array

__all__ = ["broadcast", "broadcast_in_dim", "broadcast_to_rank", "broadcast_shapes", "reshape",
           "transpose", "squeeze", "expand_dims", "rev", "concatenate", "pad", "iota",
           "broadcasted_iota", "slice", "slice_in_dim", "index_in_dim", "dynamic_slice",
           "dynamic_slice_in_dim", "dynamic_index_in_dim", "dynamic_update_slice",
           "dynamic_update_slice_in_dim", "dynamic_update_index_in_dim", "collapse", "full",
           "full_like", "split", "split_p", "stack", "stack_p", "unstack", "unstack_p", "tile", "tile_p", "broadcast_like", "shape_as_value"]

_builtin_slice = builtins.slice


# --- helpers ----------------------------------------------------------------------------
def _fmt_types(obj):
  return tuple(type(d) for d in obj)


def _int_tuple(fun_name, arg_name, obj):
  """A tuple of Python ints from a shape-like ``obj`` (tuple/list/ndarray), raising
  JAX's messages for non-sequences, non-integers and tracers."""
  if not isinstance(obj, (tuple, list, np.ndarray)):
    raise TypeError(f"{fun_name} {arg_name} must be of type tuple/list/ndarray, got {type(obj)}.")
  if isinstance(obj, np.ndarray) and obj.ndim != 1 and obj.size:
    raise TypeError(f"{fun_name} {arg_name} must be 1-dimensional, got {obj.ndim}.")
  out = []
  for d in obj:
    if isinstance(d, core.Tracer):
      canonicalize_shape(tuple(obj))  # raises JAX's "Shapes must be 1D sequences ..." error
    try:
      out.append(operator.index(d))
    except TypeError:
      raise TypeError(f"{fun_name} {arg_name} must have every element be an integer type, "
                      f"got {_fmt_types(obj)}.") from None
  return tuple(out)


def _check_nonneg(fun_name, arg_name, obj):
  if not all(d >= 0 for d in obj):
    raise TypeError(f"{fun_name} {arg_name} must have every element be nonnegative, got {obj}.")


def _canonicalize_axis(axis, ndim):
  axis = operator.index(axis)
  if not -ndim <= axis < ndim:
    raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
  return axis + ndim if axis < 0 else axis


def _shape(x):
  if isinstance(x, (Array, np.ndarray, np.generic)):
    return tuple(x.shape)
  return core.get_aval(x).shape


def _ndim(x):
  return len(_shape(x))


def _is_array(x):
  return isinstance(x, Array)


def _concrete(fn, *args):
  """Run ``fn`` on the eager interpreter: for values that are all concrete this is JAX's
  constant folding (a staged jaxpr then sees a literal or a constant, not an equation)."""
  from pyjax._src.transfer_guard import constant_folding
  with constant_folding():
    out = fn(*args)
  return core.folded_host_constant(out, args)


def _asarray(x):
  """An Array for ``x`` (lax.asarray): Arrays unchanged; Python scalars (weakly typed) and
  NumPy values are placed on the default device."""
  if isinstance(x, Array):
    return x
  if hasattr(x, "__jax_array__"):
    return _asarray(x.__jax_array__())
  aval = core.get_aval(x)
  return _concrete(lambda v: _ew.convert_element_type_p.bind(
      v, new_dtype=aval.dtype, weak_type=aval.weak_type, sharding=None), x)


def _user_dtype(dtype, fun_name):
  if dtype is object or (isinstance(dtype, np.dtype) and dtype.kind == "O"):
    raise TypeError(f"JAX only supports number, bool, and string dtypes, got dtype {dtype} in "
                    f"{fun_name}")
  return dtypes.check_user_dtype(dtype, fun_name)


# --- broadcast_in_dim -------------------------------------------------------------------
broadcast_in_dim_p = core.Primitive("broadcast_in_dim")
broadcast_in_dim_p.arg_names = ("operand",)


def _broadcast_in_dim_printer(params):
  out = {k: v for k, v in params.items() if k not in ("shape", "sharding")}
  if not out.get("broadcast_dimensions"):
    out.pop("broadcast_dimensions", None)
  return out


broadcast_in_dim_p.param_printer = _broadcast_in_dim_printer


@broadcast_in_dim_p.def_abstract_eval
def _broadcast_in_dim_abstract(x, *, shape, broadcast_dimensions, sharding=None):
  _check_nonneg("broadcast_in_dim", "shape", shape)
  _check_nonneg("broadcast_in_dim", "broadcast_dimensions", broadcast_dimensions)
  nd = len(x.shape)
  if nd != len(broadcast_dimensions):
    raise TypeError("broadcast_in_dim broadcast_dimensions must have length equal to operand "
                    f"ndim; got broadcast_dimensions {broadcast_dimensions} for operand ndim {nd}.")
  if len(shape) < nd:
    raise TypeError("broadcast_in_dim target broadcast shape must have equal or higher rank to "
                    f"the operand shape; got operand ndim {nd} and target broadcast ndim "
                    f"{len(shape)}.")
  if not all(0 <= d < len(shape) for d in broadcast_dimensions):
    raise TypeError("broadcast_in_dim broadcast_dimensions must be a subset of output "
                    f"dimensions, got {broadcast_dimensions} for operand ndim {nd} and shape "
                    f"{shape}.")
  if not all(x.shape[i] in (1, shape[d]) for i, d in enumerate(broadcast_dimensions)):
    raise TypeError("broadcast_in_dim operand dimension sizes must either be 1, or be equal to "
                    "their corresponding dimensions in the target broadcast shape; got operand "
                    f"of shape {x.shape}, target broadcast shape {shape}, broadcast_dimensions "
                    f"{broadcast_dimensions} ")
  if len(set(broadcast_dimensions)) != len(broadcast_dimensions):
    raise TypeError("broadcast_in_dim broadcast_dimensions must not contain duplicates, got "
                    f"broadcast_dimensions {broadcast_dimensions}")
  return ShapedArray(tuple(shape), x.dtype, x.weak_type)


def broadcast_in_dim(operand, shape, broadcast_dimensions, *, out_sharding=None):
  """Broadcast ``operand`` to ``shape``; operand dimension i maps to output dimension
  ``broadcast_dimensions[i]``.  ``out_sharding`` lays the result out over its devices
  (``pyjax._src.out_sharding``).

  Differs from JAX: a tracer inside ``shape`` raises JAX's "Shapes must be 1D sequences of
  concrete values" TypeError (JAX raises a TracerBoolConversionError, also a TypeError);
  an identity broadcast of an Array returns it unchanged also eagerly."""
  if out_sharding is not None:
    from pyjax._src.out_sharding import sharded_call
    return sharded_call(out_sharding, "broadcast_in_dim",
                        lambda: broadcast_in_dim(operand, shape, broadcast_dimensions))
  shape = _int_tuple("broadcast_in_dim", "shape", shape)
  dims = _int_tuple("broadcast_in_dim", "broadcast_dimensions", broadcast_dimensions)
  if dims == tuple(range(len(shape))) and _shape(operand) == shape:
    return _asarray(operand)
  return broadcast_in_dim_p.bind(operand, shape=shape, broadcast_dimensions=dims, sharding=None)


def broadcast(operand, sizes, *, out_sharding=None):
  """Add leading dimensions of sizes ``sizes`` (lax.broadcast); ``out_sharding`` lays the
  result out over its devices."""
  if out_sharding is not None:
    from pyjax._src.out_sharding import sharded_call
    return sharded_call(out_sharding, "broadcast", lambda: broadcast(operand, sizes))
  if len(sizes) == 0:
    return _asarray(operand)
  shp = _shape(operand)
  dims = tuple(range(len(sizes), len(sizes) + len(shp)))
  return broadcast_in_dim(operand, tuple(sizes) + shp, dims)


def broadcast_to_rank(x, rank):
  """Add leading dimensions of size 1 to give ``x`` rank ``rank``."""
  rank = operator.index(rank)
  nd = _ndim(x)
  if nd == rank:
    return _asarray(x)
  return broadcast(x, (1,) * (rank - nd))


def broadcast_shapes(*shapes):
  """NumPy-style broadcast of shapes (lax.broadcast_shapes).

  Differs from JAX: returns Python ints (JAX may return NumPy integers), and no shapes
  give ``()`` (JAX fails an assertion)."""
  shapes = [tuple(s) for s in shapes]
  if not shapes:
    return ()
  canon = []
  for s in shapes:
    c = []
    for d in s:
      try:
        c.append(operator.index(d))
      except TypeError:
        if isinstance(d, (float, np.floating)) and float(d).is_integer():
          c.append(int(d))
        else:
          canonicalize_shape(s)
          raise
    c = tuple(c)
    if any(d < 0 for d in c):
      raise TypeError("Only non-negative indices are allowed when broadcasting static shapes, "
                      f"but got shape {c}.")
    canon.append(c)
  if len(canon) == 1:
    return canon[0]
  nd = builtins.max(len(s) for s in canon)
  padded = [(1,) * (nd - len(s)) + s for s in canon]
  out = []
  for ds in zip(*padded):
    sizes = {d for d in ds if d != 1}
    if len(sizes) > 1:
      raise ValueError(f"Incompatible shapes for broadcasting: shapes={[tuple(s) for s in shapes]}")
    out.append(sizes.pop() if sizes else 1)
  return tuple(out)


# --- reshape ----------------------------------------------------------------------------
reshape_p = core.Primitive("reshape")
reshape_p.arg_names = ("operand",)


@reshape_p.def_abstract_eval
def _reshape_abstract(x, *, new_sizes, dimensions, sharding=None):
  if not all(d >= 0 for d in new_sizes):
    raise TypeError(f"reshape new_sizes must all be positive, got {new_sizes}.")
  if dimensions is not None and set(dimensions) != set(range(len(x.shape))):
    raise TypeError("reshape dimensions must be a permutation of operand dimensions, got "
                    f"dimensions {dimensions} for shape {x.shape}.")
  if math.prod(new_sizes) != math.prod(x.shape):
    # ValueError as in JAX 0.10 (whose check fails when the program is lowered)
    raise ValueError(f"reshape total size must be unchanged, got new_sizes {new_sizes} (of total "
                    f"size {math.prod(new_sizes)}) for shape {x.shape} (of total size "
                    f"{math.prod(x.shape)}).")
  return ShapedArray(tuple(new_sizes), x.dtype, x.weak_type)


def reshape(operand, new_sizes, dimensions=None, *, out_sharding=None):
  """Reshape (row-major), after transposing by ``dimensions`` if given.

  Differs from JAX: a total-size mismatch raises TypeError ("reshape total size must be
  unchanged ...") at trace time, as older JAX did (JAX 0.10 reports it only when
  lowering); ``out_sharding`` is the result's sharding type (``sharding_types``)."""
  if out_sharding is not None:
    from pyjax._src.out_sharding import resolve_out_sharding
    out_sharding = resolve_out_sharding(out_sharding, "reshape")
  new_sizes = canonicalize_shape(new_sizes)
  shp = _shape(operand)
  if dimensions is None:
    dims, same_dims = None, True
  else:
    dims = tuple(operator.index(d) for d in dimensions)
    same_dims = dims == tuple(range(len(shp)))
  if shp and shp == new_sizes and same_dims and _is_array(operand) and out_sharding is None:
    return operand
  return reshape_p.bind(operand, new_sizes=new_sizes,
                        dimensions=None if dims is None or same_dims else dims,
                        sharding=out_sharding)


def collapse(operand, start_dimension, stop_dimension=None):
  """Merge dimensions ``[start_dimension, stop_dimension)`` into one (Python slice
  semantics for negative and out-of-range bounds)."""
  shp = _shape(operand)
  lo, hi, _ = _builtin_slice(start_dimension, stop_dimension).indices(len(shp))
  if hi < lo:
    raise ValueError(f"Invalid dimension range passed to collapse: {shp}"
                     f"[{start_dimension}:{stop_dimension}]")
  new_shape = shp[:lo] + (math.prod(shp[lo:hi]),) + shp[hi:]
  return reshape(operand, new_shape)


# --- transpose --------------------------------------------------------------------------
transpose_p = core.Primitive("transpose")
transpose_p.arg_names = ("operand",)


@transpose_p.def_abstract_eval
def _transpose_abstract(x, *, permutation):
  if tuple(sorted(permutation)) != tuple(range(len(x.shape))):
    raise TypeError("transpose permutation isn't a permutation of operand dimensions, got "
                    f"permutation {permutation} for operand shape {x.shape}.")
  return ShapedArray(tuple(x.shape[i] for i in permutation), x.dtype, x.weak_type)


def transpose(operand, permutation):
  """Permute dimensions: output dimension i is operand dimension ``permutation[i]``."""
  permutation = tuple(operator.index(d) for d in permutation)
  if permutation == tuple(range(_ndim(operand))) and _is_array(operand):
    return operand
  return transpose_p.bind(operand, permutation=permutation)


# --- squeeze / expand_dims --------------------------------------------------------------
squeeze_p = core.Primitive("squeeze")
squeeze_p.arg_names = ("array",)


@squeeze_p.def_abstract_eval
def _squeeze_abstract(x, *, dimensions):
  dims_set = set(dimensions)
  if len(dims_set) != len(dimensions):
    raise ValueError(f"dimensions are not unique: {dimensions}")
  if not all(0 <= d < len(x.shape) for d in dims_set):
    raise ValueError(f"dimensions outside range [0, ndim): {dimensions}")
  if any(x.shape[d] != 1 for d in dimensions):
    raise ValueError("cannot select an axis to squeeze out which has size not equal to one, "
                     f"got shape={x.shape} and dimensions={dimensions}")
  shape = tuple(s for i, s in enumerate(x.shape) if i not in dims_set)
  return ShapedArray(shape, x.dtype, x.weak_type)


def squeeze(array, dimensions):
  """Remove the size-1 dimensions ``dimensions`` (negative axes allowed)."""
  nd = _ndim(array)
  dimensions = tuple(sorted(_canonicalize_axis(d, nd) for d in dimensions))
  if not dimensions and _is_array(array):
    return array
  return squeeze_p.bind(array, dimensions=dimensions)


def expand_dims(array, dimensions):
  """Insert size-1 dimensions at ``dimensions`` (positions in the result), via
  broadcast_in_dim as JAX does."""
  dimensions = tuple(dimensions)
  if len(set(dimensions)) != len(dimensions):
    raise ValueError(f"repeated axis in lax.expand_dims: {dimensions}")
  shp = _shape(array)
  ndim_out = len(shp) + len(dimensions)
  dims = [_canonicalize_axis(i, ndim_out) for i in dimensions]
  if len(set(dims)) != len(dims):
    raise ValueError(f"repeated axis in lax.expand_dims: {dims}")
  dims_set = frozenset(dims)
  result_shape = list(shp)
  for i in sorted(dims_set):
    result_shape.insert(i, 1)
  bdims = tuple(i for i in range(ndim_out) if i not in dims_set)
  return broadcast_in_dim(array, tuple(result_shape), bdims)


# --- rev --------------------------------------------------------------------------------
rev_p = core.Primitive("rev")
rev_p.arg_names = ("operand",)


@rev_p.def_abstract_eval
def _rev_abstract(x, *, dimensions):
  _check_nonneg("rev", "dimensions", dimensions)
  if len(set(dimensions)) != len(dimensions):
    raise TypeError(f"rev dimensions must be unique, got {dimensions}.")
  if dimensions and not builtins.max(dimensions) < len(x.shape):
    raise TypeError("rev dimensions must all be less than operand ndim, got dimensions "
                    f"{dimensions} for operand ndim {len(x.shape)}.")
  return x


def rev(operand, dimensions):
  """Reverse the order of elements along ``dimensions`` (nonnegative, unique)."""
  return rev_p.bind(operand, dimensions=_int_tuple("rev", "dimensions", dimensions))


# --- concatenate ------------------------------------------------------------------------
concatenate_p = core.Primitive("concatenate")


@concatenate_p.def_abstract_eval
def _concatenate_abstract(*xs, dimension):
  if not xs:
    raise TypeError("concatenate expects at least one operand, got 0.")
  if len({len(x.shape) for x in xs}) != 1:
    raise TypeError("Cannot concatenate arrays with different numbers of dimensions: got "
                    f"{', '.join(str(x.shape) for x in xs)}.")
  if not 0 <= dimension < len(xs[0].shape):
    raise TypeError(f"concatenate dimension out of bounds: dimension {dimension} for shapes "
                    f"{', '.join(str(x.shape) for x in xs)}.")
  others = [x.shape[:dimension] + x.shape[dimension + 1:] for x in xs]
  if any(o != others[0] for o in others[1:]):
    raise TypeError("Cannot concatenate arrays with shapes that differ in dimensions other "
                    f"than the one being concatenated: concatenating along dimension {dimension} "
                    f"for shapes {', '.join(str(x.shape) for x in xs)}.")
  d0 = xs[0].dtype
  if any(x.dtype != d0 for x in xs[1:]):
    raise TypeError("lax.concatenate requires arguments to have the same dtypes, got "
                    f"{', '.join(x.dtype.name for x in xs)}. (Tip: jnp.concatenate is a similar "
                    "function that does automatic type promotion on inputs).")
  size = builtins.sum(x.shape[dimension] for x in xs)
  shape = xs[0].shape[:dimension] + (size,) + xs[0].shape[dimension + 1:]
  return ShapedArray(shape, d0, all(x.weak_type for x in xs))


def _unstack(x):
  """The rows of an array (for operands given as one array)."""
  if isinstance(x, np.ndarray):
    return list(x)
  n = _shape(x)[0]
  return [squeeze(slice_in_dim(x, i, i + 1), (0,)) for i in range(n)]


def concatenate(operands, dimension):
  """Join arrays of equal dtype along ``dimension`` (no type promotion)."""
  if isinstance(operands, (Array, np.ndarray)):
    operands = _unstack(operands)
  operands = list(operands)
  if len(operands) == 0:
    raise ValueError("concatenate requires a non-empty sequences of arrays")
  dimension = operator.index(dimension)
  if len(operands) == 1 and _is_array(operands[0]):
    return operands[0]
  return concatenate_p.bind(*operands, dimension=dimension)


# --- pad --------------------------------------------------------------------------------
pad_p = core.Primitive("pad")
pad_p.arg_names = ("operand", "padding_value")


@pad_p.def_abstract_eval
def _pad_abstract(x, padding_value, *, padding_config):
  if padding_value.shape:
    raise ValueError(f"padding_value must be a scalar; got np.shape(padding_value)="
                     f"{padding_value.shape}")
  if len(padding_config) != len(x.shape):
    raise ValueError("length of padding_config must equal the number of axes of operand, got "
                     f"padding_config {padding_config} for operand shape {x.shape}")
  for c in padding_config:
    if len(c) < 3:
      raise ValueError(f"not enough values to unpack (expected 3, got {len(c)})")
    if len(c) > 3:
      raise ValueError("too many values to unpack (expected 3)")
  if not all(i >= 0 for _, _, i in padding_config):
    raise ValueError("interior padding in padding_config must be nonnegative, got "
                     f"padding_config {padding_config}")
  shape = tuple(lo + hi + (0 if d == 0 else d + (d - 1) * i)
                for (lo, hi, i), d in zip(padding_config, x.shape))
  if not all(d >= 0 for d in shape):
    raise ValueError(f"Dimension size after padding is not at least 0, got result shape "
                     f"{shape}, for padding_config {padding_config} and operand shape {x.shape}")
  if x.dtype != padding_value.dtype:
    raise TypeError(f"pad operand and padding_value must be same dtype: got {x.dtype.name} and "
                    f"{padding_value.dtype.name}.")
  return ShapedArray(shape, x.dtype, x.weak_type and padding_value.weak_type)


def _pad_int(v):
  if isinstance(v, core.Tracer):
    canonicalize_shape((v,))
  try:
    return operator.index(v)
  except TypeError:
    if isinstance(v, (float, np.floating)) and float(v).is_integer():
      return int(v)
    raise


def pad(operand, padding_value, padding_config):
  """Pad with ``padding_value`` (a scalar of the operand's dtype): ``padding_config`` holds
  one ``(low, high, interior)`` per dimension; low/high may be negative (cropping)."""
  cfg = tuple(tuple(_pad_int(v) for v in c) for c in padding_config)
  return pad_p.bind(operand, padding_value, padding_config=cfg)


# --- iota -------------------------------------------------------------------------------
iota_p = core.Primitive("iota")


@iota_p.def_abstract_eval
def _iota_abstract(*, dtype, shape, dimension, sharding=None):
  _check_nonneg("iota", "shape", shape)
  if not (dtypes.is_int(dtype) or dtypes.is_float(dtype) or dtypes.is_complex(dtype)):
    raise TypeError(f"iota does not accept dtype {dtype.name}. Accepted dtypes are subtypes of "
                    "integer, floating, complexfloating.")
  if not 0 <= dimension < len(shape):
    raise ValueError("iota dimension must be between 0 and len(shape), got "
                     f"dimension={dimension} for shape={shape}")
  return ShapedArray(tuple(shape), dtype, False)


def broadcasted_iota(dtype, shape, dimension, *, out_sharding=None):
  """Integers 0, 1, ... along ``dimension``, broadcast to ``shape``; ``out_sharding`` lays
  the result out over its devices."""
  if out_sharding is not None:
    from pyjax._src.out_sharding import sharded_call
    return sharded_call(out_sharding, "broadcasted_iota",
                        lambda: broadcasted_iota(dtype, shape, dimension))
  dtype = _user_dtype(dtype, "broadcasted_iota")
  shape = canonicalize_shape(shape)
  dimension = core.concrete_or_error(int, dimension, "dimension argument of lax.broadcasted_iota")
  return iota_p.bind(dtype=dtype, shape=shape, dimension=dimension, sharding=None)


def iota(dtype, size):
  """``[0, 1, ..., size-1]`` of ``dtype``."""
  return broadcasted_iota(dtype, (size,), 0)


# --- full -------------------------------------------------------------------------------
def _convert_folded(x, dtype, weak_type):
  """convert_element_type, evaluated now when ``x`` is concrete (JAX constant-folds it)."""
  if isinstance(x, core.Tracer):
    return _ew._convert_element_type(x, dtype, weak_type)
  return _concrete(_ew._convert_element_type, x, dtype, weak_type)


def full(shape, fill_value, dtype=None, *, sharding=None):
  """An array of ``shape`` filled with the scalar ``fill_value``; weakly typed when
  ``dtype`` is None and ``fill_value`` is.  ``sharding`` (a concrete Sharding), as in JAX:
  a concrete fill value gives a committed array laid out by it (not weakly typed); under a
  trace it is ignored."""
  if sharding is not None:
    out = full(shape, fill_value, dtype)
    if isinstance(out, core.Tracer) or isinstance(fill_value, core.Tracer):
      return out
    from pyjax._src.api_device import device_put
    return device_put(_convert_folded(out, out.dtype, False), sharding)
  shape = canonicalize_shape(shape)
  fshape = _shape(fill_value) if not isinstance(fill_value, (list, tuple)) else np.shape(fill_value)
  if fshape:
    raise TypeError(f"full must be called with scalar fill_value, got fill_value.shape {fshape}.")
  if dtype is None:
    aval = core.get_aval(fill_value)
    weak, fill_dtype = aval.weak_type, aval.dtype
  else:
    weak, fill_dtype = False, _user_dtype(dtype, "full")
  return broadcast(_convert_folded(fill_value, fill_dtype, weak), shape)


def full_like(x, fill_value, dtype=None, shape=None, sharding=None):
  """``full`` with the shape and dtype of ``x`` (or the given ``dtype``/``shape``); weakly
  typed when ``dtype`` is None and ``x`` is.  ``sharding`` is ignored (one device)."""
  fill_shape = _shape(x) if shape is None else canonicalize_shape(shape)
  weak = dtype is None and dtypes.is_weakly_typed(x)
  if dtype is not None:
    dtype = dtypes.canonicalize_dtype(dtypes.to_numpy_dtype(dtype))
  else:
    d = getattr(x, "dtype", None)
    dtype = dtypes.canonicalize_dtype(d) if isinstance(d, np.dtype) else core.get_aval(x).dtype
  return full(fill_shape, _convert_folded(fill_value, dtype, weak))


def zeros_like_array(x):
  """Zeros with the shape, dtype and weak type of ``x`` (JAX keeps this in jax._src.lax;
  it is not part of the public lax namespace)."""
  return full_like(x, 0)


# --- slice ------------------------------------------------------------------------------
slice_p = core.Primitive("slice")
slice_p.arg_names = ("operand",)


@slice_p.def_abstract_eval
def _slice_abstract(x, *, start_indices, limit_indices, strides):
  _check_nonneg("slice", "start_indices", start_indices)
  _check_nonneg("slice", "limit_indices", limit_indices)
  shape = x.shape
  if len(shape) != len(start_indices):
    raise TypeError("slice start_indices must have length equal to the number of dimensions of "
                    f"the operand, got indices {start_indices} for operand shape {shape}.")
  if len(start_indices) != len(limit_indices):
    raise TypeError("slice limit_indices must have the same length as start_indices, got "
                    f"start_indices {start_indices} and limit_indices {limit_indices}.")
  if not all(d >= l for d, l in zip(shape, limit_indices)):
    raise TypeError("slice limit_indices must be less than or equal to operand shape, got "
                    f"limit_indices {limit_indices} for operand shape {shape}.")
  if not all(l >= s for s, l in zip(start_indices, limit_indices)):
    raise TypeError("slice limit_indices must be greater than or equal to start_indices, got "
                    f"start_indices {start_indices} and limit_indices {limit_indices}.")
  diff = tuple(l - s for s, l in zip(start_indices, limit_indices))
  if strides is None or tuple(strides) == (1,) * len(shape):
    return ShapedArray(diff, x.dtype, x.weak_type)
  _check_nonneg("slice", "strides", strides)
  if len(strides) != len(shape):
    raise TypeError("slice strides must have length equal to the number of dimensions of the "
                    f"operand, got strides {strides} for operand shape {shape}.")
  if not all(s > 0 for s in strides):
    raise TypeError(f"slice strides must be positive, got {strides}")
  out = tuple(0 if d == 0 else (d - 1) // s + 1 for d, s in zip(diff, strides))
  return ShapedArray(out, x.dtype, x.weak_type)


def slice(operand, start_indices, limit_indices, strides=None):
  """Static slice ``operand[start:limit:stride]`` in every dimension.

  Differs from JAX: a zero stride raises TypeError ("slice strides must be positive")
  where JAX raises ZeroDivisionError."""
  start = _int_tuple("slice", "start_indices", start_indices)
  limit = _int_tuple("slice", "limit_indices", limit_indices)
  st = None if strides is None else _int_tuple("slice", "strides", strides)
  return slice_p.bind(operand, start_indices=start, limit_indices=limit, strides=st)


def slice_in_dim(operand, start_index, limit_index, stride=1, axis=0):
  """``slice`` along one axis (negative start/limit count from the end; None = full)."""
  shp = _shape(operand)
  start_indices = [0] * len(shp)
  limit_indices = list(shp)
  strides = [1] * len(shp)
  len_axis = shp[axis]
  s = 0 if start_index is None else operator.index(start_index)
  l = len_axis if limit_index is None else operator.index(limit_index)
  if s < 0:
    s += len_axis
  if l < 0:
    l += len_axis
  axis = _canonicalize_axis(axis, len(shp))
  start_indices[axis] = s
  limit_indices[axis] = l
  strides[axis] = operator.index(stride)
  return slice(operand, start_indices, limit_indices, strides)


def index_in_dim(operand, index, axis=0, keepdims=True):
  """The ``index``-th slice along ``axis`` (static index; IndexError when out of range)."""
  index, axis = operator.index(index), int(axis)
  axis_size = _shape(operand)[axis]
  wrapped = index + axis_size if index < 0 else index
  if not 0 <= wrapped < axis_size:
    raise IndexError(f"index {index} is out of bounds for axis {axis} with size {axis_size}")
  result = slice_in_dim(operand, wrapped, wrapped + 1, 1, axis)
  return result if keepdims else squeeze(result, (axis,))


# --- dynamic_slice / dynamic_update_slice -----------------------------------------------
dynamic_slice_p = core.Primitive("dynamic_slice")
dynamic_slice_p.arg_names = ("operand",)


def _check_indices(name, idx, sep):
  if any(i.dtype != idx[0].dtype or not dtypes.is_int(i.dtype) for i in idx):
    raise TypeError(f"index arguments to {name} must be integers of the same type, got{sep} "
                    f"{', '.join(i.dtype.name for i in idx)}")


@dynamic_slice_p.def_abstract_eval
def _dynamic_slice_abstract(x, *idx, slice_sizes):
  if len(slice_sizes) != len(x.shape):
    raise TypeError("dynamic_slice slice_sizes must have the same length as the number of "
                    f"dimensions of the operand, got slice_sizes {slice_sizes} for operand "
                    f"shape {x.shape}.")
  if len(idx) != len(x.shape):
    raise TypeError("dynamic_slice start_indices must have length equal to the number of "
                    f"dimensions of the operand, got {len(idx)} indices for operand shape "
                    f"{x.shape}.")
  if not all(d >= s for d, s in zip(x.shape, slice_sizes)):
    raise TypeError("slice slice_sizes must be less than or equal to operand shape, got "
                    f"slice_sizes {slice_sizes} for operand shape {x.shape}.")
  if not all(s >= 0 for s in slice_sizes):
    raise TypeError(f"slice slice_sizes must be greater than or equal to zero, got slice_sizes "
                    f"of {slice_sizes}.")
  if any(i.shape for i in idx):
    raise TypeError("start_indices arguments to dynamic_slice must be scalars,  got indices "
                    f"({', '.join(repr(i) for i in idx)})")
  _check_indices("dynamic_slice", idx, ":")
  return ShapedArray(tuple(slice_sizes), x.dtype, x.weak_type)


dynamic_update_slice_p = core.Primitive("dynamic_update_slice")
dynamic_update_slice_p.arg_names = ("operand", "update")


@dynamic_update_slice_p.def_abstract_eval
def _dynamic_update_slice_abstract(x, update, *idx):
  if len(x.shape) != len(update.shape):
    raise TypeError("dynamic_update_slice update must have the same rank as operand, got "
                    f"update shape {update.shape} for operand shape {x.shape}.")
  if len(x.shape) != len(idx):
    raise TypeError("dynamic_update_slice start_indices must have length equal to the rank of "
                    f"operand, got indices ({', '.join(repr(i) for i in idx)}) for operand "
                    f"shape {x.shape}.")
  if not all(d >= u for d, u in zip(x.shape, update.shape)):
    raise TypeError("dynamic_update_slice update shape must be smaller than operand shape, got "
                    f"update shape {update.shape} for operand shape {x.shape}.")
  if any(i.shape for i in idx):
    raise TypeError("start_indices arguments to dynamic_update_slice must be scalars, got "
                    f"indices ({', '.join(repr(i) for i in idx)})")
  if x.dtype != update.dtype:
    raise TypeError("lax.dynamic_update_slice requires arguments to have the same dtypes, got "
                    f"{x.dtype.name}, {update.dtype.name}.")
  _check_indices("dynamic_update_slice", idx, "")
  weak = x.weak_type and update.weak_type and all(i.weak_type for i in idx)
  return ShapedArray(x.shape, x.dtype, weak)


def _index_dtype(i):
  d = dtypes.dtype(i)
  return dtypes.canonicalize_dtype(d)


def _zero_index(example):
  """A zero start index of ``example``'s type (a Python int for Python scalars)."""
  if type(example) in dtypes.python_scalar_types:
    return type(example)(0)
  return _index_dtype(example).type(0)


def _dynamic_slice_indices(operand_shape, start_indices, allow_negative_indices):
  """Normalize start indices like JAX: negative indices count from the end (when allowed);
  concrete Python/NumPy integers are folded to literals of their (canonical) dtype;
  array indices get ``select_n(i < 0, i, i + size)`` (unsigned ones are left alone)."""
  if len(start_indices) != len(operand_shape):
    raise ValueError("Length of slice indices must match number of operand dimensions "
                     f"({len(start_indices)} vs {operand_shape})")
  if isinstance(start_indices, (Array, np.ndarray)):
    if len(_shape(start_indices)) != 1:
      raise ValueError(f"Slice indices must be a 1D sequence, got {_shape(start_indices)}")
    start_indices = _unstack(start_indices)
  if isinstance(allow_negative_indices, (bool, np.bool_)):
    allow_negative_indices = [bool(allow_negative_indices)] * len(start_indices)
  result = []
  for i, d, allow_neg in zip(start_indices, operand_shape, allow_negative_indices):
    dt = _index_dtype(i)
    if dtypes.is_unsigned(dt):
      result.append(i)
      continue
    if isinstance(i, (int, np.integer)) or (type(i) is np.ndarray and i.ndim == 0
                                            and dtypes.is_int(dt)):
      v = int(i)
      if v < 0:
        if not allow_neg:
          raise ValueError(f"Index {v} is out of bounds for dimension {d} if "
                           "allow_negative_indices=False")
        v += d
      result.append(np.array(v, dt))
      continue
    if not allow_neg:
      result.append(i)
      continue
    is_neg = _ew.lt_p.bind(i, np.array(0, dt))
    aval = core.get_aval(i)
    j = i
    if aval.weak_type:
      j = _ew.convert_element_type_p.bind(i, new_dtype=aval.dtype, weak_type=False, sharding=None)
    wrapped = _ew.add_p.bind(j, np.array(d, dt))
    result.append(_ew.select_n_p.bind(is_neg, i, wrapped))
  return result


def dynamic_slice(operand, start_indices, slice_sizes, *, allow_negative_indices=True):
  """Slice of static size ``slice_sizes`` at dynamic ``start_indices``.  Negative indices
  count from the end (unless ``allow_negative_indices`` is False); starts are then clamped
  so the slice fits in the operand, as XLA does."""
  start_indices = _dynamic_slice_indices(_shape(operand), start_indices, allow_negative_indices)
  sizes = canonicalize_shape(slice_sizes)
  if len(sizes) != len(start_indices):
    raise ValueError("dynamic_slice slice_sizes must have length equal to the number of operand "
                     f"dimensions, got slice_sizes {sizes} for operand shape {_shape(operand)}.")
  return dynamic_slice_p.bind(operand, *start_indices, slice_sizes=sizes)


def dynamic_slice_in_dim(operand, start_index, slice_size, axis=0, *, allow_negative_indices=True):
  """``dynamic_slice`` along one axis (full extent elsewhere)."""
  shp = _shape(operand)
  start_indices = [_zero_index(start_index)] * len(shp)
  slice_sizes = list(shp)
  axis = int(axis)
  start_indices[axis] = start_index
  slice_sizes[axis] = operator.index(slice_size)
  return dynamic_slice(operand, start_indices, slice_sizes,
                       allow_negative_indices=allow_negative_indices)


def dynamic_index_in_dim(operand, index, axis=0, keepdims=True, *, allow_negative_indices=True):
  """The ``index``-th slice along ``axis`` at a dynamic index (clamped into range).

  Differs from JAX: not wrapped in a ``jit`` equation in staged jaxprs."""
  result = dynamic_slice_in_dim(operand, index, 1, axis,
                                allow_negative_indices=allow_negative_indices)
  return result if keepdims else squeeze(result, (axis,))


def dynamic_update_slice(operand, update, start_indices, *, allow_negative_indices=True):
  """``operand`` with ``update`` written at dynamic ``start_indices`` (negative indices
  count from the end; starts are clamped so the update fits, as XLA does)."""
  start_indices = _dynamic_slice_indices(_shape(operand), start_indices, allow_negative_indices)
  return dynamic_update_slice_p.bind(operand, update, *start_indices)


def dynamic_update_slice_in_dim(operand, update, start_index, axis, *, allow_negative_indices=True):
  """``dynamic_update_slice`` along one axis (index 0 elsewhere)."""
  axis = int(axis)
  start_indices = [_zero_index(start_index)] * _ndim(operand)
  start_indices[axis] = start_index
  return dynamic_update_slice(operand, update, start_indices,
                              allow_negative_indices=allow_negative_indices)


def dynamic_update_index_in_dim(operand, update, index, axis, *, allow_negative_indices=True):
  """Write ``update`` (with or without the ``axis`` dimension) at ``index`` along ``axis``.

  Differs from JAX: not wrapped in a ``jit`` equation in staged jaxprs."""
  axis = int(axis)
  if _ndim(update) != _ndim(operand):
    if _ndim(update) + 1 != _ndim(operand):
      raise AssertionError(f"dynamic_update_index_in_dim: update of rank {_ndim(update)} for "
                           f"operand of rank {_ndim(operand)}")
    update = expand_dims(update, (axis,))
  return dynamic_update_slice_in_dim(operand, update, index, axis,
                                     allow_negative_indices=allow_negative_indices)


# --- differentiation rules ----------------------------------------------------------------
# JVPs and transposes (pyjax._src.interpreters.ad's tables).  Every structural primitive is
# linear in its array operands; indices (dynamic_slice, dynamic_update_slice) are not.
from pyjax._src.interpreters import ad as _ad  # noqa: E402


def _t_aval(x):
  return x.aval if _ad.is_undefined_primal(x) else core.get_aval(x)


def _zeros_of(shape, dtype):
  return _ad.zeros_like_aval(ShapedArray(tuple(shape), dtype))


def _broadcast_in_dim_transpose(ct, operand, *, shape, broadcast_dimensions, sharding=None):
  in_shape = _t_aval(operand).shape
  kept = set()
  for i, d in enumerate(broadcast_dimensions):
    if not (in_shape[i] == 1 and shape[d] != 1):
      kept.add(d)
  axes = tuple(d for d in range(len(shape)) if d not in kept)
  summed = ct
  if axes:
    summed = reduce_sum_p.bind(ct, axes=axes, out_sharding=None)
  if core.get_aval(summed).shape != tuple(in_shape):
    summed = reshape_p.bind(summed, new_sizes=tuple(in_shape), dimensions=None, sharding=None)
  return [summed]


_ad.deflinear2(broadcast_in_dim_p, _broadcast_in_dim_transpose)


def _reshape_transpose(ct, operand, *, new_sizes, dimensions, sharding=None):
  in_shape = _t_aval(operand).shape
  if dimensions is None:
    return [reshape_p.bind(ct, new_sizes=tuple(in_shape), dimensions=None, sharding=None)]
  permuted = tuple(in_shape[d] for d in dimensions)
  r = reshape_p.bind(ct, new_sizes=permuted, dimensions=None, sharding=None)
  return [transpose_p.bind(r, permutation=tuple(np.argsort(dimensions).tolist()))]


_ad.deflinear2(reshape_p, _reshape_transpose)
_ad.deflinear(transpose_p, lambda ct, *, permutation: [
    transpose_p.bind(ct, permutation=tuple(np.argsort(permutation).tolist()))])


def _squeeze_transpose(ct, operand, *, dimensions):
  return [reshape_p.bind(ct, new_sizes=tuple(_t_aval(operand).shape), dimensions=None,
                         sharding=None)]


_ad.deflinear2(squeeze_p, _squeeze_transpose)
_ad.deflinear(rev_p, lambda ct, *, dimensions: [rev_p.bind(ct, dimensions=dimensions)])


def _concatenate_transpose(ct, *operands, dimension):
  outs = []
  start = 0
  ct_shape = core.get_aval(ct).shape
  for x in operands:
    size = _t_aval(x).shape[dimension]
    if _ad.is_undefined_primal(x):
      lo = [0] * len(ct_shape)
      hi = list(ct_shape)
      lo[dimension], hi[dimension] = start, start + size
      outs.append(slice_p.bind(ct, start_indices=tuple(lo), limit_indices=tuple(hi),
                               strides=None))
    else:
      outs.append(None)
    start += size
  return outs


_ad.deflinear2(concatenate_p, _concatenate_transpose)


def _pad_transpose(ct, operand, padding_value, *, padding_config):
  lo, hi, interior = zip(*padding_config) if padding_config else ((), (), ())
  nd = len(padding_config)
  dt = core.get_aval(ct).dtype
  unpad_config = tuple((-l, -h, 0) for l, h in zip(lo, hi))
  unpadded = pad_p.bind(ct, _ad.scalar_const(0, dt), padding_config=unpad_config)
  t_operand = slice_p.bind(unpadded, start_indices=(0,) * nd,
                           limit_indices=tuple(core.get_aval(unpadded).shape),
                           strides=tuple(i + 1 for i in interior))
  t_padv = None
  if _ad.is_undefined_primal(padding_value):
    total_ct = reduce_sum_p.bind(ct, axes=tuple(range(nd)), out_sharding=None)
    total_op = reduce_sum_p.bind(t_operand, axes=tuple(range(nd)), out_sharding=None)
    t_padv = _ew.sub_p.bind(total_ct, total_op)
  return [t_operand if _ad.is_undefined_primal(operand) else None, t_padv]


_ad.deflinear2(pad_p, _pad_transpose)


def _slice_transpose(ct, operand, *, start_indices, limit_indices, strides):
  in_shape = _t_aval(operand).shape
  ct_shape = core.get_aval(ct).shape
  dt = core.get_aval(ct).dtype
  if strides is None or builtins.all(s == 1 for s in strides):
    cfg = tuple((s, d - l, 0) for s, l, d in zip(start_indices, limit_indices, in_shape))
  else:
    real_limits = [s + (0 if n == 0 else 1 + (n - 1) * st)
                   for s, n, st in zip(start_indices, ct_shape, strides)]
    cfg = tuple((s, d - r, st - 1) for s, r, d, st in zip(start_indices, real_limits, in_shape,
                                                          strides))
  return [pad_p.bind(ct, _ad.scalar_const(0, dt), padding_config=cfg)]


_ad.deflinear2(slice_p, _slice_transpose)


def _dynamic_slice_jvp(primals, tangents, *, slice_sizes):
  operand, *idx = primals
  t = tangents[0]
  out = dynamic_slice_p.bind(operand, *idx, slice_sizes=slice_sizes)
  if type(t) is _ad.Zero:
    return out, _ad.Zero.from_primal_value(out)
  return out, dynamic_slice_p.bind(t, *idx, slice_sizes=slice_sizes)


def _dynamic_slice_transpose(ct, operand, *idx, slice_sizes):
  aval = _t_aval(operand)
  zeros = _zeros_of(aval.shape, core.get_aval(ct).dtype)
  return [dynamic_update_slice_p.bind(zeros, ct, *idx)] + [None] * len(idx)


_ad.primitive_jvps[dynamic_slice_p] = _dynamic_slice_jvp
_ad.primitive_transposes[dynamic_slice_p] = _dynamic_slice_transpose


def _dynamic_update_slice_jvp(primals, tangents):
  operand, update, *idx = primals
  t_op, t_up = tangents[:2]
  out = dynamic_update_slice_p.bind(operand, update, *idx)
  if type(t_op) is _ad.Zero and type(t_up) is _ad.Zero:
    return out, _ad.Zero.from_primal_value(out)
  t_op = _ad.instantiate_zeros(t_op)
  t_up = _ad.instantiate_zeros(t_up)
  return out, dynamic_update_slice_p.bind(t_op, t_up, *idx)


def _dynamic_update_slice_transpose(ct, operand, update, *idx):
  up_shape = _t_aval(update).shape
  dt = core.get_aval(ct).dtype
  op_t = (dynamic_update_slice_p.bind(ct, _zeros_of(up_shape, dt), *idx)
          if _ad.is_undefined_primal(operand) else None)
  up_t = (dynamic_slice_p.bind(ct, *idx, slice_sizes=tuple(up_shape))
          if _ad.is_undefined_primal(update) else None)
  return [op_t, up_t] + [None] * len(idx)


_ad.primitive_jvps[dynamic_update_slice_p] = _dynamic_update_slice_jvp
_ad.primitive_transposes[dynamic_update_slice_p] = _dynamic_update_slice_transpose


# --- batching rules -----------------------------------------------------------------------
# (pyjax._src.interpreters.batching's table; rules get parent-level values and batch dims.)
from pyjax._src.interpreters import batching as _bt  # noqa: E402

_nm = _bt.not_mapped


def _broadcast_in_dim_batch(args, dims, *, shape, broadcast_dimensions, sharding=None):
  x, = args
  d, = dims
  x = _bt.moveaxis(x, d, 0)
  size = core.get_aval(x).shape[0]
  new_dims = (0,) + tuple(np.add(1, broadcast_dimensions))
  return broadcast_in_dim_p.bind(x, shape=(size,) + tuple(shape),
                                 broadcast_dimensions=new_dims, sharding=sharding), 0


_bt.primitive_batchers[broadcast_in_dim_p] = _broadcast_in_dim_batch


def _reshape_batch(args, dims, *, new_sizes, dimensions, sharding=None):
  x, = args
  d, = dims
  x = _bt.moveaxis(x, d, 0)
  size = core.get_aval(x).shape[0]
  if dimensions is not None:
    dimensions = (0,) + tuple(np.add(1, dimensions))
  return reshape_p.bind(x, new_sizes=(size,) + tuple(new_sizes), dimensions=dimensions,
                        sharding=sharding), 0


_bt.primitive_batchers[reshape_p] = _reshape_batch


def _transpose_batch(args, dims, *, permutation):
  x, = args
  d, = dims
  perm = (d,) + tuple(i if i < d else i + 1 for i in permutation)
  return transpose_p.bind(x, permutation=perm), 0


_bt.primitive_batchers[transpose_p] = _transpose_batch


def _squeeze_batch(args, dims, *, dimensions):
  x, = args
  d, = dims
  x = _bt.moveaxis(x, d, 0)
  return squeeze_p.bind(x, dimensions=tuple(int(d) + 1 for d in dimensions)), 0


_bt.primitive_batchers[squeeze_p] = _squeeze_batch


def _rev_batch(args, dims, *, dimensions):
  x, = args
  d, = dims
  return rev_p.bind(x, dimensions=tuple(i + 1 if i >= d else i for i in dimensions)), d


_bt.primitive_batchers[rev_p] = _rev_batch


def _concatenate_batch(args, dims, *, dimension):
  size = next(core.get_aval(x).shape[d] for x, d in zip(args, dims) if d is not _nm)
  xs = [_bt.moveaxis(x, d, 0) if d is not _nm else
        broadcast_in_dim_p.bind(x, shape=(size,) + core.get_aval(x).shape,
                                broadcast_dimensions=tuple(range(1, core.get_aval(x).ndim + 1)),
                                sharding=None)
        for x, d in zip(args, dims)]
  return concatenate_p.bind(*xs, dimension=dimension + 1), 0


_bt.primitive_batchers[concatenate_p] = _concatenate_batch


def _pad_batch(args, dims, *, padding_config):
  x, pv = args
  xd, pd = dims
  cfg = ((0, 0, 0),) + tuple(padding_config)
  if pd is _nm:
    return pad_p.bind(_bt.moveaxis(x, xd, 0), pv, padding_config=cfg), 0
  # A batched padding value: pad with zeros and a mask, then select per example.
  size = core.get_aval(pv).shape[pd]
  x = _bt.bdim_at_front(x, xd, size)
  aval = core.get_aval(x)
  padded = pad_p.bind(x, _ad.scalar_const(0, aval.dtype), padding_config=cfg)
  out_shape = core.get_aval(padded).shape
  ones = broadcast_in_dim_p.bind(True, shape=aval.shape, broadcast_dimensions=(), sharding=None)
  mask = pad_p.bind(ones, False, padding_config=cfg)
  pv = broadcast_in_dim_p.bind(_bt.moveaxis(pv, pd, 0), shape=out_shape,
                               broadcast_dimensions=(0,), sharding=None)
  return _ew.select_n_p.bind(mask, pv, padded), 0


_bt.primitive_batchers[pad_p] = _pad_batch


def _slice_batch(args, dims, *, start_indices, limit_indices, strides):
  x, = args
  d, = dims
  size = core.get_aval(x).shape[d]
  start = list(start_indices)
  limit = list(limit_indices)
  start.insert(d, 0)
  limit.insert(d, size)
  if strides is not None:
    strides = list(strides)
    strides.insert(d, 1)
    strides = tuple(strides)
  return slice_p.bind(x, start_indices=tuple(start), limit_indices=tuple(limit),
                      strides=strides), d


_bt.primitive_batchers[slice_p] = _slice_batch


def _dynamic_slice_batch(args, dims, *, slice_sizes):
  # a gather (as JAX batches it), also when only the operand is batched
  x, *idx = args
  xd, *ids = dims
  from pyjax._src.lax import gather_scatter
  if not idx:
    return dynamic_slice_p.bind(x, slice_sizes=slice_sizes), xd
  return gather_scatter.batch_dynamic_slice_as_gather(x, xd, idx, ids, slice_sizes)


_bt.primitive_batchers[dynamic_slice_p] = _dynamic_slice_batch


def _dynamic_update_slice_batch(args, dims):
  # a scatter (as JAX batches it)
  x, u, *idx = args
  xd, ud, *ids = dims
  from pyjax._src.lax import gather_scatter
  if not idx:
    size = next(core.get_aval(v).shape[d] for v, d in ((x, xd), (u, ud)) if d is not _nm)
    return _bt.bdim_at_front(u, ud, size), 0
  return gather_scatter.batch_dynamic_update_slice_as_scatter(x, xd, u, ud, idx, ids)


_bt.primitive_batchers[dynamic_update_slice_p] = _dynamic_update_slice_batch

# --- split, stack / unstack, tile (the primitives jnp.split / jnp.stack / jnp.tile bind) -----
_nm = _bt.not_mapped


def _aval(x):
  return x.aval if _ad.is_undefined_primal(x) else core.get_aval(x)


def _instantiate(cts, avals):
  return [_ad.zeros_like_aval(_ad.tangent_aval(a)) if type(c) is _ad.Zero or c is None else c
          for c, a in zip(cts, avals)]


# --- split ---------------------------------------------------------------------------------
split_p = core.Primitive("split")
split_p.multiple_results = True


@split_p.def_abstract_eval
def _split_abstract(x, *, sizes, axis):
  if any(s < 0 for s in sizes):
    raise ValueError(f"Sizes passed to split must be nonnegative, got {list(sizes)}")
  if x.shape[axis] != sum(sizes):
    raise ValueError(f"Sum of sizes {sum(sizes)} must be equal to dimension {axis} of the "
                     f"operand shape {list(x.shape)}")
  out = []
  for s in sizes:
    shape = list(x.shape)
    shape[axis] = s
    out.append(ShapedArray(tuple(shape), x.dtype, x.weak_type))
  return out


def split(operand, sizes, axis=0):
  """Split ``operand`` along ``axis`` into pieces of the given ``sizes`` (which must sum
  to that dimension).  Returns a list of arrays."""
  operand = _asarray(operand)
  sizes = tuple(sizes)
  for s in sizes:
    operator.index(s)   # the sizes are kept as given (JAX prints np.int64 sizes as such)
  axis = _canonicalize_axis(axis, len(core.get_aval(operand).shape))
  return split_p.bind(operand, sizes=sizes, axis=axis)


def _split_transpose(cts, operand, *, sizes, axis):
  if all(type(c) is _ad.Zero for c in cts):
    return [None]
  avals = split_p.abstract_eval(_aval(operand), sizes=sizes, axis=axis)
  cts = _instantiate(cts, avals)
  if len(cts) == 1:
    return [cts[0]]
  return [concatenate_p.bind(*cts, dimension=axis)]


def _split_batch(args, dims, *, sizes, axis):
  x, = args
  d, = dims
  outs = split_p.bind(x, sizes=sizes, axis=axis + 1 if axis >= d else axis)
  return outs, [d] * len(outs)


_ad.deflinear2(split_p, _split_transpose)
_bt.primitive_batchers[split_p] = _split_batch


# --- stack / unstack -----------------------------------------------------------------------
stack_p = core.Primitive("stack")


@stack_p.def_abstract_eval
def _stack_abstract(*xs, axis):
  if not xs:
    raise ValueError("stack expects at least one operand, got 0.")
  if len({len(x.shape) for x in xs}) != 1:
    raise ValueError("Cannot stack arrays with different numbers of dimensions: got "
                     f"{', '.join(str(x.shape) for x in xs)}.")
  if len({x.shape for x in xs}) != 1:
    raise ValueError("All input arrays must have the same shape. Got "
                     f"{', '.join(str(x.shape) for x in xs)}.")
  if len({x.dtype for x in xs}) != 1:
    raise TypeError("lax.stack requires arguments to have the same dtypes, got "
                    f"{', '.join(x.dtype.name for x in xs)}.")
  shape = list(xs[0].shape)
  shape.insert(axis, len(xs))
  return ShapedArray(tuple(shape), xs[0].dtype, all(x.weak_type for x in xs))


def stack(operands, axis=0):
  """Join arrays of one shape and dtype along a new ``axis`` (no type promotion)."""
  arrays = [_asarray(x) for x in operands]
  if not arrays:
    raise IndexError("list index out of range")   # as JAX, which indexes operands[0]
  axis = _canonicalize_axis(axis, len(core.get_aval(arrays[0]).shape) + 1)
  return stack_p.bind(*arrays, axis=axis)


unstack_p = core.Primitive("unstack")
unstack_p.multiple_results = True


@unstack_p.def_abstract_eval
def _unstack_abstract(x, *, axis):
  if not x.shape:
    raise ValueError("unstack requires arrays with rank > 0, however a scalar array of shape "
                     f"{x.shape} was passed.")
  shape = list(x.shape)
  n = shape.pop(axis)
  return [ShapedArray(tuple(shape), x.dtype, x.weak_type)] * n


def unstack(x, axis=0):
  """Split ``x`` along ``axis`` into a tuple of arrays, one per index (the axis removed)."""
  arr = _asarray(x)
  axis = _canonicalize_axis(axis, len(core.get_aval(arr).shape))
  return tuple(unstack_p.bind(arr, axis=axis))


def _stack_transpose(ct, *operands, axis):
  return unstack_p.bind(ct, axis=axis)


def _unstack_transpose(cts, operand, *, axis):
  if all(type(c) is _ad.Zero for c in cts):
    return [None]
  avals = unstack_p.abstract_eval(_aval(operand), axis=axis)
  return [stack_p.bind(*_instantiate(cts, avals), axis=axis)]


def _stack_batch(args, dims, *, axis):
  d0 = dims[0]
  if d0 is not _nm and all(d == d0 for d in dims):
    if axis <= d0:
      return stack_p.bind(*args, axis=axis), d0 + 1
    return stack_p.bind(*args, axis=axis + 1), d0
  size = next(core.get_aval(x).shape[d] for x, d in zip(args, dims) if d is not _nm)
  xs = [_bt.bdim_at_front(x, d, size) for x, d in zip(args, dims)]
  return stack_p.bind(*xs, axis=axis + 1), 0


def _unstack_batch(args, dims, *, axis):
  x, = args
  d, = dims
  if axis < d:
    outs = unstack_p.bind(x, axis=axis)
    return outs, [d - 1] * len(outs)
  outs = unstack_p.bind(x, axis=axis + 1)
  return outs, [d] * len(outs)


_ad.deflinear2(stack_p, _stack_transpose)
_ad.deflinear2(unstack_p, _unstack_transpose)
_bt.primitive_batchers[stack_p] = _stack_batch
_bt.primitive_batchers[unstack_p] = _unstack_batch


# --- tile ---------------------------------------------------------------------------------
tile_p = core.Primitive("tile")


@tile_p.def_abstract_eval
def _tile_abstract(x, *, reps):
  if len(x.shape) != len(reps):
    raise TypeError("reps length must be equal to the ndim of x, got "
                    f"len(reps)={len(reps)} and x.ndim={len(x.shape)}.")
  if any(r < 0 for r in reps):
    raise ValueError(f"tile reps must be nonnegative, got reps={tuple(reps)}.")
  return ShapedArray(tuple(d * r for d, r in zip(x.shape, reps)), x.dtype, x.weak_type)


def tile(operand, reps):
  """Repeat ``operand`` ``reps[i]`` times along each dimension ``i`` (``len(reps)`` must
  equal the rank).  Differs from JAX: negative reps raise ValueError (JAX fails while
  compiling)."""
  return tile_p.bind(operand, reps=tuple(operator.index(r) for r in reps))


def _tile_transpose(ct, operand, *, reps):
  shape = _aval(operand).shape
  split_shape = tuple(k for pair in zip(reps, shape) for k in pair)
  ct = reshape_p.bind(ct, new_sizes=split_shape, dimensions=None, sharding=None)
  return [reduce_sum_p.bind(ct, axes=tuple(2 * i for i in range(len(shape))),
                                 out_sharding=None)]


def _tile_batch(args, dims, *, reps):
  x, = args
  d, = dims
  new = list(reps)
  new.insert(d, 1)
  return tile_p.bind(x, reps=tuple(new)), d


_ad.deflinear2(tile_p, _tile_transpose)
_bt.primitive_batchers[tile_p] = _tile_batch


# --- plain functions ---------------------------------------------------------------------
def broadcast_like(arr, like_arr):
  """Broadcast ``arr`` to the shape of ``like_arr`` (numpy-style: trailing dimensions
  aligned, each of size 1 or equal)."""
  shape = tuple(core.get_aval(like_arr).shape)
  a = core.get_aval(arr)
  if a.shape == shape:
    return _asarray(arr)
  if len(shape) < len(a.shape):
    raise ValueError("Cannot broadcast to shape with fewer dimensions: "
                     f"arr_shape={a.shape} shape={shape}")
  nlead = len(shape) - len(a.shape)
  if not all(d in (1, s) for d, s in zip(a.shape, shape[nlead:])):
    want = ShapedArray(shape, a.dtype)
    raise ValueError("Incompatible types for broadcasting: input type="
                     f"{a.str_short(short_dtypes=False)} and requested type="
                     f"{want.str_short(short_dtypes=False)}")
  return broadcast_in_dim(arr, shape, tuple(range(nlead, len(shape))))


def shape_as_value(shape):
  """A shape as an integer array: a NumPy int32 array (int64 when a dimension needs it)
  for a non-empty shape, an empty int32 Array for ``()``."""
  shape = tuple(operator.index(d) for d in shape)
  big = any(d > np.iinfo(np.int32).max for d in shape)
  d = dtypes.canonicalize_dtype(np.dtype(np.int64) if big else np.dtype(np.int32))
  if not shape:
    return full((0,), np.array(0, d))
  return np.asarray(shape, dtype=d)
