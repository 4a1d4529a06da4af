"""The core pytree API: flatten / unflatten / structure, treedef helpers, node
registration, one-level flattening, and the built-in custom nodes (``Partial``,
``OrderedDict``, ``defaultdict``, ``Static``)."""

from __future__ import annotations

import collections
import dataclasses
import functools
import operator
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any, TypeVar

from pyjax._src.tree_util.keys import DictKey, KeyLeafPair, KeyLeafPairs
from pyjax._src.tree_util.registry import _all_registries, default_registry
from pyjax._src.tree_util.spec import _K_LEAF, _K_TUPLE, _new, _tuple_of_leaves_spec
from pyjax._src.tree_util.treedef import PyTreeDef, _make_treedef

T = TypeVar("T")
Typ = TypeVar("Typ", bound=type)
H = TypeVar("H", bound=Hashable)

Leaf = Any
PyTree = Any


# -- flatten / unflatten -----------------------------------------------------------

# Shared treedefs for tree_flatten's fast paths (a lone leaf, a tuple of leaves).
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

_default_flat = default_registry._flat
_default_flat_pred = default_registry._flat_pred
_default_leaf_types = default_registry._leaf_types
_tuple_of_leaves_get = _TUPLE_OF_LEAVES.get
ARRAY_TYPE = None   # ``ArrayImpl``: tested by identity first (see ``registry.ARRAY_TYPE``)


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
        if (tc := type(c)) is not ARRAY_TYPE and tc not in _default_leaf_types:
          break
      else:
        td = _tuple_of_leaves_get(len(tree))
        if td is None:
          td = _tuple_of_leaves_treedef(len(tree))
        return list(tree), td
    elif t is ARRAY_TYPE or t in _default_leaf_types:
      return [tree], _LEAF_TREEDEF
    leaves = []
    spec = _default_flat(tree, leaves)
  else:
    leaves = []
    spec = _default_flat_pred(tree, leaves.append, is_leaf)
  td = _new(PyTreeDef)  # _make_treedef, inlined on this hot path
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


# -- registration ------------------------------------------------------------------

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


# -- one-level flattening ----------------------------------------------------------

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


# -- Partial and the built-in custom nodes -----------------------------------------

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
