"""jax.nn.initializers: functions ``init(key, shape, dtype=None, out_sharding=None)`` that
draw initial parameter arrays.  The draws use ``pyjax.random`` (bit-for-bit with JAX), so
the same key gives JAX's values.

``out_sharding`` lays the draw out over the devices of a sharding (the values are those of
the unsharded draw); errors name the "initializer" rather than the sampler JAX calls."""
from __future__ import annotations

import functools
import math
import operator
from typing import Protocol, runtime_checkable

import numpy as np

from pyjax._src import core, dtypes
from pyjax._src.out_sharding import check_out_sharding, lay_out
from pyjax._src.random import keys as _keys
from pyjax._src.random import samplers as _rs
import pyjax.numpy as jnp

__all__ = ["Initializer", "constant", "delta_orthogonal", "glorot_normal", "glorot_uniform",
           "he_normal", "he_uniform", "kaiming_normal", "kaiming_uniform", "lecun_normal",
           "lecun_uniform", "normal", "ones", "orthogonal", "truncated_normal", "uniform",
           "variance_scaling", "xavier_normal", "xavier_uniform", "zeros"]


@runtime_checkable
class Initializer(Protocol):
  """The protocol of an initializer: ``(key, shape, dtype=None, out_sharding=None)``."""

  def __call__(self, key, shape, dtype=None, out_sharding=None):
    raise NotImplementedError


def _laid_out(init):
  """``init`` taking ``out_sharding`` (keyword or fourth argument): checked as JAX checks
  it, the draw made whole and laid out by it (``pyjax._src.out_sharding.lay_out``)."""
  @functools.wraps(init)
  def wrapper(key, shape, *args, out_sharding=None, **kwargs):
    if len(args) > 1:
      out_sharding, args = args[1], args[:1]
    sharding = check_out_sharding(out_sharding, "initializer")
    return lay_out(init(key, shape, *args, **kwargs), sharding, "initializer")
  return wrapper


def _dtype(dtype):
  return dtypes.default_float_dtype() if dtype is None else dtype


def _shape(shape):
  if isinstance(shape, (int, np.integer)):
    return (operator.index(shape),)
  return tuple(operator.index(core.concrete_or_error(None, d, "shape")) for d in shape)


@_laid_out
def zeros(key, shape, dtype=None, out_sharding=None):
  """All zeros (``key`` unused)."""
  return jnp.zeros(shape, _dtype(dtype))


@_laid_out
def ones(key, shape, dtype=None, out_sharding=None):
  """All ones (``key`` unused)."""
  return jnp.ones(shape, _dtype(dtype))


def constant(value, dtype=None):
  """An initializer filling arrays with ``value``."""
  @_laid_out
  def init(key, shape, dtype=dtype, out_sharding=None):
    return jnp.full(shape, value, dtype=_dtype(dtype))
  return init


def uniform(scale=1e-2, dtype=None):
  """Uniform on ``[0, scale)``."""
  @_laid_out
  def init(key, shape, dtype=dtype, out_sharding=None):
    dtype = _dtype(dtype)
    return _rs.uniform(key, shape, dtype) * jnp.array(scale, dtype)
  return init


def normal(stddev=1e-2, dtype=None):
  """Normal with standard deviation ``stddev``."""
  @_laid_out
  def init(key, shape, dtype=dtype, out_sharding=None):
    dtype = _dtype(dtype)
    return _rs.normal(key, shape, dtype) * jnp.array(stddev, dtype)
  return init


def truncated_normal(stddev=1e-2, dtype=None, lower=-2.0, upper=2.0):
  """Standard normal truncated to ``[lower, upper]``, times ``stddev``."""
  @_laid_out
  def init(key, shape, dtype=dtype, out_sharding=None):
    dtype = _dtype(dtype)
    return _rs.truncated_normal(key, lower, upper, shape, dtype) * jnp.array(stddev, dtype)
  return init


