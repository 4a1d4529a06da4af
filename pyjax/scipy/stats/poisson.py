"""pyjax.scipy.stats.poisson (thin re-exports of pyjax._src.scipy.stats.poisson)."""
from pyjax._src.scipy.stats.poisson import (  # noqa: F401
    logpmf, pmf, cdf, entropy)
