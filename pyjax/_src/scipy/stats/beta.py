"""jax.scipy.stats.beta."""
from pyjax._src.scipy.stats._common import np, lax, jnp, promote_args_inexact, _c
from pyjax._src.scipy.special import betainc, betaln, xlogy, xlog1py

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]


def logpdf(x, a, b, loc=0, scale=1):
  """Log of the beta density on ``[loc, loc + scale]`` (NaN for non-positive a, b, scale)."""
  x, a, b, loc, scale = promote_args_inexact("beta.logpdf", x, a, b, loc, scale)
  one = _c(x, 1)
  y = lax.div(lax.sub(x, loc), scale)
  lin = lax.add(xlogy(lax.sub(a, one), y), xlog1py(lax.sub(b, one), lax.neg(y)))
  lp = lax.sub(lax.add(lax.neg(betaln(a, b)), lin), lax.log(scale))
  out = jnp.where(jnp.logical_or(lax.gt(x, lax.add(loc, scale)), lax.lt(x, loc)), -np.inf, lp)
  zero = _c(a, 0)
  bad = jnp.logical_or(jnp.logical_or(lax.le(a, zero), lax.le(b, zero)), lax.le(scale, zero))
  return jnp.where(bad, np.nan, out)


def pdf(x, a, b, loc=0, scale=1):
  """The beta density."""
  return lax.exp(logpdf(x, a, b, loc, scale))


def _clip01(x, loc, scale):
  return lax.clamp(_c(x, 0), lax.div(lax.sub(x, loc), scale), _c(x, 1))


def cdf(x, a, b, loc=0, scale=1):
  """The beta CDF ``I_y(a, b)``."""
  x, a, b, loc, scale = promote_args_inexact("beta.cdf", x, a, b, loc, scale)
  return betainc(a, b, _clip01(x, loc, scale))


def logcdf(x, a, b, loc=0, scale=1):
  """``log(cdf)``."""
  return lax.log(cdf(x, a, b, loc, scale))


def sf(x, a, b, loc=0, scale=1):
  """The beta survival function ``I_{1-y}(b, a)``."""
  x, a, b, loc, scale = promote_args_inexact("beta.sf", x, a, b, loc, scale)
  return betainc(b, a, 1 - _clip01(x, loc, scale))


def logsf(x, a, b, loc=0, scale=1):
  """``log(sf)``."""
  return lax.log(sf(x, a, b, loc, scale))
