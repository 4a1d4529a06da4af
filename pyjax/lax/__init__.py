"""pyjax.lax: the primitive operations (thin re-exports of pyjax._src.lax)."""
from pyjax._src.lax.lax_api import *  # noqa: F401,F403  (lax_api.__all__: every public name)
from pyjax._src.lax.lax_api import __all__  # noqa: F401
