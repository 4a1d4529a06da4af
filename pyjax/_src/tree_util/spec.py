"""Tree-structure specs: the plain-tuple representation behind ``PyTreeDef``.

A leaf is ``None``; an interior node is ``(kind, type, aux, *child_specs)`` where
``kind`` is one of the ``_K_*`` constants below and ``aux`` is the node's static data
(the sorted key tuple of a dict, the aux data of a custom node, the meta-field values
of a dataclass).  Specs are plain tuples, so hashing and equality run at C speed.

Leaf module of the ``tree_util`` family (imports nothing from pyjax).
"""

from __future__ import annotations

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


_new = object.__new__  # allocates without calling __init__ (PyTreeDef, DictKey)

_METADATA_EQ_ERROR = (
    "Exception raised while checking equality of metadata fields of pytree. Make "
    "sure that metadata fields are hashable and have simple equality semantics. "
    "(Note: arrays cannot be passed as metadata fields!)")

_DICT_SORT_ERROR = "Comparator raised exception while sorting pytree dictionary keys."


def _custom_flatten_error(r):
  return ValueError("The to_iterable function for a custom PyTree node should return "
                    f"a (children, aux_data) tuple, got {r!r}")


def _call_flatten(flatten, x):
  """``flatten(x)`` for a custom node, checked to be a ``(children, aux_data)`` pair.

  (The flattening hot paths in tree_util_registry inline this check.)
  """
  r = flatten(x)
  if type(r) is not tuple or len(r) != 2:
    raise _custom_flatten_error(r)
  return r


def _aux_equal(a, b) -> bool:
  if a is b:
    return True
  try:
    return bool(a == b)
  except Exception:
    raise ValueError(_METADATA_EQ_ERROR) from None


# -- spec utilities ----------------------------------------------------------------

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
