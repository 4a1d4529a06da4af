"""Smaller lax primitives and functions: ``split``, ``stack``/``unstack``, ``tile``, the
array ``copy``, ``mulhi``, the total-order comparisons (``eq_to``, ``lt_to``, ``le_to``),
``empty``, ``stage``, ``optimization_barrier``, ``dce_sink``, and plain functions
(``broadcast_like``, ``shape_as_value``, ``dtype``, ``Tolerance``, ``AccuracyMode``).

Each primitive is declared with its abstract-eval rule (JAX's exception classes and
messages), JVP/transpose and batching rules side by side; eager implementations are in
``backends/cpu/eager_misc.py``.  ``split``/``tile``/``stack``/``unstack``/``copy`` are the
primitives ``jnp.split``/``jnp.tile``/``jnp.stack``/``jnp.copy`` bind in JAX.
"""
from __future__ import annotations

import enum
import operator

import numpy as np

from pyjax._src import core, dtypes
from pyjax._src import tree_util
from pyjax._src.avals import ShapedArray
from pyjax._src.interpreters import ad
from pyjax._src.interpreters import batching
from pyjax._src.lax import reductions as _red
from pyjax._src.lax import shapes as _shapes
from pyjax._src.lax import utils as U
from pyjax._src.lax.utils import canonicalize_shape
from pyjax._src.runtime.array import Array

__all__ = ["split", "split_p", "stack", "stack_p", "unstack", "unstack_p", "tile", "tile_p",
           "copy_p", "mulhi", "mulhi_p", "eq_to_p", "le_to_p", "lt_to_p", "empty",
           "stage", "stage_p", "optimization_barrier", "optimization_barrier_p", "dce_sink",
           "dce_sink_p", "broadcast_like", "shape_as_value", "dtype", "Tolerance",
           "AccuracyMode"]

_nm = batching.not_mapped
_asarray = _shapes._asarray
_canonicalize_axis = _shapes._canonicalize_axis


def _aval(x):
  return x.aval if ad.is_undefined_primal(x) else core.get_aval(x)


def _instantiate(cts, avals):
  return [ad.zeros_like_aval(ad.tangent_aval(a)) if type(c) is ad.Zero or c is None else c
          for c, a in zip(cts, avals)]


# --- split --------------------------------------------------------------------------------
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
  if all(type(c) is ad.Zero for c in cts):
    return [None]
  avals = split_p.abstract_eval(_aval(operand), sizes=sizes, axis=axis)
  cts = _instantiate(cts, avals)
  if len(cts) == 1:
    return [cts[0]]
  return [_shapes.concatenate_p.bind(*cts, dimension=axis)]


def _split_batch(args, dims, *, sizes, axis):
  x, = args
  d, = dims
  outs = split_p.bind(x, sizes=sizes, axis=axis + 1 if axis >= d else axis)
  return outs, [d] * len(outs)


ad.deflinear2(split_p, _split_transpose)
batching.primitive_batchers[split_p] = _split_batch


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
  if all(type(c) is ad.Zero for c in cts):
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
  xs = [batching.bdim_at_front(x, d, size) for x, d in zip(args, dims)]
  return stack_p.bind(*xs, axis=axis + 1), 0


def _unstack_batch(args, dims, *, axis):
  x, = args
  d, = dims
  if axis < d:
    outs = unstack_p.bind(x, axis=axis)
    return outs, [d - 1] * len(outs)
  outs = unstack_p.bind(x, axis=axis + 1)
  return outs, [d] * len(outs)


ad.deflinear2(stack_p, _stack_transpose)
ad.deflinear2(unstack_p, _unstack_transpose)
batching.primitive_batchers[stack_p] = _stack_batch
batching.primitive_batchers[unstack_p] = _unstack_batch


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
  ct = _shapes.reshape_p.bind(ct, new_sizes=split_shape, dimensions=None, sharding=None)
  return [_red.reduce_sum_p.bind(ct, axes=tuple(2 * i for i in range(len(shape))),
                                 out_sharding=None)]


def _tile_batch(args, dims, *, reps):
  x, = args
  d, = dims
  new = list(reps)
  new.insert(d, 1)
  return tile_p.bind(x, reps=tuple(new)), d


ad.deflinear2(tile_p, _tile_transpose)
batching.primitive_batchers[tile_p] = _tile_batch


# --- copy -----------------------------------------------------------------------------------
copy_p = core.Primitive("copy")
copy_p.def_abstract_eval(lambda x: x)
ad.deflinear(copy_p, lambda ct: [copy_p.bind(ct)])
batching.defvectorized(copy_p)


