"""pyjax.scipy.ndimage (thin re-exports of pyjax._src.scipy.ndimage)."""
from pyjax._src.scipy.ndimage import map_coordinates  # noqa: F401
