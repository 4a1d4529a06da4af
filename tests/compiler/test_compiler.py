"""The CPU compiler (pyjax/_src/backends/cpu/compiler): generated C vs the NumPy backend vs
real JAX.

Every test that checks native results compiles synchronously (``PYJAX_COMPILE=sync`` via
``executable.set_compile_mode``) and asserts that the executable really is native (and,
where it matters, that no equation fell back to NumPy).  The NumPy reference is the same
jitted program run with native compilation off.  Both tiers must agree bit for bit (NaN
payloads aside): the NumPy tier computes transcendental functions with the compiler's own
C (``numpy_tier/native.py``); against JAX they agree within a few ulps (XLA's polynomials are
others).
"""
from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import textwrap

import ml_dtypes
import numpy as np
import pytest

import pyjax
from pyjax._src import api
import pyjax.numpy as jnp
from pyjax import lax
from pyjax._src.backends.cpu import executable
from pyjax._src.backends.cpu.compiler.native import build

import sanitizers

pytestmark = [
    pytest.mark.skipif(build.toolchain() is None, reason="no C compiler"),
    pytest.mark.filterwarnings("ignore:(overflow|invalid value|divide by zero):RuntimeWarning"),
    pytest.mark.filterwarnings("error:pyjax:RuntimeWarning"),
]

BF16 = np.dtype(ml_dtypes.bfloat16)
F16, F32, F64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)
FLOATS = [F16, BF16, F32, F64]
INTS = [np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64,
                              np.uint8, np.uint16, np.uint32, np.uint64)]
_SLOW_DTYPES = {np.dtype(t) for t in (np.int16, np.uint16, np.uint64, np.int8)}


def dtype_params(dts, slow=_SLOW_DTYPES):
  """Parametrize over dtypes; the less common ones only in the slow run (each is a build)."""
  return [pytest.param(d, id=np.dtype(d).name,
                       marks=[pytest.mark.slow] if np.dtype(d) in slow else [])
          for d in dts]


compile_mode = executable.compile_mode_override


@contextlib.contextmanager
def x64_if(dtypes):
  need = any(np.dtype(d).itemsize == 8 for d in dtypes)
  prev = pyjax.config.jax_enable_x64
  if need:
    pyjax.config.update("jax_enable_x64", True)
  try:
    yield
  finally:
    pyjax.config.update("jax_enable_x64", prev)


def native(f, *args, fully=True, require=True):
  """(results of ``f`` compiled to native code, the executable)."""
  with compile_mode("sync"):
    jf = pyjax.jit(lambda *a: f(*a))
    exe = jf.lower(*args).compile().runtime_executable()
    assert exe.error is None, exe.error
    if not require and exe.tier != "native":
      return jf(*args), exe
    assert exe.tier == "native"
    if fully:
      assert not exe.native.host_steps, [s.node.prim for s in exe.native.host_steps]
    out = jf(*args)
  return out, exe


def numpy_path(f, *args):
  with compile_mode("off"):
    return pyjax.jit(lambda *a: f(*a))(*args)


def leaves(x):
  return [np.asarray(v) for v in pyjax.tree_util.tree_leaves(x)]


def _ordered(a):
  """Float bit patterns mapped to integers ordered like the floats (ulp distances)."""
  a = np.asarray(a)
  bits = {2: np.int16, 4: np.int32, 8: np.int64}[a.dtype.itemsize]
  i = a.view(bits).astype(np.int64)
  mask = (1 << (a.dtype.itemsize * 8 - 1)) - 1
  return np.where(i < 0, -(i & mask), i)


def assert_close(got, want, ulps=0, what=""):
  got, want = np.asarray(got), np.asarray(want)
  assert got.dtype == want.dtype, (what, got.dtype, want.dtype)
  assert got.shape == want.shape, (what, got.shape, want.shape)
  if got.dtype.kind in "fV" and got.dtype != np.bool_:
    gn, wn = np.isnan(got.astype(np.float64)), np.isnan(want.astype(np.float64))
    assert np.array_equal(gn, wn), (what, got[gn != wn], want[gn != wn])
    g, w = got[~gn], want[~wn]
    if ulps == 0:
      bad = _ordered(g) != _ordered(w)
      assert not bad.any(), (what, g[bad][:10], w[bad][:10])
    else:
      d = np.abs(_ordered(g) - _ordered(w))
      assert d.max(initial=0) <= ulps, (what, d.max(), g[d > ulps][:10], w[d > ulps][:10])
  else:
    assert np.array_equal(got, want), (what, got[got != want][:10], want[got != want][:10])


# --- inputs ---------------------------------------------------------------------------------
def float_values(dt, n=64, seed=0):
  rng = np.random.default_rng(seed)
  special = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, np.inf, -np.inf, np.nan, 3.0,
             1e-3, 7.0, 100.0, -100.0, 0.25]
  x = np.concatenate([np.array(special), rng.standard_normal(n) * 3,
                      rng.standard_normal(8) * 1e4])
  return x.astype(dt)


def int_values(dt, n=48, seed=0):
  rng = np.random.default_rng(seed)
  info = np.iinfo(dt)
  special = [0, 1, -1, 2, -2, 3, 7, 8, 31, 32, 33, 63, 64, 65, info.min, info.max,
             info.min + 1, info.max - 1]
  special = [s for s in special if info.min <= s <= info.max]
  r = rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
  return np.concatenate([np.array(special, dtype=dt), r, rng.integers(-9, 9, 16).astype(dt)])


def pairs(x):
  """Every (a, b) of a small prefix of x, plus x against a shuffled copy."""
  k = min(len(x), 20)
  a = np.repeat(x[:k], k)
  b = np.tile(x[:k], k)
  rng = np.random.default_rng(1)
  return np.concatenate([a, x]), np.concatenate([b, rng.permutation(x)])


# --- elementwise: unary ---------------------------------------------------------------------
_EXACT_UNARY_FLOAT = ["neg", "sign", "floor", "ceil", "round", "round_even", "is_finite",
                      "sqrt", "rsqrt", "square", "abs"]
_TRANSCENDENTAL = ["exp", "exp2", "log", "expm1", "log1p", "tanh", "logistic", "sin", "cos",
                   "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh",
                   "cbrt", "erf", "erfc"]


def _unary_fn(name):
  if name == "round_even":
    return lambda x: lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN)
  if name == "is_finite":
    return lax.is_finite
  return getattr(lax, name)


def _ulps_for(name, dt):
  """Ulps allowed between the tiers: none (``numpy_tier/native.py``; with ``PYJAX_LIBMVEC=1``
  libmvec's vector functions and libm's scalar ones differ, so the old bounds apply)."""
  if name in _EXACT_UNARY_FLOAT or os.environ.get("PYJAX_LIBMVEC", "") in ("", "0"):
    return 0
  if dt in (F16, BF16):
    return 1
  return {"tan": 6, "erfc": 16, "cosh": 4, "sinh": 4, "acosh": 4, "asinh": 4,
          "lgamma": 64}.get(name, 4)


