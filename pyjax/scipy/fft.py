"""pyjax.scipy.fft (thin re-exports of pyjax._src.scipy.fft)."""
from pyjax._src.scipy.fft import dct, dctn, idct, idctn  # noqa: F401
