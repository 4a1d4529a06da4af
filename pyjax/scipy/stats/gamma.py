"""pyjax.scipy.stats.gamma (thin re-exports of pyjax._src.scipy.stats.gamma)."""
from pyjax._src.scipy.stats.gamma import (  # noqa: F401
    logpdf, pdf, cdf, logcdf, sf, logsf)
