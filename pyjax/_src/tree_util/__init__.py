"""Pytrees: flattening nested containers into leaves and a structure (``PyTreeDef``).

A pure-Python implementation of ``jax.tree_util`` (JAX 0.10.2 semantics).  This module
is the facade of the ``tree_util`` family: it re-exports every name (public and the
private helpers other modules use); the code lives in

* ``tree_util_spec``     -- the spec representation of a structure, spec utilities
* ``tree_util_keys``     -- key path entries (``SequenceKey``, ...) and ``keystr``
* ``tree_util_codegen``  -- generic and generated ``unflatten`` / ``flatten_up_to``
* ``tree_util_treedef``  -- ``PyTreeDef``
* ``tree_util_registry`` -- ``PyTreeRegistry`` (the flatten hot path), the registries
* ``tree_util_core``     -- flatten/unflatten API, registration, built-in custom nodes
* ``tree_util_errors``   -- ``prefix_errors`` / ``equality_errors`` explanations
* ``tree_util_ops``      -- ``tree_map``, reductions, transpose, broadcast, key paths

Each imports only the ones listed above it.  The family imports nothing else from pyjax.

Representation
--------------
A tree structure is stored as a *spec*, a nested tuple built while flattening: a leaf
is ``None``; an interior node is ``(kind, type, aux, *child_specs)``.  Specs are plain
tuples, so hashing and equality of ``PyTreeDef`` (a thin wrapper around a spec) run at
C speed, which keeps ``jit`` cache look-ups cheap.  ``unflatten`` for small structures
that are used more than once is compiled to a specialised Python function
(``def f(l, s): return (l[0], {'a': l[1]})``) cached per structure.

Differences from JAX
--------------------
* ``flatten_one_level_with_keys`` on a namedtuple returns each field's own
  ``GetAttrKey`` (JAX 0.10.2 repeats the first field name for every child).
* ``PyTreeDef.serialize_using_proto`` / ``deserialize_using_proto`` are not provided;
  ``PyTreeDef`` pickles instead.
* ``PyTreeDef.walk`` accepts ``f_leaf=None`` (leaves pass through unchanged).
* Argument-type errors (``SequenceKey("a")``) are plain ``TypeError`` messages, not
  nanobind's "incompatible function arguments"; hash values differ.
* ``build_tree`` (removed from JAX's public API) is kept as
  ``treedef.from_iterable_tree``.
* Very deep trees (nesting beyond Python's recursion limit) raise ``RecursionError``.
"""

from __future__ import annotations

# `Any` resolves the annotation of `Static` (its __module__ is set to this one below).
import sys
from typing import Any  # noqa: F401

