"""jax.scipy.stats.expon."""
from pyjax._src.scipy.stats._common import np, lax, jnp, promote_args_inexact

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "logsf", "sf", "ppf"]


def logpdf(x, loc=0, scale=1):
  """Log of the exponential density."""
  x, loc, scale = promote_args_inexact("expon.logpdf", x, loc, scale)
  lp = lax.neg(lax.add(lax.div(lax.sub(x, loc), scale), lax.log(scale)))
  return jnp.where(lax.lt(x, loc), -np.inf, lp)


def pdf(x, loc=0, scale=1):
  """The exponential density."""
  return lax.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
  """The exponential CDF ``-expm1(-(x - loc) / scale)``."""
  x, loc, scale = promote_args_inexact("expon.cdf", x, loc, scale)
  nz = lax.div(lax.sub(loc, x), scale)
  return jnp.where(lax.lt(x, loc), jnp.zeros_like(nz), lax.neg(lax.expm1(nz)))


def logcdf(x, loc=0, scale=1):
  """``log1p(-sf)``."""
  return lax.log1p(lax.neg(sf(x, loc, scale)))


def logsf(x, loc=0, scale=1):
  """``-(x - loc) / scale`` (0 below ``loc``)."""
  x, loc, scale = promote_args_inexact("expon.sf", x, loc, scale)
  nz = lax.div(lax.sub(loc, x), scale)
  return jnp.where(lax.lt(x, loc), jnp.zeros_like(nz), nz)


def sf(x, loc=0, scale=1):
  """The exponential survival function."""
  return lax.exp(logsf(x, loc, scale))


def ppf(q, loc=0, scale=1):
  """The exponential quantile function (NaN outside [0, 1])."""
  q, loc, scale = promote_args_inexact("expon.ppf", q, loc, scale)
  return jnp.where(jnp.isnan(q) | (q < 0) | (q > 1), np.nan,
                   lax.sub(loc, lax.mul(scale, lax.log1p(lax.neg(q)))))
