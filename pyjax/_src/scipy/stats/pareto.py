"""jax.scipy.stats.pareto."""
from pyjax._src.scipy.stats._common import np, lax, jnp, promote_args_inexact, _c

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "logsf", "sf", "ppf"]


def logpdf(x, b, loc=0, scale=1):
  """Log of the Pareto density (``-inf`` below ``loc + scale``)."""
  x, b, loc, scale = promote_args_inexact("pareto.logpdf", x, b, loc, scale)
  z = lax.div(lax.sub(x, loc), scale)
  lp = lax.neg(lax.add(lax.log(lax.div(scale, b)), lax.mul(lax.add(b, _c(x, 1)), lax.log(z))))
  return jnp.where(lax.lt(x, lax.add(loc, scale)), -np.inf, lp)


def pdf(x, b, loc=0, scale=1):
  """The Pareto density."""
  return lax.exp(logpdf(x, b, loc, scale))


def cdf(x, b, loc=0, scale=1):
  """``1 - z**-b``."""
  x, b, loc, scale = promote_args_inexact("pareto.cdf", x, b, loc, scale)
  z = lax.div(lax.sub(x, loc), scale)
  return jnp.where(lax.lt(x, lax.add(loc, scale)), _c(x, 0),
                   lax.sub(_c(x, 1), lax.pow(z, lax.neg(b))))


def logcdf(x, b, loc=0, scale=1):
  """``log1p(-z**-b)``."""
  x, b, loc, scale = promote_args_inexact("pareto.logcdf", x, b, loc, scale)
  z = lax.div(lax.sub(x, loc), scale)
  return jnp.where(lax.lt(x, lax.add(loc, scale)), -np.inf,
                   lax.log1p(lax.neg(lax.pow(z, lax.neg(b)))))


def logsf(x, b, loc=0, scale=1):
  """``-b log z``."""
  x, b, loc, scale = promote_args_inexact("pareto.logsf", x, b, loc, scale)
  z = lax.div(lax.sub(x, loc), scale)
  return jnp.where(lax.lt(x, lax.add(loc, scale)), _c(x, 0), lax.neg(lax.mul(b, lax.log(z))))


def sf(x, b, loc=0, scale=1):
  """The Pareto survival function."""
  return lax.exp(logsf(x, b, loc, scale))


def ppf(q, b, loc=0, scale=1):
  """``loc + scale (1 - q)**(-1/b)`` (NaN outside [0, 1])."""
  q, b, loc, scale = promote_args_inexact("pareto.ppf", q, b, loc, scale)
  one = _c(q, 1)
  v = lax.add(loc, lax.mul(scale, lax.pow(lax.sub(one, q), lax.neg(lax.div(one, b)))))
  return jnp.where(jnp.isnan(q) | (q < 0) | (q > 1), np.nan, v)
