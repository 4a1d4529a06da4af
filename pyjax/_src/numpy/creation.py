"""Array creation: zeros/ones/full/empty (and their ``_like`` forms), arange, linspace,
logspace, geomspace, eye, identity, tri, tril, triu, diag, diagflat, meshgrid,
fromfunction, frombuffer, fromstring, copy, array_equal, array_equiv.

Everything is built from lax primitives (``broadcast_in_dim`` of a scalar, ``iota``,
comparisons and ``select_n``), so the functions trace under jit/vmap as JAX's do; sizes
and shapes must be concrete, with JAX's errors when they are not.
"""
from __future__ import annotations

import operator
import warnings

import numpy as np

from pyjax._src import core, dtypes
from pyjax._src.avals import ShapedArray
from pyjax._src.lax import elementwise as lax_e
from pyjax._src.lax import utils as lax_utils
from pyjax._src.numpy import ufuncs
from pyjax._src.numpy.util import check_arraylike, canonicalize_axis
from pyjax._src.out_sharding import choose_device_or_out_sharding, lay_out
from pyjax._src.runtime import devices as _devices
from pyjax._src.runtime.array import ArrayImpl
from pyjax._src.numpy.util import library_function as _library_function

from pyjax import lax  # the public lax namespace (every primitive family re-exported)

__all__ = ["zeros", "ones", "full", "empty", "zeros_like", "ones_like", "full_like",
           "empty_like", "arange", "linspace", "logspace", "geomspace", "eye", "identity",
           "tri", "tril", "triu", "diag", "diagflat", "meshgrid", "fromfunction",
           "frombuffer", "fromstring", "copy", "array_equal", "array_equiv"]

_scalar_types = dtypes.python_scalar_types


# --- helpers shared with manipulation.py ------------------------------------------------
def _is_tracer(x):
  return isinstance(x, core.Tracer)


def _ndim(x):
  """np.ndim without converting tracers or Arrays to NumPy."""
  nd = getattr(x, "ndim", None)
  if isinstance(nd, int) and not isinstance(x, type):
    return nd
  return np.ndim(x)


def _shape(x):
  s = getattr(x, "shape", None)
  if isinstance(s, tuple) and not isinstance(x, type):
    return s
  return np.shape(x)


def canonicalize_shape(shape, context=""):
  """A tuple of Python ints from an int, a 0-d integer array or a sequence (JAX's errors)."""
  if not isinstance(shape, (tuple, list)) and (getattr(shape, "ndim", None) == 0
                                               or (not _is_tracer(shape) and np.ndim(shape) == 0)):
    return lax_utils.canonicalize_shape((shape,), context)
  return lax_utils.canonicalize_shape(shape, context)


def _check_nonnegative(shape, what="broadcast_in_dim"):
  if any(d < 0 for d in shape):
    raise TypeError(f"{what} shape must have every element be nonnegative, got {shape}.")


def _const(value, dtype, weak=False):
  """``value`` (concrete scalar/array) as an Array of ``dtype`` with no equation; tracers
  are converted with ``convert_element_type``.

  Conversion follows JAX's ``lax._convert_element_type``: a Python int goes through NumPy
  (wrapping into integer dtypes; an int too large even for NumPy raises OverflowError); a
  Python float/complex/bool or NumPy scalar converts with NumPy's rules -- so a complex into
  a real dtype is a TypeError -- unless NumPy overflows, the value is a non-finite float
  headed for an integer dtype, or the result is weakly typed: then, like arrays, it
  converts with XLA's semantics (saturating, NaN to 0)."""
  dtype = np.dtype(dtype)
  weak = bool(weak) and dtype != dtypes.bool_
  t = type(value)
  if t is int:
    with warnings.catch_warnings():
      warnings.simplefilter("ignore")
      buf = np.asarray(value).astype(dtype)
    return core.host_constant(ArrayImpl(buf, ShapedArray(buf.shape, dtype, weak),
                                        _devices.default_device(), False))
  if t in _scalar_types or isinstance(value, np.generic):
    nonfinite_to_int = (dtypes.is_int(dtype) and t is not bool
                        and not isinstance(value, (np.bool_, np.integer))
                        and not np.isfinite(value))
    if not weak and not nonfinite_to_int:
      try:
        with warnings.catch_warnings():
          warnings.simplefilter("ignore")
          buf = np.asarray(value, dtype=dtype)
        return core.host_constant(ArrayImpl(buf, ShapedArray(buf.shape, dtype, False),
                                            _devices.default_device(), False))
      except OverflowError:
        pass
  if t is ArrayImpl or isinstance(value, np.ndarray):
    src = value._data() if t is ArrayImpl else value
    if not (dtypes.is_int(dtype) and src.dtype.kind not in "biu"):
      # NumPy's cast is XLA's here (rounding, wrapping, dropping imaginary parts)
      with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        buf = np.asarray(src).astype(dtype)
      return core.folded_host_constant(
          ArrayImpl(buf, ShapedArray(buf.shape, dtype, weak), _devices.default_device(), False),
          (value,))
  if t in _scalar_types or t is ArrayImpl or isinstance(value, (np.ndarray, np.generic)):
    # inexact to integer: convert now with the backend's (XLA's saturating) semantics,
    # eagerly, so a traced program sees a constant rather than a conversion
    from pyjax._src.transfer_guard import constant_folding
    with constant_folding():
      out = lax_e._convert_element_type(value, dtype, weak)
    return core.folded_host_constant(out, (value,))
  return lax_e._convert_element_type(value, dtype, weak)


