"""Hijax: user-defined ("high-level") types and primitives (``jax.experimental.hijax``).

A *hi type* is a user value type pyjax does not know natively (a ``Box``, flax.nnx's
hijax ``Variable``); its abstract value subclasses ``HiType`` (immutable) or
``MutableHiType`` (mutable, its *quasi-dynamic data* -- QDD -- describing the current
contents), and ``register_hitype(cls, typeof_fn)`` makes ``jax.typeof`` / ``core.get_aval``
answer it.  A ``HiPrimitive`` is a primitive over such values: ``abstract_eval`` gives its
output types (an ``AvalQDD`` pairs a mutable type with its QDD), ``to_lojax`` implements it
in terms of ordinary (lo) values, ``jvp`` / ``transpose`` differentiate it.

How pyjax runs them: binding a ``HiPrimitive`` with no transformation current runs
``to_lojax`` at once (JAX's eager path); under ``jvp`` / ``grad`` the primitive's ``jvp``
rule runs (registered in pyjax's rule tables like any primitive's); under ``vmap`` the
rule table of ``batching`` is consulted as for any primitive.  Attributes declared on a
hi type with ``aval_method`` / ``aval_property`` are reachable from its tracers.

While a function is staged (``jit``, ``make_jaxpr``, control-flow bodies) a
``HiPrimitive`` is lowered as it is bound: its ``to_lojax`` runs on the staging
interpreter, so the jaxpr holds the lo operations (JAX keeps hi equations in the jaxpr and
lowers them when compiling; the compiled program is the same).  Hi values created inside
the staged function may be read and mutated there; immutable hi values from outside are
read (their contents become constants).  A *mutable* hi value (``MutableHiType``: a
``Box``, a flax.nnx hijax ``Variable``) from outside a jitted function is threaded through
the program as in JAX: its lo values are inputs read at each call, and the ones the
function changes are outputs written back into it (through pyjax's ref machinery).

A mutable hi value passed as a ``jit`` argument is lowered the same way (``HiArgType``):
its lo values are the program's inputs, a stand-in is traced, and its final lo values are
written back into the argument after each call (its type may change there).

Differs from JAX: a value closed over may not change its type (QDD) inside jit
(``TypeError``); immutable hi values and hi results of ``jit`` are not lowered (they are
not arrays); jaxprs show lo values and threaded inputs/outputs, no hi types; a control-flow
body (``scan``/``while``/``cond``) threads a mutable hi value only when it reaches it
through its closure (``state.control_flow.live``; one reached through an object's
attributes raises ``TypeError``); ``VJPHiPrimitive`` (JAX's newer API) is not provided.
"""
from __future__ import annotations

import dataclasses
import weakref
from typing import Any

import numpy as np

from pyjax._src import core
from pyjax._src import effects
from pyjax._src import extend_core
from pyjax._src import tree_util
from pyjax._src.avals import ShapedArray  # noqa: F401  (re-exported)
from pyjax._src.core import aval_method, aval_property  # noqa: F401  (re-exported)
from pyjax._src.interpreters import ad
from pyjax._src.state import types as _ref_types
from pyjax._src.interpreters.ad import (  # noqa: F401  (re-exported)
    Zero, instantiate_zeros, is_undefined_primal)

AbstractValue = extend_core.AbstractValue
control_flow_allowed_effects = effects.control_flow_allowed_effects


# --- quasi-dynamic data -----------------------------------------------------------------
class QuasiDynamicData:
  """Base of the data describing a mutable hi value's current contents (its QDD)."""


@dataclasses.dataclass(frozen=True)
class AvalQDD:
  """A mutable hi type together with its (immutable) QDD: what a ``HiPrimitive``'s
  ``abstract_eval`` returns for a newly created mutable value."""
  aval: Any
  qdd: Any
  is_high = True
  has_qdd = True

  @property
  def is_writer(self):
    return self.aval.is_writer

  def lo_ty(self):
    return self.aval.lo_ty_qdd(self.qdd)

  def read_loval(self, val):
    return self.aval.read_loval(self.qdd, val)

  def new_from_loval(self, *lovals):
    return self.aval.new_from_loval(self.qdd, *lovals)


