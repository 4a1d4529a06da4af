"""Operations over whole trees: map, reduce, transpose, broadcast, and their key-path
variants."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from pyjax._src.tree_util.flatten import T, tree_flatten, tree_leaves, tree_structure
from pyjax._src.tree_util.errors import _prefix_error, prefix_errors
from pyjax._src.tree_util.keys import KeyPath
from pyjax._src.tree_util.registry import default_registry
from pyjax._src.tree_util.spec import _HDR, _node_data, _spec_num_leaves
from pyjax._src.tree_util.treedef import PyTreeDef


# -- map / reduce / transpose / broadcast ------------------------------------------

def tree_map(f: Callable[..., Any], tree: Any, *rest: Any,
             is_leaf: Callable[[Any], bool] | None = None) -> Any:
  """Maps `f` over the leaves of `tree` (and the matching subtrees of `rest`).

  Each tree in `rest` must have `tree`'s structure as a prefix; mismatches raise
  ``ValueError("pytree structure error: ...")`` like JAX.
  """
  leaves, treedef = tree_flatten(tree, is_leaf)
  if not rest:
    return treedef.unflatten([f(x) for x in leaves])
  all_leaves_ = [leaves]
  for r in rest:
    try:
      all_leaves_.append(treedef.flatten_up_to(r))
    except Exception as e:
      err = next(_prefix_error((), tree, r, is_leaf), None)
      raise (err("tree_map tree") if err is not None else e) from None
  return treedef.unflatten([f(*xs) for xs in zip(*all_leaves_)])


class Unspecified:
  pass


_UNSPECIFIED = Unspecified()


def tree_reduce(function: Callable[[T, Any], T], tree: Any,
                initializer: Any = _UNSPECIFIED,
                is_leaf: Callable[[Any], bool] | None = None) -> T:
  """``functools.reduce`` over the leaves of `tree`."""
  if isinstance(initializer, Unspecified):
    return functools.reduce(function, tree_leaves(tree, is_leaf=is_leaf))
  return functools.reduce(function, tree_leaves(tree, is_leaf=is_leaf), initializer)


def _parallel_reduce(sequence, operation, identity=_UNSPECIFIED):
  length = len(sequence)
  if length == 0:
    if isinstance(identity, Unspecified):
      raise TypeError("Must specify identity for parallel reduction of empty sequence.")
    return identity
  if length == 1:
    return sequence[0]
  mid = length // 2
  return operation(_parallel_reduce(sequence[:mid], operation, identity),
                   _parallel_reduce(sequence[mid:], operation, identity))


def tree_reduce_associative(operation: Callable[[T, T], T], tree: Any, *,
                            identity: Any = _UNSPECIFIED,
                            is_leaf: Callable[[Any], bool] | None = None) -> T:
  """Reduces the leaves with an associative `operation` as a balanced binary tree."""
  return _parallel_reduce(tree_leaves(tree, is_leaf=is_leaf), operation, identity)


def tree_all(tree: Any, *, is_leaf: Callable[[Any], bool] | None = None) -> bool:
  """``all(tree_leaves(tree))``."""
  return all(tree_leaves(tree, is_leaf=is_leaf))


def tree_transpose(outer_treedef: PyTreeDef, inner_treedef: PyTreeDef | None,
                   pytree_to_transpose: Any) -> Any:
  """Turns an outer-structure tree of inner-structure trees inside out."""
  flat, treedef = tree_flatten(pytree_to_transpose)
  if inner_treedef is None:
    inner_treedef = tree_structure(
        outer_treedef.flatten_up_to(pytree_to_transpose)[0])
  inner_size = inner_treedef.num_leaves
  outer_size = outer_treedef.num_leaves
  if treedef.num_leaves != inner_size * outer_size:
    expected_treedef = outer_treedef.compose(inner_treedef)
    raise TypeError(f"Mismatch\n{treedef}\n != \n{expected_treedef}")
  it = iter(flat)
  lol = [[next(it) for _ in range(inner_size)] for __ in range(outer_size)]
  subtrees = [outer_treedef.unflatten(col) for col in zip(*lol)]
  return inner_treedef.unflatten(subtrees)


def tree_broadcast(prefix_tree: Any, full_tree: Any,
                   is_leaf: Callable[[Any], bool] | None = None) -> Any:
  """Broadcasts the leaves of `prefix_tree` over the matching subtrees of
  `full_tree`, returning a tree with `full_tree`'s structure."""
  broadcast_leaves = broadcast_prefix(prefix_tree, full_tree, is_leaf=is_leaf)
  return tree_structure(full_tree).unflatten(broadcast_leaves)


