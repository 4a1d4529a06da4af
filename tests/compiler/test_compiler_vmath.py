"""The generated C's own vector math (pyjax/_src/backends/cpu/compiler/kernels/vmath.py): exp, exp2,
expm1, tanh, logistic, log, log1p (float32 and float64) and erf, erfc, sin, cos, tan, pow,
sinh, cosh, atanh (float32) inlined into SIMD loops.

Native results against correctly rounded references (float32: NumPy's float64 result
rounded to float32; float64: ``np.longdouble``), dense bit-pattern sweeps, every special
value, the half types (computed in float32, rounded once: 1 ulp), and real JAX.  The C
functions are also built directly (``elementwise.prelude(mvec=False)``, the set used without
glibc's libmvec) and swept there, float64 included.
"""
from __future__ import annotations

import ctypes
import os
import tempfile

import numpy as np
import pytest
import scipy.special as sp

from pyjax import lax
from pyjax._src.backends.cpu.compiler.native import build
from pyjax._src.backends.cpu.compiler.kernels import elementwise
from pyjax._src.backends.cpu.compiler.kernels import vmath
from test_compiler import F16, F32, F64, BF16, _ordered, assert_close, leaves, native, x64_if

pytestmark = [
    pytest.mark.skipif(build.toolchain() is None, reason="no C compiler"),
    pytest.mark.filterwarnings("ignore:(overflow|invalid value|divide by zero|underflow):RuntimeWarning"),
    pytest.mark.filterwarnings("error:pyjax:RuntimeWarning"),
]

NAMES = ["exp", "exp2", "expm1", "tanh", "logistic", "log", "log1p"]
# float32 only (float64: glibc's scalar functions)
NAMES32 = ["erf", "erfc", "sin", "cos", "tan", "sinh", "cosh", "atanh"]
_EXP_MAX = {F32: 88.72283172607421875, F64: 709.782712893383973096}   # largest finite exp


def _reference(name, x, dt):
  """The correctly rounded ``name(x)`` in ``dt`` (float32/float64), computed in a wider type."""
  w = np.longdouble if dt == F64 else np.float64
  xw = np.asarray(x).astype(w)
  with np.errstate(all="ignore"):
    if name == "logistic":
      # 1 / (1 + exp(-x)) as JAX defines it (and NumPy's expit computes it): 0 where exp(-x)
      # overflows, the true (possibly subnormal) value above that
      r = (np.where(xw < 0, np.exp(xw), 1) / (1 + np.exp(-np.abs(xw))))
      r = np.where(xw < -_EXP_MAX[dt], 0, r)
    elif name in ("erf", "erfc"):
      r = getattr(sp, name)(xw)
    elif name == "atanh":
      r = np.arctanh(xw)
    else:
      r = getattr(np, name)(xw)
  return r.astype(dt)


def _ulp_bound(name, dt):
  """Our own functions: 2 ulp (erf, sin, cos, tan: 1); libmvec's (when it is the faster one):
  the 4 of test_compiler."""
  if not build.toolchain().mvec:
    return 1 if name in NAMES32 + ["pow"] else 2
  if dt == F64 and name == "logistic":
    return 4     # 1 / (1 + exp(-x)) around libmvec's exp
  return 2 if vmath.function(name, dt != F64).startswith("pj_") else 4


def _ulps(got, want):
  return np.abs(_ordered(got) - _ordered(want))


def _check(name, x, got, want, ulps):
  got, want = np.asarray(got), np.asarray(want)
  gn, wn = np.isnan(got), np.isnan(want)
  assert np.array_equal(gn, wn), (name, x[gn != wn][:8], got[gn != wn][:8], want[gn != wn][:8])
  d = _ulps(got[~gn], want[~wn])
  bad = d > ulps
  assert not bad.any(), (name, d.max(), x[~gn][bad][:8], got[~gn][bad][:8], want[~wn][bad][:8])


# The slow sweeps take every 17th float32 bit pattern (every residue class of the low
# mantissa bits is hit); PYJAX_VMATH_EXHAUSTIVE=1 makes them take every pattern (~30 min).
_SLOW_STRIDE = 1 if os.environ.get("PYJAX_VMATH_EXHAUSTIVE") == "1" else 17


