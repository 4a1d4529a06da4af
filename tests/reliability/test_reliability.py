"""Reliability defects: wrong answers and bad input, checked against real JAX.

Each test here failed before its fix.  JAX is the oracle (tests skip without it); the
native (C-compiled) tier runs where a C compiler exists and is compared with the NumPy
tier and with JAX.
"""
import itertools
import warnings

import ml_dtypes
import numpy as np
import pytest

import pyjax
import pyjax.dtypes
import pyjax.numpy as pjnp
from pyjax import lax as plax
from pyjax._src.backends.cpu import executable

jax = pytest.importorskip("jax")
jnp = jax.numpy
jlax = jax.lax

compile_mode = executable.compile_mode_override


def _native_available():
  from pyjax._src.backends.cpu.compiler.native import build
  return build.toolchain() is not None


needs_cc = pytest.mark.skipif(not _native_available(), reason="no C compiler")


@pytest.fixture
def x64():
  prev, jprev = pyjax.config.jax_enable_x64, jax.config.jax_enable_x64
  pyjax.config.update("jax_enable_x64", True)
  jax.config.update("jax_enable_x64", True)
  yield
  pyjax.config.update("jax_enable_x64", prev)
  jax.config.update("jax_enable_x64", jprev)


def _tiers(f, *args):
  """{tier: outputs of pyjax.jit(f)} for the NumPy tier and (when it builds) native."""
  out = {}
  with compile_mode("off"):
    out["numpy"] = pyjax.jit(lambda *a: f(*a))(*args)
  if _native_available():
    with compile_mode("sync"):
      jf = pyjax.jit(lambda *a: f(*a))
      exe = jf.lower(*args).compile().runtime_executable()
      assert exe.error is None, exe.error
      out[exe.tier if exe.tier == "native" else "numpy-again"] = jf(*args)
  return out


def _bits(a):
  """Bit patterns of ``a`` with every NaN mapped to one pattern (payloads may differ)."""
  a = np.asarray(a)
  if a.dtype == np.bool_:
    return a.view(np.uint8)
  b = a.view(f"u{a.dtype.itemsize}").copy()
  if a.dtype.kind == "f" or a.dtype == ml_dtypes.bfloat16:
    b[np.isnan(a.astype(np.float64))] = 0
  return b


# --- float -> int -> float: the sign of zero on the native tier ---------------------------
def test_round_trip_through_int_keeps_positive_zero():
  f = lambda x: 1.0 / x.astype(pjnp.int32).astype(pjnp.float32)
  for tier, r in _tiers(f, np.float32(-0.5)).items():
    assert float(r) == np.inf, tier
  assert float(jax.jit(lambda x: 1.0 / x.astype(jnp.int32).astype(jnp.float32))(-0.5)) == np.inf


_FLOATS = [np.dtype(ml_dtypes.bfloat16), np.dtype(np.float16), np.dtype(np.float32),
           np.dtype(np.float64)]
_INTS = [np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64,
                               np.uint8, np.uint16, np.uint32, np.uint64)]
_ALL = _FLOATS + _INTS + [np.dtype(np.bool_)]


def _special_values(d):
  if d == np.bool_:
    return np.array([True, False])
  if d in _INTS:
    ii = np.iinfo(d)
    v = [0, 1, 2, -1, 255, 256, ii.max, ii.min, ii.max - 1, ii.min + 1, 2**24 + 1, 2**31 - 1,
         -(2**31), 2**53 + 1, 2**63 - 1]
    return np.array([x for x in v if ii.min <= x <= ii.max], d)
  fi = ml_dtypes.finfo(d)
  v = [0.0, -0.0, np.inf, -np.inf, np.nan, -0.5, -0.9999, -1e-30, 0.5, 0.9999, 1.0, -1.0,
       1.5, -1.5, 2.5, -2.5, 127.5, 128, -128.5, -129, 255.5, 256, 32767.5, 32768, -32769,
       65535.5, 65536, 2.0**31, 2.0**31 - 128, -2.0**31, -2.0**31 - 4096, 2.0**32, 2.0**63,
       -2.0**63, 2.0**64, 1e10, -1e10, 1e30, -1e30, 3e38, -3e38, 1e300, -1e300,
       float(fi.max), -float(fi.max), float(fi.tiny), -float(fi.tiny),
       float(fi.smallest_subnormal), -float(fi.smallest_subnormal)]
  with np.errstate(all="ignore"):
    return np.array(v, np.float64).astype(d)


