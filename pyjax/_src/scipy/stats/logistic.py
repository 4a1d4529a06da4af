"""jax.scipy.stats.logistic."""
from pyjax._src.scipy.stats._common import lax, jnp, promote_args_inexact, _c
from pyjax._src.scipy.special import expit, logit

__all__ = ["logpdf", "pdf", "ppf", "sf", "isf", "cdf"]


def logpdf(x, loc=0, scale=1):
  """``-2 logaddexp(z/2, -z/2) - log(scale)``."""
  x, loc, scale = promote_args_inexact("logistic.logpdf", x, loc, scale)
  z = lax.div(lax.sub(x, loc), scale)
  two = _c(z, 2)
  h = lax.div(z, two)
  return lax.sub(lax.mul(lax.neg(two), jnp.logaddexp(h, lax.neg(h))), lax.log(scale))


def pdf(x, loc=0, scale=1):
  """The logistic density."""
  return lax.exp(logpdf(x, loc, scale))


def ppf(x, loc=0, scale=1):
  """``logit(q) * scale + loc``."""
  x, loc, scale = promote_args_inexact("logistic.ppf", x, loc, scale)
  return lax.add(lax.mul(logit(x), scale), loc)


def sf(x, loc=0, scale=1):
  """``expit(-z)``."""
  x, loc, scale = promote_args_inexact("logistic.sf", x, loc, scale)
  return expit(lax.neg(lax.div(lax.sub(x, loc), scale)))


def isf(x, loc=0, scale=1):
  """``-logit(q) * scale + loc``."""
  x, loc, scale = promote_args_inexact("logistic.isf", x, loc, scale)
  return lax.add(lax.mul(lax.neg(logit(x)), scale), loc)


def cdf(x, loc=0, scale=1):
  """``expit(z)``."""
  x, loc, scale = promote_args_inexact("logistic.cdf", x, loc, scale)
  return expit(lax.div(lax.sub(x, loc), scale))