def _broadcast_scalar(value, shape):
  """A 0-d value broadcast to ``shape`` (``broadcast_in_dim`` as in JAX's ``lax.full``)."""
  if shape == ():
    return value
  _check_nonnegative(shape)
  return lax.broadcast_in_dim(value, tuple(shape), ())


def _full(shape, fill_value, dtype, weak):
  return _broadcast_scalar(_const(fill_value, dtype, weak), shape)


def _user_dtype(dtype, fun_name, default=None):
  if dtype is None:
    return default
  return dtypes.check_user_dtype(dtype, fun_name)


def _check_forgot_shape_tuple(name, shape, dtype):
  if isinstance(dtype, int) and not isinstance(dtype, bool) and isinstance(shape, int):
    raise TypeError(f"Cannot interpret '{dtype}' as a data type.\n\nDid you accidentally write "
                    f"`jax.numpy.{name}({shape}, {dtype})` when you meant "
                    f"`jax.numpy.{name}(({shape}, {dtype}))`, i.e. with a single tuple "
                    "argument for the shape?")


def _device_put(x, device):
  if device is None:
    return x
  from pyjax._src.api_device import device_put
  return device_put(x, device)


def _asarray(x, dtype=None):
  from pyjax._src.numpy.array_constructors import asarray
  return asarray(x, dtype=dtype)


def _value_dtype_weak(x):
  """(canonical dtype, weak_type) of any array-like value."""
  if type(x) in _scalar_types:
    return dtypes.python_scalar_dtype(type(x)), type(x) is not bool
  aval = getattr(x, "aval", None)
  if isinstance(aval, ShapedArray):
    return aval.dtype, aval.weak_type
  d = getattr(x, "dtype", None)
  if d is not None:
    return dtypes.canonicalize_dtype(dtypes.to_numpy_dtype(d)), bool(getattr(x, "weak_type", False))
  a = core.get_aval(x)
  return a.dtype, a.weak_type


# --- zeros / ones / full / empty --------------------------------------------------------
def _filled(name, shape, fill, dtype, device, out_sharding):
  sharding = choose_device_or_out_sharding(device, out_sharding, f"jnp.{name}")
  _check_forgot_shape_tuple(name, shape, dtype)
  d = dtypes.check_user_dtype(float if dtype is None else dtype, name)
  shape = canonicalize_shape(shape)
  return lay_out(_device_put(_full(shape, fill, d, False), device), sharding, f"jnp.{name}")


# out_sharding= (all the constructors below): a NamedSharding, or a PartitionSpec under a
# context mesh; the result is computed whole and split over the devices (see
# ``pyjax._src.out_sharding``: JAX's checks and errors)
def zeros(shape, dtype=None, *, device=None, out_sharding=None):
  """An array of zeros (default dtype float32, or float64 with x64)."""
  return _filled("zeros", shape, 0, dtype, device, out_sharding)


def ones(shape, dtype=None, *, device=None, out_sharding=None):
  """An array of ones (default dtype float32, or float64 with x64)."""
  return _filled("ones", shape, 1, dtype, device, out_sharding)


