"""pyjax.numpy.fft: discrete Fourier transforms (re-exports of pyjax._src.numpy.fft)."""
from pyjax._src.numpy.fft import *  # noqa: F401,F403
