"""jax.scipy.cluster.vq.vq: assign observations to the nearest code-book entry."""
from __future__ import annotations

from pyjax._src.numpy.util import check_arraylike, promote_dtypes_inexact
import pyjax.numpy as jnp

__all__ = ["vq"]


def vq(obs, code_book, check_finite=True):
  """For each observation (rows of ``obs``), the index of the nearest code (Euclidean
  distance) and that distance.  ``check_finite`` is ignored (as in JAX)."""
  del check_finite
  check_arraylike("scipy.cluster.vq.vq", obs, code_book)
  obs, cb = promote_dtypes_inexact(obs, code_book)
  if obs.ndim != cb.ndim:
    raise ValueError("Observation and code_book should have the same rank")
  if obs.ndim == 1:
    obs, cb = obs[..., None], cb[..., None]
  if obs.ndim != 2:
    raise ValueError("ndim different than 1 or 2 are not supported")
  diff = obs[:, None, :] - cb[None, :, :]
  dist = jnp.sqrt(jnp.sum(jnp.real(diff * jnp.conj(diff)), axis=-1))
  code = jnp.argmin(dist, axis=-1)
  return code, jnp.take_along_axis(dist, code[:, None], axis=1)[:, 0]
