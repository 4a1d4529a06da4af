"""pyjax.scipy.stats.betabinom (thin re-exports of pyjax._src.scipy.stats.betabinom)."""
from pyjax._src.scipy.stats.betabinom import (  # noqa: F401
    logpmf, pmf)
