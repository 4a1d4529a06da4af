"""jax.nn: activation functions, softmax family, one_hot, standardize, attention.

Every function follows ``jax.nn``'s definition (same formula, dtype and weak-type rules,
custom derivatives where JAX defines them) so values and gradients agree with JAX.
"""
from __future__ import annotations

import operator
import warnings
from functools import partial

import ml_dtypes
import numpy as np

from pyjax._src import dtypes
from pyjax._src.api import jit
from pyjax._src.api_ad import custom_jvp
from pyjax._src.lax import lax_api as lax
from pyjax._src.numpy import reductions as _red
from pyjax._src.numpy.util import canonicalize_axis, check_arraylike, promote_args_inexact
from pyjax._src.scipy.special import logsumexp
from pyjax._src.scipy import _custom
from pyjax._src.numpy.util import library_function as _library_function
import pyjax.numpy as jnp

__all__ = [
    "celu", "dot_product_attention", "elu", "gelu", "get_scaled_dot_general_config", "glu",
    "hard_sigmoid", "hard_silu", "hard_swish", "hard_tanh", "identity", "leaky_relu",
    "log1mexp", "log_sigmoid", "log_softmax", "logmeanexp", "logsumexp", "mish", "one_hot",
    "relu", "relu6", "scaled_dot_general", "scaled_matmul", "selu", "sigmoid", "silu",
    "soft_sign", "softmax", "softplus", "sparse_plus", "sparse_sigmoid", "squareplus",
    "standardize", "swish", "tanh",
]

tanh = jnp.tanh


def _arraylike(name, *xs):
  check_arraylike(name, *xs)
  out = [jnp.asarray(x) for x in xs]
  return out[0] if len(out) == 1 else out


# --- elementwise activations --------------------------------------------------------------
@jit
def identity(x):
  """The identity activation: returns ``x`` as an array."""
  return _arraylike("identity", x)


@custom_jvp
@jit
def relu(x):
  """Rectified linear unit ``max(x, 0)``; its derivative at 0 is 0 (as JAX)."""
  return jnp.maximum(x, 0)


_custom.defjvps(relu, lambda g, ans, x: lax.select(x > 0, g, lax.full_like(g, 0)))


@custom_jvp
@jit
def relu6(x):
  """``min(max(x, 0), 6)``; the derivative is 0 at both kinks (as JAX)."""
  return jnp.minimum(jnp.maximum(x, 0), 6.)


_custom.defjvps(relu6, lambda g, ans, x: lax.select((x > 0) & (x < 6), g, lax.full_like(g, 0)))


@jit
def squareplus(x, b=4):
  """``(x + sqrt(x**2 + b)) / 2``."""
  x, b = _arraylike("squareplus", x, b)
  return (x + jnp.sqrt(jnp.square(x) + b)) / 2


def _replace_inf(x):
  re = lax.real(x) if dtypes.issubdtype(x.dtype, np.complexfloating) else x
  return lax.select(lax.eq(re, np.array(np.inf, re.dtype)), lax.full_like(x, 0), x)


def _wrap_between(x, a):
  a, two_a = np.array(a, x.dtype), np.array(2 * a, x.dtype)
  rem = lax.rem(lax.add(x, a), two_a)
  rem = lax.select(lax.lt(rem, np.array(0, x.dtype)), lax.add(rem, two_a), rem)
  return lax.sub(rem, a)


@custom_jvp
def logaddexp(x1, x2):
  """``log(exp(x1) + exp(x2))`` with JAX's custom JVP (``jnp.logaddexp``'s kernel; kept
  here so ``softplus`` differentiates like JAX's at ties)."""
  x1, x2 = jnp.asarray(x1), jnp.asarray(x2)
  amax = lax.max(x1, x2)
  if dtypes.issubdtype(x1.dtype, np.floating):
    delta = lax.sub(x1, x2)
    return lax.select(lax.ne(delta, delta), lax.add(x1, x2),
                      lax.add(amax, lax.log1p(lax.exp(lax.neg(lax.abs(delta))))))
  if dtypes.issubdtype(x1.dtype, np.complexfloating):
    delta = lax.sub(lax.add(x1, x2), lax.mul(amax, np.array(2, amax.dtype)))
    out = lax.add(amax, lax.log1p(lax.exp(delta)))
    return lax.complex(lax.real(out), _wrap_between(lax.imag(out), np.pi))
  raise ValueError(f"logaddexp requires floating-point or complex inputs; got {x1.dtype}")


