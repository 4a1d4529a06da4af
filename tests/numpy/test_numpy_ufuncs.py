"""jax.numpy's elementwise functions (pyjax._src.numpy.ufuncs) against real JAX: every
exported function on arrays of each dtype, on Python scalars (weak types) and on mixed
pairs, comparing values, result dtypes, weak types and errors (class and message); plus
the operators of Array, function names and docstrings, and a few NumPy-only checks that
run without JAX."""
import inspect
import itertools
import warnings

import ml_dtypes
import numpy as np
import pytest

import pyjax
import pyjax.numpy as pjnp
from pyjax._src.numpy import ufuncs

bf16 = np.dtype(ml_dtypes.bfloat16)
f16, f32, f64 = np.dtype("float16"), np.dtype("float32"), np.dtype("float64")
c64, c128 = np.dtype("complex64"), np.dtype("complex128")
b_ = np.dtype(bool)
i8, i16, i32, i64 = (np.dtype(t) for t in ("int8", "int16", "int32", "int64"))
u8, u16, u32, u64 = (np.dtype(t) for t in ("uint8", "uint16", "uint32", "uint64"))
DT32 = [b_, i8, u8, i16, u16, i32, u32, bf16, f16, f32, c64]
DT64 = [i64, u64, f64, c128]
SCALARS = [True, 3, -2, 2.5, -0.5, 1j]


def _n_required(fn):
  return len([p for p in inspect.signature(fn).parameters.values()
              if p.default is inspect.Parameter.empty
              and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)])


UNARY = sorted(n for n in ufuncs.__all__ if _n_required(getattr(ufuncs, n)) == 1)
BINARY = sorted(n for n in ufuncs.__all__ if _n_required(getattr(ufuncs, n)) == 2)


def arr(d, seed=0, n=6):
  """Small values of ``d`` with zeros of both signs, halves and negatives (no
  infinities: JAX's compositions treat them in ways covered by the lax tests)."""
  d = np.dtype(d)
  rng = np.random.RandomState(seed)
  if d == b_:
    return np.array([True, False, True, False, True, True][:n])
  if d.kind == "u":
    return np.array([0, 1, 3, 5, 2, 7][:n]).astype(d)
  if d.kind == "i":
    return np.array([0, -3, 5, -1, 2, 7][:n]).astype(d)
  if d.kind == "c":
    return (np.array([0, 1.5 - 2j, -0.5 + 0.25j, 3j, -2, 0.75 + 0.5j][:n])).astype(d)
  base = np.array([0.0, 1.5, -2.5, 0.25, -0.0, 0.75])
  return (base[:n] + 0.1 * rng.randn(n) * (base[:n] != 0)).astype(d)


def _eps(d):
  d = np.dtype(d)
  if d.kind == "c":
    d = f32 if d == c64 else f64
  return float(ml_dtypes.finfo(d).eps)


def _run(fn):
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    try:
      return fn(), None
    except Exception as e:  # noqa: BLE001
      return None, e


def _close(o, r, ulps):
  """NaN where JAX has NaN, equal infinities, else within ``ulps`` eps (relative, with an
  absolute floor of ``ulps`` eps for results near 0)."""
  if r.dtype.kind == "c":
    return _close(o.real, r.real, ulps) & _close(o.imag, r.imag, ulps)
  of, rf = o.astype(np.float64), r.astype(np.float64)
  eps = _eps(r.dtype)
  with np.errstate(all="ignore"):
    return ((np.isnan(of) & np.isnan(rf)) | (of == rf)
            | (np.abs(of - rf) <= ulps * eps * np.maximum(np.abs(rf), 1.0)))


