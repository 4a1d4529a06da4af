"""Reduction primitives: reduce_{sum,prod,max,min,and,or,xor}, argmax/argmin, the generic
variadic ``reduce`` and the cumulative reductions cum{sum,prod,max,min,logsumexp}.

Shape rule: ``axes`` are non-negative, distinct and in range (lax does not wrap negative
axes); the result drops the reduced dimensions.  Arithmetic and max/min reductions keep
the operand's dtype and weak type; logical reductions and argmax/argmin are strongly
typed.  Cumulative reductions keep shape, dtype and weak type.

``lax.reduce`` recognises monoids as JAX does (``lax.add`` with a concrete scalar init 0
becomes ``reduce_sum``, ``lax.max`` with the dtype's lowest value becomes ``reduce_max``,
...) and otherwise binds the generic ``reduce`` primitive, whose params carry the Python
``computation`` and its traced scalar ``jaxpr`` (a ClosedJaxpr), as in JAX.
"""
from __future__ import annotations

import collections
import operator
import re

import numpy as np

from pyjax._src import core, dtypes
from pyjax._src.avals import ShapedArray
from pyjax._src.lax import elementwise as _ew
from pyjax._src.lax import shapes as _shapes
from pyjax._src.lax.reduction_prims import (  # noqa: F401  (declared below shapes.py)
    _check_axes, _check_number, _is_number, _reduced_shape, reduce_and_p, reduce_max_p,
    reduce_min_p, reduce_or_p, reduce_prod_p, reduce_sum_p, reduce_xor_p)

__all__ = [
    "reduce_sum", "reduce_prod", "reduce_max", "reduce_min", "reduce_and", "reduce_or",
    "reduce_xor", "argmax", "argmin", "reduce", "cumsum", "cumprod", "cummax", "cummin",
    "cumlogsumexp",
    "reduce_sum_p", "reduce_prod_p", "reduce_max_p", "reduce_min_p", "reduce_and_p",
    "reduce_or_p", "reduce_xor_p", "argmax_p", "argmin_p", "reduce_p", "cumsum_p",
    "cumprod_p", "cummax_p", "cummin_p", "cumlogsumexp_p",
]


def _axes_tuple(axes):
  """``tuple(axes)`` of Python ints (an int raises "'int' object is not iterable", as in
  JAX); NumPy integers are accepted."""
  return tuple(operator.index(a) for a in axes)


def reduce_sum(operand, axes, *, out_sharding=None):
  """Sum over ``axes`` (non-negative ints).  Integer sums wrap on overflow.  The CPU
  backend adds floats in XLA's CPU order, rounding at every step, so results match JAX
  bit for bit (except large float32/float64 sums, which use NumPy's pairwise summation
  and may differ in the last bits)."""
  return reduce_sum_p.bind(operand, axes=_axes_tuple(axes), out_sharding=out_sharding)


def reduce_prod(operand, axes):
  """Product over ``axes``; integer products wrap.  Evaluation order as reduce_sum."""
  return reduce_prod_p.bind(operand, axes=_axes_tuple(axes))


def reduce_max(operand, axes):
  """Maximum over ``axes``; NaN propagates, +0 > -0, complex numbers compare
  lexicographically.  Empty reductions give -inf / the integer minimum / False."""
  return reduce_max_p.bind(operand, axes=_axes_tuple(axes))


def reduce_min(operand, axes):
  """Minimum over ``axes``; NaN propagates, -0 < +0, complex numbers compare
  lexicographically.  Empty reductions give +inf / the integer maximum / True."""
  return reduce_min_p.bind(operand, axes=_axes_tuple(axes))


def reduce_and(operand, axes):
  """Bitwise (bool: logical) AND over ``axes``; the result is strongly typed."""
  return reduce_and_p.bind(operand, axes=_axes_tuple(axes))


def reduce_or(operand, axes):
  """Bitwise (bool: logical) OR over ``axes``; the result is strongly typed."""
  return reduce_or_p.bind(operand, axes=_axes_tuple(axes))


def reduce_xor(operand, axes):
  """Bitwise (bool: logical) XOR over ``axes``; the result is strongly typed."""
  return reduce_xor_p.bind(operand, axes=_axes_tuple(axes))


