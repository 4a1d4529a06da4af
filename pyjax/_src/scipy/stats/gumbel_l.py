"""jax.scipy.stats.gumbel_l (the left-skewed Gumbel distribution)."""
from pyjax._src.scipy.stats._common import np, lax, jnp, promote_args_inexact, _c
from pyjax._src.scipy.special import xlogy, xlog1py

__all__ = ["logpdf", "pdf", "logcdf", "cdf", "ppf", "sf", "logsf"]


def _z(x, loc, scale):
  return lax.gt(scale, _c(scale, 0)), lax.div(lax.sub(x, loc), scale)


def logpdf(x, loc=0, scale=1):
  """``z - exp(z) - log(scale)`` (NaN for ``scale <= 0``)."""
  x, loc, scale = promote_args_inexact("gumbel_l.logpdf", x, loc, scale)
  ok, z = _z(x, loc, scale)
  return jnp.where(ok, lax.add(xlogy(-1, scale), lax.sub(z, lax.exp(z))), np.nan)


def pdf(x, loc=0, scale=1):
  """The left Gumbel density."""
  return lax.exp(logpdf(x, loc, scale))


def logcdf(x, loc=0, scale=1):
  """``log(1 - exp(-exp(z)))``."""
  x, loc, scale = promote_args_inexact("gumbel_l.logcdf", x, loc, scale)
  ok, z = _z(x, loc, scale)
  return jnp.where(ok, lax.log(-lax.expm1(lax.neg(lax.exp(z)))), np.nan)


def cdf(x, loc=0, scale=1):
  """The left Gumbel CDF."""
  return lax.exp(logcdf(x, loc, scale))


def ppf(p, loc=0, scale=1):
  """The quantile function ``loc + scale log(-log1p(-p))`` (NaN outside (0, 1))."""
  p, loc, scale = promote_args_inexact("gumbel_l.ppf", p, loc, scale)
  ok = lax.bitwise_and(lax.gt(p, _c(p, 0)), lax.lt(p, _c(p, 1)))
  q = lax.add(loc, lax.mul(scale, lax.log(xlog1py(-1, lax.neg(p)))))
  return jnp.where(ok, q, np.nan)


def sf(x, loc=0, scale=1):
  """The left Gumbel survival function."""
  return jnp.exp(logsf(x, loc, scale))


def logsf(x, loc=0, scale=1):
  """``-exp(z)``."""
  x, loc, scale = promote_args_inexact("gumbel_l.logsf", x, loc, scale)
  ok, z = _z(x, loc, scale)
  return jnp.where(ok, lax.neg(lax.exp(z)), np.nan)
