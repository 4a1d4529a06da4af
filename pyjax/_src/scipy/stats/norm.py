"""jax.scipy.stats.norm."""
from pyjax._src.scipy.stats._common import np, lax, jnp, promote_args_inexact, _c
from pyjax._src.scipy import special

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "ppf", "logsf", "sf", "isf"]


def logpdf(x, loc=0, scale=1):
  """Log of the normal density."""
  x, loc, scale = promote_args_inexact("norm.logpdf", x, loc, scale)
  s2 = lax.square(scale)
  log_norm = lax.log(lax.mul(_c(x, 2 * np.pi), s2))
  quad = lax.div(lax.square(lax.sub(x, loc)), s2)
  return lax.div(lax.add(log_norm, quad), _c(x, -2))


def pdf(x, loc=0, scale=1):
  """The normal density."""
  return lax.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
  """The normal CDF (``special.ndtr``)."""
  x, loc, scale = promote_args_inexact("norm.cdf", x, loc, scale)
  return special.ndtr(lax.div(lax.sub(x, loc), scale))


def logcdf(x, loc=0, scale=1):
  """``special.log_ndtr`` of the standardized ``x``."""
  x, loc, scale = promote_args_inexact("norm.logcdf", x, loc, scale)
  return special.log_ndtr(lax.div(lax.sub(x, loc), scale))


def ppf(q, loc=0, scale=1):
  """The normal quantile function ``ndtri(q) * scale + loc`` (default float dtype)."""
  return jnp.asarray(special.ndtri(q) * scale + loc, float)


def logsf(x, loc=0, scale=1):
  """``logcdf(-x, -loc, scale)``."""
  x, loc, scale = promote_args_inexact("norm.logsf", x, loc, scale)
  return logcdf(-x, -loc, scale)


def sf(x, loc=0, scale=1):
  """``cdf(-x, -loc, scale)``."""
  x, loc, scale = promote_args_inexact("norm.sf", x, loc, scale)
  return cdf(-x, -loc, scale)


def isf(q, loc=0, scale=1):
  """``ppf(1 - q, loc, scale)``."""
  return ppf(lax.sub(_c(jnp.asarray(q), 1), q), loc, scale)
