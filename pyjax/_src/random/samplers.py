"""jax.random samplers built directly on random bits: bits, uniform, randint, permutation,
choice, normal, truncated_normal, bernoulli, rademacher, categorical, gumbel, exponential,
laplace, logistic, cauchy, pareto, rayleigh, wald, geometric, triangular, lognormal,
weibull_min, maxwell, double_sided_maxwell, multivariate_normal and orthogonal.

Each sampler uses JAX's algorithm and JAX's key usage, so its values are JAX's: bit for
bit where only integer operations and exact float operations are involved (bits,
uniform, randint, bernoulli, permutation, choice, rademacher), within a few ulp where a
transcendental function is evaluated (pyjax's vector math -- NumPy's libm without a C
compiler -- vs XLA's).  As in JAX, each sampler's
core is a ``jit``-compiled function with static shape and dtype.
"""
from __future__ import annotations

import functools
import math
import operator
from collections.abc import Sequence

import numpy as np

from pyjax._src import config as _config
from pyjax._src import core, dtypes
from pyjax._src.api import jit
from pyjax._src.lax import lax_api as lax
from pyjax._src.lax import utils as lax_utils
from pyjax._src.lax.utils import canonicalize_shape
from pyjax._src.numpy.util import check_arraylike, promote_dtypes_inexact, canonicalize_axis
from pyjax._src.out_sharding import accepts_out_sharding
from pyjax._src.random.keys import _check_prng_key, _split, _random_bits, negative_size_error
from pyjax._src.random.prng import UINT_DTYPES, fma
import pyjax.numpy as jnp

__all__ = ["bits", "uniform", "randint", "permutation", "choice", "normal",
           "truncated_normal", "bernoulli", "rademacher", "categorical", "gumbel",
           "exponential", "laplace", "logistic", "cauchy", "pareto", "rayleigh", "wald",
           "geometric", "triangular", "lognormal", "weibull_min", "maxwell",
           "double_sided_maxwell", "multivariate_normal", "orthogonal"]


# --- argument helpers ----------------------------------------------------------------------
def _dtype_of(x):
  return dtypes.dtype(x, canonicalize=True)


def _user_dtype(dtype, default=float):
  return dtypes.check_user_dtype(default if dtype is None else dtype)


def _check_float_dtype(name, dtype, what="a float dtype", kind=np.floating):
  if not dtypes.issubdtype(dtype, kind):
    raise ValueError(f"dtype argument to `{name}` must be {what}, got {dtype}")


def _float_args(name, key, shape, dtype, *params):
  """The checked ``(key, shape, dtype)`` of the float sampler ``name``: a typed key, the
  float dtype (default float), and the sample shape (broadcast with ``params``' shapes, which
  must cast safely to the dtype, when the sampler has parameters)."""
  key, _ = _check_prng_key(name, key)
  dtype = _user_dtype(dtype)
  _check_float_dtype(name, dtype)
  if not params:
    return key, _lowered_shape(shape), dtype
  shape = _check_broadcast_shapes(name, shape, *params)
  _check_all_safe_to_cast(name, dtype, *params)
  return key, shape, dtype


def _shape(shape):
  """The canonical sample shape; a negative size is JAX's TypeError (JAX's samplers that
  broadcast their parameters to the shape reject it there)."""
  shape = canonicalize_shape(shape)
  if any(d < 0 for d in shape):
    raise TypeError("Only non-negative indices are allowed when broadcasting static shapes, "
                    f"but got shape {shape}.")
  return shape


def _lowered_shape(shape):
  """The canonical sample shape of a sampler that JAX never broadcasts to it (bits, uniform,
  normal, exponential, ...): JAX traces a negative size and fails lowering the program with
  jaxlib's ``MLIRError``; pyjax raises that class and message when tracing."""
  shape = canonicalize_shape(shape)
  if any(d < 0 for d in shape):
    raise negative_size_error()
  return shape


def _check_shape(name, shape, *param_shapes):
  if param_shapes:
    shape_ = lax.broadcast_shapes(tuple(shape), *[tuple(s) for s in param_shapes])
    if tuple(shape) != shape_:
      raise ValueError(f"{name} parameter shapes must be broadcast-compatible with shape "
                       "argument, and the result of broadcasting the shapes must equal the "
                       f"shape argument, but got result {shape_} for shape argument {shape}.")


def _check_broadcast_shapes(name, shape, *args):
  arg_shapes = [np.shape(a) for a in args]
  if shape is None:
    return lax.broadcast_shapes(*arg_shapes) if arg_shapes else ()
  shape = _shape(shape)
  _check_shape(name, shape, *arg_shapes)
  return shape


def _check_all_safe_to_cast(name, dtype, *args):
  for arg in args:
    if dtypes.result_type(arg, dtype) != dtype and _dtype_of(arg) != dtype:
      raise dtypes.TypePromotionError(
          f"In arguments to {name}, cannot safely cast argument of type "
          f"{jnp.asarray(arg).dtype} to {dtype}")