def empty(shape, dtype=None, *, device=None, out_sharding=None):
  """Like JAX, an array of zeros: XLA (and pyjax) arrays are never uninitialized."""
  return _filled("empty", shape, 0, dtype, device, out_sharding)


def full(shape, fill_value, dtype=None, *, device=None, out_sharding=None):
  """An array of ``shape`` filled with ``fill_value`` (a scalar, or an array broadcast to
  ``shape``).  Without ``dtype`` the result takes the fill value's dtype and weak type."""
  sharding = choose_device_or_out_sharding(device, out_sharding, "full")
  d = _user_dtype(dtype, "full")
  check_arraylike("full", fill_value)
  if _ndim(fill_value) == 0:
    shape = canonicalize_shape(shape)
    fd, fw = _value_dtype_weak(fill_value)
    out = _full(shape, fill_value, fd if d is None else d, fw and d is None)
  else:
    from pyjax._src.numpy.manipulation import broadcast_to
    out = broadcast_to(_asarray(fill_value, dtype=d), shape)
  return lay_out(_device_put(out, device), sharding, "full")


def _like_checks(name, a, dtype, shape):
  if not (hasattr(a, "dtype") and hasattr(a, "shape")):
    check_arraylike(name, a)
  d = _user_dtype(dtype, name)
  if shape is None:
    shape = tuple(_shape(a))
  else:
    shape = canonicalize_shape(shape)
  ad, aw = _value_dtype_weak(a)
  if d is None:
    return shape, ad, aw
  return shape, d, False


def _full_like(name, a, fill_value, dtype, shape, device, out_sharding=None):
  sharding = choose_device_or_out_sharding(device, out_sharding, f"jnp.{name}")
  same_shape = shape is None
  shape, d, weak = _like_checks(name, a, dtype, shape)
  out = lay_out(_device_put(_full(shape, fill_value, d, weak), device), sharding,
                f"jnp.{name}")
  if same_shape and sharding is None and type(a) is not ArrayImpl and isinstance(a, ArrayImpl):
    # a sharded Array: the result takes its sharding, as JAX's full_like
    from pyjax._src.jit_sharding import _lay_out
    out = _lay_out(out, a.sharding)
  return out


def zeros_like(a, dtype=None, shape=None, *, device=None, out_sharding=None):
  """Zeros with ``a``'s shape and dtype (and weak type, when ``dtype`` is not given)."""
  return _full_like("zeros_like", a, 0, dtype, shape, device, out_sharding)


def ones_like(a, dtype=None, shape=None, *, device=None, out_sharding=None):
  """Ones with ``a``'s shape and dtype (and weak type, when ``dtype`` is not given)."""
  return _full_like("ones_like", a, 1, dtype, shape, device, out_sharding)


def empty_like(prototype, dtype=None, shape=None, *, device=None):
  """Like JAX: zeros with the prototype's shape and dtype."""
  return _full_like("empty_like", prototype, 0, dtype, shape, device)


def full_like(a, fill_value, dtype=None, shape=None, *, device=None, out_sharding=None):
  """``fill_value`` (scalar, or array broadcast to the shape) with ``a``'s shape/dtype."""
  if not (hasattr(a, "dtype") and hasattr(a, "shape")):
    check_arraylike("full_like", a, fill_value)
  else:
    check_arraylike("full_like", 0, fill_value)
  if _ndim(fill_value) == 0:
    return _full_like("full_like", a, fill_value, dtype, shape, device, out_sharding)
  sharding = choose_device_or_out_sharding(device, out_sharding, "jnp.full_like")
  shape, d, _ = _like_checks("full_like", a, dtype, shape)
  from pyjax._src.numpy.manipulation import broadcast_to
  return lay_out(_device_put(broadcast_to(_asarray(fill_value, dtype=d), shape), device),
                 sharding, "jnp.full_like")


# --- ranges -----------------------------------------------------------------------------
def _check_arraylike_or_none(fun_name, *args):
  from pyjax._src.numpy.util import is_arraylike
  for pos, x in enumerate(args):
    if x is not None and not is_arraylike(x):
      raise TypeError(f"{fun_name} requires ndarray, scalar, or None arguments, got "
                      f"{type(x)} at position {pos}.")


def _concrete_scalar(x):
  """A concrete arange bound as a NumPy scalar (Python scalars stay Python scalars)."""
  if x is None or type(x) in _scalar_types:
    return x
  if type(x) is ArrayImpl:
    return x._data()[()] if x.ndim == 0 else x._data()
  return x


