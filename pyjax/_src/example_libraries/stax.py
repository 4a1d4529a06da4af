"""A small neural-network layer library (``jax.example_libraries.stax``).

A layer is a pair ``(init_fun, apply_fun)``: ``init_fun(rng, input_shape)`` returns
``(output_shape, params)``; ``apply_fun(params, inputs, **kwargs)`` computes the outputs
(``rng=`` is passed to layers that need randomness, such as :func:`Dropout`).  Layers are
combined with :func:`serial`, :func:`parallel` and :func:`shape_dependent`.  Parameter
initialization splits keys exactly as JAX's stax does, so the same key gives the same
parameters.
"""
from __future__ import annotations

import functools
import math

import pyjax.numpy as jnp
from pyjax import lax, random
from pyjax.nn import (elu, gelu, leaky_relu, log_softmax, relu, selu, sigmoid, softmax,
                      softplus, standardize)
from pyjax.nn.initializers import glorot_normal, normal, ones, zeros

__all__ = ["Dense", "GeneralConv", "Conv", "GeneralConvTranspose", "Conv1DTranspose",
           "ConvTranspose", "BatchNorm", "elementwise", "Tanh", "Relu", "Exp", "LogSoftmax",
           "Softmax", "Softplus", "Sigmoid", "Elu", "LeakyRelu", "Selu", "Gelu", "MaxPool",
           "SumPool", "AvgPool", "Flatten", "Identity", "FanOut", "FanInSum", "FanInConcat",
           "Dropout", "serial", "parallel", "shape_dependent", "glorot", "randn",
           "logsoftmax", "relu", "log_softmax", "softmax", "softplus", "sigmoid", "elu",
           "leaky_relu", "selu", "gelu", "standardize", "glorot_normal", "normal", "ones",
           "zeros"]

glorot = glorot_normal
randn = normal
logsoftmax = log_softmax


def Dense(out_dim, W_init=glorot_normal(), b_init=normal()):
  """A fully-connected layer: ``inputs @ W + b`` with ``W: (in, out_dim)``."""
  def init_fun(rng, input_shape):
    k_w, k_b = random.split(rng)
    W = W_init(k_w, (input_shape[-1], out_dim))
    b = b_init(k_b, (out_dim,))
    return tuple(input_shape[:-1]) + (out_dim,), (W, b)

  def apply_fun(params, inputs, **kwargs):
    W, b = params
    return jnp.dot(inputs, W) + b
  return init_fun, apply_fun


def _kernel_shape(lhs_spec, rhs_spec, out_chan, filter_shape, input_shape):
  spatial = iter(filter_shape)
  return [out_chan if c == "O" else input_shape[lhs_spec.index("C")] if c == "I"
          else next(spatial) for c in rhs_spec]


def _conv_init(shape_tuple, dimension_numbers, out_chan, filter_shape, strides, padding,
               W_init, b_init):
  """init_fun of a (transposed) convolution layer; ``shape_tuple`` gives its output shape."""
  lhs_spec, rhs_spec, out_spec = dimension_numbers
  W_init = W_init or glorot_normal(rhs_spec.index("I"), rhs_spec.index("O"))

  def init_fun(rng, input_shape):
    kernel_shape = _kernel_shape(lhs_spec, rhs_spec, out_chan, filter_shape, input_shape)
    out_shape = shape_tuple(input_shape, kernel_shape, strides, padding, dimension_numbers)
    bias_shape = [out_chan if c == "C" else 1 for c in out_spec]
    k_w, k_b = random.split(rng)
    return out_shape, (W_init(k_w, kernel_shape), b_init(k_b, bias_shape))
  return init_fun


def GeneralConv(dimension_numbers, out_chan, filter_shape, strides=None, padding="VALID",
                W_init=None, b_init=normal(1e-6)):
  """A convolution with layouts ``dimension_numbers = (lhs, rhs, out)`` (e.g.
  ``('NHWC', 'HWIO', 'NHWC')``), ``out_chan`` output channels and a bias per channel."""
  one = (1,) * len(filter_shape)
  strides = strides or one
  init_fun = _conv_init(lax.conv_general_shape_tuple, dimension_numbers, out_chan,
                        filter_shape, strides, padding, W_init, b_init)

  def apply_fun(params, inputs, **kwargs):
    W, b = params
    return lax.conv_general_dilated(inputs, W, strides, padding, one, one,
                                    dimension_numbers=dimension_numbers) + b
  return init_fun, apply_fun


Conv = functools.partial(GeneralConv, ("NHWC", "HWIO", "NHWC"))


