"""jax.scipy.signal: fftconvolve, detrend and the windowed-FFT family (stft, istft, csd,
welch), with JAX's (= SciPy's) conventions for windows, boundaries, padding, detrending,
scaling and one-/two-sided spectra."""
from __future__ import annotations

import math
import operator
import warnings
from functools import partial

import numpy as np

from pyjax._src import core, dtypes
from pyjax._src.lax import lax_api as lax
from pyjax._src.numpy import fft as jnp_fft
from pyjax._src.numpy import linalg as jnp_linalg
from pyjax._src.numpy.util import canonicalize_axis, check_arraylike, promote_dtypes_complex, \
    promote_dtypes_inexact
import pyjax.numpy as jnp

__all__ = ["csd", "detrend", "fftconvolve", "istft", "stft", "welch"]


# --- FFT convolution ----------------------------------------------------------------------
def fftconvolve(in1, in2, mode="full", axes=None):
  """Convolve N-d arrays with FFTs (over ``axes``; the other axes must match and are
  batched)."""
  check_arraylike("fftconvolve", in1, in2)
  in1, in2 = promote_dtypes_inexact(in1, in2)
  if in1.ndim != in2.ndim:
    raise ValueError("in1 and in2 should have the same dimensionality")
  if mode not in ["same", "full", "valid"]:
    raise ValueError("mode must be one of ['same', 'full', 'valid']")
  if axes is None:
    axes = tuple(range(in1.ndim))
  else:
    axes = (axes,) if isinstance(axes, (int, np.integer)) else tuple(axes)
    axes = tuple(canonicalize_axis(a, in1.ndim) for a in axes)
    mapped = set(range(in1.ndim)) - set(axes)
    if any(in1.shape[i] != in2.shape[i] for i in mapped):
      raise ValueError(f"mapped axes must have same shape; got in1.shape={in1.shape!r} "
                       f"in2.shape={in2.shape!r} axes={axes!r}")
  axes = tuple(sorted(axes))
  s1 = [in1.shape[a] for a in axes]
  s2 = [in2.shape[a] for a in axes]
  full = [a + b - 1 for a, b in zip(s1, s2)]
  if mode == "valid":
    no_swap = all(a >= b for a, b in zip(s1, s2))
    swap = all(a <= b for a, b in zip(s1, s2))
    if not (no_swap or swap):
      raise ValueError("For 'valid' mode, One input must be at least as large as the other in "
                       "every dimension.")
    if swap:
      in1, in2 = in2, in1
      s1, s2 = s2, s1
  if all(a == 1 or b == 1 for a, b in zip(s1, s2)):
    conv = in1 * in2
  else:
    if jnp.iscomplexobj(in1):
      fwd, inv = jnp_fft.fftn, jnp_fft.ifftn
    else:
      fwd, inv = jnp_fft.rfftn, jnp_fft.irfftn
    conv = inv(fwd(in1, full, axes=axes) * fwd(in2, full, axes=axes), full, axes=axes)
  if mode == "full":
    out = full
  elif mode == "same":
    out = s1
  else:
    out = [a - b + 1 for a, b in zip(s1, s2)]
  start = [0] * conv.ndim
  size = list(conv.shape)
  for a, f, o in zip(axes, full, out):
    start[a] = (f - o) // 2
    size[a] = o
  return lax.dynamic_slice(conv, tuple(start), tuple(size))


# --- detrend ------------------------------------------------------------------------------
def detrend(data, axis=-1, type="linear", bp=0, overwrite_data=None):
  """Remove the mean (``type='constant'``) or a least-squares line per segment between the
  breakpoints ``bp`` (``'linear'``) along ``axis``."""
  if overwrite_data is not None:
    raise NotImplementedError("overwrite_data argument not implemented.")
  if type not in ["constant", "linear"]:
    raise ValueError("Trend type must be 'linear' or 'constant'.")
  data, = promote_dtypes_inexact(jnp.asarray(data))
  if type == "constant":
    return data - data.mean(axis, keepdims=True)
  N = data.shape[axis]
  bps = np.sort(np.unique(np.r_[0, bp, N]))
  if bps[0] < 0 or bps[-1] > N:
    raise ValueError("Breakpoints must be non-negative and less than length of data along "
                     "given axis.")
  data = jnp.moveaxis(data, axis, 0)
  shape = data.shape
  data = data.reshape(N, -1)
  for m in range(len(bps) - 1):
    npts = bps[m + 1] - bps[m]
    A = jnp.vstack([jnp.ones(npts, dtype=data.dtype),
                    jnp.arange(1, npts + 1, dtype=data.dtype) / npts.astype(data.dtype)]).T
    sl = slice(bps[m], bps[m + 1])
    coef, *_ = jnp_linalg.lstsq(A, data[sl])
    data = data.at[sl].add(-jnp.matmul(A, coef, precision=lax.Precision.HIGHEST))
  return jnp.moveaxis(data.reshape(shape), 0, axis)