@partial(_custom.defjvp, logaddexp)
def _logaddexp_jvp(primals, tangents):
  (x1, x2), (t1, t2) = primals, tangents
  out = logaddexp(x1, x2)
  return out, lax.add(lax.mul(t1, lax.exp(lax.sub(_replace_inf(x1), _replace_inf(out)))),
                      lax.mul(t2, lax.exp(lax.sub(_replace_inf(x2), _replace_inf(out)))))


@jit
def softplus(x):
  """``log(1 + exp(x))`` computed as ``logaddexp(x, 0)``."""
  x, zero = promote_args_inexact("logaddexp", x, 0)
  return logaddexp(x, zero)


@jit
def sparse_plus(x):
  """0 for ``x <= -1``, ``x`` for ``x >= 1``, ``(x + 1)**2 / 4`` in between."""
  x = _arraylike("sparse_plus", x)
  return jnp.where(x <= -1., 0., jnp.where(x >= 1., x, (x + 1.) ** 2 / 4))


@jit
def soft_sign(x):
  """``x / (|x| + 1)``."""
  x = _arraylike("soft_sign", x)
  return x / (jnp.abs(x) + 1)


@partial(jit, inline=True)
def sigmoid(x):
  """The logistic function ``1 / (1 + exp(-x))`` (``lax.logistic``)."""
  return lax.logistic(x)


@jit
def sparse_sigmoid(x):
  """``clip((x + 1) / 2, 0, 1)``."""
  return 0.5 * jnp.clip(x + 1., 0., 2.)


@jit
def silu(x):
  """``x * sigmoid(x)`` (also ``swish``)."""
  x = _arraylike("silu", x)
  return x * sigmoid(x)


swish = silu


@jit
def mish(x):
  """``x * tanh(softplus(x))``."""
  x = _arraylike("mish", x)
  return x * jnp.tanh(softplus(x))


@jit
def log_sigmoid(x):
  """``log(sigmoid(x)) = -softplus(-x)``."""
  x = _arraylike("log_sigmoid", x)
  return -softplus(-x)


@jit
def elu(x, alpha=1.0):
  """``x`` for ``x > 0`` else ``alpha * (exp(x) - 1)``."""
  x = _arraylike("elu", x)
  return jnp.where(x > 0, x, alpha * jnp.expm1(jnp.where(x > 0, 0., x)))


@jit
def leaky_relu(x, negative_slope=1e-2):
  """``x`` for ``x >= 0`` else ``negative_slope * x``."""
  x = _arraylike("leaky_relu", x)
  return jnp.where(x >= 0, x, negative_slope * x)


@jit
def hard_tanh(x):
  """``x`` clipped to ``[-1, 1]``."""
  x = _arraylike("hard_tanh", x)
  return jnp.where(x > 1, 1, jnp.where(x < -1, -1, x))


@jit
def celu(x, alpha=1.0):
  """``max(x, 0) + alpha * expm1(min(x, 0) / alpha)``."""
  return jnp.maximum(x, 0.) + alpha * jnp.expm1(jnp.minimum(x, 0.) / alpha)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


@jit
def selu(x):
  """Scaled ELU with the self-normalizing constants (alpha 1.67326..., scale 1.05070...)."""
  return _SELU_SCALE * elu(x, _SELU_ALPHA)


