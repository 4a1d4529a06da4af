"""The pytree functions of the public modules ``jax.tree_util`` and ``jax.tree``: JAX's
semantics, with typed PRNG key arrays as leaves.

Inside pyjax a typed key array (``PRNGKeyArray``) is a pytree node whose one leaf is its
raw ``uint32`` key data: that is how ``jit``, ``vmap``, ``grad`` and the control-flow
primitives carry keys without knowing about them (see ``pyjax._src.random.keys``).  In
JAX a key array is a leaf, and programs see that (``jax.tree.leaves(key) == [key]``,
``jax.tree.map(f, keys)`` calls ``f`` on the keys).  The functions here are the
internal ones (``pyjax._src.tree_util``) with key arrays added to ``is_leaf``.  Until a
key array has been created in the process they are the internal functions' fast paths
unchanged; after that, flattening takes the ``is_leaf`` path (one predicate call per
node).
"""
from __future__ import annotations

from typing import Any, Callable

from pyjax._src import tree_util as _tu

__all__ = ["all_leaves", "tree_all", "tree_broadcast", "tree_flatten",
           "tree_flatten_with_path", "tree_leaves", "tree_leaves_with_path", "tree_map",
           "tree_map_with_path", "tree_reduce", "tree_reduce_associative", "tree_structure",
           "note_leaf_type"]

_leaf_types: tuple = ()


def note_leaf_type(typ):
  """Make ``typ`` (and its subclasses) a leaf for the public pytree functions even though
  it is registered as a node internally.  Called when the first key array is made."""
  global _leaf_types
  if typ not in _leaf_types:
    _leaf_types = _leaf_types + (typ,)


def _pred(is_leaf):
  lt = _leaf_types
  if not lt:
    return is_leaf
  if is_leaf is None:
    return lambda x: isinstance(x, lt)
  return lambda x: isinstance(x, lt) or is_leaf(x)


def _path_pred(is_leaf, takes_path):
  lt = _leaf_types
  if not lt:
    return is_leaf
  if is_leaf is None:
    return lambda *a: isinstance(a[-1], lt)
  if takes_path:
    return lambda p, x: isinstance(x, lt) or is_leaf(p, x)
  return lambda x: isinstance(x, lt) or is_leaf(x)


def tree_flatten(tree: Any, is_leaf: Callable[[Any], bool] | None = None):
  """``jax.tree_util.tree_flatten``: ``(leaves, treedef)``; typed keys are leaves."""
  return _tu.tree_flatten(tree, _pred(is_leaf))


def tree_leaves(tree: Any, is_leaf: Callable[[Any], bool] | None = None):
  """``jax.tree_util.tree_leaves``; typed keys are leaves."""
  return _tu.tree_leaves(tree, _pred(is_leaf))


def tree_structure(tree: Any, is_leaf: Callable[[Any], bool] | None = None):
  """``jax.tree_util.tree_structure``; typed keys are leaves."""
  return _tu.tree_structure(tree, _pred(is_leaf))


def tree_map(f: Callable[..., Any], tree: Any, *rest: Any,
             is_leaf: Callable[[Any], bool] | None = None):
  """``jax.tree_util.tree_map``; typed keys are leaves."""
  return _tu.tree_map(f, tree, *rest, is_leaf=_pred(is_leaf))


def tree_all(tree: Any, *, is_leaf: Callable[[Any], bool] | None = None):
  """``jax.tree_util.tree_all``; typed keys are leaves."""
  return _tu.tree_all(tree, is_leaf=_pred(is_leaf))


def tree_broadcast(prefix_tree: Any, full_tree: Any,
                   is_leaf: Callable[[Any], bool] | None = None):
  """``jax.tree_util.tree_broadcast``; typed keys are leaves."""
  return _tu.tree_broadcast(prefix_tree, full_tree, _pred(is_leaf))


def tree_reduce(function, tree, initializer=_tu.Unspecified(), is_leaf=None):
  """``jax.tree_util.tree_reduce``; typed keys are leaves."""
  if isinstance(initializer, _tu.Unspecified):
    return _tu.tree_reduce(function, tree, is_leaf=_pred(is_leaf))
  return _tu.tree_reduce(function, tree, initializer, is_leaf=_pred(is_leaf))


def tree_reduce_associative(operation, tree, *, identity=_tu.Unspecified(), is_leaf=None):
  """``jax.tree_util.tree_reduce_associative``; typed keys are leaves."""
  if isinstance(identity, _tu.Unspecified):
    return _tu.tree_reduce_associative(operation, tree, is_leaf=_pred(is_leaf))
  return _tu.tree_reduce_associative(operation, tree, identity=identity,
                                     is_leaf=_pred(is_leaf))


def all_leaves(iterable, is_leaf=None):
  """``jax.tree_util.all_leaves``; typed keys are leaves."""
  return _tu.all_leaves(iterable, _pred(is_leaf))


def tree_flatten_with_path(tree, is_leaf=None, is_leaf_takes_path=False):
  """``jax.tree_util.tree_flatten_with_path``; typed keys are leaves."""
  return _tu.tree_flatten_with_path(tree, _path_pred(is_leaf, is_leaf_takes_path),
                                    is_leaf_takes_path)


def tree_leaves_with_path(tree, is_leaf=None, is_leaf_takes_path=False):
  """``jax.tree_util.tree_leaves_with_path``; typed keys are leaves."""
  return _tu.tree_leaves_with_path(tree, _path_pred(is_leaf, is_leaf_takes_path),
                                   is_leaf_takes_path)


def tree_map_with_path(f, tree, *rest, is_leaf=None, is_leaf_takes_path=False):
  """``jax.tree_util.tree_map_with_path``; typed keys are leaves."""
  return _tu.tree_map_with_path(f, tree, *rest,
                                is_leaf=_path_pred(is_leaf, is_leaf_takes_path),
                                is_leaf_takes_path=is_leaf_takes_path)
