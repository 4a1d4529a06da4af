"""Low-level random number primitives: ``rng_uniform`` (stateful) and
``rng_bit_generator`` (stateless, XLA's RngBitGenerator), with ``RandomAlgorithm``.

``rng_bit_generator(key, shape, dtype, algorithm)`` takes a ``uint32[4]`` key (or
``uint64[2]``, read as two 64-bit words: the Threefry/Philox key and the counter) and
returns ``(new_key, bits)``; the CPU implementation reproduces XLA's bit generators
(``RNG_DEFAULT`` is Philox on CPU), so bits match JAX's.  Under ``vmap`` it follows
JAX's rule: all bits come from the first key of the batch.

``rng_uniform(a, b, shape)`` draws from a process-wide NumPy generator: fresh values on
every call (as XLA's stateful RNG), not reproducible across runs -- use
``jax.random`` for reproducible streams.
"""
from __future__ import annotations

import enum

import numpy as np

from pyjax._src import core, dtypes
from pyjax._src.avals import ShapedArray
from pyjax._src.interpreters import batching
from pyjax._src.lax.utils import canonicalize_shape

__all__ = ["RandomAlgorithm", "rng_bit_generator", "rng_bit_generator_p", "rng_uniform",
           "rng_uniform_p"]


class RandomAlgorithm(enum.IntEnum):
  """Which PRNG algorithm ``rng_bit_generator`` uses."""
  RNG_DEFAULT = 0     # the platform's default (Philox on CPU)
  RNG_THREE_FRY = 1   # Threefry-2x32
  RNG_PHILOX = 2      # Philox-4x32

  def __str__(self):
    return self.name


# --- rng_uniform ---------------------------------------------------------------------------
rng_uniform_p = core.Primitive("rng_uniform")


@rng_uniform_p.def_abstract_eval
def _rng_uniform_abstract(a, b, *, shape):
  if a.dtype != b.dtype:
    raise ValueError("Arguments to rng_uniform must have identical dtypes, got "
                     f"{a.dtype.name} and {b.dtype.name}.")
  if a.shape != () or b.shape != ():
    raise ValueError("Arguments to rng_uniform must be scalars; got shapes "
                     f"{a.shape} and {b.shape}.")
  return ShapedArray(tuple(shape), a.dtype, a.weak_type and b.weak_type)


def rng_uniform(a, b, shape):
  """Stateful uniform random numbers in ``[a, b)`` (scalars of one dtype).  Experimental
  in JAX and discouraged: prefer ``jax.random``."""
  return rng_uniform_p.bind(a, b, shape=canonicalize_shape(shape))


def _rng_uniform_batch(args, dims, *, shape):
  # Per-example bounds: scale draws on [0, 1) (floats) or pick integers by flooring them.
  a, b = args
  size = next(core.get_aval(x).shape[d] for x, d in zip(args, dims) if d is not None)
  a = batching.bdim_at_front(a, dims[0], size)
  b = batching.bdim_at_front(b, dims[1], size)
  from pyjax._src.lax import elementwise as ew
  from pyjax._src.lax import shapes
  d = core.get_aval(a).dtype
  out_shape = (size,) + tuple(shape)
  bdims = (0,)
  a = shapes.broadcast_in_dim(a, out_shape, bdims)
  b = shapes.broadcast_in_dim(b, out_shape, bdims)
  fd = d if dtypes.is_float(d) else np.dtype(np.float64 if d.itemsize > 4 and
                                             dtypes.canonicalize_dtype(np.float64) ==
                                             np.float64 else np.float32)
  u = rng_uniform_p.bind(np.array(0, fd), np.array(1, fd), shape=out_shape)
  if dtypes.is_float(d):
    return ew.add(a, ew.mul(u, ew.sub(b, a))), 0
  span = ew.convert_element_type(ew.sub(b, a), fd)
  off = ew.convert_element_type(ew.floor(ew.mul(u, span)), d)
  return ew.add(a, off), 0


batching.primitive_batchers[rng_uniform_p] = _rng_uniform_batch


# --- rng_bit_generator -------------------------------------------------------------------------
rng_bit_generator_p = core.Primitive("rng_bit_generator")
rng_bit_generator_p.multiple_results = True

_BIT_DTYPES = tuple(np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64))


@rng_bit_generator_p.def_abstract_eval
def _rng_bit_generator_abstract(key, *, shape, dtype, algorithm, out_sharding):
  if not ((key.shape == (4,) and key.dtype == np.uint32)
          or (key.shape == (2,) and key.dtype == np.uint64)):
    raise TypeError("rng_bit_generator: the key must be a uint32[4] (or uint64[2]) array, "
                    f"got {key.str_short(short_dtypes=False)}")
  return [key, ShapedArray(tuple(shape), dtype, False)]


def rng_bit_generator(key, shape, dtype=np.uint32, algorithm=RandomAlgorithm.RNG_DEFAULT, *,
                      out_sharding=None):
  """Stateless random bits of ``shape`` and unsigned ``dtype`` from ``key``: returns
  ``(new_key, bits)``.  Bit-exact with XLA's RngBitGenerator on CPU; ``out_sharding`` lays
  the bits out over its devices."""
  shape = canonicalize_shape(shape)
  d = dtypes.check_user_dtype(dtype, "rng_bit_generator")
  if d not in _BIT_DTYPES:
    raise TypeError(f"rng_bit_generator: unsupported dtype {d.name}")
  if out_sharding is not None:   # the bits laid out over the sharding's devices
    from pyjax._src.out_sharding import check_out_sharding, lay_out
    sharding = check_out_sharding(out_sharding, "rng_bit_generator")
    new_key, bits = rng_bit_generator(key, shape, d, algorithm)
    return new_key, lay_out(bits, sharding, "rng_bit_generator")
  return tuple(rng_bit_generator_p.bind(key, shape=shape, dtype=d,
                                        algorithm=RandomAlgorithm(algorithm),
                                        out_sharding=None))


def _rng_bit_generator_batch(args, dims, *, shape, dtype, algorithm, out_sharding):
  keys, = args
  d, = dims
  keys = batching.moveaxis(keys, d, 0)
  n = core.get_aval(keys).shape[0]
  from pyjax._src.lax import shapes
  key = shapes.squeeze(shapes.slice_in_dim(keys, 0, 1), (0,))
  new_key, bits = rng_bit_generator_p.bind(key, shape=(n,) + tuple(shape), dtype=dtype,
                                           algorithm=algorithm, out_sharding=out_sharding)
  new_keys = shapes.dynamic_update_index_in_dim(keys, new_key, 0, 0)
  return [new_keys, bits], [0, 0]


batching.primitive_batchers[rng_bit_generator_p] = _rng_bit_generator_batch
