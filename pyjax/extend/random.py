"""``jax.extend.random``: the threefry PRNG implementation and its hash primitive.
Differences from JAX: ``define_prng_impl``, ``seed_with_impl`` and the ``rbg``
implementations are absent (only threefry2x32 exists in pyjax)."""
from pyjax._src.random.prng import (  # noqa: F401
    threefry2x32_p, threefry_2x32, threefry_prng_impl)
