"""Pytrees: flattening nested containers into leaves and a structure (``PyTreeDef``).

A pure-Python implementation of ``jax.tree_util`` (JAX 0.10.2 semantics).  This is a
leaf module: it imports nothing from pyjax.

Representation
--------------
A tree structure is stored as a *spec*, a nested tuple built while flattening:

* a leaf is ``None``;
* an interior node is ``(kind, type, aux, *child_specs)`` where ``kind`` is one of the
  ``_K_*`` constants below and ``aux`` is the node's static data (the sorted key tuple
  of a dict, the aux data of a custom node, the meta-field values of a dataclass).

Specs are plain tuples, so hashing and equality of ``PyTreeDef`` (a thin wrapper around a
spec) run at C speed, which keeps ``jit`` cache look-ups cheap.  ``unflatten`` for small
structures that are used more than once is compiled to a specialised Python function
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

import collections
import dataclasses
import difflib
import functools
import keyword
import operator
import textwrap
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any, TypeVar

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

T = TypeVar("T")
Typ = TypeVar("Typ", bound=type)
H = TypeVar("H", bound=Hashable)

Leaf = Any
PyTree = Any
KeyEntry = TypeVar("KeyEntry", bound=Any)
KeyLeafPair = tuple[KeyEntry, Any]
KeyLeafPairs = Iterable[KeyLeafPair]
KeyPath = tuple[KeyEntry, ...]

# Node kinds.  _K_LEAF only ever appears in a registry's kind table, never in a spec.
_K_LEAF = 0
_K_NONE = 1
_K_TUPLE = 2
_K_LIST = 3
_K_DICT = 4
_K_NAMEDTUPLE = 5
_K_CUSTOM = 6
_K_DATACLASS = 7

_NoneType = type(None)
_NONE_SPEC = (_K_NONE, _NoneType, None)
_HDR = 3  # number of header fields in an interior spec: (kind, type, aux)
_TUPLE_OF_LEAVES_SPECS = [(_K_TUPLE, tuple, None) + (None,) * _n for _n in range(65)]


def _tuple_of_leaves_spec(n):
  return (_TUPLE_OF_LEAVES_SPECS[n] if n <= 64
          else (_K_TUPLE, tuple, None) + (None,) * n)


_new = object.__new__

# Types known to be leaves, pre-seeded into every registry's kind table.
_COMMON_LEAF_TYPES = (int, float, bool, complex, str, bytes, type(Ellipsis), type,
                      slice, range)
_KIND_CACHE_LIMIT = 20000  # stop caching classification of new leaf types beyond this

_METADATA_EQ_ERROR = (
    "Exception raised while checking equality of metadata fields of pytree. Make "
    "sure that metadata fields are hashable and have simple equality semantics. "
    "(Note: arrays cannot be passed as metadata fields!)")

_NONE_PREFIX_HINT = (
    "\n\nIn previous releases of JAX, flatten-up-to used to consider None to be a "
    "tree-prefix of non-None values. To obtain the previous behavior, you can usually "
    "write:\n  jax.tree.map(lambda x, y: None if x is None else f(x, y), a, b, "
    "is_leaf=lambda x: x is None)")


# ----------------------------------------------------------------------------------
# Key path entries
# ----------------------------------------------------------------------------------

class _KeyEntryBase:
  """Shared behaviour of the key path entries: one read-only value, equality and
  hashing by (type, value), pickling."""
  __slots__ = ("_v",)
  _attr = ""
  _check: type | None = None

  def _init(self, value):
    check = self._check
    if check is not None:
      if not isinstance(value, check):
        raise TypeError(f"{type(self).__name__}: {self._attr} must be of type "
                        f"{check.__name__}, got {type(value).__name__}")
      value = check(value)
    _set_key_value(self, value)

  def __setattr__(self, name, value):
    raise AttributeError(f"property of {type(self).__name__!r} object has no setter")

  def __repr__(self):
    return f"{type(self).__name__}({self._attr}={self._v!r})"

  def __eq__(self, other):
    if type(other) is type(self):
      return self._v == other._v
    return False if isinstance(other, _KeyEntryBase) else NotImplemented

  def __hash__(self):
    return hash((type(self), self._v))

  def __reduce__(self):
    return (type(self), (self._v,))


_set_key_value = _KeyEntryBase._v.__set__


class SequenceKey(_KeyEntryBase):
  """Key path entry for an element of a tuple or list: ``str`` is ``[idx]``."""
  __slots__ = ()
  __match_args__ = ("idx",)
  _attr, _check = "idx", int
  idx = property(lambda self: self._v, doc="The element's index.")

  def __init__(self, idx: int):
    self._init(idx)

  def __str__(self):
    return f"[{self._v!r}]"


class DictKey(_KeyEntryBase):
  """Key path entry for a dict value: ``str`` is ``[repr(key)]``."""
  __slots__ = ()
  __match_args__ = ("key",)
  _attr = "key"
  key = property(lambda self: self._v, doc="The dict key.")

  def __init__(self, key: Hashable):
    self._init(key)

  def __str__(self):
    return f"[{self._v!r}]"


class GetAttrKey(_KeyEntryBase):
  """Key path entry for an attribute (namedtuple or dataclass field): ``.name``."""
  __slots__ = ()
  __match_args__ = ("name",)
  _attr, _check = "name", str
  name = property(lambda self: self._v, doc="The attribute name.")

  def __init__(self, name: str):
    self._init(name)

  def __str__(self):
    return f".{self._v}"


class FlattenedIndexKey(_KeyEntryBase):
  """Key path entry for the i-th child of a custom node registered without keys."""
  __slots__ = ()
  __match_args__ = ("key",)
  _attr, _check = "key", int
  key = property(lambda self: self._v, doc="The child's position.")

  def __init__(self, key: int):
    self._init(key)

  def __str__(self):
    return f"[<flat index {self._v}>]"


_KEY_TYPES = (SequenceKey, DictKey, GetAttrKey, FlattenedIndexKey)
_SEQ_KEYS = [SequenceKey(i) for i in range(64)]


def _seq_key(i):
  return _SEQ_KEYS[i] if i < 64 else SequenceKey(i)


_DICT_KEY_CACHE: dict[str, DictKey] = {}


def _dict_key(key):
  """DictKey(key), cached for plain-string keys."""
  if type(key) is str:
    k = _DICT_KEY_CACHE.get(key)
    if k is None:
      k = _new(DictKey)
      _set_key_value(k, key)
      if len(_DICT_KEY_CACHE) < 10000:
        _DICT_KEY_CACHE[key] = k
    return k
  k = _new(DictKey)
  _set_key_value(k, key)
  return k


def keystr(keys: KeyPath, *, simple: bool = False, separator: str = "") -> str:
  """Pretty-prints a key path, e.g. ``"['a'][0].x"``.

  With ``simple=True`` each entry prints as its bare key/index/name (``a/0/x`` with
  ``separator='/'``).  Same as JAX.
  """
  if simple:
    return separator.join(map(_simple_entrystr, keys))
  return separator.join(map(str, keys))


def _simple_entrystr(key) -> str:
  if isinstance(key, _KeyEntryBase):
    return str(key._v)
  return str(key)


# ----------------------------------------------------------------------------------
# Registry
# ----------------------------------------------------------------------------------

class _NodeEntry:
  """How one registered type flattens and unflattens."""
  __slots__ = ("type", "kind", "flatten", "unflatten", "flatten_with_keys",
               "data_fields", "meta_fields")

  def __init__(self, typ, kind, flatten, unflatten, flatten_with_keys=None,
               data_fields=(), meta_fields=()):
    self.type = typ
    self.kind = kind
    self.flatten = flatten
    self.unflatten = unflatten
    self.flatten_with_keys = flatten_with_keys
    self.data_fields = tuple(data_fields)
    self.meta_fields = tuple(meta_fields)


def _is_namedtuple_type(t) -> bool:
  return issubclass(t, tuple) and hasattr(t, "_fields")


def _custom_flatten_error(r):
  return ValueError("The to_iterable function for a custom PyTree node should return "
                    f"a (children, aux_data) tuple, got {r!r}")


class PyTreeRegistry:
  """A table of pytree node types and the flattening machinery that uses it.

  ``enable_none=False`` makes ``None`` a leaf (like JAX's ``none_leaf_registry``).
  """

  def __init__(self, enable_none: bool = True, *, name: str | None = None):
    self.enable_none = enable_none
    self._name = name
    kinds: dict[type, int] = {tuple: _K_TUPLE, list: _K_LIST, dict: _K_DICT,
                              _NoneType: _K_NONE if enable_none else _K_LEAF}
    leaf_types: set[type] = set()
    for t in _COMMON_LEAF_TYPES:
      kinds[t] = _K_LEAF
      leaf_types.add(t)
    if not enable_none:
      leaf_types.add(_NoneType)
    entries: dict[type, _NodeEntry] = {}
    self._kinds = kinds
    self._leaf_types = leaf_types
    self._entries = entries
    self._unflatten_cache: dict[Any, Any] = {}
    self._fut_cache: dict[Any, Any] = {}
    kinds_get = kinds.get

    def classify(t):
      k = kinds_get(t)
      if k is not None:
        return k
      k = _K_NAMEDTUPLE if _is_namedtuple_type(t) else _K_LEAF
      if len(kinds) < _KIND_CACHE_LIMIT:
        kinds[t] = k
        if k == _K_LEAF:
          leaf_types.add(t)
      return k
    self._classify = classify

    none_spec = _NONE_SPEC if enable_none else None
    empty_dict_spec = (_K_DICT, dict, ())

    # -- flatten without is_leaf: the hot path.  Returns the spec and appends the
    # -- leaves to `leaves`.  Built-in containers are tested by identity first;
    # -- leaf children are handled inline to save a call per leaf.

    def flat(x, leaves):
      t = type(x)
      if t is tuple or t is list:
        s = [_K_TUPLE if t is tuple else _K_LIST, t, None]
        for c in x:
          tc = type(c)
          if tc in leaf_types:
            leaves.append(c)
            s.append(None)
          elif tc is dict and not c:  # e.g. the kwargs of (args, kwargs)
            s.append(empty_dict_spec)
          else:
            s.append(flat(c, leaves))
        return tuple(s)
      if t is dict:
        if not x:
          return empty_dict_spec
        try:
          keys = sorted(x)
        except Exception:
          raise ValueError("Comparator raised exception while sorting pytree "
                           "dictionary keys.") from None
        s = [_K_DICT, dict, tuple(keys)]
        for key in keys:
          c = x[key]
          if type(c) in leaf_types:
            leaves.append(c)
            s.append(None)
          else:
            s.append(flat(c, leaves))
        return tuple(s)
      if t in leaf_types:
        leaves.append(x)
        return None
      if x is None:
        if none_spec is None:
          leaves.append(x)
        return none_spec
      k = kinds_get(t)
      if k is None:
        k = classify(t)
      if k == _K_LEAF:
        leaves.append(x)
        return None
      if k == _K_NAMEDTUPLE:
        s = [_K_NAMEDTUPLE, t, None]
        children = x
      elif k == _K_DATACLASS:
        e = entries[t]
        s = [_K_DATACLASS, t, tuple([getattr(x, n) for n in e.meta_fields])]
        children = [getattr(x, n) for n in e.data_fields]
      else:
        r = entries[t].flatten(x)
        if type(r) is not tuple or len(r) != 2:
          raise _custom_flatten_error(r)
        children, aux = r
        s = [_K_CUSTOM, t, aux]
      for c in children:
        if type(c) in leaf_types:
          leaves.append(c)
          s.append(None)
        else:
          s.append(flat(c, leaves))
      return tuple(s)
    self._flat = flat

    # -- flatten with an is_leaf predicate (called on every node, root included).
    def flat_pred(x, append, pred):
      if pred(x):
        append(x)
        return None
      t = type(x)
      if t is tuple or t is list:
        s = [_K_TUPLE if t is tuple else _K_LIST, t, None]
        for c in x:
          s.append(flat_pred(c, append, pred))
        return tuple(s)
      if t is dict:
        try:
          keys = sorted(x)
        except Exception:
          raise ValueError("Comparator raised exception while sorting pytree "
                           "dictionary keys.") from None
        s = [_K_DICT, dict, tuple(keys)]
        for key in keys:
          s.append(flat_pred(x[key], append, pred))
        return tuple(s)
      if t in leaf_types:
        append(x)
        return None
      if x is None:
        if none_spec is None:
          append(x)
        return none_spec
      k = kinds_get(t)
      if k is None:
        k = classify(t)
      if k == _K_LEAF:
        append(x)
        return None
      if k == _K_NAMEDTUPLE:
        s = [_K_NAMEDTUPLE, t, None]
        children = x
      elif k == _K_DATACLASS:
        e = entries[t]
        s = [_K_DATACLASS, t, tuple([getattr(x, n) for n in e.meta_fields])]
        children = [getattr(x, n) for n in e.data_fields]
      else:
        r = entries[t].flatten(x)
        if type(r) is not tuple or len(r) != 2:
          raise _custom_flatten_error(r)
        children, aux = r
        s = [_K_CUSTOM, t, aux]
      for c in children:
        s.append(flat_pred(c, append, pred))
      return tuple(s)
    self._flat_pred = flat_pred

    # -- flatten recording key paths; `pred` takes (path, x) or is None.
    def flat_path(x, path, append, pred):
      if pred is not None and pred(path, x):
        append((path, x))
        return None
      t = type(x)
      if t in leaf_types:
        append((path, x))
        return None
      if t is tuple or t is list:
        s = [_K_TUPLE if t is tuple else _K_LIST, t, None]
        for i, c in enumerate(x):
          p = (*path, _SEQ_KEYS[i] if i < 64 else SequenceKey(i))
          if pred is None and type(c) in leaf_types:
            append((p, c))
            s.append(None)
          else:
            s.append(flat_path(c, p, append, pred))
        return tuple(s)
      if t is dict:
        try:
          keys = sorted(x)
        except Exception:
          raise ValueError("Comparator raised exception while sorting pytree "
                           "dictionary keys.") from None
        s = [_K_DICT, dict, tuple(keys)]
        for key in keys:
          c = x[key]
          p = (*path, _dict_key(key))
          if pred is None and type(c) in leaf_types:
            append((p, c))
            s.append(None)
          else:
            s.append(flat_path(c, p, append, pred))
        return tuple(s)
      k = kinds_get(t)
      if k is None:
        k = classify(t)
      if k == _K_LEAF:
        append((path, x))
        return None
      if k == _K_NONE:
        return _NONE_SPEC
      keyed, aux = self._children_with_keys(x, t, k)
      return (k, t, aux,
              *[flat_path(c, (*path, key), append, pred) for key, c in keyed])
    self._flat_path = flat_path

  # -- one-level flattening (used by key paths and the error explainers) ----------

  def _children_with_keys(self, x, t, k):
    """Returns ([(key, child), ...], aux) for an interior node of kind k."""
    if k == _K_TUPLE or k == _K_LIST:
      return [(_seq_key(i), c) for i, c in enumerate(x)], None
    if k == _K_DICT:
      try:
        keys = sorted(x)
      except Exception:
        raise ValueError("Comparator raised exception while sorting pytree "
                         "dictionary keys.") from None
      return [(_dict_key(key), x[key]) for key in keys], tuple(keys)
    if k == _K_NONE:
      return [], None
    if k == _K_NAMEDTUPLE:
      return [(GetAttrKey(f), c) for f, c in zip(t._fields, x)], None
    e = self._entries[t]
    if k == _K_DATACLASS:
      aux = tuple([getattr(x, n) for n in e.meta_fields])
      return [(GetAttrKey(n), getattr(x, n)) for n in e.data_fields], aux
    if e.flatten_with_keys is not None:
      r = e.flatten_with_keys(x)
      if type(r) is not tuple or len(r) != 2:
        raise _custom_flatten_error(r)
      keyed, aux = r
      return [(kk, c) for kk, c in keyed], aux
    r = e.flatten(x)
    if type(r) is not tuple or len(r) != 2:
      raise _custom_flatten_error(r)
    children, aux = r
    return [(FlattenedIndexKey(i), c) for i, c in enumerate(children)], aux

  def _kind(self, t):
    k = self._kinds.get(t)
    return self._classify(t) if k is None else k

  # -- public registry API (mirrors jaxlib's PyTreeRegistry) ----------------------

  def flatten(self, tree, leaf_predicate=None):
    """Returns ``(leaves, treedef)``."""
    leaves = []
    if leaf_predicate is None:
      spec = self._flat(tree, leaves)
    else:
      spec = self._flat_pred(tree, leaves.append, leaf_predicate)
    return leaves, _make_treedef(spec, len(leaves), self)

  def flatten_with_path(self, tree, leaf_predicate=None):
    """Returns ``([(key_path, leaf), ...], treedef)``; the predicate takes (path, x)."""
    pairs = []
    spec = self._flat_path(tree, (), pairs.append, leaf_predicate)
    return pairs, _make_treedef(spec, len(pairs), self)

  def flatten_one_level(self, tree):
    """``(children, aux_data)`` of an interior node, or ``None`` for a leaf."""
    t = type(tree)
    k = self._kind(t)
    if k == _K_LEAF:
      return None
    if k == _K_TUPLE:
      return tree, None
    if k == _K_LIST:
      return tree, None
    if k == _K_DICT:
      keyed, keys = self._children_with_keys(tree, t, k)
      return tuple(c for _, c in keyed), keys
    if k == _K_NONE:
      return (), None
    if k == _K_NAMEDTUPLE:
      return list(tree), t
    e = self._entries[t]
    if k == _K_DATACLASS:
      return ([getattr(tree, n) for n in e.data_fields],
              tuple(getattr(tree, n) for n in e.meta_fields))
    r = e.flatten(tree)
    if type(r) is not tuple or len(r) != 2:
      raise _custom_flatten_error(r)
    return r

  def flatten_one_level_with_keys(self, tree):
    """``([(key, child), ...], aux_data)`` of an interior node, or ``None``."""
    t = type(tree)
    k = self._kind(t)
    if k == _K_LEAF:
      return None
    keyed, aux = self._children_with_keys(tree, t, k)
    if k == _K_TUPLE or k == _K_LIST or k == _K_DICT or k == _K_NONE:
      keyed = tuple(keyed)
    if k == _K_NAMEDTUPLE:
      aux = t
    return keyed, aux

  def is_node(self, typ) -> bool:
    return self._kind(typ) != _K_LEAF

  def _add_entry(self, typ, entry):
    if typ in self._entries or typ in (tuple, list, dict, _NoneType):
      raise ValueError(f"Duplicate custom PyTreeDef type registration for {typ}.")
    self._entries[typ] = entry
    self._kinds[typ] = entry.kind
    self._leaf_types.discard(typ)

  def register_node(self, typ, to_iterable, from_iterable, to_iterable_with_keys=None):
    self._add_entry(typ, _NodeEntry(typ, _K_CUSTOM, to_iterable, from_iterable,
                                    to_iterable_with_keys))

  def register_dataclass_node(self, typ, data_fields, meta_fields):
    data_fields = tuple(data_fields)
    meta_fields = tuple(meta_fields)

    def unflatten(meta, data):
      kwargs = dict(zip(meta_fields, meta))
      kwargs.update(zip(data_fields, data))
      return typ(**kwargs)
    self._add_entry(typ, _NodeEntry(typ, _K_DATACLASS, None, unflatten, None,
                                    data_fields, meta_fields))

  def __repr__(self):
    return f"<PyTreeRegistry {self._name or hex(id(self))}>"

  def __reduce__(self):
    if self._name is None:
      raise TypeError("cannot pickle an unnamed PyTreeRegistry")
    return (_registry_by_name, (self._name,))


default_registry = PyTreeRegistry(enable_none=True, name="default_registry")
# A copy of the default registry in which None is a leaf.
none_leaf_registry = PyTreeRegistry(enable_none=False, name="none_leaf_registry")
# Registry for the dispatch path; the same node types as the default registry plus
# anything registered into it alone.
dispatch_registry = PyTreeRegistry(enable_none=True, name="dispatch_registry")
_all_registries = (default_registry, none_leaf_registry, dispatch_registry)
_registries_by_name = {r._name: r for r in _all_registries}


def _registry_by_name(name):
  return _registries_by_name[name]


# ----------------------------------------------------------------------------------
# Spec utilities
# ----------------------------------------------------------------------------------

def _spec_num_leaves(spec) -> int:
  if spec is None:
    return 1
  n = 0
  for c in spec[_HDR:]:
    n += 1 if c is None else _spec_num_leaves(c)
  return n


def _spec_num_nodes(spec) -> int:
  if spec is None:
    return 1
  n = 1
  for c in spec[_HDR:]:
    n += 1 if c is None else _spec_num_nodes(c)
  return n


def _spec_depth(spec) -> int:
  if spec is None:
    return 0
  d = 0
  for c in spec[_HDR:]:
    if c is not None:
      cd = _spec_depth(c)
      if cd > d:
        d = cd
  return d + 1


def _spec_skeleton(spec):
  """The spec with custom aux data dropped (for hashing unhashable aux)."""
  if spec is None:
    return None
  k = spec[0]
  aux = spec[2] if k == _K_DICT else None  # dict keys are always hashable
  return (k, spec[1], aux, *[_spec_skeleton(c) for c in spec[_HDR:]])


def _spec_repr(spec) -> str:
  if spec is None:
    return "*"
  k = spec[0]
  children = spec[_HDR:]
  if k == _K_NONE:
    return "None"
  if k == _K_TUPLE:
    if len(children) == 1:
      return f"({_spec_repr(children[0])},)"
    return "(" + ", ".join(map(_spec_repr, children)) + ")"
  if k == _K_LIST:
    return "[" + ", ".join(map(_spec_repr, children)) + "]"
  if k == _K_DICT:
    return "{" + ", ".join(f"{key!r}: {_spec_repr(c)}"
                           for key, c in zip(spec[2], children)) + "}"
  inner = "[" + ", ".join(map(_spec_repr, children)) + "]"
  if k == _K_NAMEDTUPLE:
    return f"CustomNode(namedtuple[{spec[1].__name__}], {inner})"
  return f"CustomNode({spec[1].__name__}[{spec[2]}], {inner})"


def _node_data(spec):
  if spec is None:
    return None
  k = spec[0]
  if k == _K_DICT:
    return (dict, list(spec[2]))
  return (spec[1], spec[2])


def _spec_from_node_data(registry, node_data, child_specs):
  if node_data is None:
    if child_specs:
      raise ValueError("A leaf PyTreeDef node has no children.")
    return None
  typ, aux = node_data
  k = registry._kind(typ)
  if k == _K_LEAF:
    raise RuntimeError(f"Could not find type: {typ}.")
  if k == _K_NONE:
    return _NONE_SPEC
  if k == _K_TUPLE or k == _K_LIST or k == _K_NAMEDTUPLE:
    return (k, typ, None, *child_specs)
  if k == _K_DICT:
    keys = tuple(aux)
    if len(keys) != len(child_specs):
      raise RuntimeError("Number of keys and entries does not match.")
    return (_K_DICT, dict, keys, *child_specs)
  if k == _K_DATACLASS:
    n = len(registry._entries[typ].data_fields)
    if len(child_specs) != n:
      raise ValueError(f"Dataclass node for {typ} expects {n} children, "
                       f"got {len(child_specs)}.")
  return (k, typ, aux, *child_specs)


# -- unflatten --------------------------------------------------------------------

def _unflatten_generic(spec, it, entries):
  if spec is None:
    return next(it)
  k = spec[0]
  if k == _K_NONE:
    return None
  children = [_unflatten_generic(c, it, entries) for c in spec[_HDR:]]
  if k == _K_TUPLE:
    return tuple(children)
  if k == _K_LIST:
    return children
  if k == _K_DICT:
    return dict(zip(spec[2], children))
  if k == _K_NAMEDTUPLE:
    return spec[1](*children)
  return entries[spec[1]].unflatten(spec[2], tuple(children))


_COMPILE_MAX_NODES = 256
_COMPILE_MAX_DEPTH = 40
_COMPILE_CACHE_LIMIT = 4096


def _compile_unflatten(spec, entries):
  """Generates ``f(l, s)`` rebuilding the tree for `spec` from the leaf list `l`.

  Static data (dict keys other than plain strings, custom aux data) is read from the
  spec `s` passed at call time, so equal-but-not-identical specs (``{1: *}`` vs
  ``{True: *}``) sharing a compiled function still rebuild their own keys.
  """
  consts: dict[str, Any] = {}
  counter = [0]

  def const(obj):
    name = f"_c{len(consts)}"
    consts[name] = obj
    return name

  def expr(sp, access):
    if sp is None:
      i = counter[0]
      counter[0] = i + 1
      return f"l[{i}]"
    k = sp[0]
    if k == _K_NONE:
      return "None"
    ch = [expr(c, f"{access}[{j + _HDR}]") for j, c in enumerate(sp[_HDR:])]
    if k == _K_TUPLE:
      return "(" + ", ".join(ch) + ("," if len(ch) == 1 else "") + ")"
    if k == _K_LIST:
      return "[" + ", ".join(ch) + "]"
    if k == _K_DICT:
      keys = sp[2]
      if all(type(key) is str for key in keys):
        return "{" + ", ".join(f"{key!r}: {c}" for key, c in zip(keys, ch)) + "}"
      return (f"dict(zip({access}[2], (" + ", ".join(ch)
              + ("," if len(ch) == 1 else "") + ")))")
    typ = sp[1]
    if k == _K_NAMEDTUPLE:
      return f"{const(typ)}(" + ", ".join(ch) + ")"
    e = entries[typ]
    if k == _K_DATACLASS:
      names = e.data_fields + e.meta_fields
      if all(n.isidentifier() and not keyword.iskeyword(n) for n in names):
        args = [f"{n}={c}" for n, c in zip(e.data_fields, ch)]
        args += [f"{n}={access}[2][{i}]" for i, n in enumerate(e.meta_fields)]
        return f"{const(typ)}(" + ", ".join(args) + ")"
    return (f"{const(e.unflatten)}({access}[2], ("
            + ", ".join(ch) + ("," if len(ch) == 1 else "") + "))")

  body = expr(spec, "s")
  src = f"def _unflatten(l, s):\n  return {body}\n"
  namespace = dict(consts)
  exec(compile(src, "<pyjax.tree_util unflatten>", "exec"), namespace)
  fn = namespace["_unflatten"]
  fn.__source__ = src
  return fn


# -- flatten_up_to ----------------------------------------------------------------

def _flatten_up_to(spec, x, append, entries):
  if spec is None:
    append(x)
    return
  k = spec[0]
  n = len(spec) - _HDR
  if k == _K_TUPLE:
    if type(x) is not tuple:
      raise ValueError(f"Expected tuple, got {x!r}.")
    if len(x) != n:
      raise ValueError(f"Tuple arity mismatch: {len(x)} != {n}; tuple: {x!r}.")
    children = x
  elif k == _K_LIST:
    if type(x) is not list:
      raise ValueError(f"Expected list, got {x!r}.")
    if len(x) != n:
      raise ValueError(f"List arity mismatch: {len(x)} != {n}; list: {x!r}.")
    children = x
  elif k == _K_DICT:
    if type(x) is not dict:
      raise ValueError(f"Expected dict, got {x!r}.")
    keys = spec[2]
    if len(x) != n or not all(key in x for key in keys):
      try:
        present = sorted(x)
      except Exception:
        present = list(x)
      raise ValueError(f"Dict key mismatch; expected keys: {list(keys)!r}; "
                       f"present keys: {present!r}.")
    children = [x[key] for key in keys]
  elif k == _K_NONE:
    if x is not None:
      raise ValueError(f"Expected None, got {x!r}." + _NONE_PREFIX_HINT)
    return
  elif k == _K_NAMEDTUPLE:
    if not (isinstance(x, tuple) and hasattr(type(x), "_fields")):
      raise ValueError(f"Expected named tuple, got {x!r}.")
    if len(x) != n:
      raise ValueError(f"Named tuple arity mismatch: {len(x)} != {n}; tuple: {x!r}.")
    if type(x) is not spec[1]:
      raise ValueError(f"Named tuple type mismatch: expected type: {spec[1]}, "
                       f"tuple: {x!r}.")
    children = x
  elif k == _K_DATACLASS:
    typ = spec[1]
    if type(x) is not typ:
      raise ValueError(f"Custom dataclass node type mismatch: expected type: {typ}, "
                       f"value: {x!r}.")
    e = entries[typ]
    aux = tuple([getattr(x, name) for name in e.meta_fields])
    if not _aux_equal(aux, spec[2]):
      raise ValueError(f"Mismatch custom dataclass node data: {spec[2]!r} != "
                       f"{aux!r}; value: {x!r}.")
    children = [getattr(x, name) for name in e.data_fields]
  else:
    typ = spec[1]
    if type(x) is not typ:
      raise ValueError(f"Custom node type mismatch: expected type: {typ}, "
                       f"value: {x!r}.")
    r = entries[typ].flatten(x)
    if type(r) is not tuple or len(r) != 2:
      raise _custom_flatten_error(r)
    children, aux = r
    if not _aux_equal(aux, spec[2]):
      raise ValueError(f"Mismatch custom node data: {spec[2]!r} != {aux!r}; "
                       f"value: {x!r}.")
    children = list(children)
    if len(children) != n:
      raise ValueError(f"Custom type arity mismatch: {len(children)} != {n}; "
                       f"value: {x!r}.")
  i = _HDR
  for c in children:
    cs = spec[i]
    i += 1
    if cs is None:
      append(c)
    else:
      _flatten_up_to(cs, c, append, entries)


class _Mismatch(Exception):
  """Raised by compiled flatten_up_to; the generic path then explains the error."""


def _compile_flatten_up_to(spec, entries):
  """Generates ``f(x, s)`` returning the leaves of `x` cut at `spec`'s leaves, or
  raising `_Mismatch` (the caller re-runs the generic path for JAX's message)."""
  consts: dict[str, Any] = {"_Mismatch": _Mismatch, "_tuple": tuple}
  lines: list[str] = []
  out: list[str] = []
  counter = [0]

  def const(obj):
    name = f"_c{len(consts)}"
    consts[name] = obj
    return name

  def tmp():
    counter[0] += 1
    return f"v{counter[0]}"

  def emit(sp, var, access):
    if sp is None:
      out.append(var)
      return
    k = sp[0]
    n = len(sp) - _HDR
    if k == _K_NONE:
      lines.append(f"if {var} is not None: raise _Mismatch")
      return
    if k == _K_TUPLE or k == _K_LIST:
      tn = "tuple" if k == _K_TUPLE else "list"
      lines.append(f"if type({var}) is not {tn} or len({var}) != {n}: raise _Mismatch")
      child_vars = [f"{var}[{i}]" for i in range(n)]
    elif k == _K_DICT:
      keys = sp[2]
      if all(type(key) is str for key in keys):
        lits = [repr(key) for key in keys]
      else:
        lits = [f"{access}[2][{i}]" for i in range(n)]
      cond = " or ".join([f"type({var}) is not dict", f"len({var}) != {n}"]
                         + [f"{lit} not in {var}" for lit in lits])
      lines.append(f"if {cond}: raise _Mismatch")
      child_vars = [f"{var}[{lit}]" for lit in lits]
    elif k == _K_NAMEDTUPLE:
      lines.append(f"if type({var}) is not {const(sp[1])}: raise _Mismatch")
      child_vars = [f"{var}[{i}]" for i in range(n)]
    elif k == _K_DATACLASS:
      e = entries[sp[1]]
      lines.append(f"if type({var}) is not {const(sp[1])}: raise _Mismatch")
      aux = "(" + "".join(f"{var}.{m}, " for m in e.meta_fields) + ")"
      if e.meta_fields:
        if not all(m.isidentifier() for m in e.meta_fields + e.data_fields):
          raise _Mismatch
        a = tmp()
        lines.append(f"{a} = {aux}")
        lines.append(f"if not ({a} is {access}[2] or {a} == {access}[2]): "
                     "raise _Mismatch")
      elif not all(m.isidentifier() for m in e.data_fields):
        raise _Mismatch
      child_vars = [f"{var}.{d}" for d in e.data_fields]
    else:
      e = entries[sp[1]]
      r, c, a = tmp(), tmp(), tmp()
      lines.append(f"if type({var}) is not {const(sp[1])}: raise _Mismatch")
      lines.append(f"{r} = {const(e.flatten)}({var})")
      lines.append(f"if type({r}) is not _tuple or len({r}) != 2: raise _Mismatch")
      lines.append(f"{c}, {a} = {r}")
      lines.append(f"if not ({a} is {access}[2] or {a} == {access}[2]): "
                   "raise _Mismatch")
      lines.append(f"{c} = _tuple({c})")
      lines.append(f"if len({c}) != {n}: raise _Mismatch")
      child_vars = [f"{c}[{i}]" for i in range(n)]
    for i, (cs, cv) in enumerate(zip(sp[_HDR:], child_vars)):
      if cs is None:
        out.append(cv)
      else:
        v = tmp()
        lines.append(f"{v} = {cv}")
        emit(cs, v, f"{access}[{i + _HDR}]")

  emit(spec, "x", "s")
  body = "".join(f"  {line}\n" for line in lines)
  src = f"def _flatten_up_to(x, s):\n{body}  return [{', '.join(out)}]\n"
  namespace = dict(consts)
  exec(compile(src, "<pyjax.tree_util flatten_up_to>", "exec"), namespace)
  fn = namespace["_flatten_up_to"]
  fn.__source__ = src
  return fn


def _aux_equal(a, b) -> bool:
  if a is b:
    return True
  try:
    return bool(a == b)
  except Exception:
    raise ValueError(_METADATA_EQ_ERROR) from None


# ----------------------------------------------------------------------------------
# PyTreeDef
# ----------------------------------------------------------------------------------

class PyTreeDef:
  """The structure of a pytree (what ``tree_flatten`` returns beside the leaves).

  Immutable, hashable and picklable; ``repr`` matches JAX (``PyTreeDef((*, {'a': *}))``).
  Equality compares structure, node types and static data (dict keys, custom aux
  data, dataclass meta fields), as in JAX.  Instances are created by flattening (or
  by ``treedef_tuple`` / ``from_node_data_and_children``), not by calling the class.
  """
  __slots__ = ("_spec", "_registry", "_num_leaves", "_num_nodes", "_hash", "_unflat",
               "_fut", "__weakref__")

  def __init__(self, *args, **kwargs):
    raise TypeError("pyjax.tree_util.PyTreeDef: no constructor defined!")

  # -- properties ------------------------------------------------------------------

  @property
  def num_leaves(self) -> int:
    return self._num_leaves

  @property
  def num_nodes(self) -> int:
    n = self._num_nodes
    if n < 0:
      n = self._num_nodes = _spec_num_nodes(self._spec)
    return n

  # -- (un)flattening --------------------------------------------------------------

  def unflatten(self, leaves: Iterable[Any], /) -> Any:
    """Rebuilds a tree with this structure from an iterable of leaves."""
    if type(leaves) is not list and type(leaves) is not tuple:
      leaves = list(leaves)
    n = self._num_leaves
    if len(leaves) != n:
      if len(leaves) < n:
        raise ValueError(f"Too few leaves for PyTreeDef; expected {n}, "
                         f"got {len(leaves)}")
      raise ValueError(f"Too many leaves for PyTreeDef; expected {n}.")
    f = self._unflat
    if f is None:
      f = self._get_unflatten()
    return f(leaves, self._spec)

  def _get_unflatten(self):
    spec = self._spec
    if spec is None:
      f = _unflatten_leaf
    else:
      reg = self._registry
      cache = reg._unflatten_cache
      try:
        f = cache.get(spec)
      except Exception:  # unhashable or uncomparable aux data
        f = self._unflat = _make_generic_unflatten(reg._entries)
        return f
      if f is None:
        # First sighting: use the generic path (not cached on this instance, so a
        # second use comes back here and compiles).
        if len(cache) >= _COMPILE_CACHE_LIMIT:
          cache.clear()
        cache[spec] = 1
        return _make_generic_unflatten(reg._entries)
      if type(f) is int:
        if (self.num_nodes <= _COMPILE_MAX_NODES
            and _spec_depth(spec) <= _COMPILE_MAX_DEPTH):
          f = _compile_unflatten(spec, reg._entries)
        else:
          f = _make_generic_unflatten(reg._entries)
        cache[spec] = f
    self._unflat = f
    return f

  def flatten_up_to(self, xs: Any, /) -> list[Any]:
    """Flattens `xs` down to this structure's leaves (each may be a whole subtree).

    Raises ``ValueError`` with JAX's messages ("Tuple arity mismatch: ...", "Dict key
    mismatch; ...", "Custom node type mismatch: ...") where `xs` does not match.
    """
    f = self._fut
    if f is None:
      f = self._get_flatten_up_to()
    if f is not _generic_marker:
      try:
        return f(xs, self._spec)
      except Exception:  # let the generic path raise the precise error
        pass
    out = []
    _flatten_up_to(self._spec, xs, out.append, self._registry._entries)
    return out

  def _get_flatten_up_to(self):
    spec = self._spec
    reg = self._registry
    cache = reg._fut_cache
    try:
      f = cache.get(spec)
    except Exception:
      f = self._fut = _generic_marker
      return f
    if f is None:
      if len(cache) >= _COMPILE_CACHE_LIMIT:
        cache.clear()
      cache[spec] = 1
      return _generic_marker
    if type(f) is int:
      f = _generic_marker
      if (self.num_nodes <= _COMPILE_MAX_NODES
          and _spec_depth(spec) <= _COMPILE_MAX_DEPTH):
        try:
          f = _compile_flatten_up_to(spec, reg._entries)
        except _Mismatch:  # e.g. field names that are not identifiers
          pass
      cache[spec] = f
    self._fut = f
    return f

  def from_iterable_tree(self, xs: Any, /) -> Any:
    """Builds a tree of this structure from nested iterables (one per interior node)."""
    return _from_iterable(self._spec, xs, self._registry._entries)

  def walk(self, f_node: Callable[[Any, Any], Any], f_leaf: Callable[[Any], Any] | None,
           leaves: Iterable[Any], /) -> Any:
    """Folds over the tree: ``f_leaf(leaf)`` at leaves, ``f_node(children, aux)`` at
    interior nodes (``aux`` is the node's static data: dict keys, custom aux data)."""
    it = iter(leaves)

    def go(spec):
      if spec is None:
        x = next(it)
        return x if f_leaf is None else f_leaf(x)
      children = tuple(go(c) for c in spec[_HDR:])
      aux = list(spec[2]) if spec[0] == _K_DICT else spec[2]
      return f_node(children, aux)
    return go(self._spec)

  # -- structure -------------------------------------------------------------------

  def children(self) -> list[PyTreeDef]:
    """Treedefs of the root's immediate children (``[]`` for a leaf)."""
    spec = self._spec
    if spec is None:
      return []
    reg = self._registry
    return [_make_treedef(c, _spec_num_leaves(c), reg) for c in spec[_HDR:]]

  def node_data(self):
    """``(type, aux_data)`` of the root node, or ``None`` for a leaf."""
    return _node_data(self._spec)

  def compose(self, inner: PyTreeDef, /) -> PyTreeDef:
    """The structure obtained by replacing every leaf of `self` with `inner`."""
    inner_spec = inner._spec

    def go(spec):
      if spec is None:
        return inner_spec
      return (*spec[:_HDR], *[go(c) for c in spec[_HDR:]])
    return _make_treedef(go(self._spec), self._num_leaves * inner._num_leaves,
                         self._registry)

  @staticmethod
  def from_node_data_and_children(registry: PyTreeRegistry, node_data,
                                  children: Iterable[PyTreeDef]) -> PyTreeDef:
    """Builds a treedef from a root's ``node_data()`` and its children's treedefs."""
    children = list(children)
    spec = _spec_from_node_data(registry, node_data, [c._spec for c in children])
    n = 1 if spec is None else sum(c._num_leaves for c in children)
    return _make_treedef(spec, n, registry)

  # -- dunder ----------------------------------------------------------------------

  def __eq__(self, other):
    if self is other:
      return True
    if type(other) is not PyTreeDef:
      return NotImplemented
    a = self._spec
    b = other._spec
    if a is b:
      return True
    try:
      return a == b
    except Exception:
      raise ValueError(_METADATA_EQ_ERROR) from None

  def __ne__(self, other):
    r = self.__eq__(other)
    return r if r is NotImplemented else not r

  def __hash__(self):
    h = self._hash
    if h is None:
      try:
        h = hash(self._spec)
      except TypeError:
        h = hash(_spec_skeleton(self._spec))
      self._hash = h
    return h

  def __repr__(self):
    return f"PyTreeDef({_spec_repr(self._spec)})"

  def __reduce__(self):
    return (_treedef_from_spec, (self._spec, self._registry))

  def __copy__(self):
    return self

  def __deepcopy__(self, memo):
    return self


def _generic_marker(x, s):
  raise _Mismatch


def _unflatten_leaf(leaves, spec):
  return leaves[0]


def _make_generic_unflatten(entries):
  def unflatten(leaves, spec):
    return _unflatten_generic(spec, iter(leaves), entries)
  return unflatten


def _from_iterable(spec, xs, entries):
  if spec is None:
    return xs
  k = spec[0]
  if k == _K_NONE:
    return None
  xs = list(xs)
  n = len(spec) - _HDR
  if len(xs) != n:
    raise ValueError(f"Arity mismatch between trees: expected {n} children, "
                     f"got {len(xs)}.")
  children = [_from_iterable(c, x, entries) for c, x in zip(spec[_HDR:], xs)]
  if k == _K_TUPLE:
    return tuple(children)
  if k == _K_LIST:
    return children
  if k == _K_DICT:
    return dict(zip(spec[2], children))
  if k == _K_NAMEDTUPLE:
    return spec[1](*children)
  return entries[spec[1]].unflatten(spec[2], tuple(children))


def _make_treedef(spec, num_leaves, registry):
  td = _new(PyTreeDef)
  td._spec = spec
  td._registry = registry
  td._num_leaves = num_leaves
  td._num_nodes = -1
  td._hash = None
  td._unflat = None
  td._fut = None
  return td


def _treedef_from_spec(spec, registry):
  return _make_treedef(spec, 1 if spec is None else _spec_num_leaves(spec), registry)


_LEAF_TREEDEF = _make_treedef(None, 1, default_registry)
_TUPLE_OF_LEAVES: dict[int, PyTreeDef] = {}


def _tuple_of_leaves_treedef(n):
  td = _make_treedef(_tuple_of_leaves_spec(n), n, default_registry)
  if n <= 64:
    _TUPLE_OF_LEAVES[n] = td
  return td


for _n in range(9):
  _tuple_of_leaves_treedef(_n)
del _n


# ----------------------------------------------------------------------------------
# Core API
# ----------------------------------------------------------------------------------

_default_flat = default_registry._flat
_default_flat_pred = default_registry._flat_pred
_default_leaf_types = default_registry._leaf_types
_tuple_of_leaves_get = _TUPLE_OF_LEAVES.get


def tree_flatten(tree: Any, is_leaf: Callable[[Any], bool] | None = None
                 ) -> tuple[list[Leaf], PyTreeDef]:
  """Flattens a pytree into ``(leaves, treedef)``; same as ``jax.tree.flatten``.

  ``is_leaf(x)`` is called on every node (root included); when it returns True the
  node is taken as a leaf.  ``None`` is an empty node (no leaves), dict keys are
  sorted, ``OrderedDict`` keeps insertion order.
  """
  if is_leaf is None:
    t = type(tree)
    if t is tuple:
      # Fast path for a tuple of leaves (jit's common case): a cached treedef.
      for c in tree:
        if type(c) not in _default_leaf_types:
          break
      else:
        td = _tuple_of_leaves_get(len(tree))
        if td is None:
          td = _tuple_of_leaves_treedef(len(tree))
        return list(tree), td
    elif t in _default_leaf_types:
      return [tree], _LEAF_TREEDEF
    leaves = []
    spec = _default_flat(tree, leaves)
  else:
    leaves = []
    spec = _default_flat_pred(tree, leaves.append, is_leaf)
  td = _new(PyTreeDef)
  td._spec = spec
  td._registry = default_registry
  td._num_leaves = len(leaves)
  td._num_nodes = -1
  td._hash = None
  td._unflat = None
  td._fut = None
  return leaves, td


def tree_leaves(tree: Any, is_leaf: Callable[[Any], bool] | None = None
                ) -> list[Leaf]:
  """The leaves of a pytree, in flattening order; same as ``jax.tree.leaves``."""
  if is_leaf is None:
    if type(tree) in _default_leaf_types:
      return [tree]
    leaves = []
    _default_flat(tree, leaves)
  else:
    leaves = []
    _default_flat_pred(tree, leaves.append, is_leaf)
  return leaves


def tree_structure(tree: Any, is_leaf: Callable[[Any], bool] | None = None
                   ) -> PyTreeDef:
  """The treedef of a pytree; same as ``jax.tree.structure``."""
  return tree_flatten(tree, is_leaf)[1]


def tree_unflatten(treedef: PyTreeDef, leaves: Iterable[Leaf]) -> Any:
  """Rebuilds a pytree from a treedef and leaves; same as ``jax.tree.unflatten``."""
  return treedef.unflatten(leaves)


def tree_leaves_checked(treedef_expected: PyTreeDef, tree: Any) -> list[Leaf]:
  """Leaves of `tree`, asserting its structure equals `treedef_expected`."""
  flat_vals, treedef_actual = tree_flatten(tree)
  assert treedef_actual == treedef_expected
  return flat_vals


def treedef_tuple(treedefs: Iterable[PyTreeDef]) -> PyTreeDef:
  """A tuple treedef whose children are `treedefs`."""
  treedefs = list(treedefs)
  for td in treedefs:
    if type(td) is not PyTreeDef:
      raise TypeError(f"treedef_tuple expects PyTreeDefs, got {type(td)}")
  spec = (_K_TUPLE, tuple, None, *[td._spec for td in treedefs])
  return _make_treedef(spec, sum(td._num_leaves for td in treedefs), default_registry)


def treedef_children(treedef: PyTreeDef) -> list[PyTreeDef]:
  """Treedefs of the immediate children of `treedef`'s root."""
  return treedef.children()


def treedef_is_leaf(treedef: PyTreeDef) -> bool:
  """True if `treedef` has a single node (a leaf, ``None``, or an empty container)."""
  return treedef.num_nodes == 1


def treedef_is_strict_leaf(treedef: PyTreeDef) -> bool:
  """True if `treedef` is exactly one leaf."""
  return treedef._spec is None


def all_leaves(iterable: Iterable[Any],
               is_leaf: Callable[[Any], bool] | None = None) -> bool:
  """True if every element of `iterable` is a leaf (e.g. the output of tree_leaves)."""
  if is_leaf is None:
    kind = default_registry._kind
    return all(kind(type(x)) == _K_LEAF for x in iterable)
  items = list(iterable)
  leaves = tree_leaves(items, is_leaf)
  return len(leaves) == len(items) and all(
      a is b for a, b in zip(items, leaves))


def is_tree_node(typ: type) -> bool:
  """True if `typ` is a pytree node type (built-in, namedtuple or registered)."""
  return default_registry.is_node(typ)


def build_tree(treedef: PyTreeDef, xs: Any) -> Any:
  """Builds a pytree of `treedef`'s structure from nested iterables `xs`.

  Removed from JAX's public API in recent releases; kept here as
  ``treedef.from_iterable_tree(xs)``.
  """
  return treedef.from_iterable_tree(xs)


# -- registration ----------------------------------------------------------------

def register_pytree_node(
    nodetype: type[T],
    flatten_func: Callable[[T], tuple[Iterable[Any], Hashable]],
    unflatten_func: Callable[[Hashable, Iterable[Any]], T],
    flatten_with_keys_func: Callable[[T], tuple[KeyLeafPairs, Hashable]] | None = None,
) -> None:
  """Registers `nodetype` as a pytree node.

  ``flatten_func(x) -> (children, aux_data)``; ``unflatten_func(aux_data, children)``
  (children arrive as a tuple).  Registering a type twice raises ``ValueError``.
  """
  for registry in _all_registries:
    registry.register_node(nodetype, flatten_func, unflatten_func,
                           flatten_with_keys_func)


def register_pytree_node_class(cls: Typ) -> Typ:
  """Class decorator: registers `cls` using its ``tree_flatten`` method and
  ``tree_unflatten`` classmethod."""
  register_pytree_node(cls, operator.methodcaller("tree_flatten"), cls.tree_unflatten)
  return cls


def register_pytree_with_keys(
    nodetype: type[T],
    flatten_with_keys: Callable[[T], tuple[KeyLeafPairs, Hashable]],
    unflatten_func: Callable[[Hashable, Iterable[Any]], T],
    flatten_func: Callable[[T], tuple[Iterable[Any], Hashable]] | None = None,
) -> None:
  """Registers `nodetype` with a flatten function that also names each child's key."""
  if not flatten_func:
    def flatten_func(tree):
      key_children, aux = flatten_with_keys(tree)
      return [c for _, c in key_children], aux
  register_pytree_node(nodetype, flatten_func, unflatten_func, flatten_with_keys)


def register_pytree_with_keys_class(cls: Typ) -> Typ:
  """Class decorator: registers `cls` using ``tree_flatten_with_keys``,
  ``tree_unflatten`` and (if defined) ``tree_flatten``."""
  flatten_func = (operator.methodcaller("tree_flatten")
                  if hasattr(cls, "tree_flatten") else None)
  register_pytree_with_keys(cls, operator.methodcaller("tree_flatten_with_keys"),
                            cls.tree_unflatten, flatten_func)
  return cls


def register_dataclass(nodetype: Typ, data_fields: Sequence[str] | None = None,
                       meta_fields: Sequence[str] | None = None,
                       drop_fields: Sequence[str] = ()) -> Typ:
  """Registers a dataclass-like type: `data_fields` are children, `meta_fields` are
  static aux data; rebuilt with ``nodetype(**fields)``.

  For a dataclass both lists may be omitted: fields whose metadata has
  ``static=True`` (see ``pyjax.tree.static``) are meta fields, the rest data fields.
  """
  if data_fields is None or meta_fields is None:
    if (data_fields is None) != (meta_fields is None):
      raise TypeError("register_dataclass: data_fields and meta_fields must both be "
                      "specified when either is specified. Got "
                      f"{data_fields=} {meta_fields=}.")
    if not dataclasses.is_dataclass(nodetype):
      raise TypeError("register_dataclass: data_fields and meta_fields are required "
                      f"when nodetype is not a dataclass. Got {nodetype=}.")
    data_fields = [f.name for f in dataclasses.fields(nodetype)
                   if not f.metadata.get("static", False)]
    meta_fields = [f.name for f in dataclasses.fields(nodetype)
                   if f.metadata.get("static", False)]
  meta_fields = tuple(meta_fields)
  data_fields = tuple(data_fields)
  if dataclasses.is_dataclass(nodetype):
    init_fields = {f.name for f in dataclasses.fields(nodetype) if f.init}
    init_fields.difference_update(drop_fields)
    if {*meta_fields, *data_fields} != init_fields:
      msg = ("data_fields and meta_fields must include all dataclass fields with"
             " ``init=True`` and only them.")
      missing = init_fields - {*meta_fields, *data_fields}
      if missing:
        msg += (f" Missing fields: {missing}. Add them to drop_fields to suppress"
                " this error.")
      unexpected = {*meta_fields, *data_fields} - init_fields
      if unexpected:
        msg += f" Unexpected fields: {unexpected}."
      raise ValueError(msg)
  overlap = set(data_fields) & set(meta_fields)
  if overlap:
    raise ValueError("data_fields and meta_fields must not overlap. Overlapping "
                     f"fields: {overlap}.")
  for registry in _all_registries:
    registry.register_dataclass_node(nodetype, data_fields, meta_fields)
  return nodetype


def register_static(cls: type[H]) -> type[H]:
  """Registers `cls` as a pytree with no children: instances are static (aux data)."""
  register_pytree_with_keys(cls, lambda obj: ((), obj), lambda obj, _: obj)
  return cls


# -- one-level flattening ------------------------------------------------------

def flatten_one_level(tree: Any) -> tuple[Iterable[Any], Hashable]:
  """``(children, aux_data)`` of a pytree node; ``ValueError`` for a leaf."""
  out = default_registry.flatten_one_level(tree)
  if out is None:
    raise ValueError(f"can't tree-flatten type: {type(tree)}")
  return out


def flatten_one_level_with_keys(tree: Any) -> tuple[Iterable[KeyLeafPair], Hashable]:
  """``([(key, child), ...], aux_data)`` of a pytree node; ``ValueError`` for a leaf."""
  out = default_registry.flatten_one_level_with_keys(tree)
  if out is None:
    raise ValueError(f"can't tree-flatten type: {type(tree)}")
  return out


# -- map / reduce ------------------------------------------------------------------

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


# ----------------------------------------------------------------------------------
# Key paths
# ----------------------------------------------------------------------------------

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


# ----------------------------------------------------------------------------------
# Structure-mismatch explanations (used by tree_map and by transformations)
# ----------------------------------------------------------------------------------

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
    meta_differs = prefix_meta != full_meta
    meta_differs = bool(meta_differs)
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


# ----------------------------------------------------------------------------------
# Partial and built-in custom nodes
# ----------------------------------------------------------------------------------

class _HashableCallableShim:
  """Delegates ``__call__``, ``__hash__`` and ``__eq__`` to a wrapped callable."""

  def __init__(self, fun):
    self.fun = fun

  def __call__(self, *args, **kw):
    return self.fun(*args, **kw)

  def __hash__(self):
    return hash(self.fun)

  def __eq__(self, other):
    if isinstance(other, _HashableCallableShim):
      return self.fun == other.fun
    return self.fun == other

  def __repr__(self):
    return f"_HashableCallableShim({self.fun!r})"


class Partial(functools.partial):
  """A ``functools.partial`` that is a pytree: the bound arguments are its children
  and the function is static aux data, so it can be passed through transformations.

  As in JAX, wrapping a ``functools.partial`` keeps it as the (static) function
  instead of merging its arguments into this pytree.
  """

  def __new__(klass, func, *args, **kw):
    if isinstance(func, functools.partial):
      original = func
      func = _HashableCallableShim(original)
      out = super().__new__(klass, func, *args, **kw)
      func.func = original.func
      func.args = original.args
      func.keywords = original.keywords
      return out
    return super().__new__(klass, func, *args, **kw)


register_pytree_node(
    Partial,
    lambda p: ((p.args, p.keywords), p.func),
    lambda func, xs: Partial(func, *xs[0], **xs[1]),
)

register_pytree_with_keys(
    collections.OrderedDict,
    lambda x: (tuple((DictKey(k), x[k]) for k in x.keys()), tuple(x.keys())),
    lambda keys, values: collections.OrderedDict(zip(keys, values, strict=True)),
    lambda x: (tuple(x.values()), tuple(x.keys())),
)


def _flatten_defaultdict_with_keys(d):
  keys = tuple(sorted(d))
  return tuple((DictKey(k), d[k]) for k in keys), (d.default_factory, keys)


def _flatten_defaultdict(d):
  keys = tuple(sorted(d))
  return tuple(d[k] for k in keys), (d.default_factory, keys)


register_pytree_with_keys(
    collections.defaultdict,
    _flatten_defaultdict_with_keys,
    lambda s, values: collections.defaultdict(s[0], zip(s[1], values, strict=True)),
    _flatten_defaultdict,
)


@register_static
@dataclasses.dataclass(frozen=True, slots=True)
class Static:
  """A static (leafless) pytree wrapper around a hashable value."""
  val: Any

  def __eq__(self, other):
    return (type(other) is Static and type(self.val) is type(other.val) and
            self.val == other.val)

  def __hash__(self):
    return hash(self.val)


def static(**kwargs):
  """``dataclasses.field(metadata={'static': True, ...}, **kwargs)``: marks a dataclass
  field as static for `register_dataclass` (``jax.tree.static``)."""
  metadata = {"static": True, **(kwargs.pop("metadata", {}) or {})}
  return dataclasses.field(metadata=metadata, **kwargs)
