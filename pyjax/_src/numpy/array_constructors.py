"""``jnp.array`` and ``jnp.asarray``: values from Python and NumPy data, with JAX's dtype
rules (Python scalars are weakly typed; x64 canonicalization; lists promoted as a whole)."""
from __future__ import annotations

import numpy as np

from pyjax._src import core, dtypes
from pyjax._src.avals import ShapedArray
from pyjax._src.lax import elementwise as lax_e
from pyjax._src.out_sharding import choose_device_or_out_sharding, lay_out
from pyjax._src.runtime import devices as _devices
from pyjax._src.runtime.array import ArrayImpl

__all__ = ["array", "asarray"]

_scalar_types = dtypes.python_scalar_types


def _leaves(obj, out):
  if isinstance(obj, (list, tuple)):
    for o in obj:
      _leaves(o, out)
  else:
    out.append(obj)
  return out


def _check_int_range(x, d, numpy_message=False):
  """OverflowError for a Python int outside ``d``'s range: JAX's own message for a lone
  scalar converted to the default integer type, NumPy's for list elements."""
  if dtypes.is_int(d):
    info = np.iinfo(d)
    if not info.min <= x <= info.max:
      if numpy_message:
        raise OverflowError(f"Python integer {x} out of bounds for {d.name}")
      raise OverflowError(f"Python int {x} too large to convert to {d.name}")


def _from_python_scalar(x, dtype):
  t = type(x)
  if dtype is None:
    d = dtypes.python_scalar_dtype(t)
    if t is int:
      _check_int_range(x, d)
    return core.host_constant(ArrayImpl(np.array(x, d), ShapedArray((), d, t is not bool),
                                        _devices.default_device(), False))
  # with a dtype, JAX converts through the dtype's Python type, then NumPy: so a complex
  # into a real dtype is a TypeError, NaN/inf into an integer dtype a ValueError/
  # OverflowError, and an out-of-range int NumPy's OverflowError -- no silent wrapping
  if dtype == dtypes.bool_:
    v = bool(x)
  elif dtypes.is_int(dtype):
    v = int(x)
  elif dtypes.is_complex(dtype):
    v = complex(x)
  else:
    v = float(x)
  with np.errstate(over="ignore"):
    buf = np.array(v, dtype)
  return core.host_constant(ArrayImpl(buf, ShapedArray((), dtype, False),
                                      _devices.default_device(), False))


def array(object, dtype=None, copy=True, order="K", ndmin=0, *, device=None,
          out_sharding=None):
  """jnp.array.  Differs from NumPy like JAX: 64-bit types only with x64, Python scalars
  are weakly typed, object/string dtypes are rejected.  ``out_sharding`` lays the result
  out (see ``pyjax._src.out_sharding``) under a context mesh or a trace; as in JAX 0.10 it
  is checked but not applied eagerly outside a mesh context, nor to a NumPy array taken
  without a copy.  ``copy=True`` of a traced value records a ``copy`` equation, as in
  JAX."""
  sharding = choose_device_or_out_sharding(device, out_sharding, "jnp.array")
  if order is not None and order not in ("K", "C", "A"):
    raise NotImplementedError("Only implemented for order='K'")
  d = dtypes.check_user_dtype(dtype, "array") if dtype is not None else None
  if sharding is not None:
    from pyjax._src.sharding import get_mesh
    if ((not copy and isinstance(object, np.ndarray) and ndmin <= object.ndim
         and (d is None or d == object.dtype))
        or (get_mesh() is None and not isinstance(object, core.Tracer))):
      sharding = None
  out = _array(object, d)
  if copy and out is object and isinstance(out, core.Tracer):
    from pyjax._src.lax.buffers import copy_p
    out = copy_p.bind(out)
  if ndmin > out.ndim:
    from pyjax._src.lax import shapes as lax_s
    out = lax_s.reshape(out, (1,) * (ndmin - out.ndim) + out.shape)
  if device is not None:
    from pyjax._src.api_device import device_put
    out = device_put(out, device)
  return lay_out(out, sharding, "jnp.array")


