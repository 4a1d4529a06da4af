"""jax.scipy.stats.t (Student's t distribution)."""
from pyjax._src.scipy.stats._common import np, lax, promote_args_inexact, _c

__all__ = ["logpdf", "pdf"]


def logpdf(x, df, loc=0, scale=1):
  """Log of Student's t density with ``df`` degrees of freedom."""
  x, df, loc, scale = promote_args_inexact("t.logpdf", x, df, loc, scale)
  two = _c(x, 2)
  z = lax.div(lax.sub(x, loc), scale)
  h = lax.div(df, two)
  h1 = lax.add(h, _c(x, 0.5))
  c = lax.mul(lax.mul(scale, scale), _c(x, np.pi))
  norm = lax.sub(lax.add(lax.lgamma(h), lax.div(lax.log(lax.mul(c, df)), two)), lax.lgamma(h1))
  return lax.neg(lax.add(norm, lax.mul(h1, lax.log1p(lax.div(lax.mul(z, z), df)))))


def pdf(x, df, loc=0, scale=1):
  """Student's t density."""
  return lax.exp(logpdf(x, df, loc, scale))
