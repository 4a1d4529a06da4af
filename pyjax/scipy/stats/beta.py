"""pyjax.scipy.stats.beta (thin re-exports of pyjax._src.scipy.stats.beta)."""
from pyjax._src.scipy.stats.beta import (  # noqa: F401
    logpdf, pdf, cdf, logcdf, sf, logsf)
