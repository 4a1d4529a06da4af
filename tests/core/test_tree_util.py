"""Tests for pyjax.tree_util / pyjax.tree, compared against real JAX where installed."""

import copy
import dataclasses
import functools
import glob
import os
import pickle
import re
from collections import OrderedDict, defaultdict, namedtuple

import pytest

import pyjax.tree as ptree
import pyjax.tree_util as tu
from pyjax._src import tree_util as tu_src


# ----------------------------------------------------------------------------------
# Shared test types: registered in pyjax at import, and in JAX on demand.
# ----------------------------------------------------------------------------------

Point = namedtuple("Point", ["x", "y"])
Other = namedtuple("Other", ["x", "y"])


class Box:
  """A custom node with two children and string aux data."""

  def __init__(self, a, b, tag="box"):
    self.a, self.b, self.tag = a, b, tag

  def __repr__(self):
    return f"Box({self.a!r}, {self.b!r}, {self.tag!r})"

  def __eq__(self, other):
    return (type(other) is Box and (self.a, self.b, self.tag) ==
            (other.a, other.b, other.tag))


def _box_flatten(b):
  return (b.a, b.b), b.tag


def _box_unflatten(tag, children):
  return Box(*children, tag=tag)


class Var:
  """A custom node with a variable number of children."""

  def __init__(self, *items):
    self.items = items

  def __repr__(self):
    return f"Var{self.items!r}"

  def __eq__(self, other):
    return type(other) is Var and self.items == other.items


class Keyed:
  """A custom node registered with keys."""

  def __init__(self, a, b):
    self.a, self.b = a, b

  def __eq__(self, other):
    return type(other) is Keyed and (self.a, self.b) == (other.a, other.b)

  def __repr__(self):
    return f"Keyed({self.a!r}, {self.b!r})"


def _keyed_flatten_with_keys(k):
  return ((("A", k.a), ("B", k.b)), None)


class Meta:
  """A custom node whose aux data is an unhashable dict."""

  def __init__(self, x, meta):
    self.x, self.meta = x, meta


@dataclasses.dataclass
class DC:
  x: object
  y: object
  op: str = dataclasses.field(default="add", metadata=dict(static=True))


@dataclasses.dataclass
class DCStatic:
  x: object
  op: str = tu_src.static(default="mul")


class Plain:
  def __init__(self, a, b):
    self.a, self.b = a, b

  def __eq__(self, other):
    return type(other) is Plain and (self.a, self.b) == (other.a, other.b)


class Tag:
  """A static (leafless) node."""

  def __init__(self, name):
    self.name = name

  def __eq__(self, other):
    return type(other) is Tag and other.name == self.name

  def __hash__(self):
    return hash(self.name)

  def __repr__(self):
    return f"Tag({self.name})"


@tu.register_pytree_node_class
class ClassNode:
  def __init__(self, a, b):
    self.a, self.b = a, b

  def tree_flatten(self):
    return (self.a, self.b), "cls"

  @classmethod
  def tree_unflatten(cls, aux, children):
    return cls(*children)

  def __eq__(self, other):
    return type(other) is ClassNode and (self.a, self.b) == (other.a, other.b)


@tu.register_pytree_with_keys_class
class KeyedClass:
  def __init__(self, a, b):
    self.a, self.b = a, b

  def tree_flatten_with_keys(self):
    return ((tu.GetAttrKey("a"), self.a), (tu.GetAttrKey("b"), self.b)), None

  @classmethod
  def tree_unflatten(cls, aux, children):
    return cls(*children)

  def __eq__(self, other):
    return type(other) is KeyedClass and (self.a, self.b) == (other.a, other.b)


def _register(lib):
  lib.register_pytree_node(Box, _box_flatten, _box_unflatten)
  lib.register_pytree_node(Var, lambda v: (v.items, None), lambda _, c: Var(*c))
  lib.register_pytree_with_keys(
      Keyed,
      lambda k: (((lib.DictKey("A"), k.a), (lib.DictKey("B"), k.b)), None),
      lambda _, c: Keyed(*c))
  lib.register_pytree_node(Meta, lambda m: ((m.x,), m.meta),
                           lambda meta, c: Meta(c[0], meta))
  lib.register_dataclass(DC)
  lib.register_dataclass(DCStatic)
  lib.register_dataclass(Plain, data_fields=["a"], meta_fields=["b"])
  lib.register_static(Tag)


_register(tu)
_jax_registered = False


@pytest.fixture
def jtu():
  """jax.tree_util with the shared test types registered (skips without JAX)."""
  global _jax_registered
  jax = pytest.importorskip("jax")
  import jax.tree_util as jtu_mod
  if not _jax_registered:
    _register(jtu_mod)
    jtu_mod.register_pytree_node_class(ClassNode)
    jtu_mod.register_pytree_with_keys_class(KeyedClass)
    _jax_registered = True
  return jtu_mod


def _err(fn):
  """(exception type, message) raised by fn(), or None."""
  try:
    fn()
  except Exception as e:  # noqa: BLE001
    return type(e), str(e)
  return None


# ----------------------------------------------------------------------------------
# Trees used across tests
# ----------------------------------------------------------------------------------

TREES = [
    1,
    "leaf",
    None,
    (),
    [],
    {},
    (1, 2),
    (1,),
    [1, [2, 3]],
    {"b": 1, "a": 2},
    {2: "x", 1: "y"},
    (1, {"a": None, "b": [2, (3,)]}),
    Point(1, 2),
    Point(Point(1, 2), [3]),
    OrderedDict([("b", 1), ("a", 2)]),
    defaultdict(list, {"b": 1, "a": 2}),
    Box(1, (2, 3)),
    Box(None, Box(1, 2, "inner"), "outer"),
    Var(),
    Var(1, 2, 3),
    DC(1, [2, 3]),
    DC(1, 2, op="sub"),
    DCStatic(5),
    Plain(1, 2),
    (Tag("t"), 1),
    ClassNode(1, (2,)),
    KeyedClass(1, {"z": 2}),
    Keyed(1, [2]),
    [None, (None,), {"n": None}],
    {"x": [1, 2], "y": (3, {"z": 4}), "w": OrderedDict(q=5)},
]


