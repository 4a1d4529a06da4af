"""The gamma family of jax.random: the ``random_gamma`` primitive (Marsaglia-Tsang
rejection sampling, one independent key per element, implicit-reparameterization
gradients) and the samplers built on it: gamma, loggamma, beta, dirichlet, t, chisquare,
f, generalized_normal and ball.

``random_gamma_p`` binds ``(key_data, a)`` — raw ``uint32`` key data of shape
``(*K, 2)`` with ``K`` a prefix of ``a.shape`` — and returns samples of ``a``'s shape and
dtype (JAX's primitive binds a typed key; see keys.py for why pyjax passes raw data).
Its implementation runs JAX's per-element algorithm on all elements at once: the nested
rejection loops run while any element is still rejecting and update only those elements
— exactly what JAX's vmapped while loops compute, so every element gets JAX's sample.
Its JVP is ``t * random_gamma_grad(a, sample)`` (``d sample / d a``, as JAX); its
batching rule moves batch dimensions to the front of both operands.
"""
from __future__ import annotations

import math

import numpy as np

from pyjax._src import core, dtypes
from pyjax._src.avals import ShapedArray
from pyjax._src.interpreters import ad
from pyjax._src.lax import lax_api as lax
from pyjax._src.lax.utils import canonicalize_shape
from pyjax._src.out_sharding import accepts_out_sharding
from pyjax._src.random import prng
from pyjax._src.random.keys import _check_prng_key, _split
from pyjax._src.random.samplers import (
    _static_jit, _user_dtype, _check_float_dtype, _shape, _check_shape, _float_args,
    _check_broadcast_shapes, _check_all_safe_to_cast, _uniform_rng_bits,
    _uniform_from_bits, _const, exponential, rademacher)
import pyjax.numpy as jnp

__all__ = ["gamma", "loggamma", "beta", "dirichlet", "t", "chisquare", "f",
           "generalized_normal", "ball", "random_gamma_p"]


# --- per-element samplers on raw keys of shape (n, 2) --------------------------------------
def _uniform_each(keys, dtype, minval=0., maxval=1.):
  """``uniform(k, (), dtype, minval, maxval)`` for every key of ``keys`` ((n, 2))."""
  n = keys.shape[0]
  b = prng.threefry_random_bits(keys, _uniform_rng_bits(dtype), ())
  return _uniform_from_bits(b, minval, maxval, (n,), dtype)


def _normal_each(keys, dtype):
  """``normal(k, (), dtype)`` for every key of ``keys``."""
  lo = np.nextafter(np.array(-1., dtype), np.array(0., dtype), dtype=dtype)
  u = _uniform_each(keys, dtype, lo, np.array(1., dtype))
  return lax.mul(np.array(np.sqrt(2), dtype), lax.erf_inv(u))


def _exponential_each(keys, dtype):
  return lax.neg(lax.log1p(lax.neg(_uniform_each(keys, dtype))))


def _split_each(keys, num):
  """Split every key: ``num`` arrays of shape (n, 2)."""
  s = prng.threefry_split(keys, (num,))
  return [lax.index_in_dim(s, i, 1, keepdims=False) for i in range(num)]


def _select_rows(pred, new, old):
  """``new`` where ``pred`` (shape (n,)) else ``old``, for (n,) or (n, 2) arrays."""
  if new.ndim == 2:
    pred = lax.broadcast_in_dim(pred, new.shape, (0,))
  return lax.select(pred, new, old)


def _any(x):
  return bool(np.asarray(x).any())


