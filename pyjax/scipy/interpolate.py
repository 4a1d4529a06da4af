"""pyjax.scipy.interpolate (thin re-exports of pyjax._src.scipy.interpolate)."""
from pyjax._src.scipy.interpolate import RegularGridInterpolator  # noqa: F401