# --- argmax / argmin ----------------------------------------------------------------------
def _arg_reduction(name, cmp_name):
  p = core.Primitive(name)
  p.arg_names = ("operand",)

  @p.def_abstract_eval
  def abstract(operand, *, axes, index_dtype):
    axis, = axes
    shape = operand.shape
    if not 0 <= axis < len(shape):
      raise ValueError(f"Invalid axis {axis} for operand shape {shape}")
    if shape[axis] == 0:
      raise ValueError("argmin and argmax require non-empty reduced dimension. "
                       f"operand.shape={shape} axis={axis}")
    if not dtypes.is_int(index_dtype):
      raise TypeError(f"index_dtype must be an integer type, but got {index_dtype.name}")
    d = operand.dtype
    if dtypes.is_complex(d):
      raise TypeError(f"{cmp_name} does not accept dtype {d.name} at position 0. Accepted "
                      "dtypes at position 0 are subtypes of integer, floating, bool.")
    return ShapedArray(_reduced_shape(shape, axes), index_dtype, False)
  return p


argmax_p = _arg_reduction("argmax", "gt")
argmin_p = _arg_reduction("argmin", "lt")


def argmax(operand, axis, index_dtype):
  """Index of the maximum along ``axis``: the first one on ties, the first NaN if any."""
  index_dtype = dtypes.check_user_dtype(index_dtype, "argmax")
  return argmax_p.bind(operand, axes=(operator.index(axis),), index_dtype=index_dtype)


def argmin(operand, axis, index_dtype):
  """Index of the minimum along ``axis``: the first one on ties, the first NaN if any."""
  index_dtype = dtypes.check_user_dtype(index_dtype, "argmin")
  return argmin_p.bind(operand, axes=(operator.index(axis),), index_dtype=index_dtype)


# --- cumulative reductions ---------------------------------------------------------------
def _cumulative(name, inexact_only=False):
  p = core.Primitive(name)
  p.arg_names = ("operand",)

  @p.def_abstract_eval
  def abstract(operand, *, axis, reverse):
    if axis < 0:
      raise ValueError("XLA operations do not allow negative axes")
    if axis >= len(operand.shape):
      raise ValueError(f"axis {axis} is out of bounds for array of shape {operand.shape}")
    d = operand.dtype
    _check_number(name, d)
    if inexact_only and not dtypes.is_inexact(d):
      raise TypeError(f"{name} does not accept dtype {d.name}. Accepted dtypes are subtypes "
                      "of inexact.")
    return operand
  return p


cumsum_p = _cumulative("cumsum")
cumprod_p = _cumulative("cumprod")
cummax_p = _cumulative("cummax")
cummin_p = _cumulative("cummin")
cumlogsumexp_p = _cumulative("cumlogsumexp", inexact_only=True)


def cumsum(operand, axis=0, reverse=False):
  """Cumulative sum along ``axis`` (non-negative); integer sums wrap on overflow."""
  return cumsum_p.bind(operand, axis=int(axis), reverse=bool(reverse))


def cumprod(operand, axis=0, reverse=False):
  """Cumulative product along ``axis`` (non-negative)."""
  return cumprod_p.bind(operand, axis=int(axis), reverse=bool(reverse))


def cummax(operand, axis=0, reverse=False):
  """Cumulative maximum along ``axis``; NaN propagates."""
  return cummax_p.bind(operand, axis=int(axis), reverse=bool(reverse))


def cummin(operand, axis=0, reverse=False):
  """Cumulative minimum along ``axis``; NaN propagates."""
  return cummin_p.bind(operand, axis=int(axis), reverse=bool(reverse))


def cumlogsumexp(operand, axis=0, reverse=False):
  """Cumulative log-sum-exp along ``axis``.  Differs from JAX: integer operands raise a
  TypeError (JAX fails with an OverflowError while lowering)."""
  return cumlogsumexp_p.bind(operand, axis=int(axis), reverse=bool(reverse))


# --- the generic variadic reduce ---------------------------------------------------------
reduce_p = core.Primitive("reduce")
reduce_p.multiple_results = True

_ADDR = re.compile(r" at 0x[0-9a-fA-F]+")


def _mask_address(fn):
  return _ADDR.sub(" at 0xXXXXXXXXXXXX", repr(fn))


def _reduce_param_printer(params):
  out = dict(params)
  out["computation"] = _mask_address(params["computation"])
  return out


reduce_p.param_printer = _reduce_param_printer