def arange(start, stop=None, step=None, dtype=None, *, device=None, out_sharding=None):
  """Evenly spaced values in ``[start, stop)``.  Bounds must be concrete (a traced bound
  raises ConcretizationTypeError, as in JAX).  dtype rules follow JAX: the promoted dtype
  of the bounds (``arange(5)`` is int32, ``arange(5.)`` float32), never weakly typed."""
  sharding = choose_device_or_out_sharding(device, out_sharding, "jnp.arange")
  d = _user_dtype(dtype, "arange")
  _check_arraylike_or_none("arange", start, stop, step)
  if start is None:
    raise TypeError("must be real number, not NoneType")
  start_name = "stop" if stop is None and step is None else "start"
  start = core.concrete_or_error(None, start, f"It arose in the jnp.arange argument '{start_name}'")
  stop = core.concrete_or_error(None, stop, "It arose in the jnp.arange argument 'stop'")
  step = core.concrete_or_error(None, step, "It arose in the jnp.arange argument 'step'")
  for name, val in ((start_name, start), ("stop", stop), ("step", step)):
    if val is not None and _ndim(val) != 0:
      raise ValueError(f"jax.numpy.arange: arguments must be scalars; got {name}={val}")
  if d is None:
    d = dtypes.result_type(*(v for v in (start, stop, step) if v is not None))
  if any(v is not None and _is_complex_value(v) for v in (start, stop, step)):
    raise ValueError("Passing complex start/stop/step to jnp.arange is no longer supported "
                     "starting in JAX v0.10.0.")
  start, stop, step = map(_concrete_scalar, (start, stop, step))
  if stop is None:
    start, stop = 0, start
  if step is not None:
    work = dtypes.float32 if (dtypes.is_float(d) and d.itemsize < 4) else d
    size = max(0, int(np.ceil((stop - start) / step)))
    seq = lax.broadcasted_iota(work, (size,), 0)
    out = lax_e.add(_const(start, work), lax_e.mul(_const(step, work), seq))
    out = lax_e._convert_element_type(out, d, False)
  elif start == 0:
    size = max(0, int(np.ceil(stop)))
    out = lax.broadcasted_iota(d, (size,), 0)
  else:
    size = max(0, int(np.ceil(stop - start)))
    out = lax_e.add(_const(start, d), lax.broadcasted_iota(d, (size,), 0))
  return lay_out(_device_put(out, device), sharding, "jnp.arange")


def _is_complex_value(v):
  if type(v) is complex:
    return True
  dt = getattr(v, "dtype", None)
  return dt is not None and dtypes.is_complex(np.dtype(dt))


def _static_int(x, context):
  return core.concrete_or_error(operator.index, x, context)


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *,
             device=None):
  """``num`` evenly spaced samples from ``start`` to ``stop`` (arrays broadcast; samples
  run along ``axis``).  Integer dtypes floor the float samples, as JAX does."""
  num = _static_int(num, "'num' argument of jnp.linspace")
  axis = _static_int(axis, "'axis' argument of jnp.linspace")
  out = _linspace(start, stop, num, endpoint, retstep, dtype, axis)
  if device is not None:
    out = tuple(_device_put(o, device) for o in out) if retstep else _device_put(out, device)
  return out


