"""Eager NumPy implementations of the PRNG primitives.

* ``threefry2x32(k1, k2, x1, x2)``: the Threefry-2x32 block cipher (20 rounds, Salmon et
  al. 2011) applied elementwise to broadcast ``uint32`` operands; two ``uint32`` results.
  Unsigned 32-bit wraparound arithmetic is exactly XLA's, so the bits are JAX's.
* ``iota_2x32_shape(shape=...)``: the row-major flat index of every element of ``shape``
  as a 64-bit count split into (high, low) ``uint32`` halves.
"""
from __future__ import annotations

import math

import numpy as np

from pyjax._src.backends.cpu.eager.registry import register

_U32 = np.dtype(np.uint32)
_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_PARITY = np.uint32(0x1BD11BDA)


@register("threefry2x32")
def _threefry2x32(k1, k2, x1, x2):
  shape = np.broadcast_shapes(k1.shape, k2.shape, x1.shape, x2.shape)
  k1 = np.asarray(k1, _U32)
  k2 = np.asarray(k2, _U32)
  ks = (k1, k2, k1 ^ k2 ^ _PARITY)
  # x0/x1 are fresh full-shape buffers, updated in place below
  a = np.empty(shape, _U32)
  b = np.empty(shape, _U32)
  np.add(x1, k1, out=a, dtype=_U32, casting="unsafe")
  np.add(x2, k2, out=b, dtype=_U32, casting="unsafe")
  tmp = np.empty(shape, _U32)
  for i in range(5):
    for r in _ROTATIONS[i % 2]:
      a += b
      np.left_shift(b, np.uint32(r), out=tmp)
      b >>= np.uint32(32 - r)
      b |= tmp
      b ^= a
    a += ks[(i + 1) % 3]
    b += ks[(i + 2) % 3]
    b += np.uint32(i + 1)
  return [a, b]


@register("iota_2x32_shape")
def _iota_2x32_shape(*, shape):
  n = math.prod(shape)
  counts = np.arange(n, dtype=np.uint64).reshape(shape)
  return [np.asarray(counts >> np.uint64(32), _U32), np.asarray(counts, _U32)]


# --- fma: a * b + c with one rounding (what XLA's CPU compiler emits for a fused
# multiply followed by an add in float32/float64) -------------------------------------------
_F64 = np.dtype(np.float64)
_SPLITTER = 134217729.0  # 2**27 + 1 (Veltkamp)


def _two_sum(a, b):
  s = a + b
  bb = s - a
  return s, (a - (s - bb)) + (b - bb)


def _two_prod(a, b):
  p = a * b
  c = _SPLITTER * a
  ah = c - (c - a)
  al = a - ah
  c = _SPLITTER * b
  bh = c - (c - b)
  bl = b - bh
  return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def _add_round_to_odd(x, y):
  """x + y rounded to odd (float64): the nearest result, moved one ulp toward the exact
  sum when it is inexact and its last bit is even."""
  s, e = _two_sum(x, y)
  even = (s.view(np.int64) & 1) == 0
  fix = (e != 0) & even & np.isfinite(s)
  if fix.any():
    s = np.where(fix, np.nextafter(s, np.where(e > 0, np.inf, -np.inf)), s)
  return s


@register("fma")
def _fma(a, b, c):
  dtype = np.result_type(a, b, c)
  a64, b64, c64 = (np.asarray(x, _F64) for x in (a, b, c))
  a64, b64, c64 = np.broadcast_arrays(a64, b64, c64)
  naive = a64 * b64 + c64
  if dtype.itemsize <= 4 and dtype.kind == "f":
    # float32 (and smaller): the product is exact in float64; the sum rounded to odd in
    # float64 then to float32 is the correctly rounded result (53 >= 24 + 2 bits)
    out = _add_round_to_odd(a64 * b64, c64)
    out = np.where(np.isfinite(out), out, naive)
    return np.asarray(out, dtype)
  # float64: Boldo & Melquiond's emulation (error-free product and sum, round-to-odd)
  uh, ul = _two_prod(a64, b64)
  th, tl = _two_sum(c64, uh)
  out = th + _add_round_to_odd(tl, ul)
  mag = np.abs(uh)
  safe = (np.isfinite(out) & (mag < 1e290) & ((mag > 1e-280) | (uh == 0))
          & (np.abs(a64) < 1e290) & (np.abs(b64) < 1e290))
  return np.asarray(np.where(safe, out, naive), dtype)
