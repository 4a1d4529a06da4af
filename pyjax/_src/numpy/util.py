"""Argument checking and NumPy-style promotion for jax.numpy functions."""
from __future__ import annotations

import numpy as np

from pyjax._src import core, dtypes
from pyjax._src.config import config
from pyjax._src.lax import elementwise as lax_e
from pyjax._src.runtime.array import ArrayImpl, Array

_scalar_types = dtypes.python_scalar_types


def is_arraylike(x):
  t = type(x)
  return (t is ArrayImpl or t in _scalar_types or isinstance(x, (Array, np.ndarray, np.generic))
          or isinstance(x, (bool, int, float, complex)) or hasattr(x, "__jax_array__"))


def check_arraylike(fun_name, *args, emit_warning=False, stacklevel=3):
  """JAX's TypeError for lists, tuples and other non-array arguments."""
  for pos, x in enumerate(args):
    t = type(x)
    if t is ArrayImpl or t in _scalar_types:
      continue
    if not is_arraylike(x):
      raise TypeError(f"{fun_name} requires ndarray or scalar arguments, got {t} at "
                      f"position {pos}.")


def _aval(x):
  return x.aval if type(x) is ArrayImpl else core.get_aval(x)


def promote_dtypes(*args):
  """Cast all arguments to their common (JAX-promoted) dtype, keeping weak types."""
  if len(args) < 2:
    return [asarray_weak(x) for x in args]
  avals = [_aval(x) for x in args]
  to_dtype, weak = dtypes.lattice_result_type(*[(a.dtype, a.weak_type) for a in avals])
  return [_cast(x, a, to_dtype, weak) for x, a in zip(args, avals)]


def _cast(x, aval, to_dtype, weak):
  if aval.dtype == to_dtype and aval.weak_type == weak and type(x) not in _scalar_types \
      and not isinstance(x, (np.ndarray, np.generic)):
    return x
  return lax_e._convert_element_type(x, to_dtype, weak)


def asarray_weak(x):
  """Python scalars and NumPy values become arrays (scalars weakly typed)."""
  t = type(x)
  if t is ArrayImpl or isinstance(x, core.Tracer):
    return x
  aval = core.get_aval(x)
  return lax_e._convert_element_type(x, aval.dtype, aval.weak_type)


def promote_dtypes_inexact(*args):
  """Promote, then move integer/bool results to the default float (like jnp.sin)."""
  avals = [_aval(x) for x in args]
  to_dtype, weak = dtypes.lattice_result_type(*[(a.dtype, a.weak_type) for a in avals])
  to_dtype = dtypes.canonicalize_dtype(dtypes.to_inexact_dtype(to_dtype))
  return [_cast(x, a, to_dtype, weak) for x, a in zip(args, avals)]


def promote_dtypes_numeric(*args):
  avals = [_aval(x) for x in args]
  to_dtype, weak = dtypes.lattice_result_type(*[(a.dtype, a.weak_type) for a in avals])
  if to_dtype == dtypes.bool_:
    to_dtype = dtypes.default_int_dtype()
  return [_cast(x, a, to_dtype, weak) for x, a in zip(args, avals)]


def promote_dtypes_complex(*args):
  avals = [_aval(x) for x in args]
  to_dtype, weak = dtypes.lattice_result_type(*[(a.dtype, a.weak_type) for a in avals])
  to_dtype = dtypes.canonicalize_dtype(dtypes.to_complex_dtype(dtypes.to_inexact_dtype(to_dtype)))
  return [_cast(x, a, to_dtype, weak) for x, a in zip(args, avals)]


def promote_shapes(fun_name, *args):
  """NumPy rank promotion: prepend size-1 dimensions so all non-scalars have equal rank."""
  if len(args) < 2:
    return list(args)
  shapes = [_aval(x).shape for x in args]
  nd = max(len(s) for s in shapes)
  if all(len(s) == nd or len(s) == 0 for s in shapes):
    # lax broadcasts rank-0 and size-1 dims itself; still check compatibility
    _check_broadcastable(fun_name, shapes)
    return list(args)
  mode = config.jax_numpy_rank_promotion
  if mode != "allow":
    msg = (f"Operands could not be broadcast together for {fun_name} on shapes "
           f"{' '.join(str(s) for s in shapes)} and with the config option "
           f"jax_numpy_rank_promotion='{mode}'. For more information, see "
           "https://docs.jax.dev/en/latest/rank_promotion_warning.html.")
    if mode == "raise":
      raise ValueError(msg)
    import warnings
    warnings.warn(msg)
  _check_broadcastable(fun_name, shapes)
  from pyjax._src.lax import shapes as lax_s
  out = []
  for x, s in zip(args, shapes):
    if len(s) == nd or len(s) == 0:
      out.append(x)
    else:
      out.append(lax_s.broadcast_in_dim(x, (1,) * (nd - len(s)) + tuple(s),
                                        tuple(range(nd - len(s), nd))))
  return out


def _check_broadcastable(fun_name, shapes):
  try:
    np.broadcast_shapes(*shapes)
  except ValueError:
    raise ValueError(f"Incompatible shapes for broadcasting: shapes={[tuple(s) for s in shapes]}") from None


def promote_args(fun_name, *args):
  """check_arraylike + promote_dtypes + promote_shapes, with a fast path for two arrays."""
  if len(args) == 2:
    x, y = args
    if type(x) is ArrayImpl and type(y) is ArrayImpl:
      ax, ay = x.aval, y.aval
      if ax.dtype == ay.dtype and ax.weak_type == ay.weak_type and (
          ax.shape == ay.shape or not ay.shape or not ax.shape):
        return args
  check_arraylike(fun_name, *args)
  return promote_shapes(fun_name, *promote_dtypes(*args))


def promote_args_inexact(fun_name, *args):
  check_arraylike(fun_name, *args)
  return promote_shapes(fun_name, *promote_dtypes_inexact(*args))


def promote_args_numeric(fun_name, *args):
  check_arraylike(fun_name, *args)
  return promote_shapes(fun_name, *promote_dtypes_numeric(*args))


def canonicalize_axis(axis, ndim):
  import operator
  try:
    axis = operator.index(axis)
  except TypeError:
    raise TypeError(f"axis must be an integer, got {axis!r}") from None
  if not -ndim <= axis < max(ndim, 1) or (ndim == 0 and axis not in (0, -1)):
    from numpy.exceptions import AxisError
    raise AxisError(axis, ndim) if ndim else AxisError(f"axis {axis} is out of bounds for array of dimension 0")
  return axis + ndim if axis < 0 else axis
