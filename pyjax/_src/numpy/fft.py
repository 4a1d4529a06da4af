"""jax.numpy.fft on the ``lax.fft`` primitive.

Transforms over arbitrary axes move those axes to the end, crop or zero-pad them to the
requested lengths, apply ``lax.fft`` (at most three axes per call, as JAX does) and move
them back.  Inputs are promoted like JAX: integers and bools to the default float (then
complex), float16 to complex64.  ``norm`` is "backward" (default), "ortho" or "forward".
"""
from __future__ import annotations

import math
import operator

import numpy as np

from pyjax._src import core, dtypes
from pyjax._src.lax import lax_api as lax
from pyjax._src.lax.fft import FftType
from pyjax._src.numpy import creation as _creation
from pyjax._src.numpy import manipulation as _manip
from pyjax._src.numpy import reductions as _red
from pyjax._src.numpy.array_constructors import array as _array
from pyjax._src.numpy.util import canonicalize_axis, check_arraylike

__all__ = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2",
           "fftn", "ifftn", "rfftn", "irfftn", "fftfreq", "rfftfreq", "fftshift", "ifftshift"]


def _norm_factor(s, func_name, norm, dtype):
  """The scale applied after the unnormalized transform, or None for none."""
  if norm is None or norm == "backward":
    return None
  n = float(math.prod(s))
  if norm == "ortho":
    f = math.sqrt(n) if func_name.startswith("i") else 1 / math.sqrt(n)
  elif norm == "forward":
    f = n if func_name.startswith("i") else 1 / n
  else:
    raise ValueError(f'Invalid norm value {norm}; should be "backward","ortho" or "forward".')
  return np.array(f, dtype)


def _check_norm(norm):
  if norm not in (None, "backward", "ortho", "forward"):
    raise ValueError(f'Invalid norm value {norm}; should be "backward","ortho" or "forward".')


def _fft_nd(arr, fft_type, s):
  """lax.fft over the trailing len(s) axes, in pieces of at most three axes."""
  if len(s) <= 3:
    return lax.fft(arr, fft_type, tuple(s))
  n = 2 if len(s) == 4 else 3
  nd = arr.ndim
  src = tuple(range(nd - len(s), nd - n))
  dst = tuple(range(nd - len(s) + n, nd))
  if fft_type in (FftType.RFFT, FftType.FFT):
    arr = lax.fft(arr, fft_type, tuple(s)[-n:])
    arr = _manip.moveaxis(arr, src, dst)
    arr = _fft_nd(arr, FftType.FFT, s[:-n])
    return _manip.moveaxis(arr, dst, src)
  arr = _manip.moveaxis(arr, src, dst)
  arr = _fft_nd(arr, FftType.IFFT, s[:-n])
  arr = _manip.moveaxis(arr, dst, src)
  return lax.fft(arr, fft_type, tuple(s)[-n:])


def _fft_core(func_name, fft_type, a, s, axes, norm):
  full_name = f"jax.numpy.fft.{func_name}"
  check_arraylike(full_name, a)
  arr = _red._asarray(full_name, a)
  _check_norm(norm)
  if s is not None:
    s = tuple(operator.index(n) for n in s)
    if any(n <= 0 for n in s):
      raise ValueError("Shape should be positive.")
  if s is not None and axes is not None and len(s) != len(axes):
    raise ValueError("Shape and axes have different lengths.")
  orig_axes = axes
  if axes is None:
    axes = tuple(range(arr.ndim)) if s is None else tuple(range(arr.ndim - len(s), arr.ndim))
  else:
    axes = tuple(canonicalize_axis(operator.index(ax), arr.ndim) for ax in axes)
  if len(axes) != len(set(axes)):
    raise ValueError(f"{full_name} does not support repeated axes. Got axes {axes}.")
  if orig_axes is not None:
    new_axes = tuple(range(arr.ndim - len(axes), arr.ndim))
    arr = _manip.moveaxis(arr, axes, new_axes)
    axes = new_axes
  if s is not None:
    in_s = list(arr.shape)
    for ax, n in zip(axes, s):
      in_s[ax] = n
    if fft_type == FftType.IRFFT:
      in_s[-1] = in_s[-1] // 2 + 1
    crop = [min(n, d) for n, d in zip(in_s, arr.shape)]
    if tuple(crop) != arr.shape:
      arr = lax.slice(arr, (0,) * arr.ndim, tuple(crop))
    if tuple(in_s) != arr.shape:
      zero = np.array(0, arr.dtype)
      arr = lax.pad(arr, zero, tuple((0, n - d, 0) for n, d in zip(in_s, arr.shape)))
  else:
    if fft_type == FftType.IRFFT:
      s = [arr.shape[ax] for ax in axes[:-1]]
      if axes:
        s += [max(0, 2 * (arr.shape[axes[-1]] - 1))]
    else:
      s = [arr.shape[ax] for ax in axes]
  out = _fft_nd(arr, fft_type, tuple(s))
  factor = _norm_factor(s, func_name, norm, out.dtype)
  if factor is not None:
    out = lax.mul(out, lax._convert_element_type(factor, out.dtype, False))
  if orig_axes is not None:
    out = _manip.moveaxis(out, axes, orig_axes)
  return out


