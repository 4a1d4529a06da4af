"""jax.scipy.stats.cauchy."""
from pyjax._src.scipy.stats._common import np, lax, jnp, promote_args_inexact, _c

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "isf", "ppf"]


def logpdf(x, loc=0, scale=1):
  """Log of the Cauchy density."""
  x, loc, scale = promote_args_inexact("cauchy.logpdf", x, loc, scale)
  z = lax.div(lax.sub(x, loc), scale)
  return lax.neg(lax.add(lax.log(lax.mul(_c(x, np.pi), scale)), lax.log1p(lax.mul(z, z))))


def pdf(x, loc=0, scale=1):
  """The Cauchy density."""
  return lax.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
  """The Cauchy CDF ``1/2 + atan(z) / pi``."""
  x, loc, scale = promote_args_inexact("cauchy.cdf", x, loc, scale)
  z = lax.div(lax.sub(x, loc), scale)
  return lax.add(_c(x, 0.5), lax.mul(lax.div(_c(x, 1.0), _c(x, np.pi)), jnp.arctan(z)))


def logcdf(x, loc=0, scale=1):
  """``log(cdf)``."""
  return lax.log(cdf(x, loc, scale))


def sf(x, loc=0, scale=1):
  """The Cauchy survival function."""
  x, loc, scale = promote_args_inexact("cauchy.sf", x, loc, scale)
  return cdf(-x, -loc, scale)


def logsf(x, loc=0, scale=1):
  """``log(sf)``."""
  x, loc, scale = promote_args_inexact("cauchy.logsf", x, loc, scale)
  return logcdf(-x, -loc, scale)


def isf(q, loc=0, scale=1):
  """The inverse survival function ``tan(pi/2 - pi q) * scale + loc``."""
  q, loc, scale = promote_args_inexact("cauchy.isf", q, loc, scale)
  u = lax.tan(lax.sub(_c(q, np.pi / 2), lax.mul(_c(q, np.pi), q)))
  return lax.add(lax.mul(u, scale), loc)


def ppf(q, loc=0, scale=1):
  """The quantile function ``tan(pi q - pi/2) * scale + loc``."""
  q, loc, scale = promote_args_inexact("cauchy.ppf", q, loc, scale)
  u = lax.tan(lax.sub(lax.mul(_c(q, np.pi), q), _c(q, np.pi / 2)))
  return lax.add(lax.mul(u, scale), loc)
