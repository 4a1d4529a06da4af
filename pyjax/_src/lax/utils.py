"""Helpers for declaring primitives: shape/dtype/weak-type rules of the common kinds."""
from __future__ import annotations

import numpy as np

from pyjax._src import core, dtypes
from pyjax._src.avals import ShapedArray

# dtype categories used in "does not accept dtype" errors, named as JAX names them
_bool = ("bool", lambda d: d == dtypes.bool_)
_int = ("integer", dtypes.is_int)
_float = ("floating", dtypes.is_float)
_complex = ("complexfloating", dtypes.is_complex)
_signed_int = ("signedinteger", lambda d: dtypes.is_int(d) and not dtypes.is_unsigned(d))
_float32 = ("float32", lambda d: d == dtypes.float32)
_float64 = ("float64", lambda d: d == dtypes.float64)

any_ = (_int, _float, _complex, _bool)
numeric = (_int, _float, _complex)
inexact = (_float, _complex)
floating = (_float,)
integer = (_int,)
int_or_bool = (_int, _bool)
float_or_int = (_int, _float)
signed_numeric = (_int, _float, _complex)
# the kinds (and their order, which shows in error messages) JAX uses for specific ops
float_complex_signed = (_float, _complex, _signed_int)  # abs
int_float_bool = (_int, _float, _bool)  # lt, le, gt, ge
float32_complex_float64 = (_float32, _complex, _float64)  # conj
float32_float64 = (_float32, _float64)  # complex


def _accepts(kinds, d):
  for _, pred in kinds:
    if pred(d):
      return True
  return False


def _kinds_str(kinds):
  return ", ".join(n for n, _ in kinds)


def check_dtype(name, kinds, d, position=None):
  if not _accepts(kinds, d):
    if position is None:
      raise TypeError(f"{name} does not accept dtype {d.name}. Accepted dtypes are "
                      f"subtypes of {_kinds_str(kinds)}.")
    raise TypeError(f"{name} does not accept dtype {d.name} at position {position}. Accepted "
                    f"dtypes at position {position} are subtypes of {_kinds_str(kinds)}.")


def broadcasting_shape(name, shapes):
  """lax's elementwise broadcasting: rank-0 operands broadcast, others need equal rank and
  equal sizes or size 1."""
  first = shapes[0]
  if all(s == first for s in shapes):
    return first
  nonscalar = [s for s in shapes if s]
  if not nonscalar:
    return ()
  ranks = {len(s) for s in nonscalar}
  if len(ranks) != 1:
    raise TypeError(f"{name}: arrays must have the same number of dimensions, got {ranks}")
  out = []
  for ds in zip(*nonscalar):
    sizes = {d for d in ds if d != 1}
    if len(sizes) > 1:
      raise TypeError(f"{name} got incompatible shapes for broadcasting: "
                      f"{', '.join(str(tuple(s)) for s in nonscalar)}.")
    out.append(sizes.pop() if sizes else 1)
  return tuple(out)


def naryop_avals(name, kinds_per_arg, avals, require_same_dtype=True):
  """(shape, weak_type) of an n-ary elementwise op; shape errors are raised before dtype
  errors, as JAX's shape rule runs before its dtype rule."""
  shape = broadcasting_shape(name, [a.shape for a in avals])
  d0 = avals[0].dtype
  for i, (a, kinds) in enumerate(zip(avals, kinds_per_arg)):
    if not _accepts(kinds, a.dtype):
      check_dtype(name, kinds, a.dtype, position=i)
  if require_same_dtype:
    for a in avals[1:]:
      if a.dtype != d0:
        tip = _jnp_tips.get(name)
        raise TypeError(
            f"lax.{name} requires arguments to have the same dtypes, got "
            f"{', '.join(x.dtype.name for x in avals)}."
            + (f" (Tip: jnp.{tip} is a similar function that does automatic type "
               "promotion on inputs)." if tip else ""))
  weak = all(a.weak_type for a in avals)
  return shape, weak


