"""pyjax.scipy.sparse."""
from pyjax.scipy.sparse import linalg  # noqa: F401