def _linspace(start, stop, num, endpoint, retstep, dtype, axis):
  if num < 0:
    raise ValueError(f"Number of samples, {num}, must be non-negative.")
  check_arraylike("linspace", start, stop)
  start, stop = _asarray(start), _asarray(stop)
  if dtype is None:
    d = dtypes.to_inexact_dtype(dtypes.result_type(start, stop))
  else:
    d = dtypes.check_user_dtype(dtype, "linspace")
  comp = dtypes.canonicalize_dtype(dtypes.to_inexact_dtype(d))
  start = _const(start, comp)
  stop = _const(stop, comp)
  from pyjax._src.numpy.manipulation import broadcast_to, broadcast_shapes
  bshape = list(broadcast_shapes(start.shape, stop.shape))
  start_b = broadcast_to(start, tuple(bshape))
  stop_b = broadcast_to(stop, tuple(bshape))
  orig_axis = axis
  if axis < 0:
    axis = len(bshape) + axis + 1
  if not 0 <= axis <= len(bshape):
    from numpy.exceptions import AxisError
    raise AxisError(orig_axis, len(bshape) + 1)
  shape1 = bshape[:axis] + [1] + bshape[axis:]
  div = (num - 1) if endpoint else num
  if num > 1:
    delta = lax_e.div(lax_e.sub(stop_b, start_b), _const(div, comp))
    real = dtypes.finfo(comp).dtype if dtypes.is_complex(comp) else comp
    iota_shape = [1] * len(shape1)
    iota_shape[axis] = div
    frac = lax_e.div(lax.broadcasted_iota(real, tuple(iota_shape), axis), _const(div, real))
    frac = lax_e._convert_element_type(frac, comp, False)
    lo = lax.reshape(start_b, tuple(shape1))
    hi = lax.reshape(stop_b, tuple(shape1))
    out = ufuncs.add(ufuncs.multiply(lo, ufuncs.subtract(1, frac)), ufuncs.multiply(hi, frac))
    if endpoint:
      out = lax.concatenate([out, lax.reshape(stop_b, tuple(shape1))], axis)
  elif num == 1:
    delta = _asarray(np.nan, comp) if endpoint else lax_e.sub(stop_b, start_b)
    delta = lax_e._convert_element_type(delta, comp, False)
    out = lax.reshape(start_b, tuple(shape1))
  else:
    delta = _const(np.nan, comp)
    out = zeros(tuple(bshape[:axis] + [0] + bshape[axis:]), d)
  if dtypes.is_int(d) and not dtypes.is_int(out.dtype):
    out = lax_e.floor(out)
  out = lax_e._convert_element_type(out, d, False)
  return (out, delta) if retstep else out


def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
  """``base ** linspace(start, stop, num)``."""
  num = _static_int(num, "'num' argument of jnp.logspace")
  axis = _static_int(axis, "'axis' argument of jnp.logspace")
  if dtype is None:
    d = dtypes.to_inexact_dtype(dtypes.result_type(start, stop))
  else:
    d = dtypes.check_user_dtype(dtype, "logspace")
  comp = dtypes.canonicalize_dtype(dtypes.to_inexact_dtype(d))
  check_arraylike("logspace", start, stop)
  start = _const(_asarray(start), comp)
  stop = _const(_asarray(stop), comp)
  lin = _linspace(start, stop, num, endpoint, False, None, axis)
  return lax_e._convert_element_type(ufuncs.power(base, lin), d, False)


def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
  """Samples evenly spaced on a log scale from ``start`` to ``stop`` (same sign)."""
  num = _static_int(num, "'num' argument of jnp.geomspace")
  axis = _static_int(axis, "'axis' argument of jnp.geomspace")
  if dtype is None:
    d = dtypes.to_inexact_dtype(dtypes.result_type(start, stop))
  else:
    d = dtypes.check_user_dtype(dtype, "geomspace")
  comp = dtypes.canonicalize_dtype(dtypes.to_inexact_dtype(d))
  check_arraylike("geomspace", start, stop)
  start = _const(_asarray(start), comp)
  stop = _const(_asarray(stop), comp)
  sign = ufuncs.sign(start)
  res = ufuncs.multiply(sign, logspace(ufuncs.log10(ufuncs.true_divide(start, sign)),
                                       ufuncs.log10(ufuncs.true_divide(stop, sign)),
                                       num, endpoint=endpoint, base=10.0, dtype=comp, axis=0))
  axis = canonicalize_axis(axis, res.ndim)
  if axis != 0:
    res = lax.transpose(res, (*range(1, axis + 1), 0, *range(axis + 1, res.ndim)))
  return lax_e._convert_element_type(res, d, False)


# --- matrices ---------------------------------------------------------------------------
def _offset_scalar(k):
  """A diagonal offset: a Python int, or an integer 0-d array (possibly traced)."""
  if type(k) is int or type(k) is bool or isinstance(k, np.integer):
    return int(k)
  if _ndim(k) != 0 or not (dtypes.is_int(_value_dtype_weak(k)[0])
                           or _value_dtype_weak(k)[0] == dtypes.bool_):
    raise ValueError(f"k must be a scalar integer; got {k}")
  if type(k) is ArrayImpl or isinstance(k, np.ndarray):
    return int(k)
  return k


