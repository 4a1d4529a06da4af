"""jax.scipy.interpolate.RegularGridInterpolator (linear and nearest on rectilinear
grids)."""
from __future__ import annotations

from itertools import product

import numpy as np

from pyjax._src import tree_util
from pyjax._src.numpy.util import check_arraylike, promote_dtypes_inexact
import pyjax.numpy as jnp

__all__ = ["RegularGridInterpolator"]


def _coords(points, ndim):
  if isinstance(points, tuple) and len(points) == 1:
    points = points[0]
  if isinstance(points, tuple):
    p = jnp.broadcast_arrays(*points)
    for q in p[1:]:
      if q.shape != p[0].shape:
        raise ValueError("coordinate arrays do not have the same shape")
    return jnp.stack([q.astype(float) for q in p], axis=-1)
  check_arraylike("_ndim_coords_from_arrays", points)
  points = jnp.asarray(points)
  if points.ndim == 1:
    points = points.reshape(-1, 1) if ndim is None else points.reshape(-1, ndim)
  return points


class RegularGridInterpolator:
  """Interpolation on a rectilinear grid (``method`` 'linear' or 'nearest'); points outside
  the grid get ``fill_value`` (``None`` extrapolates).  ``bounds_error=True`` is not
  supported (as in JAX)."""

  def __init__(self, points, values, method="linear", bounds_error=False,
               fill_value=np.nan):
    if method not in ("linear", "nearest"):
      raise ValueError(f"method {method!r} is not defined")
    self.method = method
    self.bounds_error = bounds_error
    if bounds_error:
      raise NotImplementedError("`bounds_error` takes no effect under JIT")
    check_arraylike("RegularGridInterpolator", values)
    if len(points) > values.ndim:
      raise ValueError(f"there are {len(points)} point arrays, but values has "
                       f"{values.ndim} dimensions")
    values, = promote_dtypes_inexact(values)
    if fill_value is not None:
      check_arraylike("RegularGridInterpolator", fill_value)
      fill_value = jnp.asarray(fill_value)
      if not np.can_cast(fill_value.dtype, values.dtype, casting="same_kind"):
        raise ValueError("fill_value must be either 'None' or of a type compatible with "
                         "values")
    self.fill_value = fill_value
    check_arraylike("RegularGridInterpolator", *points)
    self.grid = tuple(jnp.asarray(p) for p in points)
    self.values = values

  def __call__(self, xi, method=None):
    method = self.method if method is None else method
    if method not in ("linear", "nearest"):
      raise ValueError(f"method {method!r} is not defined")
    ndim = len(self.grid)
    xi = _coords(xi, ndim)
    if xi.shape[-1] != ndim:
      raise ValueError(f"the requested sample points xi have dimension {xi.shape[1]}, but "
                       f"this RegularGridInterpolator has dimension {ndim}")
    shape = xi.shape
    xi = xi.reshape(-1, shape[-1])
    idx, dist, oob = self._find_indices(xi.T)
    if method == "linear":
      out = self._linear(idx, dist)
    else:
      out = self.values[tuple(jnp.where(d <= 0.5, i, i + 1) for i, d in zip(idx, dist))]
    if self.fill_value is not None:
      out = jnp.where(oob.reshape(out.shape[:1] + (1,) * (out.ndim - 1)), self.fill_value,
                      out)
    return out.reshape(shape[:-1] + self.values.shape[ndim:])

  def _linear(self, idx, dist):
    vs = (slice(None),) + (None,) * (self.values.ndim - len(idx))
    out = jnp.asarray(0.0)
    for edge in product(*[[i, i + 1] for i in idx]):
      w = jnp.asarray(1.0)
      for e, i, d in zip(edge, idx, dist):
        w = w * jnp.where(e is i, 1 - d, d)
      out = out + self.values[edge] * w[vs]
    return out

  def _find_indices(self, xi):
    idx, dist = [], []
    oob = jnp.zeros((xi.shape[1],), dtype=bool)
    for x, g in zip(xi, self.grid):
      i = jnp.searchsorted(g, x) - 1
      i = jnp.where(i < 0, 0, i)
      i = jnp.where(i > g.size - 2, g.size - 2, i)
      idx.append(i)
      dist.append((x - g[i]) / (g[i + 1] - g[i]))
      oob = oob | (x < g[0]) | (x > g[-1])
    return idx, dist, oob


tree_util.register_pytree_node(
    RegularGridInterpolator,
    lambda o: ((o.grid, o.values, o.fill_value), (o.method, o.bounds_error)),
    lambda aux, ch: RegularGridInterpolator(*ch[:2], *aux, *ch[2:]))
