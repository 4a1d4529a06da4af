"""jax.scipy.stats.poisson."""
from pyjax._src.api import jit
from pyjax._src.numpy.util import check_arraylike, promote_dtypes_inexact
from pyjax._src.scipy.stats._common import np, lax, jnp, promote_args_inexact, _c
from pyjax._src.scipy.special import entr, gammaincc, gammaln, xlogy

__all__ = ["logpmf", "pmf", "cdf", "entropy"]


def logpmf(k, mu, loc=0):
  """Log of the Poisson pmf (``-inf`` for negative or non-integer ``k - loc``)."""
  k, mu, loc = promote_args_inexact("poisson.logpmf", k, mu, loc)
  x = lax.sub(k, loc)
  lp = xlogy(x, mu) - gammaln(x + 1) - mu
  return jnp.where(jnp.logical_or(lax.lt(x, _c(k, 0)), lax.ne(jnp.round(k), k)), -np.inf, lp)


def pmf(k, mu, loc=0):
  """The Poisson pmf."""
  return jnp.exp(logpmf(k, mu, loc))


def cdf(k, mu, loc=0):
  """``Q(floor(k - loc) + 1, mu)``."""
  k, mu, loc = promote_args_inexact("poisson.logpmf", k, mu, loc)
  x = lax.sub(k, loc)
  return jnp.where(lax.lt(x, _c(k, 0)), _c(k, 0), gammaincc(jnp.floor(1 + x), mu))


def _entropy_sum(mu, max_k, upper):
  k = jnp.arange(max_k, dtype=mu.dtype)[:, None]
  probs = pmf(k, mu, 0)
  mask = k < upper.astype(k.dtype)[None, :]
  return jnp.sum(entr(jnp.where(mask, probs, 0.0)), axis=0)


@jit
def entropy(mu, loc=0):
  """The entropy of the Poisson distribution: an explicit sum for ``mu < 100``, the
  asymptotic ``log(2 pi e mu) / 2 - 1 / (12 mu)`` beyond (``loc`` only broadcasts)."""
  check_arraylike("poisson.entropy", mu, loc)
  mu, loc = promote_dtypes_inexact(jnp.asarray(mu), jnp.asarray(loc))
  shape = jnp.broadcast_shapes(mu.shape, loc.shape)
  m = jnp.ravel(mu)
  small = _entropy_sum(m, 35, jnp.ceil(m + 20))
  medium = _entropy_sum(m, 250, jnp.ceil(m + 10 * jnp.sqrt(m) + 20))
  large = 0.5 * jnp.log(2 * np.pi * np.e * m) - 1.0 / (12 * m)
  out = jnp.where(m == 0, jnp.zeros_like(m),
                  jnp.where(m < 10, small, jnp.where(m < 100, medium, large)))
  return jnp.broadcast_to(jnp.reshape(out, mu.shape), shape)