# --- windowed FFTs ------------------------------------------------------------------------
def _hann(n):
  return jnp.array([1.]) if n == 1 else jnp.sin(jnp.linspace(0, np.pi, n, endpoint=False)) ** 2


def _window(window, n):
  if isinstance(window, str) and window == "hann":
    return _hann(n)
  try:
    from scipy.signal import get_window
  except ImportError as err:
    raise ImportError(f"scipy must be available to use window={window!r}") from err
  return get_window(window, n)


def _triage_segments(window, nperseg, input_length, dtype):
  if isinstance(window, (str, tuple)):
    n = input_length if nperseg is None else int(nperseg)
    if n > input_length:
      warnings.warn(f"nperseg={n} is greater than input_length={input_length!r}, using "
                    f"nperseg={input_length}")
      n = input_length
    win = jnp.array(_window(window, n), dtype=dtype)
  else:
    win = jnp.asarray(window, dtype=dtype)
    n = win.size if nperseg is None else int(nperseg)
    if win.ndim != 1:
      raise ValueError("window must be 1-D")
    if input_length < win.size:
      raise ValueError("window is longer than input signal")
    if n != win.size:
      raise ValueError("value specified for nperseg is different from length of window")
  return win, n


def _median_bias(n):
  ii = jnp.arange(2., n, 2)
  return 1 + jnp.sum(1. / (ii + 1) - 1. / ii)


def _segments_fft(x, win, detrend_func, nperseg, noverlap, nfft, sides):
  """Windowed, detrended FFTs of the overlapping segments along the last axis: shape
  ``(..., nsegments, nfreq)``."""
  if x.dtype.kind == "i":
    x = x.astype(win.dtype)
  *batch, length = x.shape
  if nperseg == 1 and noverlap == 0:
    segs = x[..., np.newaxis]
  else:
    starts = np.arange(0, length - nperseg + 1, nperseg - noverlap)
    segs = jnp.take(x, starts[:, None] + np.arange(nperseg)[None, :], axis=-1)
  segs = detrend_func(segs)
  if jnp.iscomplexobj(win):
    segs, = promote_dtypes_complex(segs)
  segs = win.reshape((1,) * len(batch) + (1, nperseg)) * segs
  if sides == "twosided":
    return jnp_fft.fft(segs, n=nfft)
  return jnp_fft.rfft(segs.real, n=nfft)


def _odd_ext(x, n, axis=-1):
  if n < 1:
    return x
  if n > x.shape[axis] - 1:
    raise ValueError(f"The extension length n ({n}) is too big. It must not exceed "
                     f"x.shape[axis]-1, which is {x.shape[axis] - 1}.")
  left = lax.slice_in_dim(x, 0, 1, axis=axis)
  left_ext = jnp.flip(lax.slice_in_dim(x, 1, n + 1, axis=axis), axis=axis)
  right = lax.slice_in_dim(x, x.shape[axis] - 1, None, axis=axis)
  right_ext = jnp.flip(lax.slice_in_dim(x, x.shape[axis] - (n + 1), x.shape[axis] - 1,
                                        axis=axis), axis=axis)
  return jnp.concatenate((2 * left - left_ext, x, 2 * right - right_ext), axis=axis)


def _pad_fn(mode, **kw):
  def pad(x, n, axis=-1):
    widths = [(0, 0)] * x.ndim
    widths[axis] = (n, n)
    return jnp.pad(x, widths, mode, **kw)
  return pad


_BOUNDARY = {"even": _pad_fn("reflect"), "odd": _odd_ext, "constant": _pad_fn("edge"),
             "zeros": _pad_fn("constant", constant_values=0.0),
             None: lambda x, *a, **k: x}


def _tuple_delete(t, i):
  return t[:i] + t[i + 1:]