def gelu(x, approximate: bool = True):
  """Gaussian error linear unit; ``approximate=True`` uses the tanh formula."""
  x, = promote_args_inexact("gelu", x)
  if approximate:
    c = np.sqrt(2 / np.pi).astype(x.dtype)
    return x * (0.5 * (1. + jnp.tanh(c * (x + 0.044715 * (x ** 3)))))
  half = np.sqrt(0.5).astype(x.dtype)
  return jnp.array(0.5 * x * lax.erfc(-x * half), dtype=x.dtype)


@partial(jit, static_argnames=("axis",))
def glu(x, axis: int = -1):
  """Gated linear unit: split ``x`` in two halves along ``axis``; ``a * sigmoid(b)``."""
  x = _arraylike("glu", x)
  if x.shape[axis] % 2 != 0:
    raise AssertionError("axis size must be divisible by 2")
  a, b = jnp.split(x, 2, axis)
  return a * sigmoid(b)


@jit
def hard_sigmoid(x):
  """``relu6(x + 3) / 6``."""
  return relu6(x + 3.) / 6.


@jit
def hard_silu(x):
  """``x * hard_sigmoid(x)`` (also ``hard_swish``)."""
  x = _arraylike("hard_silu", x)
  return x * hard_sigmoid(x)


hard_swish = hard_silu


@custom_jvp
@jit
def log1mexp(x):
  """``log(1 - exp(-x))`` for ``x > 0``, switching formulas at ``log 2`` for accuracy."""
  x = _arraylike("log1mexp", x)
  return jnp.where(x < jnp.log(2.), jnp.log(-jnp.expm1(-x)), jnp.log1p(-jnp.exp(-x)))


_custom.defjvps(log1mexp, lambda g, ans, x: g / jnp.expm1(x))


# --- softmax family -----------------------------------------------------------------------
def _norm_axis(axis):
  if isinstance(axis, list):
    axis = tuple(axis)
  return axis


@partial(jit, static_argnames=("axis", "keepdims"))
def logmeanexp(x, axis=None, where=None, keepdims: bool = False):
  """``log(mean(exp(x)))`` over ``axis`` (only elements where ``where`` is true)."""
  lse = logsumexp(x, axis=axis, where=where, keepdims=keepdims)
  x = jnp.asarray(x)
  count = _red._count(x, _red._axis_tuple(axis, x.ndim) if axis is not None else None,
                      keepdims, where, lse.dtype)
  return lse - jnp.log(count)


def _log_softmax(x, axis, where):
  x = _arraylike("log_softmax", x)
  x_max = jnp.max(x, axis, where=where, initial=-np.inf, keepdims=True)
  x_safe = x if where is None else jnp.where(where, x, -np.inf)
  shifted = x_safe - lax.stop_gradient(x_max)
  lse = jnp.log(jnp.sum(jnp.exp(shifted), axis, where=where, keepdims=True))
  out = shifted - lse
  return out if where is None else jnp.where(where, out, -np.inf)


_log_softmax_jit = jit(_log_softmax, static_argnames=("axis",))


@_library_function(jit=('log_softmax', ('axis',)))
def log_softmax(x, axis=-1, where=None):
  """``x - logsumexp(x, axis, keepdims=True)``; entries masked out by ``where`` are -inf."""
  return _log_softmax_jit(x, _norm_axis(axis), where)


@partial(custom_jvp, nondiff_argnums=(1,))
def _softmax(x, axis=-1, where=None, initial=-np.inf):
  x_max = jnp.max(x, axis, where=where, initial=initial, keepdims=True)
  x_safe = x if where is None else jnp.where(where, x, initial)
  e = jnp.exp(x_safe - x_max)
  out = e / jnp.sum(e, axis, where=where, keepdims=True)
  return out if where is None else jnp.where(where, out, 0)


@partial(_custom.defjvp, _softmax)
def _softmax_jvp(axis, primals, tangents):
  (x, where, initial), (x_dot, _, _) = primals, tangents
  y = _softmax(x, axis, where, initial)
  return y, y * (x_dot - (y * x_dot).sum(axis, where=where, keepdims=True))


