"""pyjax.scipy.stats.binom (thin re-exports of pyjax._src.scipy.stats.binom)."""
from pyjax._src.scipy.stats.binom import (  # noqa: F401
    logpmf, pmf)
