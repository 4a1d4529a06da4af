"""PRNG implementations on raw key data: the ``threefry2x32`` hash primitive and JAX's
threefry key derivation (seed, split, fold_in) and bit generation.

Every function here works on *raw key data*: ``uint32`` arrays whose trailing dimension
is the implementation's key shape ``(2,)``.  Leading dimensions are independent keys
(what JAX gets by vmapping its single-key functions), so ``split``/``fold_in``/
``random_bits`` of a ``(*K, 2)`` array return ``(*K, *shape, ...)``.

Two schemes, chosen by ``config.jax_threefry_partitionable`` (as in JAX):

* partitionable (default): element ``i`` of a request of ``shape`` hashes the 64-bit
  count ``i`` (split into high/low ``uint32`` words) under the key; ``split`` keeps both
  output words, ``random_bits`` xors them (32 bits), concatenates them (64 bits) or
  truncates the xor (8/16 bits).
* original: one ``threefry_2x32`` call hashes the counts ``0..n-1`` as pairs
  ``(x[i], x[i + n/2])`` and the words are reinterpreted (little-endian for 8/16 bits,
  first half high / second half low for 64 bits).
"""
from __future__ import annotations

import math
from typing import Callable, NamedTuple

import numpy as np

from pyjax._src import core, dtypes
from pyjax._src.avals import ShapedArray
from pyjax._src.config import config
from pyjax._src.interpreters import ad
from pyjax._src.lax import lax_api as lax
from pyjax._src.lax import utils

_u32 = dtypes.uint32
UINT_DTYPES = {8: dtypes.uint8, 16: dtypes.uint16, 32: dtypes.uint32, 64: dtypes.uint64}


# --- the threefry2x32 primitive ----------------------------------------------------------
threefry2x32_p = core.Primitive("threefry2x32")
threefry2x32_p.multiple_results = True
threefry2x32_p.arg_names = ("key1", "key2", "x1", "x2")


@threefry2x32_p.def_abstract_eval
def _threefry2x32_abstract(*args):
  if any(a.dtype != _u32 for a in args):
    raise TypeError(f"Arguments to threefry2x32 must have uint32 type, got {tuple(args)}")
  shape = utils.broadcasting_shape("threefry2x32", [a.shape for a in args])
  aval = ShapedArray(shape, _u32)
  return [aval, aval]


ad.defjvp_zero(threefry2x32_p)


def threefry2x32(k1, k2, x1, x2):
  """The raw Threefry-2x32 hash of count words ``(x1, x2)`` under key words ``(k1, k2)``
  (all ``uint32``, lax-broadcast against each other)."""
  return threefry2x32_p.bind(k1, k2, x1, x2)


# --- iota_2x32_shape: 64-bit flat indices as two uint32 words -------------------------
iota_2x32_shape_p = core.Primitive("iota_2x32_shape")
iota_2x32_shape_p.multiple_results = True


@iota_2x32_shape_p.def_abstract_eval
def _iota_2x32_shape_abstract(*, shape):
  aval = ShapedArray(shape, _u32)
  return [aval, aval]


def iota_2x32_shape(shape):
  """(high, low) ``uint32`` words of the row-major flat index of each element of
  ``shape`` (a 64-bit iota reshaped to ``shape``)."""
  if len(shape) == 0:
    z = lax.full((), 0, _u32)
    return z, z
  hi, lo = iota_2x32_shape_p.bind(shape=tuple(shape))
  return hi, lo


# --- fma: a * b + c rounded once ------------------------------------------------------------
# XLA's CPU compiler contracts a multiply feeding an add into one fused multiply-add in
# float32/float64 (half types are computed per operation).  JAX's uniform transform
# ``floats * (maxval - minval) + minval`` runs inside a jitted function, so its values are
# fma results; samplers call ``fma`` where JAX's bits depend on that contraction.
fma_p = core.Primitive("fma")
fma_p.arg_names = ("x", "y", "z")


@fma_p.def_abstract_eval
def _fma_abstract(x, y, z):
  shape, weak = utils.naryop_avals("fma", (utils.floating,) * 3, (x, y, z))
  return ShapedArray(shape, x.dtype, weak)


ad.defjvp(fma_p,
          lambda g, x, y, z: lax.mul(g, y),
          lambda g, x, y, z: lax.mul(x, g),
          lambda g, x, y, z: g)


def fma(x, y, z):
  """``x * y + z`` with a single rounding for float32/float64 (separately rounded
  operations for narrower floats), as XLA computes a fused multiply-add."""
  if dtypes.finfo(core.get_aval(x).dtype).bits >= 32:
    return fma_p.bind(x, y, z)
  return lax.add(lax.mul(x, y), z)