def softmax(x, axis=-1, where=None):
  """``exp(x) / sum(exp(x), axis)``, with JAX's custom JVP; masked entries are 0."""
  check_arraylike("softmax", x)
  return _softmax(jnp.asarray(x), _norm_axis(axis), where)


@partial(jit, static_argnames=("axis", "algorithm"))
def standardize(x, axis=-1, mean=None, variance=None, epsilon=1e-5, where=None, *,
                algorithm: str = "fast"):
  """``(x - mean) / sqrt(variance + epsilon)`` along ``axis`` (``algorithm`` 'fast' uses
  ``E[x^2] - E[x]^2`` clipped at 0, 'stable' uses ``E[(x - mean)^2]``)."""
  check_arraylike("standardize", x)
  for v in (mean, variance, where):
    if v is not None:
      check_arraylike("standardize", v)
  if mean is None:
    mean = jnp.mean(x, axis, keepdims=True, where=where)
  if variance is None:
    if algorithm == "stable":
      variance = jnp.mean(jnp.square(jnp.subtract(x, mean)), axis, keepdims=True, where=where)
    elif algorithm == "fast":
      variance = jnp.mean(jnp.square(x), axis, keepdims=True, where=where) - jnp.square(mean)
      variance = jnp.clip(variance, 0)
    else:
      raise ValueError(f"Unknown algorithm '{algorithm}'. Expected 'fast' or 'stable'.")
  return jnp.subtract(x, mean) * lax.rsqrt(variance + epsilon)


# --- one_hot ------------------------------------------------------------------------------
def _concrete_int(v, what):
  from pyjax._src import core
  return core.concrete_or_error(operator.index, v, what)


@partial(jit, static_argnames=("num_classes", "dtype", "axis"))
def _one_hot(x, num_classes, *, dtype, axis):
  pos = canonicalize_axis(axis, x.ndim + 1)
  lhs = lax.expand_dims(x, (axis,))
  rhs_shape = [1] * x.ndim
  rhs_shape.insert(pos, num_classes)
  rhs = lax.broadcasted_iota(x.dtype, rhs_shape, pos)
  return (lhs == rhs).astype(dtype)


def one_hot(x, num_classes, *, dtype=None, axis=-1):
  """One-hot encoding of integer ``x`` along a new ``axis`` of size ``num_classes``.

  Differs from JAX: ``axis`` must be an integer (no named axes)."""
  num_classes = _concrete_int(
      num_classes, "The error arose in jax.nn.one_hot argument `num_classes`.")
  x = jnp.asarray(x)
  if x.dtype.kind not in "iu":
    warnings.warn(f"jax.nn.one_hot input should be integer-typed; got dtype={x.dtype}",
                  DeprecationWarning, stacklevel=2)
  dtype = dtypes.default_float_dtype() if dtype is None else dtype
  if not isinstance(axis, (int, np.integer)):
    raise NotImplementedError("pyjax.nn.one_hot supports only integer axes")
  return _one_hot(x, num_classes, dtype=np.dtype(dtype), axis=int(axis))


# --- attention ----------------------------------------------------------------------------
def _large_negative(dtype):
  m = min(float(dtypes.finfo(dtype).max), float(np.finfo(np.float32).max))
  return jnp.asarray(-0.7 * m, dtype=dtype)


def _attention_mask(T, S, mask, is_causal, q_len, kv_len, window):
  """Boolean mask broadcastable to (B, K, G, T, S), or None."""
  m = None

  def _and(a, b):
    return b if a is None else jnp.logical_and(a, b)

  if mask is not None:
    m = _and(m, mask)
  if is_causal:
    m = _and(m, jnp.tril(jnp.ones((T, S), dtype=bool)))
  if window is not None:
    left, right = window
    q = jnp.arange(T)[:, None]
    k = jnp.arange(S)[None, :]
    m = _and(m, jnp.logical_and(q >= k - right, q <= k + left))
  if q_len is not None or kv_len is not None:
    pm = True
    if q_len is not None:
      pm = jnp.arange(T)[None, :, None] < q_len[:, None, None]
    if kv_len is not None:
      pm = jnp.logical_and(pm, jnp.arange(S)[None, None, :] < kv_len[:, None, None])
    m = _and(m, pm[:, None, None, :, :])
  return m


