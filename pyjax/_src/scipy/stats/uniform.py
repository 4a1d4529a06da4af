"""jax.scipy.stats.uniform."""
from pyjax._src.scipy.stats._common import np, lax, jnp, promote_args_inexact

__all__ = ["logpdf", "pdf", "cdf", "ppf"]


def logpdf(x, loc=0, scale=1):
  """``-log(scale)`` on ``[loc, loc + scale]``, else ``-inf``."""
  x, loc, scale = promote_args_inexact("uniform.logpdf", x, loc, scale)
  out = jnp.logical_or(lax.gt(x, lax.add(loc, scale)), lax.lt(x, loc))
  return jnp.where(out, -np.inf, lax.neg(lax.log(scale)))


def pdf(x, loc=0, scale=1):
  """The uniform density."""
  return lax.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
  """The uniform CDF."""
  x, loc, scale = promote_args_inexact("uniform.cdf", x, loc, scale)
  zero, one = jnp.array(0, x.dtype), jnp.array(1, x.dtype)
  hi = lax.add(loc, scale)
  return jnp.select([lax.lt(x, loc), lax.gt(x, hi), lax.ge(x, loc) & lax.le(x, hi)],
                    [zero, one, lax.div(lax.sub(x, loc), scale)])


def ppf(q, loc=0, scale=1):
  """``loc + scale q`` (NaN outside [0, 1])."""
  q, loc, scale = promote_args_inexact("uniform.ppf", q, loc, scale)
  return jnp.where(jnp.isnan(q) | (q < 0) | (q > 1), np.nan, lax.add(loc, lax.mul(scale, q)))