def GeneralConvTranspose(dimension_numbers, out_chan, filter_shape, strides=None,
                         padding="VALID", W_init=None, b_init=normal(1e-6)):
  """A transposed convolution (``lax.conv_transpose``), arguments as :func:`GeneralConv`."""
  one = (1,) * len(filter_shape)
  strides = strides or one
  init_fun = _conv_init(lax.conv_transpose_shape_tuple, dimension_numbers, out_chan,
                        filter_shape, strides, padding, W_init, b_init)

  def apply_fun(params, inputs, **kwargs):
    W, b = params
    return lax.conv_transpose(inputs, W, strides, padding,
                              dimension_numbers=dimension_numbers) + b
  return init_fun, apply_fun


Conv1DTranspose = functools.partial(GeneralConvTranspose, ("NHC", "HIO", "NHC"))
ConvTranspose = functools.partial(GeneralConvTranspose, ("NHWC", "HWIO", "NHWC"))


def BatchNorm(axis=(0, 1, 2), epsilon=1e-5, center=True, scale=True, beta_init=zeros,
              gamma_init=ones):
  """Normalizes over ``axis`` (batch statistics of the inputs), then scales by ``gamma``
  and shifts by ``beta`` (each optional), parameters shaped as the remaining axes."""
  axis = (axis,) if jnp.isscalar(axis) else axis

  def init_fun(rng, input_shape):
    shape = tuple(d for i, d in enumerate(input_shape) if i not in axis)
    k_beta, k_gamma = random.split(rng)
    beta = beta_init(k_beta, shape) if center else ()
    gamma = gamma_init(k_gamma, shape) if scale else ()
    return input_shape, (beta, gamma)

  def apply_fun(params, x, **kwargs):
    beta, gamma = params
    expand = tuple(None if i in axis else slice(None) for i in range(jnp.ndim(x)))
    z = standardize(x, axis, epsilon=epsilon)
    if center and scale:
      return gamma[expand] * z + beta[expand]
    if center:
      return z + beta[expand]
    if scale:
      return gamma[expand] * z
    return z
  return init_fun, apply_fun


def elementwise(fun, **fun_kwargs):
  """A parameterless layer applying ``fun(inputs, **fun_kwargs)``."""
  def init_fun(rng, input_shape):
    return input_shape, ()

  def apply_fun(params, inputs, **kwargs):
    return fun(inputs, **fun_kwargs)
  return init_fun, apply_fun


Tanh = elementwise(jnp.tanh)
Relu = elementwise(relu)
Exp = elementwise(jnp.exp)
LogSoftmax = elementwise(log_softmax, axis=-1)
Softmax = elementwise(softmax, axis=-1)
Softplus = elementwise(softplus)
Sigmoid = elementwise(sigmoid)
Elu = elementwise(elu)
LeakyRelu = elementwise(leaky_relu)
Selu = elementwise(selu)
Gelu = elementwise(gelu)


def _insert_ones(seq, axes):
  seq = tuple(seq)
  for i in sorted(axes):
    seq = seq[:i] + (1,) + seq[i:]
  return seq


def _pooling_layer(reducer, init_val, rescaler=None):
  def PoolingLayer(window_shape, strides=None, padding="VALID", spec=None):
    """A pooling layer over the spatial axes (``spec`` names the layout, e.g. ``'NHWC'``;
    default: batch first, channels last)."""
    strides = strides or (1,) * len(window_shape)
    rescale = rescaler(window_shape, strides, padding) if rescaler else None
    non_spatial = ((0, len(window_shape) + 1) if spec is None
                   else (spec.index("N"), spec.index("C")))
    window = _insert_ones(window_shape, non_spatial)
    full_strides = _insert_ones(strides, non_spatial)

    def init_fun(rng, input_shape):
      pads = lax.padtype_to_pads(input_shape, window, full_strides, padding)
      ones_ = (1,) * len(window)
      return lax.reduce_window_shape_tuple(input_shape, window, full_strides, pads, ones_,
                                           ones_), ()

    def apply_fun(params, inputs, **kwargs):
      out = lax.reduce_window(inputs, init_val, reducer, window, full_strides, padding)
      return rescale(out, inputs, spec) if rescale else out
    return init_fun, apply_fun
  return PoolingLayer


MaxPool = _pooling_layer(lax.max, -jnp.inf)
SumPool = _pooling_layer(lax.add, 0.)


def _normalize_by_window_size(dims, strides, padding):
  def rescale(outputs, inputs, spec):
    non_spatial = (0, inputs.ndim - 1) if spec is None else (spec.index("N"), spec.index("C"))
    spatial_shape = tuple(d for i, d in enumerate(inputs.shape) if i not in non_spatial)
    counts = lax.reduce_window(jnp.ones(spatial_shape, dtype=inputs.dtype), 0., lax.add,
                               dims, strides, padding)
    for i in sorted(non_spatial):
      counts = jnp.expand_dims(counts, i)
    return outputs / counts
  return rescale