def _grouped(t, K, G):
  """(B, N or 1, T, S) -> (B, K, G or 1, T, S)."""
  if t is None:
    return None
  tB, tN, tT, tS = t.shape
  if tN == 1:
    return t[:, :, None]
  if tN != K * G:
    raise ValueError(f"bias/mask head dimension {tN} must be 1 or {K * G}")
  return jnp.reshape(t, (tB, K, G, tT, tS))


def _attention(query, key, value, bias, mask, is_causal, scale, q_len, kv_len, window,
               return_residual):
  B, T, N, H = query.shape
  _, S, K, _ = key.shape
  G = N // K
  q = jnp.reshape(query, (B, T, K, G, H))
  logits_dtype = jnp.promote_types(query.dtype, np.float32)
  logits = jnp.einsum("btkgh,bskh->bkgts", q, key, preferred_element_type=logits_dtype)
  logits = logits * jnp.array(scale, dtype=logits.dtype)
  if bias is not None:
    logits = (logits + _grouped(bias, K, G)).astype(logits.dtype)
  m = _attention_mask(T, S, _grouped(mask, K, G), is_causal, q_len, kv_len, window)
  if m is not None:
    logits = jnp.where(m, logits, _large_negative(logits.dtype))
  logits = logits.astype(np.float32)
  probs = softmax(logits, axis=-1).astype(key.dtype)
  out = jnp.einsum("bkgts,bskh->btkgh", probs, value)
  if q_len is not None:
    keep = (jnp.arange(T)[None, :] < q_len[:, None])[:, :, None, None, None]
    out = out * keep.astype(out.dtype)
  out = jnp.reshape(out, (B, T, N, H))
  if return_residual:
    lse = logsumexp(logits, axis=-1).astype(key.dtype)        # (B, K, G, T)
    lse = jnp.reshape(jnp.transpose(lse, (0, 3, 1, 2)), (B, T, N))
    return out, lax.stop_gradient(lse)
  return out


def dot_product_attention(query, key, value, bias=None, mask=None, *, scale=None,
                          is_causal=False, query_seq_lengths=None,
                          key_value_seq_lengths=None, local_window_size=None,
                          implementation=None, return_residual=False):
  """Scaled dot-product attention ``softmax(Q K^T * scale + bias) V`` on (B, T, N, H)
  arrays (leading dims may be dropped), with grouped-query heads, boolean masks, causal and
  local-window masking and per-batch sequence lengths.

  Differs from JAX: ``implementation='cudnn'`` raises (no cuDNN); the XLA formulation is
  used for ``None`` and ``'xla'``."""
  out_shape = jnp.asarray(query).shape

  def _4d(t):
    t = jnp.asarray(t)
    return jnp.expand_dims(t, tuple(range(4 - t.ndim))) if t.ndim < 4 else t

  q, k, v = _4d(query), _4d(key), _4d(value)
  bias = _4d(bias) if bias is not None else None
  mask = _4d(mask) if mask is not None else None
  if query_seq_lengths is not None:
    query_seq_lengths = jnp.asarray(query_seq_lengths)
  if key_value_seq_lengths is not None:
    key_value_seq_lengths = jnp.asarray(key_value_seq_lengths)
  if isinstance(local_window_size, int):
    local_window_size = (local_window_size, local_window_size)

  def _check(t, shape, dtype, name):
    if t is None:
      return
    if t.ndim != len(shape):
      raise ValueError(f"{name} ndim should be {len(shape)}, but got {t.ndim}")
    if dtype is not None and t.dtype != dtype:
      raise ValueError(f"{name} dtype should be {dtype}, but got {t.dtype}")
    for i in range(t.ndim):
      if shape[i] != -1 and t.shape[i] != shape[i]:
        raise ValueError(f"{name} shape should be {shape}: but got {t.shape}")

  B, S, K, H = k.shape
  _check(v, [B, S, K, H], k.dtype, "value")
  _check(q, [B, -1, -1, H], k.dtype, "query")
  _check(mask, [-1] * 4, np.dtype(bool), "mask")
  _check(bias, [-1] * 4, None, "bias")
  _check(query_seq_lengths, [B], np.dtype("int32"), "query_seq_lengths")
  _check(key_value_seq_lengths, [B], np.dtype("int32"), "key_value_seq_lengths")
  if q.shape[-2] % K != 0:
    raise ValueError("The number of query heads must be a multiple of key/value heads, but "
                     f"got {q.shape[-2]} vs {K}")
  scale_val = 1.0 / np.sqrt(H) if scale is None else scale
  if implementation not in (None, "xla"):
    if implementation == "cudnn":
      raise NotImplementedError("pyjax has no cuDNN attention; use implementation='xla'")
    raise ValueError(f"Unsupported implementation option: {implementation}")
  out = _attention(q, k, v, bias, mask, is_causal, scale_val, query_seq_lengths,
                   key_value_seq_lengths, local_window_size, return_residual)
  if return_residual:
    out, res = out
    return jnp.reshape(out, out_shape), jnp.reshape(res, out_shape[:-1])
  return jnp.reshape(out, out_shape)