def _id(t, n):
  """A test id from ``repr(t)`` without object addresses (the same in every process)."""
  return re.sub(r" at 0x[0-9a-fA-F]+", "", repr(t))[:n]


@pytest.mark.parametrize("tree", TREES, ids=lambda t: _id(t, 40))
def test_flatten_matches_jax(jtu, tree):
  leaves, td = tu.tree_flatten(tree)
  jleaves, jtd = jtu.tree_flatten(tree)
  assert leaves == jleaves
  assert repr(td) == repr(jtd)
  assert str(td) == str(jtd)
  assert td.num_leaves == jtd.num_leaves
  assert td.num_nodes == jtd.num_nodes
  assert [repr(c) for c in td.children()] == [repr(c) for c in jtd.children()]
  assert tu.treedef_is_leaf(td) == jtu.treedef_is_leaf(jtd)
  nd, jnd = td.node_data(), jtd.node_data()
  if jnd is None:
    assert nd is None
  else:
    assert nd[0] is jnd[0]
    assert nd[1] == jnd[1]


@pytest.mark.parametrize("tree", TREES, ids=lambda t: _id(t, 40))
def test_unflatten_roundtrip(tree):
  leaves, td = tu.tree_flatten(tree)
  # Call several times: the first use is generic, later ones compiled.
  for _ in range(4):
    out = tu.tree_unflatten(td, leaves)
    assert tu.tree_structure(out) == td
    assert tu.tree_leaves(out) == leaves
  if type(tree) in (tuple, list, dict, OrderedDict, defaultdict, Point, Box, DC, Plain):
    assert out == tree
    assert type(out) is type(tree)
  # Fresh, equal treedefs share the compiled function.
  td2 = tu.tree_structure(tree)
  assert td2 == td and hash(td2) == hash(td)
  assert tu.tree_leaves(td2.unflatten(leaves)) == leaves


@pytest.mark.parametrize("tree", TREES, ids=lambda t: _id(t, 40))
def test_paths_match_jax(jtu, tree):
  pairs, td = tu.tree_flatten_with_path(tree)
  jpairs, jtd = jtu.tree_flatten_with_path(tree)
  assert repr(td) == repr(jtd)
  assert [(repr(p), v) for p, v in pairs] == [(repr(p), v) for p, v in jpairs]
  for (p, _), (jp, _) in zip(pairs, jpairs):
    assert tu.keystr(p) == jtu.keystr(jp)
    if all(type(k).__module__.startswith("jax") for k in jp):  # not KeyedClass's keys
      assert tu.keystr(p, simple=True, separator="/") == jtu.keystr(
          jp, simple=True, separator="/")


def test_leaves_structure_basic():
  assert tu.tree_leaves([1, (2, {"b": 3, "a": 4}), None]) == [1, 2, 4, 3]
  assert ptree.leaves({"a": None, "b": [None]}) == []
  assert repr(tu.tree_structure((1, {"a": 2}))) == "PyTreeDef((*, {'a': *}))"
  assert repr(tu.tree_structure(None)) == "PyTreeDef(None)"
  assert repr(tu.tree_structure(5)) == "PyTreeDef(*)"
  assert repr(tu.tree_structure(Box(1, 2))) == "PyTreeDef(CustomNode(Box[box], [*, *]))"
  assert repr(tu.tree_structure(DC(1, 2))) == (
      "PyTreeDef(CustomNode(DC[('add',)], [*, *]))")


def test_dict_sorted_and_unflatten_order():
  leaves, td = tu.tree_flatten({"b": 1, "a": 2, "c": 3})
  assert leaves == [2, 1, 3]
  assert list(td.unflatten([7, 8, 9])) == ["a", "b", "c"]
  assert td.node_data() == (dict, ["a", "b", "c"])
  od_leaves, od_td = tu.tree_flatten(OrderedDict(b=1, a=2))
  assert od_leaves == [1, 2]
  assert od_td.unflatten([5, 6]) == OrderedDict(b=5, a=6)
  dd = defaultdict(int, {"b": 1, "a": 2})
  dd_leaves, dd_td = tu.tree_flatten(dd)
  assert dd_leaves == [2, 1]
  out = dd_td.unflatten([5, 6])
  assert type(out) is defaultdict and out.default_factory is int
  assert dict(out) == {"a": 5, "b": 6}


def test_dict_keys_equal_but_distinct_types():
  # {1: *} and {True: *} are equal structures (as in JAX), but each unflattens with
  # its own keys even after the shared compiled unflatten exists.
  td_int = tu.tree_structure({1: 0})
  td_bool = tu.tree_structure({True: 0})
  assert td_int == td_bool
  for _ in range(3):
    assert list(td_int.unflatten([5]))[0] is not True
    assert list(td_bool.unflatten([5]))[0] is True


def test_unsortable_dict_keys(jtu):
  tree = {"a": 1, 1: 2}
  assert _err(lambda: tu.tree_flatten(tree)) == _err(lambda: jtu.tree_flatten(tree))
  assert _err(lambda: tu.tree_flatten(tree))[0] is ValueError


def test_subclasses_are_leaves(jtu):
  class MyDict(dict):
    pass

  class MyTuple(tuple):
    pass

  class MyList(list):
    pass

  class SubPoint(Point):
    pass

  tree = (MyDict(a=1), MyTuple((1, 2)), MyList([1]), SubPoint(1, 2))
  leaves, td = tu.tree_flatten(tree)
  jleaves, jtd = jtu.tree_flatten(tree)
  assert leaves == jleaves and repr(td) == repr(jtd)
  assert tu.is_tree_node(SubPoint) and not tu.is_tree_node(MyDict)


