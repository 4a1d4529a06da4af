"""Miscellaneous jax.numpy functions: differences and integrals (diff, ediff1d, gradient,
trapezoid, interp, unwrap), comparisons (isclose, allclose, iscomplex, isreal),
nan_to_num, compress/extract (with ``size=``), packbits/unpackbits, astype, printing
(array_str, array_repr), I/O stand-ins (fromfile, fromiter, from_dlpack, savez), and the
remaining dtype names (int1, int2, uint1, uint2, float6_*) and ComplexWarning.
"""
from __future__ import annotations

import operator

import numpy as np

from pyjax._src import core, dtypes
from pyjax._src.lax import lax_api as lax
from pyjax._src.numpy import manipulation as _manip
from pyjax._src.numpy import reductions as _red
from pyjax._src.numpy import sorting as _sorting
from pyjax._src.numpy import ufuncs as _uf
from pyjax._src.numpy.array_constructors import array as _array, asarray as _asarray
from pyjax._src.numpy.util import (canonicalize_axis, check_arraylike, promote_args,
                                   promote_args_inexact, promote_dtypes, promote_dtypes_inexact)
from pyjax._src.numpy.util import library_function as _library_function

__all__ = ["diff", "ediff1d", "gradient", "trapezoid", "interp", "unwrap", "isclose",
           "allclose", "nan_to_num", "iscomplex", "isreal", "iterable", "compress", "extract",
           "packbits", "unpackbits", "astype", "array_str", "array_repr", "fromfile",
           "fromiter", "from_dlpack", "savez", "ComplexWarning", "int1", "int2", "uint1",
           "uint2", "float6_e2m3fn", "float6_e3m2fn"]


def _arr(name, x):
  check_arraylike(name, x)
  return _red._asarray(name, x)


def _slice_axis(x, start, stop, axis):
  idx = [slice(None)] * x.ndim
  idx[axis] = slice(start, stop)
  return x[tuple(idx)]


# --- differences and integrals -----------------------------------------------------------------
@_library_function(jit=('diff', ('n', 'axis')))
def diff(a, n=1, axis=-1, prepend=None, append=None):
  """``n``-th discrete difference along ``axis`` (``!=`` for booleans), after joining
  ``prepend``/``append``."""
  arr = _arr("diff", a)
  n = core.concrete_or_error(operator.index, n, "'n' argument of jnp.diff")
  axis = core.concrete_or_error(operator.index, axis, "'axis' argument of jnp.diff")
  if n == 0:
    return arr
  if n < 0:
    raise ValueError(f"order must be non-negative but got {n}")
  if arr.ndim == 0:
    raise ValueError(f"diff requires input that is at least one dimensional; got {a}")
  axis = canonicalize_axis(axis, arr.ndim)
  combined = []
  if prepend is not None:
    p = _arr("diff", prepend)
    if p.ndim == 0:
      shape = list(arr.shape)
      shape[axis] = 1
      p = _red._broadcast_to(p, tuple(shape))
    combined.append(p)
  combined.append(arr)
  if append is not None:
    p = _arr("diff", append)
    if p.ndim == 0:
      shape = list(arr.shape)
      shape[axis] = 1
      p = _red._broadcast_to(p, tuple(shape))
    combined.append(p)
  if len(combined) > 1:
    arr = _manip.concatenate(combined, axis)
  op = _uf.not_equal if arr.dtype == dtypes.bool_ else _uf.subtract
  for _ in range(n):
    arr = op(_slice_axis(arr, 1, None, axis), _slice_axis(arr, None, -1, axis))
  return arr


def ediff1d(ary, to_end=None, to_begin=None):
  """Differences of the flattened array, with optional values before and after."""
  arr = _manip.ravel(_arr("ediff1d", ary))
  result = lax.sub(arr[1:], arr[:-1])
  if to_begin is not None:
    tb = lax.convert_element_type(_arr("ediff1d", to_begin), arr.dtype)
    result = _manip.concatenate([_manip.ravel(tb), result])
  if to_end is not None:
    te = lax.convert_element_type(_arr("ediff1d", to_end), arr.dtype)
    result = _manip.concatenate([result, _manip.ravel(te)])
  return result


