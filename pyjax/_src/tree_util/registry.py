"""``PyTreeRegistry``: the table of pytree node types and the flattening machinery
built over it (the ``tree_flatten`` hot path lives here), and the three registries."""

from __future__ import annotations

from typing import Any

from pyjax._src.tree_util.keys import (
    FlattenedIndexKey, GetAttrKey, SequenceKey, _SEQ_KEYS, _dict_key, _seq_key,
)
from pyjax._src.tree_util.spec import (
    _DICT_SORT_ERROR, _K_CUSTOM, _K_DATACLASS, _K_DICT, _K_LEAF, _K_LIST, _K_NAMEDTUPLE,
    _K_NONE, _K_TUPLE, _NONE_SPEC, _NoneType, _call_flatten, _custom_flatten_error,
)
from pyjax._src.tree_util.treedef import _make_treedef

# The concrete array type, ``ArrayImpl`` (set by ``runtime/array.py`` when it defines it;
# also ``flatten.ARRAY_TYPE``).  The hot flatten paths test a leaf's type against it by
# identity before the leaf-type set: a set look-up of ``ArrayImpl`` runs its metaclass's
# Python-level ``__hash__`` (its sharded variants compare and hash equal to it), ~0.2 us a
# leaf -- a 100-Array list flattened in 47 us instead of 29 us for NumPy arrays.
ARRAY_TYPE = None

# Types known to be leaves, pre-seeded into every registry's kind table.
_COMMON_LEAF_TYPES = (int, float, bool, complex, str, bytes, type(Ellipsis), type,
                      slice, range)
_KIND_CACHE_LIMIT = 20000  # stop caching classification of new leaf types beyond this


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
          if tc is ARRAY_TYPE or tc in leaf_types:
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
          raise ValueError(_DICT_SORT_ERROR) from None
        s = [_K_DICT, dict, tuple(keys)]
        for key in keys:
          c = x[key]
          if (tc := type(c)) is ARRAY_TYPE or tc in leaf_types:
            leaves.append(c)
            s.append(None)
          else:
            s.append(flat(c, leaves))
        return tuple(s)
      if t is ARRAY_TYPE or t in leaf_types:
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
        if (tc := type(c)) is ARRAY_TYPE or tc in leaf_types:
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
          raise ValueError(_DICT_SORT_ERROR) from None
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
          raise ValueError(_DICT_SORT_ERROR) from None
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
        raise ValueError(_DICT_SORT_ERROR) from None
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
      keyed, aux = _call_flatten(e.flatten_with_keys, x)
      return [(kk, c) for kk, c in keyed], aux
    children, aux = _call_flatten(e.flatten, x)
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
    if k == _K_TUPLE or k == _K_LIST:
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
    return _call_flatten(e.flatten, tree)

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