AvgPool = _pooling_layer(lax.add, 0., _normalize_by_window_size)


def _flatten():
  def init_fun(rng, input_shape):
    return (input_shape[0], math.prod(input_shape[1:])), ()

  def apply_fun(params, inputs, **kwargs):
    return jnp.reshape(inputs, (inputs.shape[0], -1))
  return init_fun, apply_fun


Flatten = _flatten()   # a layer (not a constructor), as in JAX


def _identity():
  return (lambda rng, input_shape: (input_shape, ())), (lambda params, inputs, **kw: inputs)


Identity = _identity()   # a layer


def FanOut(num):
  """A layer copying its input into a list of ``num`` outputs."""
  return ((lambda rng, input_shape: ([input_shape] * num, ())),
          (lambda params, inputs, **kwargs: [inputs] * num))


def _fan_in_sum():
  return ((lambda rng, input_shape: (input_shape[0], ())),
          (lambda params, inputs, **kwargs: sum(inputs)))


FanInSum = _fan_in_sum()   # a layer summing a list of inputs


def FanInConcat(axis=-1):
  """A layer concatenating a list of inputs along ``axis``."""
  def init_fun(rng, input_shape):
    ax = axis % len(input_shape[0])
    size = sum(shape[ax] for shape in input_shape)
    first = tuple(input_shape[0])
    return first[:ax] + (size,) + first[ax + 1:], ()

  def apply_fun(params, inputs, **kwargs):
    return jnp.concatenate(inputs, axis)
  return init_fun, apply_fun


def Dropout(rate, mode="train"):
  """Dropout needing ``rng=`` at apply time.  As in JAX's stax, ``rate`` is the probability
  of *keeping* an entry (kept entries are divided by ``rate``); ``mode != 'train'`` is
  the identity."""
  def init_fun(rng, input_shape):
    return input_shape, ()

  def apply_fun(params, inputs, **kwargs):
    rng = kwargs.get("rng", None)
    if rng is None:
      raise ValueError(
          "Dropout layer requires apply_fun to be called with a PRNG key argument. That "
          "is, instead of `apply_fun(params, inputs)`, call it like `apply_fun(params, "
          "inputs, rng)` where `rng` is a PRNG key (e.g. from `jax.random.key`).")
    if mode == "train":
      keep = random.bernoulli(rng, rate, inputs.shape)
      return jnp.where(keep, inputs / rate, 0)
    return inputs
  return init_fun, apply_fun


def serial(*layers):
  """The layers applied one after another; ``params`` is a list, one entry per layer.

  ``init_fun`` splits its key once per layer (carrying the first half forward);
  ``apply_fun`` splits ``rng`` (when given) into one key per layer.
  """
  n = len(layers)
  init_funs, apply_funs = zip(*layers)

  def init_fun(rng, input_shape):
    params = []
    for init in init_funs:
      rng, layer_rng = random.split(rng)
      input_shape, p = init(layer_rng, input_shape)
      params.append(p)
    return input_shape, params

  def apply_fun(params, inputs, **kwargs):
    rng = kwargs.pop("rng", None)
    rngs = random.split(rng, n) if rng is not None else (None,) * n
    for fun, p, r in zip(apply_funs, params, rngs):
      inputs = fun(p, inputs, rng=r, **kwargs)
    return inputs
  return init_fun, apply_fun


def parallel(*layers):
  """The layers applied side by side: input ``k`` goes to layer ``k`` (use with
  :func:`FanOut` and :func:`FanInSum` / :func:`FanInConcat`)."""
  n = len(layers)
  init_funs, apply_funs = zip(*layers)

  def init_fun(rng, input_shape):
    rngs = random.split(rng, n)
    return zip(*[init(r, shape) for init, r, shape in zip(init_funs, rngs, input_shape)])

  def apply_fun(params, inputs, **kwargs):
    rng = kwargs.pop("rng", None)
    rngs = random.split(rng, n) if rng is not None else (None,) * n
    return [f(p, x, rng=r, **kwargs) for f, p, x, r in zip(apply_funs, params, inputs, rngs)]
  return init_fun, apply_fun


def shape_dependent(make_layer):
  """A layer built by ``make_layer(input_shape)`` once the input shape is known."""
  def init_fun(rng, input_shape):
    return make_layer(input_shape)[0](rng, input_shape)

  def apply_fun(params, inputs, **kwargs):
    return make_layer(inputs.shape)[1](params, inputs, **kwargs)
  return init_fun, apply_fun