def _f32_patterns(stride, lo=0, hi=1 << 32):
  return np.arange(lo, hi, stride, dtype=np.uint64).astype(np.uint32).view(np.float32)


def _fns(x):
  return [getattr(lax, n)(x) for n in NAMES]


# --- through jit ------------------------------------------------------------------------------
def test_uses_inline_vector_math():
  x = np.linspace(-3, 3, 64).astype(np.float32)
  _, exe = native(_fns, x)
  text = exe.as_text()
  for name in ("pj_expf", "pj_exp2f", "pj_expm1f", "pj_tanhf", "pj_logisticf", "pj_log1pf"):
    assert f"{name}(" in text.split("pyjax vector math")[-1], name


def test_float32_sweep_every_1000th_bit_pattern():
  x = _f32_patterns(1000)
  got, _ = native(_fns, x)
  for n, g in zip(NAMES, leaves(got)):
    _check(n, x, g, _reference(n, x, F32), _ulp_bound(n, F32))


@pytest.mark.slow
def test_float32_sweep_slow():
  """Every 17th float32 bit pattern (every one with PYJAX_VMATH_EXHAUSTIVE=1), in chunks
  of 2^24 patterns (one compiled executable)."""
  chunk = 1 << 24
  for lo in range(0, 1 << 32, chunk):
    x = _f32_patterns(_SLOW_STRIDE, lo, lo + chunk)
    got, _ = native(_fns, x)
    for n, g in zip(NAMES, leaves(got)):
      _check(n, x, g, _reference(n, x, F32), _ulp_bound(n, F32))


def test_float32_erf_trig_hyperbolic_through_jit():
  """Every 1000th float32 bit pattern and the special values: within 1 ulp, specials exact
  (sin(+-inf) = NaN, the sign of zero kept, erf(+-inf) = +-1, atanh(+-1) = +-inf, sinh and
  cosh overflowing where float does), huge arguments reduced exactly."""
  x = np.concatenate([_f32_patterns(1000), _special_inputs(F32),
                      np.array([1e22, -1e22, 16331.239, 3.4e38, np.pi / 2, 0.875, 3.92, 0.45, 10.06,
                               89.4, 89.42, -89.42], F32)])
  got, exe = native(lambda x: [getattr(lax, n)(x) for n in NAMES32], x)
  if not build.toolchain().mvec:
    text = exe.as_text()
    for n in NAMES32:   # the kernel calls kernels/vmath.py's function (the macro naming it)
      assert f"#define PJ_F_{n.upper()} pj_{n}f" in text and f"PJ_F_{n.upper()}(" in text, n
  for n, g in zip(NAMES32, leaves(got)):
    want = _reference(n, x, F32)
    _check(n, x, g, want, _ulp_bound(n, F32))
    exact = ~np.isfinite(want) | (want == 0) | (np.abs(want) == 1) | ~np.isfinite(x)
    gi, wi = np.asarray(g)[exact], want[exact]
    ok = (np.isnan(gi) & np.isnan(wi)) | ((gi == wi) & (np.signbit(gi) == np.signbit(wi)))
    assert ok.all(), (n, x[exact][~ok], gi[~ok], wi[~ok])