@pytest.mark.parametrize("dt", FLOATS, ids=lambda d: d.name)
def test_unary_float(dt):
  names = _EXACT_UNARY_FLOAT + _TRANSCENDENTAL
  x = float_values(dt)
  with x64_if([dt]):
    f = lambda x: [_unary_fn(n)(x) for n in names]  # noqa: E731
    got, exe = native(f, x)
    want = numpy_path(f, x)
    for n, g, w in zip(names, leaves(got), leaves(want)):
      assert_close(g, w, _ulps_for(n, dt), n)


@pytest.mark.parametrize("dt", dtype_params(INTS))
def test_unary_int(dt):
  names = ["neg", "abs", "sign", "bitwise_not", "population_count", "clz", "square"]
  if dt.kind == "u":
    names = [n for n in names if n not in ("neg", "abs", "sign")]
  x = int_values(dt)
  with x64_if([dt]):
    f = lambda x: [getattr(lax, n)(x) for n in names]  # noqa: E731
    got, _ = native(f, x)
    want = numpy_path(f, x)
    for n, g, w in zip(names, leaves(got), leaves(want)):
      assert_close(g, w, 0, n)


def test_unary_bool():
  x = np.array([True, False, True, True, False])
  f = lambda x: [lax.bitwise_not(x), lax.bitwise_and(x, ~x), lax.bitwise_or(x, x), x ^ x]  # noqa: E731
  got, _ = native(f, x)
  for g, w in zip(leaves(got), leaves(numpy_path(f, x))):
    assert_close(g, w)


# --- elementwise: binary --------------------------------------------------------------------
_FLOAT_BINARY = ["add", "sub", "mul", "div", "rem", "max", "min", "atan2", "pow", "nextafter",
                 "eq", "ne", "lt", "le", "gt", "ge"]


@pytest.mark.parametrize("dt", FLOATS, ids=lambda d: d.name)
def test_binary_float(dt):
  names = [n for n in _FLOAT_BINARY if not (n == "nextafter" and dt in (F16, BF16))]
  a, b = pairs(float_values(dt))
  with x64_if([dt]):
    f = lambda a, b: [getattr(lax, n)(a, b) for n in names]  # noqa: E731
    got, _ = native(f, a, b)
    want = numpy_path(f, a, b)
    for n, g, w in zip(names, leaves(got), leaves(want)):
      ulps = 0 if n not in ("atan2", "pow") else _ulps_for(n, dt)
      assert_close(g, w, ulps, n)


@pytest.mark.parametrize("dt", dtype_params(INTS))
def test_binary_int(dt):
  names = ["add", "sub", "mul", "div", "rem", "max", "min", "bitwise_and", "bitwise_or",
           "bitwise_xor", "shift_left", "shift_right_logical", "shift_right_arithmetic",
           "eq", "ne", "lt", "le", "gt", "ge"]
  a, b = pairs(int_values(dt))
  with x64_if([dt]):
    f = lambda a, b: [getattr(lax, n)(a, b) for n in names]  # noqa: E731
    got, _ = native(f, a, b)
    want = numpy_path(f, a, b)
    for n, g, w in zip(names, leaves(got), leaves(want)):
      assert_close(g, w, 0, n)


def test_integer_division_corners(jax):
  """x / 0, x % 0, INT_MIN / -1, INT_MIN % -1 and out-of-range shifts, as XLA."""
  for dt in (np.int8, np.int32, np.uint8, np.uint32):
    info = np.iinfo(dt)
    a = np.array([5, -5, info.min, info.min, 7, info.max, 0], dt) if info.min < 0 else \
        np.array([5, 0, info.max, 7, 1], dt)
    b = np.array([0, 0, -1, 0, -1, 1, 0], dt) if info.min < 0 else np.array([0, 0, 0, 3, 1], dt)
    s = np.array([0, 1, 7, 8, 9, 100, -1], dt) if info.min < 0 else np.array([0, 8, 9, 200, 1], dt)
    f = lambda a, b, s: (lax.div(a, b), lax.rem(a, b), lax.shift_left(a, s),  # noqa: E731
                         lax.shift_right_logical(a, s), lax.shift_right_arithmetic(a, s))
    got, _ = native(f, a, b, s)
    ref = jax.jit(f_jax := (lambda a, b, s: (jax.lax.div(a, b), jax.lax.rem(a, b),
                                                jax.lax.shift_left(a, s),
                                                jax.lax.shift_right_logical(a, s),
                                                jax.lax.shift_right_arithmetic(a, s))))(a, b, s)
    del f_jax
    for g, w in zip(leaves(got), leaves(ref)):
      assert_close(g, np.asarray(w))


def test_nan_compares_and_signed_zeros(jax):
  x = np.array([np.nan, 0.0, -0.0, 1.0, -np.inf, np.nan], np.float32)
  y = np.array([1.0, -0.0, 0.0, np.nan, -np.inf, np.nan], np.float32)

  def f(lx):
    return lambda x, y: (lx.max(x, y), lx.min(x, y), lx.eq(x, y), lx.lt(x, y), lx.ne(x, y),
                         lx.sign(x), lx.neg(x), lx.select(lx.gt(x, y), x, y),
                         lx.clamp(-0.0, x, 0.0))
  got, _ = native(f(lax), x, y)
  ref = jax.jit(f(jax.lax))(x, y)
  for g, w in zip(leaves(got), leaves(ref)):
    assert_close(g, np.asarray(w))
  mx = np.asarray(got[0])
  assert np.signbit(mx[1]) == False and np.signbit(mx[2]) == False  # noqa: E712
  mn = np.asarray(got[1])
  assert np.signbit(mn[1]) and np.signbit(mn[2])


def test_no_fma_contraction(jax):
  """A float32 multiply feeding an add is rounded twice natively (``-ffp-contract=off``), as
  the NumPy tier and JAX's op-by-op execution round it, so the tiers agree bit for bit;
  XLA:CPU contracts it into one fused multiply-add (JAX's jitted bits differ: within
  1 ulp of the product's size)."""
  rng = np.random.default_rng(0)
  x, y, z, w = (rng.standard_normal(4096).astype(np.float32) for _ in range(4))
  f = lambda x, y, z, w: (x * y + z, x * y - z, z - x * y, x * y + z * w)  # noqa: E731
  got, _ = native(f, x, y, z, w)
  want = [x * y + z, x * y - z, z - x * y, x * y + z * w]
  for g, r, n in zip(leaves(got), want, leaves(numpy_path(f, x, y, z, w))):
    assert_close(g, r)
    assert_close(g, n)
  ref = jax.jit(f)(x, y, z, w)
  for g, r in zip(leaves(got), leaves(ref)):
    np.testing.assert_allclose(g, np.asarray(r), rtol=0, atol=1e-6 * 8)