def _array(obj, d):
  t = type(obj)
  if t is ArrayImpl:
    if d is None or d == obj.dtype:
      return ArrayImpl(obj._data(), ShapedArray(obj.shape, obj.dtype, obj.weak_type if d is None else False),
                       obj._device, obj._committed)
    return lax_e._convert_element_type(obj, d, False)
  if isinstance(obj, core.Tracer):
    return lax_e._convert_element_type(obj, d if d is not None else obj.dtype,
                                       obj.weak_type if d is None else False)
  if isinstance(obj, ArrayImpl):   # a sharded Array: the result keeps its sharding
    return obj.copy() if d is None else lax_e._convert_element_type(obj, d, False)
  if t in _scalar_types:
    return _from_python_scalar(obj, d)
  if dtypes.has_extended_dtype(obj):
    # a typed PRNG key array is already an Array (as in JAX, asarray returns it)
    if d is not None and d != obj.dtype:
      raise TypeError(f"Cannot convert a key array of dtype {obj.dtype} to dtype {d}")
    return obj
  if hasattr(obj, "__jax_array__"):
    return _array(obj.__jax_array__(), d)
  if isinstance(obj, (np.ndarray, np.generic)):
    if not dtypes.is_array_dtype(obj.dtype):   # object, strings, datetime64, '>f4', ...
      raise TypeError("Error interpreting argument to stage as a JAX value. The problematic "
                      f"value is of type {type(obj)} and was passed to stage at position 0.\n")
    nd = d if d is not None else dtypes.canonicalize_dtype(obj.dtype)
    buf = np.array(obj, dtype=nd, copy=True) if obj.dtype != nd else np.array(obj, copy=True)
    return core.host_constant(ArrayImpl(buf, ShapedArray(buf.shape, nd, False),
                                        _devices.default_device(), False))
  if isinstance(obj, (list, tuple)):
    leaves = _leaves(obj, [])
    if any(isinstance(l, core.Tracer) or type(l) is ArrayImpl for l in leaves):
      return _stack_nested(obj, d)
    if d is None:
      if leaves:
        for l in leaves:
          if not (type(l) in _scalar_types or isinstance(l, (np.ndarray, np.generic, bool, int, float, complex))):
            if hasattr(l, "__jax_array__"):
              return _stack_nested(obj, d)
            raise TypeError(f"Unexpected input type for array: {type(l)}")
        d = dtypes.result_type(*[l if type(l) in _scalar_types else np.asarray(l).dtype for l in leaves])
        if all(type(l) in _scalar_types for l in leaves):
          for l in leaves:
            if type(l) is int:
              _check_int_range(l, d, numpy_message=True)
      else:
        d = dtypes.default_float_dtype()
    try:
      buf = np.array(obj, dtype=d) if all(type(l) is not int for l in leaves) or not dtypes.is_int(d) \
          else np.array(obj, dtype=object).astype(d) if leaves else np.array(obj, dtype=d)
    except TypeError:
      np.array(obj, dtype=np.float64)   # ragged nesting: NumPy's ValueError, as JAX raises
      raise
    return ArrayImpl(buf, ShapedArray(buf.shape, d, False), _devices.default_device(), False)
  if isinstance(obj, (bool, int, float, complex)):
    return _from_python_scalar(bool(obj) if isinstance(obj, bool) else
                               complex(obj) if isinstance(obj, complex) else
                               float(obj) if isinstance(obj, float) else int(obj), d)
  if obj is None:
    raise ValueError("None is not a valid value for jnp.array")
  if isinstance(obj, str):
    raise TypeError(f"Unexpected input type for array: {type(obj)}")
  # buffer protocol / __array__ objects
  try:
    np_obj = np.asarray(obj)
  except Exception:
    raise TypeError(f"Unexpected input type for array: {type(obj)}") from None
  if np_obj.dtype == object:
    raise TypeError(f"Unexpected input type for array: {type(obj)}")
  return _array(np_obj, d)


def _stack_nested(obj, d):
  from pyjax._src.lax import shapes as lax_s
  if not isinstance(obj, (list, tuple)):
    x = asarray(obj)
    return x
  elems = [_stack_nested(o, None) for o in obj]
  if not elems:
    return _array(np.zeros((0,), d or dtypes.default_float_dtype()), d)
  from pyjax._src.numpy.util import promote_dtypes
  elems = promote_dtypes(*elems)
  shape0 = elems[0].shape
  for e in elems:
    if e.shape != shape0:
      raise ValueError("setting an array element with a sequence. The requested array has an "
                       "inhomogeneous shape.")
  expanded = [lax_s.broadcast_in_dim(e, (1,) + tuple(shape0), tuple(range(1, len(shape0) + 1))) for e in elems]
  out = lax_s.concatenate(expanded, 0)
  if d is not None:
    out = lax_e._convert_element_type(out, d, False)
  elif out.weak_type:
    out = lax_e._convert_element_type(out, out.dtype, False)
  return out


def asarray(a, dtype=None, order=None, *, copy=None, device=None, out_sharding=None):
  """jnp.asarray: like jnp.array without forcing a copy.  ``out_sharding`` as in
  ``array``."""
  if out_sharding is not None:
    return array(a, dtype=dtype, copy=bool(copy), order=order or "K", device=device,
                 out_sharding=out_sharding)
  if type(a) is ArrayImpl and (dtype is None or dtypes.to_numpy_dtype(dtype) == a.dtype) and device is None:
    return a
  if isinstance(a, ArrayImpl) and dtype is None and device is None and not copy:
    return a   # a sharded Array keeps its sharding
  if isinstance(a, core.Tracer) and dtype is None:
    return a
  return array(a, dtype=dtype, copy=bool(copy), order=order or "K", device=device)
