"""jax.scipy.stats.gamma."""
from pyjax._src.scipy.stats._common import np, lax, jnp, promote_args_inexact, _c
from pyjax._src.scipy.special import gammainc, gammaincc, gammaln, xlogy

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]


def logpdf(x, a, loc=0, scale=1):
  """Log of the gamma density with shape ``a``."""
  x, a, loc, scale = promote_args_inexact("gamma.logpdf", x, a, loc, scale)
  ok = lax.ge(x, loc)
  one = _c(x, 1)
  y = jnp.where(ok, lax.div(lax.sub(x, loc), scale), one)
  lp = lax.sub(lax.sub(xlogy(lax.sub(a, one), y), y), lax.add(gammaln(a), lax.log(scale)))
  return jnp.where(ok, lp, -np.inf)


def pdf(x, a, loc=0, scale=1):
  """The gamma density."""
  return lax.exp(logpdf(x, a, loc, scale))


def cdf(x, a, loc=0, scale=1):
  """The gamma CDF ``P(a, y)``."""
  x, a, loc, scale = promote_args_inexact("gamma.cdf", x, a, loc, scale)
  return gammainc(a, lax.clamp(_c(x, 0), lax.div(lax.sub(x, loc), scale), _c(x, np.inf)))


def logcdf(x, a, loc=0, scale=1):
  """``log(cdf)``."""
  return lax.log(cdf(x, a, loc, scale))


def sf(x, a, loc=0, scale=1):
  """The gamma survival function ``Q(a, y)`` (1 below ``loc``)."""
  x, a, loc, scale = promote_args_inexact("gamma.sf", x, a, loc, scale)
  y = lax.div(lax.sub(x, loc), scale)
  return jnp.where(lax.lt(y, _c(y, 0)), 1, gammaincc(a, y))


def logsf(x, a, loc=0, scale=1):
  """``log(sf)``."""
  return lax.log(sf(x, a, loc, scale))
