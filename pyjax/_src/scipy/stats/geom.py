"""jax.scipy.stats.geom."""
from pyjax._src.scipy.stats._common import np, lax, jnp, promote_args_inexact, _c
from pyjax._src.scipy.special import xlog1py

__all__ = ["logpmf", "pmf"]


def logpmf(k, p, loc=0):
  """Log of the geometric pmf ``(1 - p)**(k - 1) p`` at ``k - loc >= 1``."""
  k, p, loc = promote_args_inexact("geom.logpmf", k, p, loc)
  x = lax.sub(k, loc)
  lp = xlog1py(lax.sub(x, _c(k, 1)), -p) + lax.log(p)
  return jnp.where(lax.le(x, _c(k, 0)), -np.inf, lp)


def pmf(k, p, loc=0):
  """The geometric pmf."""
  return jnp.exp(logpmf(k, p, loc))
