"""``ref.at[idx]``: a view of part of a ref (JAX's ``TransformedRef``).

A view reads and writes through its parent: reading ``view[i]`` reads the parent at the
view's index then indexes the result; writing ``view[i] = v`` reads the parent's window,
updates it and writes it back.  Views nest (``ref.at[a].at[b]``) and are accepted by the
Pallas ``load``/``store`` helpers.  Differs from JAX: a view is a Python object, not a
transformed ref type in a jaxpr (pyjax refs are discharged as they are traced).
"""
from __future__ import annotations

from pyjax._src import core


class RefView:
  """``parent.at[idx]``: reads and writes ``parent[idx]`` (see the module docstring)."""
  __slots__ = ("parent", "idx")

  def __init__(self, parent, idx):
    self.parent, self.idx = parent, idx if isinstance(idx, tuple) else (idx,)

  def _value(self):
    return self.parent[self.idx]

  @property
  def aval(self):
    from pyjax._src.state.types import AbstractRef
    return AbstractRef(core.get_aval(self._value()))

  shape = property(lambda self: tuple(core.get_aval(self._value()).shape))
  dtype = property(lambda self: self.parent.dtype)
  ndim = property(lambda self: len(self.shape))

  @property
  def at(self):
    return _At(self)

  def __getitem__(self, idx):
    from pyjax._src.state import primitives
    idx = primitives._norm_idx(idx)
    return primitives._read(self._value(), idx)

  def __setitem__(self, idx, value):
    from pyjax._src.state import primitives
    idx = primitives._norm_idx(idx)
    cur = self._value()
    if primitives._is_full(idx):
      self.parent[self.idx] = value
      return
    tmp = primitives.new_ref(cur)
    tmp[idx] = value
    self.parent[self.idx] = primitives.freeze(tmp)

  def get(self, idx=()):
    return self[idx]

  def set(self, value, idx=()):
    self[idx] = value

  def swap(self, value, idx=()):
    old = self[idx]
    self[idx] = value
    return old

  def addupdate(self, x, idx=None):
    self[() if idx is None else idx] = self[() if idx is None else idx] + x

  def __repr__(self):
    return f"RefView({self.parent!r}, {self.idx!r})"


class _At:
  __slots__ = ("ref",)

  def __init__(self, ref):
    self.ref = ref

  def __getitem__(self, idx):
    return RefView(self.ref, idx)