def test_cse_keeps_output_shapes():
  """Two equations with the same operands but different output shapes are not one (found
  by the differential fuzzer): ``var`` divides a broadcast f32[1] sum by n, ``mean`` the
  scalar sum; once the broadcast of the scalar is dropped both read ``div(sum, n)``, and
  the mean's buffer came back as f32[1]."""
  x = np.array([0.5, 1.5, -2.0], np.float32)
  f = lambda a: (jnp.var(a), jnp.mean(a, axis=-1))  # noqa: E731
  got, _ = native(f, x, fully=False)
  assert [g.shape for g in leaves(got)] == [(), ()]
  assert_close(leaves(got)[1], np.float32(x.sum() / 3))


def test_host_step_on_dropped_scalar_broadcast():
  """A host (NumPy) step whose operand was a broadcast scalar -- the simplifier uses the
  scalar directly -- is broadcast to its equation's shape (found by the differential
  fuzzer: a complex ``ne`` raised "cannot reshape array of size 1 into shape (3,)")."""
  z = np.complex64(1 + 2j)
  f = lambda z: (jnp.logical_not(jnp.broadcast_to(jnp.exp(z), (3,))),  # noqa: E731
                 jnp.broadcast_to(z, (2,)) == z)
  got, _ = native(f, z, fully=False)
  assert [g.tolist() for g in leaves(got)] == [[False] * 3, [True] * 2]


def test_random_bits_and_samplers_are_native(jax):
  """threefry2x32 (both words), iota_2x32_shape, bitcast, fma and erf_inv run natively; the
  bits equal the NumPy backend's and JAX's, the normal samples JAX's within a few ulps."""
  from pyjax import random
  k = random.key(0)
  f = lambda k: (random.bits(k, (64, 33)), random.uniform(k, (1000,)),  # noqa: E731
                 random.normal(k, (500, 3)))
  got, _ = native(f, k)
  want = numpy_path(f, k)
  assert_close(got[0], want[0])
  assert_close(got[1], want[1])
  jk = jax.random.key(0)
  assert_close(got[0], np.asarray(jax.random.bits(jk, (64, 33))))
  assert_close(got[1], np.asarray(jax.random.uniform(jk, (1000,))))
  np.testing.assert_allclose(np.asarray(got[2]), np.asarray(jax.random.normal(jk, (500, 3))),
                             rtol=1e-5, atol=2e-6)
  x = np.linspace(-1, 1, 257).astype(np.float32)
  got, _ = native(lambda x: lax.erf_inv(x), x)
  np.testing.assert_allclose(np.asarray(got), np.asarray(jax.jit(jax.lax.erf_inv)(x)),
                             rtol=4e-7, atol=1e-7)
  assert np.asarray(got)[0] == -np.inf and np.asarray(got)[-1] == np.inf


# --- conversions, select, clamp, integer_pow --------------------------------------------------
ALL = FLOATS + INTS + [np.dtype(np.bool_)]


@pytest.mark.parametrize("src", dtype_params(ALL))
def test_convert_element_type(src):
  if src == np.bool_:
    x = np.array([True, False, True])
  elif src.kind in "iu":
    x = int_values(src)
  else:
    x = float_values(src)
    x = np.concatenate([x, np.array([1e10, -1e10, 3e9, 65504, 65520, 1e5, 2.5e4, 255.5, -128.5,
                                     4294967296.0, 1.8e19, -1.5]).astype(src)])
  dsts = ALL
  with x64_if([src] + dsts):
    f = lambda x: [lax.convert_element_type(x, d) for d in dsts]  # noqa: E731
    got, _ = native(f, x)
    want = numpy_path(f, x)
    for d, g, w in zip(dsts, leaves(got), leaves(want)):
      assert_close(g, w, 0, f"{src.name}->{d.name}")


@pytest.mark.parametrize("dt", [F16, BF16, F32, np.dtype(np.int32), np.dtype(np.uint8)],
                         ids=lambda d: d.name)
def test_select_clamp_integer_pow(dt):
  x = float_values(dt) if dt.kind in "fV" else int_values(dt)
  y = x[::-1].copy()
  p = (np.arange(len(x)) % 3 == 0)
  w = (np.arange(len(x)) % 3).astype(np.int32)
  lo, hi = (x.min(), x.max()) if dt.kind in "iu" else (np.asarray(-1.5, dt), np.asarray(2.0, dt))

  def f(x, y, p, w):
    outs = [lax.select(p, x, y), lax.select_n(w, x, y, x * y), lax.clamp(lo, x, hi),
            lax.integer_pow(x, 2), lax.integer_pow(x, 3), lax.integer_pow(x, 7)]
    if dt.kind in "fV":
      outs += [lax.integer_pow(x, -2), lax.integer_pow(x, 0)]
    return outs
  got, _ = native(f, x, y, p, w)
  want = numpy_path(f, x, y, p, w)
  for g, w_ in zip(leaves(got), leaves(want)):
    assert_close(g, w_)


def test_half_rounding_matches_jax(jax):
  """float16/bfloat16 ops compute in float32 and round every result, as XLA:CPU does."""
  rng = np.random.default_rng(3)
  for dt in (F16, BF16):
    a, b, c = (rng.standard_normal(2000).astype(dt) for _ in range(3))
    f = lambda a, b, c: ((a * b + c) * b - a / (c + 3), a * a * a)  # noqa: E731
    got, _ = native(f, a, b, c)
    ref = jax.jit(f)(a, b, c)
    for g, w in zip(leaves(got), leaves(ref)):
      assert_close(g, np.asarray(w))


@pytest.mark.parametrize("dt", [F32, F64], ids=lambda d: d.name)
def test_transcendentals_match_jax(jax, dt):
  x = np.linspace(-3, 3, 301).astype(dt)
  pos = np.linspace(0.01, 5, 301).astype(dt)
  unit = np.linspace(-0.99, 0.99, 301).astype(dt)
  fs = ["exp", "tanh", "sin", "cos", "logistic", "erf", "expm1", "atan", "sinh"]
  fp = ["log", "log1p", "sqrt", "rsqrt", "cbrt"]
  fu = ["asin", "acos", "atanh"]
  with x64_if([dt]):
    if dt == F64:
      jax.config.update("jax_enable_x64", True)
    try:
      f = lambda lx: lambda x, p, u: ([getattr(lx, n)(x) for n in fs] +  # noqa: E731
                                      [getattr(lx, n)(p) for n in fp] +
                                      [getattr(lx, n)(u) for n in fu])
      got, _ = native(f(lax), x, pos, unit)
      ref = jax.jit(f(jax.lax))(x, pos, unit)
    finally:
      if dt == F64:
        jax.config.update("jax_enable_x64", False)
    for n, g, w in zip(fs + fp + fu, leaves(got), leaves(ref)):
      np.testing.assert_allclose(g, np.asarray(w), rtol=2e-6 if dt == F32 else 1e-13,
                                 atol=1e-6 if dt == F32 else 1e-14, err_msg=n)


