"""Shared imports for the distribution modules."""
import numpy as np

from pyjax._src.lax import lax_api as lax
from pyjax._src.numpy.util import promote_args_inexact
import pyjax.numpy as jnp


from pyjax._src.numpy.util import constant as _weak_constant  # noqa: E402


def _c(x, v):
  """``v`` as a 0-d constant of ``x``'s dtype, weakly typed when ``x`` is (as JAX's
  ``lax._const``, which gives a Python scalar for a weakly typed example)."""
  if getattr(x, "weak_type", False):
    return _weak_constant(v, x.dtype, True)
  return np.array(v, dtype=x.dtype)


__all__ = ["np", "lax", "jnp", "promote_args_inexact", "_c"]