@reduce_p.def_abstract_eval
def _reduce_abstract(*avals, computation, jaxpr, dimensions):
  n = len(avals) // 2
  operands, inits = avals[:n], avals[n:]
  if len(operands) != len(inits) or not operands:
    raise ValueError("reduce needs as many initial values as operands, got "
                     f"{len(operands)} operands and {len(inits)} initial values")
  if any(a.dtype != i.dtype for a, i in zip(operands, inits)):
    raise TypeError("reduce operand dtypes should match corresponding initial value dtypes, "
                    f"got operands={list(operands)} and initial_values={list(inits)}")
  if any(i.shape for i in inits):
    raise ValueError(f"reduce found non-scalar initial value: {[i.shape for i in inits]}")
  shape0 = operands[0].shape
  if any(a.shape != shape0 for a in operands):
    raise ValueError("reduce operands must all have the same shape, got shapes "
                     f"{[a.shape for a in operands]}")
  _check_axes(operands[0], dimensions)
  outs = jaxpr.out_avals
  if len(outs) != n:
    raise ValueError(f"reduce computation must produce {n} values (one per operand), "
                     f"but produces {len(outs)}")
  for i, (o, a) in enumerate(zip(outs, operands)):
    if o.shape != () or o.dtype != a.dtype:
      raise ValueError(f"reduce computation's result {i} must be a scalar of dtype "
                       f"{a.dtype.name} (the operand's), got {o.str_short(short_dtypes=True)}")
  out_shape = _reduced_shape(shape0, dimensions)
  return [ShapedArray(out_shape, a.dtype, a.weak_type and i.weak_type)
          for a, i in zip(operands, inits)]


def _tree():
  from pyjax._src import tree_util
  return tree_util


_reducer_cache = collections.OrderedDict()
_REDUCER_CACHE_SIZE = 256


def _trace_reducer(computation, flat_avals, tree, context):
  """Trace ``computation(a, b)`` (a, b: pytrees shaped like ``tree`` of scalars with
  ``flat_avals``) into a ClosedJaxpr whose inputs are a's leaves then b's leaves."""
  key = (computation, tuple(flat_avals), tree)
  try:
    hit = _reducer_cache.get(key)
  except TypeError:  # unhashable computation
    key, hit = None, None
  if hit is not None:
    _reducer_cache.move_to_end(key)
    return hit
  tu = _tree()
  n = len(flat_avals)

  def fun(*args):
    a = tu.tree_unflatten(tree, args[:n])
    b = tu.tree_unflatten(tree, args[n:])
    out_leaves, _ = tu.tree_flatten(computation(a, b))
    return out_leaves

  closed = core.trace_to_jaxpr(fun, list(flat_avals) * 2)
  if any(isinstance(c, core.Tracer) for c in closed.consts):
    raise NotImplementedError(f"{context} computations can't close over Tracers. Please "
                              "open an issue at https://github.com/jax-ml/jax.")
  if key is not None:
    _reducer_cache[key] = closed
    if len(_reducer_cache) > _REDUCER_CACHE_SIZE:
      _reducer_cache.popitem(last=False)
  return closed


def _concrete_scalar(x):
  """The value of a concrete scalar (Python/NumPy scalar, 0-d Array), else None."""
  if isinstance(x, core.Tracer):
    return None
  try:
    aval = core.get_aval(x)
  except TypeError:
    return None
  if aval.shape != ():
    return None
  if hasattr(x, "_data"):
    return x._data(), aval.dtype
  return np.asarray(x, aval.dtype), aval.dtype


def _max_identity(d):
  if d == dtypes.bool_:
    return False
  if dtypes.is_int(d):
    return np.iinfo(d).min
  return -np.inf


def _min_identity(d):
  if d == dtypes.bool_:
    return True
  if dtypes.is_int(d):
    return np.iinfo(d).max
  return np.inf


def _and_identity(d):
  return True if d == dtypes.bool_ else np.array(-1).astype(d)


def _equal(val, ident):
  with np.errstate(all="ignore"):
    return bool(np.equal(val, ident))


