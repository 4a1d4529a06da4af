"""Structure-mismatch explanations (``prefix_errors``, ``equality_errors``) used by
``tree_map`` and by transformations, and the argnums bounds check."""

from __future__ import annotations

import difflib
import textwrap
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from pyjax._src.tree_util.flatten import (
    flatten_one_level, flatten_one_level_with_keys, tree_structure, tree_unflatten,
    treedef_is_strict_leaf,
)
from pyjax._src.tree_util.keys import KeyPath, keystr
from pyjax._src.tree_util.treedef import PyTreeDef


def _child_keys(pytree: Any) -> KeyPath:
  return tuple(k for k, _ in flatten_one_level_with_keys(pytree)[0])


def prefix_errors(prefix_tree: Any, full_tree: Any,
                  is_leaf: Callable[[Any], bool] | None = None,
                  ) -> list[Callable[[str], ValueError]]:
  """Explains why `prefix_tree` is not a prefix of `full_tree`: a list of functions
  ``name -> ValueError`` (empty if it is a prefix)."""
  return list(_prefix_error((), prefix_tree, full_tree, is_leaf))


def _key_str(k) -> str:
  return str(getattr(k, "key", getattr(k, "idx", getattr(k, "name", k))))


def _prefix_error(key_path, prefix_tree, full_tree, is_leaf=None):
  # A leaf is a prefix of any tree.
  if treedef_is_strict_leaf(tree_structure(prefix_tree, is_leaf=is_leaf)):
    return
  if type(prefix_tree) != type(full_tree):
    yield lambda name: ValueError(
        "pytree structure error: different types at key path\n"
        f"    {name}{keystr(key_path)}\n"
        f"At that key path, the prefix pytree {name} has a subtree of type\n"
        f"    {type(prefix_tree)}\n"
        f"but at the same key path the full pytree has a subtree of different type\n"
        f"    {type(full_tree)}.")
    return
  prefix_children, prefix_meta = flatten_one_level(prefix_tree)
  full_children, full_meta = flatten_one_level(full_tree)
  prefix_children = tuple(prefix_children)
  full_children = tuple(full_children)
  prefix_keys = _child_keys(prefix_tree)
  full_keys = _child_keys(full_tree)
  if isinstance(prefix_tree, (list, tuple)):
    if len(prefix_tree) != len(full_tree):
      ty = type(prefix_tree)
      yield lambda name: ValueError(
          f"pytree structure error: different lengths of {ty.__name__} at key path\n"
          f"    {name}{keystr(key_path)}\n"
          f"At that key path, the prefix pytree {name} has a subtree of type "
          f"{ty.__name__} of length {len(prefix_tree)}, but the full pytree "
          f"has a subtree of the same type but of length {len(full_tree)}.")
      return
  else:
    try:
      diff = set(prefix_keys).symmetric_difference(set(full_keys))
    except Exception:
      diff = None
    if len(prefix_children) != len(full_children):
      yield lambda name: ValueError(
          "pytree structure error: different numbers of pytree children at key path\n"
          f"    {name}{keystr(key_path)}\n"
          f"At that key path, the prefix pytree {name} has a subtree of type\n"
          f"    {type(prefix_tree)}\n"
          f"with {len(prefix_children)} child keys\n"
          f"    {' '.join(_key_str(k) for k in prefix_keys)}\n"
          f"but at the same key path the full pytree has a subtree of the same "
          f"type but with {len(full_children)} child keys\n"
          f"    {' '.join(_key_str(k) for k in full_keys)}\n"
          + ("" if diff is None else
             f"so the symmetric difference on key sets is\n"
             f"    {' '.join(_key_str(k) for k in diff)}"))
      return
  try:
    meta_differs = bool(prefix_meta != full_meta)
  except Exception:
    meta_differs = True
  if meta_differs:
    prefix_meta_str = str(prefix_meta)
    full_meta_str = str(full_meta)
    metadata_diff = textwrap.indent(
        "\n".join(difflib.ndiff(prefix_meta_str.splitlines(),
                                full_meta_str.splitlines())),
        prefix="    ")
    yield lambda name: ValueError(
        "pytree structure error: different pytree metadata at key path\n"
        f"    {name}{keystr(key_path)}\n"
        f"At that key path, the prefix pytree {name} has a subtree of type\n"
        f"    {type(prefix_tree)}\n"
        f"with metadata\n"
        f"    {prefix_meta_str}\n"
        f"but at the same key path the full pytree has a subtree of the same "
        f"type but with metadata\n"
        f"    {full_meta_str}\n"
        f"so the diff in the metadata at these pytree nodes is\n"
        f"{metadata_diff}")
    return
  for k, t1, t2 in zip(prefix_keys, prefix_children, full_children):
    yield from _prefix_error((*key_path, k), t1, t2, is_leaf)


