"""pyjax.scipy.stats.t (thin re-exports of pyjax._src.scipy.stats.t)."""
from pyjax._src.scipy.stats.t import (  # noqa: F401
    logpdf, pdf)
