"""jax.scipy.integrate.trapezoid."""
from __future__ import annotations

from functools import partial

from pyjax._src.api import jit
from pyjax._src.numpy.util import check_arraylike, promote_dtypes_inexact
import pyjax.numpy as jnp

__all__ = ["trapezoid"]


def _diff_last(a):
  return a[..., 1:] - a[..., :-1]


@partial(jit, static_argnames=("axis",))
def trapezoid(y, x=None, dx=1.0, axis: int = -1):
  """Integrate ``y`` along ``axis`` with the trapezoidal rule, at sample points ``x`` (1-D or
  the shape of ``y``) or with uniform spacing ``dx``."""
  if x is None:
    check_arraylike("trapezoid", y)
    y, = promote_dtypes_inexact(y)
    d = jnp.asarray(dx)
  else:
    check_arraylike("trapezoid", y, x)
    y, x = promote_dtypes_inexact(y, x)
    if x.ndim == 1:
      d = _diff_last(x)
    else:
      d = _diff_last(jnp.moveaxis(x, axis, -1))
  y = jnp.moveaxis(y, axis, -1)
  return 0.5 * (d * (y[..., 1:] + y[..., :-1])).sum(-1)