def _compute_fans(shape, in_axis=-2, out_axis=-1, batch_axis=()):
  """``(fan_in, fan_out)``: the input/output sizes times the receptive field size."""
  if isinstance(in_axis, int) and in_axis == -2 and len(shape) <= 1:
    raise ValueError(f"Can't compute input and output sizes of a {len(shape)}-dimensional "
                     "weights tensor with default in_axis. Must be at least 2D or specify "
                     "in_axis explicitly.")

  def size(ax):
    return shape[ax] if isinstance(ax, int) else math.prod([shape[i] for i in ax])

  in_size, out_size, batch_size = size(in_axis), size(out_axis), size(batch_axis)
  receptive = math.prod(shape) / in_size / out_size / batch_size
  return in_size * receptive, out_size * receptive


def _real_dtype(dtype):
  return np.array(0, dtype).real.dtype


def _complex_uniform(key, shape, dtype):
  """Uniform on the unit disk."""
  kr, kt = _keys.split(key)
  rd = _real_dtype(dtype)
  dtype = dtypes.to_complex_dtype(rd)
  r = jnp.sqrt(2 * _rs.uniform(kr, shape, rd)).astype(dtype)
  theta = 2 * np.pi * _rs.uniform(kt, shape, rd).astype(dtype)
  return r * jnp.exp(1j * theta)


def _complex_truncated_normal(key, upper, shape, dtype):
  """Complex normal with modulus truncated to ``upper``."""
  kr, kt = _keys.split(key)
  rd = _real_dtype(dtype)
  dtype = dtypes.to_complex_dtype(rd)
  t = (1 - jnp.exp(jnp.array(-(upper ** 2), dtype))) * _rs.uniform(kr, shape, rd).astype(dtype)
  r = jnp.sqrt(-jnp.log(1 - t))
  theta = 2 * np.pi * _rs.uniform(kt, shape, rd).astype(dtype)
  return r * jnp.exp(1j * theta)


def variance_scaling(scale, mode, distribution, in_axis=-2, out_axis=-1, batch_axis=(),
                     dtype=None):
  """Samples with variance ``scale / n``, ``n`` the fan-in, fan-out, their average or
  geometric average (``mode``), from a 'truncated_normal', 'normal' or 'uniform'
  ``distribution`` (complex dtypes draw on the unit disk / with truncated modulus)."""
  @_laid_out
  def init(key, shape, dtype=dtype, out_sharding=None):
    shape = _shape(shape)
    dtype = _dtype(dtype)
    fan_in, fan_out = _compute_fans(shape, in_axis, out_axis, batch_axis)
    if mode == "fan_in":
      den = fan_in
    elif mode == "fan_out":
      den = fan_out
    elif mode == "fan_avg":
      den = (fan_in + fan_out) / 2
    elif mode == "fan_geo_avg":
      den = (fan_in * fan_out) ** 0.5
    else:
      raise ValueError(f"invalid mode for variance scaling initializer: {mode}")
    variance = jnp.array(scale / den, dtype=dtype)
    if distribution == "truncated_normal":
      if dtypes.issubdtype(dtype, np.floating):
        # 0.879...: the standard deviation of a standard normal truncated to (-2, 2)
        std = jnp.sqrt(variance) / jnp.array(.87962566103423978, dtype)
        return _rs.truncated_normal(key, -2, 2, shape, dtype) * std
      std = jnp.sqrt(variance) / jnp.array(.95311164380491208, dtype)
      return _complex_truncated_normal(key, 2, shape, dtype) * std
    if distribution == "normal":
      return _rs.normal(key, shape, dtype) * jnp.sqrt(variance)
    if distribution == "uniform":
      if dtypes.issubdtype(dtype, np.floating):
        return _rs.uniform(key, shape, dtype, -1) * jnp.sqrt(3 * variance)
      return _complex_uniform(key, shape, dtype) * jnp.sqrt(variance)
    raise ValueError(f"invalid distribution for variance scaling initializer: {distribution}")
  return init


