"""pyjax.scipy.stats.geom (thin re-exports of pyjax._src.scipy.stats.geom)."""
from pyjax._src.scipy.stats.geom import (  # noqa: F401
    logpmf, pmf)
