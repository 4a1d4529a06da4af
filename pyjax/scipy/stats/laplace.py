"""pyjax.scipy.stats.laplace (thin re-exports of pyjax._src.scipy.stats.laplace)."""
from pyjax._src.scipy.stats.laplace import (  # noqa: F401
    logpdf, pdf, cdf)
