"""Array memory layouts (``jax.experimental.layout``).

Every pyjax buffer is a dense row-major (C-order) array, so the one concrete layout is
row-major: ``Layout(major_to_minor=(ndim-1, ..., 0))`` with no tiling.  ``Layout`` and
``Format`` (a layout with a sharding) are descriptions that can be built, compared and
passed where JAX accepts them; ``with_layout_constraint`` accepts the default (None /
``AUTO``) and row-major layouts and rejects any other, since pyjax cannot produce it.
Differences from JAX: no tiled or column-major layouts; ``Layout.AUTO`` means "whatever
the backend chooses", which is always row-major.
"""
from __future__ import annotations


class _AutoLayout:
  __slots__ = ()

  def __repr__(self):
    return "AUTO"


class Layout:
  """A memory layout: ``major_to_minor`` (dimension order, most major first), optional
  ``tiling`` and sub-byte element size."""
  AUTO = _AutoLayout()

  def __init__(self, major_to_minor, tiling=(), sub_byte_element_size_in_bits=0):
    self.major_to_minor = tuple(major_to_minor)
    self.tiling = tuple(tuple(t) for t in tiling)
    self.sub_byte_element_size_in_bits = sub_byte_element_size_in_bits

  def is_row_major(self, ndim=None):
    """True for the C-order layout (the only one pyjax buffers have)."""
    n = len(self.major_to_minor) if ndim is None else ndim
    return (self.major_to_minor == tuple(range(n))
            and not self.tiling and not self.sub_byte_element_size_in_bits)

  def __eq__(self, other):
    return (isinstance(other, Layout) and self.major_to_minor == other.major_to_minor
            and self.tiling == other.tiling
            and self.sub_byte_element_size_in_bits == other.sub_byte_element_size_in_bits)

  def __hash__(self):
    return hash((self.major_to_minor, self.tiling, self.sub_byte_element_size_in_bits))

  def __repr__(self):
    return (f"Layout(major_to_minor={self.major_to_minor}, tiling={self.tiling}, "
            f"sub_byte_element_size_in_bits={self.sub_byte_element_size_in_bits})")


class Format:
  """A layout together with a sharding (either may be None)."""

  def __init__(self, layout=None, sharding=None):
    if layout is not None and not isinstance(layout, (Layout, _AutoLayout)):
      raise TypeError(f"Invalid value received for the layout argument. Expected Layout, "
                      f"Layout.AUTO or None. Got {layout!r} of type {type(layout)}")
    self.layout = layout
    self.sharding = sharding

  def __eq__(self, other):
    return (isinstance(other, Format) and self.layout == other.layout
            and self.sharding == other.sharding)

  def __hash__(self):
    return hash((self.layout, self.sharding))

  def __repr__(self):
    return f"Format({self.layout!r}, {self.sharding!r})"


def _check_layout(layout, ndim):
  if isinstance(layout, Format):
    layout = layout.layout
  if layout is None or isinstance(layout, _AutoLayout):
    return
  if not layout.is_row_major(ndim):
    raise ValueError(f"pyjax arrays are row-major; cannot constrain to {layout!r}")


def with_layout_constraint(x, layouts):
  """``x`` (a pytree of arrays) with the given layouts, which must be the default or
  row-major (what every pyjax array already has)."""
  from pyjax._src import tree_util
  leaves = tree_util.tree_leaves(x)
  lays = (tree_util.tree_leaves(layouts, is_leaf=lambda l: isinstance(l, (Layout, Format)))
          if not isinstance(layouts, (Layout, Format, _AutoLayout)) else [layouts] * len(leaves))
  for leaf, lay in zip(leaves, lays):
    _check_layout(lay, len(getattr(leaf, "shape", ())))
  return x