def _diag_mask(shape, k, compare):
  """``compare(row + k, col)`` on iotas of ``shape`` (2-D)."""
  rows = lax.broadcasted_iota(dtypes.int32, shape, 0)
  cols = lax.broadcasted_iota(dtypes.int32, shape, 1)
  if type(k) is int:
    koff = _const(k, dtypes.int32)
  else:
    koff = lax_e._convert_element_type(k, dtypes.int32, False)
  return compare(lax_e.add(rows, koff), cols)


def eye(N, M=None, k=0, dtype=None, *, device=None):
  """The N x M matrix with ones on the ``k``-th diagonal (``k`` may be traced)."""
  d = dtypes.check_user_dtype(float if dtype is None else dtype, "eye")
  return _device_put(_eye(N, M, k, d), device)


def _eye(N, M, k, d):
  n = canonicalize_shape(N, "argument of 'N' jnp.eye().")[0]
  m = n if M is None else canonicalize_shape(M, "argument 'M' of jnp.eye().")[0]
  if n < 0 or m < 0:
    raise ValueError(f"negative dimensions are not allowed, got {N} and {M}")
  k = _offset_scalar(k)
  mask = _diag_mask((n, m), k, lax_e.eq)
  return lax_e._convert_element_type(mask, d, False)


def identity(n, dtype=None):
  """The n x n identity matrix."""
  d = dtypes.check_user_dtype(float if dtype is None else dtype, "identity")
  return _eye(n, None, 0, d)


def tri(N, M=None, k=0, dtype=None):
  """Ones at and below the ``k``-th diagonal of an N x M matrix.  As in JAX, the default
  dtype is float32 even with x64 enabled."""
  d = dtypes.check_user_dtype(dtypes.float32 if dtype is None else dtype, "tri")
  M = N if M is None else M
  n, m = canonicalize_shape((N, M))
  k = _static_int(k, "'k' argument of jnp.tri")
  _check_nonnegative((n, m), "iota")
  return lax_e._convert_element_type(_tri_mask((n, m), k), d, False)


def _tri_mask(shape, k):
  return _diag_mask(shape, k, lax_e.ge)


def _tril_triu(name, m, k, lower):
  check_arraylike(name, m)
  m = _asarray(m)
  k = _static_int(k, f"'k' argument of jnp.{name}")
  if m.ndim < 2:
    raise ValueError(f"Argument to jax.numpy.{name} must be at least 2D")
  shape = m.shape
  mask = _tri_mask(shape[-2:], k if lower else k - 1)
  if len(shape) > 2:
    mask = lax.broadcast_in_dim(mask, shape, (len(shape) - 2, len(shape) - 1))
  z = zeros_like(m)
  return lax_e.select_n(mask, z, m) if lower else lax_e.select_n(mask, m, z)


@_library_function(jit=('tril', ('k',)))
def tril(m, k=0):
  """Zero the elements above the ``k``-th diagonal of the last two axes."""
  return _tril_triu("tril", m, k, True)


@_library_function(jit=('triu', ('k',)))
def triu(m, k=0):
  """Zero the elements below the ``k``-th diagonal of the last two axes."""
  return _tril_triu("triu", m, k, False)


def _diagonal_2d(v, k):
  """The ``k``-th diagonal of a 2-D array via slice -> reshape -> strided slice."""
  r, c = v.shape
  r0, c0 = max(0, -k), max(0, k)
  length = max(0, min(r - r0, c - c0))
  sub = lax.slice(v, (min(r0, r), min(c0, c)), (min(r0, r) + length, min(c0, c) + length))
  flat = lax.reshape(sub, (length * length,))
  if length == 0:
    return flat
  return lax.slice(flat, (0,), (length * length,), (length + 1,))


def diag(v, k=0):
  """For 1-D ``v``, a 2-D array with ``v`` on the ``k``-th diagonal; for 2-D ``v``, its
  ``k``-th diagonal."""
  check_arraylike("diag", v)
  v = _asarray(v)
  k = operator.index(k)
  shape = v.shape
  if len(shape) == 1:
    n = shape[0] + abs(k)
    zero = _const(0, v.dtype, v.weak_type)
    vp = lax.pad(v, zero, ((max(0, -k), max(0, k), 0),))
    mask = _diag_mask((n, n), k, lax_e.eq)
    return lax_e.select_n(mask, _broadcast_scalar(zero, (n, n)),
                          lax.broadcast_in_dim(vp, (n, n), (0,)))
  if len(shape) == 2:
    return _diagonal_2d(v, k)
  raise ValueError("diag input must be 1d or 2d")