def _get_monoid_reducer(computation, init_values):
  """JAX's monoid recognition: (lax op, concrete scalar identity init) -> reducer."""
  if len(init_values) != 1:
    return None
  c = _concrete_scalar(init_values[0])
  if c is None:
    return None
  val, d = c
  intlike = d == dtypes.bool_ or dtypes.is_int(d)
  if computation is _ew.add:
    return reduce_sum if _equal(val, 0) else None
  if computation is _ew.mul:
    return reduce_prod if _equal(val, 1) else None
  if computation is _ew.bitwise_or and intlike:
    return reduce_or if _equal(val, 0) else None
  if computation is _ew.bitwise_and and intlike:
    return reduce_and if _equal(val, _and_identity(d)) else None
  if computation is _ew.bitwise_xor and intlike:
    return reduce_xor if _equal(val, 0) else None
  if computation is _ew.max:
    return reduce_max if _equal(val, _max_identity(d)) else None
  if computation is _ew.min:
    return reduce_min if _equal(val, _min_identity(d)) else None
  return None


def reduce(operands, init_values, computation, dimensions, out_sharding=None):
  """Reduce ``operands`` (a pytree of equal-shape arrays) over ``dimensions`` with
  ``computation(acc, x) -> acc`` starting from the scalar ``init_values``.

  ``lax.add/mul/max/min/bitwise_*`` with a concrete identity init become the dedicated
  primitives (reduce_sum, ...), as in JAX.  Otherwise the generic ``reduce`` primitive is
  bound (its params hold the Python ``computation`` and its traced scalar jaxpr); the
  eager CPU backend evaluates that jaxpr on NumPy arrays, folding in the same order as
  XLA's CPU backend (row-major, reduced dimensions longer than 32 split into windows of
  32), so even non-associative computations match JAX.
  """
  tu = _tree()
  flat_operands, operand_tree = tu.tree_flatten(operands)
  flat_inits, init_tree = tu.tree_flatten(init_values)
  if operand_tree != init_tree:
    raise ValueError("Operands must have the same tree structure as init_values: "
                     f"{operand_tree} vs. {init_tree}")
  if len(flat_operands) != len(flat_inits):
    raise ValueError("Must have same total number of operands as init_values: "
                     f"{len(flat_operands)} vs. {len(flat_inits)}")
  dimensions = _axes_tuple(dimensions)
  monoid = _get_monoid_reducer(computation, flat_inits)
  if monoid is not None:
    if monoid is reduce_sum:
      out = reduce_sum(flat_operands[0], dimensions, out_sharding=out_sharding)
    else:
      out = monoid(flat_operands[0], dimensions)
    # as in JAX: the result is weak only if both the operand and the init value are
    weak = dtypes.is_weakly_typed(flat_operands[0]) and dtypes.is_weakly_typed(flat_inits[0])
    if core.get_aval(out).weak_type != weak:
      out = _ew._convert_element_type(out, None, weak_type=weak)
    return tu.tree_unflatten(operand_tree, [out])
  op_avals = [core.get_aval(x) for x in flat_operands]
  init_avals = [core.get_aval(x) for x in flat_inits]
  if any(a.dtype != i.dtype for a, i in zip(op_avals, init_avals)):
    raise TypeError("reduce operand dtypes should match corresponding initial value dtypes, "
                    f"got operands={op_avals} and initial_values={init_avals}")
  if any(i.shape for i in init_avals):
    raise ValueError(f"reduce found non-scalar initial value: {[i.shape for i in init_avals]}")
  jaxpr = _trace_reducer(computation, [ShapedArray((), i.dtype, i.weak_type) for i in init_avals],
                         operand_tree, "Reduction")
  outs = reduce_p.bind(*flat_operands, *flat_inits, computation=computation, jaxpr=jaxpr,
                       dimensions=dimensions)
  return tu.tree_unflatten(operand_tree, outs)


# --- differentiation rules ----------------------------------------------------------------
# JVPs and transposes (pyjax._src.interpreters.ad's tables).  reduce_sum and cumsum are
# linear; reduce_max/min split the tangent evenly among tied maxima; reduce_prod, the
# generic reduce and the cumulative products/extrema differentiate a pairwise (tree /
# associative-scan) decomposition, as JAX does, so zeros and ties are handled exactly.
from pyjax._src.interpreters import ad as _ad  # noqa: E402


def _reduce_sum_transpose(ct, operand, *, axes, out_sharding=None):
  shape = operand.aval.shape
  dims = tuple(i for i in range(len(shape)) if i not in axes)
  return [_shapes.broadcast_in_dim_p.bind(ct, shape=tuple(shape), broadcast_dimensions=dims,
                                                sharding=None)]


