"""jax.scipy.ndimage.map_coordinates: nearest (order 0) and linear (order 1) interpolation
with the 'constant', 'nearest', 'wrap', 'mirror' and 'reflect' boundary modes."""
from __future__ import annotations

import functools
import itertools
import operator
from functools import partial

import numpy as np

from pyjax._src import dtypes
from pyjax._src.api import jit
from pyjax._src.lax import lax_api as lax
import pyjax.numpy as jnp

__all__ = ["map_coordinates"]


def _mirror(index, size):
  s = size - 1
  return jnp.abs((index + s) % (2 * s) - s)


def _reflect(index, size):
  return jnp.floor_divide(_mirror(2 * index + 1, 2 * size + 1) - 1, 2)


_FIXERS = {
    "constant": lambda index, size: index,
    "nearest": lambda index, size: jnp.clip(index, 0, size - 1),
    "wrap": lambda index, size: index % size,
    "mirror": _mirror,
    "reflect": _reflect,
}


def _round_half_away(a):
  return a if dtypes.issubdtype(a.dtype, np.integer) else lax.round(a)


def _nearest(coord):
  return [(_round_half_away(coord).astype(np.int32), coord.dtype.type(1))]


def _linear(coord):
  lo = jnp.floor(coord)
  w_hi = coord - lo
  idx = lo.astype(np.int32)
  return [(idx, 1 - w_hi), (idx + 1, w_hi)]


@partial(jit, static_argnums=(2, 3, 4))
def _map_coordinates(input, coordinates, order, mode, cval):
  arr = jnp.asarray(input)
  coords = [jnp.asarray(c) for c in coordinates]
  cval = jnp.asarray(cval, arr.dtype)
  if len(coordinates) != arr.ndim:
    raise ValueError("coordinates must be a sequence of length input.ndim, but "
                     f"{len(coordinates)} != {arr.ndim}")
  fix = _FIXERS.get(mode)
  if fix is None:
    raise NotImplementedError(
        "jax.scipy.ndimage.map_coordinates does not yet support mode {}. Currently supported "
        "modes are {}.".format(mode, set(_FIXERS)))
  if order == 0:
    nodes_fn = _nearest
  elif order == 1:
    nodes_fn = _linear
  else:
    raise NotImplementedError("jax.scipy.ndimage.map_coordinates currently requires order<=1")
  per_dim = []
  for c, size in zip(coords, arr.shape):
    items = []
    for index, weight in nodes_fn(c):
      valid = ((0 <= index) & (index < size)) if mode == "constant" else True
      items.append((fix(index, size), valid, weight))
    per_dim.append(items)
  terms = []
  for combo in itertools.product(*per_dim):
    idx = tuple(t[0] for t in combo)
    valids = [t[1] for t in combo]
    weights = [t[2] for t in combo]
    if all(v is True for v in valids):
      val = arr[idx]
    else:
      val = jnp.where(functools.reduce(operator.and_, valids), arr[idx], cval)
    terms.append(functools.reduce(operator.mul, weights) * val)
  out = sum(terms[1:], terms[0])
  if dtypes.issubdtype(arr.dtype, np.integer):
    out = _round_half_away(out)
  return out.astype(arr.dtype)


def map_coordinates(input, coordinates, order, mode="constant", cval=0.0):
  """Sample ``input`` at fractional ``coordinates`` (one array per input dimension) by
  spline interpolation of ``order`` 0 or 1.  Integer inputs are rounded half away from
  zero, like SciPy."""
  return _map_coordinates(input, coordinates, order, mode, cval)
