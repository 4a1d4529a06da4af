"""pyjax.numpy.linalg: NumPy's linalg on pyjax arrays (re-exports of pyjax._src.numpy.linalg)."""
from pyjax._src.numpy.linalg import *  # noqa: F401,F403