def gradient(f, *varargs, axis=None, edge_order=None):
  """Numerical gradient: central differences inside, one-sided at the edges; spacing per
  axis as scalars or coordinate arrays.  ``edge_order`` is not supported (as in JAX)."""
  if edge_order is not None:
    raise NotImplementedError("The 'edge_order' argument to jnp.gradient is not supported.")
  check_arraylike("gradient", f, *varargs)
  a, *spacing = promote_dtypes_inexact(*[_red._asarray("gradient", x) for x in (f, *varargs)])

  def along(a, h, ax):
    sl = lambda s, e: _slice_axis(a, s, e, ax)  # noqa: E731
    upper = _uf.subtract(sl(1, 2), sl(0, 1))
    lower = _uf.subtract(sl(-1, None), sl(-2, -1))
    if h.ndim == 0:
      inner = _uf.true_divide(_uf.multiply(_uf.subtract(sl(2, None), sl(None, -2)), 0.5), h)
      lower = _uf.true_divide(lower, h)
      upper = _uf.true_divide(upper, h)
    elif h.ndim == 1:
      if h.shape[0] != a.shape[ax]:
        raise ValueError("Spacing arrays must have the same length as the dimension along "
                         "which the gradient is calculated.")
      hs = [1] * a.ndim
      hs[ax] = h.shape[0]
      h = lax.reshape(h, tuple(hs))
      sx = lambda s, e: _slice_axis(h, s, e, ax)  # noqa: E731
      upper = _uf.true_divide(upper, _uf.subtract(sx(1, 2), sx(0, 1)))
      lower = _uf.true_divide(lower, _uf.subtract(sx(-1, None), sx(-2, -1)))
      dx1 = _uf.subtract(sx(1, -1), sx(0, -2))
      dx2 = _uf.subtract(sx(2, None), sx(1, -1))
      ca = _uf.true_divide(_uf.negative(dx2), _uf.multiply(dx1, _uf.add(dx1, dx2)))
      cb = _uf.true_divide(_uf.subtract(dx2, dx1), _uf.multiply(dx1, dx2))
      cc = _uf.true_divide(dx1, _uf.multiply(dx2, _uf.add(dx1, dx2)))
      inner = _uf.add(_uf.add(_uf.multiply(ca, sl(0, -2)), _uf.multiply(cb, sl(1, -1))),
                      _uf.multiply(cc, sl(2, None)))
    else:
      raise ValueError("Spacing arrays must be 1D arrays or scalars.")
    return _manip.concatenate([upper, inner, lower], axis=ax)

  if axis is None:
    axes = tuple(range(a.ndim))
  else:
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    axes = tuple(canonicalize_axis(i, a.ndim) for i in axes)
  if len(axes) == 0:
    return []
  if min(s for i, s in enumerate(a.shape) if i in axes) < 2:
    raise ValueError("Shape of array too small to calculate a numerical gradient, at least 2 "
                     "elements are required.")
  if len(spacing) == 0:
    dx = [np.array(1.0, a.dtype)] * len(axes)
    dx = [_red._asarray("gradient", d) for d in dx]
  elif len(spacing) == 1:
    dx = list(spacing) * len(axes)
  elif len(spacing) == len(axes):
    dx = list(spacing)
  else:
    raise TypeError(f"Invalid number of spacing arguments {len(spacing)} for axis={axis!r}")
  grads = [along(a, h, ax) for ax, h in zip(axes, dx)]
  return grads[0] if len(axes) == 1 else grads


