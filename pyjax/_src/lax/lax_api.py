"""Every public lax function by its JAX name, gathered from the family modules.

``pyjax.lax`` re-exports this module; library code (jax.numpy, jax.scipy) imports it as
``from pyjax._src.lax import lax_api as lax`` to call lax functions by their JAX names.
"""
from pyjax._src.lax.elementwise import *  # noqa: F401,F403
from pyjax._src.lax.shapes import *  # noqa: F401,F403
from pyjax._src.lax.slicing import *  # noqa: F401,F403
from pyjax._src.lax.reductions import *  # noqa: F401,F403
from pyjax._src.lax.windowed import *  # noqa: F401,F403
from pyjax._src.lax.dot import *  # noqa: F401,F403
from pyjax._src.lax.convolution import *  # noqa: F401,F403
from pyjax._src.lax.sorting import *  # noqa: F401,F403
from pyjax._src.lax.shapes import zeros_like_array  # noqa: F401  (internal, not in jax.lax)
from pyjax._src.lax.elementwise import _convert_element_type  # noqa: F401
from pyjax._src.lax import linalg  # noqa: F401,E402  (lax.linalg namespace)
from pyjax._src.lax.parallel import *  # noqa: F401,F403  (collectives over vmap axis names)
from pyjax._src.lax.control_flow import *  # noqa: F401,F403  (cond, switch, while_loop, fori_loop, scan, map, associative_scan)
from pyjax._src.lax.fft import FftType, fft, fft_p  # noqa: F401,E402
from pyjax._src.lax.lax_api_extra import *  # noqa: F401,F403,E402  (*_p names, misc, solvers, ...)
