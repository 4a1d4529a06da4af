"""jax.scipy.stats.gumbel_r (the right-skewed Gumbel distribution)."""
from pyjax._src.scipy.stats._common import np, lax, jnp, promote_args_inexact, _c
from pyjax._src.scipy.special import xlogy

__all__ = ["logpdf", "pdf", "logcdf", "cdf", "ppf", "sf", "logsf"]


def _ok(scale):
  return lax.gt(scale, _c(scale, 0))


def logpdf(x, loc=0, scale=1):
  """``-(z + exp(-z)) - log(scale)`` (NaN for ``scale <= 0``)."""
  x, loc, scale = promote_args_inexact("gumbel_r.logpdf", x, loc, scale)
  z = lax.div(lax.sub(x, loc), scale)
  lp = lax.add(xlogy(-1, scale), lax.neg(lax.add(z, lax.exp(lax.neg(z)))))
  return jnp.where(_ok(scale), lp, np.nan)


def pdf(x, loc=0, scale=1):
  """The right Gumbel density."""
  return lax.exp(logpdf(x, loc, scale))


def logcdf(x, loc=0, scale=1):
  """``-exp(-z)``."""
  x, loc, scale = promote_args_inexact("gumbel_r.logcdf", x, loc, scale)
  z = lax.div(lax.sub(x, loc), scale)
  return jnp.where(_ok(scale), lax.neg(lax.exp(lax.neg(z))), np.nan)


def cdf(x, loc=0, scale=1):
  """The right Gumbel CDF."""
  return lax.exp(logcdf(x, loc, scale))


def ppf(p, loc=0, scale=1):
  """The quantile function ``loc - scale log(-log p)`` (NaN outside (0, 1))."""
  p, loc, scale = promote_args_inexact("gumbel_r.ppf", p, loc, scale)
  ok = lax.bitwise_and(lax.gt(p, _c(p, 0)), lax.lt(p, _c(p, 1)))
  return jnp.where(ok, lax.sub(loc, lax.mul(scale, lax.log(xlogy(-1, p)))), np.nan)


def sf(x, loc=0, scale=1):
  """``1 - exp(-exp(-z))``."""
  x, loc, scale = promote_args_inexact("gumbel_r.sf", x, loc, scale)
  nz = lax.div(lax.sub(loc, x), scale)
  return jnp.where(_ok(scale), lax.sub(_c(x, 1), lax.exp(lax.neg(lax.exp(nz)))), np.nan)


def logsf(x, loc=0, scale=1):
  """``log1mexp(exp(-z))``."""
  from pyjax._src.nn.functions import log1mexp
  x, loc, scale = promote_args_inexact("gumbel_r.logsf", x, loc, scale)
  nz = lax.div(lax.sub(loc, x), scale)
  return jnp.where(_ok(scale), log1mexp(lax.exp(nz)), np.nan)
