"""pyjax.scipy.cluster."""
from pyjax.scipy.cluster import vq  # noqa: F401