def trapezoid(y, x=None, dx=1.0, axis=-1):
  """Integral by the trapezoidal rule along ``axis`` (sample points ``x`` or spacing
  ``dx``)."""
  if x is None:
    y = _arr("trapezoid", y)
    y, = promote_dtypes_inexact(y)
    dxa = _asarray(dx)
    if dxa.ndim > 0:
      dxa = lax.expand_dims(dxa, tuple(range(y.ndim - dxa.ndim)))
      dxa = _manip.moveaxis(dxa, axis, -1)
  else:
    check_arraylike("trapezoid", y, x)
    y, x = promote_dtypes_inexact(_red._asarray("trapezoid", y), _red._asarray("trapezoid", x))
    dxa = diff(x) if x.ndim == 1 else _manip.moveaxis(diff(x, axis=axis), axis, -1)
  y = _manip.moveaxis(y, axis, -1)
  if dxa.ndim == 0 or dxa.shape[-1] == 1:
    dred = dxa if dxa.ndim == 0 else dxa[..., 0]
    ends = _uf.multiply(0.5, _uf.add(y[..., 0], y[..., -1]))
    return _uf.multiply(dred, _uf.subtract(_red.sum(y, axis=-1), ends))
  return _uf.multiply(0.5, _red.sum(_uf.multiply(dxa, _uf.add(y[..., 1:], y[..., :-1])),
                                    axis=-1))


def interp(x, xp, fp, left=None, right=None, period=None):
  """Piecewise-linear interpolation of (xp, fp) at ``x``; ``left``/``right`` may be
  'extrapolate'; ``period`` makes the data periodic."""
  check_arraylike("interp", x, xp, fp)
  x, xp, fp = (_red._asarray("interp", v) for v in (x, xp, fp))
  if xp.shape != fp.shape or xp.ndim != 1:
    raise ValueError("xp and fp must be one-dimensional arrays of equal size")
  x, xp = promote_dtypes_inexact(x, xp)
  fp, = promote_dtypes_inexact(fp)
  extrap = {}
  for nm, v in (("left", left), ("right", right)):
    if isinstance(v, str):
      if v != "extrapolate":
        raise ValueError(f"the only valid string value of `{nm}` is 'extrapolate', but got: "
                         f"{v!r}")
      extrap[nm] = True
    else:
      extrap[nm] = False
  if dtypes.is_complex(x.dtype):
    raise ValueError("jnp.interp: complex x values not supported.")
  if period is not None:
    if np.ndim(period) != 0:
      raise ValueError(f"period must be a scalar; got {period}")
    period = _uf.abs(_red._asarray("interp", period))
    x = _uf.remainder(x, period)
    xp = _uf.remainder(xp, period)
    xp, fp = lax.sort_key_val(xp, fp)
    xp = _manip.concatenate([_uf.subtract(xp[-1:], period), xp, _uf.add(xp[:1], period)])
    fp = _manip.concatenate([fp[-1:], fp, fp[:1]])
  i = _manip.clip(_sorting.searchsorted(xp, x, side="right"), 1, xp.shape[0] - 1)
  im1 = _uf.subtract(i, 1)
  df = _uf.subtract(fp[i], fp[im1])
  dx = _uf.subtract(xp[i], xp[im1])
  delta = _uf.subtract(x, xp[im1])
  eps = np.spacing(np.finfo(xp.dtype).eps)
  dx0 = _uf.less_equal(_uf.abs(dx), eps)
  f = _red._where(dx0, fp[im1],
                  _uf.add(fp[im1], _uf.multiply(_uf.true_divide(delta, _red._where(dx0, 1, dx)),
                                                df)))
  if not extrap["left"] and period is None:
    f = _red._where(_uf.less(x, xp[0]), fp[0] if left is None else left, f)
  if not extrap["right"] and period is None:
    f = _red._where(_uf.greater(x, xp[-1]), fp[-1] if right is None else right, f)
  return f


def unwrap(p, discont=None, axis=-1, period=2 * np.pi):
  """Unwrap phase jumps larger than ``discont`` by multiples of ``period`` along
  ``axis``."""
  p = _arr("unwrap", p)
  p, period = promote_dtypes(p, _red._asarray("unwrap", period))
  if dtypes.is_complex(p.dtype):
    raise ValueError("jnp.unwrap does not support complex inputs.")
  if p.shape[axis] == 0:
    return p
  if discont is None:
    discont = _uf.true_divide(period, 2)
  interval = _uf.floor_divide(period, 2) if dtypes.is_int(p.dtype) else \
      _uf.true_divide(period, 2)
  dd = diff(p, axis=axis)
  ddmod = _uf.subtract(_uf.mod(_uf.add(dd, interval), period), interval)
  ddmod = _red._where(_uf.logical_and(_uf.equal(ddmod, _uf.negative(interval)),
                                      _uf.greater(dd, 0)), interval, ddmod)
  ph_correct = _red._where(_uf.less(_uf.abs(dd), discont), 0, _uf.subtract(ddmod, dd))
  ax = canonicalize_axis(axis, p.ndim)
  return _manip.concatenate([
      _slice_axis(p, 0, 1, ax),
      _uf.add(_slice_axis(p, 1, None, ax), _red.cumsum(ph_correct, axis=ax))], axis=ax)