# --- reductions -------------------------------------------------------------------------------
_RED_CASES = [((0,), (0,)), ((1,), (0,)), ((5,), (0,)), ((32,), (0,)), ((33,), (0,)),
              ((100,), (0,)), ((1000,), (0,)), ((5000,), (0,)), ((70, 3), (0,)),
              ((3, 70), (1,)), ((40, 50), (0, 1)), ((6, 0), (1,)), ((0, 6), (1,)),
              ((4, 35, 3), (1,)), ((4, 5, 6), (0, 2)), ((40, 33, 2), (0, 1)),
              ((3, 40, 33), (1, 2)), ((2, 3, 4), (0, 1, 2)), ((1, 7, 1), (1,)),
              ((1100, 3), (0,)), ((3, 1100), (1,))]


def _red_inputs(dt, shape, seed=0):
  rng = np.random.default_rng(seed)
  n = int(np.prod(shape))
  if dt == np.bool_:
    return (rng.random(n) < 0.5).reshape(shape)
  if dt.kind in "iu":
    return rng.integers(-3 if dt.kind == "i" else 0, 4, n).astype(dt).reshape(shape)
  x = rng.standard_normal(n) * 3
  if n > 10:
    x[3] = -0.0
    x[7] = 0.0
  return x.astype(dt).reshape(shape)


@pytest.mark.parametrize("dt", dtype_params(
    [F32, F16, BF16, F64, np.dtype(np.int32), np.dtype(np.uint8), np.dtype(np.int64),
     np.dtype(np.bool_)], slow={BF16, F64, np.dtype(np.uint8), np.dtype(np.int64)}))
def test_reductions(dt):
  """Every reduction over row, column and mixed axes (one program per dtype: one build)."""
  with x64_if([dt]):
    xs = [_red_inputs(dt, shape, seed) for seed, (shape, _) in enumerate(_RED_CASES)]
    names = []
    for shape, axes in _RED_CASES:
      fs = [] if dt == np.bool_ else ["sum", "prod"]
      fs += ["max", "min"]
      if dt == np.bool_ or dt.kind in "iu":
        fs += ["and", "or", "xor"]
      if len(axes) == 1 and shape[axes[0]] > 0:
        fs += ["argmax", "argmin"]
      names.append(fs)

    def f(*xs):
      outs = []
      for x, (shape, axes), fs in zip(xs, _RED_CASES, names):
        for n in fs:
          if n in ("argmax", "argmin"):
            outs.append(getattr(lax, n)(x, axes[0], np.int32))
          else:
            outs.append(getattr(lax, f"reduce_{n}")(x, axes))
      return outs
    got, _ = native(f, *xs)
    want = numpy_path(f, *xs)
    what = [f"{n} {shape} {axes}" for (shape, axes), fs in zip(_RED_CASES, names) for n in fs]
    for w_, g, w in zip(what, leaves(got), leaves(want)):
      assert_close(g, w, 0, w_)


def test_reductions_nan_and_zero_signs():
  x = np.array([[1.0, np.nan, 3.0], [-0.0, 0.0, -0.0], [-0.0, -0.0, -0.0], [np.nan, 5, np.nan],
                [-np.inf, -np.inf, -np.inf]], np.float32)
  f = lambda x: [lax.reduce_max(x, (1,)), lax.reduce_min(x, (1,)), lax.reduce_sum(x, (1,)),  # noqa: E731
                 lax.argmax(x, 1, np.int32), lax.argmin(x, 1, np.int32), lax.reduce_max(x, (0,)),
                 lax.argmax(x, 0, np.int32), lax.reduce_sum(x, (0,))]
  got, _ = native(f, x)
  for g, w in zip(leaves(got), leaves(numpy_path(f, x))):
    assert_close(g, w)
  assert not np.signbit(np.asarray(got[2])[2])  # an all -0.0 sum is +0.0 (XLA folds from +0)


def test_float_sums_match_jax(jax):
  """Sums follow the NumPy backend's emulation of XLA's CPU order (windows of 32, padded
  evenly): bit-identical to JAX for single-axis sums of up to 1024 elements, within
  rounding beyond."""
  rng = np.random.default_rng(5)
  for shape, axes, exact in [((1000,), (0,), True), ((3, 777), (1,), True),
                             ((777, 5), (0,), True), ((40, 50), (0, 1), False),
                             ((2, 33, 40), (1, 2), False), ((5000,), (0,), False)]:
    x = (rng.standard_normal(shape) * 10).astype(np.float32)
    got, _ = native(lambda x: lax.reduce_sum(x, axes), x)
    ref = np.asarray(jax.jit(lambda x: jax.lax.reduce_sum(x, axes))(x))
    if exact:
      assert_close(got, ref, 0, f"{shape} {axes}")
    else:
      np.testing.assert_allclose(np.asarray(got), ref, rtol=1e-5, atol=1e-4)
  x = rng.standard_normal((4, 100)).astype(np.float16)
  got, _ = native(lambda x: lax.reduce_sum(x, (1,)), x)
  assert_close(got, np.asarray(jax.jit(lambda x: jax.lax.reduce_sum(x, (1,)))(x)))


# --- layout operations, broadcasting, strided and empty inputs ----------------------------------
def test_layout_ops_fused_and_materialized():
  rng = np.random.default_rng(0)
  x = rng.standard_normal((4, 6)).astype(np.float32)
  v = rng.standard_normal(6).astype(np.float32)

  def f(x, v):
    t = lax.transpose(x, (1, 0))                            # materialized copy (output)
    b = lax.broadcast_in_dim(v, (4, 6), (1,))
    r = lax.reshape(x, (2, 2, 6))
    s = lax.slice(x, (1, 0), (4, 6), (2, 3))
    rv = lax.rev(x, (0, 1))
    io = lax.iota(np.int32, 6)
    fused = (lax.exp(lax.transpose(x, (1, 0))) * lax.broadcast_in_dim(v, (6, 4), (0,))
             + lax.convert_element_type(lax.broadcast_in_dim(io, (6, 4), (0,)), np.float32))
    merged = lax.reshape(x * 2, (24,)) + 1          # merge of a computed value
    split = lax.reshape(v, (2, 3)) * 3              # split of an input
    sq = lax.squeeze(lax.reshape(x, (1, 4, 6)), (0,)) - x
    return t, b * x, r + 1, s, rv, io, fused, merged, split, sq, lax.reshape(x, (24,))
  got, _ = native(f, x, v)
  want = numpy_path(f, x, v)
  for i, (g, w) in enumerate(zip(leaves(got), leaves(want))):
    assert_close(g, w, 4, f"output {i}")