def _axis_check_1d(func_name, axis):
  full_name = f"jax.numpy.fft.{func_name}"
  if isinstance(axis, (list, tuple)):
    raise ValueError(f"{full_name} does not support multiple axes. Please use {full_name}n. "
                     f"Got axis = {axis!r}.")


def _fft_core_1d(func_name, fft_type, a, n, axis, norm):
  _axis_check_1d(func_name, axis)
  if axis is not None:
    axis = canonicalize_axis(axis, np.ndim(a))
  axes = None if axis is None else [axis]
  return _fft_core(func_name, fft_type, a, None if n is None else [n], axes, norm)


def _fft_core_2d(func_name, fft_type, a, s, axes, norm):
  if len(axes) != 2:
    raise ValueError(f"jax.numpy.fft.{func_name} only supports 2 axes. Got axes = {axes!r}.")
  return _fft_core(func_name, fft_type, a, s, axes, norm)


def fftn(a, s=None, axes=None, norm=None):
  """N-dimensional discrete Fourier transform."""
  return _fft_core("fftn", FftType.FFT, a, s, axes, norm)


def ifftn(a, s=None, axes=None, norm=None):
  """N-dimensional inverse discrete Fourier transform."""
  return _fft_core("ifftn", FftType.IFFT, a, s, axes, norm)


def rfftn(a, s=None, axes=None, norm=None):
  """N-dimensional FFT of real input (last axis halved)."""
  return _fft_core("rfftn", FftType.RFFT, a, s, axes, norm)


def irfftn(a, s=None, axes=None, norm=None):
  """Inverse of rfftn (real output; the last axis has length ``2 * (m - 1)`` by
  default)."""
  return _fft_core("irfftn", FftType.IRFFT, a, s, axes, norm)


def fft(a, n=None, axis=-1, norm=None):
  """One-dimensional discrete Fourier transform along ``axis``."""
  return _fft_core_1d("fft", FftType.FFT, a, n, axis, norm)


def ifft(a, n=None, axis=-1, norm=None):
  """One-dimensional inverse discrete Fourier transform."""
  return _fft_core_1d("ifft", FftType.IFFT, a, n, axis, norm)


def rfft(a, n=None, axis=-1, norm=None):
  """One-dimensional FFT of real input: the ``n // 2 + 1`` non-negative frequencies."""
  return _fft_core_1d("rfft", FftType.RFFT, a, n, axis, norm)


def irfft(a, n=None, axis=-1, norm=None):
  """Inverse of rfft (real output of length ``n``, default ``2 * (m - 1)``)."""
  return _fft_core_1d("irfft", FftType.IRFFT, a, n, axis, norm)


def hfft(a, n=None, axis=-1, norm=None):
  """FFT of a Hermitian-symmetric signal given by its first half (real output)."""
  check_arraylike("jax.numpy.fft.hfft", a)
  from pyjax._src.numpy import ufuncs as _uf
  conj_a = _uf.conj(_red._asarray("hfft", a))
  _axis_check_1d("hfft", axis)
  nn = (conj_a.shape[axis] - 1) * 2 if n is None else n
  out = _fft_core_1d("hfft", FftType.IRFFT, conj_a, n, axis, norm)
  return lax.mul(out, np.array(nn, out.dtype))


