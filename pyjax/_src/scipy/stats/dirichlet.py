"""jax.scipy.stats.dirichlet."""
from pyjax._src.numpy.util import promote_dtypes_inexact
from pyjax._src.scipy.stats._common import np, lax, jnp, _c
from pyjax._src.scipy.special import gammaln, xlogy

__all__ = ["logpdf", "pdf"]


def _is_simplex(x):
  return jnp.all(x > 0, axis=0) & (abs(jnp.sum(x, axis=0) - 1) < 1e-6)


def logpdf(x, alpha):
  """Log of the Dirichlet density; ``x`` has the categories on axis 0 (``len(alpha)`` or one
  fewer, the last then being ``1 - sum``)."""
  x, alpha = promote_dtypes_inexact(x, alpha)
  if alpha.ndim != 1:
    raise ValueError(f"`alpha` must be one-dimensional; got alpha.shape={alpha.shape}")
  if x.shape[0] not in (alpha.shape[0], alpha.shape[0] - 1):
    raise ValueError("`x` must have either the same number of entries as `alpha` or one "
                     f"entry fewer; got x.shape={x.shape}, alpha.shape={alpha.shape}")
  one = _c(x, 1)
  if x.shape[0] != alpha.shape[0]:
    x = jnp.concatenate([x, lax.sub(one, x.sum(0, keepdims=True))], axis=0)
  norm = jnp.sum(gammaln(alpha)) - gammaln(jnp.sum(alpha))
  if x.ndim > 1:
    alpha = lax.broadcast_in_dim(alpha, alpha.shape + (1,) * (x.ndim - 1), (0,))
  lp = lax.sub(jnp.sum(xlogy(lax.sub(alpha, one), x), axis=0), norm)
  return jnp.where(_is_simplex(x), lp, -np.inf)


def pdf(x, alpha):
  """The Dirichlet density."""
  return lax.exp(logpdf(x, alpha))