def test_none_handling():
  assert tu.tree_leaves(None) == []
  assert tu.tree_map(lambda x: x * 2, (1, None, [2])) == (2, None, [4])
  assert tu.tree_leaves([1, None], is_leaf=lambda x: x is None) == [1, None]
  assert tu.tree_map(lambda x: "N" if x is None else x, (1, None),
                     is_leaf=lambda x: x is None) == (1, "N")
  td = tu.tree_structure((None, 1))
  assert td.num_leaves == 1 and td.num_nodes == 3
  assert tu.treedef_is_leaf(tu.tree_structure(None))
  assert tu.tree_unflatten(tu.tree_structure(None), []) is None
  # None-as-leaf registry.
  leaves, td2 = tu_src.none_leaf_registry.flatten((1, None))
  assert leaves == [1, None]
  assert td2 == tu.tree_structure((1, 2))
  assert td2.unflatten([3, 4]) == (3, 4)


def test_is_leaf():
  pred = lambda x: isinstance(x, tuple) and len(x) == 2
  tree = (1, (2, 3), [4, (5, 6)])
  leaves, td = tu.tree_flatten(tree, is_leaf=pred)
  assert leaves == [1, (2, 3), 4, (5, 6)] and repr(td) == "PyTreeDef((*, *, [*, *]))"
  # Predicate on the root.
  assert tu.tree_flatten((1, 2), is_leaf=lambda x: True)[0] == [(1, 2)]
  # Predicate exceptions propagate.
  with pytest.raises(ZeroDivisionError):
    tu.tree_flatten([1], is_leaf=lambda x: 1 / 0)
  # tree_map with is_leaf and several trees.
  out = tu.tree_map(lambda x, y: (x, y), ((1, 2), 3), (([5], 6), 7),
                    is_leaf=lambda x: isinstance(x, tuple) and x[:1] == (1,))
  assert out == (((1, 2), ([5], 6)), (3, 7))
  assert tu.tree_structure([1, 2], is_leaf=lambda x: isinstance(x, list)) == \
      tu.tree_structure(0)


def test_is_leaf_takes_path(jtu):
  tree = {"a": (1, 2), "b": (3, 4)}
  pred = lambda p, x: len(p) == 1 and p[0] == DictKeyA
  DictKeyA = tu.DictKey("a")
  pairs, td = tu.tree_flatten_with_path(tree, is_leaf=pred, is_leaf_takes_path=True)
  jA = jtu.DictKey("a")
  jpairs, jtd = jtu.tree_flatten_with_path(
      tree, is_leaf=lambda p, x: len(p) == 1 and p[0] == jA, is_leaf_takes_path=True)
  assert repr(td) == repr(jtd)
  assert [(repr(p), v) for p, v in pairs] == [(repr(p), v) for p, v in jpairs]
  assert tu.tree_leaves_with_path(tree, is_leaf=lambda x: isinstance(x, tuple)) == [
      ((tu.DictKey("a"),), (1, 2)), ((tu.DictKey("b"),), (3, 4))]


# ----------------------------------------------------------------------------------
# tree_map and structure errors
# ----------------------------------------------------------------------------------

def test_tree_map_values():
  assert tu.tree_map(lambda x: x + 1, {"a": 1, "b": (2, [3])}) == {"a": 2, "b": (3, [4])}
  assert tu.tree_map(lambda a, b, c: a + b + c, [1, 2], [3, 4], [5, 6]) == [9, 12]
  # Subtrees of the other trees at leaf positions are passed whole.
  assert tu.tree_map(lambda a, b: (a, b), (1, 2), ([1, 2], {"a": 3})) == \
      ((1, [1, 2]), (2, {"a": 3}))
  assert tu.tree_map(lambda a, b: (a, b), (1, 2), (None, 3)) == ((1, None), (2, 3))
  assert tu.tree_map(lambda x: x, ()) == ()
  assert tu.tree_map(lambda x: x + 1, 1) == 2
  assert ptree.map(lambda x: x * 2, Box(1, 2, "t")) == Box(2, 4, "t")
  assert ptree.map(lambda x: x * 2, DC(1, 2, "sub")) == DC(2, 4, "sub")


MISMATCHES = [
    ((1, 2), (1, 2, 3)),
    ((1, 2), [1, 2]),
    ([1, 2], [1]),
    ({"a": 1}, {"b": 1}),
    ({"a": 1, "b": 2}, {"b": 1}),
    ({"a": 1}, {"a": 1, "c": 2}),
    ({"a": 1}, (1,)),
    ({"a": 1}, OrderedDict(a=1)),
    ({"a": 1}, defaultdict(list, a=1)),
    (OrderedDict(a=1), {"a": 1}),
    (OrderedDict(a=1), OrderedDict(b=1)),
    (OrderedDict(a=1), OrderedDict(a=1, c=2)),
    (None, 1),
    ((None,), (1,)),
    ((None, 1), (5, 1)),
    ((1, 2), None),
    ([1], None),
    (Point(1, 2), (1, 2)),
    (Point(1, 2), Other(1, 2)),
    (Point(1, 2), None),
    (Box(1, 2), (1, 2)),
    (Box(1, 2), Box(1, 2, "other")),
    (Box(1, 2), Var(1, 2)),
    (Var(1, 2), Var(1, 2, 3)),
    (DC(1, 2), DC(1, 2, "sub")),
    (DC(1, 2), (1, 2)),
    (Plain(1, 2), Plain(1, 3)),
    ((1, {"a": [1, 2]}), (1, {"a": [1, 2, 3]})),
    ([1, (2, {"k": None})], [1, (2, {"k": 3})]),
]