def _flushed_by_xla(x, src, dst):
  """XLA:CPU runs with denormals flushed to zero (FTZ/DAZ): a subnormal input reads as 0
  wherever its value is used in float arithmetic wider than storage.  pyjax keeps IEEE
  subnormals (docs/differences.md); those lanes are not compared with JAX."""
  if src not in _FLOATS or src == np.float16:
    return np.zeros(x.shape, bool)
  xf = x.astype(np.float64)
  return (xf != 0) & (np.abs(xf) < float(ml_dtypes.finfo(src).tiny))


@pytest.mark.parametrize("src", _ALL, ids=lambda d: d.name)
def test_conversions_special_values(src, x64):
  """Every dtype pair on special values (zeros, infinities, NaN, subnormals, extremes,
  values in (-1, 0], out-of-range values): native tier == NumPy tier == JAX."""
  x = _special_values(src)
  outs = _tiers(lambda v: [v.astype(t) for t in _ALL], x)
  ref = jax.jit(lambda v: [v.astype(t) for t in _ALL])(x)
  for i, dst in enumerate(_ALL):
    want = _bits(np.asarray(ref[i]))
    keep = ~_flushed_by_xla(x, src, dst)
    for tier, got in outs.items():
      g = _bits(np.asarray(got[i]))
      assert np.array_equal(g[keep], want[keep]), (tier, src, dst, x[keep][g[keep] != want[keep]])
    for tier, got in outs.items():
      assert np.array_equal(_bits(got[i]), _bits(outs["numpy"][i])), (tier, src, dst)


@pytest.mark.parametrize("src", _FLOATS, ids=lambda d: d.name)
def test_float_int_float_round_trips(src, x64):
  x = _special_values(src)
  prog = lambda v: [v.astype(t).astype(v.dtype) for t in _INTS]
  outs = _tiers(prog, x)
  ref = jax.jit(prog)(x)
  keep = ~_flushed_by_xla(x, src, src)
  for i in range(len(_INTS)):
    want = _bits(np.asarray(ref[i]))
    for tier, got in outs.items():
      assert np.array_equal(_bits(got[i])[keep], want[keep]), (tier, _INTS[i])
      assert np.array_equal(_bits(got[i]), _bits(outs["numpy"][i])), (tier, _INTS[i])


# --- bool * float: XLA's select ------------------------------------------------------------
def _pred_product_cases(m):
  nan = float("nan")
  b = m.array([True, False])
  x = m.array([-2.0, nan])
  return [
      lambda: b * nan, lambda: b * x, lambda: x * b, lambda: m.multiply(b, -2.0),
      lambda: False * m.float32(nan), lambda: m.multiply(np.bool_(False), m.float32(-1)),
      lambda: np.array([False, True]) * x, lambda: m.array(False) * x,
      lambda: m.array([[True], [False]]) * x, lambda: b * x.astype(m.float16),
      lambda: b * x.astype(m.bfloat16), lambda: b * (x * 1j), lambda: b * m.array([1, 2]),
      lambda: b * b,
  ]


def _summary(r):
  r = np.asarray(r)
  return str(r.dtype), _bits(r).tolist()


def test_bool_times_float_eager_matches_jax():
  got = _pred_product_cases(pjnp)
  want = _pred_product_cases(jnp)
  for i, (g, w) in enumerate(zip(got, want)):
    gr, wr = g(), w()
    assert _summary(gr) == _summary(wr), i
    assert gr.weak_type == wr.weak_type, i


