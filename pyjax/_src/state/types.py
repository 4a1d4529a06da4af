"""Mutable array references (``jax.new_ref``, ``jax.Ref``).

A ``Ref`` is a box holding an array value.  Reading (``ref[idx]``, ``ref.get``) indexes the
value; writing (``ref[idx] = v``, ``swap``, ``addupdate``) replaces the value with an updated
copy (``value.at[idx].set(v)``).  So every access is an ordinary array operation on whatever
interpreter is current: refs work eagerly, and a ref created inside ``grad``, ``vmap``,
``jit``, a ``scan`` body, ... holds that transformation's values and is differentiated,
batched or staged with them ("discharged" as the program is traced).

``jit`` makes refs that cross its boundary explicit: a ref passed as an argument or closed
over by the jitted function is read at the call into an extra input of the program, and, if
the program writes it, an extra output is written back into the ref after the call.  While
a jitted function is traced, a *frame* (``Frame``) maps each outer ref to its local value
inside the trace; refs the function closes over are discovered on a first trace and the
function is traced again with them as inputs (``state/jit.py``).

Differs from JAX: there are no ``Ref``-typed jaxpr variables or ``get``/``swap`` equations:
a jaxpr shows the discharged program (gathers / scatters / dynamic updates of values, the
refs a jitted program touches as extra inputs and outputs).  ``lax`` loops and conditionals
carry the outer refs their bodies use (``state/control_flow.py``).  Writing a value of a
transformation into a ref it does not own (``grad`` or ``vmap`` of a function writing an
outer ref with a traced value) raises ``ValueError`` with JAX's message (JAX raises a bare
``Exception``).  ``vmap`` maps Ref arguments (``state/vmap.py``).
"""
from __future__ import annotations

import threading
import weakref

from pyjax._src import core
from pyjax._src.avals import ShapedArray


class AbstractRef:
  """The type of a ``Ref``: a mutable reference to an array of ``inner_aval``
  (printed ``Ref{float32[3]}``)."""
  __slots__ = ("inner_aval", "_hash")

  def __init__(self, inner_aval):
    self.inner_aval = inner_aval
    self._hash = None

  shape = property(lambda self: self.inner_aval.shape)
  dtype = property(lambda self: self.inner_aval.dtype)
  weak_type = property(lambda self: self.inner_aval.weak_type)
  ndim = property(lambda self: len(self.inner_aval.shape))
  size = property(lambda self: self.inner_aval.size)

  def str_short(self, short_dtypes=False):
    return f"Ref{{{self.inner_aval.str_short(short_dtypes=short_dtypes)}}}"

  def __str__(self):
    return self.str_short(short_dtypes=False)

  __repr__ = __str__

  def __eq__(self, other):
    return type(other) is AbstractRef and self.inner_aval == other.inner_aval

  def __hash__(self):
    if self._hash is None:
      self._hash = hash(("Ref", self.inner_aval))
    return self._hash


# --- frames (one per jit trace in progress) -----------------------------------------------------
class _Local(threading.local):
  def __init__(self):
    self.frames = []


_local = _Local()


class Slot:
  """The value of an outer ref inside one frame (a jit trace)."""
  __slots__ = ("ref", "value", "written", "interp")

  def __init__(self, ref, value, interp):
    self.ref, self.value, self.interp = ref, value, interp
    self.written = False


class Frame:
  """The refs one jit trace reads or writes but did not create."""

  def __init__(self):
    self.interp = None        # the trace's interpreter (set when the traced function starts)
    self.lifted = {}          # id(ref) -> Slot
    self.discovered = []      # refs lifted on demand (closed over): inputs of the next trace
    self.arg_refs = []        # (argument name, local ref) of the ref arguments
    self.done = False


def current_frames():
  return _local.frames


def push_frame(frame):
  _local.frames.append(frame)


def pop_frame(frame):
  frames = _local.frames
  assert frames and frames[-1] is frame
  frames.pop()
  frame.done = True


def _slot_at(ref, level):
  """The storage of ``ref`` as seen by frame ``level`` (-1: outside every frame): the ref
  itself where it was created, else that frame's Slot (lifted on first use)."""
  frames = _local.frames
  if level < 0:
    if ref._frame is not None:
      raise _escaped(ref)
    return ref
  fr = frames[level]
  if ref._frame is fr:
    return ref
  s = fr.lifted.get(id(ref))
  if s is not None:
    return s
  if ref._frame is not None and ref._frame not in frames[:level]:
    raise _escaped(ref)
  outer = _slot_at(ref, level - 1)
  s = fr.lifted[id(ref)] = Slot(ref, outer.value, fr.interp)
  fr.discovered.append(ref)
  return s


def slot(ref):
  """Where ``ref``'s current value lives in the current context."""
  if ref._freed:
    raise ValueError(f"Ref of type {ref.aval} was used after free_ref.")
  frames = _local.frames
  if not frames:
    if ref._frame is not None:
      raise _escaped(ref)
    return ref
  if ref._frame is frames[-1]:
    return ref
  return _slot_at(ref, len(frames) - 1)