class MutableQuasiDynamicData:
  """A QDD cell that ``abstract_eval`` rules of mutating primitives ``update``."""
  __slots__ = ("qdd",)

  def __init__(self, qdd):
    self.qdd = qdd

  def update(self, qdd):
    """Replace the current QDD."""
    self.qdd = qdd


@dataclasses.dataclass(frozen=True)
class AvalMutableQDD:
  """A mutable hi type and the cell holding its current QDD (an ``abstract_eval``
  argument of primitives that mutate hi values)."""
  aval: Any
  mutable_qdd: MutableQuasiDynamicData


def cur_qdd(x):
  """The current QDD of the mutable hi value ``x`` (a value or a tracer of one)."""
  while isinstance(x, core.Tracer):
    inner = getattr(x, "primal", None)   # JVP tracers: the primal's QDD
    if inner is None:
      inner = getattr(x, "val", None)    # batching tracers: the batched value's
    if inner is None:
      raise TypeError(f"cur_qdd: cannot read the QDD of {type(x).__name__} (pyjax "
                      "does not stage hi types)")
    x = inner
  return x.cur_qdd()


# --- hi types ---------------------------------------------------------------------------
class HiType(AbstractValue):
  """Base of immutable hi types: subclasses define equality/hash, ``lo_ty`` (their lo
  types), ``lower_val`` / ``raise_val`` (to and from lo values) and ``to_tangent_aval``."""
  is_high = True
  has_qdd = False

  def __hash__(self):
    raise NotImplementedError(f"{type(self).__name__} must define __hash__")

  def __eq__(self, other):
    raise NotImplementedError(f"{type(self).__name__} must define __eq__")

  def lo_ty(self):
    raise NotImplementedError(f"{type(self).__name__} must define lo_ty")

  def lower_val(self, hi_val):
    raise NotImplementedError(f"{type(self).__name__} must define lower_val")

  def raise_val(self, *lo_vals):
    raise NotImplementedError(f"{type(self).__name__} must define raise_val")

  def to_tangent_aval(self):
    raise NotImplementedError(f"{type(self).__name__} must define to_tangent_aval")

  def to_ct_aval(self):
    return self.to_tangent_aval()

  def str_short(self, short_dtypes=False, **_):
    return type(self).__name__

  def __repr__(self):
    return f"{type(self).__name__}({','.join(f'{k}={v}' for k, v in vars(self).items())})"


class MutableHiType(AbstractValue):
  """Base of mutable hi types (their contents, hence their lo types, are described by a
  QDD): subclasses define ``lo_ty_qdd``, ``new_from_loval``, ``read_loval``,
  ``update_from_loval`` and ``to_tangent_aval``."""
  is_high = True
  has_qdd = True
  is_writer = False
  type_state = aval_method(cur_qdd)

  def __hash__(self):
    raise NotImplementedError(f"{type(self).__name__} must define __hash__")

  def __eq__(self, other):
    raise NotImplementedError(f"{type(self).__name__} must define __eq__")

  def lo_ty_qdd(self, state, /):
    raise NotImplementedError(f"{type(self).__name__} must define lo_ty_qdd")

  def lo_ty(self):
    raise TypeError("mutable hi types give their lo types with lo_ty_qdd")

  def new_from_loval(self, state, /, *vals):
    raise NotImplementedError(f"{type(self).__name__} must define new_from_loval")

  def read_loval(self, state, val, /):
    raise NotImplementedError(f"{type(self).__name__} must define read_loval")

  def update_from_loval(self, state, val, /, *lo_vals):
    raise NotImplementedError(f"{type(self).__name__} must define update_from_loval")

  def to_tangent_aval(self):
    raise NotImplementedError(f"{type(self).__name__} must define to_tangent_aval")

  def to_ct_aval(self):
    return self.to_tangent_aval()

  def str_short(self, short_dtypes=False, **_):
    return type(self).__name__

  def __repr__(self):
    return f"{type(self).__name__}({','.join(f'{k}={v}' for k, v in vars(self).items())})"

  def _jit_arg_type(self, value):
    """The jit argument type of ``value`` (of this type): a ``HiArgType`` when it has a
    QDD (it is then passed to the program as its lo values), else None."""
    if not getattr(self, "has_qdd", True):
      return None
    return HiArgType(self, cur_qdd(value))