@pytest.mark.parametrize("prefix,full", MISMATCHES, ids=lambda t: _id(t, 30))
def test_flatten_up_to_errors_match_jax(jtu, prefix, full):
  td = tu.tree_structure(prefix)
  jtd = jtu.tree_structure(prefix)
  expected = _err(lambda: jtd.flatten_up_to(full))
  assert expected is not None
  # Also after the compiled flatten_up_to has been built for this structure.
  for _ in range(3):
    td.flatten_up_to(prefix)
    assert _err(lambda: td.flatten_up_to(full)) == expected
    assert _err(lambda: tu.tree_structure(prefix).flatten_up_to(full)) == expected


@pytest.mark.parametrize("prefix,full", MISMATCHES, ids=lambda t: _id(t, 30))
def test_tree_map_errors_match_jax(jtu, prefix, full):
  f = lambda *xs: xs[0]
  expected = _err(lambda: jtu.tree_map(f, prefix, full))
  assert expected is not None
  assert _err(lambda: tu.tree_map(f, prefix, full)) == expected
  expected = _err(lambda: jtu.tree_map_with_path(f, prefix, full))
  assert _err(lambda: tu.tree_map_with_path(f, prefix, full)) == expected


def test_tree_map_error_message_examples():
  with pytest.raises(ValueError, match="Custom node type mismatch|different types"):
    tu.tree_map(lambda a, b: a, Box(1, 2), (1, 2))
  with pytest.raises(ValueError, match="Tuple arity mismatch: 3 != 2; tuple: "):
    tu.tree_structure((1, 2)).flatten_up_to((1, 2, 3))
  with pytest.raises(ValueError, match="Dict key mismatch; expected keys: \\['a'\\]; "
                     "present keys: \\['b'\\]."):
    tu.tree_structure({"a": 1}).flatten_up_to({"b": 1})
  with pytest.raises(ValueError, match="Custom node type mismatch: expected type: "):
    tu.tree_structure(Box(1, 2)).flatten_up_to((1, 2))
  with pytest.raises(ValueError, match="pytree structure error: different lengths of "
                     "tuple at key path\n    tree_map tree\n"):
    tu.tree_map(lambda a, b: a, (1, 2), (1, 2, 3))


def test_flatten_up_to_values(jtu):
  cases = [((1, 2), ([1, 2], {"a": 3})), (1, (1, 2)), ({"a": 1, "b": 2}, {"b": 1, "a": 2}),
           ((None,), (None,)), (Box(1, 2), Box([1], (2,))), (DC(1, 2), DC((1,), 2)),
           (Point(1, 2), Point(3, [4])), (Keyed(1, 2), Keyed(3, 4))]
  for prefix, full in cases:
    expected = jtu.tree_structure(prefix).flatten_up_to(full)
    td = tu.tree_structure(prefix)
    for _ in range(3):
      assert td.flatten_up_to(full) == expected


def test_unflatten_errors(jtu):
  td, jtd = tu.tree_structure((1, 2)), jtu.tree_structure((1, 2))
  for leaves in ([1], [1, 2, 3], []):
    assert _err(lambda: td.unflatten(leaves)) == _err(lambda: jtd.unflatten(leaves))
  assert td.unflatten(iter([5, 6])) == (5, 6)
  assert td.unflatten(x for x in (5, 6)) == (5, 6)
  with pytest.raises(TypeError):
    td.unflatten(5)


def test_bad_custom_flatten(jtu):
  class Bad:
    pass

  class Bad3:
    pass

  for lib in (tu, jtu):
    lib.register_pytree_node(Bad, lambda b: 5, lambda m, c: Bad())
    lib.register_pytree_node(Bad3, lambda b: (1, 2, 3), lambda m, c: Bad3())
  assert _err(lambda: tu.tree_flatten(Bad())) == _err(lambda: jtu.tree_flatten(Bad()))
  assert _err(lambda: tu.tree_flatten(Bad3())) == _err(lambda: jtu.tree_flatten(Bad3()))


def test_duplicate_registration(jtu):
  fl, unfl = (lambda x: ((), None)), (lambda aux, c: None)
  for typ in (Box, tuple, dict, DC):
    assert _err(lambda: tu.register_pytree_node(typ, fl, unfl)) == \
        _err(lambda: jtu.register_pytree_node(typ, fl, unfl))
  assert _err(lambda: tu.register_pytree_node(Box, fl, unfl))[0] is ValueError


def test_register_late_type_that_was_a_leaf():
  class Late:
    def __init__(self, v):
      self.v = v

  assert tu.tree_leaves([Late(1)])[0].v == 1  # a leaf, cached as such
  tu.register_pytree_node(Late, lambda l: ((l.v,), None), lambda _, c: Late(*c))
  assert tu.tree_leaves([Late(1)]) == [1]
  assert tu.is_tree_node(Late)


# ----------------------------------------------------------------------------------
# Custom nodes, dataclasses, statics, Partial
# ----------------------------------------------------------------------------------

def test_custom_node_children_are_tuple():
  seen = []

  class Rec:
    def __init__(self, *c):
      self.c = c

  tu.register_pytree_node(Rec, lambda r: (list(r.c), None),
                          lambda _, c: (seen.append(type(c)), Rec(*c))[1])
  td = tu.tree_structure(Rec(1, 2))
  for _ in range(3):
    td.unflatten([1, 2])
  assert seen == [tuple] * 3


def test_custom_unhashable_aux(jtu):
  td = tu.tree_structure(Meta(1, {"k": [1]}))
  jtd = jtu.tree_structure(Meta(1, {"k": [1]}))
  assert repr(td) == repr(jtd)
  assert td == tu.tree_structure(Meta(2, {"k": [1]}))
  assert td != tu.tree_structure(Meta(2, {"k": [2]}))
  hash(td)
  assert hash(td) == hash(tu.tree_structure(Meta(3, {"k": [1]})))
  for _ in range(3):
    out = td.unflatten([7])
    assert out.x == 7 and out.meta == {"k": [1]}