def test_broadcasting_and_scalars():
  x = np.arange(12, dtype=np.float32).reshape(3, 4)
  c = np.arange(3, dtype=np.float32).reshape(3, 1)
  r = np.arange(4, dtype=np.float32).reshape(1, 4)
  s = np.float32(2.5)
  f = lambda x, c, r, s: [x * c + r - s, lax.max(c, r), s * s, x + s]  # noqa: E731
  got, _ = native(f, x, c, r, s)
  for g, w in zip(leaves(got), leaves(numpy_path(f, x, c, r, s))):
    assert_close(g, w)


def test_strided_and_transposed_inputs():
  """Non-contiguous input buffers are copied to contiguous ones by the native entry."""
  base = np.arange(48, dtype=np.float32).reshape(6, 8)
  f = lambda x, y: [x * 2 + y, lax.reduce_sum(x, (1,))]  # noqa: E731
  x, y = base[::2, ::2], base.T[:3, :4]
  assert not x.flags.c_contiguous and not y.flags.c_contiguous
  _, exe = native(f, np.ascontiguousarray(x), np.ascontiguousarray(y))
  got = exe.fn(x, y)
  want = [x * 2 + y, x.sum(1)]
  for g, w in zip(got, want):
    np.testing.assert_array_equal(g, w)
  # a read-only broadcast view and a byte-swapped array
  z = np.broadcast_to(np.float32(3), (3, 4))
  sw = np.ascontiguousarray(y).astype(">f4")
  got = exe.fn(z, sw)
  np.testing.assert_array_equal(got[0], z * 2 + y)
  with pytest.raises(TypeError):
    exe.native.fn(np.ones((4, 4), np.float32), y)


def test_empty_and_scalar_programs():
  for shape in [(0,), (3, 0), (0, 4), ()]:
    x = np.ones(shape, np.float32)
    f = lambda x: [lax.exp(x) + 1, lax.reduce_sum(x, tuple(range(x.ndim))), x * x]  # noqa: E731
    got, _ = native(f, x)
    for g, w in zip(leaves(got), leaves(numpy_path(f, x))):
      assert_close(g, w, 4)


# --- fusion: kernel counts of typical programs ----------------------------------------------------
def _softmax(x):
  m = x.max(axis=1, keepdims=True)
  e = jnp.exp(x - m)
  return e / e.sum(axis=1, keepdims=True)


def _layer_norm(x, g, b):
  mu = x.mean(-1, keepdims=True)
  v = ((x - mu) ** 2).mean(-1, keepdims=True)
  return (x - mu) / jnp.sqrt(v + 1e-5) * g + b


def _gelu(x):
  return 0.5 * x * (1 + jnp.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))


def _mlp_loss(params, x, y):
  h = x
  for i, (w, b) in enumerate(params):
    h = h @ w + b
    if i < len(params) - 1:
      h = _gelu(h)
  m = h.max(axis=1, keepdims=True)
  lp = h - m - jnp.log(jnp.exp(h - m).sum(axis=1, keepdims=True))
  return -(lp * y).sum(axis=1).mean()


def _mlp_step(params, x, y):
  loss, grads = pyjax.value_and_grad(_mlp_loss)(params, x, y)
  return loss, [(w - 0.01 * gw, b - 0.01 * gb) for (w, b), (gw, gb) in zip(params, grads)]


def _mlp_args(sizes=(64, 32, 32, 10), batch=16):
  rng = np.random.default_rng(0)
  params = [(rng.standard_normal((a, b)).astype(np.float32) * 0.1, np.zeros(b, np.float32))
            for a, b in zip(sizes[:-1], sizes[1:])]
  x = rng.standard_normal((batch, sizes[0])).astype(np.float32)
  y = np.eye(sizes[-1], dtype=np.float32)[rng.integers(0, sizes[-1], batch)]
  return params, x, y


def test_kernel_counts():
  """Fusion regressions show here: softmax and layer-norm are one kernel each (every
  reduction and the normalized rows in one pass over each row); the MLP training step is
  one native segment of fused kernels and BLAS calls."""
  x = np.random.default_rng(0).standard_normal((8, 50)).astype(np.float32)
  out, exe = native(_softmax, x)
  assert exe.native.n_kernels == 1
  ref = np.exp(x - x.max(1, keepdims=True))
  np.testing.assert_allclose(np.asarray(out), ref / ref.sum(1, keepdims=True), rtol=1e-6,
                             atol=1e-7)
  g = np.linspace(0.5, 1.5, 50).astype(np.float32)
  b = np.linspace(-1, 1, 50).astype(np.float32)
  out, exe = native(_layer_norm, x, g, b)
  assert exe.native.n_kernels == 1
  np.testing.assert_allclose(np.asarray(out), np.asarray(numpy_path(_layer_norm, x, g, b)),
                             rtol=1e-6, atol=1e-6)
  args = _mlp_args()
  out, exe = native(_mlp_step, *args)
  p = exe.native
  dots = [g_ for g_ in p.fusion.groups if g_.kind == "dot"]
  assert len(dots) == 8 and len(p.segments) == 1   # 3 forward, 3 weight grads, 2 input grads
  assert p.n_kernels <= 24, p.n_kernels
  # multi-output fusion: each hidden layer's forward gelu is one kernel, writing the
  # residual its backward pass reads (tanh; 1 + tanh is recomputed there) and the activation
  gelus = [g_ for g_ in p.fusion.groups if g_.kind == "loop"
           and any(m.prim == "tanh" for m in g_.members)]
  assert len(gelus) == 2 and all(len(g_.outputs) == 2 for g_ in gelus), gelus
  for o, r in zip(leaves(out), leaves(numpy_path(_mlp_step, *args))):
    np.testing.assert_allclose(o, r, rtol=1e-5, atol=1e-6)


def test_multi_output_fusion_keeps_order_and_index():
  """A materialized elementwise value joins the kernel of a reader only when that reader
  reads it at the index it computes and no other kernel stands between them: ``t`` feeds
  the product that ``c`` reads (a merge would be a cycle), ``u`` is read transposed."""
  rng = np.random.default_rng(1)
  x, w = (rng.standard_normal((8, 8)).astype(np.float32) for _ in range(2))

  def f(x, w):
    t = jnp.tanh(x)
    u = jnp.exp(x)
    return t * (t @ w), u + u.T, jnp.sin(u) * 2

  out, exe = native(f, x, w)
  loops = [g_ for g_ in exe.native.fusion.groups if g_.kind == "loop"]
  t, u = np.tanh(x), np.exp(x)
  for o, r in zip(out, (t * (t @ w), u + u.T, np.sin(u) * 2)):
    np.testing.assert_allclose(np.asarray(o), r, rtol=1e-5, atol=1e-6)
  # tanh, exp with sin(u) * 2 (merged), t * (t @ w), u + u.T; and the product
  assert len(loops) == 4 and len(exe.native.fusion.groups) == 5, exe.native.fusion.groups