# --- mutable hi values as jit arguments -----------------------------------------------
@dataclasses.dataclass(frozen=True)
class HiArgType:
  """A mutable hi argument of a jitted function, as its cache key sees it: its type and
  current QDD.  The program takes its lo values (``aval.lo_ty_qdd(qdd)``) as inputs; the
  traced function sees a stand-in made from them (``new_from_loval``), and the lo values
  it leaves there are extra outputs written back into the argument after each call
  (``update_from_loval``), so the argument is mutated in place as in JAX."""
  aval: Any
  qdd: Any
  is_hi_arg = True

  def lo_avals(self, qdd=None):
    """The program's inputs for this argument (typed PRNG keys as their raw data)."""
    return [_raw_aval(a) for a in self.aval.lo_ty_qdd(self.qdd if qdd is None else qdd)]

  def enter(self, lo_vals):
    """The stand-in for the argument inside the trace, made from its lo tracers."""
    lo = _from_raw(self.aval.lo_ty_qdd(self.qdd), lo_vals)
    proxy = self.aval.new_from_loval(self.qdd, *lo)
    _remember_proxy(proxy)
    return proxy

  def exit(self, proxy):
    """``(qdd, lo values)`` of the stand-in at the end of the trace (the function may have
    changed its type: the write-back then stores the new type's lo values)."""
    qdd = cur_qdd(proxy)
    return qdd, tree_util.tree_leaves(list(self.aval.read_loval(qdd, proxy)))

  def read(self, value):
    """The argument's current lo values, for a call."""
    with core.set_interpreter(core.eval_interpreter):
      qdd = cur_qdd(value)
      if qdd != self.qdd:
        raise TypeError(f"a {type(value).__name__} argument changed type ({self.qdd} -> "
                        f"{qdd}) since the program was traced")
      return tree_util.tree_leaves(list(self.aval.read_loval(qdd, value)))

  def write(self, value, qdd, lo_vals):
    """Store a call's new lo values (of type ``qdd``) into the argument."""
    with core.set_interpreter(core.eval_interpreter):
      self.aval.update_from_loval(qdd, value, *_from_raw(self.aval.lo_ty_qdd(qdd), lo_vals))


def _raw_aval(a):
  """A lo type as a program input: a typed key array's aval as its raw ``uint32`` data."""
  impl = getattr(getattr(a, "dtype", None), "impl", None)
  if impl is None or not getattr(a.dtype, "_pyjax_extended", False):
    return a
  return ShapedArray(tuple(a.shape) + tuple(impl.key_shape), np.dtype(np.uint32))


def _from_raw(avals, vals):
  """Lo values of types ``avals`` from program values (raw key data wrapped as keys)."""
  from pyjax._src.random.keys import PRNGKeyArray
  return [v if _raw_aval(a) is a else PRNGKeyArray(a.dtype.impl, v)
          for a, v in zip(avals, vals)]


def register_hitype(val_cls, typeof_fn):
  """Make ``jax.typeof(v)`` (and pyjax's ``core.get_aval``) return ``typeof_fn(v)`` for
  values of the class ``val_cls``."""
  core.pytype_aval_mappings[val_cls] = typeof_fn
  _hi_types.add(val_cls)


# --- hi primitives ----------------------------------------------------------------------
_hi_types = set()   # the classes registered with register_hitype


def _is_hi_value(x):
  return type(x) in _hi_types


