"""pyjax.scipy.spatial."""
from pyjax.scipy.spatial import transform  # noqa: F401
