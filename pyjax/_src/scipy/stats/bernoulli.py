"""jax.scipy.stats.bernoulli."""
from pyjax._src.scipy.stats._common import np, lax, jnp, promote_args_inexact, _c
from pyjax._src.scipy.special import xlogy, xlog1py

__all__ = ["logpmf", "pmf", "cdf", "ppf"]


def logpmf(k, p, loc=0):
  """Log of the Bernoulli pmf: ``k log p + (1 - k) log(1 - p)`` at ``k - loc`` in {0, 1}."""
  k, p, loc = promote_args_inexact("bernoulli.logpmf", k, p, loc)
  x = lax.sub(k, loc)
  lp = xlogy(x, p) + xlog1py(lax.sub(_c(k, 1), x), -p)
  return jnp.where(jnp.logical_or(lax.lt(x, _c(k, 0)), lax.gt(x, _c(k, 1))), -np.inf, lp)


def pmf(k, p, loc=0):
  """The Bernoulli pmf."""
  return jnp.exp(logpmf(k, p, loc))


def cdf(k, p):
  """The Bernoulli CDF (NaN for ``p`` outside [0, 1])."""
  k, p = promote_args_inexact("bernoulli.cdf", k, p)
  zero, one = _c(k, 0), _c(k, 1)
  bad = jnp.isnan(k) | jnp.isnan(p) | (p < zero) | (p > one)
  return jnp.select([bad, lax.lt(k, zero), jnp.logical_and(lax.ge(k, zero), lax.lt(k, one)),
                     lax.ge(k, one)], [jnp.nan, zero, one - p, one])


def ppf(q, p):
  """The Bernoulli quantile function."""
  q, p = promote_args_inexact("bernoulli.ppf", q, p)
  zero, one = _c(q, 0), _c(q, 1)
  bad = jnp.isnan(q) | jnp.isnan(p) | (p < zero) | (p > one) | (q < zero) | (q > one)
  return jnp.where(bad, jnp.nan, jnp.where(lax.le(q, one - p), zero, one))