def equality_errors(tree1: Any, tree2: Any,
                    is_leaf: Callable[[Any], bool] | None = None,
                    ) -> Iterable[tuple[KeyPath, str, str, str]]:
  """Describes structural differences between two pytrees as
  ``(key_path, thing1, thing2, explanation)`` tuples."""
  yield from _equality_errors((), tree1, tree2, is_leaf)


def equality_errors_pytreedef(tree1: PyTreeDef, tree2: PyTreeDef
                              ) -> Iterable[tuple[KeyPath, str, str, str]]:
  """Like `equality_errors` but on treedefs."""
  leaf = _LeafMarker()
  return equality_errors(tree_unflatten(tree1, [leaf] * tree1.num_leaves),
                         tree_unflatten(tree2, [leaf] * tree2.num_leaves))


class _LeafMarkerMeta(type):
  def __repr__(cls):
    return "pytree leaf"


class _LeafMarker(metaclass=_LeafMarkerMeta):
  pass


def _equality_errors(path, t1, t2, is_leaf):
  if (treedef_is_strict_leaf(tree_structure(t1, is_leaf=is_leaf)) and
      treedef_is_strict_leaf(tree_structure(t2, is_leaf=is_leaf))):
    return
  if type(t1) != type(t2):
    yield path, str(type(t1)), str(type(t2)), "their Python types differ"
    return
  if isinstance(t1, (list, tuple)):
    if len(t1) != len(t2):
      yield (path,
             f"{type(t1).__name__} of length {len(t1)}",
             f"{type(t2).__name__} of length {len(t2)}",
             "the lengths do not match")
      return
  t1_children, t1_meta = flatten_one_level(t1)
  t2_children, t2_meta = flatten_one_level(t2)
  t1_children = tuple(t1_children)
  t2_children = tuple(t2_children)
  t1_keys, t2_keys = _child_keys(t1), _child_keys(t2)
  try:
    diff = " ".join(repr(k.key) for k in
                    set(t1_keys).symmetric_difference(set(t2_keys)))
  except Exception:
    diff = ""
  if len(t1_children) != len(t2_children):
    yield (path,
           f"{type(t1)} with {len(t1_children)} child"
           f"{'ren' if len(t1_children) > 1 else ''}",
           f"{type(t2)} with {len(t2_children)} child"
           f"{'ren' if len(t2_children) > 1 else ''}",
           "the numbers of children do not match"
           + (diff and f", with the symmetric difference of key sets: {{{diff}}}"))
    return
  try:
    meta_differs = bool(t1_meta != t2_meta)
  except Exception:
    meta_differs = True
  if meta_differs:
    yield (path,
           f"{type(t1)} with pytree metadata {t1_meta}",
           f"{type(t2)} with pytree metadata {t2_meta}",
           "the pytree node metadata does not match")
    return
  for k, c1, c2 in zip(t1_keys, t1_children, t2_children):
    yield from _equality_errors((*path, k), c1, c2, is_leaf)


# -- argnums -----------------------------------------------------------------------

def _ensure_inbounds(allow_invalid: bool, num_args: int, argnums: Sequence[int]
                     ) -> tuple[int, ...]:
  """Checks argnums are within bounds and resolves negative ones."""
  result = []
  for i in argnums:
    if i >= num_args and allow_invalid:
      continue
    if not -num_args <= i < num_args:
      raise ValueError(
          "Positional argument indices, e.g. for `static_argnums`, must have "
          "value greater than or equal to -len(args) and less than len(args), "
          f"but got value {i} for len(args) == {num_args}.")
    result.append(i % num_args)
  return tuple(result)
