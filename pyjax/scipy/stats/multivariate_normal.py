"""pyjax.scipy.stats.multivariate_normal (thin re-exports of pyjax._src.scipy.stats.multivariate_normal)."""
from pyjax._src.scipy.stats.multivariate_normal import (  # noqa: F401
    logpdf, pdf)