# --- mulhi and the total-order comparisons --------------------------------------------------
mulhi_p = U.binop("mulhi", U.integer)
ad.defjvp_zero(mulhi_p)
batching.defbroadcasting(mulhi_p)


def mulhi(x, y, /):
  """The high N bits of the 2N-bit product of N-bit integers ``x * y`` (signed or
  unsigned, by dtype); operands of equal integer dtype, lax broadcasting."""
  return mulhi_p.bind(x, y)


_to_bool = lambda d: dtypes.bool_
# Comparisons in IEEE total order (-NaN < -inf < ... < -0 < +0 < ... < inf < NaN; equal
# only when the bits are equal), as XLA's TOTALORDER comparisons in sort comparators.
eq_to_p = U.binop("eq_to", U.any_, _to_bool)
le_to_p = U.binop("le_to", U.int_float_bool, _to_bool)
lt_to_p = U.binop("lt_to", U.int_float_bool, _to_bool)
for _p in (eq_to_p, le_to_p, lt_to_p):
  ad.defjvp_zero(_p)
  batching.defbroadcasting(_p)


# --- empty ----------------------------------------------------------------------------------
empty_p = core.Primitive("empty")


@empty_p.def_abstract_eval
def _empty_abstract(*, shape, dtype, out_sharding):
  return ShapedArray(shape, dtype, False)


# No operands: never batched by vmap; its result is the same for every example.
batching.primitive_batchers[empty_p] = (
    lambda args, dims, **params: (empty_p.bind(**params), _nm))


def empty(shape, dtype, *, out_sharding=None):
  """An array of ``shape`` and ``dtype`` whose values are unspecified (zeros on CPU, as
  XLA's CPU backend gives).  Differs from JAX: ``dtype`` is canonicalized (the jaxpr
  prints ``dtype=float32``, not the scalar type the user passed).  ``out_sharding`` lays the
  result out over its devices (the jaxpr's ``out_sharding`` stays None)."""
  if out_sharding is not None:
    from pyjax._src.out_sharding import sharded_call
    return sharded_call(out_sharding, "lax.empty", lambda: empty(shape, dtype))
  shape = canonicalize_shape(shape if isinstance(shape, (tuple, list)) else (shape,))
  d = dtypes.check_user_dtype(dtype, "lax.empty")
  return empty_p.bind(shape=shape, dtype=d, out_sharding=None)


# --- stage ----------------------------------------------------------------------------------
class _StagePrimitive(core.Primitive):
  """``stage`` never appears in a jaxpr (as in JAX, its bind "stages the value"): a tracer
  of the current transformation is returned as it is; a concrete value becomes an Array,
  which a trace sees as a literal or constant."""

  def bind(self, x):
    if isinstance(x, core.Tracer):
      return x
    return _asarray(x)


stage_p = _StagePrimitive("stage")
stage_p.def_abstract_eval(lambda x: x)
ad.deflinear(stage_p, lambda ct: [ct])
batching.defvectorized(stage_p)


def stage(x, /):
  """Lift ``x`` into the active trace: the identity on traced values; Python scalars and
  NumPy arrays become Arrays (weak types kept)."""
  return stage_p.bind(x)


# --- optimization_barrier ----------------------------------------------------------------
optimization_barrier_p = core.Primitive("optimization_barrier")
optimization_barrier_p.multiple_results = True
optimization_barrier_p.def_abstract_eval(lambda *avals: list(avals))


def optimization_barrier(operand, /):
  """Identity on a pytree of arrays that the compiler may not move operations across (no
  CSE, no fusion through it).  Eagerly it returns its inputs."""
  leaves, tree = tree_util.tree_flatten(operand)
  leaves = [x if isinstance(x, (Array, core.Tracer)) else _asarray(x) for x in leaves]
  outs = optimization_barrier_p.bind(*leaves)
  return tree_util.tree_unflatten(tree, outs)


def _opt_barrier_jvp(primals, tangents):
  ts = [ad.instantiate_zeros(t) for t in tangents]
  return optimization_barrier_p.bind(*primals), optimization_barrier_p.bind(*ts)


def _opt_barrier_transpose(cts, *args):
  avals = [_aval(a) for a in args]
  outs = optimization_barrier_p.bind(*_instantiate(cts, avals))
  return [o if ad.is_undefined_primal(a) else None for o, a in zip(outs, args)]


ad.primitive_jvps[optimization_barrier_p] = _opt_barrier_jvp
ad.primitive_transposes[optimization_barrier_p] = _opt_barrier_transpose
batching.primitive_batchers[optimization_barrier_p] = (
    lambda args, dims: (optimization_barrier_p.bind(*args), list(dims)))


