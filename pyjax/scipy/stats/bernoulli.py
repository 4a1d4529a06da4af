"""pyjax.scipy.stats.bernoulli (thin re-exports of pyjax._src.scipy.stats.bernoulli)."""
from pyjax._src.scipy.stats.bernoulli import (  # noqa: F401
    logpmf, pmf, cdf, ppf)