def _const(x, value):
  return np.array(value, _dtype_of(x))


def _static_jit(*static):
  return functools.partial(jit, static_argnums=static)


# --- bits and uniform ------------------------------------------------------------------------
@accepts_out_sharding()
def bits(key, shape=(), dtype=None):
  """Uniform random bits as unsigned integers (``uint64`` with x64, else ``uint32``)."""
  key, _ = _check_prng_key("bits", key)
  dtype = dtypes.default_uint_dtype() if dtype is None else dtypes.check_user_dtype(dtype)
  if not dtypes.issubdtype(dtype, np.unsignedinteger):
    raise ValueError(f"dtype argument to `bits` must be an unsigned int dtype, got {dtype}")
  shape = _lowered_shape(shape)
  return _random_bits(key, dtype.itemsize * 8, shape)


@accepts_out_sharding()
def uniform(key, shape=(), dtype=None, minval=0., maxval=1.):
  """Uniform floats in ``[minval, maxval)``: the mantissa bits of a float in [1, 2) are
  random, then shifted and scaled (as JAX)."""
  key, _ = _check_prng_key("uniform", key)
  dtype = _user_dtype(dtype)
  shape = _lowered_shape(shape)
  if not dtypes.issubdtype(dtype, np.floating):
    raise ValueError(f"dtype argument to `uniform` must be a float dtype, got {dtype}")
  return _uniform(key, minval, maxval, shape, dtype)


@_static_jit(3, 4)
def _uniform(key, minval, maxval, shape, dtype):
  _check_shape("uniform", shape)
  if not dtypes.issubdtype(dtype, np.floating):
    raise TypeError("uniform only accepts floating point dtypes.")
  bits_ = _random_bits(key, _uniform_rng_bits(dtype), shape)
  return _uniform_from_bits(bits_, minval, maxval, shape, dtype)


def _uniform_rng_bits(dtype):
  finfo = dtypes.finfo(dtype)
  if finfo.bits not in (8, 16, 32, 64):
    raise TypeError(f"uniform only accepts 8-, 16-, 32-, or 64-bit dtypesgot {dtype}.")
  return finfo.bits if finfo.nmant >= 8 else 8


def _uniform_from_bits(bits_, minval, maxval, shape, dtype):
  """JAX's bits -> [minval, maxval) transform (``bits_`` of ``_uniform_rng_bits(dtype)``
  bits and of ``shape``)."""
  minval = lax.convert_element_type(minval, dtype)
  maxval = lax.convert_element_type(maxval, dtype)
  minval = lax.broadcast_to_rank(minval, len(shape))
  maxval = lax.broadcast_to_rank(maxval, len(shape))
  finfo = dtypes.finfo(dtype)
  nbits, nmant = finfo.bits, finfo.nmant
  rng_bits = _uniform_rng_bits(dtype)
  uint_dtype = UINT_DTYPES[nbits]
  if rng_bits != nbits:
    bits_ = lax.convert_element_type(bits_, uint_dtype)
  float_bits = lax.shift_right_logical(bits_, np.array(rng_bits - nmant, uint_dtype))
  float_bits = lax.bitwise_or(float_bits, np.array(1.0, dtype).view(uint_dtype))
  floats = lax.sub(lax.bitcast_convert_type(float_bits, dtype), np.array(1., dtype))
  span = maxval - minval
  # JAX computes floats * span + minval (contracted to an fma by XLA): same shape checks
  prod_shape = lax_utils.broadcasting_shape("mul", [tuple(floats.shape), tuple(span.shape)])
  lax_utils.broadcasting_shape("add", [prod_shape, tuple(minval.shape)])
  return lax.max(minval, lax.reshape(fma(floats, span, minval), shape))


# --- integers ----------------------------------------------------------------------------------
def _convert_and_clip_integer(val, dtype):
  """``val`` converted to the integer ``dtype``, clipped to its range (not wrapped)."""
  vd = _dtype_of(val)
  lo = max(int(dtypes.iinfo(dtype).min), int(dtypes.iinfo(vd).min))
  hi = min(int(dtypes.iinfo(dtype).max), int(dtypes.iinfo(vd).max))
  return jnp.clip(val, np.array(lo, vd), np.array(hi, vd)).astype(dtype)


@accepts_out_sharding()
def randint(key, shape, minval, maxval, dtype=None):
  """Uniform integers in ``[minval, maxval)`` (JAX's modulus method with 2x the bits;
  8/16-bit dtypes are sampled in 32 bits)."""
  key, _ = _check_prng_key("randint", key)
  dtype = _user_dtype(dtype, int)
  shape = _shape(shape)
  if not dtypes.issubdtype(dtype, np.integer):
    raise TypeError(f"randint only accepts integer dtypes, got {dtype}")
  info = dtypes.iinfo(dtype)
  sampling_dtype = dtype
  if info.bits < 32:
    sampling_dtype = np.dtype("int32")
    minval = jnp.asarray(minval).astype("int32").clip(int(info.min), int(info.max))
    maxval = jnp.asarray(maxval).astype("int32").clip(int(info.min), int(info.max) + 1)
  return _randint(key, minval, maxval, shape, sampling_dtype).astype(dtype)