def test_callbacks_never_run_at_compile_time():
  """Constant folding leaves callbacks alone (XLA never folds them): a pure_callback of a
  constant runs when the program runs, not while it is compiled."""
  calls = []

  def cb(x):
    calls.append(float(x))
    return np.asarray(x * 2, np.float32)

  def f(x):
    return x + pyjax.pure_callback(cb, pyjax.ShapeDtypeStruct((), np.float32), np.float32(3))

  with compile_mode("sync"):
    jf = pyjax.jit(f)
    exe = jf.lower(np.float32(1)).compile().runtime_executable()
    assert exe.error is None and exe.tier == "native"
    assert calls == []
    assert float(jf(np.float32(1))) == 7.0
  assert calls == [3.0]


def test_fallback_equations_run_on_numpy_between_segments():
  x = np.random.default_rng(0).standard_normal((5, 7)).astype(np.float32)

  def f(x):
    y = jnp.exp(x) * 2
    s = jnp.linalg.cholesky(y[:, :5] @ y[:, :5].T + 5 * jnp.eye(5))  # not generated: NumPy
    return jnp.tanh(s) + y.sum(), s[:, ::2]
  out, exe = native(f, x, fully=False)
  assert [s.node.prim for s in exe.native.host_steps] == ["cholesky"]
  for o, r in zip(leaves(out), leaves(numpy_path(f, x))):   # (BLAS vs NumPy matmul order)
    np.testing.assert_allclose(o, r, rtol=1e-5, atol=1e-5)


def test_control_flow_bodies_are_native():
  """scan / fori_loop / cond / while with their bodies: the whole program is one native call
  (loops and the cond in C); results equal the NumPy backend's."""
  rng = np.random.default_rng(0)
  x = rng.standard_normal((64, 4)).astype(np.float32)
  y = rng.standard_normal(64).astype(np.float32)

  def f(w, x, y):
    def step(w, xi):
      g = pyjax.grad(lambda w: ((x @ w - y) ** 2).mean())(w)
      return w - 0.1 * g, jnp.tanh(xi).sum()
    w, ys = lax.scan(step, w, x[:20])
    k = lax.fori_loop(0, 7, lambda i, c: c * 0.5 + jnp.sin(c), w)
    c = lax.cond(ys.sum() > 0, lambda a: a * 2, lambda a: a - 1, k)
    n = lax.while_loop(lambda c: c[0] < 10, lambda c: (c[0] + 1, c[1] * 1.5), (0, w))
    return w, ys, k, c, n
  w0 = np.zeros(4, np.float32)
  got, exe = native(f, w0, x, y, fully=False)
  assert exe.tier == "native"
  assert exe.native.whole is not None
  assert exe.native.native_loops == 3 and exe.native.native_conds == 1
  want = numpy_path(f, w0, x, y)
  for g, w in zip(leaves(got), leaves(want)):
    np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_dot_general_layouts():
  rng = np.random.default_rng(0)
  a = rng.standard_normal((3, 4, 5)).astype(np.float32)
  b = rng.standard_normal((3, 5, 6)).astype(np.float32)
  c = rng.standard_normal((5, 4)).astype(np.float32)
  d = rng.standard_normal((6, 5, 3)).astype(np.float32)

  def f(lx):
    return lambda a, b, c, d: (
        lx.dot_general(a, b, (((2,), (1,)), ((0,), (0,)))),        # batched
        lx.dot_general(a, c, (((1,), (1,)), ((), ()))),            # transposed rhs
        lx.dot_general(c, a, (((0,), (2,)), ((), ()))),            # transposed lhs
        lx.dot_general(a, d, (((2, 0), (1, 2)), ((), ()))),        # needs a copy
        lx.dot_general(a[0], b[0], (((1,), (0,)), ((), ()))),
        lx.dot_general(a[0, 0], b[0], (((0,), (0,)), ((), ()))),   # vector @ matrix
        lx.dot_general(a[:, :0], b[:, :, :0], (((2,), (1,)), ((0,), (0,)))))  # zero-size
  out, exe = native(f(lax), a, b, c, d)
  assert not exe.native.host_steps
  ref = numpy_path(f(lax), a, b, c, d)
  for o, r in zip(leaves(out), leaves(ref)):
    np.testing.assert_allclose(o, np.asarray(r), rtol=1e-5, atol=1e-5)
  with x64_if([F64]):
    a64, c64 = a.astype(F64), c.astype(F64)
    out, _ = native(lambda a, c: a @ c, a64[0].T.copy(), c64.T.copy())
    np.testing.assert_allclose(np.asarray(out), a64[0].T @ c64.T, rtol=1e-12)


def test_dot_operand_transposes_fold_into_the_product():
  """``a @ b.T`` and ``a.T @ b`` read their operands in place (BLAS transpose flags, no
  copy kernel); a transpose that reorders an operand's free dimensions is kept (it decides
  the result's layout).  Products big enough to split over the thread pool (one block per
  thread) equal NumPy's."""
  rng = np.random.default_rng(1)
  a = rng.standard_normal((40, 30)).astype(np.float32)
  b = rng.standard_normal((50, 30)).astype(np.float32)
  c = rng.standard_normal((40, 20)).astype(np.float32)
  out, exe = native(lambda a, b, c: (a @ b.T, a.T @ c, b @ a.T.T.T), a, b, c)
  assert [g.kind for g in exe.native.fusion.groups] == ["dot"] * 3
  for o, r in zip(leaves(out), (a @ b.T, a.T @ c, b @ a.T)):
    np.testing.assert_allclose(o, r, rtol=1e-5, atol=1e-5)
  x = rng.standard_normal((2, 3, 4)).astype(np.float32)
  v = rng.standard_normal(2).astype(np.float32)
  f = lambda x, v: lax.dot_general(jnp.transpose(x, (0, 2, 1)), v, (((0,), (0,)), ((), ())))
  out, exe = native(f, x, v)
  assert np.asarray(out).shape == (4, 3)
  assert sorted(g.kind for g in exe.native.fusion.groups) != ["dot"]   # the copy is kept
  np.testing.assert_allclose(np.asarray(out), np.einsum("ijk,i->kj", x, v), rtol=1e-5)
  for m, k, n in ((300, 200, 100), (64, 300, 700), (1, 700, 900), (513, 129, 31)):
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((n, k)).astype(np.float32)
    out, _ = native(lambda a, b: (a @ b.T, b @ a.T), a, b)
    for o, r in zip(leaves(out), (a @ b.T, b @ a.T)):
      np.testing.assert_allclose(o, r, rtol=1e-4, atol=1e-4)