# --- block-scaled matmul ------------------------------------------------------------------
class BlockScaleConfig:
  """Block scaling parameters for ``scaled_dot_general`` (as JAX's BlockScaleConfig)."""

  def __init__(self, mode, block_size, data_type, scale_type, global_scale, infer_only):
    self.mode, self.block_size, self.data_type = mode, block_size, data_type
    self.scale_type, self.global_scale, self.infer_only = scale_type, global_scale, infer_only

  def __repr__(self):
    return (f"BlockScaleConfig(mode={self.mode!r}, block_size={self.block_size}, "
            f"data_type={self.data_type}, scale_type={self.scale_type}, "
            f"global_scale={self.global_scale}, infer_only={self.infer_only})")

  def __eq__(self, other):
    return isinstance(other, BlockScaleConfig) and repr(self) == repr(other)

  __hash__ = None


def scaled_matmul(lhs, rhs, lhs_scales, rhs_scales, preferred_element_type=np.float32):
  """Block-scaled batched matmul: ``out[b,m,n] = sum_k lhs[b,m,k] * lhs_scales[b,m,k//bs]
  * rhs[b,n,k] * rhs_scales[b,n,k//bs]`` with ``bs = K / K_scales``.

  Differs from JAX: computed with ordinary dot products (JAX needs cuDNN and raises on
  CPU)."""
  a, b, sa, sb = lhs, rhs, lhs_scales, rhs_scales
  if not all(x.ndim == 3 for x in (a, b, sa, sb)):
    raise ValueError("scaled_matmul requires all inputs to be 3-dimensional arrays")
  B_a, M_a, K_a = a.shape
  B_b, N_b, K_b = b.shape
  if K_a != K_b or B_a != B_b:
    raise ValueError("scaled_matmul requires inputs a and b to have matching batch (B) and "
                     f"contract (K) dimensions, but got shapes {a.shape} and {b.shape}")
  B_as, M_as, K_as = sa.shape
  B_bs, N_bs, K_bs = sb.shape
  if K_as != K_bs or B_as != B_bs:
    raise ValueError("scaled_matmul requires scales to have matching batch (B) and contract "
                     f"(K) dimensions, but got shapes {sa.shape} and {sb.shape}")
  if M_as != M_a or N_bs != N_b:
    raise ValueError("scaled_matmul requires scales to match non-contract dimensions of "
                     f"inputs, but got shapes a: {a.shape}, b: {b.shape}, a_scales: "
                     f"{sa.shape}, b_scales: {sb.shape}")
  if K_as == 0 or K_a % K_as:
    raise ValueError(f"scaled_matmul: contracting size {K_a} is not a multiple of the scale "
                     f"size {K_as}")
  out_dtype = np.dtype(preferred_element_type)
  bs = K_a // K_as
  f32 = np.float32
  a_deq = a.astype(f32) * jnp.repeat(sa.astype(f32), bs, axis=2)
  b_deq = b.astype(f32) * jnp.repeat(sb.astype(f32), bs, axis=2)
  out = lax.dot_general(a_deq, b_deq, (((2,), (2,)), ((0,), (0,))),
                        preferred_element_type=f32)
  return out.astype(out_dtype)