# --- dce_sink -------------------------------------------------------------------------------
no_dce_effect = core.Effect("NoDCE")
dce_sink_p = core.Primitive("dce_sink")
dce_sink_p.multiple_results = True
dce_sink_p.def_effectful_abstract_eval(lambda x, **_: ([], {no_dce_effect}))
ad.deflinear(dce_sink_p, lambda cts, **_: [None])
batching.primitive_batchers[dce_sink_p] = (
    lambda args, dims, **params: (dce_sink_p.bind(*args, **params), []))


def dce_sink(val, *, prevent_mlir_dce=False):
  """Mark every leaf of ``val`` as used, so dead-code elimination keeps the computation
  producing it.  Returns None."""
  def sink(x):
    if not isinstance(x, (Array, core.Tracer)):
      x = _asarray(x)
    dce_sink_p.bind(x, prevent_mlir_dce=bool(prevent_mlir_dce))
  tree_util.tree_map(sink, val)


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
  return _shapes.broadcast_in_dim(arr, shape, tuple(range(nlead, len(shape))))


def shape_as_value(shape):
  """A shape as an integer array: a NumPy int32 array (int64 when a dimension needs it)
  for a non-empty shape, an empty int32 Array for ``()``."""
  shape = tuple(operator.index(d) for d in shape)
  big = any(d > np.iinfo(np.int32).max for d in shape)
  d = dtypes.canonicalize_dtype(np.dtype(np.int64) if big else np.dtype(np.int32))
  if not shape:
    return _shapes.full((0,), np.array(0, d))
  return np.asarray(shape, dtype=d)


def dtype(x):
  """The dtype of a value or dtype-like, as ``jax.dtypes.dtype``: Python scalars and
  types give the default (x64-dependent) dtypes; NumPy types, dtypes and names are
  canonicalized with JAX's warning; Arrays keep their dtype."""
  if x is None:
    raise ValueError(f"Invalid argument to dtype: {x}.")
  if isinstance(x, type):
    if x in (bool, int, float, complex):
      return dtypes.canonicalize_dtype(dtypes.python_scalar_dtype(x))
    sub = getattr(x, "_pyjax_dtype", None)   # pyjax.numpy scalar types
    if sub is not None:
      return dtypes.check_user_dtype(sub, "dtype")
    if issubclass(x, np.generic):
      return _explicit(np.dtype(x), x)
  elif type(x) in (bool, int, float, complex):
    return dtypes.canonicalize_dtype(dtypes.python_scalar_dtype(type(x)))
  elif isinstance(x, (Array, core.Tracer)):
    return x.dtype
  if isinstance(x, (str, np.dtype)):
    try:
      d = dtypes.to_numpy_dtype(x) if isinstance(x, str) else x
    except TypeError:
      d = np.dtype(x)   # NumPy's own TypeError for unknown names
    return _explicit(d, x)
  d = getattr(x, "dtype", None)
  if not isinstance(d, np.dtype):
    try:
      d = np.result_type(x)
    except TypeError as err:
      raise TypeError(f"Cannot determine dtype of {x}") from err
  _check_jax_dtype(d, x)
  return dtypes.canonicalize_dtype(d)


def _check_jax_dtype(d, x):
  if d not in dtypes.all_dtypes:
    raise TypeError(f"Value '{x}' with dtype {d} is not a valid JAX array type. Only arrays "
                    "of numeric types are supported by JAX.")


def _explicit(d, x):
  _check_jax_dtype(d, x)
  return dtypes.check_user_dtype(d, "dtype")


class Tolerance:
  """Tolerances for the accuracy of a unary function's implementation: at most two of
  ``atol``, ``rtol`` and ``ulps`` (all non-negative, at least one set).  The CPU backend
  has one implementation per function, so tolerances do not change results."""

  def __init__(self, atol: float = 0.0, rtol: float = 0.0, ulps: int = 0):
    if atol < 0.0 or rtol < 0.0 or ulps < 0.0:
      raise ValueError("Tolerances must be non-negative.")
    if atol == 0.0 and rtol == 0.0 and ulps == 0:
      raise ValueError("At least one of atol, rtol, or ulps must be set.")
    self.atol = atol
    self.rtol = rtol
    self.ulps = ulps


class AccuracyMode(enum.Enum):
  """Requested accuracy of a unary function's implementation (HIGHEST or DEFAULT)."""
  HIGHEST = 1
  DEFAULT = 2

