"""jax.scipy.stats.binom."""
from pyjax._src.scipy.stats._common import np, lax, jnp, promote_args_inexact, _c
from pyjax._src.scipy.special import gammaln, xlogy, xlog1py

__all__ = ["logpmf", "pmf"]


def logpmf(k, n, p, loc=0):
  """Log of the binomial pmf at ``k - loc`` (``-inf`` outside ``[loc, loc + n]``)."""
  k, n, p, loc = promote_args_inexact("binom.logpmf", k, n, p, loc)
  y = lax.sub(k, loc)
  comb = lax.sub(gammaln(n + 1), lax.add(gammaln(y + 1), gammaln(n - y + 1)))
  lin = lax.add(xlogy(y, p), xlog1py(lax.sub(n, y), lax.neg(p)))
  lp = lax.add(comb, lin)
  zero = _c(y, 0)
  lp = jnp.where(jnp.logical_or(jnp.logical_and(lax.eq(y, zero), lax.eq(n, zero)),
                                lax.eq(lin, zero)), 0., lp)
  return jnp.where(lax.ge(k, loc) & lax.lt(k, loc + n + 1), lp, -np.inf)


def pmf(k, n, p, loc=0):
  """The binomial pmf."""
  return lax.exp(logpmf(k, n, p, loc))
