"""pyjax.scipy.stats.chi2 (thin re-exports of pyjax._src.scipy.stats.chi2)."""
from pyjax._src.scipy.stats.chi2 import (  # noqa: F401
    logpdf, pdf, cdf, logcdf, sf, logsf)