def _snapshot(obj):
  """The attribute values of ``obj`` (slots and ``__dict__``), to detect mutation."""
  vals = {}
  for cls in type(obj).__mro__:   # slot descriptors, bypassing any __getattr__
    slots = cls.__dict__.get("__slots__", ())
    for name in ((slots,) if isinstance(slots, str) else slots):
      if name in ("__dict__", "__weakref__"):
        continue
      try:
        vals[name] = cls.__dict__[name].__get__(obj, type(obj))
      except (AttributeError, KeyError):
        pass
  try:
    vals.update(object.__getattribute__(obj, "__dict__"))
  except AttributeError:
    pass
  return vals


def _changed(obj, snap):
  now = _snapshot(obj)
  return now.keys() != snap.keys() or any(now[k] is not snap[k] for k in snap)


def _restore(obj, snap):
  for k, v in snap.items():
    object.__setattr__(obj, k, v)


# --- mutable hi values from outside a jit ------------------------------------------------
# A mutable hi value that a jitted function uses but did not create is threaded through
# the program as JAX does: its lo values (``aval.read_loval(qdd, value)``) become inputs
# and, when the function changes them, outputs written back (``update_from_loval``) after
# each call.  pyjax's ref machinery (``state/jit.py``) does the threading: each lo value
# is a ``_HiLeafRef`` whose value reads and writes the object itself, so every call of the
# compiled program sees the object's current contents.  Inside the trace a proxy object
# (``new_from_loval`` of the lifted values) stands in for the outer one.
_cells = {}        # id(hi value) -> _HiCell (holds the value: ids are not reused)
# id(proxy) -> proxy, for proxies made inside traces: weakly held (a proxy holds its
# trace's tracers; a finished trace's proxies must not stay alive), strongly only for a
# type without weak references
_proxy_ids = weakref.WeakValueDictionary()
_proxy_ids_strong = {}


def _remember_proxy(proxy):
  try:
    _proxy_ids[id(proxy)] = proxy
  except TypeError:
    _proxy_ids_strong[id(proxy)] = proxy


def _is_proxy(x):
  return id(x) in _proxy_ids or id(x) in _proxy_ids_strong


class _HiCell:
  """The lo storage of one outer mutable hi value, as refs."""

  def __init__(self, obj):
    self.obj = obj
    self.aval = core.get_aval(obj)
    self.qdd = cur_qdd(obj)
    with core.set_interpreter(core.eval_interpreter):
      lo = self.read()
    self.refs = [_HiLeafRef(self, k, v) for k, v in enumerate(lo)]

  def read(self):
    qdd = cur_qdd(self.obj)
    if qdd != self.qdd:
      raise TypeError(f"a {type(self.obj).__name__} used inside jit changed type "
                      f"({self.qdd} -> {qdd}) since the program was traced")
    return tree_util.tree_leaves(list(self.aval.read_loval(qdd, self.obj)))   # keys: raw

  def write(self, k, v):
    with core.set_interpreter(core.eval_interpreter):
      lo = self.read()
      lo[k] = v
      self.aval.update_from_loval(self.qdd, self.obj,
                                  *_from_raw(self.aval.lo_ty_qdd(self.qdd), lo))


class _HiLeafRef(_ref_types.Ref):
  """A ref whose value is the ``k``-th lo value of a hi object (read and written live)."""
  __slots__ = ("_cell", "_k")

  def __init__(self, cell, k, value):
    # Ref's fields without counting it among the live refs: control flow finds the hi
    # values a body uses through its closure (``state.control_flow.live``), and these refs
    # live as long as their cell (a count that never drops would make every loop body be
    # traced twice)
    self._value = value
    self.aval = _ref_types.AbstractRef(core.get_aval(value))
    self._frame = None
    self._freed = False
    self.written = False
    self.interp = core.eval_interpreter
    self._cell, self._k = cell, k

  @property
  def value(self):
    with core.set_interpreter(core.eval_interpreter):
      return self._cell.read()[self._k]

  @value.setter
  def value(self, v):
    self._cell.write(self._k, v)