def _spectral_helper(x, y, fs=1.0, window="hann", nperseg=None, noverlap=None, nfft=None,
                     detrend_type="constant", return_onesided=True, scaling="density",
                     axis=-1, mode="psd", boundary=None, padded=False):
  if mode not in ("psd", "stft"):
    raise ValueError(f"Unknown value for mode {mode}, must be one of: ('psd', 'stft')")
  if boundary not in _BOUNDARY:
    raise ValueError(f"Unknown boundary option '{boundary}', must be one of: "
                     f"{list(_BOUNDARY.keys())}")
  axis = core.concrete_or_error(operator.index, axis, "axis of windowed-FFT")
  if y is None:
    check_arraylike("spectral_helper", x)
    x, = promote_dtypes_inexact(x)
    axis = canonicalize_axis(axis, x.ndim)
    y_arr = x
    outer = _tuple_delete(x.shape, axis)
  else:
    if mode != "psd":
      raise ValueError("two-argument mode is available only when mode=='psd'")
    check_arraylike("spectral_helper", x, y)
    x, y_arr = promote_dtypes_inexact(x, y)
    axis = canonicalize_axis(axis, x.ndim)
    if x.ndim != y_arr.ndim:
      raise ValueError("two-arguments must have the same rank ({x.ndim} vs {y.ndim}).")
    try:
      outer = jnp.broadcast_shapes(_tuple_delete(x.shape, axis),
                                   _tuple_delete(y_arr.shape, axis))
    except ValueError as err:
      raise ValueError("x and y cannot be broadcast together.") from err
  result_dtype = dtypes.to_complex_dtype(x.dtype)
  freq_dtype = np.finfo(result_dtype).dtype
  nseg = None
  if nperseg is not None:
    nseg = core.concrete_or_error(int, nperseg, "nperseg of windowed-FFT")
    if nseg < 1:
      raise ValueError("nperseg must be a positive integer")
  win, nseg = _triage_segments(window, nseg, input_length=x.shape[axis], dtype=x.dtype)
  nover = nseg // 2 if noverlap is None else core.concrete_or_error(
      int, noverlap, "noverlap of windowed-FFT")
  nff = nseg if nfft is None else core.concrete_or_error(int, nfft, "nfft of windowed-FFT")
  if y is None:
    if x.size == 0:
      return (jnp.zeros(x.shape, freq_dtype), jnp.zeros(x.shape, freq_dtype),
              jnp.zeros(x.shape, result_dtype))
  elif x.size == 0 or y_arr.size == 0:
    shape = outer[:axis] + (min(x.shape[axis], y_arr.shape[axis]),) + outer[axis:]
    return (jnp.zeros(shape, freq_dtype), jnp.zeros(shape, freq_dtype),
            jnp.zeros(shape, result_dtype))
  x = jnp.moveaxis(x, axis, -1)
  if y is not None and y_arr.ndim > 1:
    y_arr = jnp.moveaxis(y_arr, axis, -1)
  if y is not None and x.shape[-1] != y_arr.shape[-1]:
    if x.shape[-1] < y_arr.shape[-1]:
      x = jnp.concatenate((x, jnp.zeros(x.shape[:-1] + (y_arr.shape[-1] - x.shape[-1],),
                                        x.dtype)), -1)
    else:
      y_arr = jnp.concatenate((y_arr, jnp.zeros(y_arr.shape[:-1]
                                                + (x.shape[-1] - y_arr.shape[-1],), x.dtype)),
                              -1)
  if nff < nseg:
    raise ValueError("nfft must be greater than or equal to nperseg.")
  if nover >= nseg:
    raise ValueError("noverlap must be less than nperseg.")
  nstep = nseg - nover
  if boundary is not None:
    ext = _BOUNDARY[boundary]
    x = ext(x, nseg // 2, axis=-1)
    if y is not None:
      y_arr = ext(y_arr, nseg // 2, axis=-1)
  if padded:
    nadd = (-(x.shape[-1] - nseg) % nstep) % nseg
    x = jnp.concatenate((x, jnp.zeros(x.shape[:-1] + (nadd,), x.dtype)), axis=-1)
    if y is not None:
      y_arr = jnp.concatenate((y_arr, jnp.zeros(y_arr.shape[:-1] + (nadd,), x.dtype)), -1)
  if isinstance(detrend_type, str):
    detrend_func = partial(detrend, type=detrend_type, axis=-1)
  elif callable(detrend_type):
    if axis != -1:
      def detrend_func(d):
        return jnp.moveaxis(detrend_type(jnp.moveaxis(d, axis, -1)), -1, axis)
    else:
      detrend_func = detrend_type
  elif not detrend_type:
    def detrend_func(d):
      return d
  else:
    raise ValueError(f"Unsupported detrend type: {detrend_type}")
  if scaling == "density":
    scale = 1.0 / (fs * (win * win).sum())
  elif scaling == "spectrum":
    scale = 1.0 / win.sum() ** 2
  else:
    raise ValueError(f"Unknown scaling: {scaling}")
  if mode == "stft":
    scale = jnp.sqrt(scale)
  scale, = promote_dtypes_complex(scale)
  if return_onesided:
    sides = "onesided"
    if jnp.iscomplexobj(x) or jnp.iscomplexobj(y):
      sides = "twosided"
      warnings.warn("Input data is complex, switching to return_onesided=False")
  else:
    sides = "twosided"
  if sides == "twosided":
    freqs = jnp_fft.fftfreq(nff, 1 / fs, dtype=freq_dtype)
  else:
    freqs = jnp_fft.rfftfreq(nff, 1 / fs, dtype=freq_dtype)
  result = _segments_fft(x, win, detrend_func, nseg, nover, nff, sides)
  if y is not None:
    result = jnp.conjugate(result) * _segments_fft(y_arr, win, detrend_func, nseg, nover, nff,
                                                   sides)
  elif mode == "psd":
    result = jnp.conjugate(result) * result
  result = result * scale
  if sides == "onesided" and mode == "psd":
    end = None if nff % 2 else -1
    result = result.at[..., 1:end].mul(2)
  time = jnp.arange(nseg / 2, x.shape[-1] - nseg / 2 + 1, nseg - nover, dtype=freq_dtype) / fs
  if boundary is not None:
    time = time - nseg / 2 / fs
  result = result.astype(result_dtype)
  if y is None and mode != "stft":
    result = result.real
  return freqs, time, jnp.moveaxis(result, -1, axis)


def stft(x, fs=1.0, window="hann", nperseg=256, noverlap=None, nfft=None, detrend=False,
         return_onesided=True, boundary="zeros", padded=True, axis=-1):
  """The short-time Fourier transform: ``(frequencies, segment times, Zxx)``."""
  return _spectral_helper(x, None, fs, window, nperseg, noverlap, nfft, detrend,
                          return_onesided, scaling="spectrum", axis=axis, mode="stft",
                          boundary=boundary, padded=padded)


def csd(x, y, fs=1.0, window="hann", nperseg=None, noverlap=None, nfft=None,
        detrend="constant", return_onesided=True, scaling="density", axis=-1, average="mean"):
  """The cross power spectral density by Welch's method: ``(frequencies, Pxy)``
  (``average`` 'mean' or 'median')."""
  freqs, _, Pxy = _spectral_helper(x, y, fs, window, nperseg, noverlap, nfft, detrend,
                                   return_onesided, scaling, axis, mode="psd")
  if y is not None:
    Pxy = Pxy + 0j
  if Pxy.ndim >= 2 and Pxy.size > 0:
    if Pxy.shape[-1] > 1:
      if average == "median":
        bias = _median_bias(Pxy.shape[-1]).astype(Pxy.dtype)
        if jnp.iscomplexobj(Pxy):
          Pxy = jnp.median(jnp.real(Pxy), axis=-1) + 1j * jnp.median(jnp.imag(Pxy), axis=-1)
        else:
          Pxy = jnp.median(Pxy, axis=-1)
        Pxy = Pxy / bias
      elif average == "mean":
        Pxy = Pxy.mean(axis=-1)
      else:
        raise ValueError(f'average must be "median" or "mean", got {average}')
    else:
      Pxy = jnp.reshape(Pxy, Pxy.shape[:-1])
  return freqs, Pxy


def welch(x, fs=1.0, window="hann", nperseg=None, noverlap=None, nfft=None,
          detrend="constant", return_onesided=True, scaling="density", axis=-1,
          average="mean"):
  """The power spectral density by Welch's method: ``(frequencies, Pxx)``."""
  freqs, Pxx = csd(x, None, fs=fs, window=window, nperseg=nperseg, noverlap=noverlap,
                   nfft=nfft, detrend=detrend, return_onesided=return_onesided,
                   scaling=scaling, axis=axis, average=average)
  return freqs, Pxx.real


def _overlap_and_add(x, step):
  """Sum frames ``(..., nframes, frame_len)`` placed ``step`` apart."""
  check_arraylike("_overlap_and_add", x)
  step = core.concrete_or_error(int, step, "step_size for overlap_and_add")
  if x.ndim < 2:
    raise ValueError("Input must have (..., frames, frame_length) shape.")
  *batch, nframes, seg = x.shape
  b = math.prod(batch)
  x = x.reshape((b, nframes, seg))
  out_size = step * (nframes - 1) + seg
  nsteps = 1 + (seg - 1) // step
  x = jnp.pad(x, ((0, 0), (0, 0), (0, nsteps * step - seg)))
  x = x.reshape((b, nframes, nsteps, step)).transpose((0, 2, 1, 3))
  x = jnp.pad(x, ((0, 0), (0, 0), (0, nframes), (0, 0)))
  shrunk = x.shape[2] - 1
  x = x.reshape((b, -1))[:, :nsteps * shrunk * step]
  x = x.reshape((b, nsteps, shrunk * step)).sum(axis=1)[:, :out_size]
  return x.reshape(tuple(batch) + (-1,))


def istft(Zxx, fs=1.0, window="hann", nperseg=None, noverlap=None, nfft=None,
          input_onesided=True, boundary=True, time_axis=-1, freq_axis=-2):
  """The inverse STFT by weighted overlap-add: ``(times, x)``."""
  check_arraylike("istft", Zxx)
  Zxx = jnp.asarray(Zxx)
  if Zxx.ndim < 2:
    raise ValueError("Input stft must be at least 2d!")
  freq_axis = canonicalize_axis(freq_axis, Zxx.ndim)
  time_axis = canonicalize_axis(time_axis, Zxx.ndim)
  if freq_axis == time_axis:
    raise ValueError("Must specify differing time and frequency axes!")
  Zxx = jnp.asarray(Zxx, dtype=dtypes.to_complex_dtype(Zxx.dtype))
  n_default = 2 * (Zxx.shape[freq_axis] - 1) if input_onesided else Zxx.shape[freq_axis]
  nseg = core.concrete_or_error(int, nperseg or n_default, "nperseg: segment length of STFT")
  if nseg < 1:
    raise ValueError("nperseg must be a positive integer")
  if nfft is None:
    nff = n_default + (1 if input_onesided and nseg == n_default + 1 else 0)
  else:
    nff = core.concrete_or_error(int, nfft, "nfft of STFT")
  if nff < nseg:
    raise ValueError(f"FFT length ({nff}) must be longer than nperseg ({nseg}).")
  nover = core.concrete_or_error(int, noverlap or nseg // 2, "noverlap of STFT")
  if nover >= nseg:
    raise ValueError("noverlap must be less than nperseg.")
  nstep = nseg - nover
  if time_axis != Zxx.ndim - 1 or freq_axis != Zxx.ndim - 2:
    outer = tuple(i for i in range(Zxx.ndim) if i not in {time_axis, freq_axis})
    Zxx = jnp.transpose(Zxx, outer + (freq_axis, time_axis))
  ifunc = jnp_fft.irfft if input_onesided else jnp_fft.ifft
  xsubs = ifunc(Zxx, axis=-2, n=nfft)[..., :nseg, :]
  if isinstance(window, (str, tuple)):
    win = jnp.array(_window(window, nseg), dtype=xsubs.dtype)
  else:
    win = jnp.asarray(window)
    if len(win.shape) != 1:
      raise ValueError("window must be 1-D")
    if win.shape[0] != nseg:
      raise ValueError(f"window must have length of {nseg}")
  xsubs = xsubs * win.sum()
  win = lax.expand_dims(win, (*range(xsubs.ndim - 2), -1))
  x = _overlap_and_add(jnp.swapaxes(xsubs * win, -2, -1), nstep)
  norm = _overlap_and_add(jnp.swapaxes(jnp.repeat(win * win, xsubs.shape[-1], axis=-1), -2, -1),
                          nstep)
  if boundary:
    x = x[..., nseg // 2:-(nseg // 2)]
    norm = norm[..., nseg // 2:-(nseg // 2)]
  x = x / jnp.where(norm > 1e-10, norm, 1.0)
  if x.ndim > 1 and time_axis != Zxx.ndim - 1:
    if freq_axis < time_axis:
      time_axis -= 1
    x = jnp.moveaxis(x, -1, time_axis)
  time = jnp.arange(x.shape[0], dtype=np.finfo(x.dtype).dtype) / fs
  return time, x
