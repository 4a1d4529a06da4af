"""pyjax.lax.linalg: linear-algebra primitives (thin re-exports of pyjax._src.lax.linalg)."""
from pyjax._src.lax.linalg import *  # noqa: F401,F403