def _cell_of(obj):
  cell = _cells.get(id(obj))
  if cell is None or cell.obj is not obj or cell.qdd != cur_qdd(obj):
    # a new trace of a value whose type changed gets new storage (programs traced for
    # the old type raise TypeError when called: JAX would retrace them)
    cell = _cells[id(obj)] = _HiCell(obj)
  return cell


def _proxy_in_frame(frame, obj):
  """The stand-in for ``obj`` inside the jit trace of ``frame`` (made on first use)."""
  proxies = frame.__dict__.setdefault("_hijax_proxies", {})
  hit = proxies.get(id(obj))
  if hit is not None:
    return hit
  cell = _cell_of(obj)
  slots = [_ref_types.slot(r) for r in cell.refs]
  proxy = cell.aval.new_from_loval(
      cell.qdd, *_from_raw(cell.aval.lo_ty_qdd(cell.qdd), [s.value for s in slots]))
  _remember_proxy(proxy)
  proxies[id(obj)] = hit = (proxy, cell, slots)
  return hit


def _write_proxy(prim, proxy, cell, slots):
  """Record a proxy's new lo values in its frame's slots (outputs of the program)."""
  qdd = cur_qdd(proxy)
  if qdd != cell.qdd:
    raise TypeError(f"hijax primitive '{prim.name}' changed the type of a "
                    f"{type(cell.obj).__name__} created outside jit ({cell.qdd} -> {qdd}); "
                    "pyjax threads such values through jit only when their type is kept")
  new = tree_util.tree_leaves(list(cell.aval.read_loval(qdd, proxy)))
  for s, v in zip(slots, new):
    if v is not s.value:
      _ref_types.check_write(s, v)
      s.value = v
      s.written = True


def _bind_staged(prim, interp, args, params):
  """A hi primitive bound while ``interp`` stages a jaxpr: lowered now (its ``to_lojax``
  runs on the staging interpreter, so the jaxpr records the lo operations).  Hi values
  created by hi primitives in this trace may be mutated; mutating one created outside it
  (whose new contents would be this trace's tracers) raises ``TypeError``."""
  created = interp.__dict__.setdefault("_hijax_created", {})
  outside = [a for a in args if _is_hi_value(a) and id(a) not in created
             and not _is_proxy(a)]
  threaded = []
  if any(getattr(core.get_aval(a), "has_qdd", False) for a in outside):
    frames = _ref_types.current_frames()
    if not frames:
      raise TypeError(
          f"hijax primitive '{prim.name}' was applied to a mutable hijax value created "
          "outside the function being staged (a control-flow body or a trace that is not "
          "a jit): pyjax threads such values through jit only; create it inside, or pass "
          "its contents in and out.")
    args = list(args)
    for i, a in enumerate(args):
      if any(a is o for o in outside) and getattr(core.get_aval(a), "has_qdd", False):
        proxy, cell, slots = _proxy_in_frame(frames[-1], a)
        threaded.append((proxy, cell, slots, _snapshot(proxy)))
        args[i] = proxy
    outside = [a for a in outside if not getattr(core.get_aval(a), "has_qdd", False)]
  snaps = [(a, _snapshot(a)) for a in outside]
  out = prim.to_lojax(*args, **params)
  for proxy, cell, slots, snap in threaded:
    if _changed(proxy, snap):
      _write_proxy(prim, proxy, cell, slots)
  for a, snap in snaps:
    if _changed(a, snap):
      _restore(a, snap)
      raise TypeError(
          f"hijax primitive '{prim.name}' mutated a {type(a).__name__} created outside "
          "the function being staged (jit, make_jaxpr or a control-flow body); pyjax "
          "does not thread mutable hijax values through staged functions: create it "
          "inside, or pass its contents in and out.")
  for o in (out if prim.multiple_results else [out]):
    if _is_hi_value(o):
      created[id(o)] = o
  return out