# --- fuzzing: random elementwise / broadcast / reduction programs ----------------------------------
hypothesis = pytest.importorskip("hypothesis")
st = hypothesis.strategies

_FUZZ_UNARY = ["neg", "abs", "exp", "tanh", "sqrt_abs", "square", "floor", "sin", "logistic"]
_FUZZ_BINARY = ["add", "sub", "mul", "max", "min", "div", "select_gt"]
_FUZZ_RED = ["sum", "max", "min", "argmax"]


def _fuzz_apply(ops, xs):
  vals = list(xs)
  for op in ops:
    kind = op[0]
    if kind == "u":
      _, name, i = op
      x = vals[i % len(vals)]
      if name == "sqrt_abs":
        y = jnp.sqrt(jnp.abs(x))
      elif name in ("neg", "abs", "exp", "tanh", "square", "floor", "sin"):
        y = getattr(jnp, {"neg": "negative", "square": "square"}.get(name, name))(x)
        if name == "exp":
          y = jnp.exp(jnp.clip(x, -20, 20))
      else:
        y = pyjax.nn.sigmoid(x) if hasattr(pyjax, "nn") else lax.logistic(x)
    elif kind == "b":
      _, name, i, j, scalar = op
      x, y_ = vals[i % len(vals)], vals[j % len(vals)]
      if scalar is not None:
        y_ = np.float32(scalar)
      elif jnp.shape(x) != jnp.shape(y_):
        y_ = x * 0.5 + 1          # keep shapes broadcast-compatible
      if name == "select_gt":
        y = jnp.where(x > y_, x, y_ * 2)
      elif name == "div":
        y = x / (jnp.abs(y_) + 1)
      else:
        y = getattr(jnp, {"add": "add", "sub": "subtract", "mul": "multiply", "max": "maximum",
                          "min": "minimum"}[name])(x, y_)
    elif kind == "r":
      _, name, i, axis, keep = op
      x = vals[i % len(vals)]
      if jnp.ndim(x) == 0:
        continue
      axis = axis % jnp.ndim(x)
      if x.shape[axis] == 0 and name in ("max", "min", "argmax"):
        continue
      if name == "argmax":
        y = jnp.argmax(x, axis=axis, keepdims=keep).astype(np.float32)
      else:
        y = getattr(jnp, name)(x, axis=axis, keepdims=keep)
      if keep:
        vals.append(x - y)          # broadcast back: phases / epilogues
    else:
      _, i = op
      x = vals[i % len(vals)]
      y = jnp.transpose(x) if jnp.ndim(x) >= 2 else x
    vals.append(y)
  return vals[len(xs):] or [vals[0] * 1]


_op = st.one_of(
    st.tuples(st.just("u"), st.sampled_from(_FUZZ_UNARY), st.integers(0, 9)),
    st.tuples(st.just("b"), st.sampled_from(_FUZZ_BINARY), st.integers(0, 9), st.integers(0, 9),
              st.one_of(st.none(), st.sampled_from([0.0, -0.0, 1.5, -2.0]))),
    st.tuples(st.just("r"), st.sampled_from(_FUZZ_RED), st.integers(0, 9), st.integers(0, 3),
              st.booleans()),
    st.tuples(st.just("t"), st.integers(0, 9)))


@hypothesis.settings(max_examples=int(os.environ.get("PYJAX_FUZZ_EXAMPLES", "25")), deadline=None,
                     derandomize=True,
                     suppress_health_check=list(hypothesis.HealthCheck))
@hypothesis.given(shape=st.lists(st.sampled_from([0, 1, 2, 3, 5, 33, 40]), min_size=0, max_size=3),
                  ops=st.lists(_op, min_size=1, max_size=7), seed=st.integers(0, 2 ** 16))
def test_fuzz_native_equals_numpy(shape, ops, seed):
  rng = np.random.default_rng(seed)
  shape = tuple(shape)
  xs = [(rng.standard_normal(shape) * 2).astype(np.float32) for _ in range(2)]
  if xs[0].size > 3:
    xs[0].flat[0] = np.nan if seed % 3 == 0 else -0.0
  f = lambda a, b: _fuzz_apply(ops, [a, b])  # noqa: E731
  got, exe = native(f, *xs, require=False)
  want = numpy_path(f, *xs)
  for g, w in zip(leaves(got), leaves(want)):
    assert g.dtype == w.dtype and g.shape == w.shape
    np.testing.assert_allclose(g, w, rtol=2e-6, atol=2e-6, equal_nan=True,
                               err_msg=str(ops))


# --- tiered start, the raw C ABI, logging -------------------------------------------------------
def test_tiered_start_numpy_first_then_native():
  x = np.linspace(-1, 1, 100).astype(np.float32)
  with compile_mode("async"):
    f = pyjax.jit(lambda x: jnp.tanh(x) * 3 + 1)
    first = np.asarray(f(x))                       # runs the NumPy plan
    exe = api._compile_entry(f.lower(x)._traced._entry, pyjax.devices()[0])
    assert exe.tier in ("numpy", "pending")        # the first calls never wait for cc
    f(x)                                           # second call: the build starts
    assert exe.wait() == "native"
    assert f.lower(x).compile().runtime_executable().tier == "native"  # compile() waits
    np.testing.assert_allclose(np.asarray(f(x)), first, rtol=1e-6, atol=1e-6)
    assert "pj_k" in exe.as_text() and "def host" in exe.as_text()


def test_compile_off_and_as_text():
  with compile_mode("off"):
    f = pyjax.jit(lambda x: x * 2 + 1)
    c = f.lower(np.ones(3, np.float32)).compile()
    exe = c.runtime_executable()
    assert exe.tier == "numpy" and "def jit_" in c.as_text() and "pj_k" not in c.as_text()


def test_raw_c_abi_pointer_array():
  """``pyjax_run_<s>(void **B, char *A)``: inputs, outputs, constants as data pointers."""
  import ctypes
  x = np.arange(10, dtype=np.float32)
  _, exe = native(lambda x: x * 2 + 1, x)
  prog = exe.native
  from pyjax._src.backends.cpu.compiler.native import cache
  lib = cache.get_library(prog.source, prog.toolchain)
  seg = prog.segments[0]
  assert seg.arena_size == 0 and not seg.consts
  out = np.empty(10, np.float32)
  ptrs = (ctypes.c_void_p * 2)(x.ctypes.data, out.ctypes.data)
  lib.pyjax_run_0.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
  lib.pyjax_run_0(ctypes.addressof(ptrs), None)
  np.testing.assert_array_equal(out, x * 2 + 1)


def _run_py(code, env_extra, timeout=300):
  env = {k: v for k, v in os.environ.items() if k != "PYJAX_COMPILE"}  # conftest sets "off"
  env.update(env_extra)
  env.setdefault("PYJAX_COMPILE", "sync")
  return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                        text=True, env=env, timeout=timeout, cwd=os.path.dirname(os.path.dirname(
                            os.path.dirname(os.path.abspath(__file__)))))