def _escaped(ref):
  return ValueError(f"A Ref of type {ref.aval} created inside a jit-traced function was used "
                    "after that trace finished; mutable array references cannot be returned "
                    "from or leaked out of jit.")


def _owner_chain(interp):
  while interp is not None:
    yield interp
    interp = getattr(interp, "parent", None)


def check_write(s, value):
  """A value written to a ref must belong to the transformation owning the ref's storage
  (or to one enclosing it): else it would leak out of the inner transformation."""
  if not isinstance(value, core.Tracer):
    return
  owner = s.interp
  t = value._trace
  if any(t is i for i in _owner_chain(owner)):
    return
  from pyjax._src.interpreters import ad, batching
  if isinstance(t, ad.JVPInterpreter):
    raise ValueError(
        "performing a set/swap operation with a differentiated value on a non-differentiated "
        f"array reference of type {s.ref.aval}. Move the array reference to be an argument "
        "of the differentiated function?")
  if isinstance(t, batching.BatchInterpreter):
    raise ValueError(
        "performing a set/swap operation with vmapped value on an unbatched array reference "
        f"of type {s.ref.aval}. Move the array reference to be an argument to the vmapped "
        "function?")
  raise ValueError(
      f"writing a value traced by {t!r} into an array reference of type {s.ref.aval} "
      "created outside that transformation: create the reference inside the transformed "
      "function, or pass it as an argument.")


_live = 0   # refs alive (control flow looks for refs in loop bodies only while some exist)


def _dead():
  global _live
  _live -= 1


def live_refs():
  return _live


class Ref:
  """A mutable array reference (``jax.new_ref(x)``): ``ref[idx]`` reads, ``ref[idx] = v``
  writes (``v`` must have exactly the indexed shape and the ref's dtype, as in JAX).  Usable
  eagerly and inside ``jit``, ``grad``, ``vmap``; see the module docstring for how it
  differs from JAX.  Refs are pytree leaves and not Arrays (no arithmetic, as in JAX)."""
  __slots__ = ("_value", "aval", "_frame", "interp", "_freed", "written", "__weakref__")
  _is_pyjax_ref = True

  def __init__(self, value, frame=None):
    global _live
    _live += 1
    weakref.finalize(self, _dead)
    self._value = value
    self.aval = AbstractRef(core.get_aval(value))
    self._frame = frame
    self.interp = core._state.interp
    self._freed = False
    self.written = False

  # storage protocol shared with Slot: .value / .written / .interp / .ref
  @property
  def value(self):
    return self._value

  @value.setter
  def value(self, v):
    self._value = v

  @property
  def ref(self):
    return self

  shape = property(lambda self: self.aval.shape)
  dtype = property(lambda self: self.aval.dtype)
  ndim = property(lambda self: self.aval.ndim)
  size = property(lambda self: self.aval.size)
  weak_type = property(lambda self: self.aval.weak_type)

  @property
  def sharding(self):
    v = self._current()
    return getattr(v, "sharding", None)

  @property
  def committed(self):
    return bool(getattr(self._current(), "_committed", False))

  @property
  def format(self):
    return None

  def _current(self):
    return slot(self).value

  def __len__(self):
    if not self.aval.shape:
      raise TypeError("len() of unsized object")
    return self.aval.shape[0]

  def __getitem__(self, idx):
    from pyjax._src.state import primitives
    return primitives.ref_get(self, idx)

  def __setitem__(self, idx, value):
    from pyjax._src.state import primitives
    primitives.ref_set(self, idx, value)

  @property
  def at(self):
    """``ref.at[idx]``: a view of ``ref[idx]`` that reads and writes through the ref
    (``state/views.py``)."""
    from pyjax._src.state import views
    return views._At(self)

  def addupdate(self, x, idx=None):
    """``ref[idx] += x`` (``idx=None``: the whole ref)."""
    from pyjax._src.state import primitives
    primitives.ref_addupdate(self, () if idx is None else idx, x)

  def get(self, idx=()):
    from pyjax._src.state import primitives
    return primitives.ref_get(self, idx)

  def set(self, value, idx=()):
    from pyjax._src.state import primitives
    primitives.ref_set(self, idx, value)

  def swap(self, value, idx=()):
    from pyjax._src.state import primitives
    return primitives.ref_swap(self, idx, value)

  def __repr__(self):
    if self._freed:
      return f"Ref(<freed>, dtype={self.dtype})"
    v = self._value
    if isinstance(v, core.Tracer):
      return f"Ref({self.aval}, traced)"
    r = repr(v)
    return "Ref" + r[len("Array"):] if r.startswith("Array") else f"Ref({r})"

  def __hash__(self):
    return id(self)

  def __eq__(self, other):
    return self is other

  def __reduce__(self):
    raise TypeError("Refs cannot be pickled.")


Ref.__module__ = "pyjax"
AbstractRef.__module__ = "pyjax.ref"


def is_ref(x):
  return type(x) is Ref


def inner_aval(aval):
  return aval.inner_aval if type(aval) is AbstractRef else aval


def shaped(aval):
  return ShapedArray(aval.shape, aval.dtype, aval.weak_type)
