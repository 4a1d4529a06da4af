"""pyjax.scipy.stats.expon (thin re-exports of pyjax._src.scipy.stats.expon)."""
from pyjax._src.scipy.stats.expon import (  # noqa: F401
    logpdf, pdf, cdf, logcdf, logsf, sf, ppf)
