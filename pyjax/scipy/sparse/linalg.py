"""pyjax.scipy.sparse.linalg (thin re-exports of pyjax._src.scipy.sparse.linalg)."""
from pyjax._src.scipy.sparse.linalg import bicgstab, cg, gmres  # noqa: F401