def test_array_aux_equality_error():
  np = pytest.importorskip("numpy")
  a = tu.tree_structure(Meta(1, np.arange(2)))
  b = tu.tree_structure(Meta(1, np.arange(2)))
  with pytest.raises(ValueError, match="Exception raised while checking equality of "
                     "metadata fields of pytree"):
    a == b  # noqa: B015


def test_dataclass():
  leaves, td = tu.tree_flatten(DC(1, 2))
  assert leaves == [1, 2]
  assert repr(td) == "PyTreeDef(CustomNode(DC[('add',)], [*, *]))"
  assert td.node_data() == (DC, ("add",))
  assert td.unflatten([5, 6]) == DC(5, 6, "add")
  assert tu.tree_leaves_with_path(DC(1, 2)) == [((tu.GetAttrKey("x"),), 1),
                                                 ((tu.GetAttrKey("y"),), 2)]
  assert tu.tree_flatten(DCStatic(3))[0] == [3]
  assert repr(tu.tree_structure(DCStatic(3))) == \
      "PyTreeDef(CustomNode(DCStatic[('mul',)], [*]))"
  assert tu.tree_flatten(Plain(1, 2))[0] == [1]
  assert tu.tree_structure(Plain(1, 2)).unflatten([9]) == Plain(9, 2)
  assert tu.flatten_one_level(DC(1, 2)) == ([1, 2], ("add",))


def test_dataclass_registration_errors(jtu):
  @dataclasses.dataclass
  class DC2:
    x: int
    y: int

  class NotDC:
    pass

  calls = [
      lambda lib: lib.register_dataclass(DC2, data_fields=["x"]),
      lambda lib: lib.register_dataclass(NotDC),
      lambda lib: lib.register_dataclass(DC2, data_fields=["x"], meta_fields=[]),
      lambda lib: lib.register_dataclass(DC2, data_fields=["x", "z", "y"],
                                         meta_fields=[]),
      lambda lib: lib.register_dataclass(DC2, data_fields=["x", "y"], meta_fields=["x"]),
  ]
  for call in calls:
    expected = _err(lambda: call(jtu))
    assert expected is not None
    assert _err(lambda: call(tu)) == expected


def test_dataclass_drop_fields():
  @dataclasses.dataclass
  class WithCache:
    x: int
    cache: object = None

    def __post_init__(self):
      pass

  with pytest.raises(ValueError, match="Missing fields"):
    tu.register_dataclass(WithCache, data_fields=["x"], meta_fields=[])

  @dataclasses.dataclass
  class WithCache2:
    x: int
    cache: object = None

  tu.register_dataclass(WithCache2, data_fields=["x"], meta_fields=[],
                        drop_fields=["cache"])
  assert tu.tree_leaves(WithCache2(1, "c")) == [1]
  assert tu.tree_map(lambda v: v + 1, WithCache2(1, "c")) == WithCache2(2, None)


def test_register_static():
  leaves, td = tu.tree_flatten((Tag("t"), 2))
  assert leaves == [2]
  assert repr(td) == "PyTreeDef((CustomNode(Tag[Tag(t)], []), *))"
  assert td.unflatten([3]) == (Tag("t"), 3)
  assert td != tu.tree_structure((Tag("u"), 2))
  assert tu.tree_leaves_with_path(Tag("x")) == []


def test_partial():
  p = tu.Partial(max, 1, key=2)
  leaves, td = tu.tree_flatten(p)
  assert leaves == [1, 2]
  assert repr(td) == ("PyTreeDef(CustomNode(Partial[<built-in function max>], "
                      "[(*,), {'key': *}]))")
  q = td.unflatten([5, abs])
  assert isinstance(q, tu.Partial) and q.args == (5,) and q.keywords == {"key": abs}
  assert tu.Partial(max, 1)(3) == 3
  assert repr(tu.Partial(max, 1)) == "Partial(<built-in function max>, 1)"
  # A functools.partial inside stays static (not merged into the pytree).
  inner = functools.partial(max, 1)
  pp = tu.Partial(inner, 2)
  assert pp(3) == 3
  assert tu.tree_leaves(pp) == [2]
  assert repr(tu.tree_structure(pp)) == (
      "PyTreeDef(CustomNode(Partial[_HashableCallableShim(functools.partial("
      "<built-in function max>, 1))], [(*,), {}]))")
  assert tu.tree_map(lambda x: x * 10, tu.Partial(max, 1))(5) == 10
  pickled = pickle.loads(pickle.dumps(tu.Partial(max, 1)))
  assert pickled(7) == 7 and isinstance(pickled, tu.Partial)


def test_keyed_nodes():
  assert tu.tree_leaves_with_path(Keyed(1, 2)) == [((tu.DictKey("A"),), 1),
                                                   ((tu.DictKey("B"),), 2)]
  assert tu.tree_flatten(Keyed(1, 2))[0] == [1, 2]
  assert tu.tree_leaves_with_path(KeyedClass(1, 2)) == [((tu.GetAttrKey("a"),), 1),
                                                        ((tu.GetAttrKey("b"),), 2)]
  assert tu.tree_leaves_with_path(Box(1, 2)) == [((tu.FlattenedIndexKey(0),), 1),
                                                 ((tu.FlattenedIndexKey(1),), 2)]


# ----------------------------------------------------------------------------------
# Key entries and keystr
# ----------------------------------------------------------------------------------

def test_key_entries(jtu):
  keys = [tu.DictKey(1), tu.DictKey("a"), tu.DictKey((1, "a")), tu.SequenceKey(3),
          tu.GetAttrKey("x"), tu.FlattenedIndexKey(2)]
  jkeys = [jtu.DictKey(1), jtu.DictKey("a"), jtu.DictKey((1, "a")), jtu.SequenceKey(3),
           jtu.GetAttrKey("x"), jtu.FlattenedIndexKey(2)]
  assert [repr(k) for k in keys] == [repr(k) for k in jkeys]
  assert [str(k) for k in keys] == [str(k) for k in jkeys]
  assert tu.keystr(tuple(keys)) == jtu.keystr(tuple(jkeys))
  assert tu.keystr(tuple(keys), simple=True, separator=".") == jtu.keystr(
      tuple(jkeys), simple=True, separator=".")
  assert tu.keystr(("a", 1)) == "a1"
  assert tu.keystr(()) == ""
  for cls in (tu.DictKey, tu.SequenceKey, tu.GetAttrKey, tu.FlattenedIndexKey):
    assert cls.__match_args__ == getattr(jtu, cls.__name__).__match_args__