def diagflat(v, k=0):
  """A 2-D array with the flattened input on the ``k``-th diagonal (never weakly typed,
  like JAX)."""
  check_arraylike("diagflat", v)
  v = _asarray(v)
  flat = lax.reshape(v, (v.size,))
  out = diag(flat, k)
  return lax_e._convert_element_type(out, out.dtype, False)


def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
  """Coordinate grids from 1-D arrays (``indexing`` 'xy' or 'ij'); weak types are kept."""
  check_arraylike("meshgrid", *xi)
  if not copy:
    raise ValueError("jax.numpy.meshgrid only supports copy=True")
  if indexing not in ("xy", "ij"):
    raise ValueError(f"Valid values for indexing are 'xy' and 'ij', got {indexing}")
  args = [_asarray(x) for x in xi]
  if any(a.ndim != 1 for a in args):
    raise ValueError("Arguments to jax.numpy.meshgrid must be 1D, got shapes "
                     f"{[a.shape for a in args]}")
  n = len(args)
  dims = list(range(n))
  if indexing == "xy" and n >= 2:
    dims[0], dims[1] = 1, 0
  out_shape = [1] * n
  for a, dim in zip(args, dims):
    out_shape[dim] = a.shape[0]
  outs = []
  for a, dim in zip(args, dims):
    if sparse:
      s = [1] * n
      s[dim] = a.shape[0]
      outs.append(lax.reshape(a, tuple(s)))
    else:
      outs.append(lax.broadcast_in_dim(a, tuple(out_shape), (dim,)))
  return outs


def fromfunction(function, shape, *, dtype=float, **kwargs):
  """``function(*index_grids, **kwargs)`` with one ``dtype`` index grid per axis.

  Differs from JAX: JAX vmaps ``function`` over every axis (so it sees scalars); pyjax
  calls it once on broadcast index arrays, as NumPy does.  The two agree for functions
  built from elementwise operations."""
  shape = canonicalize_shape(shape, "shape argument of jnp.fromfunction()")
  d = dtypes.check_user_dtype(dtype, "fromfunction")
  grids = [lax.broadcasted_iota(d, shape, i) for i in range(len(shape))]
  return function(*grids, **kwargs)


def frombuffer(buffer, dtype=float, count=-1, offset=0):
  """An array from the bytes of ``buffer`` (read as NumPy reads it, then canonicalized:
  the default ``float`` reads float64 values)."""
  return _asarray(np.frombuffer(buffer=buffer, dtype=dtype, count=count, offset=offset))


def fromstring(string, dtype=float, count=-1, *, sep):
  """An array from text (``sep`` is required, as in JAX)."""
  with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    return _asarray(np.fromstring(string, dtype=dtype, count=count, sep=sep))


def copy(a, order=None):
  """A copy of ``a`` (keeps its weak type)."""
  check_arraylike("copy", a)
  from pyjax._src.numpy.array_constructors import array
  return array(a, copy=True, order=order if order is not None else "K")


def _jnp_all(x):
  import pyjax.numpy as jnp
  return jnp.all(x)


def array_equal(a1, a2, equal_nan=False):
  """True if both inputs have the same shape and elements (a 0-d bool Array)."""
  a1, a2 = _asarray(a1), _asarray(a2)
  if a1.shape != a2.shape:
    return _const(False, dtypes.bool_)
  k1, k2 = (dtypes.has_extended_dtype(a) for a in (a1, a2))
  if k1 or k2:  # typed PRNG key arrays: equal keys of one implementation
    if not (k1 and k2) or a1.dtype != a2.dtype:
      return _const(False, dtypes.bool_)
    return _jnp_all(a1 == a2)
  eq = ufuncs.equal(a1, a2)
  if equal_nan:
    eq = ufuncs.logical_or(eq, ufuncs.logical_and(ufuncs.isnan(a1), ufuncs.isnan(a2)))
  return _jnp_all(eq)


def array_equiv(a1, a2):
  """True if the inputs broadcast together and are equal everywhere."""
  a1, a2 = _asarray(a1), _asarray(a2)
  try:
    eq = ufuncs.equal(a1, a2)
  except ValueError:
    return _const(False, dtypes.bool_)
  return _jnp_all(eq)
