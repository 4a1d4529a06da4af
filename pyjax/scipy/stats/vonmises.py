"""pyjax.scipy.stats.vonmises (thin re-exports of pyjax._src.scipy.stats.vonmises)."""
from pyjax._src.scipy.stats.vonmises import (  # noqa: F401
    logpdf, pdf)