_ad.deflinear2(reduce_sum_p, _reduce_sum_transpose)


def _keepdims_shape(shape, axes):
  return tuple(1 if i in axes else d for i, d in enumerate(shape))


def _reduce_chooser_jvp(prim):
  def rule(primals, tangents, *, axes):
    operand, = primals
    g, = tangents
    ans = prim.bind(operand, axes=axes)
    shape = core.get_aval(operand).shape
    ans_b = _shapes.reshape_p.bind(ans, new_sizes=_keepdims_shape(shape, axes), dimensions=None,
                             sharding=None)
    dt = core.get_aval(g).dtype
    loc = _ew.convert_element_type_p.bind(_ew.eq_p.bind(operand, ans_b), new_dtype=dt,
                                          weak_type=False, sharding=None)
    counts = reduce_sum_p.bind(loc, axes=axes, out_sharding=None)
    num = reduce_sum_p.bind(_ew.mul_p.bind(g, loc), axes=axes, out_sharding=None)
    return ans, _ew.div_p.bind(num, counts)
  return rule


_ad.primitive_jvps[reduce_max_p] = _reduce_chooser_jvp(reduce_max_p)
_ad.primitive_jvps[reduce_min_p] = _reduce_chooser_jvp(reduce_min_p)
for _p in (argmax_p, argmin_p, reduce_and_p, reduce_or_p, reduce_xor_p):
  _ad.defjvp_zero(_p)


def _move_axes_front_flat(x, axes):
  """Reshape ``x`` to (prod(shape[axes]), *other dims) with ``axes`` moved first."""
  shape = core.get_aval(x).shape
  others = tuple(i for i in range(len(shape)) if i not in axes)
  perm = tuple(axes) + others
  n = 1
  for a in axes:
    n *= shape[a]
  new = (n,) + tuple(shape[i] for i in others)
  same = perm == tuple(range(len(shape)))
  return _shapes.reshape_p.bind(x, new_sizes=new, dimensions=None if same else perm, sharding=None)


def _tree_reduce(combine, xs, pads):
  """Reduce the leading axis of the arrays ``xs`` pairwise with ``combine`` (a function
  of two lists of arrays); an odd leftover is padded with the scalars ``pads``."""
  while core.get_aval(xs[0]).shape[0] > 1:
    shape = core.get_aval(xs[0]).shape
    n = shape[0]
    n1 = (n + 1) // 2
    n2 = n - n1
    lo = (0,) * len(shape)
    xs1 = [_shapes.slice_p.bind(x, start_indices=lo, limit_indices=(n1,) + shape[1:], strides=None)
           for x in xs]
    xs2 = [_shapes.slice_p.bind(x, start_indices=(n1,) + lo[1:], limit_indices=shape, strides=None)
           for x in xs]
    if n2 != n1:
      cfg = ((0, 1, 0),) + ((0, 0, 0),) * (len(shape) - 1)
      xs2 = [_shapes.pad_p.bind(x, p, padding_config=cfg) for x, p in zip(xs2, pads)]
    xs = combine(xs1, xs2)
  return [_shapes.squeeze_p.bind(x, dimensions=(0,)) for x in xs]


def _reduce_prod_jvp(primals, tangents, *, axes):
  operand, = primals
  g, = tangents
  ans = reduce_prod_p.bind(operand, axes=axes)
  aval = core.get_aval(operand)
  if any(aval.shape[a] == 0 for a in axes):
    return ans, _ad.Zero.from_primal_value(ans)
  x = _move_axes_front_flat(operand, axes)
  t = _move_axes_front_flat(_ad.instantiate_zeros(g), axes)
  one = _ad.scalar_const(1, aval.dtype)

  def tree(v):
    return _tree_reduce(lambda a, b: [_ew.mul_p.bind(a[0], b[0])], [v], [one])[0]
  _, (t_out,) = _ad.jvp_flat(lambda v: [tree(v)], [x], [t])
  return ans, _ad.instantiate_zeros(t_out)


_ad.primitive_jvps[reduce_prod_p] = _reduce_prod_jvp