def test_float32_pow_through_jit():
  """kernels/vmath.py's float32 pow: within 1 ulp of the correctly rounded result, and C99's (NumPy's)
  special cases bit for bit over every pair of special values (signed zeros, +-1, +-inf, NaN,
  odd/even/non-integer exponents, subnormals, 2^24 +- 1)."""
  sv = np.array([0, -0.0, 1, -1, 2, -2, 0.5, -0.5, 3, -3, 2.5, -2.5, np.inf, -np.inf, np.nan,
                 1e-45, -1e-45, 3.4e38, 16777216, 16777217, 8388609, 1e10, -7], F32)
  a, b = (v.ravel() for v in np.meshgrid(sv, sv))
  rng = np.random.default_rng(4)
  n = 100_000
  a = np.concatenate([a, rng.uniform(-10, 10, n), np.abs(rng.standard_normal(n)) * 100,
                      _f32_patterns(1 << 15)[:n]]).astype(F32)
  b = np.concatenate([b, np.round(rng.uniform(-10, 10, n)), rng.uniform(-40, 40, n),
                      rng.permutation(_f32_patterns(1 << 15)[:n])]).astype(F32)
  got = np.asarray(native(lax.pow, a, b)[0])
  with np.errstate(all="ignore"):
    want = np.power(a.astype(np.float64), b.astype(np.float64)).astype(F32)
  _check("pow", a, got, want, _ulp_bound("pow", F32))
  k = len(sv) ** 2
  np.testing.assert_array_equal(got[:k].view(np.uint32)[~np.isnan(want[:k])],
                                want[:k].view(np.uint32)[~np.isnan(want[:k])])


