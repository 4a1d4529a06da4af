"""Eager NumPy implementations of ``rng_uniform`` (a process-wide NumPy generator) and
``rng_bit_generator`` (XLA's Threefry-2x32 and Philox-4x32 bit generators, bit for bit:
the ``uint64[2]`` state is (key, counter); Threefry hashes ``counter + flat index`` over
half the elements and interleaves the two output words, Philox hashes ``counter + i``
for each block of four words -- the 128-bit counter being (counter, key) -- and
interleaves the four outputs)."""
from __future__ import annotations

import numpy as np

from pyjax._src.backends.cpu.eager.registry import register

_U32 = np.uint32
_U64 = np.uint64
_generator = np.random.default_rng()


@register("rng_uniform")
def _rng_uniform(a, b, *, shape):
  d = np.asarray(a).dtype
  if d.kind == "f" or d.kind == "V" or "float" in d.name:
    lo, hi = float(a), float(b)
    out = _generator.random(shape, dtype=np.float64) * (hi - lo) + lo
    out = np.asarray(out).astype(d)
    return np.where(out >= np.asarray(hi, d), np.asarray(lo, d), out) if hi > lo else out
  if d.kind == "b":
    return _generator.integers(int(a), max(int(b), int(a) + 1), size=shape).astype(d)
  lo, hi = int(a), int(b)
  if hi <= lo:
    return np.full(shape, lo, d)
  return _generator.integers(lo, hi, size=shape, dtype=np.int64 if d.kind == "i" else
                             np.uint64).astype(d)


# --- Threefry-2x32 ------------------------------------------------------------------------------
def _rotl(v, d):
  return (v << _U32(d)) | (v >> _U32(32 - d))


def _threefry2x32(x0, x1, k0, k1):
  rot = (13, 15, 26, 6, 17, 29, 16, 24)
  k2 = _U32(0x1BD11BDA) ^ k0 ^ k1
  ks = (k0, k1, k2)
  x0 = x0 + k0
  x1 = x1 + k1
  for i in range(5):
    r = rot[:4] if i % 2 == 0 else rot[4:]
    for d in r:
      x0 = x0 + x1
      x1 = _rotl(x1, d)
      x1 = x0 ^ x1
    x0 = x0 + ks[(i + 1) % 3]
    x1 = x1 + ks[(i + 2) % 3] + _U32(i + 1)
  return x0, x1


