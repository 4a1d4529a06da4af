"""jax.scipy.signal: N-d convolution and correlation on lax.conv_general_dilated, FFT
convolution, detrending, and the windowed-FFT family (stft, istft, csd, welch).

Differs from JAX: list inputs raise TypeError (JAX raises AttributeError).  The spectral
functions are in ``signal_spectral.py``.
"""
from __future__ import annotations

from pyjax._src.numpy.reductions import lax, _asarray
from pyjax._src.numpy.util import check_arraylike, promote_dtypes_inexact
from pyjax._src.numpy.linalg_ops import _conj, _flip_all

__all__ = ["convolve", "correlate", "convolve2d", "correlate2d"]  # + signal_spectral

_MODES = ("full", "same", "valid")


def _convolve_nd(in1, in2, mode, *, precision):
  if mode not in _MODES:
    raise ValueError("mode must be one of ['full', 'same', 'valid']")
  if in1.ndim != in2.ndim:
    raise ValueError("in1 and in2 must have the same number of dimensions")
  if in1.size == 0 or in2.size == 0:
    raise ValueError("zero-size arrays not supported in convolutions, got shapes "
                     f"{in1.shape} and {in2.shape}.")
  in1, in2 = promote_dtypes_inexact(in1, in2)
  no_swap = all(s1 >= s2 for s1, s2 in zip(in1.shape, in2.shape))
  swap = all(s1 <= s2 for s1, s2 in zip(in1.shape, in2.shape))
  if not (no_swap or swap):
    raise ValueError("One input must be smaller than the other in every dimension.")
  shape_o = in2.shape
  if swap:
    in1, in2 = in2, in1
  shape = in2.shape
  in2 = _flip_all(in2)
  if mode == "valid":
    padding = [(0, 0) for _ in shape]
  elif mode == "same":
    padding = [(s - 1 - (so - 1) // 2, s - so + (so - 1) // 2) for s, so in zip(shape, shape_o)]
  else:
    padding = [(s - 1, s - 1) for s in shape]
  nd = in1.ndim
  out = lax.conv_general_dilated(lax.reshape(in1, (1, 1) + tuple(in1.shape)),
                                 lax.reshape(in2, (1, 1) + tuple(in2.shape)),
                                 (1,) * nd, padding, precision=precision)
  return lax.reshape(out, tuple(out.shape[2:]))


def _arrays(name, *xs):
  check_arraylike(name, *xs)
  return [_asarray(name, x) for x in xs]


def convolve(in1, in2, mode="full", method="auto", precision=None):
  """N-d convolution of two arrays of equal rank (one must be at least as large as the
  other in every dimension).  Integer inputs give floats; ``method='fft'`` uses
  ``fftconvolve``."""
  in1, in2 = _arrays("convolve", in1, in2)
  if method == "fft":
    from pyjax._src.scipy.signal_spectral import fftconvolve
    return fftconvolve(in1, in2, mode=mode)
  if method not in ("auto", "direct"):
    raise ValueError(f"Got method={method!r}; expected 'auto', 'fft', or 'direct'.")
  return _convolve_nd(in1, in2, mode, precision=precision)


def correlate(in1, in2, mode="full", method="auto", precision=None):
  """N-d cross-correlation: convolution with the flipped, conjugated ``in2``."""
  in1, in2 = _arrays("correlate", in1, in2)
  return convolve(in1, _flip_all(_conj(in2)), mode, precision=precision, method=method)


def _check_2d(name, in1, in2, boundary, fillvalue):
  if boundary != "fill" or fillvalue != 0:
    raise NotImplementedError(f"{name}() only supports boundary='fill', fillvalue=0")
  if in1.ndim != 2 or in2.ndim != 2:
    raise ValueError(f"{name}() only supports 2-dimensional inputs.")


def convolve2d(in1, in2, mode="full", boundary="fill", fillvalue=0, precision=None):
  """2-d convolution; only ``boundary='fill'`` with ``fillvalue=0`` (as JAX)."""
  in1, in2 = _arrays("convolve2d", in1, in2)
  _check_2d("convolve2d", in1, in2, boundary, fillvalue)
  return _convolve_nd(in1, in2, mode, precision=precision)


def correlate2d(in1, in2, mode="full", boundary="fill", fillvalue=0, precision=None):
  """2-d cross-correlation; only ``boundary='fill'`` with ``fillvalue=0`` (as JAX)."""
  in1, in2 = _arrays("correlate2d", in1, in2)
  _check_2d("correlate2d", in1, in2, boundary, fillvalue)
  swap = all(s1 <= s2 for s1, s2 in zip(in1.shape, in2.shape))
  same_shape = all(s1 == s2 for s1, s2 in zip(in1.shape, in2.shape))
  if mode == "same":
    return _flip_all(_convolve_nd(_flip_all(in1), _conj(in2), mode, precision=precision))
  if mode == "valid":
    if swap and not same_shape:
      return _convolve_nd(_flip_all(in2), _conj(in1), mode, precision=precision)
    return _flip_all(_convolve_nd(_flip_all(in1), _conj(in2), mode, precision=precision))
  if swap:
    return _conj(_convolve_nd(_flip_all(in2), _conj(in1), mode, precision=precision))
  return _flip_all(_convolve_nd(_flip_all(in1), _conj(in2), mode, precision=precision))
