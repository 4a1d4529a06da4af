"""pyjax.scipy.spatial.transform (thin re-exports of pyjax._src.scipy.spatial.transform)."""
from pyjax._src.scipy.spatial.transform import Rotation, Slerp  # noqa: F401
