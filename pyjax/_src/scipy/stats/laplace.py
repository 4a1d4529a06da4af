"""jax.scipy.stats.laplace."""
from pyjax._src.scipy.stats._common import lax, promote_args_inexact, _c

__all__ = ["logpdf", "pdf", "cdf"]


def logpdf(x, loc=0, scale=1):
  """``-|x - loc| / scale - log(2 scale)``."""
  x, loc, scale = promote_args_inexact("laplace.logpdf", x, loc, scale)
  lin = lax.div(lax.abs(lax.sub(x, loc)), scale)
  return lax.neg(lax.add(lin, lax.log(lax.mul(_c(x, 2), scale))))


def pdf(x, loc=0, scale=1):
  """The Laplace density."""
  return lax.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
  """The Laplace CDF."""
  x, loc, scale = promote_args_inexact("laplace.cdf", x, loc, scale)
  half, one = _c(x, 0.5), _c(x, 1)
  d = lax.div(lax.sub(x, loc), scale)
  return lax.select(lax.le(d, _c(x, 0)), lax.mul(half, lax.exp(d)),
                    lax.sub(one, lax.mul(half, lax.exp(lax.neg(d)))))
