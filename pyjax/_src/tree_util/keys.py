"""Key path entries (``SequenceKey``, ``DictKey``, ``GetAttrKey``,
``FlattenedIndexKey``) and ``keystr``."""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import Any, TypeVar

from pyjax._src.tree_util.spec import _new

KeyEntry = TypeVar("KeyEntry", bound=Any)
KeyLeafPair = tuple[KeyEntry, Any]
KeyLeafPairs = Iterable[KeyLeafPair]
KeyPath = tuple[KeyEntry, ...]


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


_SEQ_KEYS = [SequenceKey(i) for i in range(64)]


def _seq_key(i):
  return _SEQ_KEYS[i] if i < 64 else SequenceKey(i)


_DICT_KEY_CACHE: dict[str, DictKey] = {}


def _dict_key(key):
  """DictKey(key), cached for plain-string keys."""
  k = _DICT_KEY_CACHE.get(key) if type(key) is str else None
  if k is None:
    k = _new(DictKey)
    _set_key_value(k, key)
    if type(key) is str and len(_DICT_KEY_CACHE) < 10000:
      _DICT_KEY_CACHE[key] = k
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