def glorot_uniform(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
  """Glorot/Xavier uniform: ``variance_scaling(1.0, 'fan_avg', 'uniform')``."""
  return variance_scaling(1.0, "fan_avg", "uniform", in_axis=in_axis, out_axis=out_axis,
                          batch_axis=batch_axis, dtype=dtype)


def glorot_normal(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
  """Glorot/Xavier normal: ``variance_scaling(1.0, 'fan_avg', 'truncated_normal')``."""
  return variance_scaling(1.0, "fan_avg", "truncated_normal", in_axis=in_axis,
                          out_axis=out_axis, batch_axis=batch_axis, dtype=dtype)


def lecun_uniform(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
  """LeCun uniform: ``variance_scaling(1.0, 'fan_in', 'uniform')``."""
  return variance_scaling(1.0, "fan_in", "uniform", in_axis=in_axis, out_axis=out_axis,
                          batch_axis=batch_axis, dtype=dtype)


def lecun_normal(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
  """LeCun normal: ``variance_scaling(1.0, 'fan_in', 'truncated_normal')``."""
  return variance_scaling(1.0, "fan_in", "truncated_normal", in_axis=in_axis,
                          out_axis=out_axis, batch_axis=batch_axis, dtype=dtype)


def he_uniform(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
  """He/Kaiming uniform: ``variance_scaling(2.0, 'fan_in', 'uniform')``."""
  return variance_scaling(2.0, "fan_in", "uniform", in_axis=in_axis, out_axis=out_axis,
                          batch_axis=batch_axis, dtype=dtype)


def he_normal(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
  """He/Kaiming normal: ``variance_scaling(2.0, 'fan_in', 'truncated_normal')``."""
  return variance_scaling(2.0, "fan_in", "truncated_normal", in_axis=in_axis,
                          out_axis=out_axis, batch_axis=batch_axis, dtype=dtype)


xavier_uniform = glorot_uniform
xavier_normal = glorot_normal
kaiming_uniform = he_uniform
kaiming_normal = he_normal


def orthogonal(scale=1.0, column_axis=-1, dtype=None):
  """A (scaled) matrix with orthonormal rows or columns, reshaped to ``shape`` with the
  columns along ``column_axis``."""
  @_laid_out
  def init(key, shape, dtype=dtype, out_sharding=None):
    dtype = _dtype(dtype)
    shape = _shape(shape)
    if len(shape) < 2:
      raise ValueError("orthogonal initializer requires at least a 2D shape")
    if any(d == 0 for d in shape):
      return jnp.zeros(shape, dtype=dtype)
    n_rows, n_cols = math.prod(shape) // shape[column_axis], shape[column_axis]
    Q = _rs.orthogonal(key, n_rows, (), dtype, n_cols)
    Q = jnp.reshape(Q, tuple(np.delete(shape, column_axis)) + (shape[column_axis],))
    Q = jnp.moveaxis(Q, -1, column_axis)
    return jnp.array(scale, dtype) * Q
  return init


def delta_orthogonal(scale=1.0, column_axis=-1, dtype=None):
  """For convolution kernels (3-D to 5-D): zero except an orthogonal matrix at the spatial
  centre."""
  @_laid_out
  def init(key, shape, dtype=dtype, out_sharding=None):
    dtype = _dtype(dtype)
    shape = _shape(shape)
    if len(shape) not in (3, 4, 5):
      raise ValueError("Delta orthogonal initializer requires a 3D, 4D or 5D shape.")
    if shape[-1] < shape[-2]:
      raise ValueError("`fan_in` must be less or equal than `fan_out`. ")
    ortho = orthogonal(scale=scale, column_axis=column_axis, dtype=dtype)(key, shape[-2:])
    W = jnp.zeros(shape, dtype=dtype)
    centre = tuple((k - 1) // 2 for k in shape[:-2])
    return W.at[centre].set(ortho)
  return init
