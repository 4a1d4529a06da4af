"""pyjax.scipy.stats.uniform (thin re-exports of pyjax._src.scipy.stats.uniform)."""
from pyjax._src.scipy.stats.uniform import (  # noqa: F401
    logpdf, pdf, cdf, ppf)
