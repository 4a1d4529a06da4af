"""pyjax.scipy.stats.gennorm (thin re-exports of pyjax._src.scipy.stats.gennorm)."""
from pyjax._src.scipy.stats.gennorm import (  # noqa: F401
    logpdf, cdf, pdf)
