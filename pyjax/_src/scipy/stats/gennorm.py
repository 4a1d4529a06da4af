"""jax.scipy.stats.gennorm (the generalized normal distribution)."""
from pyjax._src.scipy.stats._common import lax, promote_args_inexact

__all__ = ["logpdf", "cdf", "pdf"]


def logpdf(x, beta):
  """``log(beta / 2) - lgamma(1 / beta) - |x|**beta``."""
  x, beta = promote_args_inexact("gennorm.logpdf", x, beta)
  return lax.log(0.5 * beta) - lax.lgamma(1 / beta) - lax.abs(x) ** beta


def cdf(x, beta):
  """``(1 + sign(x) P(1/beta, |x|**beta)) / 2``."""
  x, beta = promote_args_inexact("gennorm.cdf", x, beta)
  return 0.5 * (1 + lax.sign(x) * lax.igamma(1 / beta, lax.abs(x) ** beta))


def pdf(x, beta):
  """The generalized normal density."""
  return lax.exp(logpdf(x, beta))