def _split_halves(shape):
  """(half shape, split dim) as XLA splits a shape for 32-bit Threefry output."""
  if not shape:
    return (1,), None
  split = next((i for i, d in enumerate(shape) if d % 2 == 0), None)
  if split is None:
    split = max(range(len(shape)), key=lambda i: (shape[i], -i))
  half = list(shape)
  half[split] = -(-shape[split] // 2)
  return tuple(half), split


def _threefry_bits(key, state, shape, bits64):
  k0, k1 = _U32(key & 0xFFFFFFFF), _U32(key >> 32)
  if bits64:
    n = int(np.prod(shape))
    ctr = (np.arange(n, dtype=_U64) + _U64(state)).reshape(shape)
    x0, x1 = _threefry2x32((ctr & _U64(0xFFFFFFFF)).astype(_U32), (ctr >> _U64(32)).astype(_U32),
                           k0, k1)
    return x0.astype(_U64) | (x1.astype(_U64) << _U64(32)), (state + n) & 0xFFFFFFFFFFFFFFFF
  half, split = _split_halves(shape)
  n = int(np.prod(half))
  ctr = (np.arange(n, dtype=_U64) + _U64(state)).reshape(half)
  x0, x1 = _threefry2x32((ctr & _U64(0xFFFFFFFF)).astype(_U32), (ctr >> _U64(32)).astype(_U32),
                         k0, k1)
  new_state = (state + n) & 0xFFFFFFFFFFFFFFFF
  if split is None:
    return x0.reshape(()), new_state
  out = np.stack([x0, x1], axis=split + 1)
  full = list(shape)
  full[split] = 2 * half[split]
  out = out.reshape(full)
  return out[tuple(slice(0, d) for d in shape)], new_state


# --- Philox-4x32 ---------------------------------------------------------------------------------
def _philox4x32(c0, c1, c2, c3, k0, k1):
  ma, mb = _U64(0xD2511F53), _U64(0xCD9E8D57)
  for _ in range(10):
    p0 = c0.astype(_U64) * ma
    p1 = c2.astype(_U64) * mb
    hi0, lo0 = (p0 >> _U64(32)).astype(_U32), p0.astype(_U32)
    hi1, lo1 = (p1 >> _U64(32)).astype(_U32), p1.astype(_U32)
    c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
    k0 = k0 + _U32(0x9E3779B9)
    k1 = k1 + _U32(0xBB67AE85)
  return c0, c1, c2, c3


def _philox_bits(key, ctr_lo, ctr_hi, shape, bits64):
  n = int(np.prod(shape))
  words = 2 * n if bits64 else n
  blocks = -(-words // 4)
  k0, k1 = _U32(key & 0xFFFFFFFF), _U32(key >> 32)
  i = np.arange(blocks, dtype=_U64)
  lo = i + _U64(ctr_lo)
  hi = np.full(blocks, ctr_hi, _U64) + (lo < _U64(ctr_lo)).astype(_U64)   # 128-bit carry
  m = _U64(0xFFFFFFFF)
  out = _philox4x32((lo & m).astype(_U32), (lo >> _U64(32)).astype(_U32),
                    (hi & m).astype(_U32), (hi >> _U64(32)).astype(_U32), k0, k1)
  new_lo = (ctr_lo + blocks) & 0xFFFFFFFFFFFFFFFF
  new_hi = (ctr_hi + (1 if new_lo < ctr_lo else 0)) & 0xFFFFFFFFFFFFFFFF
  if bits64:
    b0 = out[0].astype(_U64) | (out[1].astype(_U64) << _U64(32))
    b1 = out[2].astype(_U64) | (out[3].astype(_U64) << _U64(32))
    flat = np.stack([b0, b1], axis=1).reshape(-1)[:n]
  else:
    flat = np.stack(out, axis=1).reshape(-1)[:n]
  return flat.reshape(shape), new_lo, new_hi


@register("rng_bit_generator")
def _rng_bit_generator(key, *, shape, dtype, algorithm, out_sharding=None):
  with np.errstate(over="ignore"):   # uint32 arithmetic wraps, as intended
    return _rng_bits(key, shape, dtype, algorithm)


def _rng_bits(key, shape, dtype, algorithm):
  key = np.asarray(key)
  if key.dtype == np.uint32:
    words = [int(w) for w in key]
    k64 = words[0] | (words[1] << 32)
    s64 = words[2] | (words[3] << 32)
  else:
    k64, s64 = int(key[0]), int(key[1])
  dtype = np.dtype(dtype)
  bits64 = dtype.itemsize == 8
  if int(algorithm) == 1:   # Threefry
    bits, new_s = _threefry_bits(k64, s64, tuple(shape), bits64)
  else:                     # Philox (also the CPU default): the 128-bit counter is
    # (state, key) -- the key word is also the counter's high half, and carries into it.
    # The returned key keeps the key word (only the low counter word advances).
    bits, new_s, _ = _philox_bits(k64, s64, k64, tuple(shape), bits64)
  bits = np.asarray(bits).astype(dtype)   # narrower types keep the low bits
  if key.dtype == np.uint32:
    new_key = np.array([k64 & 0xFFFFFFFF, k64 >> 32, new_s & 0xFFFFFFFF, new_s >> 32],
                       np.uint32)
  else:
    new_key = np.array([k64, new_s], np.uint64)
  return [new_key, bits]
