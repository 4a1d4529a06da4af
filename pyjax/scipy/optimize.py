"""pyjax.scipy.optimize (thin re-exports of pyjax._src.scipy.optimize)."""
from pyjax._src.scipy.optimize import OptimizeResults, minimize  # noqa: F401