def _reduce_jvp(primals, tangents, *, computation, jaxpr, dimensions):
  n = len(primals) // 2
  operands, inits = primals[:n], primals[n:]
  outs = reduce_p.bind(*primals, computation=computation, jaxpr=jaxpr, dimensions=dimensions)
  op_ts = tangents[:n]
  if all(type(t) is _ad.Zero for t in op_ts):
    return outs, [_ad.Zero.from_primal_value(o) for o in outs]
  shape = core.get_aval(operands[0]).shape
  if any(shape[a] == 0 for a in dimensions):
    return outs, [_ad.Zero.from_primal_value(o) for o in outs]
  xs = [_move_axes_front_flat(x, dimensions) for x in operands]
  ts = [t if type(t) is _ad.Zero else _move_axes_front_flat(t, dimensions) for t in op_ts]

  def combine(a, b):
    return core.eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *a, *b)

  def fun(*vs):
    flat = _tree_reduce(combine, list(vs), list(inits))
    out_shape = tuple(d for i, d in enumerate(shape) if i not in dimensions)
    return [_shapes.reshape_p.bind(f, new_sizes=out_shape, dimensions=None, sharding=None)
            if core.get_aval(f).shape != out_shape else f for f in flat]
  _, t_outs = _ad.jvp_flat(fun, xs, ts)
  return outs, t_outs


_ad.primitive_jvps[reduce_p] = _reduce_jvp

# cumulative reductions
_ad.deflinear(cumsum_p, lambda ct, *, axis, reverse: [
    cumsum_p.bind(ct, axis=axis, reverse=not reverse)])


def _interleave(a, b, axis):
  """Elements of ``a`` at even and of ``b`` at odd positions along ``axis``."""
  sa, sb = core.get_aval(a).shape, core.get_aval(b).shape
  na, nb = sa[axis], sb[axis]
  dt = core.get_aval(a).dtype
  zero = _ad.scalar_const(0, dt)

  def cfg(lo, hi):
    c = [(0, 0, 0)] * len(sa)
    c[axis] = (lo, hi, 1)
    return tuple(c)
  if na == nb + 1:
    pa = _shapes.pad_p.bind(a, zero, padding_config=cfg(0, 0))
    pb = _shapes.pad_p.bind(b, zero, padding_config=cfg(1, 1))
  else:
    pa = _shapes.pad_p.bind(a, zero, padding_config=cfg(0, 1))
    pb = _shapes.pad_p.bind(b, zero, padding_config=cfg(1, 0))
  return _ew.add_p.bind(pa, pb)


def _slice_axis(x, start, stop, stride, axis):
  shape = core.get_aval(x).shape
  lo = [0] * len(shape)
  hi = list(shape)
  st = [1] * len(shape)
  lo[axis], hi[axis], st[axis] = start, max(start, stop), stride
  return _shapes.slice_p.bind(x, start_indices=tuple(lo), limit_indices=tuple(hi),
                        strides=None if stride == 1 else tuple(st))


def _associative_scan(fn, xs, axis):
  """Inclusive scan of the arrays ``xs`` along ``axis`` with the associative ``fn`` (two
  lists of arrays -> list of arrays)."""
  n = core.get_aval(xs[0]).shape[axis]
  if n < 2:
    return xs
  reduced = fn([_slice_axis(x, 0, n - 1, 2, axis) for x in xs],
               [_slice_axis(x, 1, n, 2, axis) for x in xs])
  odd = _associative_scan(fn, reduced, axis)
  if n % 2 == 0:
    n_odd = core.get_aval(odd[0]).shape[axis]
    even = fn([_slice_axis(o, 0, n_odd - 1, 1, axis) for o in odd],
              [_slice_axis(x, 2, n, 2, axis) for x in xs])
  else:
    even = fn(odd, [_slice_axis(x, 2, n, 2, axis) for x in xs])
  even = [_shapes.concatenate_p.bind(_slice_axis(x, 0, 1, 1, axis), e, dimension=axis)
          for x, e in zip(xs, even)]
  return [_interleave(e, o, axis) for e, o in zip(even, odd)]


def _logaddexp(a, b):
  amax = _ew.max_p.bind(a, b)
  delta = _ew.sub_p.bind(a, b)
  isnan = _ew.ne_p.bind(delta, delta)
  return _ew.select_n_p.bind(isnan, _ew.add_p.bind(amax, _ew.log1p_p.bind(_ew.exp_p.bind(
      _ew.neg_p.bind(_ew.abs_p.bind(delta))))), _ew.add_p.bind(a, b))