from pyjax._src.tree_util.spec import (  # noqa: F401
    _DICT_SORT_ERROR, _HDR, _K_CUSTOM, _K_DATACLASS, _K_DICT, _K_LEAF, _K_LIST,
    _K_NAMEDTUPLE, _K_NONE, _K_TUPLE, _METADATA_EQ_ERROR, _NONE_SPEC,
    _TUPLE_OF_LEAVES_SPECS, _NoneType, _aux_equal, _call_flatten, _custom_flatten_error,
    _new, _node_data, _spec_depth, _spec_from_node_data, _spec_num_leaves,
    _spec_num_nodes, _spec_repr, _spec_skeleton, _tuple_of_leaves_spec,
)
from pyjax._src.tree_util.keys import (  # noqa: F401
    DictKey, FlattenedIndexKey, GetAttrKey, KeyEntry, KeyLeafPair, KeyLeafPairs,
    KeyPath, SequenceKey, _DICT_KEY_CACHE, _SEQ_KEYS, _KeyEntryBase, _dict_key,
    _seq_key, _set_key_value, _simple_entrystr, keystr,
)
from pyjax._src.tree_util.codegen import (  # noqa: F401
    _COMPILE_CACHE_LIMIT, _COMPILE_MAX_DEPTH, _COMPILE_MAX_NODES, _NONE_PREFIX_HINT,
    _Mismatch, _compile_flatten_up_to, _compile_unflatten, _flatten_up_to,
    _from_iterable, _generic_marker, _make_generic_unflatten, _unflatten_generic,
    _unflatten_leaf,
)
from pyjax._src.tree_util.treedef import (  # noqa: F401
    PyTreeDef, _make_treedef, _treedef_from_spec,
)
from pyjax._src.tree_util.registry import (  # noqa: F401
    _COMMON_LEAF_TYPES, _KIND_CACHE_LIMIT, PyTreeRegistry, _NodeEntry, _all_registries,
    _is_namedtuple_type, _registries_by_name, _registry_by_name, default_registry,
    dispatch_registry, none_leaf_registry,
)
from pyjax._src.tree_util.flatten import (  # noqa: F401
    H, Leaf, Partial, PyTree, Static, T, Typ, _HashableCallableShim, _LEAF_TREEDEF,
    _TUPLE_OF_LEAVES, _default_flat, _default_flat_pred, _default_leaf_types,
    _flatten_defaultdict, _flatten_defaultdict_with_keys, _tuple_of_leaves_get,
    _tuple_of_leaves_treedef, all_leaves, build_tree, flatten_one_level,
    flatten_one_level_with_keys, is_tree_node, register_dataclass, register_pytree_node,
    register_pytree_node_class, register_pytree_with_keys,
    register_pytree_with_keys_class, register_static, static, tree_flatten, tree_leaves,
    tree_leaves_checked, tree_structure, tree_unflatten, treedef_children,
    treedef_is_leaf, treedef_is_strict_leaf, treedef_tuple,
)
from pyjax._src.tree_util.errors import (  # noqa: F401
    _LeafMarker, _LeafMarkerMeta, _child_keys, _ensure_inbounds, _equality_errors,
    _key_str, _prefix_error, equality_errors, equality_errors_pytreedef, prefix_errors,
)
from pyjax._src.tree_util.ops import (  # noqa: F401
    Unspecified, _UNSPECIFIED, _parallel_reduce,
    broadcast_flattened_prefix_with_treedef, broadcast_prefix, generate_key_paths,
    tree_all, tree_broadcast, tree_flatten_with_path, tree_leaves_with_path, tree_map,
    tree_map_with_path, tree_reduce, tree_reduce_associative, tree_transpose,
)

__all__ = [
    "DictKey", "FlattenedIndexKey", "GetAttrKey", "KeyEntry", "KeyPath", "Partial",
    "PyTreeDef", "SequenceKey", "all_leaves", "build_tree", "default_registry",
    "flatten_one_level", "flatten_one_level_with_keys", "is_tree_node", "keystr",
    "register_dataclass", "register_pytree_node", "register_pytree_node_class",
    "register_pytree_with_keys", "register_pytree_with_keys_class", "register_static",
    "tree_all", "tree_broadcast", "tree_flatten", "tree_flatten_with_path",
    "tree_leaves", "tree_leaves_with_path", "tree_map", "tree_map_with_path",
    "tree_reduce", "tree_reduce_associative", "tree_structure", "tree_transpose",
    "tree_unflatten", "treedef_children", "treedef_is_leaf", "treedef_tuple",
]


_flatten_one_level_nodes = flatten_one_level
_flatten_one_level_with_keys_nodes = flatten_one_level_with_keys


def _public_leaf_types():
  """Types that are leaves for JAX code though pyjax registers them as nodes internally
  (typed PRNG key arrays, once one exists: see ``tree_util_public``)."""
  pub = sys.modules.get("pyjax._src.tree_util.public")
  return pub._leaf_types if pub is not None else ()


def flatten_one_level(tree):
  """``(children, aux_data)`` of a pytree node; ``ValueError`` for a leaf (typed key
  arrays are leaves, as in JAX)."""
  lt = _public_leaf_types()
  if lt and isinstance(tree, lt):
    raise ValueError(f"can't tree-flatten type: {type(tree)}")
  return _flatten_one_level_nodes(tree)


