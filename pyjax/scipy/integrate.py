"""pyjax.scipy.integrate (thin re-exports of pyjax._src.scipy.integrate)."""
from pyjax._src.scipy.integrate import trapezoid  # noqa: F401