def _pred_programs(m):
  return [
      lambda b, x: b * m.nan,
      lambda b, x: b.astype(m.float32) * x,
      lambda b, x: x * b.astype(m.float16),
      lambda b, x: b.astype(m.int32).astype(m.float32) * x,   # not the pattern
      lambda b, x: b.astype(m.bfloat16) * x.astype(m.bfloat16),   # nor this (bf16)
      lambda b, x: m.array(False) * x,   # a constant boolean: folded before XLA
      lambda b, x: b[0] * x,   # broadcast boolean
      lambda b, x: b * (x + 1j),
  ]


def test_bool_times_float_jit_both_tiers_match_jax():
  b = np.array([True, False, True, False])
  x = np.array([-2.0, -3.0, np.nan, np.inf], np.float32)
  for i, (p, j) in enumerate(zip(_pred_programs(pjnp), _pred_programs(jnp))):
    want = _summary(jax.jit(j)(b, x))
    for tier, got in _tiers(p, b, x).items():
      assert _summary(got) == want, (i, tier)


def test_bool_times_float_in_loop_bodies():
  b = np.array([True, False])
  x = np.array([np.nan, -1.0], np.float32)
  p = lambda b, x: plax.fori_loop(0, 2, lambda i, c: b * c, x)
  j = lambda b, x: jlax.fori_loop(0, 2, lambda i, c: b * c, x)
  want = _summary(jax.jit(j)(b, x))
  for tier, got in _tiers(p, b, x).items():
    assert _summary(got) == want, tier
  c = lambda m, lx: (lambda b, x: lx.cond(True, lambda: b * x, lambda: x))
  want = _summary(jax.jit(c(jnp, jlax))(b, x))
  for tier, got in _tiers(c(pjnp, plax), b, x).items():
    assert _summary(got) == want, tier


# --- strict dtype promotion -----------------------------------------------------------------
def _promotion_operands(m):
  return [True, 2, 2.5, 1j, m.ones(2, m.bool_), m.ones(2, m.int8), m.ones(2, m.uint8),
          m.ones(2, m.int32), m.ones(2, m.float16), m.ones(2, m.bfloat16), m.ones(2, m.float32),
          m.ones(2, m.complex64), m.asarray(3.0), m.asarray(3)]


def _promotion_outcome(m, a, b):
  try:
    r = m.multiply(a, b)
  except Exception as e:  # noqa: BLE001
    return type(e).__name__
  return str(r.dtype), bool(r.weak_type)


@pytest.mark.parametrize("mode", ["strict", pytest.param("standard", marks=pytest.mark.slow)])
def test_promotion_matrix_matches_jax(mode):
  prev, jprev = pyjax.config.jax_numpy_dtype_promotion, jax.config.jax_numpy_dtype_promotion
  pyjax.config.update("jax_numpy_dtype_promotion", mode)
  jax.config.update("jax_numpy_dtype_promotion", mode)
  try:
    po, jo = _promotion_operands(pjnp), _promotion_operands(jnp)
    n = len(po)
    for i, k in itertools.product(range(n), range(n)):
      assert _promotion_outcome(pjnp, po[i], po[k]) == _promotion_outcome(jnp, jo[i], jo[k]), (
          mode, i, k)
  finally:
    pyjax.config.update("jax_numpy_dtype_promotion", prev)
    jax.config.update("jax_numpy_dtype_promotion", jprev)


def test_strict_promotion_accepts_weak_scalars_under_jit():
  prev = pyjax.config.jax_numpy_dtype_promotion
  pyjax.config.update("jax_numpy_dtype_promotion", "strict")
  try:
    r = pyjax.jit(lambda x: x * 2)(pjnp.ones(2))
    assert r.dtype == np.float32 and not r.weak_type
    np.testing.assert_array_equal(r, [2.0, 2.0])
    r = pjnp.multiply(2, 3.0)
    assert r.dtype == np.float32 and r.weak_type and float(r) == 6.0
    with pytest.raises(pyjax.dtypes.TypePromotionError, match=r"Input dtypes \(\"<class "
                       r"'float'>\", 'int32'\)|Input dtypes \('int32', \"<class 'float'>\"\)"):
      pjnp.ones(2, pjnp.int32) * 2.0
  finally:
    pyjax.config.update("jax_numpy_dtype_promotion", prev)


