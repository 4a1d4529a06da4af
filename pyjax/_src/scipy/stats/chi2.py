"""jax.scipy.stats.chi2."""
from pyjax._src.scipy.stats._common import np, lax, jnp, promote_args_inexact, _c
from pyjax._src.scipy.special import gammainc, gammaincc

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]


def logpdf(x, df, loc=0, scale=1):
  """Log of the chi-squared density with ``df`` degrees of freedom."""
  x, df, loc, scale = promote_args_inexact("chi2.logpdf", x, df, loc, scale)
  one, two = _c(x, 1), _c(x, 2)
  y = lax.div(lax.sub(x, loc), scale)
  h = lax.div(df, two)
  kernel = lax.sub(lax.mul(lax.sub(h, one), lax.log(y)), lax.div(y, two))
  norm = lax.neg(lax.add(lax.lgamma(h), lax.div(lax.mul(lax.log(two), df), two)))
  return jnp.where(lax.lt(x, loc), -np.inf, lax.add(lax.sub(norm, lax.log(scale)), kernel))


def pdf(x, df, loc=0, scale=1):
  """The chi-squared density."""
  return lax.exp(logpdf(x, df, loc, scale))


def _half(x, loc, scale):
  return lax.clamp(_c(x, 0), lax.div(lax.sub(x, loc), lax.mul(scale, _c(scale, 2))),
                   _c(x, np.inf))


def cdf(x, df, loc=0, scale=1):
  """The chi-squared CDF ``P(df/2, y/2)``."""
  x, df, loc, scale = promote_args_inexact("chi2.cdf", x, df, loc, scale)
  return gammainc(lax.div(df, _c(scale, 2)), _half(x, loc, scale))


def logcdf(x, df, loc=0, scale=1):
  """``log(cdf)``."""
  return lax.log(cdf(x, df, loc, scale))


def sf(x, df, loc=0, scale=1):
  """The chi-squared survival function ``Q(df/2, y/2)``."""
  x, df, loc, scale = promote_args_inexact("chi2.sf", x, df, loc, scale)
  return gammaincc(lax.div(df, _c(scale, 2)), _half(x, loc, scale))


def logsf(x, df, loc=0, scale=1):
  """``log(sf)``."""
  return lax.log(sf(x, df, loc, scale))