def _finite_or_zero(x):
  return _ew.select_n_p.bind(_ew.is_finite_p.bind(x), _ad.zeros_like(x), x)


def _logaddexp_pair(p, q):
  """logaddexp on (value, tangent) pairs: the tangent is t_a e^(a - out) + t_b e^(b - out)
  (a smooth rule, as JAX's custom JVP of logaddexp)."""
  (a, ta), (b, tb) = p, q
  out = _logaddexp(a, b)
  fo = _finite_or_zero(out)
  ca = _ew.exp_p.bind(_ew.sub_p.bind(_finite_or_zero(a), fo))
  cb = _ew.exp_p.bind(_ew.sub_p.bind(_finite_or_zero(b), fo))
  return [out, _ew.add_p.bind(_ew.mul_p.bind(ta, ca), _ew.mul_p.bind(tb, cb))]


def _cumulative_jvp(prim, combine):
  def rule(primals, tangents, *, axis, reverse):
    x, = primals
    g, = tangents
    out = prim.bind(x, axis=axis, reverse=reverse)

    def scan(*vs):
      vs = list(vs)
      if reverse:
        vs = [_shapes.rev_p.bind(v, dimensions=(axis,)) for v in vs]
      r = _associative_scan(combine, vs, axis)
      if reverse:
        r = [_shapes.rev_p.bind(v, dimensions=(axis,)) for v in r]
      return r
    if prim is cumlogsumexp_p:
      return out, scan(x, g)[1]
    _, (t,) = _ad.jvp_flat(scan, [x], [g])
    return out, t
  _ad.primitive_jvps[prim] = rule


_cumulative_jvp(cumprod_p, lambda a, b: [_ew.mul_p.bind(a[0], b[0])])
_cumulative_jvp(cummax_p, lambda a, b: [_ew.max_p.bind(a[0], b[0])])
_cumulative_jvp(cummin_p, lambda a, b: [_ew.min_p.bind(a[0], b[0])])
_cumulative_jvp(cumlogsumexp_p, lambda a, b: _logaddexp_pair((a[0], a[1]), (b[0], b[1])))


# --- batching rules -----------------------------------------------------------------------
from pyjax._src.interpreters import batching as _bt  # noqa: E402


def _shifted_axes(axes, d):
  """Per-example reduced axes -> axes of the batched operand (batch dim at ``d``), as
  NumPy integers (JAX's rule computes them with NumPy and its jaxprs show them so)."""
  return tuple(np.where(np.less(axes, d), axes, np.add(axes, 1))) if axes else ()


def _reducer_batch(prim):
  def rule(args, dims, *, axes, **params):
    x, = args
    d, = dims
    new_axes = _shifted_axes(axes, d)
    out_d = d - int(np.sum(np.less(axes, d))) if axes else d
    return prim.bind(x, axes=new_axes, **params), out_d
  return rule


for _p in (reduce_sum_p, reduce_prod_p, reduce_max_p, reduce_min_p, reduce_and_p, reduce_or_p,
           reduce_xor_p, argmax_p, argmin_p):
  _bt.primitive_batchers[_p] = _reducer_batch(_p)


def _cumulative_batch(prim):
  def rule(args, dims, *, axis, reverse):
    x, = args
    d, = dims
    return prim.bind(x, axis=axis if axis < d else axis + 1, reverse=reverse), d
  return rule


for _p in (cumsum_p, cumprod_p, cummax_p, cummin_p, cumlogsumexp_p):
  _bt.primitive_batchers[_p] = _cumulative_batch(_p)


def _reduce_batch(args, dims, *, computation, jaxpr, dimensions):
  n = len(args) // 2
  operands, inits = args[:n], args[n:]
  if any(d is not _bt.not_mapped for d in dims[n:]):
    raise NotImplementedError("vmap of lax.reduce with batched initial values is not "
                              "implemented (as in JAX)")
  size = next(core.get_aval(x).shape[d] for x, d in zip(operands, dims[:n])
              if d is not _bt.not_mapped)
  operands = [_bt.bdim_at_front(x, d, size) for x, d in zip(operands, dims[:n])]
  outs = reduce_p.bind(*operands, *inits, computation=computation, jaxpr=jaxpr,
                       dimensions=tuple(np.add(1, dimensions)) if dimensions else ())
  return outs, [0] * n


_bt.primitive_batchers[reduce_p] = _reduce_batch