def test_strict_promote_types_and_result_type_match_jax():
  names = ["bool", "int8", "int16", "int32", "uint8", "float16", "bfloat16", "float32",
           "complex64"]

  def outcome(m, f, *a):
    try:
      return str(f(*a))
    except Exception as e:  # noqa: BLE001
      return type(e).__name__
  prev, jprev = pyjax.config.jax_numpy_dtype_promotion, jax.config.jax_numpy_dtype_promotion
  pyjax.config.update("jax_numpy_dtype_promotion", "strict")
  jax.config.update("jax_numpy_dtype_promotion", "strict")
  try:
    for a, b in itertools.product(names, names):
      assert (outcome(pjnp, pjnp.promote_types, a, b)
              == outcome(jnp, jnp.promote_types, a, b)), (a, b)
      for w in (2, 2.0, 2j):
        assert (outcome(pjnp, pjnp.result_type, a, w)
                == outcome(jnp, jnp.result_type, a, w)), (a, w)
  finally:
    pyjax.config.update("jax_numpy_dtype_promotion", prev)
    jax.config.update("jax_numpy_dtype_promotion", jprev)


# --- weak types of gradients through control flow -------------------------------------------
def _weak_programs(m, lx):
  return {
      "plain": lambda x: x * 2,
      "fori": lambda x: lx.fori_loop(0, 3, lambda i, c: c * 1.1, x),
      "fori_strong_body": lambda x: lx.fori_loop(0, 3, lambda i, c: c * m.float32(1.1), x),
      "fori_mixed": lambda x: lx.fori_loop(0, 3, lambda i, c: c + m.ones(()), x),
      "scan": lambda x: lx.scan(lambda c, _: (c * 2, None), x, None, length=2)[0],
      "scan_ys": lambda x: lx.scan(lambda c, _: (c * 2, c), x, None, length=2)[1].sum(),
      "scan_xs": lambda x: lx.scan(lambda c, y: (c * y, None), x, m.arange(3.0))[0],
      "cond": lambda x: lx.cond(x > 0, lambda v: v * 3, lambda v: v, x),
      "cond_strong": lambda x: lx.cond(True, lambda v: v * m.float32(2), lambda v: v, x),
      "all3": lambda x: lx.cond(x > 0, lambda v: v * 3, lambda v: v, lx.scan(
          lambda c, _: (c * m.float32(2), None),
          lx.fori_loop(0, 3, lambda i, c: c + m.ones(()), x), None, length=2)[0]),
  }


@pytest.mark.parametrize("name", list(_weak_programs(jnp, jlax)))
def test_grad_weak_type_through_control_flow(name):
  pf = _weak_programs(pjnp, plax)[name]
  jf = _weak_programs(jnp, jlax)[name]
  for arg in (0.3, np.float32(0.3)):
    for wrap_p, wrap_j in ((pyjax.grad, jax.grad), (lambda f: pyjax.jit(pyjax.grad(f)),
                                                   lambda f: jax.jit(jax.grad(f)))):
      g, w = wrap_p(pf)(arg), wrap_j(jf)(arg)
      assert (g.dtype, g.weak_type) == (w.dtype, w.weak_type), (name, arg)
      np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5)


# --- bad input ---------------------------------------------------------------------------------
_BAD_ARRAYS = {
    "object": lambda: np.array([1, 2], dtype=object),
    "datetime64": lambda: np.array(["2020-01-01", "2020-01-02"], dtype="datetime64[D]"),
    "timedelta64": lambda: np.array([1, 2], dtype="timedelta64[s]"),
    "byteswapped_f4": lambda: np.arange(2, dtype=">f4"),
    "byteswapped_i8": lambda: np.arange(2, dtype=">i8"),
}


