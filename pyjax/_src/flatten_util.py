"""``ravel_pytree``: a pytree of arrays as one 1-D array, and the function undoing it."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from pyjax._src import dtypes
from pyjax._src.lax import lax_api as lax
from pyjax._src.lax.elementwise import _convert_element_type
from pyjax._src.tree_util import tree_flatten, tree_unflatten

__all__ = ["ravel_pytree"]


class _HashablePartial:
  """``functools.partial`` that compares and hashes by its function and arguments, so two
  unravel functions for the same structure are equal (usable as jit static arguments)."""
  __slots__ = ("f", "args")

  def __init__(self, f, *args):
    self.f = f
    self.args = args

  def __eq__(self, other):
    return (type(other) is _HashablePartial and self.f is other.f
            and self.args == other.args)

  def __hash__(self):
    return hash((self.f, self.args))

  def __call__(self, *args):
    return self.f(*self.args, *args)

  def __repr__(self):
    return f"<unravel function of {getattr(self.f, '__name__', self.f)}>"


def ravel_pytree(pytree: Any) -> tuple[Any, Callable[[Any], Any]]:
  """Flatten a pytree of arrays and scalars into one 1-D array.

  Returns ``(flat, unravel)``: ``flat`` concatenates the raveled leaves in tree order, in
  the dtype the leaves' dtypes promote to; ``unravel(v)`` splits a 1-D array of that
  length back into the original structure, each leaf in its original shape and dtype.
  When all leaves share one dtype, ``unravel`` accepts any dtype (and keeps it);
  otherwise it requires the promoted dtype (``TypeError`` for another).  A pytree with no
  leaves gives an empty float32 array.  Works under ``jit``, ``grad`` and ``vmap``.
  """
  leaves, treedef = tree_flatten(pytree)
  flat, unravel_list = _ravel_list(leaves)
  return flat, _HashablePartial(_unravel_pytree, treedef, unravel_list)


def _unravel_pytree(treedef, unravel_list, flat):
  return tree_unflatten(treedef, unravel_list(flat))


def _ravel_list(leaves):
  if not leaves:
    return lax.full([0], 0, "float32"), _HashablePartial(_unravel_empty)
  from_dtypes = tuple(dtypes.dtype(x, canonicalize=True) for x in leaves)
  to_dtype = dtypes.result_type(*from_dtypes)
  sizes = tuple(int(np.size(x)) for x in leaves)
  shapes = tuple(tuple(np.shape(x)) for x in leaves)
  if all(d == to_dtype for d in from_dtypes):
    # One dtype: no conversions, and unravel keeps whatever dtype it is given.
    flat = lax.concatenate([lax.reshape(x, (s,)) for x, s in zip(leaves, sizes)], 0)
    return flat, _HashablePartial(_unravel_one_dtype, sizes, shapes)
  flat = lax.concatenate(
      [lax.reshape(lax.convert_element_type(x, to_dtype), (s,)) for x, s in zip(leaves, sizes)],
      0)
  return flat, _HashablePartial(_unravel_many_dtypes, sizes, shapes, from_dtypes, to_dtype)


def _unravel_empty(flat):
  return []


def _unravel_one_dtype(sizes, shapes, flat):
  chunks = lax.split(flat, sizes)
  return [lax.reshape(c, shape) for c, shape in zip(chunks, shapes)]


def _unravel_many_dtypes(sizes, shapes, from_dtypes, to_dtype, flat):
  got = dtypes.dtype(flat, canonicalize=True)
  if got != to_dtype:
    raise TypeError(f"unravel function given array of dtype {got}, "
                    f"but expected dtype {to_dtype}")
  chunks = lax.split(flat, sizes)
  # Complex -> real drops the imaginary part without a warning, as JAX's unravel does.
  return [_convert_element_type(lax.reshape(c, shape), d)
          for c, shape, d in zip(chunks, shapes, from_dtypes)]
