"""``jax.experimental.shard_map`` (the older home of ``jax.shard_map``)."""
from pyjax._src.shard_map import shard_map  # noqa: F401