# --- comparisons ------------------------------------------------------------------------------
@_library_function(jit=('isclose', ('equal_nan',)))
def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
  """|a - b| <= atol + rtol |b| elementwise (infinities equal only to themselves); typed
  PRNG key arrays compare for equality, as in JAX."""
  if dtypes.has_extended_dtype(a) or dtypes.has_extended_dtype(b):
    return _uf.equal(a, b)
  a, b = promote_args("isclose", a, b)
  a, b = promote_args_inexact("isclose", a, b)
  dtype = a.dtype
  if dtypes.is_complex(dtype):
    dtype = np.finfo(dtype).dtype
  rtol = lax.convert_element_type(rtol, dtype)
  atol = lax.convert_element_type(atol, dtype)
  both_nan = _uf.logical_and(_uf.isnan(a), _uf.isnan(b))
  in_range = lax.le(lax.abs(lax.sub(a, b)), lax.add(atol, lax.mul(rtol, lax.abs(b))))
  out = _uf.logical_or(_uf.equal(a, b), _uf.logical_and(_uf.isfinite(b), in_range))
  return _uf.logical_or(out, both_nan) if equal_nan else out


@_library_function(jit=('allclose', ('equal_nan',)))
def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
  """True if all elements are ``isclose``."""
  check_arraylike("allclose", a, b)
  return _red.all(isclose(a, b, rtol, atol, equal_nan))


def iscomplex(x):
  """True where the imaginary part is nonzero."""
  i = _uf.imag(x)
  return lax.ne(i, np.array(0, i.dtype))


def isreal(x):
  """True where the imaginary part is zero."""
  i = _uf.imag(x)
  return lax.eq(i, np.array(0, i.dtype))


def iterable(y):
  """Whether ``y`` can be iterated over."""
  try:
    iter(y)
  except TypeError:
    return False
  return True


@_library_function(jit=('nan_to_num', ('copy',)))
def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
  """Replace NaN by ``nan`` and infinities by ``posinf``/``neginf`` (default the largest
  finite values); non-inexact inputs are returned unchanged."""
  x = _arr("nan_to_num", x)
  dtype = x.dtype
  if not dtypes.is_inexact(dtype):
    return x
  if dtypes.is_complex(dtype):
    return lax.complex(nan_to_num(lax.real(x), nan=nan, posinf=posinf, neginf=neginf),
                       nan_to_num(lax.imag(x), nan=nan, posinf=posinf, neginf=neginf))
  info = dtypes.finfo(dtype)
  posinf = info.max if posinf is None else posinf
  neginf = info.min if neginf is None else neginf
  out = _red._where(_uf.isnan(x), _asarray(nan, dtype=dtype), x)
  out = _red._where(_uf.isposinf(out), _asarray(posinf, dtype=dtype), out)
  return _red._where(_uf.isneginf(out), _asarray(neginf, dtype=dtype), out)


