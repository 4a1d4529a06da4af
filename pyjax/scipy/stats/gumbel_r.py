"""pyjax.scipy.stats.gumbel_r (thin re-exports of pyjax._src.scipy.stats.gumbel_r)."""
from pyjax._src.scipy.stats.gumbel_r import (  # noqa: F401
    logpdf, pdf, logcdf, cdf, ppf, sf, logsf)
