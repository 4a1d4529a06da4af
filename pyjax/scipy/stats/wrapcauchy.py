"""pyjax.scipy.stats.wrapcauchy (thin re-exports of pyjax._src.scipy.stats.wrapcauchy)."""
from pyjax._src.scipy.stats.wrapcauchy import (  # noqa: F401
    logpdf, pdf)