# the lax functions whose dtype-mismatch error points at a jnp equivalent, as JAX's does
_jnp_tips = {"add": "add", "sub": "subtract", "mul": "multiply", "div": "divide",
             "max": "maximum", "min": "minimum", "eq": "equal", "ne": "not_equal",
             "shift_left": "left_shift", "shift_right_arithmetic": "right_shift",
             "shift_right_logical": "right_shift", "atan2": "arctan2",
             "nextafter": "nextafter"}


def accepted_dtypes(kinds):
  """The set of known dtypes ``kinds`` accepts (a set look-up on the hot path)."""
  return frozenset(d for d in dtypes.all_dtypes if _accepts(kinds, d))


def unop(name, kinds, result_dtype=None, weak_rule=None):
  """Declare a unary elementwise primitive."""
  p = core.Primitive(name)
  p.arg_names = ("x",)
  ok = accepted_dtypes(kinds)

  def abstract(x, **params):
    d = x.dtype
    if d not in ok and not _accepts(kinds, d):
      check_dtype(name, kinds, d)
    out_d = d if result_dtype is None else result_dtype(d)
    weak = x.weak_type if weak_rule is None else weak_rule(x)
    return ShapedArray(x.shape, out_d, weak)
  p.def_abstract_eval(abstract)
  return p


def binop(name, kinds, result_dtype=None, same_dtype=True, kinds2=None):
  """Declare a binary elementwise primitive.

  The hot path (equal dtypes accepted by ``kinds``; equal shapes or one rank-0 operand)
  is a set look-up and a shape comparison; everything else goes through
  ``naryop_avals``, which raises JAX's errors."""
  p = core.Primitive(name)
  p.arg_names = ("x", "y")
  fast = kinds2 is None and same_dtype
  kinds2 = kinds if kinds2 is None else kinds2
  ok = accepted_dtypes(kinds)

  def abstract(x, y, **params):
    d = x.dtype
    if fast and (d is y.dtype or d == y.dtype) and d in ok:
      xs, ys = x.shape, y.shape
      if xs == ys or not ys:
        return ShapedArray(xs, d if result_dtype is None else result_dtype(d),
                           x.weak_type and y.weak_type)
      if not xs:
        return ShapedArray(ys, d if result_dtype is None else result_dtype(d),
                           x.weak_type and y.weak_type)
    shape, weak = naryop_avals(name, (kinds, kinds2), (x, y), same_dtype)
    out_d = d if result_dtype is None else result_dtype(d)
    return ShapedArray(shape, out_d, weak)
  p.def_abstract_eval(abstract)
  return p


def canonicalize_shape(shape, context=""):
  """A tuple of Python ints, or JAX's TypeError for anything else (tracers included, and
  dimensions of 2**63 or more, which no array can have)."""
  try:
    out = tuple(int(_index(d)) for d in shape)
  except TypeError:
    pass
  else:
    if any(d >= _DIM_LIMIT for d in out):
      raise TypeError(f"Shape dimensions must fit in a signed 64-bit integer, got {shape!r}.")
    return out
  if not isinstance(shape, (tuple, list)):
    try:
      return (int(_index(shape)),)
    except TypeError:
      pass
  msg = ("Shapes must be 1D sequences of concrete values of integer type, got "
         f"{shape!r}.")
  if any(isinstance(d, core.Tracer) for d in (shape if isinstance(shape, (tuple, list)) else [shape])):
    msg += ("\nIf using `jit`, try using `static_argnums` or applying `jit` to smaller "
            "subfunctions.")
  raise TypeError(msg + (f" {context}" if context else ""))


_DIM_LIMIT = 1 << 63


def _index(d):
  if isinstance(d, core.Tracer):
    raise TypeError("tracer")
  import operator
  return operator.index(d)


def as_tuple_of_ints(xs, name="axes"):
  return tuple(int(_index(x)) for x in xs)


def zeros_like_aval(aval):
  return np.zeros(aval.shape, aval.dtype)