def _register_batchers():
  try:
    from pyjax._src.interpreters import batching
  except ImportError:  # vmap not available yet
    return
  batching.defbroadcasting(threefry2x32_p)   # elementwise with lax broadcasting
  batching.defbroadcasting(fma_p)


_register_batchers()


# --- helpers on raw key data -------------------------------------------------------------
def _key_words(key):
  """The two ``uint32`` words of raw keys ``(*K, 2)``, each of shape ``K``."""
  ax = key.ndim - 1
  return (lax.index_in_dim(key, 0, ax, keepdims=False),
          lax.index_in_dim(key, 1, ax, keepdims=False))


def _hash_bcast(k1, k2, x1, x2):
  """threefry2x32 of keys of shape ``K`` against counts of shape ``S``: ``K + S``."""
  kshape, sshape = tuple(k1.shape), tuple(x1.shape)
  if kshape:
    out = (*kshape, *sshape)
    kd = tuple(range(len(kshape)))
    sd = tuple(range(len(kshape), len(out)))
    k1, k2 = (lax.broadcast_in_dim(k, out, kd) for k in (k1, k2))
    x1, x2 = (lax.broadcast_in_dim(x, out, sd) for x in (x1, x2))
  return threefry2x32(k1, k2, x1, x2)


def _stack_last(a, b):
  nd = a.ndim
  return lax.concatenate([lax.expand_dims(a, (nd,)), lax.expand_dims(b, (nd,))], nd)


def threefry_2x32(key, count):
  """JAX's ``threefry_2x32(keypair, count)``: hash a ``uint32`` array of counts (any shape)
  as word pairs ``(c[i], c[i + n/2])`` of its flattened, zero-padded-to-even form; the
  result has ``count``'s shape (after the key's leading dimensions)."""
  k1, k2 = _key_words(key)
  if count.dtype != _u32 or k1.dtype != _u32:
    raise TypeError("threefry_2x32 requires uint32 arguments, got "
                    f"{[k1.dtype, k2.dtype, count.dtype]}")
  cshape = tuple(count.shape)
  n = math.prod(cshape)
  flat = lax.reshape(count, (n,))
  odd = n % 2
  if odd:
    flat = lax.concatenate([flat, lax.full((1,), 0, _u32)], 0)
  half = flat.shape[0] // 2
  x1 = lax.slice(flat, (0,), (half,))
  x2 = lax.slice(flat, (half,), (2 * half,))
  y1, y2 = _hash_bcast(k1, k2, x1, x2)
  ax = y1.ndim - 1
  out = lax.concatenate([y1, y2], ax)
  if odd:
    out = lax.slice_in_dim(out, 0, n, axis=ax)
  return lax.reshape(out, (*k1.shape, *cshape))


def threefry_seed(seed):
  """Raw key data ``uint32[2]`` of an integer scalar seed: (high word, low word) of a
  64-bit seed; a seed of 32 bits or fewer has high word 0 and its low word is the seed
  converted (sign-extended) to ``uint32``."""
  aval = core.get_aval(seed)
  if aval.shape:
    raise TypeError(f"PRNG key seed must be a scalar; got {seed!r}.")
  if not dtypes.is_int(aval.dtype):
    raise TypeError(f"PRNG key seed must be an integer; got {seed!r}")
  if aval.dtype.itemsize == 8:
    hi = lax.convert_element_type(
        lax.shift_right_logical(seed, np.array(32, aval.dtype)), _u32)
  else:
    hi = lax.full((), 0, _u32)
  lo = lax.convert_element_type(seed, _u32)
  return lax.concatenate([lax.expand_dims(hi, (0,)), lax.expand_dims(lo, (0,))], 0)


def threefry_split(key, shape):
  """``split``: raw keys ``(*K, 2)`` -> ``(*K, *shape, 2)``."""
  shape = tuple(int(d) for d in shape)
  if config.jax_threefry_partitionable:
    k1, k2 = _key_words(key)
    c1, c2 = iota_2x32_shape(shape)
    b1, b2 = _hash_bcast(k1, k2, c1, c2)
    return _stack_last(b1, b2)
  num = math.prod(shape)
  kshape = tuple(key.shape[:-1])
  counts = lax.iota(_u32, num * 2)
  return lax.reshape(threefry_2x32(key, counts), (*kshape, *shape, 2))


def threefry_fold_in(key, data):
  """``fold_in``: hash the count pair ``(0, data)`` under the key (``data``: uint32
  scalar)."""
  return threefry_2x32(key, threefry_seed(data))


