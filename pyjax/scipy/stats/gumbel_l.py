"""pyjax.scipy.stats.gumbel_l (thin re-exports of pyjax._src.scipy.stats.gumbel_l)."""
from pyjax._src.scipy.stats.gumbel_l import (  # noqa: F401
    logpdf, pdf, logcdf, cdf, ppf, sf, logsf)
