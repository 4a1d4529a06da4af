"""pyjax.scipy.stats.nbinom (thin re-exports of pyjax._src.scipy.stats.nbinom)."""
from pyjax._src.scipy.stats.nbinom import (  # noqa: F401
    logpmf, pmf)