def threefry_random_bits(key, bit_width, shape):
  """``bit_width``-bit unsigned random bits of ``shape`` from raw keys ``(*K, 2)``."""
  if bit_width not in (8, 16, 32, 64):
    raise TypeError("requires 8-, 16-, 32- or 64-bit field width.")
  shape = tuple(int(d) for d in shape)
  if config.jax_threefry_partitionable:
    return _random_bits_partitionable(key, bit_width, shape)
  return _random_bits_original(key, bit_width, shape)


def _random_bits_partitionable(key, bit_width, shape):
  if math.prod(shape) > 2 ** 64:
    raise NotImplementedError("random bits array of size exceeding 2 ** 64")
  k1, k2 = _key_words(key)
  c1, c2 = iota_2x32_shape(shape)
  b1, b2 = _hash_bcast(k1, k2, c1, c2)
  dtype = UINT_DTYPES[bit_width]
  if bit_width == 64:
    hi = lax.convert_element_type(b1, dtype)
    lo = lax.convert_element_type(b2, dtype)
    return lax.bitwise_or(lax.shift_left(hi, np.array(32, dtype)), lo)
  x = lax.bitwise_xor(b1, b2)
  return x if bit_width == 32 else lax.convert_element_type(x, dtype)


def _random_bits_original(key, bit_width, shape):
  kshape = tuple(key.shape[:-1])
  nk = len(kshape)
  size = math.prod(shape)
  max_count, r = divmod(bit_width * size, 32)
  if r:
    max_count += 1
  word_max = int(np.iinfo(np.uint32).max)
  nblocks, rem = divmod(max_count, word_max)
  if not nblocks:
    bits = threefry_2x32(key, lax.iota(_u32, rem))
  else:  # more than 2**32 - 1 words: one subkey per block (as JAX)
    keys = threefry_split(key, (nblocks + 1,))
    sub = lax.slice_in_dim(keys, 0, nblocks, axis=nk)
    last = lax.index_in_dim(keys, nblocks, axis=nk, keepdims=False)
    blocks = threefry_2x32(sub, lax.iota(_u32, word_max))
    blocks = lax.reshape(blocks, (*kshape, nblocks * word_max))
    bits = lax.concatenate([blocks, threefry_2x32(last, lax.iota(_u32, rem))], nk)
  dtype = UINT_DTYPES[bit_width]
  if bit_width == 64:
    half = max_count // 2
    hi = lax.convert_element_type(lax.slice_in_dim(bits, 0, half, axis=nk), dtype)
    lo = lax.convert_element_type(lax.slice_in_dim(bits, half, 2 * half, axis=nk), dtype)
    bits = lax.bitwise_or(lax.shift_left(hi, np.array(32, dtype)), lo)
  elif bit_width in (8, 16):
    per = 32 // bit_width
    wide = (*kshape, max_count, per)
    b = lax.broadcast_in_dim(bits, wide, tuple(range(nk + 1)))
    shifts = lax.broadcasted_iota(_u32, wide, nk + 1)
    shifts = lax.mul(shifts, np.array(bit_width, _u32))
    b = lax.bitwise_and(lax.shift_right_logical(b, shifts),
                        np.array(np.iinfo(dtype).max, _u32))
    b = lax.reshape(b, (*kshape, max_count * per))
    bits = lax.slice_in_dim(lax.convert_element_type(b, dtype), 0, size, axis=nk)
  return lax.reshape(bits, (*kshape, *shape))


# --- PRNG implementations ----------------------------------------------------------------
class PRNGImpl(NamedTuple):
  """A PRNG implementation: functions on raw key data of trailing shape ``key_shape``."""
  key_shape: tuple
  seed: Callable
  split: Callable
  random_bits: Callable
  fold_in: Callable
  name: str = "<unnamed>"
  tag: str = "?"

  def __hash__(self):
    return hash(self.tag)

  def __eq__(self, other):
    return self is other

  def __ne__(self, other):
    return self is not other

  def __str__(self):
    return self.tag


threefry_prng_impl = PRNGImpl(
    key_shape=(2,), seed=threefry_seed, split=threefry_split,
    random_bits=threefry_random_bits, fold_in=threefry_fold_in,
    name="threefry2x32", tag="fry")

prngs = {threefry_prng_impl.name: threefry_prng_impl}


def register_prng(impl):
  if impl.name in prngs:
    raise ValueError(f"PRNG with name {impl.name} already registered: {impl}")
  prngs[impl.name] = impl
