"""pyjax.scipy.cluster.vq (thin re-exports of pyjax._src.scipy.cluster.vq)."""
from pyjax._src.scipy.cluster.vq import vq  # noqa: F401
