"""jax.scipy.stats.gaussian_kde: Gaussian kernel density estimation (a pytree)."""
from __future__ import annotations

from functools import partial

import numpy as np

from pyjax._src import dtypes, tree_util
from pyjax._src.api import jit
from pyjax._src.numpy import linalg as jnp_linalg
from pyjax._src.numpy.util import check_arraylike, promote_dtypes_inexact
from pyjax._src.scipy import linalg, special
import pyjax.numpy as jnp

__all__ = ["gaussian_kde"]


def _weighted_cov(X, aweights):
  """``jnp.cov(X, rowvar=True, bias=False, aweights=aweights)`` (at least 2-D)."""
  w = jnp.abs(aweights)
  w_sum = jnp.sum(w)
  avg = jnp.sum(X * w, axis=1) / w_sum
  f = w_sum - jnp.sum(w * w) / w_sum
  Xc = X - avg[:, None]
  return jnp.atleast_2d((jnp.dot(Xc, (Xc * w).T.conj()) / f).squeeze())


class gaussian_kde:
  """A Gaussian kernel density estimate of ``dataset`` (shape ``(d, n)``, or ``(n,)``) with
  optional ``weights`` and bandwidth ``bw_method`` ('scott', 'silverman', a scalar or a
  callable of the estimator).  A pytree, so it passes through ``jit``.

  Differs from JAX: ``integrate_box`` and ``set_bandwidth`` raise NotImplementedError (as in
  JAX)."""
  __slots__ = ("neff", "dataset", "weights", "covariance", "inv_cov")

  def __init__(self, dataset, bw_method=None, weights=None):
    check_arraylike("gaussian_kde", dataset)
    dataset = jnp.atleast_2d(dataset)
    if dtypes.issubdtype(dataset.dtype, np.complexfloating):
      raise NotImplementedError("gaussian_kde does not support complex data")
    if not dataset.size > 1:
      raise ValueError("`dataset` input should have multiple elements.")
    d, n = dataset.shape
    if weights is not None:
      check_arraylike("gaussian_kde", weights)
      dataset, weights = promote_dtypes_inexact(dataset, weights)
      weights = jnp.atleast_1d(weights)
      weights = weights / jnp.sum(weights)
      if weights.ndim != 1:
        raise ValueError("`weights` input should be one-dimensional.")
      if len(weights) != n:
        raise ValueError("`weights` input should be of length n")
    else:
      dataset, = promote_dtypes_inexact(dataset)
      weights = jnp.full(n, 1.0 / n, dtype=dataset.dtype)
    self._set("dataset", dataset)
    self._set("weights", weights)
    neff = self._set("neff", 1 / jnp.sum(weights ** 2))
    bw_method = "scott" if bw_method is None else bw_method
    if bw_method == "scott":
      factor = jnp.power(neff, -1. / (d + 4))
    elif bw_method == "silverman":
      factor = jnp.power(neff * (d + 2) / 4.0, -1. / (d + 4))
    elif jnp.isscalar(bw_method) and not isinstance(bw_method, str):
      factor = bw_method
    elif callable(bw_method):
      factor = bw_method(self)
    else:
      raise ValueError("`bw_method` should be 'scott', 'silverman', a scalar, or a callable.")
    cov = _weighted_cov(dataset, weights)
    inv_cov = jnp_linalg.inv(cov)
    self._set("covariance", cov * factor ** 2)
    self._set("inv_cov", inv_cov / factor ** 2)

  def _set(self, name, value):
    object.__setattr__(self, name, value)
    return value

  def __setattr__(self, name, value):
    raise AttributeError(f"cannot assign to field '{name}'")

  def tree_flatten(self):
    return (self.neff, self.dataset, self.weights, self.covariance, self.inv_cov), None

  @classmethod
  def tree_unflatten(cls, aux, children):
    kde = cls.__new__(cls)
    for name, v in zip(cls.__slots__, children):
      kde._set(name, v)
    return kde

  @property
  def d(self):
    return self.dataset.shape[0]

  @property
  def n(self):
    return self.dataset.shape[1]

  def evaluate(self, points):
    """The estimated density at ``points`` (shape ``(d, m)``)."""
    check_arraylike("evaluate", points)
    points = self._reshape_points(points)
    return _kernel_eval(False, self.dataset.T, self.weights[:, None], points.T,
                        self.inv_cov)[:, 0]

  def __call__(self, points):
    return self.evaluate(points)

  def pdf(self, x):
    """Same as ``evaluate``."""
    return self.evaluate(x)

  def logpdf(self, x):
    """The log of the estimated density (computed with logsumexp)."""
    check_arraylike("logpdf", x)
    x = self._reshape_points(x)
    return _kernel_eval(True, self.dataset.T, self.weights[:, None], x.T, self.inv_cov)[:, 0]

  def integrate_gaussian(self, mean, cov):
    """The integral of the density times a Gaussian of ``mean`` and ``cov``."""
    mean = jnp.atleast_1d(jnp.squeeze(mean))
    cov = jnp.atleast_2d(cov)
    if mean.shape != (self.d,):
      raise ValueError(f"mean does not have dimension {self.d}")
    if cov.shape != (self.d, self.d):
      raise ValueError(f"covariance does not have dimension {self.d}")
    chol = linalg.cho_factor(self.covariance + cov)
    norm = 1.0 / (jnp.sqrt(2 * np.pi) ** self.d * jnp.prod(jnp.diag(chol[0])))
    return _kernel_convolve(chol, norm, self.dataset, self.weights, mean[:, None])[0]

  def integrate_box_1d(self, low, high):
    """The probability mass in ``[low, high]`` (1-D estimators only)."""
    if self.d != 1:
      raise ValueError("integrate_box_1d() only handles 1D pdfs")
    if np.ndim(low) != 0 or np.ndim(high) != 0:
      raise ValueError("the limits of integration in integrate_box_1d must be scalars")
    return _integrate_box_1d(self, low, high)

  def integrate_kde(self, other):
    """The integral of the product of two estimated densities."""
    if other.d != self.d:
      raise ValueError("KDEs are not the same dimensionality")
    chol = linalg.cho_factor(self.covariance + other.covariance)
    norm = 1.0 / (jnp.sqrt(2 * np.pi) ** self.d * jnp.prod(jnp.diag(chol[0])))
    sm, lg = (self, other) if self.n < other.n else (other, self)
    res = _kernel_convolve(chol, norm, lg.dataset, lg.weights, sm.dataset)
    return jnp.sum(res * sm.weights)

  def resample(self, key, shape=()):
    """Draw samples (shape ``(d,) + shape``) from the estimated density."""
    return _resample(self, key, shape)

  def integrate_box(self, low_bounds, high_bounds, maxpts=None):
    """Not implemented (as in JAX)."""
    raise NotImplementedError("only 1D box integrations are supported; use "
                              "`integrate_box_1d`")

  def set_bandwidth(self, bw_method=None):
    """Not implemented (as in JAX)."""
    raise NotImplementedError("dynamically changing the bandwidth method is not supported")

  def _reshape_points(self, points):
    if dtypes.issubdtype(jnp.asarray(points).dtype, np.complexfloating):
      raise NotImplementedError("gaussian_kde does not support complex coordinates")
    points = jnp.atleast_2d(points)
    d, m = points.shape
    if d != self.d:
      if d == 1 and m == self.d:
        points = jnp.reshape(points, (self.d, 1))
      else:
        raise ValueError(f"points have dimension {d}, dataset has dimension {self.d}")
    return points


