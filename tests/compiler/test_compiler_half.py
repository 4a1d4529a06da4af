"""float16 in the generated C (``elementwise._FLOAT_HELPERS``): ``pj_h2f``/``pj_f2h`` convert by
integer operations and selects (so half kernels vectorize; GCC does not vectorize
``_Float16`` conversions) and ``pj_rh`` rounds a float to half precision without
converting.  Built directly and swept over bit patterns against NumPy's conversions (a NaN
comes out quiet with the top of its payload, as x86's conversion instructions and XLA do);
``pj_rh`` is bit for bit ``pj_h2f(pj_f2h(x))``."""
from __future__ import annotations

import ctypes
import os
import tempfile

import numpy as np
import pytest

import pyjax.numpy as jnp
from pyjax._src.backends.cpu.compiler.native import build
from pyjax._src.backends.cpu.compiler.kernels import elementwise
from test_compiler import native, numpy_path

pytestmark = [
    pytest.mark.skipif(build.toolchain() is None, reason="no C compiler"),
    pytest.mark.filterwarnings("ignore:(overflow|invalid value):RuntimeWarning"),
]

_LOOPS = r"""
void t_h2f(const uint16_t *x, float *o, long n) {
  #pragma omp simd
  for (long i = 0; i < n; i++) o[i] = pj_h2f(x[i]); }
void t_f2h(const float *x, uint16_t *o, long n) {
  #pragma omp simd
  for (long i = 0; i < n; i++) o[i] = pj_f2h(x[i]); }
void t_rh(const float *x, float *o, long n) {
  #pragma omp simd
  for (long i = 0; i < n; i++) o[i] = pj_rh(x[i]); }
void t_rt(const float *x, float *o, long n) {
  for (long i = 0; i < n; i++) o[i] = pj_h2f(pj_f2h(x[i])); }
"""


@pytest.fixture(scope="module")
def lib():
  tc = build.toolchain()
  with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "half.so")
    tc.compile(elementwise.prelude(tc.float16, mvec=False) + _LOOPS, path)
    so = ctypes.CDLL(path)

  def run(name, x, out_dtype):
    x = np.ascontiguousarray(x)
    o = np.empty(x.shape, out_dtype)
    getattr(so, f"t_{name}")(x.ctypes.data_as(ctypes.c_void_p), o.ctypes.data_as(ctypes.c_void_p),
                             ctypes.c_long(x.size))
    return o
  return run


def _quiet_f2h(u):
  """NumPy's float32 -> float16 bits, a NaN quieted (0x7E00 | top of the payload)."""
  x = u.view(np.float32)
  with np.errstate(all="ignore"):
    h = x.astype(np.float16).view(np.uint16)
  a = u & 0x7FFFFFFF
  return np.where(a > 0x7F800000, ((u >> 16) & 0x8000) | 0x7E00 | ((a >> 13) & 0x3FF),
                  h).astype(np.uint16)


def _patterns(stride, start):
  return (np.arange(start, 1 << 32, stride, dtype=np.uint64)).astype(np.uint32)


def test_h2f_every_half(lib):
  h = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
  got = lib("h2f", h, np.float32).view(np.uint32)
  want = h.view(np.float16).astype(np.float32).view(np.uint32)
  nan = ((h & 0x7C00) == 0x7C00) & ((h & 0x3FF) != 0)
  np.testing.assert_array_equal(got, np.where(nan, want | 0x00400000, want))


def _check_f2h_rh(lib, u):
  np.testing.assert_array_equal(lib("f2h", u.view(np.float32), np.uint16), _quiet_f2h(u))
  np.testing.assert_array_equal(lib("rh", u.view(np.float32), np.float32).view(np.uint32),
                                lib("rt", u.view(np.float32), np.float32).view(np.uint32))


def test_f2h_and_rh_every_4099th_float(lib):
  """~1M float32 patterns (every exponent, both signs, NaN payloads) plus the edges: the
  largest half, the rounding boundary to infinity, the smallest normal and subnormal."""
  edges = np.array([0x477FE000, 0x477FEFFF, 0x477FF000, 0x477FF001, 0x47800000, 0x38800000,
                    0x387FFFFF, 0x387FF000, 0x33800000, 0x33000000, 0x33000001, 0x32FFFFFF,
                    0x7F800000, 0x7F800001, 0x7FC00000, 0x7FBFFFFF, 0, 0x80000000],
                   np.uint32)
  edges = np.concatenate([edges, edges | 0x80000000])
  _check_f2h_rh(lib, np.concatenate([_patterns(4099, 0), edges]))


_EVERY_FLOAT = r"""
long t_every(void) {   /* mismatches over all 2^32 float32 patterns */
  long bad = 0;
  for (uint64_t i = 0; i < (1ull << 32); i++) {
    const uint32_t u = (uint32_t)i; float f; memcpy(&f, &u, 4);
    _Float16 hf = (_Float16)f; uint16_t want; memcpy(&want, &hf, 2);
    if (f != f) want = (uint16_t)(((u >> 16) & 0x8000u) | 0x7E00u | ((u >> 13) & 0x3FFu));
    const float r = pj_rh(f), t = pj_h2f(pj_f2h(f));
    bad += pj_f2h(f) != want;
    bad += memcmp(&r, &t, 4) != 0;
  }
  return bad; }
"""


@pytest.mark.slow
def test_f2h_and_rh_every_float_slow():
  """Every float32 pattern: ``pj_f2h`` against the compiler's own ``_Float16`` conversion
  (a NaN quieted), ``pj_rh`` against the round trip (~15 s in C)."""
  tc = build.toolchain()
  if not tc.float16:
    pytest.skip("no _Float16 in this C compiler")
  with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "every.so")
    tc.compile(elementwise.prelude(True, mvec=False) + _EVERY_FLOAT, path)
    fn = ctypes.CDLL(path).t_every
    fn.restype = ctypes.c_long
    assert fn() == 0


def test_half_kernels_equal_numpy_tier():
  """float16 arithmetic chains (rounded after every operation, as JAX does) natively: equal
  to the NumPy tier, specials included."""
  x = np.random.default_rng(3).standard_normal(50_000).astype(np.float16) * 300
  x[:8] = [np.inf, -np.inf, np.nan, 0.0, -0.0, 65504, 6e-8, -6e-5]

  def f(x):
    return x * np.float16(1.1) + np.float16(0.3), jnp.tanh(x) * x, (x * x).astype(jnp.float32)
  got, exe = native(f, x)
  for g, w in zip(got, numpy_path(f, x)):
    g, w = np.asarray(g), np.asarray(w)
    assert g.dtype == w.dtype
    np.testing.assert_array_equal(g, w)
  jax = pytest.importorskip("jax")
  ref = np.asarray(jax.jit(lambda x: x * np.float16(1.1) + np.float16(0.3))(x))
  np.testing.assert_array_equal(np.asarray(got[0]), ref)
