"""``jax.extend``: access to the machinery under pyjax's transformations (no
compatibility guarantee across releases, as in JAX).  Differences from JAX: the
``mlir``, ``lowering``, ``pallas``, ``sharding`` and ``xla`` submodules do not exist
(pyjax does not lower to MLIR); ``ifrt_programs`` builds program descriptions that no
pyjax backend executes."""
from pyjax.extend import (  # noqa: F401
    backend, core, linear_util, random, source_info_util)
