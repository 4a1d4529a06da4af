"""jax.scipy.stats.vonmises."""
from pyjax._src.scipy.stats._common import np, lax, jnp, promote_args_inexact, _c

__all__ = ["logpdf", "pdf"]


def logpdf(x, kappa):
  """``kappa (cos x - 1) - log(2 pi i0e(kappa))`` (NaN for ``kappa <= 0``)."""
  x, kappa = promote_args_inexact("vonmises.logpdf", x, kappa)
  v = kappa * (jnp.cos(x) - 1) - jnp.log(2 * np.pi * lax.bessel_i0e(kappa))
  return jnp.where(lax.gt(kappa, _c(kappa, 0)), v, np.nan)


def pdf(x, kappa):
  """The von Mises density."""
  return lax.exp(logpdf(x, kappa))
