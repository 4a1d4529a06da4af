"""jax.scipy.stats.wrapcauchy."""
from pyjax._src.scipy.stats._common import np, lax, jnp, promote_args_inexact, _c

__all__ = ["logpdf", "pdf"]


def logpdf(x, c):
  """Log of the wrapped Cauchy density on ``[0, 2 pi]`` (NaN unless ``0 < c < 1``)."""
  x, c = promote_args_inexact("wrapcauchy.logpdf", x, c)
  inside = lax.ge(x, _c(x, 0)) & lax.le(x, _c(x, np.pi * 2))
  v = jnp.log(1 - c * c) - jnp.log(2 * np.pi) - jnp.log(1 + c * c - 2 * c * jnp.cos(x))
  ok = lax.gt(c, _c(c, 0)) & lax.lt(c, _c(c, 1))
  return jnp.where(ok, jnp.where(inside, v, -np.inf), np.nan)


def pdf(x, c):
  """The wrapped Cauchy density."""
  return lax.exp(logpdf(x, c))