def _entry_points(m, lx, j):
  return {
      "asarray": m.asarray, "array": m.array, "add": lambda a: m.ones(2) + a, "sum": m.sum,
      "sin": m.sin, "lax.add": lambda a: lx.add(a, a), "device_put": j.device_put,
      "jit": j.jit(lambda a: a * 2), "vmap": j.vmap(lambda v: v),
  }


@pytest.mark.parametrize("kind", list(_BAD_ARRAYS))
def test_unsupported_numpy_dtypes_raise_type_error_as_jax(kind):
  """JAX 0.10 rejects object, datetime64/timedelta64 and non-native byte order arrays with
  TypeError at every entry point (no KeyError later, no silent cast under jit)."""
  a = _BAD_ARRAYS[kind]()
  pe, je = _entry_points(pjnp, plax, pyjax), _entry_points(jnp, jlax, jax)
  for name in pe:
    with pytest.raises(TypeError) as ej:
      je[name](a)
    with pytest.raises(TypeError) as ep:
      pe[name](a)
    if name in ("asarray", "array"):
      assert str(ep.value) == str(ej.value)
    if name == "jit":
      assert str(ep.value).startswith("Error interpreting argument to")


@pytest.mark.parametrize("obj", [[[1, 2], [3]], [[1.0, 2.0], [3.0]], [[1, 2], 3]])
def test_ragged_lists_raise_value_error(obj):
  with pytest.raises(ValueError) as ej:
    jnp.array(obj)
  with pytest.raises(ValueError) as ep:
    pjnp.array(obj)
  assert "inhomogeneous" in str(ep.value) and "inhomogeneous" in str(ej.value)
  with pytest.raises(ValueError):
    pjnp.asarray(obj)


def test_impossible_allocations_raise_jax_runtime_error():
  assert issubclass(pyjax.errors.JaxRuntimeError, RuntimeError)
  with pytest.raises(jax.errors.JaxRuntimeError, match="RESOURCE_EXHAUSTED: Out of memory"):
    jnp.zeros((1 << 40,), jnp.float32)
  # 2**48 bytes: beyond any address space, so even an overcommitting kernel refuses it
  n = 1 << 46
  with pytest.raises(pyjax.errors.JaxRuntimeError,
                     match=r"^RESOURCE_EXHAUSTED: Out of memory allocating 281474976710656 "
                           r"bytes\.$"):
    pjnp.zeros((n,), pjnp.float32)
  x = pjnp.ones(2)
  with pytest.raises(pyjax.errors.JaxRuntimeError, match="RESOURCE_EXHAUSTED"):
    # read: natively compiled large programs run asynchronously and raise at the first
    # read (docs/differences.md), the NumPy tier at the call
    pyjax.jit(lambda v: pjnp.broadcast_to(v[0], (n,)) + 1)(x).block_until_ready()
  with pytest.raises(pyjax.errors.JaxRuntimeError, match="RESOURCE_EXHAUSTED"):
    pjnp.broadcast_to(x[0], (n,)) + 1


def test_shape_beyond_int64_is_a_type_error():
  with pytest.raises(TypeError):
    jnp.zeros((2**63,))
  with pytest.raises(TypeError):
    pjnp.zeros((2**63,))
  with pytest.raises(TypeError):
    pjnp.ones((2, 2**64))


def test_wrong_size_reshape_is_a_value_error():
  with pytest.raises(ValueError):
    jax.jit(lambda v: jlax.reshape(v, (4,)))(jnp.ones(6))
  with pytest.raises(ValueError, match="reshape total size must be unchanged"):
    plax.reshape(pjnp.ones(6), (4,))
  with pytest.raises(ValueError, match="reshape total size must be unchanged"):
    pyjax.jit(lambda v: plax.reshape(v, (4,)))(pjnp.ones(6))


