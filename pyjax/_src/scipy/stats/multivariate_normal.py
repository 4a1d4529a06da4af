"""jax.scipy.stats.multivariate_normal."""
from pyjax._src.numpy.util import promote_dtypes_inexact
from pyjax._src.scipy.stats._common import np, lax, jnp

__all__ = ["logpdf", "pdf"]


def logpdf(x, mean, cov, allow_singular=None):
  """Log of the multivariate normal density; ``cov`` may be a scalar (isotropic), and
  ``x``/``mean``/``cov`` broadcast over leading batch dimensions (Cholesky-based)."""
  if allow_singular is not None:
    raise NotImplementedError("allow_singular argument of multivariate_normal.logpdf")
  x, mean, cov = promote_dtypes_inexact(x, mean, cov)
  if not mean.shape:
    return (-1 / 2 * jnp.square(x - mean) / cov
            - 1 / 2 * (jnp.log(2 * np.pi) + jnp.log(cov)))
  n = mean.shape[-1]
  if not np.shape(cov):
    y = x - mean
    return (-1 / 2 * jnp.einsum("...i,...i->...", y, y) / cov
            - n / 2 * (jnp.log(2 * np.pi) + jnp.log(cov)))
  if cov.ndim < 2 or cov.shape[-2:] != (n, n):
    raise ValueError("multivariate_normal.logpdf got incompatible shapes")
  from pyjax._src.lax import linalg as lax_linalg
  L = lax_linalg.cholesky(cov)
  d = x - mean
  batch = jnp.broadcast_shapes(L.shape[:-2], d.shape[:-1])
  Lb = jnp.broadcast_to(L, batch + (n, n))
  db = jnp.broadcast_to(d, batch + (n,))[..., None, :]
  y = lax_linalg.triangular_solve(Lb, db, left_side=False, lower=True, transpose_a=True)
  y = y[..., 0, :]
  return (-1 / 2 * jnp.einsum("...i,...i->...", y, y) - n / 2 * jnp.log(2 * np.pi)
          - jnp.log(jnp.diagonal(L, axis1=-1, axis2=-2)).sum(-1))


def pdf(x, mean, cov):
  """The multivariate normal density."""
  return lax.exp(logpdf(x, mean, cov))