_mutable_made = [False]


def _note_mutable(outs):
  """Tell control flow once a mutable hi value exists (``state.control_flow.live``)."""
  for o in outs:
    if _is_hi_value(o) and getattr(core.get_aval(o), "has_qdd", False):
      from pyjax._src.state import control_flow as _state_cf
      _state_cf.note_mutable_hi_value()
      _mutable_made[0] = True
      return


class HiPrimitive(core.Primitive):
  """A primitive over hi values.  Subclasses define ``abstract_eval`` (returning
  ``(out_aval(s), effects)``), ``to_lojax`` (the implementation on lo values) and, to be
  differentiable, ``jvp(primals, tangents, **params)`` and ``transpose``."""

  def __init__(self, name):
    super().__init__(name)
    ad.primitive_jvps[self] = self.jvp
    ad.primitive_transposes[self] = self.transpose
    self.effectful = True
    self._effectful_abstract_eval = lambda *avals, **params: self.abstract_eval(*avals, **params)

  def is_high(self, *avals, **params):
    return True

  def is_effectful(self, params):
    return False

  def bind(self, *args, **params):
    interp = core.current_interpreter()
    if interp is core.eval_interpreter:
      out = self.to_lojax(*args, **params)
      if not _mutable_made[0]:
        _note_mutable(out if self.multiple_results else [out])
      return out
    if isinstance(interp, core.StagingInterpreter):
      return _bind_staged(self, interp, args, params)
    return interp.process_primitive(self, args, params)

  def abstract_eval(self, *arg_avals, **params):
    raise NotImplementedError(f"{type(self).__name__} must define abstract_eval")

  def to_lojax(self, *args, **params):
    raise NotImplementedError(f"{type(self).__name__} must define to_lojax")

  def jvp(self, primals, tangents, **params):
    raise NotImplementedError(f"Differentiation rule for '{self.name}' not implemented")

  def transpose(self, *args, **params):
    raise NotImplementedError(f"Transpose rule for '{self.name}' not implemented")


# --- Box: a mutable cell holding a pytree -----------------------------------------------
def new_box():
  """A new, empty ``Box``."""
  (), treedef = tree_util.tree_flatten(None)
  return new_box_p.bind(treedef=treedef)


def box_get(box):
  """The pytree held by ``box``."""
  tys = cur_qdd(box)
  leaves = box_get_p.bind(box, avals=tuple(tys.leaf_avals))
  return tree_util.tree_unflatten(tys.treedef, leaves)


def box_set(box, val):
  """Make ``box`` hold the pytree ``val``."""
  leaves, treedef = tree_util.tree_flatten(val)
  box_set_p.bind(box, *leaves, treedef=treedef)


@dataclasses.dataclass(frozen=True)
class BoxTypeState(QuasiDynamicData):
  """A box's QDD: the avals of the leaves it holds and their tree structure."""
  leaf_avals: tuple
  treedef: Any

  def to_tangent_qdd(self):
    return BoxTypeState(tuple(a.to_tangent_aval() for a in self.leaf_avals), self.treedef)

  def normalize(self):
    return BoxTypeState(tuple(a.normalize() for a in self.leaf_avals), self.treedef)


class BoxTy(MutableHiType):
  """The type of every ``Box``."""
  get = aval_method(box_get)
  set = aval_method(box_set)

  def __hash__(self):
    return hash(BoxTy)

  def __eq__(self, other):
    return isinstance(other, BoxTy)

  def str_short(self, short_dtypes=False, **_):
    return "BoxTy"

  def lo_ty_qdd(self, box_state):
    return list(box_state.leaf_avals)

  def new_from_loval(self, box_state, *lo_vals):
    return Box._new(tree_util.tree_unflatten(box_state.treedef, lo_vals))

  def read_loval(self, box_state, box):
    leaves, treedef = tree_util.tree_flatten(box_get(box))
    if treedef != box_state.treedef:
      raise TypeError(f"box holds {treedef}, its type state says {box_state.treedef}")
    return leaves

  def update_from_loval(self, box_state, box, *lo_vals):
    box_set(box, tree_util.tree_unflatten(box_state.treedef, lo_vals))

  def to_tangent_aval(self):
    return BoxTy()


