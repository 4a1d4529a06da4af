"""pyjax.scipy.signal (thin re-exports of pyjax._src.scipy.signal*)."""
from pyjax._src.scipy.signal import (  # noqa: F401
    convolve, correlate, convolve2d, correlate2d)
from pyjax._src.scipy.signal_spectral import (  # noqa: F401
    csd, detrend, fftconvolve, istft, stft, welch)
