"""The native GEMM for integer, bool and half-precision dots (compiler/kernels/gemm.py): eager,
jit on the NumPy tier and jit on the native tier, against NumPy (wrap-around integer
arithmetic, sequential float32 sums) and real JAX.

Shapes cover the kernel's edges: empty dimensions, 1, primes and sizes that are not
multiples of the register tile (6 x 2 vectors) or of the cache blocks, contractions
longer than one slice (256), strided / transposed / negatively-strided / broadcast
operands, batch dimensions and several contracting dimensions.
"""
from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pytest

import pyjax
import pyjax.numpy as jnp
from pyjax import lax
from pyjax._src.backends.cpu.eager import dot
from pyjax._src.backends.cpu import executable
from pyjax._src.backends.cpu.compiler.native import build
from pyjax._src.backends.cpu.compiler.kernels import gemm as gemm_c

import sanitizers

pytestmark = [pytest.mark.skipif(build.toolchain() is None, reason="no C compiler")]

BF16 = np.dtype(ml_dtypes.bfloat16)
F16, F32 = np.dtype(np.float16), np.dtype(np.float32)
INTS = [np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64,
                              np.uint8, np.uint16, np.uint32, np.uint64)]
compile_mode = executable.compile_mode_override
_SLOW = {np.dtype(t) for t in (np.int16, np.uint16, np.uint32, np.uint64)}


def dtype_params(dts):
  """Parametrize over dtypes; the less common ones (each a kernel build) only in the slow
  run."""
  return [pytest.param(d, id=d.name, marks=[pytest.mark.slow] if d in _SLOW else [])
          for d in dts]

# (m, k, n): empty, tiny, primes, tile/block edges, a long contraction
SHAPES = [(0, 5, 3), (4, 0, 3), (3, 5, 0), (1, 1, 1), (1, 7, 1), (7, 13, 5), (6, 32, 32),
          (13, 257, 31), (37, 300, 61), (97, 1031, 7)]


def rand(rng, shape, dt):
  dt = np.dtype(dt)
  if dt == np.bool_:
    return rng.random(shape) < 0.5
  if dt.kind in "iu":
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max, size=shape, dtype=dt, endpoint=True)
  return rng.standard_normal(shape).astype(dt)


def int_ref(a, b, out):
  """a @ b modulo 2**bits of ``out`` (NumPy's int64/uint64 matmul wraps mod 2**64)."""
  out = np.dtype(out)
  if out == np.bool_:
    return (a.astype(np.int64) @ b.astype(np.int64)) != 0
  w = np.uint64 if np.dtype(a.dtype).kind == "u" else np.int64
  return (a.astype(w) @ b.astype(w)).astype(out)


def seq_ref(a, b, out, pairs=False):
  """float32 sums in order k = 0, 1, ... (``pairs``: 1, 0, 3, 2, ...), rounded to ``out``;
  a: (m, k), b: (k, n)."""
  a32, b32 = a.astype(np.float32), b.astype(np.float32)
  k = a.shape[1]
  order = list(range(k))
  if pairs:
    order = [p ^ 1 if (p ^ 1) < k else p for p in range(k)]
  c = np.zeros((a.shape[0], b.shape[1]), np.float32)
  with np.errstate(all="ignore"):
    for p in order:
      c = c + np.outer(a32[:, p], b32[p, :])
    return c.astype(out)


def bits(x):
  x = np.asarray(x)
  return x.view(np.uint8) if x.dtype.itemsize == 1 else x.view(f"u{x.dtype.itemsize}")


def assert_same(got, want):
  got, want = np.asarray(got), np.asarray(want)
  assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype,
                                                                got.shape, want.shape)
  bad = bits(got) != bits(want)
  assert not bad.any(), (got[bad][:8], want[bad][:8], int(bad.sum()))


@pytest.fixture
def x64():
  prev = pyjax.config.jax_enable_x64
  pyjax.config.update("jax_enable_x64", True)
  yield
  pyjax.config.update("jax_enable_x64", prev)


def dot2(x, y, pref=None):
  return lax.dot_general(x, y, (((1,), (0,)), ((), ())), preferred_element_type=pref)