# --- selection --------------------------------------------------------------------------------
def compress(condition, a, axis=None, *, size=None, fill_value=0, out=None):
  """Slices of ``a`` along ``axis`` where ``condition`` is true; ``size`` fixes the
  result length (padding with ``fill_value``) so it works under jit."""
  check_arraylike("compress", condition, a, fill_value)
  cond = _red._asarray("compress", condition)
  if cond.dtype != dtypes.bool_:
    cond = lax.ne(cond, np.array(0, cond.dtype))
  arr = _red._asarray("compress", a)
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.compress is not supported.")
  if cond.ndim != 1:
    raise ValueError("condition must be a 1D array")
  if axis is None:
    axis = 0
    arr = _manip.ravel(arr)
  else:
    arr = _manip.moveaxis(arr, axis, 0)
  cond, extra = cond[:arr.shape[0]], cond[arr.shape[0]:]
  arr = arr[:cond.shape[0]]
  if size is None:
    if bool(core.concrete_or_error(np.asarray, extra, "compress").any()):
      raise ValueError("condition contains entries that are out of bounds")
    c = core.concrete_or_error(np.asarray, cond, "The error arose in jnp.compress(). Pass a "
                               "static size= to use it under jit.")
    result = arr[np.nonzero(c)[0].astype(dtypes.default_int_dtype())]
  elif not 0 <= size <= arr.shape[0]:
    raise ValueError("size must be positive and not greater than the size of the array axis;"
                     f" got size={size} for a.shape[axis]={arr.shape[0]}")
  else:
    mask = lax.expand_dims(cond, tuple(range(1, arr.ndim)))
    arr = _red._where(mask, arr, _array(fill_value, dtype=arr.dtype))
    result = arr[_sorting.argsort(cond, stable=True, descending=True)][:size]
  return _manip.moveaxis(result, 0, axis)


def extract(condition, arr, *, size=None, fill_value=0):
  """Elements of the flattened ``arr`` where the flattened ``condition`` is true."""
  check_arraylike("extreact", condition, arr, fill_value)
  return compress(_manip.ravel(condition), _manip.ravel(arr), size=size, fill_value=fill_value)