def _gamma_each(keys, alpha, log_space):
  """JAX's ``_gamma_one`` (Marsaglia & Tsang; alpha < 1 boosted by ``u ** (1/alpha)``)
  for every (key, alpha) pair: keys (n, 2), alpha (n,)."""
  dtype = alpha.dtype
  c_ = lambda v: np.array(v, dtype)
  zero, one = c_(0), c_(1)
  one_over_two, one_over_three, squeeze_const = c_(0.5), c_(1.0 / 3.0), c_(0.0331)
  n = alpha.shape[0]
  full = lambda v: lax.full((n,), v, dtype)

  boost_mask = lax.ge(alpha, one)
  alpha_orig = alpha
  alpha = lax.select(boost_mask, alpha, lax.add(alpha, one))
  d = lax.sub(alpha, one_over_three)
  c = lax.div(one_over_three, lax.sqrt(d))

  def rejecting(X, V, U):
    return lax.bitwise_and(
        lax.ge(U, lax.sub(one, lax.mul(squeeze_const, lax.mul(X, X)))),
        lax.ge(lax.log(U), lax.add(lax.mul(X, one_over_two),
                                   lax.mul(d, lax.add(lax.sub(one, V), lax.log(V))))))

  key, subkey = _split_each(keys, 2)
  X, V, U = full(0), full(1), full(2)
  active = rejecting(X, V, U)
  while _any(active):
    key_next, x_key, u_key = _split_each(key, 3)
    k, x, v = x_key, full(0), full(-1)
    inner = lax.le(v, zero)
    while _any(inner):
      k_next, sub = _split_each(k, 2)
      x_next = _normal_each(sub, dtype)
      v_next = lax.add(one, lax.mul(x_next, c))
      k = _select_rows(inner, k_next, k)
      x = lax.select(inner, x_next, x)
      v = lax.select(inner, v_next, v)
      inner = lax.le(v, zero)
    X_next = lax.mul(x, x)
    V_next = lax.mul(lax.mul(v, v), v)
    U_next = _uniform_each(u_key, dtype)
    key = _select_rows(active, key_next, key)
    X = lax.select(active, X_next, X)
    V = lax.select(active, V_next, V)
    U = lax.select(active, U_next, U)
    active = rejecting(X, V, U)

  if log_space:
    log_samples = lax.neg(_exponential_each(subkey, dtype))
    log_boost = lax.select(lax.bitwise_or(boost_mask, lax.eq(log_samples, zero)), full(0),
                           lax.mul(log_samples, lax.div(one, alpha_orig)))
    return lax.add(lax.add(lax.log(d), lax.log(V)), log_boost)
  samples = lax.sub(one, _uniform_each(subkey, dtype))
  boost = lax.select(boost_mask, full(1), lax.pow(samples, lax.div(one, alpha_orig)))
  return lax.mul(lax.mul(d, V), boost)


# --- the random_gamma primitive -------------------------------------------------------------
random_gamma_p = core.Primitive("random_gamma")
random_gamma_p.arg_names = ("key", "a")


@random_gamma_p.def_abstract_eval
def _random_gamma_abstract(key, a, *, log_space):
  if key.dtype != dtypes.uint32 or tuple(key.shape[-1:]) != (2,):
    raise TypeError(f"random_gamma expects raw threefry key data (uint32[..., 2]), got {key}")
  k = tuple(key.shape[:-1])
  if tuple(a.shape[:len(k)]) != k:
    raise TypeError(f"random_gamma: key batch shape {k} is not a prefix of a.shape {a.shape}")
  return ShapedArray(a.shape, a.dtype)


def _random_gamma_impl(key, a, *, log_space):
  a_shape = tuple(a.shape)
  kshape = tuple(key.shape[:-1])
  n = math.prod(a_shape)
  if n == 0:
    return lax.full(a_shape, 0, a.dtype)
  split_count = math.prod(a_shape[len(kshape):])
  keys = lax.reshape(key, (math.prod(kshape), 2))
  keys = lax.reshape(prng.threefry_split(keys, (split_count,)), (n, 2))
  alphas = lax.reshape(a, (n,))
  return lax.reshape(_gamma_each(keys, alphas, log_space), a_shape)


random_gamma_p.def_impl(_random_gamma_impl)


def _gamma_grad(sample, a, *, log_space):
  samples = lax.reshape(sample, (math.prod(sample.shape),))
  alphas = lax.reshape(a, (math.prod(a.shape),))
  if log_space:
    samples = lax.exp(samples)
    tiny = lax.full_like(samples, dtypes.finfo(samples.dtype).tiny)
    samples = lax.select(lax.eq(samples, _const(samples, 0)), tiny, samples)
    grads = lax.div(lax.random_gamma_grad(alphas, samples), samples)
  else:
    grads = lax.random_gamma_grad(alphas, samples)
  return lax.reshape(grads, tuple(a.shape))


ad.defjvp2(random_gamma_p, None,
           lambda t, ans, key, a, **kw: lax.mul(t, _gamma_grad(ans, a, **kw)))