def flatten_one_level_with_keys(tree):
  """``([(key, child), ...], aux_data)`` of a pytree node; ``ValueError`` for a leaf
  (typed key arrays are leaves, as in JAX)."""
  lt = _public_leaf_types()
  if lt and isinstance(tree, lt):
    raise ValueError(f"can't tree-flatten type: {type(tree)}")
  return _flatten_one_level_with_keys_nodes(tree)


class _RegistryEntry(tuple):
  """``(to_iter, from_iter)`` of a registered node type (JAX's private registry entry)."""
  __slots__ = ()

  def __new__(cls, to_iter, from_iter):
    return tuple.__new__(cls, (to_iter, from_iter))

  to_iter = property(lambda self: self[0])
  from_iter = property(lambda self: self[1])


class _RegistryView:
  """JAX's private ``tree_util._registry``: the pytree node types (the built-in
  containers and every registered type) mapped to their flatten/unflatten functions.  A
  live read-only view of ``default_registry`` (libraries test ``type(x) in _registry``)."""

  _BUILTIN = {
      tuple: _RegistryEntry(lambda xs: (xs, None), lambda _, xs: tuple(xs)),
      list: _RegistryEntry(lambda xs: (xs, None), lambda _, xs: list(xs)),
      dict: _RegistryEntry(lambda d: (tuple(d[k] for k in sorted(d)), tuple(sorted(d))),
                           lambda keys, xs: dict(zip(keys, xs))),
      type(None): _RegistryEntry(lambda _: ((), None), lambda _, xs: None),
  }

  def _entries(self):
    lt = _public_leaf_types()
    return {t: e for t, e in default_registry._entries.items()
            if not (lt and issubclass(t, lt))}

  def __contains__(self, t):
    if t in self._BUILTIN:
      return True
    if t not in default_registry._entries:
      return False
    lt = _public_leaf_types()
    return not (lt and isinstance(t, type) and issubclass(t, lt))

  def __getitem__(self, t):
    if t in self._BUILTIN:
      return self._BUILTIN[t]
    if t not in self:
      raise KeyError(t)
    e = default_registry._entries[t]
    flatten = e.flatten
    if flatten is None:   # a dataclass node: children are its data fields
      data, meta = tuple(e.data_fields), tuple(e.meta_fields)
      flatten = lambda x: (tuple(getattr(x, n) for n in data),
                           tuple(getattr(x, n) for n in meta))
    return _RegistryEntry(flatten, e.unflatten)

  def get(self, t, default=None):
    return self[t] if t in self else default

  def __iter__(self):
    yield from self._BUILTIN
    yield from list(self._entries())

  def keys(self):
    return list(self)

  def __len__(self):
    return len(self._BUILTIN) + len(self._entries())


_registry = _RegistryView()

# Public objects (and the helpers pickles refer to) report this facade as their
# module, as before the split: class reprs and pickles do not depend on which file
# holds the code.
for _obj in (
    DictKey, FlattenedIndexKey, GetAttrKey, Partial, PyTreeDef, PyTreeRegistry,
    SequenceKey, Static, Unspecified, _registry_by_name, _treedef_from_spec, all_leaves,
    broadcast_flattened_prefix_with_treedef, broadcast_prefix, build_tree,
    equality_errors, equality_errors_pytreedef, flatten_one_level,
    flatten_one_level_with_keys, is_tree_node, keystr, prefix_errors,
    register_dataclass, register_pytree_node, register_pytree_node_class,
    register_pytree_with_keys, register_pytree_with_keys_class, register_static,
    static, tree_all, tree_broadcast, tree_flatten, tree_flatten_with_path,
    tree_leaves, tree_leaves_checked, tree_leaves_with_path, tree_map,
    tree_map_with_path, tree_reduce, tree_reduce_associative, tree_structure,
    tree_transpose, tree_unflatten, treedef_children, treedef_is_leaf,
    treedef_is_strict_leaf, treedef_tuple):
  _obj.__module__ = __name__
del _obj
