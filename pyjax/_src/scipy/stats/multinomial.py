"""jax.scipy.stats.multinomial."""
from pyjax._src import dtypes
from pyjax._src.numpy.util import promote_args_numeric
from pyjax._src.scipy.stats._common import np, lax, jnp, promote_args_inexact
from pyjax._src.scipy.special import gammaln, xlogy

__all__ = ["logpmf", "pmf"]


def logpmf(x, n, p):
  """Log of the multinomial pmf; ``x`` and ``n`` must be integers, categories on the last
  axis."""
  p, = promote_args_inexact("multinomial.logpmf", p)
  x, n = promote_args_numeric("multinomial.logpmf", x, n)
  if not dtypes.issubdtype(x.dtype, np.integer):
    raise ValueError(f"x and n must be of integer type; got x.dtype={x.dtype}, "
                     f"n.dtype={n.dtype}")
  x = x.astype(p.dtype)
  n = n.astype(p.dtype)
  lp = gammaln(n + 1) + jnp.sum(xlogy(x, p) - gammaln(x + 1), axis=-1)
  return jnp.where(jnp.equal(jnp.sum(x), n), lp, -np.inf)


def pmf(x, n, p):
  """The multinomial pmf."""
  return lax.exp(logpmf(x, n, p))
