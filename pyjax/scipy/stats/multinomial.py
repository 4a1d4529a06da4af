"""pyjax.scipy.stats.multinomial (thin re-exports of pyjax._src.scipy.stats.multinomial)."""
from pyjax._src.scipy.stats.multinomial import (  # noqa: F401
    logpmf, pmf)