def compare(ours_fn, ref_fn, ulps=8, context=""):
  ours, oe = _run(ours_fn)
  ref, re_ = _run(ref_fn)
  if re_ is not None:
    assert oe is not None, f"{context}: JAX raised {re_!r}, pyjax returned {ours!r}"
    assert isinstance(oe, type(re_)), (context, oe, re_)
    assert str(oe) == str(re_), (context, str(oe), str(re_))
    return
  if oe is not None:
    raise AssertionError(f"{context}: pyjax raised {oe!r}, JAX returned {ref!r}") from oe
  ol = ours if isinstance(ours, tuple) else (ours,)
  rl = ref if isinstance(ref, tuple) else (ref,)
  assert len(ol) == len(rl), context
  for o, r in zip(ol, rl):
    assert o.dtype == r.dtype, (context, o.dtype, r.dtype)
    assert o.shape == r.shape, (context, o.shape, r.shape)
    assert o.weak_type == r.weak_type, (context, "weak_type", o.weak_type, r.weak_type)
    on, rn = np.asarray(o), np.asarray(r)
    if rn.dtype.kind in "iub":
      np.testing.assert_array_equal(on, rn, err_msg=context)
    else:
      ok = _close(on, rn, ulps)
      assert ok.all(), f"{context}: pyjax={on[~ok]} jax={rn[~ok]}"


# ``mode`` (x32 in the default run, x64 in the slow one): tests/conftest.py


FAST_DT = [b_, i8, u32, bf16, f16, f32, c64]


def _dtypes(x64, exhaustive=False):
  if x64:
    return DT32 + DT64
  return DT32 if exhaustive else FAST_DT


# per-function tolerances (ulps) where JAX's composition and pyjax's NumPy kernels round
# differently (several roundings, or JAX's own approximations)
ULPS = {"exp2": 64, "float_power": 64, "power": 64, "pow": 64, "logaddexp": 16,
        "logaddexp2": 16, "sinc": 16, "i0": 16, "spacing": 0, "nextafter": 0}
# values where a difference between JAX and pyjax is expected and documented elsewhere
_SKIP_COMPLEX = {"arctan", "atan", "arctanh", "atanh"}  # complex NaN/inf quirks (lax tests)


@pytest.mark.parametrize("name", UNARY)
def test_unary_on_arrays(name, jax, mode):
  f = getattr(pjnp, name)
  g = getattr(jax.numpy, name)
  for d in _dtypes(mode):
    x = arr(d)
    compare(lambda: f(x), lambda: g(x), ULPS.get(name, 8), f"{name}({d.name})")


@pytest.mark.slow
@pytest.mark.parametrize("name", UNARY)
def test_unary_on_arrays_all_dtypes(name, jax):
  f = getattr(pjnp, name)
  g = getattr(jax.numpy, name)
  for d in DT32:
    x = arr(d)
    compare(lambda: f(x), lambda: g(x), ULPS.get(name, 8), f"{name}({d.name})")


@pytest.mark.parametrize("name", UNARY)
def test_unary_on_scalars_and_lists(name, jax, mode):
  f = getattr(pjnp, name)
  g = getattr(jax.numpy, name)
  values = [True, 2.5, 1j, np.float16(0.5)]
  if mode:
    values += [3, -2, -0.5, np.float32(1.5), np.int8(-3), np.uint8(3)]
  for v in values:
    compare(lambda: f(v), lambda: g(v), ULPS.get(name, 8), f"{name}({v!r})")
  compare(lambda: f([1, 2]), lambda: g([1, 2]), context=f"{name}(list)")
  compare(lambda: f((1.0, 2.0)), lambda: g((1.0, 2.0)), context=f"{name}(tuple)")


PAIRS = [(d, d) for d in DT32] + [
    (b_, i8), (i8, u8), (u8, i32), (i8, u32), (u32, i32), (bf16, f16), (i32, f32),
    (f32, c64), (b_, f32), (u8, bf16), (i16, f16), (f16, f32)]
FAST_PAIRS = [(f32, f32), (i32, i32), (b_, b_), (c64, c64), (bf16, f16), (u8, i8), (i32, f32)]
PAIRS64 = [(d, d) for d in DT64] + [(i64, u64), (i32, f64), (f32, f64), (u64, f32),
                                     (c64, f64), (i8, i64)]


@pytest.mark.parametrize("name", BINARY)
def test_binary_dtype_pairs(name, jax, mode):
  """Arrays of every dtype pair of the lattice's interesting edges (and equal dtypes):
  the promoted result dtype, weak type and values."""
  f = getattr(pjnp, name)
  g = getattr(jax.numpy, name)
  for d1, d2 in (PAIRS + PAIRS64 if mode else FAST_PAIRS):
    if name in _SKIP_COMPLEX and (d1.kind == "c" or d2.kind == "c"):
      continue
    x, y = arr(d1), arr(d2, 1)[::-1].copy()
    compare(lambda: f(x, y), lambda: g(x, y), ULPS.get(name, 8), f"{name}({d1.name}, {d2.name})")


