"""pyjax.scipy.stats.logistic (thin re-exports of pyjax._src.scipy.stats.logistic)."""
from pyjax._src.scipy.stats.logistic import (  # noqa: F401
    logpdf, pdf, ppf, sf, isf, cdf)