def test_key_entry_semantics():
  assert tu.DictKey(1) == tu.DictKey(1)
  assert tu.DictKey(1) != tu.SequenceKey(1)
  assert tu.SequenceKey(1) != 1
  assert hash(tu.DictKey("a")) == hash(tu.DictKey("a"))
  assert len({tu.SequenceKey(0), tu.SequenceKey(0), tu.SequenceKey(1)}) == 2
  assert tu.SequenceKey(idx=3).idx == 3
  assert tu.DictKey(key="k").key == "k"
  assert tu.GetAttrKey(name="n").name == "n"
  assert tu.FlattenedIndexKey(key=4).key == 4
  with pytest.raises(AttributeError):
    tu.DictKey(1).key = 2
  with pytest.raises(TypeError):
    tu.SequenceKey("a")
  with pytest.raises(TypeError):
    tu.GetAttrKey(1)
  for k in (tu.DictKey("a"), tu.SequenceKey(0), tu.GetAttrKey("x"),
            tu.FlattenedIndexKey(1)):
    assert pickle.loads(pickle.dumps(k)) == k

  def name(k):
    match k:
      case tu.SequenceKey(idx=i):
        return ("seq", i)
      case tu.DictKey(key=key):
        return ("dict", key)
      case tu.GetAttrKey(name=n):
        return ("attr", n)
      case tu.FlattenedIndexKey(key=i):
        return ("flat", i)
  assert name(tu.SequenceKey(2)) == ("seq", 2)
  assert name(tu.DictKey("a")) == ("dict", "a")
  assert name(tu.GetAttrKey("x")) == ("attr", "x")
  assert name(tu.FlattenedIndexKey(1)) == ("flat", 1)


def test_map_with_path():
  out = tu.tree_map_with_path(lambda p, x, y: (tu.keystr(p), x, y),
                              {"a": 1, "b": (2,)}, {"a": 3, "b": (4,)})
  assert out == {"a": ("['a']", 1, 3), "b": (("['b'][0]", 2, 4),)}
  assert ptree.map_with_path(lambda p, x: len(p), [1, [2]]) == [1, [2]]
  assert ptree.leaves_with_path(Point(1, [2])) == [
      ((tu.GetAttrKey("x"),), 1), ((tu.GetAttrKey("y"), tu.SequenceKey(0)), 2)]
  assert tu.tree_flatten_with_path(1) == ([((), 1)], tu.tree_structure(1))
  assert tu.tree_flatten_with_path(None)[0] == []


# ----------------------------------------------------------------------------------
# PyTreeDef API
# ----------------------------------------------------------------------------------

def test_treedef_equality_and_hash():
  td = tu.tree_structure
  assert td({"b": 1, "a": 2}) == td({"a": 3, "b": 4})
  assert td(Point(1, 2)) != td(Other(1, 2))
  assert td(Box(1, 2)) == td(Box(3, 4))
  assert td(Box(1, 2)) != td(Box(1, 2, "x"))
  assert td((1, 2)) != td([1, 2])
  assert td((1, 2)) != 5
  assert not (td(1) == None)  # noqa: E711
  assert td(1) != td(None)
  assert {td((1, 2)): "v"}[td((3, 4))] == "v"
  assert hash(td((1, {"a": 2}))) == hash(td((5, {"a": 6})))
  with pytest.raises(TypeError):
    td(1) < td(2)  # noqa: B015
  with pytest.raises(TypeError):
    tu.PyTreeDef()


def test_treedef_pickle_copy():
  for tree in [(1, {"a": 2}), OrderedDict(a=1), Point(1, [2]), DC(1, 2), Box(1, 2),
               None, 5]:
    td = tu.tree_structure(tree)
    td2 = pickle.loads(pickle.dumps(td))
    assert td2 == td and repr(td2) == repr(td)
    assert td2.num_leaves == td.num_leaves
    assert copy.copy(td) == td and copy.deepcopy(td) == td


def test_treedef_children_tuple_compose():
  x = [(1, 2), 3, {"a": 4}]
  td = tu.tree_structure(x)
  assert tu.treedef_children(td) == [tu.tree_structure(v) for v in x]
  assert [repr(c) for c in td.children()] == [
      "PyTreeDef((*, *))", "PyTreeDef(*)", "PyTreeDef({'a': *})"]
  assert tu.treedef_children(tu.tree_structure(1)) == []
  assert tu.tree_structure(None).children() == []
  xy = tu.treedef_tuple([tu.tree_structure([1, 2]), tu.tree_structure({"a": 1})])
  assert xy == tu.tree_structure(([1, 2], {"a": 1}))
  assert xy.num_leaves == 3
  assert repr(tu.treedef_tuple([])) == "PyTreeDef(())"
  comp = tu.tree_structure((1, 2)).compose(tu.tree_structure([1, 1]))
  assert repr(comp) == "PyTreeDef(([*, *], [*, *]))"
  assert comp.num_leaves == 4
  assert repr(tu.tree_structure((1, None)).compose(tu.tree_structure((1, 2)))) == \
      "PyTreeDef(((*, *), None))"
  with pytest.raises(TypeError):
    tu.treedef_tuple([1])