@pytest.mark.parametrize("dev", [5, "gpu", "cpu", 1.5])
def test_device_put_invalid_placement_is_value_error(dev):
  with pytest.raises(ValueError) as ej:
    jax.device_put(jnp.ones(2), dev)
  with pytest.raises(ValueError) as ep:
    pyjax.device_put(pjnp.ones(2), dev)
  assert str(ep.value) == str(ej.value)
  with pytest.raises(ValueError):
    pyjax.device_put((pjnp.ones(2), pjnp.ones(2)), (dev, None))


# --- errors inside compiled code: the same class, surfacing at the call, on every tier -------
def _raising(v):
  raise ValueError("boom")


def _callback_programs(m, j):
  import importlib
  io_callback = importlib.import_module(j.__name__ + ".experimental").io_callback
  return {
      "pure_callback": lambda v: j.pure_callback(
          _raising, j.ShapeDtypeStruct(v.shape, v.dtype), v) + 1,
      "debug_callback": lambda v: (j.debug.callback(_raising, v), v + 1)[1],
      "io_callback": lambda v: (io_callback(_raising, None, v), v + 1)[1],
      "in_cond": lambda v: j.lax.cond(True, lambda u: j.pure_callback(
          _raising, j.ShapeDtypeStruct(u.shape, u.dtype), u), lambda u: u, v) * 2,
  }


@pytest.mark.parametrize("size", [3, 1 << 17])   # small: synchronous; big: async-eligible
@pytest.mark.parametrize("name", ["pure_callback", "debug_callback", "io_callback", "in_cond"])
def test_callback_errors_surface_at_the_call_on_every_tier(name, size):
  import logging
  logging.getLogger("jax._src.debugging").disabled = True
  x = np.ones(size, np.float32)
  with pytest.raises(jax.errors.JaxRuntimeError, match="CpuCallback error"):
    # JAX: at the call for device arrays (with a NumPy input it may surface at a read)
    jax.jit(_callback_programs(jnp, jax)[name])(jnp.asarray(x))
  for mode in ["off"] + (["sync"] if _native_available() else []):
    with compile_mode(mode):
      f = pyjax.jit(_callback_programs(pjnp, pyjax)[name])
      with pytest.raises(pyjax.errors.JaxRuntimeError, match="INTERNAL: CpuCallback error"):
        f(x)   # raises here, not at a later read


def test_eager_debug_callback_raises_the_callbacks_own_error():
  import logging
  logging.getLogger("pyjax").disabled = True
  with pytest.raises(ZeroDivisionError):
    jax.debug.callback(lambda v: 1 / 0, jnp.ones(2))
  with pytest.raises(ZeroDivisionError):
    pyjax.debug.callback(lambda v: 1 / 0, pjnp.ones(2))


def test_compiler_thread_survives_a_failure_notice_raised_as_an_error(monkeypatch):
  """A failed native build warns; under a warnings filter that makes warnings errors the
  warning raised out of the background job and ended the compiler thread, so every later
  build (and ``drain``) waited forever."""
  orig = executable._build_native
  failed = []

  def flaky(closed, name, donate):
    if not failed:
      failed.append(name)
      raise ValueError("planted compiler failure")
    return orig(closed, name, donate)

  monkeypatch.setattr(executable, "_build_native", flaky)
  x = pyjax.numpy.arange(4.0)
  with executable.compile_mode_override("async"), warnings.catch_warnings():
    warnings.simplefilter("error")
    f = pyjax.jit(lambda x: x * 2 + 1)
    g = pyjax.jit(lambda x: x * 3 - 1)
    for h in (f, g):
      for _ in range(3):
        h(x)
      exe, = [e for entry in pyjax._src.api._fun_cache(h).values()
              for e in entry.executables.values()]
      assert exe._job is not None and exe._job.done.wait(60), "the compiler thread stopped"
    assert failed and exe.tier == "native"
  np.testing.assert_array_equal(g(x), [-1.0, 2.0, 5.0, 8.0])