def _f64_inputs(n=200_000, seed=0):
  rng = np.random.default_rng(seed)
  bits = rng.integers(0, 1 << 64, n, dtype=np.uint64, endpoint=False).view(np.float64)
  return np.concatenate([bits, rng.uniform(-750, 750, n), rng.uniform(-4, 4, n),
                         rng.uniform(-1e-3, 1e-3, n // 4), np.exp(rng.uniform(-745, 709, n // 4))])


def test_float64_sweep():
  x = _f64_inputs()
  with x64_if([F64]):
    got, _ = native(_fns, x)
  for n, g in zip(NAMES, leaves(got)):
    _check(n, x, g, _reference(n, x, F64), _ulp_bound(n, F64))


@pytest.mark.parametrize("dt", [F16, BF16], ids=lambda d: d.name)
def test_half_types_every_bit_pattern(dt):
  """Computed in float32 and rounded once: within 1 ulp of the correctly rounded result."""
  x = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(dt)
  got, _ = native(_fns, x)
  x32 = x.astype(np.float32)
  for n, g in zip(NAMES, leaves(got)):
    want = _reference(n, x32, F32).astype(dt)   # float64 -> float32 -> half: no double-rounding
    _check(n, x32, g, want, 1)                   # issue at half precision's ulp of 1


def _special_inputs(dt):
  fi = np.finfo(dt)
  tiny = fi.smallest_subnormal
  big = float(fi.max)
  e = _EXP_MAX[dt]
  vals = [0.0, -0.0, np.inf, -np.inf, np.nan, tiny, -tiny, float(fi.tiny), -float(fi.tiny), big,
          -big, 1.0, -1.0, 0.5, e, -e, 2.0 * e, -2.0 * e, 1e-30, -1e-30, 20.0, -20.0, 9.5, -9.5]
  x = np.array(vals, dt)
  # around the overflow / underflow thresholds of exp, exp2 and expm1, and logistic's cut-off
  edges = [np.nextafter(dt.type(e), dt.type(np.inf)), np.nextafter(dt.type(-e), dt.type(-np.inf))]
  lim = -103.972077 if dt == F32 else -745.13321910194122   # exp(x) = smallest subnormal / 2
  around = np.concatenate([np.linspace(lim - 0.5, lim + 2, 41), np.linspace(127, 129, 9),
                           np.linspace(-151, -148, 13), np.linspace(1023, 1025, 9),
                           np.linspace(-1076, -1073, 13)]).astype(dt)
  return np.concatenate([x, np.array(edges, dt), around])


@pytest.mark.parametrize("dt", [F32, F64], ids=lambda d: d.name)
def test_special_values(dt):
  x = _special_inputs(dt)
  with x64_if([dt]):
    got, _ = native(_fns, x)
  for n, g in zip(NAMES, leaves(got)):
    want = _reference(n, x, dt)
    _check(n, x, g, want, _ulp_bound(n, dt))
    # exact: NaN in -> NaN out, the sign of a zero result, infinities, 0 and +-1
    exact = ~np.isfinite(want) | (want == 0) | (np.abs(want) == 1)
    gi = np.asarray(g)[exact]
    wi = want[exact]
    assert np.array_equal(np.isnan(gi), np.isnan(wi)), n
    ok = np.isnan(wi) | ((gi == wi) & (np.signbit(gi) == np.signbit(wi)))
    assert ok.all(), (n, x[exact][~ok], gi[~ok], wi[~ok])


def test_exact_identities():
  x = np.array([0.0, -0.0, 1.0, 2.0, -3.0, 10.0], np.float32)
  f = lambda x: [lax.exp(x), lax.exp2(x), lax.expm1(x), lax.tanh(x), lax.logistic(x)]  # noqa: E731
  got = leaves(native(f, x)[0])
  np.testing.assert_array_equal(got[0][:2], [1, 1])
  np.testing.assert_array_equal(got[1], np.exp2(x))             # exp2 of integers: exact
  assert np.signbit(got[2][1]) and got[2][1] == 0                # expm1(-0) = -0
  assert np.signbit(got[3][1]) and got[3][1] == 0                # tanh(-0) = -0
  np.testing.assert_array_equal(got[4][:2], [0.5, 0.5])


@pytest.mark.parametrize("dt", [F32, F64], ids=lambda d: d.name)
def test_match_jax(jax, dt):
  """JAX (XLA) within the tolerances of test_compiler.test_transcendentals_match_jax (XLA
  flushes subnormal results to zero: normal ranges only)."""
  x = np.linspace(-20, 20, 4001).astype(dt)
  pos = np.exp(np.linspace(-40, 40, 4001)).astype(dt)
  f = lambda lx: lambda x, p: [lx.exp(x), lx.exp2(x), lx.expm1(x), lx.tanh(x),  # noqa: E731
                               lx.logistic(x), lx.log(p), lx.log1p(p)]
  with x64_if([dt]):
    if dt == F64:
      jax.config.update("jax_enable_x64", True)
    try:
      got, _ = native(f(lax), x, pos)
      ref = jax.jit(f(jax.lax))(x, pos)
    finally:
      if dt == F64:
        jax.config.update("jax_enable_x64", False)
  for n, g, w in zip(NAMES, leaves(got), leaves(ref)):
    np.testing.assert_allclose(g, np.asarray(w), rtol=2e-6 if dt == F32 else 1e-13,
                               atol=1e-6 if dt == F32 else 1e-14, err_msg=n)


def test_logistic_matches_numpy_expit_saturation():
  """logistic is 0 exactly where 1 / (1 + exp(-x)) overflows, as the NumPy tier (expit) is."""
  x = np.concatenate([np.linspace(-100, -80, 2001), np.linspace(80, 100, 201)]).astype(np.float32)
  got = np.asarray(native(lax.logistic, x)[0])
  want = sp.expit(x)
  assert_close(got, want, 4)
  np.testing.assert_array_equal(got == 0, want == 0)


# --- the C functions directly, without libmvec ------------------------------------------------
_DIRECT = r"""
#define PJ_LOOP(NAME, T, F) \
  void NAME(const T *restrict x, T *restrict o, long n) { \
    _Pragma("omp simd") for (long i = 0; i < n; i++) o[i] = F(x[i]); }
PJ_LOOP(t_expf, float, pj_expf) PJ_LOOP(t_exp2f, float, pj_exp2f)
PJ_LOOP(t_expm1f, float, pj_expm1f) PJ_LOOP(t_tanhf, float, pj_tanhf)
PJ_LOOP(t_logisticf, float, pj_logisticf) PJ_LOOP(t_logf, float, pj_logf)
PJ_LOOP(t_log1pf, float, pj_log1pf) PJ_LOOP(t_erff, float, pj_erff)
PJ_LOOP(t_sinf, float, pj_sinf) PJ_LOOP(t_cosf, float, pj_cosf) PJ_LOOP(t_tanf, float, pj_tanf)
PJ_LOOP(t_erfcf, float, pj_erfcf) PJ_LOOP(t_sinhf, float, pj_sinhf)
PJ_LOOP(t_coshf, float, pj_coshf) PJ_LOOP(t_atanhf, float, pj_atanhf)
PJ_LOOP(t_exp, double, pj_exp) PJ_LOOP(t_exp2, double, pj_exp2)
PJ_LOOP(t_expm1, double, pj_expm1) PJ_LOOP(t_tanh, double, pj_tanh)
PJ_LOOP(t_logistic, double, pj_logistic) PJ_LOOP(t_log, double, pj_log)
PJ_LOOP(t_log1p, double, pj_log1p)
PJ_LOOP(t_sin_sf, float, pj_sinf_s) PJ_LOOP(t_cos_sf, float, pj_cosf_s)
PJ_LOOP(t_tan_sf, float, pj_tanf_s)
"""


@pytest.fixture(scope="module")
def direct():
  """A shared library of one SIMD loop per function, built from the no-libmvec prelude."""
  tc = build.toolchain()
  src = elementwise.prelude(tc.float16, mvec=False) + _DIRECT
  with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "vmath_direct.so")
    tc.compile(src, path)
    lib = ctypes.CDLL(path)

  def run(name, x):
    x = np.ascontiguousarray(x)
    o = np.empty_like(x)
    fn = getattr(lib, f"t_{name}{'f' if x.dtype == F32 else ''}")
    fn(x.ctypes.data_as(ctypes.c_void_p), o.ctypes.data_as(ctypes.c_void_p), ctypes.c_long(x.size))
    return o
  return run


@pytest.mark.parametrize("name", NAMES + NAMES32)
def test_direct_float32_every_997th_bit_pattern(direct, name):
  x = _f32_patterns(997)     # (every pattern: -m slow with PYJAX_VMATH_EXHAUSTIVE=1)
  _check(name, x, direct(name, x), _reference(name, x, F32), 1 if name in NAMES32 else 2)


@pytest.mark.parametrize("name", NAMES)
def test_direct_float64(direct, name):
  x = np.concatenate([_f64_inputs(100_000, seed=1), _special_inputs(F64)])
  _check(name, x, direct(name, x), _reference(name, x, F64), 2)


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES + NAMES32)
def test_direct_float32_sweep_slow(direct, name):
  # NAMES32: every 331st pattern (CI time; every one with PYJAX_VMATH_EXHAUSTIVE=1)
  stride = 331 if name in NAMES32 and _SLOW_STRIDE != 1 else _SLOW_STRIDE
  for lo in range(0, 1 << 32, 1 << 25):
    x = _f32_patterns(stride, lo, lo + (1 << 25))
    _check(name, x, direct(name, x), _reference(name, x, F32), 1 if name in NAMES32 else 2)


def test_direct_vector_body_equals_scalar_tail(direct):
  """The SIMD body and the loop's scalar remainder are the same code: an element's result
  does not depend on its position (what makes the two jit tiers agree bit for bit)."""
  x = np.random.default_rng(3).standard_normal(4099).astype(F32) * 10
  for name in NAMES + NAMES32:
    whole = direct(name, x)
    for k in (1, 3, 7, 13):   # every element once in a short array (tail only) or shifted
      part = np.concatenate([direct(name, x[i:i + k]) for i in range(0, 52, k)])
      assert np.array_equal(part.view(np.uint32), whole[:len(part)].view(np.uint32)), (name, k)


@pytest.mark.parametrize("stride", [997, pytest.param(31, marks=pytest.mark.slow)])
def test_small_kernel_trig_variants_same_bits(direct, stride):
  """Kernels of at most vmath.SCALAR_MAX elements call sin/cos/tan's scalar variants (no
  reduction for |x| < 0.785398): the same bits as the reducing functions, which the NumPy
  tier and large kernels run (every float32 of the range with PYJAX_VMATH_EXHAUSTIVE=1)."""
  stride = 1 if _SLOW_STRIDE == 1 else stride
  top = int(np.float32(0.785398).view(np.uint32))
  pos = np.arange(0, top, stride, dtype=np.uint32).view(F32)
  x = np.concatenate([pos, -pos, np.float32([0.785398, 0.7854, 1.0, -3.0, 1e30, np.inf])])
  for name in ("sin", "cos", "tan"):
    assert np.array_equal(direct(name + "_s", x).view(np.uint32),
                          direct(name, x).view(np.uint32)), name
