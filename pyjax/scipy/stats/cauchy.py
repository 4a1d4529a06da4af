"""pyjax.scipy.stats.cauchy (thin re-exports of pyjax._src.scipy.stats.cauchy)."""
from pyjax._src.scipy.stats.cauchy import (  # noqa: F401
    logpdf, pdf, cdf, logcdf, sf, logsf, isf, ppf)