def ihfft(a, n=None, axis=-1, norm=None):
  """Inverse of hfft: the first half of the spectrum of a real signal, conjugated."""
  check_arraylike("jax.numpy.fft.ihfft", a)
  from pyjax._src.numpy import ufuncs as _uf
  _axis_check_1d("ihfft", axis)
  arr = _red._asarray("ihfft", a)
  nn = arr.shape[axis] if n is None else n
  out = _fft_core_1d("ihfft", FftType.RFFT, arr, n, axis, norm)
  return lax.mul(_uf.conj(out), np.array(1 / nn, out.dtype))


def fft2(a, s=None, axes=(-2, -1), norm=None):
  """Two-dimensional discrete Fourier transform."""
  return _fft_core_2d("fft2", FftType.FFT, a, s, axes, norm)


def ifft2(a, s=None, axes=(-2, -1), norm=None):
  """Two-dimensional inverse discrete Fourier transform."""
  return _fft_core_2d("ifft2", FftType.IFFT, a, s, axes, norm)


def rfft2(a, s=None, axes=(-2, -1), norm=None):
  """Two-dimensional FFT of real input."""
  return _fft_core_2d("rfft2", FftType.RFFT, a, s, axes, norm)


def irfft2(a, s=None, axes=(-2, -1), norm=None):
  """Inverse of rfft2."""
  return _fft_core_2d("irfft2", FftType.IRFFT, a, s, axes, norm)


def _freq_args(name, n, d):
  if isinstance(n, (list, tuple)):
    raise ValueError(f"The n argument of jax.numpy.fft.{name} only takes an int. Got n = "
                     f"{list(n)}.")
  if isinstance(d, (list, tuple)):
    raise ValueError(f"The d argument of jax.numpy.fft.{name} only takes a single value. "
                     f"Got d = {list(d)}.")


def fftfreq(n, d=1.0, *, dtype=None, device=None):
  """Sample frequencies ``[0, 1, ..., n//2 - 1 (or n//2), -n//2, ..., -1] / (d * n)``."""
  _freq_args("fftfreq", n, d)
  dtype = dtypes.default_float_dtype() if dtype is None else dtype
  out_dtype = dtypes.check_user_dtype(dtype, "fftfreq")
  cdt = dtypes.canonicalize_dtype(np.finfo(dtypes.to_inexact_dtype(out_dtype)).dtype)
  n_int = int(core.concrete_or_error(operator.index, n, "The n argument of fftfreq")) \
      if not isinstance(n, float) else int(n)
  i = _creation.arange(n_int, dtype=cdt)
  k = lax.sub(_uf_remainder(lax.add(i, np.array(n_int // 2, cdt)), np.array(n_int, cdt)),
              np.array(n_int // 2, cdt))
  result = lax.div(k, _array(d * n_int, dtype=cdt))
  return lax._convert_element_type(result, out_dtype, False)


def _uf_remainder(x, y):
  from pyjax._src.numpy import ufuncs as _uf
  return _uf.remainder(x, y)


def rfftfreq(n, d=1.0, *, dtype=None, device=None):
  """Sample frequencies of rfft: ``[0, 1, ..., n//2] / (d * n)``."""
  _freq_args("rfftfreq", n, d)
  dtype = dtypes.default_float_dtype() if dtype is None else dtype
  out_dtype = dtypes.check_user_dtype(dtype, "rfftfreq")
  n_int = int(n)
  m = n_int // 2 + 1 if n_int % 2 == 0 else (n_int - 1) // 2 + 1
  k = _creation.arange(0, m, dtype=out_dtype)
  from pyjax._src.numpy import ufuncs as _uf
  return _uf.true_divide(k, _array(d * n_int, dtype=out_dtype))


def _shift(name, x, axes, sign):
  check_arraylike(name, x)
  x = _red._asarray(name, x)
  if axes is None:
    axes = tuple(range(x.ndim))
    shift = [sign * (dim // 2) if sign > 0 else -(dim // 2) for dim in x.shape]
  elif isinstance(axes, int):
    shift = sign * (x.shape[axes] // 2)
  else:
    shift = [sign * (x.shape[ax] // 2) for ax in axes]
  return _manip.roll(x, shift, axes)


def fftshift(x, axes=None):
  """Move the zero-frequency term to the center (a roll by ``n // 2``)."""
  return _shift("fftshift", x, axes, 1)


def ifftshift(x, axes=None):
  """Inverse of fftshift (a roll by ``-(n // 2)``)."""
  return _shift("ifftshift", x, axes, -1)