@pytest.mark.parametrize("name", BINARY)
def test_binary_with_python_scalars(name, jax, mode):
  """Python scalars are weak: an int keeps an integer array's dtype (wrapping into it as
  JAX does), a float keeps a float array's; two scalars give a weak result."""
  f = getattr(pjnp, name)
  g = getattr(jax.numpy, name)
  if mode:
    arrays = [(d, s) for d in (b_, i8, u8, i32, bf16, f32, c64) for s in SCALARS]
    scalars = list(itertools.product(SCALARS, SCALARS))
  else:
    arrays = [(i8, 3), (u8, -2), (f32, 2.5), (b_, True), (bf16, 1j)]
    scalars = [(3, 2.5), (True, 3), (-2, 3)]
  for d, sc in arrays:
    x = arr(d)
    compare(lambda: f(x, sc), lambda: g(x, sc), ULPS.get(name, 8), f"{name}({d.name}, {sc!r})")
    compare(lambda: f(sc, x), lambda: g(sc, x), ULPS.get(name, 8), f"{name}({sc!r}, {d.name})")
  for s, t in scalars:
    compare(lambda: f(s, t), lambda: g(s, t), ULPS.get(name, 8), f"{name}({s!r}, {t!r})")
  compare(lambda: f([1, 2], 1), lambda: g([1, 2], 1), context=f"{name}(list, 1)")
  compare(lambda: f(1, (1, 2)), lambda: g(1, (1, 2)), context=f"{name}(1, tuple)")


@pytest.mark.parametrize("name", BINARY)
def test_binary_broadcasting(name, jax):
  f = getattr(pjnp, name)
  g = getattr(jax.numpy, name)
  x = arr(f32).reshape(2, 3)
  y = arr(f32, 1)[:3]
  xi, yi = arr(i32).reshape(2, 3), arr(i32, 1)[:3].reshape(1, 3)
  for a, b in ((x[:, :1], y), (xi[:1], yi.T[:2]), (x, np.ones((4, 3), np.float32)),
               (x, np.ones(4, np.float32))):
    compare(lambda: f(a, b), lambda: g(a, b), ULPS.get(name, 8),
            f"{name}({a.shape}, {b.shape})")


def test_bool_arithmetic(jax):
  """add/multiply of booleans are logical or/and; subtract and negative reject them with
  lax's errors, as in JAX."""
  b = np.array([True, False, True])
  c = np.array([True, True, False])
  for name in ("add", "multiply", "subtract", "maximum", "true_divide", "floor_divide",
               "power", "remainder", "logical_xor", "bitwise_xor", "left_shift"):
    compare(lambda: getattr(pjnp, name)(b, c), lambda: getattr(jax.numpy, name)(b, c),
            context=name)
  for name in ("negative", "sign", "square", "absolute", "sqrt", "bitwise_not", "positive"):
    compare(lambda: getattr(pjnp, name)(b), lambda: getattr(jax.numpy, name)(b), context=name)
  r = pjnp.add(True, True)
  assert r.dtype == np.bool_ and bool(r) is True and not r.weak_type
  with pytest.raises(TypeError, match="sub does not accept dtype bool"):
    pjnp.subtract(b, c)