def _random_gamma_batch(args, dims, *, log_space):
  from pyjax._src.interpreters import batching
  k, a = args
  bk, ba = dims
  size = next(x.shape[d] for x, d in zip(args, dims) if d is not None)
  k = batching.bdim_at_front(k, bk, size)
  a = batching.bdim_at_front(a, ba, size)
  return random_gamma_p.bind(k, a, log_space=log_space), 0


def _register_batchers():
  try:
    from pyjax._src.interpreters import batching
  except ImportError:
    return
  batching.primitive_batchers[random_gamma_p] = _random_gamma_batch


_register_batchers()


# --- gamma and loggamma ---------------------------------------------------------------------
@accepts_out_sharding()
def gamma(key, a, shape=None, dtype=None):
  """Gamma(a, 1) samples (Marsaglia-Tsang); differentiable in ``a`` by implicit
  reparameterization."""
  key, _ = _check_prng_key("gamma", key)
  dtype = _user_dtype(dtype)
  _check_float_dtype("gamma", dtype)
  if shape is not None:
    shape = _shape(shape)
  return _gamma(key, a, shape, dtype, False)


@accepts_out_sharding()
def loggamma(key, a, shape=None, dtype=None):
  """``log`` of Gamma(a, 1) samples, computed in log space (accurate for small ``a``)."""
  key, _ = _check_prng_key("loggamma", key)
  dtype = _user_dtype(dtype)
  if not dtypes.issubdtype(dtype, np.floating):
    raise ValueError(f"dtype argument to `gamma` must be a float dtype, got {dtype}")
  if shape is not None:
    shape = _shape(shape)
  return _gamma(key, a, shape, dtype, True)


@_static_jit(2, 3, 4)
def _gamma(key, a, shape, dtype, log_space=False):
  if shape is None:
    shape = np.shape(a)
  else:
    _check_shape("gamma", shape, np.shape(a))
  a = lax.convert_element_type(a, dtype)
  if np.shape(a) != shape:
    a = jnp.broadcast_to(a, shape)
  return random_gamma_p.bind(key._base_array, a, log_space=log_space)


# --- samplers built on gamma ----------------------------------------------------------------
@accepts_out_sharding()
def beta(key, a, b, shape=None, dtype=None):
  """Beta(a, b) samples from two log-gamma samples."""
  key, _ = _check_prng_key("beta", key)
  dtype = _user_dtype(dtype)
  _check_float_dtype("beta", dtype)
  _check_all_safe_to_cast("beta", dtype, a, b)
  shape = _check_broadcast_shapes("beta", shape, a, b)
  return _beta(key, a, b, shape, dtype)


@_static_jit(3, 4)
def _beta(key, a, b, shape, dtype):
  if shape is None:
    shape = lax.broadcast_shapes(np.shape(a), np.shape(b))
  else:
    _check_shape("beta", shape, np.shape(a), np.shape(b))
  a = lax.convert_element_type(a, dtype)
  b = lax.convert_element_type(b, dtype)
  key_a, key_b = _split(key)
  a = jnp.broadcast_to(a, shape)
  b = jnp.broadcast_to(b, shape)
  log_gamma_a = loggamma(key_a, a, shape, dtype)
  log_gamma_b = loggamma(key_b, b, shape, dtype)
  log_max = lax.max(log_gamma_a, log_gamma_b)
  gamma_a_scaled = jnp.exp(log_gamma_a - log_max)
  gamma_b_scaled = jnp.exp(log_gamma_b - log_max)
  return gamma_a_scaled / (gamma_a_scaled + gamma_b_scaled)


@accepts_out_sharding()
def dirichlet(key, alpha, shape=None, dtype=None):
  """Dirichlet(alpha) samples: a softmax of log-gamma samples along the last axis."""
  key, _ = _check_prng_key("dirichlet", key)
  dtype = _user_dtype(dtype)
  _check_float_dtype("dirichlet", dtype)
  if shape is not None:
    shape = _shape(shape)
  return _dirichlet(key, alpha, shape, dtype)


def _softmax_last(x):
  unnormalized = jnp.exp(x - lax.stop_gradient(jnp.max(x, axis=-1, keepdims=True)))
  return unnormalized / jnp.sum(unnormalized, axis=-1, keepdims=True)


