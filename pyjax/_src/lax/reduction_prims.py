"""The axis reductions' primitives and shape rules: reduce_{sum,prod,max,min,and,or,xor}.

They sit below ``shapes.py`` and ``reductions.py``, which both bind them: the transposes of
``broadcast_in_dim`` and ``pad`` (shapes.py) sum cotangents with ``reduce_sum``, and the
reductions' rules (reductions.py, where their JVP, transpose and batching rules and the
public functions live) broadcast and reshape with shapes.py's primitives.  Declaring the
primitives here breaks what would otherwise be a two-way import between those modules.
"""
from __future__ import annotations

from pyjax._src import core, dtypes
from pyjax._src.avals import ShapedArray


# --- shared checks ----------------------------------------------------------------------
def _is_number(d):
  return dtypes.is_int(d) or dtypes.is_float(d) or dtypes.is_complex(d)


def _check_number(name, d):
  if not _is_number(d):
    raise TypeError(f"{name} does not accept dtype {d.name}. Accepted dtypes are subtypes "
                    "of number.")


def _check_axes(aval, axes):
  if len(set(axes)) != len(axes):
    raise ValueError(f"duplicate value in 'axes' of reduction: {axes}")
  nd = len(aval.shape)
  if not all(0 <= a < nd for a in axes):
    raise ValueError(f"reduction axes {axes} contains out-of-bounds indices for "
                     f"{aval}.")


def _reduced_shape(shape, axes):
  return tuple(d for i, d in enumerate(shape) if i not in axes)


# --- arithmetic / order / logical reductions --------------------------------------------
_ALL_AXES = [tuple(range(n)) for n in range(65)]
_NUMBER_DTYPES = frozenset(d for d in dtypes.all_dtypes if _is_number(d))
# the (immutable, shareable) 0-d abstract values of full reductions: [weak_type][dtype]
_SCALAR_AVALS = [{d: ShapedArray((), d, w) for d in _NUMBER_DTYPES} for w in (False, True)]


def _arith_reduction(name, accepts_all=False, with_sharding=False):
  p = core.Primitive(name)
  p.arg_names = ("operand",)

  def abstract(operand, *, axes, out_sharding=None):
    if axes == _ALL_AXES[len(operand.shape)] and operand.dtype in _NUMBER_DTYPES:
      return _SCALAR_AVALS[operand.weak_type][operand.dtype]  # full reduction: the hot path
    _check_axes(operand, axes)
    if not accepts_all:
      _check_number(name, operand.dtype)
    return ShapedArray(_reduced_shape(operand.shape, axes), operand.dtype, operand.weak_type)

  if with_sharding:
    p.def_abstract_eval(abstract)
  else:
    p.def_abstract_eval(lambda operand, *, axes: abstract(operand, axes=axes))
  return p


reduce_sum_p = _arith_reduction("reduce_sum", with_sharding=True)
reduce_prod_p = _arith_reduction("reduce_prod")
reduce_max_p = _arith_reduction("reduce_max", accepts_all=True)
reduce_min_p = _arith_reduction("reduce_min", accepts_all=True)


def _logical_reduction(name):
  p = core.Primitive(name)
  p.arg_names = ("operand",)

  @p.def_abstract_eval
  def abstract(operand, *, axes):
    d = operand.dtype
    if not (d == dtypes.bool_ or dtypes.is_int(d)):
      raise TypeError(f"logical reduction requires operand dtype bool or int, got {d.name}.")
    _check_axes(operand, axes)
    return ShapedArray(_reduced_shape(operand.shape, axes), d, False)
  return p


reduce_and_p = _logical_reduction("reduce_and")
reduce_or_p = _logical_reduction("reduce_or")
reduce_xor_p = _logical_reduction("reduce_xor")
