"""Dynamic slices of refs: ``Slice`` / ``ds`` (``pl.ds``, ``pl.dslice``) and reads and
writes of a ref at an index made of ints, Python slices, ``Slice`` objects and traced
integer scalars.

Such an index is a window of the ref (a start, size and stride per dimension, the
integer-indexed dimensions dropped), so a read is a ``lax.dynamic_slice`` (then a strided
slice when a stride is not 1) and a write a ``lax.dynamic_update_slice`` of the updated
window -- the operations JAX's state discharge produces for the same index (out-of-range
starts are clamped, as ``dynamic_slice`` clamps them).  Indices with arrays of indices or
``None`` are not windows; ``primitives.py`` handles them with NumPy-style indexing.
"""
from __future__ import annotations

import dataclasses
import operator

import numpy as np

from pyjax._src import core


@dataclasses.dataclass(frozen=True)
class Slice:
  """``size`` elements from ``start`` (an int or a traced integer scalar) every ``stride``
  (``pl.Slice``, as JAX's ``jax.experimental.pallas.Slice``)."""
  start: object
  size: int
  stride: int = 1

  def __post_init__(self):
    if self.stride < 1:
      raise ValueError("`stride` must be >= 1.")

  @property
  def is_dynamic_start(self):
    return not isinstance(self.start, (int, np.integer))

  @property
  def is_dynamic_size(self):
    return not isinstance(self.size, (int, np.integer))

  @classmethod
  def from_slice(cls, slc, size):
    start, step, size = operator.index(slc.start or 0), slc.step or 1, size
    start, stop, step = slice(start, slc.stop, step).indices(size)
    return cls(start, max((stop - start + step - (1 if step > 0 else -1)) // step, 0), step)

  def __hash__(self):
    return hash((id(self.start) if self.is_dynamic_start else self.start, self.size,
                 self.stride))


def ds(start, size=None, stride=1):
  """``pl.ds(start, size)``: ``Slice(start, size, stride)``; ``pl.ds(size)`` starts at 0.
  (``pl.dslice`` is the same function.)"""
  if size is None:
    if not isinstance(start, (int, np.integer)):
      raise ValueError("Non-static `dslice`")
    return Slice(0, int(start), stride)
  return Slice(start, size, stride)


dslice = ds


def _is_scalar_int(i):
  if isinstance(i, (bool, np.bool_)):
    return False
  if isinstance(i, (int, np.integer)):
    return True
  try:
    a = core.get_aval(i)
  except TypeError:
    return False
  return a.shape == () and np.issubdtype(a.dtype, np.integer)


def is_window(idx):
  """Whether ``idx`` (a tuple) needs the dynamic window path: it holds a ``Slice`` or a
  traced integer scalar and otherwise only ints, Python slices and one Ellipsis."""
  dynamic = False
  for i in idx:
    if isinstance(i, Slice):
      dynamic = True
    elif isinstance(i, core.Tracer):
      if not _is_scalar_int(i):
        return False
      dynamic = True
    elif not (i is Ellipsis or isinstance(i, slice) or _is_scalar_int(i)):
      return False
  return dynamic


def _window(shape, idx):
  """(starts, sizes, strides, squeezed dims) of a window index over ``shape``."""
  idx = list(idx)
  k = next((k for k, i in enumerate(idx) if i is Ellipsis), None)
  if k is not None:
    idx[k:k + 1] = [slice(None)] * (len(shape) - (len(idx) - 1))
  if len(idx) > len(shape):
    raise IndexError(f"Too many indices: {len(shape)}-dimensional ref indexed with "
                     f"{len(idx)}.")
  idx += [slice(None)] * (len(shape) - len(idx))
  starts, sizes, strides, squeeze = [], [], [], []
  for d, (i, n) in enumerate(zip(idx, shape)):
    if isinstance(i, slice):
      s = Slice.from_slice(i, n)
      if s.stride < 0:
        raise NotImplementedError("negative slice steps on refs")
      starts.append(s.start)
      sizes.append(s.size)
      strides.append(s.stride)
    elif isinstance(i, Slice):
      if i.is_dynamic_size:
        raise ValueError("pl.ds: the size must be static")
      starts.append(i.start)
      sizes.append(int(i.size))
      strides.append(i.stride)
    else:
      starts.append(i)
      sizes.append(1)
      strides.append(1)
      squeeze.append(d)
  return starts, sizes, strides, squeeze


def _span(sizes, strides):
  return [(n - 1) * s + 1 if n else 0 for n, s in zip(sizes, strides)]


def _strided(strides, sizes):
  return tuple(slice(0, (n - 1) * s + 1 if n else 0, s) for n, s in zip(sizes, strides))


def _starts(starts):
  import pyjax.numpy as jnp
  return [s if isinstance(s, (int, np.integer)) else jnp.asarray(s) for s in starts]


def read(value, idx):
  """``value`` read at the window index ``idx``."""
  import pyjax.lax as lax
  starts, sizes, strides, squeeze = _window(value.shape, idx)
  out = lax.dynamic_slice(value, _starts(starts), _span(sizes, strides))
  if any(s != 1 for s in strides):
    out = out[_strided(strides, sizes)]
  if squeeze:
    out = lax.squeeze(out, squeeze)
  return out


def indexed_shape(shape, idx):
  _, sizes, _, squeeze = _window(shape, idx)
  return tuple(n for d, n in enumerate(sizes) if d not in squeeze)


def write(value, idx, new, add=False):
  """``value`` with ``new`` written (``add``: added) at the window index ``idx``."""
  import pyjax.lax as lax
  starts, sizes, strides, squeeze = _window(value.shape, idx)
  starts = _starts(starts)
  new = lax.reshape(new, tuple(sizes)) if squeeze else new
  if all(s == 1 for s in strides):
    if add:
      new = lax.dynamic_slice(value, starts, sizes) + new
    return lax.dynamic_update_slice(value, new, starts)
  window = lax.dynamic_slice(value, starts, _span(sizes, strides))
  sl = _strided(strides, sizes)
  window = window.at[sl].add(new) if add else window.at[sl].set(new)
  return lax.dynamic_update_slice(value, window, starts)
