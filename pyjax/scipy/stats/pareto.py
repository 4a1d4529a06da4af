"""pyjax.scipy.stats.pareto (thin re-exports of pyjax._src.scipy.stats.pareto)."""
from pyjax._src.scipy.stats.pareto import (  # noqa: F401
    logpdf, pdf, cdf, logcdf, logsf, sf, ppf)