_PROG = """
import numpy as np, pyjax, pyjax.numpy as jnp
x = np.linspace(-2, 2, 1000).astype(np.float32).reshape(10, 100)
f = pyjax.jit(lambda x: (jnp.exp(x) / jnp.exp(x).sum(axis=1, keepdims=True)))
exe = f.lower(x).compile().runtime_executable()
exe.wait()
r = np.asarray(f(x))
ref = np.exp(x) / np.exp(x).sum(axis=1, keepdims=True)
assert np.allclose(r, ref, rtol=1e-5), abs(r - ref).max()
print("TIER", exe.tier, exe.native.stats.get("cache") if exe.native else None)
"""


def test_debug_logging(tmp_path):
  r = _run_py(_PROG, {"PYJAX_DEBUG": "1", "PYJAX_CACHE_DIR": str(tmp_path)})
  assert r.returncode == 0, r.stderr
  assert "pyjax: compiled jit(<lambda>): 1 kernel(s) in 1 native segment(s)" in r.stderr
  assert "TIER native miss" in r.stdout


def test_disk_cache_dir_corrupt_entries_and_jax_config_name(tmp_path):
  d = tmp_path / "c"
  r = _run_py(_PROG, {"PYJAX_CACHE_DIR": str(d)})
  assert r.returncode == 0, r.stderr
  assert "TIER native miss" in r.stdout
  sos = list((d / "cpu-1").glob("*.so"))
  assert sos and all(p.with_suffix(".json").exists() for p in sos)
  r = _run_py(_PROG, {"PYJAX_CACHE_DIR": str(d)})
  assert "TIER native disk" in r.stdout, r.stdout + r.stderr
  # a corrupt library (its digest no longer matches) is ignored and rebuilt
  for p in sos:
    if "pj_k" in p.read_bytes().decode("latin-1"):
      p.write_bytes(b"\x7fELF garbage" * 10)
  r = _run_py(_PROG, {"PYJAX_CACHE_DIR": str(d)})
  assert r.returncode == 0 and "TIER native miss" in r.stdout, r.stdout + r.stderr
  r = _run_py(_PROG, {"PYJAX_CACHE_DIR": str(d)})
  assert "TIER native disk" in r.stdout
  # a foreign metadata file (another key) is ignored too
  for p in (d / "cpu-1").glob("*.json"):
    if not p.name.startswith("toolchain"):
      p.write_text('{"key": "other", "sha256": "0"}')
  r = _run_py(_PROG, {"PYJAX_CACHE_DIR": str(d)})
  assert r.returncode == 0 and "TIER native miss" in r.stdout
  # JAX's option name: jax_compilation_cache_dir (here through its environment variable)
  env = {"JAX_COMPILATION_CACHE_DIR": str(tmp_path / "jaxdir")}
  code = "import os\nos.environ.pop('PYJAX_CACHE_DIR', None)\n" + _PROG
  r = _run_py(code, env)
  assert r.returncode == 0, r.stderr
  assert list((tmp_path / "jaxdir" / "pyjax" / "cpu-1").glob("*.so"))


def test_concurrent_processes_share_the_cache(tmp_path):
  env = dict(os.environ, PYJAX_CACHE_DIR=str(tmp_path), PYJAX_COMPILE="sync")
  procs = [subprocess.Popen([sys.executable, "-c", _PROG], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True) for _ in range(3)]
  outs = [p.communicate(timeout=300) for p in procs]
  for p, (o, e) in zip(procs, outs):
    assert p.returncode == 0, e
    assert "TIER native" in o
  r = _run_py(_PROG, {"PYJAX_CACHE_DIR": str(tmp_path)})
  assert "TIER native disk" in r.stdout, r.stdout + r.stderr
  assert not [p for p in tmp_path.rglob("*") if p.name.startswith(".pyjax-build")]


def test_no_c_compiler_runs_on_numpy_with_one_warning(tmp_path):
  code = """
  import warnings, numpy as np, pyjax, pyjax.numpy as jnp
  with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    a = pyjax.jit(lambda x: jnp.sin(x) + 1)
    b = pyjax.jit(lambda x: jnp.cos(x) * 2)
    x = np.linspace(0, 1, 5).astype(np.float32)
    ea = a.lower(x).compile().runtime_executable(); eb = b.lower(x).compile().runtime_executable()
    assert np.allclose(np.asarray(a(x)), np.sin(x) + 1) and np.allclose(np.asarray(b(x)), np.cos(x) * 2)
    assert ea.tier == "numpy" and eb.tier == "numpy"
  msgs = [str(x.message) for x in w if "C compiler" in str(x.message)]
  print("WARNINGS", len(msgs))
  """
  r = _run_py(code, {"PYJAX_CC": "/nonexistent/cc", "PYJAX_CACHE_DIR": str(tmp_path)})
  assert r.returncode == 0, r.stderr
  assert "WARNINGS 1" in r.stdout


@pytest.mark.slow
def test_sanitizers_fuzz_slice(tmp_path):
  """A slice of this file (fuzzer, reductions, layouts, strided and empty inputs, dots) with
  the generated code built under AddressSanitizer and UndefinedBehaviorSanitizer."""
  sanitizers.run_pytest(tmp_path, __file__, [
      "-k", "fuzz or test_reductions or layout or strided or empty or dot_general or "
      "binary_int or kernel_counts or select_clamp"], {"PYJAX_FUZZ_EXAMPLES": "60"})


def test_long_recurrence_compiles_in_linear_time(tmp_path):
  # bessel_jn unrolls Miller's backward recurrence (50 steps, each reading the previous
  # values, cheap steps inlined into their consumers): fusion once counted every path
  # through such chains and ran out of memory.  A subprocess bounds time and memory.
  r = _run_py("""
      import resource
      resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
      import numpy as np, pyjax
      import pyjax.scipy.special as sp
      f = pyjax.jit(lambda z: sp.bessel_jn(z, v=2))
      z = np.linspace(0.5, 3, 4).astype(np.float32)
      exe = f.lower(z).compile().runtime_executable()
      assert exe.error is None, exe.error
      from pyjax._src.backends.cpu import executable
      executable.set_compile_mode("off")   # the NumPy tier (float32 gives NaN, as in JAX)
      want = pyjax.jit(lambda z: sp.bessel_jn(z, v=2))(z)
      np.testing.assert_allclose(np.asarray(f(z)), np.asarray(want), rtol=1e-5)
      print("TIER", exe.tier)
  """, {"PYJAX_CACHE_DIR": str(tmp_path)}, timeout=120)
  assert r.returncode == 0, r.stderr[-2000:]
  assert "TIER native" in r.stdout
