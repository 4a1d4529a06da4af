"""Pytree functions under short names (``jax.tree``); implementations live in
``pyjax._src.tree_util``."""

from pyjax._src.tree_util import (
    static as static,
    tree_transpose as transpose,
    tree_unflatten as unflatten,
)

# typed PRNG key arrays are leaves of the public pytree functions, as in JAX
from pyjax._src.tree_util.public import (
    tree_all as all,
    tree_broadcast as broadcast,
    tree_flatten as flatten,
    tree_flatten_with_path as flatten_with_path,
    tree_leaves as leaves,
    tree_leaves_with_path as leaves_with_path,
    tree_map as map,
    tree_map_with_path as map_with_path,
    tree_reduce as reduce,
    tree_reduce_associative as reduce_associative,
    tree_structure as structure,
)