def get_scaled_dot_general_config(mode, global_scale=None):
  """The BlockScaleConfig for ``'nvfp4'`` or ``'mxfp8'``."""
  if mode == "nvfp4":
    one = jnp.ones((1,), dtype=np.float32)
    return BlockScaleConfig("nvfp4", 16, ml_dtypes.float4_e2m1fn, ml_dtypes.float8_e4m3fn,
                            one if global_scale is None else global_scale, False)
  if mode == "mxfp8":
    return BlockScaleConfig("mxfp8", 32, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e8m0fnu,
                            None, False)
  raise ValueError(f"Unsupported mode: {mode}")


def _quantize(x, axis, cfg):
  """Quantize ``x`` in blocks of ``cfg.block_size`` along ``axis``: (values, scales)."""
  x = jnp.moveaxis(x.astype(np.float32), axis, -1)
  k = x.shape[-1]
  bs = cfg.block_size
  pad = (-k) % bs
  if pad:
    x = jnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(0, pad)])
  blocks = jnp.reshape(x, x.shape[:-1] + (x.shape[-1] // bs, bs))
  dmax = float(dtypes.finfo(cfg.data_type).max)
  amax = jnp.max(jnp.abs(blocks), axis=-1, keepdims=True)
  gs = None if cfg.global_scale is None else jnp.asarray(cfg.global_scale, np.float32)
  scale = amax / dmax
  if gs is not None:
    scale = scale / gs
  if np.dtype(cfg.scale_type) == np.dtype(ml_dtypes.float8_e8m0fnu):
    # a shared power-of-two exponent, rounded up so no element overflows (OCP MX)
    scale = jnp.exp2(jnp.ceil(jnp.log2(jnp.where(scale > 0, scale, 1.))))
  scale = scale.astype(cfg.scale_type).astype(np.float32)
  safe = jnp.where(scale == 0, 1., scale)
  full = safe if gs is None else safe * gs
  q = jnp.clip(blocks / full, -dmax, dmax).astype(cfg.data_type)
  deq = q.astype(np.float32) * full
  deq = jnp.reshape(deq, x.shape)[..., :k]
  return jnp.moveaxis(deq, -1, axis)


def scaled_dot_general(lhs, rhs, dimension_numbers, preferred_element_type=np.float32,
                       configs=None, implementation=None):
  """``lax.dot_general`` with optional block-scaled quantization of both operands along
  their contracting dimension (``configs``: BlockScaleConfigs for lhs, rhs, grad).

  Differs from JAX: the quantized product is computed by dequantizing and calling
  ``dot_general`` (JAX needs cuDNN)."""
  if implementation is not None:
    warnings.warn("Backend selector, now ignored. The system chooses the backend "
                  "automatically.", DeprecationWarning, stacklevel=2)
  if configs is None:
    return lax.dot_general(lhs, rhs, dimension_numbers,
                           preferred_element_type=preferred_element_type)
  (lc, rc), _ = dimension_numbers
  if len(lc) != 1 or len(rc) != 1:
    raise NotImplementedError("scaled_dot_general supports one contracting dimension")
  lq = _quantize(jnp.asarray(lhs), lc[0], configs[0])
  rq = _quantize(jnp.asarray(rhs), rc[0], configs[1])
  out = lax.dot_general(lq, rq, dimension_numbers, preferred_element_type=np.float32)
  return out.astype(preferred_element_type)

