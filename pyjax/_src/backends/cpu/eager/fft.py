"""Eager implementation of the ``fft`` primitive with numpy.fft (pocketfft).

The transform runs over the trailing ``len(fft_lengths)`` dimensions; single-precision
inputs are transformed in double precision by NumPy and cast back by the dispatcher,
except with scipy.fft available, which keeps float32/complex64 (like XLA's CPU FFT).
"""
from __future__ import annotations

import numpy as np

from pyjax._src.backends.cpu.eager.registry import register

try:
  import scipy.fft as _sfft
except ImportError:  # pragma: no cover - scipy is a dependency, numpy.fft is the fallback
  _sfft = None

_lib = _sfft if _sfft is not None else np.fft


@register("fft")
def fft(x, *, fft_type, fft_lengths):
  k = len(fft_lengths)
  axes = tuple(range(x.ndim - k, x.ndim))
  t = int(fft_type)
  if any(n == 0 for n in x.shape[:x.ndim - k]) or (t != 3 and x.size == 0):
    out_shape = list(x.shape)
    if t == 2:
      out_shape[-1] = fft_lengths[-1] // 2 + 1
      dt = np.result_type(x.dtype, np.complex64)
    elif t == 3:
      out_shape[x.ndim - k:] = fft_lengths
      dt = np.finfo(x.dtype).dtype
    else:
      dt = x.dtype
    return np.zeros(out_shape, dt)
  if t == 0:
    return _lib.fftn(x, axes=axes)
  if t == 1:
    return _lib.ifftn(x, axes=axes)
  if t == 2:
    return _lib.rfftn(x, axes=axes)
  if any(n == 0 for n in fft_lengths):
    return np.zeros(x.shape[:x.ndim - k] + tuple(fft_lengths), np.finfo(x.dtype).dtype)
  return _lib.irfftn(x, s=fft_lengths, axes=axes)
