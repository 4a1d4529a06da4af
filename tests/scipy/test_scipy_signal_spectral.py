"""pyjax.scipy.signal: FFT convolution and spectral analysis (stft, istft, welch, csd, detrend) against real JAX and SciPy."""

import numpy as np
import pytest

import pyjax.scipy.signal as psig
from jax_compare import check, slow_except

scipy = pytest.importorskip("scipy")
import scipy.signal as ssig  # noqa: E402

R = np.random.RandomState(0)


# --- signal: FFT convolution and spectral analysis ----------------------------------------
SX = R.randn(3, 200).astype(np.float32)
SY = R.randn(3, 200).astype(np.float32)


@pytest.mark.parametrize("kw", slow_except([{}, {"mode": "same"}, {"mode": "valid"}, {"axes": 1},
                                      {"axes": (1,), "mode": "same"}], {0, 2, 3}))
def test_fftconvolve(kw):
  check(lambda m: m.signal.fftconvolve(SX, SY[:, :7], **kw), tol=1e-4)
  ref = ssig.fftconvolve(SX.astype(np.float64), SY[:, :7].astype(np.float64), **kw)
  np.testing.assert_allclose(psig.fftconvolve(SX, SY[:, :7], **kw), ref, rtol=1e-4, atol=1e-4)


def test_fftconvolve_misc():
  check(lambda m: m.signal.fftconvolve(SX[:, :5], SY[:2, :3], mode="valid"), tol=1e-4)
  check(lambda m: m.signal.fftconvolve((SX + 1j * SY)[0], SY[0, :4]), tol=1e-4)
  check(lambda m: m.signal.fftconvolve(SX[0, :1], SY[0, :1]), tol=1e-4)
  check(lambda m: m.signal.convolve(SX[0], SY[0, :9], method="fft"), tol=1e-4)
  check(lambda m: m.signal.fftconvolve(SX, SY[:2], axes=1))
  check(lambda m: m.signal.fftconvolve(SX, SY, mode="bogus"))
  check(lambda m: m.top.grad(lambda a: m.signal.fftconvolve(a, SY[0, :5]).sum())(SX[0]),
        tol=1e-4)


@pytest.mark.parametrize("kw", [{}, {"type": "constant", "axis": 0}, {"bp": [50, 120]}])
def test_detrend(kw):
  check(lambda m: m.signal.detrend(SX, **kw), tol=1e-4)
  np.testing.assert_allclose(psig.detrend(SX, **kw),
                             ssig.detrend(SX.astype(np.float64), **kw), atol=1e-4)


STFT_CASES = [
    {"nperseg": 32}, {"nperseg": 31, "noverlap": 10, "boundary": "even"},
    {"nperseg": 16, "boundary": None, "padded": False, "window": "hamming"},
    {"nperseg": 20, "boundary": "odd", "nfft": 32, "return_onesided": False},
    {"nperseg": 24, "boundary": "constant", "detrend": "linear", "fs": 10.0},
]


@pytest.mark.parametrize("kw", slow_except(STFT_CASES, {0, 3}))
def test_stft(kw):
  check(lambda m: m.signal.stft(SX, **kw), tol=1e-4)
  f, t, z = psig.stft(SX, **kw)
  sf, st_, sz = ssig.stft(SX.astype(np.float64), **kw)
  np.testing.assert_allclose(f, sf, rtol=1e-5)
  np.testing.assert_allclose(t, st_, rtol=1e-5)
  np.testing.assert_allclose(z, sz, atol=1e-4)


@pytest.mark.parametrize("kw", slow_except([{"nperseg": 64}, {"nperseg": 33, "average": "median",
                                                        "scaling": "spectrum"},
                                      {"nperseg": 40, "detrend": "linear", "noverlap": 5},
                                      {"nperseg": 50, "return_onesided": False, "nfft": 64}],
                                     {0}))
def test_welch_and_csd(kw):
  check(lambda m: m.signal.welch(SX, **kw), tol=1e-4)
  check(lambda m: m.signal.csd(SX, SY, **kw), tol=1e-4)
  f, p = psig.welch(SX, **kw)
  sf, sp_ = ssig.welch(SX.astype(np.float64), **kw)
  np.testing.assert_allclose(f, sf, rtol=1e-5)
  np.testing.assert_allclose(p, sp_, rtol=1e-3, atol=1e-6)
  f, p = psig.csd(SX, SY, **kw)
  sf, sp_ = ssig.csd(SX.astype(np.float64), SY.astype(np.float64), **kw)
  np.testing.assert_allclose(p, sp_, rtol=1e-3, atol=1e-6)


@pytest.mark.slow
def test_welch_axis_and_errors():
  check(lambda m: m.signal.welch(SX.T, axis=0, nperseg=40), tol=1e-4)
  check(lambda m: m.signal.welch(SX, nperseg=16, noverlap=16))
  check(lambda m: m.signal.welch(SX, nperseg=32, nfft=16))
  check(lambda m: m.signal.welch(SX, nperseg=32, average="bogus"))
  check(lambda m: m.signal.welch(SX, nperseg=32, scaling="bogus"))
  check(lambda m: m.signal.welch(np.zeros((2, 0), np.float32)))


@pytest.mark.parametrize("kw", slow_except([{"nperseg": 32}, {}, {"nperseg": 32, "noverlap": 20},
                                      {"nperseg": 32, "boundary": False}], {0}))
def test_istft(kw):
  _, _, z = ssig.stft(SX.astype(np.float64), nperseg=kw.get("nperseg", 256),
                      noverlap=kw.get("noverlap"))
  z = z.astype(np.complex64)
  check(lambda m: m.signal.istft(z, **kw), tol=1e-4)
  if kw.get("boundary", True):
    t, x = psig.istft(z, **kw)
    st_, sx = ssig.istft(z.astype(np.complex128), **kw)
    np.testing.assert_allclose(x, sx, atol=1e-4)


def test_istft_axes_roundtrip():
  _, _, z = psig.stft(SX, nperseg=32)
  _, back = psig.istft(z, nperseg=32)
  np.testing.assert_allclose(np.asarray(back)[:, :200], SX, atol=1e-4)
  zt = np.swapaxes(np.asarray(z), -1, -2)
  check(lambda m: m.signal.istft(zt, nperseg=32, time_axis=-2, freq_axis=-1), tol=1e-4)
  check(lambda m: m.signal.istft(zt, time_axis=1, freq_axis=1))