def broadcast_prefix(prefix_tree: Any, full_tree: Any,
                     is_leaf: Callable[[Any], bool] | None = None) -> list[Any]:
  """Leaves of `prefix_tree`, each repeated once per leaf of its subtree in
  `full_tree` (a flat list with `full_tree`'s leaf count)."""
  result = []

  def add_leaves(x, subtree):
    result.extend([x] * tree_structure(subtree).num_leaves)
  try:
    tree_map(add_leaves, prefix_tree, full_tree, is_leaf=is_leaf)
  except ValueError:
    e, *_ = prefix_errors(prefix_tree, full_tree)
    raise e("broadcast_prefix prefix_tree") from None
  return result


def broadcast_flattened_prefix_with_treedef(prefix_leaves: list[Any],
                                            prefix_treedef: PyTreeDef,
                                            full_treedef: PyTreeDef) -> list[Any]:
  """Like `broadcast_prefix` but on already-flattened prefix leaves and treedefs."""
  out = []
  it = iter(prefix_leaves)

  def go(pspec, fspec):
    if pspec is None:
      out.extend([next(it)] * (1 if fspec is None else _spec_num_leaves(fspec)))
      return
    if fspec is None:
      raise ValueError("`prefix_treedef` is not a prefix of `full_treedef`")
    if _node_data(pspec) != _node_data(fspec):
      raise ValueError(f"expected {_node_data(fspec)}, got {_node_data(pspec)}")
    if len(pspec) != len(fspec):
      raise ValueError("`prefix_treedef` is not a prefix of `full_treedef`")
    for pc, fc in zip(pspec[_HDR:], fspec[_HDR:]):
      go(pc, fc)
  go(prefix_treedef._spec, full_treedef._spec)
  return out


# -- key paths ---------------------------------------------------------------------

def tree_flatten_with_path(tree: Any, is_leaf: Callable[..., bool] | None = None,
                           is_leaf_takes_path: bool = False
                           ) -> tuple[list[tuple[KeyPath, Any]], PyTreeDef]:
  """Like `tree_flatten` but returns ``[(key_path, leaf), ...]``.

  With ``is_leaf_takes_path=True`` the predicate is called as ``is_leaf(path, x)``.
  """
  pred = is_leaf
  if is_leaf is not None and not is_leaf_takes_path:
    pred = lambda _, x: is_leaf(x)
  return default_registry.flatten_with_path(tree, pred)


def tree_leaves_with_path(tree: Any, is_leaf: Callable[..., bool] | None = None,
                          is_leaf_takes_path: bool = False
                          ) -> list[tuple[KeyPath, Any]]:
  """``[(key_path, leaf), ...]`` for every leaf of `tree`."""
  return tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path)[0]


generate_key_paths = tree_leaves_with_path


def tree_map_with_path(f: Callable[..., Any], tree: Any, *rest: Any,
                       is_leaf: Callable[..., bool] | None = None,
                       is_leaf_takes_path: bool = False) -> Any:
  """Like `tree_map` but `f` receives each leaf's key path first: ``f(path, x, *r)``."""
  keypath_leaves, treedef = tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path)
  columns = [[p for p, _ in keypath_leaves], [x for _, x in keypath_leaves]]
  for r in rest:
    try:
      columns.append(treedef.flatten_up_to(r))
    except Exception as e:
      err = next(_prefix_error((), tree, r, None if is_leaf_takes_path else is_leaf),
                 None)
      raise (err("tree_map_with_path tree") if err is not None else e) from None
  return treedef.unflatten([f(*xs) for xs in zip(*columns)])
