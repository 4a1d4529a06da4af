"""pyjax.lax: the primitive operations (thin re-exports of pyjax._src.lax)."""
from pyjax._src.lax.elementwise import *  # noqa: F401,F403
from pyjax._src.lax.elementwise import __all__ as _a0
from pyjax._src.lax.shapes import *  # noqa: F401,F403
from pyjax._src.lax.slicing import *  # noqa: F401,F403
from pyjax._src.lax.reductions import *  # noqa: F401,F403
from pyjax._src.lax.windowed import *  # noqa: F401,F403
from pyjax._src.lax.dot import *  # noqa: F401,F403
from pyjax._src.lax.convolution import *  # noqa: F401,F403
from pyjax._src.lax.sorting import *  # noqa: F401,F403
