"""lax.fft: the ``fft_p`` primitive (complex FFT, inverse FFT, real FFT and its inverse over
the trailing ``len(fft_lengths)`` dimensions), with its JVP (it is linear) and transpose
rules.  The CPU implementation (numpy.fft / scipy.fft) lives in
``pyjax/_src/backends/cpu/eager/fft.py``.

Differs from JAX: ``lax.fft`` is not wrapped in a ``jit`` (its jaxpr shows the ``fft``
equation directly), and any number of trailing dimensions is accepted (XLA stops at 3).
"""
from __future__ import annotations

import enum
import math

import numpy as np

from pyjax._src import core, dtypes
from pyjax._src.avals import ShapedArray
from pyjax._src.interpreters import ad as _ad
from pyjax._src.lax import elementwise as _ew
from pyjax._src.lax import shapes as _shapes

__all__ = ["FftType", "fft", "fft_p"]


class FftType(enum.IntEnum):
  """The kind of transform: FFT (complex), IFFT (inverse complex), RFFT (real to
  half-spectrum) and IRFFT (half-spectrum to real)."""
  FFT = 0
  IFFT = 1
  RFFT = 2
  IRFFT = 3


def _str_to_fft_type(s):
  for t in FftType:
    if s in (t.name, t.name.lower()):
      return t
  raise ValueError(f"Unknown FFT type '{s}'")


def _complex_dtype(d):
  return dtypes.to_complex_dtype(d)


def _real_dtype(d):
  return np.finfo(d).dtype


fft_p = core.Primitive("fft")
fft_p.arg_names = ("x",)


@fft_p.def_abstract_eval
def _fft_abstract(x, *, fft_type, fft_lengths):
  k = len(fft_lengths)
  if k > x.ndim:
    raise ValueError(f"FFT input shape {x.shape} must have at least as many input dimensions "
                     f"as fft_lengths {fft_lengths}.")
  minor = x.shape[x.ndim - k:]
  if fft_type == FftType.RFFT:
    if x.dtype not in (np.dtype(np.float32), np.dtype(np.float64)):
      raise ValueError(f"RFFT input must be float32 or float64, got {x.dtype}")
    if minor != fft_lengths:
      raise ValueError(f"RFFT input shape {x.shape} minor dimensions must be equal to "
                       f"fft_lengths {fft_lengths}")
    shape = x.shape[:x.ndim - k] + fft_lengths[:-1] + (fft_lengths[-1] // 2 + 1,)
    dtype = _complex_dtype(x.dtype)
  elif fft_type == FftType.IRFFT:
    if not dtypes.is_complex(x.dtype):
      raise ValueError(f"IRFFT input must be complex64 or complex128, got {x.dtype}")
    if minor[:-1] != fft_lengths[:-1]:
      raise ValueError(f"IRFFT input shape {x.shape} minor dimensions must be equal to all "
                       f"except the last fft_length, got fft_lengths={fft_lengths}")
    if minor[-1] != fft_lengths[-1] // 2 + 1:
      raise ValueError("IRFFT requires innermost dimension to be compatible with "
                       f"fft_length[-1]/2+1. Got: {minor[-1]} but fft_length is "
                       f"{', '.join(str(n) for n in fft_lengths)}.")
    shape = x.shape[:x.ndim - k] + fft_lengths
    dtype = _real_dtype(x.dtype)
  else:
    if not dtypes.is_complex(x.dtype):
      raise ValueError(f"FFT input must be complex64 or complex128, got {x.dtype}")
    if minor != fft_lengths:
      raise ValueError(f"FFT input shape {x.shape} minor dimensions must be equal to "
                       f"fft_lengths {fft_lengths}")
    shape = x.shape
    dtype = x.dtype
  return ShapedArray(shape, dtype, x.weak_type)


def fft(x, fft_type, fft_lengths):
  """The FFT of kind ``fft_type`` (an ``FftType`` or its name) over the trailing
  ``len(fft_lengths)`` dimensions.  Inputs are converted to complex (to real for RFFT)."""
  if isinstance(fft_type, str):
    typ = _str_to_fft_type(fft_type)
  elif isinstance(fft_type, FftType):
    typ = fft_type
  else:
    raise TypeError(f"Unknown FFT type value '{fft_type}'")
  d = core.get_aval(x).dtype
  if typ == FftType.RFFT:
    if dtypes.is_complex(d):
      raise ValueError("only real valued inputs supported for rfft")
    x = _ew.convert_element_type(x, dtypes.to_inexact_dtype(d))
  else:
    x = _ew.convert_element_type(x, dtypes.canonicalize_dtype(_complex_dtype(
        dtypes.to_inexact_dtype(d))))
  fft_lengths = tuple(int(n) for n in fft_lengths)
  if not fft_lengths:
    return x
  return fft_p.bind(x, fft_type=typ, fft_lengths=fft_lengths)


# --- differentiation rules ---------------------------------------------------------------------
# fft is linear.  FFT and IFFT are symmetric matrices, so each is its own transpose; RFFT is
# "complex FFT, then keep the first n//2+1 frequencies", whose transpose pads the cotangent
# back, applies FFT and keeps the real part; IRFFT's transpose is the RFFT of the cotangent,
# doubled on the frequencies RFFT de-duplicates, scaled by 1/prod(n) and conjugated (JAX's
# convention for complex cotangents).
def _rfft_transpose(ct, fft_lengths):
  a = core.get_aval(ct)
  n = fft_lengths[-1]
  keep = n // 2 + 1
  nd = a.ndim
  zero = _ad.scalar_const(0, a.dtype)
  full = _shapes.pad(ct, zero, ((0, 0, 0),) * (nd - 1) + ((0, n - keep, 0),))
  y = fft_p.bind(full, fft_type=FftType.FFT, fft_lengths=fft_lengths)
  return _ew.real(y)


def _irfft_transpose(ct, fft_lengths):
  x = fft_p.bind(ct, fft_type=FftType.RFFT, fft_lengths=fft_lengths)
  xa = core.get_aval(x)
  m = xa.shape[-1]
  is_odd = fft_lengths[-1] % 2
  mask = np.ones((m,), np.float64)
  if m > 1:
    mask[1:m - 1 + is_odd] = 2.0
  scale = 1.0 / math.prod(fft_lengths)
  factor = (mask * scale).astype(xa.dtype)
  out = _ew.mul(x, _shapes.broadcast_in_dim(
      _ew.convert_element_type(factor, xa.dtype), xa.shape, (xa.ndim - 1,)))
  return _ew.conj(out)


def _fft_transpose(ct, x, *, fft_type, fft_lengths):
  if type(ct) is _ad.Zero:
    return [_ad.Zero(x.aval)]
  if fft_type == FftType.RFFT:
    return [_rfft_transpose(ct, fft_lengths)]
  if fft_type == FftType.IRFFT:
    return [_irfft_transpose(ct, fft_lengths)]
  return [fft_p.bind(ct, fft_type=fft_type, fft_lengths=fft_lengths)]


_ad.deflinear2(fft_p, _fft_transpose)


def _register_batching():
  from pyjax._src.interpreters import batching

  def _fft_batch(args, dims, **params):
    x, = args
    d, = dims
    if d is not None and d != 0:
      nd = core.get_aval(x).ndim
      x = _shapes.transpose(x, (d,) + tuple(i for i in range(nd) if i != d))
    return fft_p.bind(x, **params), 0
  batching.primitive_batchers[fft_p] = _fft_batch


_register_batching()
