"""jax.scipy.stats.truncnorm (the normal distribution truncated to [a, b])."""
from pyjax._src.api import jit
from pyjax._src.scipy.stats._common import np, lax, jnp, promote_args_inexact
from pyjax._src.scipy.special import log_ndtr, logsumexp, ndtr
from pyjax._src.scipy.stats import norm

__all__ = ["logpdf", "pdf", "logsf", "sf", "logcdf", "cdf"]


def _log_diff(x, y):
  """``log(exp(x) - exp(y))``."""
  return logsumexp(jnp.array([x, y]), b=jnp.array([jnp.ones_like(x), -jnp.ones_like(y)]),
                   axis=0)


def _log_gauss_mass(a, b):
  """``log(ndtr(b) - ndtr(a))``, computed in whichever tail keeps precision."""
  a, b = jnp.broadcast_arrays(jnp.array(a), jnp.array(b))
  left = b <= 0
  right = a > 0
  central = ~(left | right)
  a_t = jnp.where(right, -b, a)
  b_t = jnp.where(right, -a, b)
  tail = _log_diff(log_ndtr(b_t), log_ndtr(a_t))
  mid = jnp.log1p(-ndtr(a) - ndtr(-b))
  return jnp.where(central, mid, tail)


@jit
def logpdf(x, a, b, loc=0, scale=1):
  """Log of the truncated normal density (``a``, ``b`` in standardized units)."""
  x, a, b, loc, scale = promote_args_inexact("truncnorm.logpdf", x, a, b, loc, scale)
  v = lax.sub(norm.logpdf(x, loc, scale), _log_gauss_mass(a, b))
  z = lax.div(lax.sub(x, loc), scale)
  v = jnp.where((z < a) | (z > b), -np.inf, v)
  return jnp.where(a >= b, np.nan, v)


def pdf(x, a, b, loc=0, scale=1):
  """The truncated normal density."""
  return lax.exp(logpdf(x, a, b, loc, scale))


@jit
def logsf(x, a, b, loc=0, scale=1):
  """``logcdf(-x, -b, -a, -loc, scale)``."""
  x, a, b, loc, scale = promote_args_inexact("truncnorm.logsf", x, a, b, loc, scale)
  return logcdf(-x, -b, -a, -loc, scale)


@jit
def sf(x, a, b, loc=0, scale=1):
  """The truncated normal survival function."""
  return lax.exp(logsf(x, a, b, loc, scale))


@jit
def logcdf(x, a, b, loc=0, scale=1):
  """Log of the truncated normal CDF (switching to ``log1p(-sf)`` near 1)."""
  x, a, b, loc, scale = promote_args_inexact("truncnorm.logcdf", x, a, b, loc, scale)
  x, a, b = jnp.broadcast_arrays(x, a, b)
  x = lax.div(lax.sub(x, loc), scale)
  mass = _log_gauss_mass(a, b)
  lc = _log_gauss_mass(a, x) - mass
  ls = _log_gauss_mass(x, b) - mass
  lc = jnp.select([x >= b, x <= a, lc > -0.1, x > a],
                  [0, -np.inf, jnp.log1p(-jnp.exp(ls)), lc])
  return jnp.where(a >= b, np.nan, lc)


@jit
def cdf(x, a, b, loc=0, scale=1):
  """The truncated normal CDF."""
  return lax.exp(logcdf(x, a, b, loc, scale))
