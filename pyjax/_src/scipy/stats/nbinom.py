"""jax.scipy.stats.nbinom."""
from pyjax._src.scipy.stats._common import np, lax, jnp, promote_args_inexact, _c
from pyjax._src.scipy.special import gammaln, xlogy

__all__ = ["logpmf", "pmf"]


def logpmf(k, n, p, loc=0):
  """Log of the negative binomial pmf at ``k - loc``."""
  k, n, p, loc = promote_args_inexact("nbinom.logpmf", k, n, p, loc)
  one = _c(k, 1)
  y = lax.sub(k, loc)
  comb = lax.sub(lax.sub(gammaln(lax.add(y, n)), gammaln(n)), gammaln(lax.add(y, one)))
  lin = lax.add(xlogy(n, p), xlogy(y, lax.sub(one, p)))
  return jnp.where(lax.lt(k, loc), -np.inf, lax.add(comb, lin))


def pmf(k, n, p, loc=0):
  """The negative binomial pmf."""
  return lax.exp(logpmf(k, n, p, loc))