def test_from_node_data_and_children():
  reg = tu.default_registry
  leaf = tu.tree_structure(1)
  mk = tu.PyTreeDef.from_node_data_and_children
  assert mk(reg, (tuple, None), [leaf, leaf]) == tu.tree_structure((1, 2))
  assert repr(mk(reg, (dict, ["a", "b"]), [leaf, leaf])) == "PyTreeDef({'a': *, 'b': *})"
  assert mk(reg, None, []) == leaf
  assert repr(mk(reg, (type(None), None), [])) == "PyTreeDef(None)"
  assert repr(mk(reg, (Box, "t"), [leaf, leaf])) == "PyTreeDef(CustomNode(Box[t], [*, *]))"
  assert repr(mk(reg, (Point, None), [leaf, leaf])) == \
      "PyTreeDef(CustomNode(namedtuple[Point], [*, *]))"
  with pytest.raises(RuntimeError, match="Could not find type"):
    mk(reg, (int, None), [])
  with pytest.raises(RuntimeError, match="Number of keys and entries does not match"):
    mk(reg, (dict, ("a", "b")), [leaf])
  for tree in TREES:
    td = tu.tree_structure(tree)
    if td.node_data() is not None:
      assert mk(reg, td.node_data(), td.children()) == td


def test_walk_and_from_iterable_tree():
  td = tu.tree_structure((1, {"a": 2}))
  assert td.walk(lambda c, nd: (nd, c), lambda x: x * 10, [1, 2]) == \
      (None, (10, (["a"], (20,))))
  td_none = tu.tree_structure((None, 1))
  assert td_none.walk(lambda c, nd: ("N", c, nd), lambda x: ("L", x), [5]) == \
      ("N", (("N", (), None), ("L", 5)), None)
  assert tu.tree_structure((1, [2, 3])).from_iterable_tree((7, (8, 9))) == (7, [8, 9])
  assert tu.build_tree(tu.tree_structure({"a": 1, "b": [2]}), [1, [2]]) == \
      {"a": 1, "b": [2]}
  assert tu.tree_structure(Box(1, 2)).from_iterable_tree([3, 4]) == Box(3, 4)


def test_node_data():
  assert tu.tree_structure(1).node_data() is None
  assert tu.tree_structure((1,)).node_data() == (tuple, None)
  assert tu.tree_structure([1]).node_data() == (list, None)
  assert tu.tree_structure(None).node_data() == (type(None), None)
  assert tu.tree_structure(Point(1, 2)).node_data() == (Point, None)
  assert tu.tree_structure(Box(1, 2)).node_data() == (Box, "box")
  assert tu.tree_structure(OrderedDict(b=1, a=2)).node_data() == (OrderedDict, ("b", "a"))


def test_flatten_one_level(jtu):
  for tree in [(1, 2), [1, 2], None, {"b": 1, "a": 2}, OrderedDict(b=1, a=2),
               defaultdict(int, b=1), Point(1, 2), Box(1, 2), DC(1, 2)]:
    ch, aux = tu.flatten_one_level(tree)
    jch, jaux = jtu.flatten_one_level(tree)
    assert list(ch) == list(jch) and aux == jaux
    kch, kaux = tu.flatten_one_level_with_keys(tree)
    jkch, jkaux = jtu.flatten_one_level_with_keys(tree)
    assert kaux == jkaux
    if not isinstance(tree, Point):  # JAX 0.10.2 repeats the first field's key here
      assert [(repr(k), v) for k, v in kch] == [(repr(k), v) for k, v in jkch]
  assert [repr(k) for k, _ in tu.flatten_one_level_with_keys(Point(1, 2))[0]] == [
      "GetAttrKey(name='x')", "GetAttrKey(name='y')"]
  for lib in (tu, jtu):
    with pytest.raises(ValueError, match="can't tree-flatten type: <class 'int'>"):
      lib.flatten_one_level(1)


def test_is_tree_node_and_all_leaves(jtu):
  for t in (tuple, list, dict, type(None), Point, Box, DC, int, str, OrderedDict):
    assert tu.is_tree_node(t) == jtu.is_tree_node(t)
  cases = [([1, 2], None), ([1, (2,)], None), ([None], None),
           ([1, (2,)], lambda x: isinstance(x, tuple))]
  for items, pred in cases:
    assert tu.all_leaves(items, pred) == jtu.all_leaves(items, pred)


# ----------------------------------------------------------------------------------
# Reductions, transpose, broadcast
# ----------------------------------------------------------------------------------

def test_reduce_all(jtu):
  add = lambda a, b: a + b
  assert tu.tree_reduce(add, [1, (2, 3)]) == 6
  assert tu.tree_reduce(add, [1, 2, 3], 10) == 16
  assert ptree.reduce(add, {"a": 1}, 5) == 6
  assert _err(lambda: tu.tree_reduce(add, [])) == _err(lambda: jtu.tree_reduce(add, []))
  pair = lambda a, b: (a, b)
  assert tu.tree_reduce_associative(pair, [1, 2, 3, 4, 5]) == \
      jtu.tree_reduce_associative(pair, [1, 2, 3, 4, 5])
  assert _err(lambda: tu.tree_reduce_associative(pair, [])) == \
      _err(lambda: jtu.tree_reduce_associative(pair, []))
  assert tu.tree_reduce_associative(pair, [], identity=0) == 0
  assert ptree.reduce_associative(add, [1, 2, 3]) == 6
  assert tu.tree_all([1, (True, 0)]) is False
  assert tu.tree_all([]) is True and tu.tree_all(None) is True
  assert ptree.all([1, {"a": True}]) is True
  assert tu.tree_all([None], is_leaf=lambda x: x is None) is False


def test_transpose(jtu):
  outer, inner = tu.tree_structure([0, 0]), tu.tree_structure((0, 0))
  assert tu.tree_transpose(outer, inner, [(1, 2), (3, 4)]) == ([1, 3], [2, 4])
  assert tu.tree_transpose(outer, None, [(1, 2), (3, 4)]) == ([1, 3], [2, 4])
  assert ptree.transpose(tu.tree_structure({"a": 0, "b": 0}), tu.tree_structure([0, 0]),
                         {"a": [1, 2], "b": [3, 4]}) == [{"a": 1, "b": 3},
                                                         {"a": 2, "b": 4}]
  bad = lambda lib: lib.tree_transpose(lib.tree_structure([0, 0]),
                                       lib.tree_structure((0, 0, 0)), [(1, 2), (3, 4)])
  assert _err(lambda: bad(tu)) == _err(lambda: bad(jtu))


