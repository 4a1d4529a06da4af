"""pyjax.scipy.stats.norm (thin re-exports of pyjax._src.scipy.stats.norm)."""
from pyjax._src.scipy.stats.norm import (  # noqa: F401
    logpdf, pdf, cdf, logcdf, ppf, logsf, sf, isf)