@_static_jit(2, 3)
def _dirichlet(key, alpha, shape, dtype):
  if not np.ndim(alpha) >= 1:
    raise ValueError(f"dirichlet requires alpha.ndim >= 1, got alpha.ndim == {np.ndim(alpha)}")
  if shape is None:
    shape = np.shape(alpha)[:-1]
  else:
    _check_shape("dirichlet", shape, np.shape(alpha)[:-1])
  alpha = lax.convert_element_type(alpha, dtype)
  log_gamma_samples = loggamma(key, alpha, shape + np.shape(alpha)[-1:], dtype)
  return _softmax_last(log_gamma_samples)


@accepts_out_sharding()
def t(key, df, shape=None, dtype=None):
  """Student's t samples ``n * sqrt(df / 2 / gamma(df / 2))``."""
  key, shape, dtype = _float_args("t", key, shape, dtype, df)
  return _t(key, df, shape, dtype)


@_static_jit(2, 3)
def _t(key, df, shape, dtype):
  from pyjax._src.random.samplers import normal
  if shape is None:
    shape = np.shape(df)
  else:
    _check_shape("t", shape, np.shape(df))
  df = lax.convert_element_type(df, dtype)
  key_n, key_g = _split(key)
  n = normal(key_n, shape, dtype)
  two = _const(n, 2)
  half_df = lax.div(df, two)
  g = gamma(key_g, half_df, shape, dtype)
  return n * jnp.sqrt(half_df / g)


@accepts_out_sharding()
def chisquare(key, df, shape=None, dtype=None):
  """Chi-square samples ``2 * exp(loggamma(df / 2))``."""
  key, shape, dtype = _float_args("chisquare", key, shape, dtype, df)
  return _chisquare(key, df, shape, dtype)


@_static_jit(2, 3)
def _chisquare(key, df, shape, dtype):
  df = lax.convert_element_type(df, dtype)
  two = _const(df, 2)
  half_df = lax.div(df, two)
  log_g = loggamma(key, a=half_df, shape=shape, dtype=dtype)
  return lax.mul(jnp.exp(log_g), two)


@accepts_out_sharding()
def f(key, dfnum, dfden, shape=None, dtype=None):
  """F-distribution samples: a ratio of scaled chi-square samples."""
  key, shape, dtype = _float_args("f", key, shape, dtype, dfnum, dfden)
  return _f(key, dfnum, dfden, shape, dtype)


@_static_jit(3, 4)
def _f(key, dfnum, dfden, shape, dtype):
  dfden = lax.convert_element_type(dfden, dtype)
  dfnum = lax.convert_element_type(dfnum, dtype)
  key_dfd, key_dfn = _split(key)
  chi2_dfn = chisquare(key_dfn, dfnum, shape, dtype)
  chi2_dfd = chisquare(key_dfd, dfden, shape, dtype)
  num = lax.div(chi2_dfn, dfnum)
  den = lax.div(chi2_dfd, dfden)
  return lax.div(num, den)


@accepts_out_sharding()
def generalized_normal(key, p, shape=(), dtype=None):
  """Generalized normal samples with shape parameter ``p``: ``sign * gamma(1/p) ** (1/p)``."""
  shape = _shape(shape)
  key, _ = _check_prng_key("generalized_normal", key)
  dtype = _user_dtype(dtype)
  _check_shape("generalized_normal", shape)
  return _generalized_normal(key, p, shape, dtype)


@_static_jit(2, 3)
def _generalized_normal(key, p, shape, dtype):
  keys = _split(key)
  g = gamma(keys[0], 1 / p, shape, dtype)
  r = rademacher(keys[1], shape, dtype)
  return r * g ** (1 / p)


@accepts_out_sharding()
def ball(key, d, p=2, shape=(), dtype=None):
  """Uniform samples from the unit ``p``-norm ball in ``d`` dimensions."""
  key, _ = _check_prng_key("ball", key)
  dtype = _user_dtype(dtype)
  d = core.concrete_or_error(int, d, "The error occurred in jax.random.ball()")
  shape = _shape((*canonicalize_shape(shape), d))[:-1]   # (JAX's message names shape + (d,))
  _check_shape("ball", shape)
  return _ball(key, p, d, shape, dtype)


@_static_jit(2, 3, 4)
def _ball(key, p, d, shape, dtype):
  k1, k2 = _split(key)
  g = generalized_normal(k1, p, (*shape, d), dtype)
  e = exponential(k2, shape, dtype)
  return g / (((jnp.abs(g) ** p).sum(-1) + e) ** (1 / p))[..., None]
