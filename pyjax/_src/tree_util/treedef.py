"""``PyTreeDef``: an immutable, hashable wrapper around a structure spec."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from pyjax._src.tree_util.codegen import (
    _COMPILE_CACHE_LIMIT, _COMPILE_MAX_DEPTH, _COMPILE_MAX_NODES, _Mismatch,
    _compile_flatten_up_to, _compile_unflatten, _flatten_up_to, _from_iterable,
    _generic_marker, _make_generic_unflatten, _unflatten_leaf,
)
from pyjax._src.tree_util.spec import (
    _HDR, _K_DICT, _METADATA_EQ_ERROR, _new, _node_data, _spec_depth,
    _spec_from_node_data, _spec_num_leaves, _spec_num_nodes, _spec_repr, _spec_skeleton,
)

if TYPE_CHECKING:  # tree_util_registry imports this module
  from pyjax._src.tree_util.registry import PyTreeRegistry


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