def test_operators(jax, mode):
  """Array operators go through the jnp functions (both operand orders)."""
  import operator as op
  xs = {"f32": arr(f32), "i32": arr(i32), "u8": arr(u8), "b": arr(b_)}
  binops = [op.add, op.sub, op.mul, op.truediv, op.floordiv, op.mod, op.pow, op.and_,
            op.or_, op.xor, op.lshift, op.rshift, op.eq, op.ne, op.lt, op.le, op.gt, op.ge]
  pairs = (list(itertools.product(xs, xs)) if mode else
           [("f32", "f32"), ("i32", "i32"), ("b", "b"), ("u8", "i32")])
  for kx, ky in pairs:
    x, y = xs[kx], xs[ky]
    for fn in binops:
      compare(lambda: fn(pjnp.asarray(x), pjnp.asarray(y)),
              lambda: fn(jax.numpy.asarray(x), jax.numpy.asarray(y)), 8,
              f"{fn.__name__}({kx}, {ky})")
  for kx, x in xs.items():
    for s in ((2, 2.5, True) if mode else ((2,) if kx != "f32" else (2.5,))):
      for fn in binops:
        compare(lambda: fn(pjnp.asarray(x), s), lambda: fn(jax.numpy.asarray(x), s), 8,
                f"{fn.__name__}({kx}, {s!r})")
        compare(lambda: fn(s, pjnp.asarray(x)), lambda: fn(s, jax.numpy.asarray(x)), 8,
                f"{fn.__name__}({s!r}, {kx})")
    for fn in (op.neg, op.pos, op.abs, op.invert):
      compare(lambda: fn(pjnp.asarray(x)), lambda: fn(jax.numpy.asarray(x)),
              context=f"{fn.__name__}({kx})")


def test_power_special_cases(jax, mode):
  """Concrete integer exponents use lax.integer_pow (keeping the base's dtype); integer
  arrays use repeated squaring; negative integer powers of integers raise."""
  x = arr(f32)
  xi = arr(i32)
  cases = [(x, 2), (x, -3), (xi, 3), (xi, np.int32(2)), (x, np.int8(3)),
           (xi, np.array(3, np.int32)), (xi, -1), (2, -1), (arr(bf16), 2), (arr(u8), 5),
           (xi, np.array([0, 1, 2, 3, 4, 70], np.int32)), (x, np.array([0, 1, 2, 3, -1, 2])),
           (arr(b_), 2), (3, arr(b_)), (x, 0.5), (2.0, xi), (xi, True), (x, pjnp.int32(3)),
           # an integer exponent array is rounded to a half base's type first, as XLA
           # converts it (65535 -> 65536 in bfloat16: even; found by the fuzzer)
           (np.array(-2.28125, bf16), np.array([65535, 3, 257], np.uint16)),
           (np.array(-1.001, f16), np.array([2049, 3], np.int32))]
  for a, b in cases:
    bj = jax.numpy.int32(3) if isinstance(b, pyjax.Array) else b
    compare(lambda: pjnp.power(a, b), lambda: jax.numpy.power(a, bj), 64,
            f"power({np.asarray(a).dtype}, {b!r})")


def test_tuple_results(jax, mode):
  for name in ("frexp", "modf"):
    for d in (f32, bf16, f16, i32, b_):
      x = arr(d)
      compare(lambda: getattr(pjnp, name)(x), lambda: getattr(jax.numpy, name)(x), 0,
              f"{name}({d.name})")
  for d in (f32, i32, u8, i8):
    x, y = arr(d), np.where(arr(d, 1) == 0, 3, arr(d, 1)).astype(d)[::-1]
    compare(lambda: pjnp.divmod(x, y), lambda: jax.numpy.divmod(x, y), 0, f"divmod({d.name})")


def test_integer_division_by_zero(jax):
  x = np.array([7, -7, 0, -2 ** 31, 5], np.int32)
  y = np.array([0, 0, 0, -1, -3], np.int32)
  for name in ("floor_divide", "remainder", "fmod", "true_divide", "divmod"):
    compare(lambda: getattr(pjnp, name)(x, y), lambda: getattr(jax.numpy, name)(x, y),
            context=name)
  u = np.array([7, 0, 255], np.uint8)
  for name in ("floor_divide", "remainder", "fmod"):
    compare(lambda: getattr(pjnp, name)(u, np.zeros(3, np.uint8)),
            lambda: getattr(jax.numpy, name)(u, np.zeros(3, np.uint8)), context=name)


def test_special_float_values(jax):
  """NaN, infinities and signed zeros through the composite functions."""
  v = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 2.5, -2.5], np.float32)
  x, y = (np.array(t, np.float32) for t in zip(*itertools.product(v, v)))
  for name in ("fmax", "fmin", "maximum", "minimum", "copysign", "heaviside", "hypot",
               "logaddexp", "logaddexp2", "nextafter", "arctan2", "floor_divide",
               "remainder", "fmod", "float_power", "power", "true_divide", "divmod"):
    compare(lambda: getattr(pjnp, name)(x, y), lambda: getattr(jax.numpy, name)(x, y),
            ULPS.get(name, 8), name)
  for name in ("signbit", "isposinf", "isneginf", "isnan", "isinf", "isfinite", "spacing",
               "sinc", "rint", "round", "trunc", "ceil", "floor", "sign", "frexp", "modf",
               "deg2rad", "rad2deg", "log2", "log10", "reciprocal", "cbrt", "i0", "angle",
               "fabs", "square"):
    compare(lambda: getattr(pjnp, name)(v), lambda: getattr(jax.numpy, name)(v),
            ULPS.get(name, 8), name)