class _BoxMeta(type):
  def __instancecheck__(cls, instance):
    return (super().__instancecheck__(instance) or
            isinstance(instance, core.Tracer) and isinstance(_typeof(instance), BoxTy))


def _typeof(x):
  try:
    return core.get_aval(x)
  except Exception:
    return None


class Box(metaclass=_BoxMeta):
  """A mutable cell holding a pytree of arrays: ``Box(v)``, ``box.get()``,
  ``box.set(v)``.  Differentiable under ``jvp`` when its tangent is a Box too."""
  __slots__ = ("_val",)

  def __new__(cls, init_val=None):
    box = new_box()
    box.set(init_val)
    return box

  @classmethod
  def _new(cls, init_val):
    new = object.__new__(cls)
    new._val = init_val
    return new

  def get(self):
    """The pytree the box holds."""
    return box_get(self)

  def set(self, val):
    """Make the box hold the pytree ``val``."""
    box_set(self, val)

  def cur_qdd(self):
    """The box's type state (``BoxTypeState``)."""
    return self.type_state()

  @property
  def ty(self):
    return BoxTy()

  def type_state(self):
    leaves, treedef = tree_util.tree_flatten(self._val)
    return BoxTypeState(tuple(core.get_aval(x) for x in leaves), treedef)

  def __repr__(self):
    return f"Box({self._val!r})"


register_hitype(Box, lambda b: b.ty)


class BoxEffect(core.Effect):
  """The effect of reading or writing a Box."""


box_effect = BoxEffect()
effects.control_flow_allowed_effects.add_type(BoxEffect)
effects.custom_derivatives_allowed_effects.add_type(BoxEffect)


class NewBox(HiPrimitive):
  """``new_box``: a new empty Box."""
  def abstract_eval(self, *, treedef):
    leaves, treedef = tree_util.tree_flatten(None)
    return AvalQDD(BoxTy(), BoxTypeState(tuple(leaves), treedef)), {box_effect}

  def to_lojax(self, *, treedef):
    return Box._new(None)


new_box_p = NewBox("new_box")


class BoxSet(HiPrimitive):
  """``box_set``: store a pytree's leaves in a Box (updating its type state)."""
  multiple_results = True

  def abstract_eval(self, box_ty, *leaf_avals, treedef):
    box_ty.mutable_qdd.update(BoxTypeState(leaf_avals, treedef))
    return [], {box_effect}

  def to_lojax(self, box, *leaves, treedef):
    box._val = tree_util.tree_unflatten(treedef, leaves)
    return []

  def jvp(self, primals, tangents, *, treedef):
    box, *vals = primals
    box_dot, *val_dots = tangents
    if type(box_dot) is Zero:
      raise Exception("can't differentiate Box.set operation, "
                      "did you forget jax.lax.stop_gradient?")
    box_set_p.bind(box, *vals, treedef=treedef)
    box_set_p.bind(box_dot, *map(instantiate_zeros, val_dots), treedef=treedef)
    return [], []


box_set_p = BoxSet("box_set")


class BoxGet(HiPrimitive):
  """``box_get``: the leaves a Box holds."""
  multiple_results = True

  def abstract_eval(self, box_ty, *, avals):
    return list(avals), {box_effect}

  def to_lojax(self, box, *, avals):
    return tree_util.tree_leaves(box._val)

  def jvp(self, primals, tangents, *, avals):
    (box,), (box_dot,) = primals, tangents
    return (box_get_p.bind(box, avals=avals),
            box_get_p.bind(box_dot, avals=tuple(a.to_tangent_aval() for a in avals)))


box_get_p = BoxGet("box_get")
