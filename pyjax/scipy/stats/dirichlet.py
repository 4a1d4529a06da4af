"""pyjax.scipy.stats.dirichlet (thin re-exports of pyjax._src.scipy.stats.dirichlet)."""
from pyjax._src.scipy.stats.dirichlet import (  # noqa: F401
    logpdf, pdf)