def test_round_decimals(jax):
  x = np.array([1.25, -2.675, 0.5, 1.5, 2.5, 1234.5678, -0.0], np.float32)
  for d in (-2, -1, 0, 1, 2, 3):
    for dt in (f32, f16, bf16, c64, i32):
      v = x.astype(dt)
      compare(lambda: pjnp.round(v, d), lambda: jax.numpy.round(v, d), 4, f"round({dt}, {d})")
  compare(lambda: pjnp.round(np.array([True]), 1), lambda: jax.numpy.round(np.array([True]), 1))


def test_gcd_lcm_ldexp(jax, mode):
  a = np.array([12, -18, 0, 7, 0, 2 ** 20], np.int32)
  b = np.array([8, 12, 5, 0, 0, 6], np.int32)
  for name in ("gcd", "lcm"):
    compare(lambda: getattr(pjnp, name)(a, b), lambda: getattr(jax.numpy, name)(a, b),
            context=name)
    compare(lambda: getattr(pjnp, name)(a, 6), lambda: getattr(jax.numpy, name)(a, 6),
            context=name)
    compare(lambda: getattr(pjnp, name)(a, 1.5), lambda: getattr(jax.numpy, name)(a, 1.5),
            context=name)
  m = np.array([0.5, -1.5, 3.0, 0.0, np.inf], np.float32)
  e = np.array([1, -3, 130, 5, 2], np.int32)
  for args in ((m, e), (m, 2), (1.5, e), (m, np.int8(3)), (m, 1.5), (m.astype(f16), e),
               (np.complex64(1j), 2), (m, True)):
    compare(lambda: pjnp.ldexp(*args), lambda: jax.numpy.ldexp(*args), 0, f"ldexp{args!r}")


def test_function_metadata():
  """Every exported function is a plain function named as exported, with a docstring; the
  array-API aliases that JAX names separately in its errors are separate functions."""
  for name in ufuncs.__all__:
    f = getattr(ufuncs, name)
    assert f.__doc__, name
    assert f.__name__ == f.__qualname__, (name, f.__qualname__)
  for name in ("asin", "acos", "atan", "asinh", "acosh", "atanh", "atan2", "invert",
               "bitwise_invert", "bitwise_left_shift"):
    assert getattr(ufuncs, name).__name__ == name
  assert "fix" not in ufuncs.__all__  # removed in JAX 0.10 (jnp.trunc)


def test_values_against_numpy_without_jax():
  """A NumPy cross-check that needs no JAX: float32 results of the common functions."""
  x = np.array([0.25, 0.5, 1.5, 3.0], np.float32)
  y = np.array([2.0, -1.0, 0.5, 4.0], np.float32)
  for name in ("exp", "log", "sin", "cos", "tanh", "sqrt", "arctan", "log1p", "expm1",
               "cbrt", "log2", "log10", "sinc", "deg2rad", "square", "reciprocal"):
    np.testing.assert_allclose(np.asarray(getattr(pjnp, name)(x)), getattr(np, name)(x),
                               rtol=2e-6, err_msg=name)
  for name in ("add", "subtract", "multiply", "true_divide", "power", "arctan2", "hypot",
               "logaddexp", "maximum", "fmod", "remainder", "floor_divide", "copysign"):
    np.testing.assert_allclose(np.asarray(getattr(pjnp, name)(x, y)), getattr(np, name)(x, y),
                               rtol=2e-6, err_msg=name)
  r = pjnp.add(np.int8(100), 100)
  assert r.dtype == np.int8 and int(r) == -56
  assert pjnp.multiply(np.float32(2), 3).dtype == np.float32
  assert pjnp.add(2, 3.0).weak_type