def test_broadcast(jtu):
  assert tu.tree_broadcast((1, 2), ([0, 0], {"a": 0, "b": 0})) == \
      ([1, 1], {"a": 2, "b": 2})
  assert ptree.broadcast(1, {"a": [0, 0]}) == {"a": [1, 1]}
  assert _err(lambda: tu.tree_broadcast((1, 2), ([0, 0],))) == \
      _err(lambda: jtu.tree_broadcast((1, 2), ([0, 0],)))
  assert tu_src.broadcast_prefix((1, [2]), ((0, 0), [0])) == [1, 1, 2]
  full = tu.tree_structure(((0, 0), [0]))
  leaves, prefix = tu.tree_flatten((1, [2]))
  assert tu_src.broadcast_flattened_prefix_with_treedef(leaves, prefix, full) == [1, 1, 2]


def test_prefix_and_equality_errors():
  jsrc = pytest.importorskip("jax._src.tree_util")
  pairs = [({"a": 1}, {"a": 1, "c": 2}), ((1, [2]), (1, (2,))), (Box(1, 2), Box(1, 2, "q")),
           ({"a": 1}, {"a": 1}), (DC(1, (2,)), DC(1, (2, 3)))]
  for t1, t2 in pairs:
    mine = [str(e("in_axes")) for e in tu_src.prefix_errors(t1, t2)]
    theirs = [str(e("in_axes")) for e in jsrc.prefix_errors(t1, t2)]
    assert mine == theirs
    assert [(tu.keystr(p), a, b, c) for p, a, b, c in tu_src.equality_errors(t1, t2)] == \
        [(jsrc.keystr(p), a, b, c) for p, a, b, c in jsrc.equality_errors(t1, t2)]
  td1, td2 = tu.tree_structure((1, [2])), tu.tree_structure((1, (2,)))
  assert [c for *_, c in tu_src.equality_errors_pytreedef(td1, td2)] == [
      "their Python types differ"]


# ----------------------------------------------------------------------------------
# Public surface
# ----------------------------------------------------------------------------------

def test_public_names_cover_jax():
  jax = pytest.importorskip("jax")
  import jax.tree
  import jax.tree_util
  for name in dir(jax.tree_util):
    if not name.startswith("_"):
      assert hasattr(tu, name), name
  for name in dir(jax.tree):
    if not name.startswith("_"):
      assert hasattr(ptree, name), name


def test_tree_module_aliases():
  assert ptree.flatten((1, 2))[0] == [1, 2]
  assert ptree.structure((1, 2)) == tu.tree_structure((3, 4))
  assert ptree.unflatten(ptree.structure([1]), [5]) == [5]
  assert ptree.flatten_with_path([1])[0] == [((tu.SequenceKey(0),), 1)]

  @tu.register_dataclass
  @dataclasses.dataclass
  class Op:
    x: int
    name: str = ptree.static(default="add")

  assert ptree.leaves(Op(1)) == [1]
  assert repr(ptree.structure(Op(1))) == "PyTreeDef(CustomNode(Op[('add',)], [*]))"


def test_no_jax_import():
  # the tree_util package (its __init__.py is a facade over its modules): check every file.
  paths = glob.glob(os.path.join(os.path.dirname(tu_src.__file__), "*.py"))
  assert len(paths) > 5
  for path in paths:
    src = open(path).read()
    assert "import jax" not in src and "from jax" not in src


# ----------------------------------------------------------------------------------
# Big and deep trees, compiled paths
# ----------------------------------------------------------------------------------

def test_large_and_deep_trees():
  big = {f"k{i:04d}": [i, (i, None)] for i in range(600)}
  leaves, td = tu.tree_flatten(big)
  assert len(leaves) == 1200
  for _ in range(3):  # generic path (too big to compile)
    assert td.unflatten(leaves) == big
    assert td.flatten_up_to(big) == leaves
  deep = 0
  for i in range(150):
    deep = [deep, {"i": i}] if i % 2 else (deep,)
  leaves, td = tu.tree_flatten(deep)
  for _ in range(3):
    assert td.unflatten(leaves) == deep
    assert td.flatten_up_to(deep) == leaves
  long_tuple = tuple(range(100))
  leaves, td = tu.tree_flatten(long_tuple)
  assert leaves == list(long_tuple)
  for _ in range(3):
    assert td.unflatten(leaves) == long_tuple


def test_compiled_paths_agree_with_generic():
  trees = [t for t in TREES if tu.tree_structure(t).num_leaves > 0]
  for tree in trees:
    leaves, td = tu.tree_flatten(tree)
    generic = tu_src._make_generic_unflatten(tu_src.default_registry._entries)
    compiled = tu_src._compile_unflatten(td._spec, tu_src.default_registry._entries)
    a = generic(leaves, td._spec)
    b = compiled(leaves, td._spec)
    assert tu.tree_structure(a) == tu.tree_structure(b) == td
    assert tu.tree_leaves(a) == tu.tree_leaves(b) == leaves
    try:
      fut = tu_src._compile_flatten_up_to(td._spec, tu_src.default_registry._entries)
    except tu_src._Mismatch:
      continue
    assert fut(tree, td._spec) == leaves


def test_mutating_leaves_input_not_required():
  td = tu.tree_structure([1, 2])
  leaves = (5, 6)
  assert td.unflatten(leaves) == [5, 6]
  out = td.unflatten([7, 8])
  out.append(9)  # the output list is a fresh object
  assert td.unflatten([7, 8]) == [7, 8]