# --- bits -------------------------------------------------------------------------------------
def packbits(a, axis=None, bitorder="big"):
  """Pack the truthiness of ``a`` into uint8 bytes along ``axis`` (flattened for None)."""
  arr = _arr("packbits", a)
  if not (dtypes.is_int(arr.dtype) or arr.dtype == dtypes.bool_):
    raise TypeError("Expected an input array of integer or boolean data type")
  if bitorder not in ("little", "big"):
    raise ValueError("'order' must be either 'little' or 'big'")
  u8 = np.dtype(np.uint8)
  arr = lax.convert_element_type(lax.ne(arr, np.array(0, arr.dtype)), u8)
  bits = np.arange(8, dtype=np.uint8)
  if bitorder == "big":
    bits = bits[::-1].copy()
  if axis is None:
    arr = _manip.ravel(arr)
    axis = 0
  arr = _manip.swapaxes(arr, axis, -1)
  rem = arr.shape[-1] % 8
  if rem:
    arr = lax.pad(arr, np.uint8(0), (arr.ndim - 1) * [(0, 0, 0)] + [(0, 8 - rem, 0)])
  arr = lax.reshape(arr, arr.shape[:-1] + (arr.shape[-1] // 8, 8))
  shifted = lax.shift_left(arr, _red._broadcast_to(_asarray(bits), arr.shape))
  packed = lax.convert_element_type(_red.sum(shifted, axis=-1), u8)
  return _manip.swapaxes(packed, axis, -1)


def unpackbits(a, axis=None, count=None, bitorder="big"):
  """Unpack uint8 bytes into bits (0/1 uint8) along ``axis``; ``count`` truncates or
  zero-pads the result."""
  arr = _arr("unpackbits", a)
  if arr.dtype != np.dtype(np.uint8):
    raise TypeError("Expected an input array of unsigned byte data type")
  if bitorder not in ("little", "big"):
    raise ValueError("'order' must be either 'little' or 'big'")
  bits = (np.uint8(1) << np.arange(8, dtype=np.uint8)).astype(np.uint8)
  if bitorder == "big":
    bits = bits[::-1].copy()
  if axis is None:
    arr = _manip.ravel(arr)
    axis = 0
  arr = _manip.swapaxes(arr, axis, -1)
  ex = arr[..., None]
  masked = lax.bitwise_and(_red._broadcast_to(ex, ex.shape[:-1] + (8,)),
                           _red._broadcast_to(_asarray(bits), ex.shape[:-1] + (8,)))
  unpacked = lax.convert_element_type(lax.gt(masked, np.uint8(0)), np.uint8)
  unpacked = lax.reshape(unpacked, unpacked.shape[:-2] + (unpacked.shape[-2] * 8,))
  if count is not None:
    if count > unpacked.shape[-1]:
      unpacked = lax.pad(unpacked, np.uint8(0), (unpacked.ndim - 1) * [(0, 0, 0)]
                         + [(0, count - unpacked.shape[-1], 0)])
    else:
      unpacked = unpacked[..., :count]
  return _manip.swapaxes(unpacked, axis, -1)


# --- conversion, printing, I/O ----------------------------------------------------------------
def astype(x, dtype, /, *, copy=False, device=None):
  """``x`` converted to ``dtype`` (None: the default float); complex to bool tests for
  nonzero."""
  x = _arr("astype", x)
  if dtypes.has_extended_dtype(x):   # a typed PRNG key array
    if dtype is not None and dtype == x.dtype:
      return x
    raise ValueError(f"Cannot convert_element_type from {x.dtype} to "
                     f"{dtypes.check_user_dtype(dtype, 'astype') if dtype is not None else dtypes.default_float_dtype()}")
  if dtype is None:
    dtype = dtypes.default_float_dtype()
  else:
    dtype = dtypes.check_user_dtype(dtype, "astype")
  if dtypes.is_complex(x.dtype) and np.dtype(dtype) == dtypes.bool_:
    x = lax.ne(x, np.array(0, x.dtype))
  out = lax._convert_element_type(x, dtype, False)
  if device is not None:
    from pyjax._src.api_device import device_put
    out = device_put(out, device)
  if copy and out is x:
    out = _array(x, copy=True)
  return out


def array_str(a, max_line_width=None, precision=None, suppress_small=None):
  """NumPy's array_str of the array's values."""
  return np.array_str(np.asarray(a), max_line_width, precision, suppress_small)


def array_repr(arr, max_line_width=None, precision=None, suppress_small=None):
  """NumPy's array_repr of the array's values."""
  return np.array_repr(np.asarray(arr), max_line_width, precision, suppress_small)


def fromiter(*args, **kwargs):
  """Not supported (as in JAX): use ``jnp.asarray(np.fromiter(...))``."""
  raise NotImplementedError(
      "jnp.fromiter() is not implemented because it may be non-pure and thus unsafe for use "
      "with JIT and other JAX transformations. Consider using jnp.asarray(np.fromiter(...)) "
      "instead, although care should be taken if np.fromiter is used within a jax "
      "transformations because of its potential side-effect of consuming the iterable "
      "object; for more information see "
      "https://docs.jax.dev/en/latest/notebooks/Common_Gotchas_in_JAX.html#pure-functions")


def fromfile(*args, **kwargs):
  """Not supported (as in JAX): use ``jnp.asarray(np.fromfile(...))``."""
  raise NotImplementedError(
      "jnp.fromfile() is not implemented because it may be non-pure and thus unsafe for use "
      "with JIT and other JAX transformations. Consider using jnp.asarray(np.fromfile(...)) "
      "instead, although care should be taken if np.fromfile is used within a jax "
      "transformations because of its potential side-effect of consuming the file object; "
      "for more information see "
      "https://docs.jax.dev/en/latest/notebooks/Common_Gotchas_in_JAX.html#pure-functions")


def from_dlpack(x, /, *, device=None, copy=None):
  """An array from an object supporting DLPack (copied through NumPy on the CPU
  backend)."""
  buf = np.from_dlpack(x)
  out = _array(buf, copy=True)
  if device is not None:
    from pyjax._src.api_device import device_put
    out = device_put(out, device)
  return out


savez = np.savez
ComplexWarning = np.exceptions.ComplexWarning


def _scalar_types():
  import ml_dtypes
  from pyjax._src.numpy.dtypes_api import _make_scalar_type
  out = {}
  for n in ("int1", "int2", "uint1", "uint2", "float6_e2m3fn", "float6_e3m2fn"):
    t = getattr(ml_dtypes, n, None)
    out[n] = _make_scalar_type(n, np.dtype(t)) if t is not None else None
  return out


_st = _scalar_types()
int1, int2, uint1, uint2 = _st["int1"], _st["int2"], _st["uint1"], _st["uint2"]
float6_e2m3fn, float6_e3m2fn = _st["float6_e2m3fn"], _st["float6_e3m2fn"]
del _st
