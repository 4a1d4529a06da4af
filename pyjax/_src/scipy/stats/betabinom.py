"""jax.scipy.stats.betabinom."""
from pyjax._src.api import jit
from pyjax._src.scipy.stats._common import np, lax, jnp, promote_args_inexact, _c
from pyjax._src.scipy.special import betaln

__all__ = ["logpmf", "pmf"]


@jit
def logpmf(k, n, a, b, loc=0):
  """Log of the beta-binomial pmf at ``floor(k) - loc``."""
  k, n, a, b, loc = promote_args_inexact("betabinom.logpmf", k, n, a, b, loc)
  y = lax.sub(lax.floor(k), loc)
  one, zero = _c(y, 1), _c(y, 0)
  comb = lax.neg(lax.add(lax.log1p(n), betaln(lax.add(lax.sub(n, y), one), lax.add(y, one))))
  betas = lax.sub(betaln(lax.add(y, a), lax.add(lax.sub(n, y), b)), betaln(a, b))
  lp = lax.add(comb, betas)
  lp = jnp.where(jnp.logical_and(lax.eq(y, zero), lax.eq(n, zero)), 0., lp)
  outside = jnp.logical_or(jnp.logical_or(lax.lt(y, lax.neg(loc)), lax.gt(y, n)),
                           lax.le(lax.add(y, a), zero))
  lp = jnp.where(outside, -np.inf, lp)
  bad = jnp.logical_or(jnp.logical_or(lax.lt(n, zero), lax.le(a, zero)), lax.le(b, zero))
  return jnp.where(bad, np.nan, lp)


def pmf(k, n, a, b, loc=0):
  """The beta-binomial pmf."""
  return lax.exp(logpmf(k, n, a, b, loc))