tree_util.register_pytree_node(gaussian_kde, gaussian_kde.tree_flatten,
                               gaussian_kde.tree_unflatten)


@jit
def _integrate_box_1d(kde, low, high):
  sigma = jnp.squeeze(jnp.sqrt(kde.covariance))
  lo = jnp.squeeze((low - kde.dataset) / sigma)
  hi = jnp.squeeze((high - kde.dataset) / sigma)
  return jnp.sum(kde.weights * (special.ndtr(hi) - special.ndtr(lo)))


@partial(jit, static_argnames=("shape",))
def _resample(kde, key, shape=()):
  from pyjax._src.random import keys as _keys
  from pyjax._src.random import samplers as _rs
  ind_key, eps_key = _keys.split(key)
  ind = _rs.choice(ind_key, kde.n, shape=shape, p=kde.weights)
  eps = _rs.multivariate_normal(eps_key, jnp.zeros(kde.d, kde.covariance.dtype),
                                kde.covariance, shape=shape, dtype=kde.dataset.dtype).T
  return kde.dataset[:, ind] + eps


def _kernel_convolve(chol, norm, target, weights, means):
  """For each column ``mean`` of ``means``: ``norm * sum_j w_j exp(-|target_j - mean|^2_C
  / 2)``."""
  diff = target[:, :, None] - means[:, None, :]                     # (d, n, k)
  d, n, k = diff.shape
  flat = jnp.reshape(diff, (d, n * k))
  alpha = jnp.reshape(linalg.cho_solve(chol, flat), (d, n, k))
  arg = 0.5 * jnp.sum(diff * alpha, axis=0)                          # (n, k)
  return norm * jnp.sum(jnp.exp(-arg) * weights[:, None], axis=0)


@partial(jit, static_argnums=0)
def _kernel_eval(in_log, points, values, xi, precision):
  points, values, xi, precision = promote_dtypes_inexact(points, values, xi, precision)
  d = points.shape[1]
  if xi.shape[1] != d:
    raise ValueError("points and xi must have same trailing dim")
  if precision.shape != (d, d):
    raise ValueError("precision matrix must match data dims")
  white = linalg.cholesky(precision, lower=True)
  points = jnp.dot(points, white)
  xi = jnp.dot(xi, white)
  log_norm = jnp.sum(jnp.log(jnp.diag(white))) - 0.5 * d * jnp.log(2 * np.pi)
  arg = log_norm - 0.5 * jnp.sum(jnp.square(points[None, :, :] - xi[:, None, :]), axis=-1)
  if in_log:
    return special.logsumexp(jnp.log(values)[None, :, :] + arg[:, :, None], axis=1)
  return jnp.sum(values[None, :, :] * jnp.exp(arg)[:, :, None], axis=1)
