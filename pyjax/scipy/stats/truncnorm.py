"""pyjax.scipy.stats.truncnorm (thin re-exports of pyjax._src.scipy.stats.truncnorm)."""
from pyjax._src.scipy.stats.truncnorm import (  # noqa: F401
    logpdf, pdf, logsf, sf, logcdf, cdf)
