"""The rest of ``jax.lax``'s public names (re-exported by ``lax_api``): the primitives
under their ``*_p`` names and the smaller families (misc, tokens, higher-order functions,
solvers, approximate top-k, stateful RNG, ragged/scaled dots, patches, sharding and
collective helpers)."""
from pyjax._src.lax.primitive_names import *  # noqa: F401,F403
from pyjax._src.lax.misc import *  # noqa: F401,F403
from pyjax._src.lax.tokens import *  # noqa: F401,F403
from pyjax._src.lax.higher_order import *  # noqa: F401,F403
from pyjax._src.lax.solvers import *  # noqa: F401,F403
from pyjax._src.lax.ann import *  # noqa: F401,F403
from pyjax._src.lax.rng import *  # noqa: F401,F403
from pyjax._src.lax.ragged import *  # noqa: F401,F403
from pyjax._src.lax.conv_patches import *  # noqa: F401,F403
from pyjax._src.lax.sharding import *  # noqa: F401,F403
from pyjax._src.lax.parallel_extra import *  # noqa: F401,F403
from pyjax._src.lax.select_and_scatter import *  # noqa: F401,F403