def three_tiers(f, *args):
  """Results of ``f`` eagerly, jitted on the NumPy tier and jitted natively (arrays, or
  lists of arrays for a tuple of results)."""
  def host(out):
    return [np.asarray(o) for o in out] if isinstance(out, (tuple, list)) else np.asarray(out)
  eager = host(f(*args))
  with compile_mode("off"):
    numpy_tier = host(pyjax.jit(f)(*args))
  with compile_mode("sync"):
    jf = pyjax.jit(f)
    exe = jf.lower(*args).compile().runtime_executable()
    assert exe.tier == "native", exe.error
    assert not exe.native.host_steps, [s.node.prim for s in exe.native.host_steps]
    native = host(jf(*args))
  return eager, numpy_tier, native


# --- the kernel, directly ----------------------------------------------------------------
@pytest.mark.parametrize("dt", dtype_params(INTS + [np.dtype(np.bool_)]))
@pytest.mark.parametrize("mkn", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_kernel_wraps_like_numpy(dt, mkn):
  m, k, n = mkn
  rng = np.random.default_rng(m * 1000 + k * 10 + n)
  a, b = rand(rng, (2, m, k), dt), rand(rng, (2, k, n), dt)
  got = gemm_c.eager_matmul(a, b, dt)
  assert got is not None and got.dtype == dt and got.shape == (2, m, n)
  for i in range(2):
    assert_same(got[i], int_ref(a[i], b[i], dt))


@pytest.mark.parametrize("ind,out", [(np.int8, np.int32), (np.uint8, np.int32),
                                     (np.int8, np.uint16), (np.int16, np.int64),
                                     (np.uint32, np.uint64), (np.bool_, np.int32),
                                     (np.int64, np.int8), (np.uint8, np.uint8)])
def test_kernel_preferred_types(ind, out):
  rng = np.random.default_rng(3)
  a, b = rand(rng, (1, 45, 611), ind), rand(rng, (1, 611, 23), ind)
  assert_same(gemm_c.eager_matmul(a, b, np.dtype(out))[0], int_ref(a[0], b[0], out))


def test_kernel_strided_operands():
  rng = np.random.default_rng(4)
  base = rand(rng, (3, 40, 70), np.int32)
  cases = [
      (base[:, ::2, 1::3], base[:, 5:28, ::-2].transpose(0, 2, 1)[:, :, :17]),  # odd strides
      (base[:, :, ::-1][:, :31, :9], base[:, 3:12, 10:40]),                   # negative
      (np.broadcast_to(base[:1, :7, :9], (3, 7, 9)), base[:, :9, :5]),        # zero batch stride
      (base.transpose(0, 2, 1)[:, :11, :40], base[:, :, :13]),                # transposed
  ]
  for a, b in cases:
    b = b[:, :a.shape[2], :]
    got = gemm_c.eager_matmul(a, b, np.dtype(np.int32))
    want = np.stack([int_ref(a[i], b[i], np.int32) for i in range(a.shape[0])])
    assert_same(got, want)


def test_kernel_misaligned_view():
  raw = np.zeros(4 * 30 * 30 + 1, np.uint8)
  a = raw[1:].view(np.int32).reshape(1, 30, 30)       # not 4-byte aligned
  a[...] = np.arange(900, dtype=np.int32).reshape(1, 30, 30) - 450
  assert_same(gemm_c.eager_matmul(a, a, np.dtype(np.int32))[0], int_ref(a[0], a[0], np.int32))


def test_kernel_call_releases_the_gil():
  # the eager product runs on the stream's worker thread: the caller must keep running
  # (the kernel libraries are PyDLLs, whose functions would hold the GIL)
  import ctypes
  import gc
  fn = gemm_c._entry(np.dtype(np.int32), np.dtype(np.int32), np.dtype(np.int32))
  assert not type(fn)._flags_ & ctypes._FUNCFLAG_PYTHONAPI
  # the pointer keeps its library loaded (the compile cache unloads unreferenced ones)
  assert fn._pyjax_lib is not None
  gc.collect()
  a = np.arange(3 * 40 * 40, dtype=np.int32).reshape(3, 40, 40)
  assert_same(gemm_c.eager_matmul(a, a, np.dtype(np.int32))[1], int_ref(a[1], a[1], np.int32))


def test_kernel_unsupported_combinations():
  a = np.ones((1, 2, 2), np.float32)
  assert gemm_c.eager_matmul(a, a, F32) is None                 # BLAS's
  i = np.ones((1, 2, 2), np.int8)
  assert gemm_c.eager_matmul(i, i, F32) is None                 # int -> float: not here
  assert gemm_c.eager_matmul(i, np.ones((1, 2, 2), np.int16), np.dtype(np.int16)) is None
  assert gemm_c.acc_of(np.int8, np.int8, np.bool_) is None
  assert gemm_c.acc_of(F16, F16, np.float64) is None


# --- eager dot_general / jnp.dot ----------------------------------------------------------
def test_demo_int32_dot():
  a = jnp.array(range(1000000)).reshape((1000, 1000))
  got = jnp.dot(a, a)
  an = np.arange(1000000, dtype=np.float64).reshape(1000, 1000)
  assert got.dtype == np.int32
  # float64 BLAS is exact here (every partial sum is an integer below 2**53)
  assert_same(got, (an @ an).astype(np.int64).astype(np.int32))


@pytest.mark.parametrize("dt", dtype_params(INTS + [np.dtype(np.bool_)]))
def test_eager_dims_batch_and_contracting(dt, x64):
  rng = np.random.default_rng(5)
  x, y = rand(rng, (4, 3, 6, 5), dt), rand(rng, (5, 6, 4, 2), dt)
  dn = (((2, 3), (1, 0)), ((0,), (2,)))
  got = lax.dot_general(jnp.asarray(x), jnp.asarray(y), dn)
  want = np.stack([int_ref(x[i].reshape(3, 30), y[:, :, i, :].transpose(1, 0, 2).reshape(30, 2),
                           dt) for i in range(4)])
  assert_same(got, want)


def test_small_int_products_stay_on_numpy(monkeypatch):
  calls = []
  monkeypatch.setattr(gemm_c, "eager_matmul", lambda *a: calls.append(a) or None)
  a = jnp.ones((4, 4), jnp.int32)
  np.testing.assert_array_equal(jnp.dot(a, a), np.full((4, 4), 4))
  assert not calls
  assert dot.NATIVE_INT_MIN_WORK == 16384
  b, c = jnp.ones((16, 31), jnp.int32), jnp.ones((31, 32), jnp.int32)  # 15872 multiply-adds
  np.testing.assert_array_equal(jnp.dot(b, c), np.full((16, 32), 31))
  assert not calls
  b, c = jnp.ones((16, 32), jnp.int32), jnp.ones((32, 32), jnp.int32)  # 16384
  np.testing.assert_array_equal(jnp.dot(b, c), np.full((16, 32), 32))
  assert len(calls) == 1
  h = jnp.ones((2, 2), jnp.float16)                                      # halves: always
  np.testing.assert_array_equal(jnp.dot(h, h), np.full((2, 2), 2, np.float16))
  assert len(calls) == 2


# --- three tiers agree ---------------------------------------------------------------------
@pytest.mark.parametrize("dt,pref", [(np.int32, None), (np.int8, np.int32), (np.int8, None),
                                     (np.uint8, np.uint32), (np.bool_, None),
                                     (np.int16, None), (F16, None), (F16, F32),
                                     (BF16, None), (BF16, F32)],
                         ids=lambda v: "none" if v is None else np.dtype(v).name)
def test_eager_numpy_tier_native_tier_bit_identical(dt, pref):
  rng = np.random.default_rng(6)
  cases = [((37, 301), (301, 29), (((1,), (0,)), ((), ()))),
           ((2, 7, 5), (2, 3, 7), (((1,), (2,)), ((0,), (0,)))),
           ((4, 3, 6, 5), (5, 6, 4, 2), (((2, 3), (1, 0)), ((0,), (2,)))),
           ((0, 3), (3, 4), (((1,), (0,)), ((), ()))),
           ((5, 0), (0, 4), (((1,), (0,)), ((), ())))]
  args = [jnp.asarray(rand(rng, shape, dt)) for ls, rs, _ in cases for shape in (ls, rs)]

  def f(*xs):   # one program: one build
    return tuple(lax.dot_general(xs[2 * i], xs[2 * i + 1], dn, preferred_element_type=pref)
                 for i, (_, _, dn) in enumerate(cases))
  eager, numpy_tier, native = three_tiers(f, *args)
  for e, t, n in zip(eager, numpy_tier, native):
    assert_same(t, e)
    assert_same(n, e)


def test_native_tier_transposed_operands_and_fusion():
  # operands that are transposes / fused producers; a consumer fused after the product
  rng = np.random.default_rng(7)
  x, y = rand(rng, (50, 40), np.int8), rand(rng, (33, 50), np.int8)
  f = lambda a, b: (lax.dot_general(a.T + 1, b.T * 2, (((1,), (0,)), ((), ())),  # noqa: E731
                                    preferred_element_type=jnp.int32) - 3).T
  eager, numpy_tier, native = three_tiers(f, jnp.asarray(x), jnp.asarray(y))
  want = (int_ref((x.T + 1).astype(np.int8), (y.T * 2).astype(np.int8), np.int32) - 3).T
  assert_same(eager, want)
  assert_same(numpy_tier, want)
  assert_same(native, want)


def test_native_tier_runs_the_kernel():
  with compile_mode("sync"):
    f = pyjax.jit(lambda a, b: jnp.dot(a, b))
    a = jnp.ones((20, 30), jnp.int32)
    text = f.lower(a, a.T).compile().as_text()
  assert re.search(r"pj_xg_run_int32_int32_int32\(&G\)", text)


def test_native_tier_in_loop():
  def f(a):
    return lax.fori_loop(0, 3, lambda i, c: jnp.dot(c, a) % 1000 + i, a)
  a = jnp.asarray(np.arange(64 * 64, dtype=np.int32).reshape(64, 64) % 7)
  eager, numpy_tier, native = three_tiers(f, a)
  c = np.asarray(a).astype(np.int64)
  for i in range(3):
    c = (int_ref(c.astype(np.int32), np.asarray(a), np.int32).astype(np.int64) % 1000) + i
  assert_same(eager, c.astype(np.int32))
  assert_same(native, eager)
  assert_same(numpy_tier, eager)


# --- halves: the kernel's summation order --------------------------------------------------
@pytest.mark.parametrize("dt", [F16, BF16], ids=["float16", "bfloat16"])
@pytest.mark.parametrize("mkn", [(1, 1, 1), (7, 13, 5), (37, 301, 61), (5, 1100, 3),
                                 (4, 777, 70)],
                         ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("pref", [None, F32], ids=["same", "f32"])
def test_halves_sequential_float32_sums(dt, mkn, pref):
  m, k, n = mkn
  rng = np.random.default_rng(k)
  a, b = rand(rng, (m, k), dt), rand(rng, (k, n), dt)
  got = dot2(jnp.asarray(a), jnp.asarray(b), pref)
  assert_same(got, seq_ref(a, b, pref or dt, pairs=dt == BF16))


@pytest.mark.parametrize("dt", [F16, BF16], ids=["float16", "bfloat16"])
def test_halves_long_vector_dot(dt):
  # 2M-long contraction: summed in order through ~8000 slices (bounded scratch memory)
  k = 2_000_003
  rng = np.random.default_rng(12)
  a, b = rand(rng, k, dt), rand(rng, k, dt)
  got = lax.dot_general(jnp.asarray(a), jnp.asarray(b), (((0,), (0,)), ((), ())),
                        preferred_element_type=jnp.float32)
  prod = a.astype(np.float32) * b.astype(np.float32)       # exact
  if dt == BF16:
    order = np.arange(k) ^ 1
    order[-1] = k - 1
    prod = prod[order]
  assert_same(got, np.cumsum(prod, dtype=np.float32)[-1])  # sequential float32 sums


def test_halves_specials():
  a = np.array([[np.inf, 1, np.nan], [65504, 65504, 0], [1e-7, 1e-7, 0]], np.float16)
  b = np.array([[1, 2], [-1, 3], [0, 0]], np.float16)
  got = np.asarray(dot2(jnp.asarray(a), jnp.asarray(b)))
  want = seq_ref(a, b, F16)
  assert np.array_equal(np.isnan(got), np.isnan(want))
  assert_same(np.nan_to_num(got), np.nan_to_num(want))


# --- real JAX -------------------------------------------------------------------------------
@pytest.mark.parametrize("dt,pref", [(np.int32, None), (np.int8, None), (np.int8, np.int32),
                                     (np.uint8, np.int32), (np.uint16, None), (np.bool_, None),
                                     (np.bool_, np.int32), (np.int64, None),
                                     (np.uint64, None), (np.int16, np.int64)],
                         ids=str)
def test_integers_match_jax(dt, pref, x64):
  jax = pytest.importorskip("jax")
  jax.config.update("jax_enable_x64", True)
  try:
    rng = np.random.default_rng(8)
    for ls, rs, dn in [((37, 300), (300, 23), (((1,), (0,)), ((), ()))),
                       ((3, 11, 8, 2), (8, 2, 3, 5), (((2, 3), (0, 1)), ((0,), (2,))))]:
      x, y = rand(rng, ls, dt), rand(rng, rs, dt)
      want = jax.lax.dot_general(x, y, dn, preferred_element_type=pref)
      got = lax.dot_general(jnp.asarray(x), jnp.asarray(y), dn, preferred_element_type=pref)
      assert_same(got, np.asarray(want))
  finally:
    jax.config.update("jax_enable_x64", False)


def _has_avx512_bf16():
  try:
    with open("/proc/cpuinfo") as f:
      return "avx512_bf16" in f.read()
  except OSError:
    return False


@pytest.mark.parametrize("mkn", [(1, 33, 1), (17, 33, 9), (64, 300, 64), (128, 1000, 64)],
                         ids=lambda s: "x".join(map(str, s)))
def test_bfloat16_to_float32_matches_jax_bits(mkn):
  # XLA's CPU backend (through its AVX512-BF16 kernels) sums bfloat16 products in float32
  # pairwise, odd element first; on other CPUs its order differs and so may the last bit
  jax = pytest.importorskip("jax")
  m, k, n = mkn
  rng = np.random.default_rng(9)
  a, b = rand(rng, (m, k), BF16), rand(rng, (k, n), BF16)
  want = np.asarray(jax.lax.dot_general(a, b, (((1,), (0,)), ((), ())),
                                        preferred_element_type=np.float32))
  got = np.asarray(dot2(jnp.asarray(a), jnp.asarray(b), F32))
  if _has_avx512_bf16():
    assert_same(got, want)
  else:
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mkn", [(32, 33, 32), (64, 64, 64), (64, 300, 64)],
                         ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("pref", [None, F32], ids=["same", "f32"])
def test_float16_matches_jax_bits(mkn, pref):
  # shapes on which XLA's float32 GEMM also sums in order k = 0, 1, ... (for long
  # contractions and thin operands its kernels regroup the sums: see the next test)
  jax = pytest.importorskip("jax")
  m, k, n = mkn
  rng = np.random.default_rng(10)
  a, b = rand(rng, (m, k), F16), rand(rng, (k, n), F16)
  want = np.asarray(jax.lax.dot_general(a, b, (((1,), (0,)), ((), ())),
                                        preferred_element_type=pref))
  assert_same(dot2(jnp.asarray(a), jnp.asarray(b), pref), want)


@pytest.mark.parametrize("dt", [F16, BF16], ids=["float16", "bfloat16"])
def test_halves_close_to_jax_everywhere(dt):
  jax = pytest.importorskip("jax")
  rng = np.random.default_rng(11)
  for m, k, n in [(3, 5, 4), (17, 33, 9), (128, 1000, 64), (300, 2000, 30)]:
    a, b = rand(rng, (m, k), dt), rand(rng, (k, n), dt)
    want = np.asarray(jax.numpy.dot(a, b)).astype(np.float64)
    got = np.asarray(jnp.dot(jnp.asarray(a), jnp.asarray(b))).astype(np.float64)
    # one unit in the last place of the half result, plus what a different order of the
    # float32 sums can change (cancellation makes that many half ulps of a small result)
    big = np.maximum(np.abs(want), np.abs(got)).astype(dt)
    mag = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    tol = np.spacing(big).astype(np.float64) + k * 2.0 ** -24 * mag
    assert np.all(np.abs(got - want) <= tol), np.max(np.abs(got - want) / tol)
    assert np.mean(got == want) > 0.99


# --- AddressSanitizer -----------------------------------------------------------------------
@pytest.mark.slow
def test_sanitizers_int_matmul(tmp_path):
  """This file's kernel, eager and native-tier tests with the C built under AddressSanitizer
  and UndefinedBehaviorSanitizer (packing and tile stores at every edge)."""
  sanitizers.run_pytest(tmp_path, __file__, [
      "-k", "kernel or eager or tier or halves_sequential", "-p", "no:randomly"])