@_static_jit(3, 4)
def _randint(key, minval, maxval, shape, dtype):
  _check_shape("randint", shape, np.shape(minval), np.shape(maxval))
  if not dtypes.issubdtype(dtype, np.integer):
    raise TypeError(f"randint only accepts integer dtypes, got {dtype}")
  check_arraylike("randint", minval, maxval)
  minval = jnp.asarray(minval)
  maxval = jnp.asarray(maxval)
  if not dtypes.issubdtype(minval.dtype, np.integer):
    minval = minval.astype(int)
  if not dtypes.issubdtype(maxval.dtype, np.integer):
    maxval = maxval.astype(int)
  maxval_out_of_range = lax.gt(
      maxval, _convert_and_clip_integer(jnp.array(dtypes.iinfo(dtype).max, dtype),
                                        maxval.dtype))
  minval = _convert_and_clip_integer(minval, dtype)
  maxval = _convert_and_clip_integer(maxval, dtype)
  minval = lax.broadcast_to_rank(minval, len(shape))
  maxval = lax.broadcast_to_rank(maxval, len(shape))
  nbits = dtypes.iinfo(dtype).bits
  if nbits not in (8, 16, 32, 64):
    raise TypeError(f"randint only accepts 8-, 16-, 32-, or 64-bit dtypes, got {dtype}")
  k1, k2 = _split(key)
  higher_bits = _random_bits(k1, nbits, shape)
  lower_bits = _random_bits(k2, nbits, shape)
  unsigned = UINT_DTYPES[nbits]
  span = lax.convert_element_type(maxval - minval, unsigned)
  span = lax.select(maxval <= minval, lax.full_like(span, 1), span)
  span = lax.select(maxval_out_of_range & (maxval > minval),
                    lax.add(span, np.array(1, unsigned)), span)
  multiplier = lax.rem(np.array(2 ** (nbits // 2), unsigned), span)
  multiplier = lax.rem(lax.mul(multiplier, multiplier), span)
  offset = lax.add(lax.mul(lax.rem(higher_bits, span), multiplier),
                   lax.rem(lower_bits, span))
  offset = lax.rem(offset, span)
  return lax.add(minval, lax.convert_element_type(offset, dtype))


# --- permutations and choices --------------------------------------------------------------
@accepts_out_sharding()
def permutation(key, x, axis=0, independent=False):
  """A random permutation of ``arange(x)`` (int ``x``) or of ``x`` along ``axis``
  (``independent``: each slice along ``axis`` shuffled separately)."""
  key, _ = _check_prng_key("permutation", key)
  check_arraylike("permutation", x)
  axis = canonicalize_axis(axis, np.ndim(x) or 1)
  if not np.ndim(x):
    if not dtypes.issubdtype(_dtype_of(x), np.integer):
      raise TypeError("x must be an integer or at least 1-dimensional")
    r = core.concrete_or_error(int, x, "argument x of jax.random.permutation()")
    return _shuffle(key, jnp.arange(r), axis)
  if independent or np.ndim(x) == 1:
    return _shuffle(key, x, axis)
  ind = _shuffle(key, jnp.arange(x.shape[axis]), 0)
  return jnp.take(x, ind, axis, unique_indices=True)


@_static_jit(2)
def _shuffle(key, x, axis):
  # sort by fresh random 32-bit keys, enough rounds that all keys differ with high
  # probability (tjablin's static criterion, as JAX)
  exponent = 3
  uint32max = int(np.iinfo(np.uint32).max)
  num_rounds = int(np.ceil(exponent * np.log(max(1, x.size)) / np.log(uint32max)))
  for _ in range(num_rounds):
    key, subkey = _split(key)
    sort_keys = _random_bits(subkey, 32, x.shape)
    _, x = lax.sort_key_val(sort_keys, x, axis)
  return x


def choice(key, a, shape=(), replace=True, p=None, axis=0, mode=None):
  """Random samples from ``a`` (an array, or ``arange(a)`` for an int), with or without
  replacement, optionally with probabilities ``p``."""
  key, _ = _check_prng_key("choice", key)
  if not isinstance(shape, Sequence):
    raise TypeError(f"shape argument of jax.random.choice must be a sequence, got {shape}")
  check_arraylike("choice", a)
  arr = jnp.asarray(a)
  if arr.ndim == 0:
    n_inputs = core.concrete_or_error(int, a, "The error occurred in jax.random.choice()")
  else:
    axis = canonicalize_axis(axis, arr.ndim)
    n_inputs = arr.shape[axis]
  n_draws = math.prod(shape)
  if n_draws == 0:
    return jnp.zeros(shape, dtype=arr.dtype)
  if n_inputs <= 0:
    raise ValueError("a must be greater than 0 unless no samples are taken")
  if not replace and n_draws > n_inputs:
    raise ValueError(f"Cannot take a larger sample (size {n_draws}) than population (size "
                     f"{n_inputs}) when 'replace=False'")
  if p is None:
    if replace:
      ind = randint(key, shape, 0, n_inputs)
      result = ind if arr.ndim == 0 else jnp.take(arr, ind, axis)
    else:
      slices = (slice(None),) * axis + (slice(n_draws),)
      result = permutation(key, n_inputs if arr.ndim == 0 else arr, axis)[slices]
  else:
    check_arraylike("choice", p)
    p_arr, = promote_dtypes_inexact(p)
    if p_arr.shape != (n_inputs,):
      raise ValueError("p must be None or a 1D vector with the same size as a.shape[axis]. "
                       f"p has shape {p_arr.shape} and a.shape[axis] is {n_inputs}.")
    if replace:
      p_cuml = jnp.cumsum(p_arr)
      r = p_cuml[-1] * (1 - uniform(key, shape, dtype=p_cuml.dtype))
      ind = jnp.searchsorted(p_cuml, r).astype(int)
    else:
      g = gumbel(key, (n_inputs,), dtype=p_arr.dtype, mode=mode) + jnp.log(p_arr)
      ind = lax.top_k(g, k=n_draws)[1].astype(int)
    result = ind if arr.ndim == 0 else jnp.take(arr, ind, axis)
  return result.reshape(shape if arr.ndim == 0 else
                        arr.shape[0:axis] + tuple(shape) + arr.shape[axis + 1:])


# --- normal family ---------------------------------------------------------------------------
@accepts_out_sharding()
def normal(key, shape=(), dtype=None):
  """Standard normal samples: ``sqrt(2) * erf_inv(u)`` with ``u`` uniform in
  ``(-1, 1)``; complex dtypes get independent real and imaginary parts, scaled by
  ``1/sqrt(2)``."""
  key, _ = _check_prng_key("normal", key)
  shape = _lowered_shape(shape)
  dtype = _user_dtype(dtype)
  if not dtypes.issubdtype(dtype, np.inexact):
    raise ValueError(f"dtype argument to `normal` must be a float or complex dtype, got {dtype}")
  return _normal(key, shape, dtype)


@_static_jit(1, 2)
def _normal(key, shape, dtype):
  if dtypes.issubdtype(dtype, np.complexfloating):
    sqrt2 = np.array(np.sqrt(2), dtype)
    key_re, key_im = _split(key)
    real_dtype = np.array(0, dtype).real.dtype
    re = _normal_real(key_re, shape, real_dtype).astype(dtype)
    im = _normal_real(key_im, shape, real_dtype).astype(dtype)
    return (re + 1j * im) / sqrt2
  return _normal_real(key, shape, dtype)


@_static_jit(1, 2)
def _normal_real(key, shape, dtype):
  _check_shape("normal", shape)
  lo = np.nextafter(np.array(-1., dtype), np.array(0., dtype), dtype=dtype)
  hi = np.array(1., dtype)
  u = uniform(key, shape, dtype, lo, hi)
  return lax.mul(np.array(np.sqrt(2), dtype), lax.erf_inv(u))


@accepts_out_sharding()
def truncated_normal(key, lower, upper, shape=None, dtype=None):
  """Normal samples truncated to ``(lower, upper)`` by inverse-CDF sampling; results are
  clipped into the open interval."""
  if shape is not None:
    shape = _shape(shape)
  key, _ = _check_prng_key("truncated_normal", key)
  dtype = _user_dtype(dtype)
  if not dtypes.issubdtype(dtype, np.floating):
    raise ValueError(f"dtype argument to `truncated_normal` must be a float dtype, got {dtype}")
  return _truncated_normal(key, lower, upper, shape, dtype)


@_static_jit(3, 4)
def _truncated_normal(key, lower, upper, shape, dtype):
  if shape is None:
    shape = lax.broadcast_shapes(np.shape(lower), np.shape(upper))
  else:
    _check_shape("truncated_normal", shape, np.shape(lower), np.shape(upper))
  sqrt2 = np.array(np.sqrt(2), dtype)
  lower = lax.convert_element_type(lower, dtype)
  upper = lax.convert_element_type(upper, dtype)
  a = lax.erf(lower / sqrt2)
  b = lax.erf(upper / sqrt2)
  u = uniform(key, shape, dtype, minval=a, maxval=b)
  out = sqrt2 * lax.erf_inv(u)
  return jnp.clip(out,
                  lax.nextafter(lax.stop_gradient(lower), np.array(np.inf, dtype=dtype)),
                  lax.nextafter(lax.stop_gradient(upper), np.array(-np.inf, dtype=dtype)))


@accepts_out_sharding()
def lognormal(key, sigma=np.float32(1), shape=None, dtype=None):
  """``exp(sigma * normal)``."""
  key, _ = _check_prng_key("lognormal", key)
  dtype = _user_dtype(dtype)
  if not dtypes.issubdtype(dtype, np.inexact):
    raise ValueError(f"dtype argument to `lognormal` must be a float or complex dtype, got {dtype}")
  shape = _check_broadcast_shapes("lognormal", shape, sigma)
  _check_all_safe_to_cast("lognormal", dtype, sigma)
  return _lognormal(key, sigma, shape, dtype)


@_static_jit(2, 3)
def _lognormal(key, sigma, shape, dtype):
  sigma = lax.convert_element_type(sigma, dtype)
  return lax.exp(normal(key, shape, dtype) * sigma)


@accepts_out_sharding()
def multivariate_normal(key, mean, cov, shape=None, dtype=None, method="cholesky"):
  """Multivariate normal samples ``mean + factor @ normal`` where ``factor`` comes from
  the Cholesky, SVD or eigh decomposition of ``cov`` (needs ``jax.numpy.linalg``)."""
  key, _ = _check_prng_key("multivariate_normal", key)
  mean, cov = promote_dtypes_inexact(mean, cov)
  if method not in {"svd", "eigh", "cholesky"}:
    raise ValueError("method must be one of {'svd', 'eigh', 'cholesky'}")
  dtype = mean.dtype if dtype is None else dtypes.check_user_dtype(dtype)
  if not dtypes.issubdtype(dtype, np.floating):
    raise ValueError(f"dtype argument to `multivariate_normal` must be a float dtype, got {dtype}")
  if shape is not None:
    shape = _shape(shape)
  return _multivariate_normal(key, mean, cov, shape, dtype, method)


def _linalg():
  linalg = getattr(jnp, "linalg", None)
  if linalg is None:
    raise NotImplementedError("this sampler needs jax.numpy.linalg, which pyjax does not "
                              "provide yet")
  return linalg


@_static_jit(3, 4, 5)
def _multivariate_normal(key, mean, cov, shape, dtype, method):
  if not np.ndim(mean) >= 1:
    raise ValueError(f"multivariate_normal requires mean.ndim >= 1, got mean.ndim == {np.ndim(mean)}")
  if not np.ndim(cov) >= 2:
    raise ValueError(f"multivariate_normal requires cov.ndim >= 2, got cov.ndim == {np.ndim(cov)}")
  n = mean.shape[-1]
  if np.shape(cov)[-2:] != (n, n):
    raise ValueError(f"multivariate_normal requires cov.shape == (..., n, n) for n={n}, but "
                     f"got cov.shape == {np.shape(cov)}.")
  if shape is None:
    shape = lax.broadcast_shapes(mean.shape[:-1], cov.shape[:-2])
  else:
    _check_shape("normal", shape, mean.shape[:-1], cov.shape[:-2])
  linalg = _linalg()
  if method == "svd":
    u, s, _ = linalg.svd(cov)
    factor = u * jnp.sqrt(s[..., None, :])
  elif method == "eigh":
    w, v = linalg.eigh(cov)
    factor = v * jnp.sqrt(w[..., None, :])
  else:
    factor = linalg.cholesky(cov)
  normal_samples = normal(key, shape + mean.shape[-1:], dtype)
  with _config.numpy_rank_promotion("allow"):   # mean broadcasts against ``shape`` (as JAX)
    return mean + jnp.einsum("...ij,...j->...i", factor, normal_samples)


@accepts_out_sharding()
def orthogonal(key, n, shape=(), dtype=None, m=None):
  """Haar-random ``n x m`` matrices with orthonormal columns/rows: QR of a normal matrix
  with the signs of R's diagonal folded into Q (needs ``jax.numpy.linalg``)."""
  _m = n if m is None else m
  shape = _shape(shape)
  key, _ = _check_prng_key("orthogonal", key)
  dtype = _user_dtype(dtype)
  _check_shape("orthogonal", shape)
  n = core.concrete_or_error(operator.index, n, "The error occurred in jax.random.orthogonal()")
  _m = core.concrete_or_error(operator.index, _m, "The error occurred in jax.random.orthogonal()")
  return _orthogonal(key, n, _m, shape, dtype)


@_static_jit(1, 2, 3, 4)
def _orthogonal(key, n, _m, shape, dtype):
  z = normal(key, (*shape, max(n, _m), min(n, _m)), dtype)
  q, r = _linalg().qr(z)
  d = jnp.diagonal(r, axis1=-2, axis2=-1)
  x = q * jnp.expand_dims(jnp.sign(d), -2)
  return jnp.swapaxes(x, -1, -2) if n < _m else x


@accepts_out_sharding()
def maxwell(key, shape=(), dtype=None):
  """Maxwell samples: the norm of three standard normals."""
  key, shape, dtype = _float_args("maxwell", key, shape, dtype)
  return _maxwell(key, shape, dtype)


@_static_jit(1, 2)
def _maxwell(key, shape, dtype):
  x = normal(key, (*shape, 3), dtype)
  return jnp.sqrt(jnp.sum(jnp.real(x * jnp.conj(x)), axis=-1))


def double_sided_maxwell(key, loc, scale, shape=(), dtype=None):
  """A Maxwell sample with a random sign, scaled and shifted; the result shape is
  ``shape + broadcast(loc, scale).shape`` (as JAX)."""
  shape = _shape(shape)   # (JAX broadcasts to it: a negative size is its TypeError)
  key, shape, dtype = _float_args("double_sided_maxwell", key, shape, dtype)
  return _double_sided_maxwell(key, loc, scale, shape, dtype)


@_static_jit(3, 4)
def _double_sided_maxwell(key, loc, scale, shape, dtype):
  params_shapes = lax.broadcast_shapes(np.shape(loc), np.shape(scale))
  if not shape:
    shape = params_shapes
  shape = shape + params_shapes
  maxwell_key, rademacher_key = _split(key)
  maxwell_rvs = maxwell(maxwell_key, shape=shape, dtype=dtype)
  random_sign = rademacher(rademacher_key, shape=shape, dtype=dtype)
  return random_sign * maxwell_rvs * scale + loc


# --- Bernoulli family ---------------------------------------------------------------------
@accepts_out_sharding()
def bernoulli(key, p=0.5, shape=None, mode="low"):
  """Booleans that are True with probability ``p`` (``mode='high'`` uses twice the bits
  for small probabilities)."""
  if shape is not None:
    shape = _shape(shape)
  if mode not in ["high", "low"]:
    raise ValueError(f"got mode={mode!r}, expected 'high' or 'low'")
  key, _ = _check_prng_key("bernoulli", key)
  dtype = _dtype_of(p)
  if not dtypes.issubdtype(dtype, np.floating):
    raise TypeError(f"bernoulli probability `p` must have a floating dtype, got {dtype}.")
  p = lax.convert_element_type(p, dtype)
  return _bernoulli(key, p, shape, mode)


@_static_jit(2, 3)
def _bernoulli(key, p, shape, mode):
  if shape is None:
    shape = np.shape(p)
  else:
    _check_shape("bernoulli", shape, np.shape(p))
  dtype = _dtype_of(p)
  if mode == "high":
    u1, u2 = uniform(key, (2, *shape), dtype)
    u2 = u2 * 2 ** (-dtypes.finfo(dtype).nmant)
    return u2 < p - u1
  return uniform(key, shape, dtype) < p


@accepts_out_sharding()
def rademacher(key, shape=(), dtype=None):
  """-1 or +1 with equal probability."""
  key, _ = _check_prng_key("rademacher", key)
  dtype = _user_dtype(dtype, int)
  shape = _shape(shape)
  return _rademacher(key, shape, dtype)


@_static_jit(1, 2)
def _rademacher(key, shape, dtype):
  b = bernoulli(key, 0.5, shape).astype(dtype)
  return (2 * b - 1).astype(dtype)


# --- Gumbel and categorical --------------------------------------------------------------
@accepts_out_sharding()
def gumbel(key, shape=(), dtype=None, mode=None):
  """Standard Gumbel samples ``-log(-log(u))``; ``mode`` 'high'/'highest' use more bits
  near 0 (default: 'low')."""
  key, shape, dtype = _float_args("gumbel", key, shape, dtype)
  if mode is None:
    mode = "low"
  if mode not in ("highest", "high", "low"):
    raise ValueError(f"Must provide valid mode for gumbel got: {mode}")
  return _gumbel(key, shape, dtype, mode)


def _safe_int_to_float(bits_, dtype):
  """A pair of uint32 words (hi, lo) as a float32 in [0, 1) with all 64 bits of
  precision available near 0 (exactly as JAX's)."""
  finfo = dtypes.finfo(dtype)
  hi, lo = bits_[0], bits_[1]
  hiclz, loclz = lax.clz(hi), lax.clz(lo)
  mantissa = lax.bitwise_or(
      lax.shift_left(hi, hiclz),
      jnp.where(hiclz == 32, lax.shift_left(lo, loclz),
                lax.shift_right_logical(lo, finfo.bits - hiclz)))
  mantissa = lax.shift_right_logical(mantissa, np.array(finfo.bits - finfo.nmant - 1, np.uint32))
  mantissa = lax.bitwise_and(mantissa, np.array((1 << finfo.nmant) - 1, np.uint32))
  exp = lax.shift_left(-finfo.minexp - jnp.where(hiclz == 32, 32 + loclz, hiclz),
                       np.array(finfo.nmant, np.uint32))
  exp = lax.bitwise_and(exp, np.array((1 << finfo.bits - 2) - (1 << finfo.nmant - 1), np.uint32))
  return lax.bitcast_convert_type(lax.bitwise_or(exp, mantissa), dtype)


@_static_jit(1, 2, 3)
def _gumbel(key, shape, dtype, mode):
  _check_shape("gumbel", shape)
  info = dtypes.finfo(dtype)
  if dtype == np.float32 and mode == "highest":
    b = _random_bits(key, info.bits, (2, *shape))
    neg = lax.bitwise_not(b)
    lo_bits = neg[1]
    carry = jnp.stack([(lo_bits == np.uint32(0xFFFFFFFF)).astype(np.uint32),
                       jnp.ones_like(lo_bits)])
    neg = neg + carry
    flip_mask = b[0] < np.array(1 << (info.bits - 1), np.uint32)
    x = _safe_int_to_float(jnp.where(flip_mask, b, neg), np.float32)
    return jnp.where(flip_mask, -jnp.log(-jnp.log1p(-x)), -jnp.log(-jnp.log(x)))
  if mode in ("high", "highest"):
    high, low = _uniform(key, 0.0, 1.0, (2, *shape), dtype)
    x = jnp.where(high >= 0.5, high, high + 2 ** (-info.nmant) * low + info.tiny)
    return -jnp.log(-jnp.log1p(-x))
  return -jnp.log(-jnp.log(_uniform(key, info.tiny, 1.0, shape, dtype)))


@accepts_out_sharding()
def categorical(key, logits, axis=-1, shape=None, replace=True, mode=None):
  """Samples of category indices from unnormalized log-probabilities ``logits`` (Gumbel
  max trick; without replacement: Gumbel top-k)."""
  key, _ = _check_prng_key("categorical", key)
  check_arraylike("categorical", logits)
  logits_arr = jnp.asarray(logits)
  batch_shape = tuple(int(d) for d in np.delete(np.array(logits_arr.shape, dtype=np.int64), axis))
  if shape is None:
    shape = batch_shape
  else:
    shape = _shape(shape)
    _check_shape("categorical", shape, batch_shape)
  shape_prefix = shape[:len(shape) - len(batch_shape)]
  if replace:
    if axis >= 0:
      axis -= len(logits_arr.shape)
    logits_shape = list(shape[len(shape) - len(batch_shape):])
    logits_shape.insert(axis % len(logits_arr.shape), logits_arr.shape[axis])
    g = gumbel(key, (*shape_prefix, *logits_shape), logits_arr.dtype, mode=mode)
    return jnp.argmax(g + lax.expand_dims(logits_arr, tuple(range(len(shape_prefix)))),
                      axis=axis)
  logits_arr = logits_arr + gumbel(key, logits_arr.shape, logits_arr.dtype, mode=mode)
  k = math.prod(shape_prefix)
  if k > logits_arr.shape[axis]:
    raise ValueError(f"Number of samples without replacement ({k}) cannot exceed number of "
                     f"categories ({logits_arr.shape[axis]}).")
  _, indices = lax.top_k(jnp.moveaxis(logits_arr, axis, -1), k)
  dimensions = (indices.ndim - 1, *range(indices.ndim - 1))
  return lax.reshape(indices, shape, dimensions)


# --- samplers from one uniform ------------------------------------------------------------
@accepts_out_sharding()
def exponential(key, shape=(), dtype=None):
  """Standard exponential samples ``-log1p(-u)``."""
  key, shape, dtype = _float_args("exponential", key, shape, dtype)
  return _exponential(key, shape, dtype)


@_static_jit(1, 2)
def _exponential(key, shape, dtype):
  _check_shape("exponential", shape)
  u = uniform(key, shape, dtype)
  return lax.neg(lax.log1p(lax.neg(u)))


@accepts_out_sharding()
def laplace(key, shape=(), dtype=None):
  """Standard Laplace samples."""
  key, shape, dtype = _float_args("laplace", key, shape, dtype)
  return _laplace(key, shape, dtype)


@_static_jit(1, 2)
def _laplace(key, shape, dtype):
  _check_shape("laplace", shape)
  u = uniform(key, shape, dtype, minval=-1.0 + dtypes.finfo(dtype).epsneg, maxval=1.0)
  return lax.mul(lax.sign(u), lax.log1p(lax.neg(lax.abs(u))))


@accepts_out_sharding()
def logistic(key, shape=(), dtype=None):
  """Standard logistic samples ``log(u) - log1p(-u)``."""
  key, shape, dtype = _float_args("logistic", key, shape, dtype)
  return _logistic(key, shape, dtype)


@_static_jit(1, 2)
def _logistic(key, shape, dtype):
  _check_shape("logistic", shape)
  x = uniform(key, shape, dtype, minval=dtypes.finfo(dtype).tiny, maxval=1.0)
  return lax.sub(lax.log(x), lax.log1p(lax.neg(x)))


@accepts_out_sharding()
def cauchy(key, shape=(), dtype=None):
  """Standard Cauchy samples ``tan(pi * (u - 1/2))``."""
  key, shape, dtype = _float_args("cauchy", key, shape, dtype)
  return _cauchy(key, shape, dtype)


@_static_jit(1, 2)
def _cauchy(key, shape, dtype):
  _check_shape("cauchy", shape)
  u = uniform(key, shape, dtype, minval=dtypes.finfo(dtype).eps, maxval=1.0)
  pi = _const(u, np.pi)
  return lax.tan(lax.mul(pi, lax.sub(u, _const(u, 0.5))))


@accepts_out_sharding()
def pareto(key, b, shape=None, dtype=None):
  """Pareto samples ``exp(e / b)`` with ``e`` standard exponential."""
  key, shape, dtype = _float_args("pareto", key, shape, dtype, b)
  return _pareto(key, b, shape, dtype)


@_static_jit(2, 3)
def _pareto(key, b, shape, dtype):
  b = lax.convert_element_type(b, dtype)
  e = exponential(key, shape, dtype)
  return lax.exp(e / b)


@accepts_out_sharding()
def rayleigh(key, scale, shape=None, dtype=None):
  """Rayleigh samples ``scale * sqrt(-2 log u)``."""
  key, shape, dtype = _float_args("rayleigh", key, shape, dtype, scale)
  return _rayleigh(key, scale, shape, dtype)


@_static_jit(2, 3)
def _rayleigh(key, scale, shape, dtype):
  u = uniform(key, shape, dtype)
  scale = scale.astype(dtype)
  scale = jnp.broadcast_to(scale, shape)
  log_u = lax.log(u)
  n_two = _const(scale, -2)
  return lax.mul(scale, lax.sqrt(lax.mul(log_u, n_two)))


@accepts_out_sharding()
def wald(key, mean, shape=None, dtype=None):
  """Wald (inverse Gaussian) samples with unit shape parameter."""
  key, shape, dtype = _float_args("wald", key, shape, dtype, mean)
  return _wald(key, mean, shape, dtype)


@_static_jit(2, 3)
def _wald(key, mean, shape, dtype):
  k1, k2 = _split(key, 2)
  mean = mean.astype(dtype)
  mean = jnp.broadcast_to(mean, shape)
  v = normal(k1, shape, dtype)
  z = uniform(k2, shape, dtype)
  y = lax.integer_pow(v, 2)
  y_sq = lax.integer_pow(y, 2)
  mean_sq = lax.integer_pow(mean, 2)
  sqrt_term = lax.sqrt(4 * mean * y + mean_sq * y_sq)
  x = mean + mean_sq * y / 2 - mean / 2 * sqrt_term
  return lax.select(lax.le(z, mean / (mean + x)), x, mean_sq / x)


@accepts_out_sharding()
def geometric(key, p, shape=None, dtype=None):
  """Geometric samples (number of trials to the first success, >= 1)."""
  key, _ = _check_prng_key("geometric", key)
  dtype = _user_dtype(dtype, int)
  if not dtypes.issubdtype(dtype, np.integer):
    raise ValueError(f"dtype argument to `geometric` must be an int dtype, got {dtype}")
  shape = _check_broadcast_shapes("geometric", shape, p)
  return _geometric(key, p, shape, dtype)


@_static_jit(2, 3)
def _geometric(key, p, shape, dtype):
  check_arraylike("geometric", p)
  p, = promote_dtypes_inexact(p)
  u = uniform(key, shape, p.dtype)
  u = jnp.where(u == 0, 1, u)
  log_u = lax.log(u)
  log_one_minus_p = jnp.broadcast_to(lax.log1p(-p), shape)
  g = lax.floor(lax.div(log_u, log_one_minus_p)) + 1
  return g.astype(dtype)


@accepts_out_sharding()
def triangular(key, left, mode, right, shape=None, dtype=None):
  """Triangular samples on ``[left, right]`` with peak ``mode`` (inverse CDF)."""
  key, shape, dtype = _float_args("triangular", key, shape, dtype, left, mode, right)
  return _triangular(key, left, mode, right, shape, dtype)


@_static_jit(4, 5)
def _triangular(key, left, mode, right, shape, dtype):
  left = jnp.broadcast_to(lax.convert_element_type(left, dtype), shape)
  right = jnp.broadcast_to(lax.convert_element_type(right, dtype), shape)
  mode = jnp.broadcast_to(lax.convert_element_type(mode, dtype), shape)
  fc = (mode - left) / (right - left)
  u = uniform(key, shape, dtype)
  out1 = left + lax.sqrt(u * (right - left) * (mode - left))
  out2 = right - lax.sqrt((1 - u) * (right - left) * (right - mode))
  return lax.select(u < fc, out1, out2)


def weibull_min(key, scale, concentration, shape=(), dtype=None):
  """Weibull samples ``scale * (-log1p(-u)) ** (1 / concentration)``."""
  key, shape, dtype = _float_args("weibull_min", key, shape, dtype)
  return _weibull_min(key, scale, concentration, shape, dtype)


@_static_jit(3, 4)
def _weibull_min(key, scale, concentration, shape, dtype):
  u = uniform(key, shape, dtype, 0, 1)
  return jnp.power(-jnp.log1p(-u), 1.0 / concentration) * scale
