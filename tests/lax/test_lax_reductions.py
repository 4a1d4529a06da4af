"""lax reductions: reduce_*, argmax/argmin, the generic reduce, cumulative and windowed
reductions, select_and_{scatter,gather}_add — against NumPy, naive references and JAX."""
import itertools
import warnings

import ml_dtypes
import numpy as np
import pytest

import pyjax
import pyjax.numpy as jnp
from pyjax import lax
from pyjax._src import core, dtypes
from pyjax._src.avals import ShapedArray
from pyjax._src.lax import elementwise as lax_ew
from pyjax._src.lax import windowed as lax_win
from pyjax._src.numpy.util import constant

bf16 = np.dtype(ml_dtypes.bfloat16)
f16, f32 = np.dtype(np.float16), np.dtype(np.float32)
i8, u8, i32 = np.dtype(np.int8), np.dtype(np.uint8), np.dtype(np.int32)
c64 = np.dtype(np.complex64)
boolean = np.dtype(np.bool_)
ALL = [bf16, f16, f32, i8, u8, i32, boolean]
FLOATS = [bf16, f16, f32]


def rand(shape, dtype, seed=0, lo=-5, hi=5):
  rs = np.random.RandomState(seed)
  if dtype == boolean:
    return np.asarray(rs.rand(*shape) > 0.5)
  if dtype.kind in "iu":
    info = np.iinfo(dtype)
    return rs.randint(max(lo, info.min), min(hi, info.max) + 1, size=shape).astype(dtype)
  if dtype.kind == "c":
    return (rs.randn(*shape) + 1j * rs.randn(*shape)).astype(dtype)
  return rs.uniform(lo, hi, size=shape).astype(dtype)


def weak(value, shape=()):
  """A weakly typed array (what a Python scalar broadcast in JAX gives)."""
  v = np.full(shape, value)
  d = dtypes.python_scalar_dtype(type(value))
  return constant(v.astype(d), d, weak=True)


def npv(x):
  return np.asarray(x)


def check(out, expected, dtype=None, weak_type=False, exact=True, rtol=1e-6, atol=0):
  a = npv(out)
  e = np.asarray(expected)
  assert out.dtype == (e.dtype if dtype is None else dtype), (out.dtype, dtype, e.dtype)
  assert out.shape == e.shape, (out.shape, e.shape)
  assert out.weak_type == weak_type
  if exact:
    if a.dtype.kind == "f" or a.dtype in (bf16, f16):
      np.testing.assert_array_equal(a.astype(np.float64), e.astype(np.float64))
      np.testing.assert_array_equal(np.signbit(a.astype(np.float64)), np.signbit(e.astype(np.float64)))
    else:
      np.testing.assert_array_equal(a, e)
  else:
    np.testing.assert_allclose(a.astype(np.complex128 if a.dtype.kind == "c" else np.float64),
                               e.astype(np.complex128 if e.dtype.kind == "c" else np.float64),
                               rtol=rtol, atol=atol, equal_nan=True)


def same_as_jax(ours, ref, exact=True, rtol=1e-6):
  if isinstance(ref, (list, tuple)):
    assert type(ours) is type(ref) and len(ours) == len(ref)
    for o, r in zip(ours, ref):
      same_as_jax(o, r, exact, rtol)
    return
  assert ours.dtype == ref.dtype and ours.shape == ref.shape
  assert ours.weak_type == ref.weak_type
  check(ours, np.asarray(ref), weak_type=ref.weak_type, exact=exact, rtol=rtol)


def both(jax, fn, *args):
  """fn(lax_module, *args) for pyjax and JAX: (ours, ref) or the exception classes."""
  res = []
  for mod in (lax, jax.lax):
    try:
      res.append(fn(mod, *args))
    except Exception as e:  # noqa: BLE001
      res.append(e)
  return res


# --- reduce_sum / prod / max / min / and / or / xor --------------------------------------
_IDENT = {"reduce_sum": 0, "reduce_prod": 1}


def _np_reduce(name, x, axes):
  axes = tuple(axes)
  d = x.dtype
  if name in ("reduce_sum", "reduce_prod"):
    uf = np.add if name == "reduce_sum" else np.multiply
    if d.kind in "iu":
      return uf.reduce(x, axis=axes, dtype=d)
    return uf.reduce(x.astype(np.float64), axis=axes).astype(d)
  if name in ("reduce_max", "reduce_min"):
    if d == boolean:
      return (np.logical_or if name == "reduce_max" else np.logical_and).reduce(x, axis=axes)
    if d.kind in "iu":
      info = np.iinfo(d)
      init = info.min if name == "reduce_max" else info.max
    else:
      init = -np.inf if name == "reduce_max" else np.inf
    uf = np.maximum if name == "reduce_max" else np.minimum
    return uf.reduce(x.astype(np.float64) if d.kind not in "iu" else x, axis=axes,
                     initial=init).astype(d)
  uf = {"reduce_and": (np.logical_and, np.bitwise_and, -1), "reduce_or": (np.logical_or, np.bitwise_or, 0),
        "reduce_xor": (np.logical_xor, np.bitwise_xor, 0)}[name]
  if d == boolean:
    return uf[0].reduce(x, axis=axes)
  return uf[1].reduce(x, axis=axes, initial=np.array(uf[2]).astype(d)[()])


_SHAPES_AXES = [((3, 4), (0,)), ((3, 4), (1,)), ((3, 4), (0, 1)), ((3, 4), ()),
                ((2, 3, 4), (0, 2)), ((2, 3, 4), (2, 1)), ((0, 3), (0,)), ((0, 3), (1,)),
                ((1, 5), (0,)), ((5,), (0,)), ((), ())]


@pytest.mark.parametrize("name", ["reduce_sum", "reduce_prod", "reduce_max", "reduce_min"])
@pytest.mark.parametrize("dtype", ALL)
def test_arith_and_order_reductions_vs_numpy(name, dtype):
  if dtype == boolean and name in ("reduce_sum", "reduce_prod"):
    with pytest.raises(TypeError, match=f"{name} does not accept dtype bool. Accepted dtypes are subtypes of number."):
      getattr(lax, name)(np.zeros(3, bool), (0,))
    return
  for shape, axes in _SHAPES_AXES:
    lo, hi = (-2, 2) if name == "reduce_prod" else (-5, 5)
    x = rand(shape, dtype, lo=lo, hi=hi)
    out = getattr(lax, name)(x, axes)
    exact = name in ("reduce_max", "reduce_min") or dtype.kind in "iu" or dtype == boolean
    half = dtype in (bf16, f16)
    check(out, _np_reduce(name, x, axes), dtype, exact=exact, rtol=2e-2 if half else 1e-5,
          atol=0.25 if half else 1e-5)


@pytest.mark.parametrize("name", ["reduce_and", "reduce_or", "reduce_xor"])
@pytest.mark.parametrize("dtype", [boolean, i8, u8, i32])
def test_logical_reductions_vs_numpy(name, dtype):
  for shape, axes in _SHAPES_AXES:
    x = rand(shape, dtype, lo=-100, hi=100)
    check(getattr(lax, name)(x, axes), _np_reduce(name, x, axes), dtype)


@pytest.mark.parametrize("name", ["reduce_and", "reduce_or", "reduce_xor"])
def test_logical_reductions_reject_floats_and_drop_weak_type(name):
  for d in (f32, bf16, c64):
    with pytest.raises(TypeError, match=f"logical reduction requires operand dtype bool or int, got {d.name}."):
      getattr(lax, name)(np.zeros(3, d), (0,))
  # the dtype check comes before the axes check, as in JAX
  with pytest.raises(TypeError, match="logical reduction"):
    getattr(lax, name)(np.zeros(3, f32), (0, 0))
  out = getattr(lax, name)(2, ())
  assert out.dtype == i32 and not out.weak_type and int(out) == 2


def test_identities_of_empty_reductions():
  def r(name, d):
    return npv(getattr(lax, name)(np.zeros((0, 2), d), (0,)))
  assert np.all(r("reduce_sum", f32) == 0) and np.all(r("reduce_prod", i8) == 1)
  assert np.all(r("reduce_max", f32) == -np.inf) and np.all(r("reduce_min", bf16) == np.inf)
  assert np.all(r("reduce_max", i8) == -128) and np.all(r("reduce_min", i8) == 127)
  assert np.all(r("reduce_max", u8) == 0) and np.all(r("reduce_min", u8) == 255)
  assert not r("reduce_max", boolean).any() and r("reduce_min", boolean).all()
  assert np.all(r("reduce_and", i8) == -1) and np.all(r("reduce_and", u8) == 255)
  assert r("reduce_and", boolean).all() and not r("reduce_or", boolean).any()
  assert np.all(r("reduce_max", c64) == complex(-np.inf, 0))


def test_integer_wraparound_and_half_accumulation():
  check(lax.reduce_sum(np.array([100, 100], i8), (0,)), np.array(-56, i8))
  check(lax.reduce_sum(np.array([200, 200], u8), (0,)), np.array(144, u8))
  check(lax.reduce_prod(np.array([100, 100], i8), (0,)), np.array(16, i8))
  check(lax.reduce_sum(np.array([2**31 - 1, 1], i32), (0,)), np.array(-2**31, i32))
  # XLA's CPU order (windows of 32, rounding to bfloat16 at every step): 10000 ones -> 9984
  check(lax.reduce_sum(np.ones(10000, bf16), (0,)), np.array(9984, bf16))
  check(lax.reduce_sum(np.ones(10000, f16), (0,)), np.array(10000, f16))


def test_nan_and_signed_zeros_in_max_min():
  nan = np.nan
  assert np.isnan(npv(lax.reduce_max(np.array([1, nan, 3], f32), (0,))))
  assert np.isnan(npv(lax.reduce_min(np.array([1, nan, 3], bf16), (0,))).astype(np.float32))
  for d in (f32, f16, bf16):
    for a in ([-0., 0.], [0., -0.]):
      check(lax.reduce_max(np.array(a, d), (0,)), np.array(0., d))
      check(lax.reduce_min(np.array(a, d), (0,)), np.array(-0., d))
    check(lax.reduce_max(np.array([-0., -1.], d), (0,)), np.array(-0., d))
  c = np.array([1 + 2j, 1 + 3j, 0 + 5j, 1 - 1j], c64)
  check(lax.reduce_max(c, (0,)), np.array(1 + 3j, c64))
  check(lax.reduce_min(c, (0,)), np.array(0 + 5j, c64))


def test_reduction_axes_errors():
  x = np.zeros((2, 3), f32)
  with pytest.raises(ValueError, match=r"reduction axes \(-1,\) contains out-of-bounds indices for float32\[2,3\]\."):
    lax.reduce_sum(x, (-1,))
  with pytest.raises(ValueError, match=r"reduction axes \(2,\) contains out-of-bounds indices"):
    lax.reduce_max(x, (2,))
  with pytest.raises(ValueError, match=r"duplicate value in 'axes' of reduction: \(0, 0, 5\)"):
    lax.reduce_sum(x, (0, 0, 5))
  with pytest.raises(ValueError, match=r"contains out-of-bounds indices for ~float32\[\]"):
    lax.reduce_sum(2.0, (0,))
  with pytest.raises(TypeError, match="'int' object is not iterable"):
    lax.reduce_sum(x, 0)
  # axes are checked before the dtype (as in JAX)
  with pytest.raises(ValueError, match="out-of-bounds"):
    lax.reduce_sum(np.zeros(3, bool), (5,))
  with pytest.raises(TypeError):
    lax.reduce_sum([1, 2], (0,))


def test_reduction_weak_types_and_params():
  w = weak(2.0, (3,))
  out = lax.reduce_sum(w, (0,))
  assert out.weak_type and out.dtype == f32 and float(out) == 6
  assert lax.reduce_max(2, ()).weak_type and lax.reduce_prod(w, (0,)).weak_type
  assert not lax.reduce_sum(np.ones(3, f32), [0]).weak_type
  # numpy integer axes are accepted (JAX fails on them while lowering)
  check(lax.reduce_sum(np.ones((2, 3), f32), (np.int64(1),)), np.array([3, 3], f32))
  check(lax.reduce_sum(np.ones((2, 3), f32), [1, 0]), np.array(6, f32))


_JAX_REDUCE_CASES = [((1000,), (0,)), ((37, 45), (0, 1)), ((37, 45), (1,)), ((3, 70, 5), (0, 2)),
                     ((4, 5), (0,)), ((0, 4), (0,))]


@pytest.mark.parametrize("dtype", [bf16, f32, i8])
def test_reductions_match_jax(jax, dtype):
  _reductions_match_jax(jax, dtype, _JAX_REDUCE_CASES[::2])


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [bf16, f16, f32, i8, u8, i32, c64])
def test_reductions_match_jax_all(jax, dtype):
  _reductions_match_jax(jax, dtype, _JAX_REDUCE_CASES)


def _reductions_match_jax(jax, dtype, cases):
  for shape, axes in cases:
    x = rand(shape, dtype, seed=len(shape))
    for name in ["reduce_sum", "reduce_prod", "reduce_max", "reduce_min"]:
      xx = x if name != "reduce_prod" or dtype.kind in "iu" else (1 + x / 50).astype(dtype)
      ours, ref = both(jax, lambda L, v: getattr(L, name)(v, axes), xx)
      if name in ("reduce_max", "reduce_min") and dtype == c64:
        exact = True
      else:
        # half types follow XLA's summation order exactly; wider floats to a few ulps
        exact = dtype.kind in "iu" or dtype in (bf16, f16) or (shape == (4, 5) and dtype != c64)
      same_as_jax(ours, ref, exact=exact, rtol=1e-5)


def test_reduction_errors_match_jax(jax):
  x = np.zeros((2, 3), f32)
  for fn in [lambda L: L.reduce_sum(x, (2,)), lambda L: L.reduce_sum(x, (0, 0)),
             lambda L: L.reduce_sum(x > 0, (0,)), lambda L: L.reduce_and(x, (0,)),
             lambda L: L.reduce_prod(np.zeros(2, bool), (0,)), lambda L: L.reduce_min(x, 0)]:
    ours, ref = both(jax, fn)
    assert isinstance(ours, Exception) and type(ours) is type(ref), (ours, ref)
    assert str(ours) == str(ref)


# --- argmax / argmin ----------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ALL)
def test_argmax_argmin_vs_numpy(dtype):
  for shape, axis in [((3, 4), 0), ((3, 4), 1), ((5,), 0), ((2, 0), 0), ((1, 3), 0)]:
    x = rand(shape, dtype, lo=-2, hi=2)  # plenty of ties: numpy also picks the first
    for fn, ref in ((lax.argmax, np.argmax), (lax.argmin, np.argmin)):
      for idx in (i32, u8):
        out = fn(x, axis, idx)
        check(out, ref(x.astype(np.float32) if dtype in (bf16, f16) else x, axis=axis).astype(idx), idx)


def test_argmax_nan_ties_and_errors():
  nan = np.nan
  check(lax.argmax(np.array([1., nan, 3., nan], f32), 0, np.int32), np.array(1, i32))
  check(lax.argmin(np.array([1., nan, 3., nan], f32), 0, np.int32), np.array(1, i32))
  check(lax.argmax(np.array([[1., nan], [nan, 2.]], f32), 1, np.int32), np.array([1, 0], i32))
  check(lax.argmax(np.array([-0., 0.], f32), 0, np.int32), np.array(0, i32))
  check(lax.argmax(np.array([1., -np.inf, np.inf], f32), 0, "int32"), np.array(2, i32))
  check(lax.argmax(np.array([1., 2.], f32), 0, int), np.array(1, i32))
  x = np.zeros((2, 3), f32)
  with pytest.raises(ValueError, match=r"Invalid axis -1 for operand shape \(2, 3\)"):
    lax.argmax(x, -1, np.int32)
  with pytest.raises(ValueError, match="argmin and argmax require non-empty reduced dimension. "
                                       r"operand.shape=\(0, 3\) axis=0"):
    lax.argmin(np.zeros((0, 3), f32), 0, np.int32)
  with pytest.raises(TypeError, match="index_dtype must be an integer type, but got float32"):
    lax.argmax(x, 0, np.float32)
  with pytest.raises(TypeError, match="index_dtype must be an integer type, but got bool"):
    lax.argmax(x, 0, np.bool_)
  with pytest.raises(TypeError, match="gt does not accept dtype complex64 at position 0"):
    lax.argmax(x.astype(c64), 0, np.int32)
  with pytest.raises(TypeError, match="lt does not accept dtype complex64"):
    lax.argmin(x.astype(c64), 0, np.int32)
  with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    out = lax.argmax(x, 0, np.int64)
  assert out.dtype == i32 and any("int64" in str(m.message) for m in w)
  assert not lax.argmax(weak(2.0, (3,)), 0, np.int32).weak_type


def test_argmax_matches_jax(jax):
  rs = np.random.RandomState(0)
  for dtype in (f32, bf16, i8, boolean):
    x = rand((4, 6), dtype, lo=-1, hi=1)
    if dtype == f32:
      x[rs.rand(4, 6) < 0.2] = np.nan
    for name in ("argmax", "argmin"):
      for axis in (0, 1):
        ours, ref = both(jax, lambda L, v: getattr(L, name)(v, axis, np.int32), x)
        same_as_jax(ours, ref)


# --- cumulative reductions ----------------------------------------------------------------
def _np_cum(name, x, axis, reverse):
  if reverse:
    return np.flip(_np_cum(name, np.flip(x, axis), axis, False), axis)
  d = x.dtype
  if name == "cumsum":
    return np.cumsum(x, axis, dtype=d) if d.kind in "iu" else np.cumsum(x.astype(np.float64), axis).astype(d)
  if name == "cumprod":
    return np.cumprod(x, axis, dtype=d) if d.kind in "iu" else np.cumprod(x.astype(np.float64), axis).astype(d)
  if name == "cummax":
    return np.maximum.accumulate(x, axis)
  if name == "cummin":
    return np.minimum.accumulate(x, axis)
  return np.logaddexp.accumulate(x.astype(np.float64), axis).astype(d)


@pytest.mark.parametrize("name", ["cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp"])
@pytest.mark.parametrize("dtype", [bf16, f16, f32, i8, u8, i32])
def test_cumulative_vs_numpy(name, dtype):
  if name == "cumlogsumexp" and dtype.kind in "iu":
    with pytest.raises(TypeError, match="cumlogsumexp does not accept dtype"):
      lax.cumlogsumexp(np.zeros(3, dtype), 0)
    return
  for shape, axis in [((3, 4), 0), ((3, 4), 1), ((7,), 0), ((0, 2), 0), ((2, 0), 1), ((1,), 0)]:
    x = rand(shape, dtype, lo=-2, hi=3)
    for reverse in (False, True):
      out = getattr(lax, name)(x, axis, reverse)
      exact = dtype.kind in "iu" or name in ("cummax", "cummin")
      tol = 2e-2 if dtype in (bf16, f16) else 1e-5
      check(out, _np_cum(name, x, axis, reverse), dtype, exact=exact, rtol=tol, atol=tol)


def test_cumulative_semantics():
  check(lax.cumsum(np.array([100, 100, 100], i8)), np.array([100, -56, 44], i8))
  check(lax.cumprod(np.array([100, 100, 100], i8)), np.array([100, 16, 64], i8))
  out = npv(lax.cummax(np.array([2., np.nan, 1.], f32)))
  assert out[0] == 2 and np.isnan(out[1:]).all()
  check(lax.cummax(np.array([-0., 0., -0.], f32)), np.array([-0., 0., 0.], f32))
  check(lax.cummin(np.array([0., -0., 0.], f32)), np.array([0., -0., -0.], f32))
  check(lax.cummax(np.array([1 + 1j, 1 + 3j, 1 + 2j, 0 + 9j], c64)),
        np.array([1 + 1j, 1 + 3j, 1 + 3j, 1 + 3j], c64))
  check(lax.cumlogsumexp(np.array([-np.inf, -np.inf, 1.], f32)), np.array([-np.inf, -np.inf, 1.], f32))
  check(lax.cumlogsumexp(np.array([np.inf, -np.inf, 1.], f32)), np.array([np.inf] * 3, f32))
  z = np.array([1 + 1j, 2 - 3j, 0.5 + 0.2j], c64)
  ref = np.log(np.cumsum(np.exp(z.astype(np.complex128))))
  check(lax.cumlogsumexp(z), ref.astype(c64), exact=False, rtol=1e-5)
  w = weak(2.0, (3,))
  assert lax.cumsum(w).weak_type and lax.cummax(w, 0, True).weak_type
  check(lax.cumsum(np.ones((2, 3), f32), 1.0), np.cumsum(np.ones((2, 3), f32), 1))


def test_cumulative_errors():
  x = np.zeros((2, 3), f32)
  with pytest.raises(ValueError, match="XLA operations do not allow negative axes"):
    lax.cumsum(x, -1)
  with pytest.raises(ValueError, match=r"axis 2 is out of bounds for array of shape \(2, 3\)"):
    lax.cumprod(x, 2)
  with pytest.raises(ValueError, match=r"axis 0 is out of bounds for array of shape \(\)"):
    lax.cummax(2.0, 0)
  for name in ("cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp"):
    with pytest.raises(TypeError, match=f"{name} does not accept dtype bool. Accepted dtypes are subtypes of number."):
      getattr(lax, name)(np.zeros(3, bool))
  with pytest.raises(TypeError):
    lax.cumsum(x, (0,))


@pytest.mark.parametrize("dtype", [f32, bf16, i8, c64])
def test_cumulative_match_jax(jax, dtype):
  x = rand((5, 40), dtype, lo=-2, hi=3)
  for k, name in enumerate(("cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp")):
    if name == "cumlogsumexp" and dtype.kind in "iu":
      continue
    if name in ("cummax", "cummin") and dtype == c64:
      continue
    xx = x if name != "cumprod" or dtype.kind in "iu" else (1 + x / 50).astype(dtype)
    for axis, rev in [((0, False), (1, True))[k % 2]]:
      ours, ref = both(jax, lambda L, v: getattr(L, name)(v, axis, rev), xx)
      exact = dtype.kind in "iu" or name in ("cummax", "cummin")
      if exact:
        same_as_jax(ours, ref)
      else:  # XLA scans in another order: compare to a few ulps of the type
        r = np.asarray(ref)
        scale = float(np.max(np.abs(r.astype(np.complex128)))) if r.size else 1.
        tol = 2 ** -6 if dtype == bf16 else 1e-5
        check(ours, r, exact=False, rtol=tol, atol=tol * scale)


# --- the generic reduce --------------------------------------------------------------------
def _prims(fn, *avals):
  j = core.trace_to_jaxpr(lambda *a: [o for o in _flat(fn(*a))], list(avals))
  return [e.primitive.name for e in j.jaxpr.eqns], j


def _flat(x):
  return list(x) if isinstance(x, (list, tuple)) else [x]


def test_reduce_recognizes_monoids():
  av = ShapedArray((3, 4), f32)
  ai = ShapedArray((3, 4), i32)
  ab = ShapedArray((3, 4), boolean)
  cases = [
      (lambda x: lax.reduce(x, 0., lax.add, (0,)), av, "reduce_sum"),
      (lambda x: lax.reduce(x, 0, lax.add, (0,)), av, "reduce_sum"),
      (lambda x: lax.reduce(x, 0., lax.add, (0,)), ai, "reduce_sum"),
      (lambda x: lax.reduce(x, 1., lax.mul, (0,)), av, "reduce_prod"),
      (lambda x: lax.reduce(x, -np.inf, lax.max, (0,)), av, "reduce_max"),
      (lambda x: lax.reduce(x, np.float32(np.inf), lax.min, (0,)), av, "reduce_min"),
      (lambda x: lax.reduce(x, np.iinfo(np.int32).min, lax.max, (0,)), ai, "reduce_max"),
      (lambda x: lax.reduce(x, True, lax.bitwise_and, (0,)), ab, "reduce_and"),
      (lambda x: lax.reduce(x, -1, lax.bitwise_and, (0,)), ai, "reduce_and"),
      (lambda x: lax.reduce(x, False, lax.bitwise_or, (0,)), ab, "reduce_or"),
      (lambda x: lax.reduce(x, 0, lax.bitwise_xor, (0,)), ai, "reduce_xor"),
      (lambda x: lax.reduce(x, False, lax.max, (0,)), ab, "reduce_max"),
      (lambda x: lax.reduce(x, 5., lax.add, (0,)), av, "reduce"),
      (lambda x: lax.reduce(x, 0., lambda a, b: a + b, (0,)), av, "reduce"),
      (lambda x: lax.reduce(x, -3e38, lax.max, (0,)), av, "reduce"),
  ]
  for fn, aval, prim in cases:
    names, _ = _prims(fn, aval)
    assert names == [prim], (names, prim)


def test_reduce_generic_values_and_types():
  x = np.arange(12, dtype=f32).reshape(3, 4)
  xi = np.arange(12, dtype=i32).reshape(3, 4)
  check(lax.reduce(x, 0., lambda a, b: a + b * 2, (0,)), 2 * x.sum(0))
  check(lax.reduce(x, 5., lax.add, (0,)), x.sum(0) + 5)
  check(lax.reduce(np.zeros((0, 3), f32), 7., lambda a, b: a + b * 2, (0,)), np.full(3, 7, f32))
  check(lax.reduce(x, 0., lambda a, b: a + b * 2, ()), x)  # no dimensions: the operand
  # multiple operands and pytrees (list in, list out)
  s, p = lax.reduce((x, xi), (0., 1), lambda a, b: (a[0] + b[0], a[1] * b[1]), (1,))
  check(s, x.sum(1))
  check(p, np.prod(xi, 1, dtype=i32))
  out = lax.reduce([x, xi], [0., 0], lambda a, b: [a[0] + b[0], a[1] + b[1]], (1,))
  assert isinstance(out, list) and len(out) == 2
  # argmax as a variadic reduce
  v, i = lax.reduce((x, xi), (-np.inf, 0),
                    lambda a, b: (lax.max(a[0], b[0]), lax.select(lax.ge(a[0], b[0]), a[1], b[1])), (1,))
  check(v, x.max(1))
  check(i, np.array([3, 7, 11], i32))
  # weak types: the result is weak only if operand and init are
  w = weak(2.0, (3,))
  assert lax.reduce(w, 0., lambda a, b: a + b * 2, (0,)).weak_type
  assert not lax.reduce(w, np.float32(0), lambda a, b: a + b * 2, (0,)).weak_type
  assert not lax.reduce(w, np.float32(0), lax.add, (0,)).weak_type
  assert lax.reduce(w, 0., lax.add, (0,)).weak_type
  assert not lax.reduce(np.ones(3, f32), 0., lax.add, (0,)).weak_type
  assert lax.reduce(2.0, 0., lambda a, b: a + b, ()).weak_type


def test_reduce_xla_fold_order():
  """Non-associative computations fold in XLA's CPU order: row-major from the init value;
  dimensions longer than 32 split into windows of 32 with evenly split padding."""
  xi = np.arange(12, dtype=i32).reshape(3, 4) % 3
  digits = int("".join(map(str, xi.ravel())), 3)
  check(lax.reduce(xi, 0, lambda a, b: a * 3 + b, (0, 1)), np.array(digits, i32))
  # how many times the init value is used: 1 + windows at every level
  for n, count in [(32, 1), (33, 3), (65, 4), (100, 5), (1000, 33), (1025, 36), (100000, 3228)]:
    check(lax.reduce(np.zeros(n, i32), 1, lambda a, b: a + b, (0,)), np.array(count, i32))
  for shape, dims, count in [((10, 100), (0, 1), 5), ((100, 100), (0, 1), 17), ((40, 2, 40), (0, 2), 5)]:
    out = npv(lax.reduce(np.zeros(shape, i32), 1, lambda a, b: a + b, dims))
    assert np.all(out == count)
  # depth of each element for a one-hot input under a -> a/2 + b
  out = npv(lax.reduce(np.eye(33, dtype=f32), 0., lambda a, b: a * 0.5 + b, (1,)))
  depth = np.round(-np.log2(out)).astype(int)
  assert depth.tolist() == list(range(17, 0, -1)) + list(range(15, -1, -1))


def test_reduce_errors():
  x = np.zeros((2, 3), f32)
  with pytest.raises(TypeError, match=r"reduce operand dtypes should match corresponding initial value "
                                      r"dtypes, got operands=\[ShapedArray\(float32\[2,3\]\)\] and "
                                      r"initial_values=\[ShapedArray\(int32\[\], weak_type=True\)\]"):
    lax.reduce(x, 0, lambda a, b: a + b * 2, (0,))
  with pytest.raises(ValueError, match="Operands must have the same tree structure as init_values"):
    lax.reduce((x,), (0., 0.), lax.add, (0,))
  with pytest.raises(ValueError, match=r"reduce found non-scalar initial value: \[\(2,\)\]"):
    lax.reduce(x, np.zeros(2, f32), lax.add, (0,))
  with pytest.raises(ValueError, match="duplicate value in 'axes' of reduction"):
    lax.reduce(x, 0., lax.add, (0, 0))
  with pytest.raises(ValueError, match="out-of-bounds"):
    lax.reduce(x, 0., lambda a, b: a + b, (-1,))
  with pytest.raises(TypeError, match="reduce_sum does not accept dtype bool"):
    lax.reduce(x > 0, 0., lax.add, (0,))
  with pytest.raises(ValueError, match="must produce 2 values"):
    lax.reduce((x, x), (0., 0.), lambda a, b: (a[0] + b[0],), (1,))
  with pytest.raises(ValueError, match="must be a scalar of dtype float32"):
    lax.reduce(x, 0., lambda a, b: lax.convert_element_type(a, np.int32), (0,))
  with pytest.raises(NotImplementedError, match="Reduction computations can't close over Tracers"):
    core.trace_to_jaxpr(lambda y: [lax.reduce(y, 0., lambda a, b: a + lax.reduce_sum(y, (0, 1)), (0,))],
                        [ShapedArray((2, 3), f32)])


def test_reduce_closed_over_constants_and_jaxpr_text(jax):
  c = np.float32(3.)
  x = np.arange(6, dtype=f32).reshape(2, 3)
  check(lax.reduce(x, 0., lambda a, b: a + b * c, (0,)), 3 * x.sum(0))
  fn = lambda L, v: L.reduce(v, 0., lambda a, b: a + b * 2, (0,))  # noqa: E731
  ours = str(core.trace_to_jaxpr(lambda v: [fn(lax, v)], [ShapedArray((2, 3), f32)])).splitlines()
  ref = str(jax.make_jaxpr(lambda v: fn(jax.lax, v))(x)).splitlines()
  assert len(ours) == len(ref)
  for o, r in zip(ours, ref):
    if "computation=" in r:  # the function's qualified name differs (defined here, not there)
      assert o.strip().startswith("computation=<function ") and o.endswith(" at 0xXXXXXXXXXXXX>")
    else:
      assert o == r


def test_reduce_generic_matches_jax(jax):
  rs = np.random.RandomState(0)
  cases = [
      ((5, 100), (1,)), ((40, 35), (0, 1)), ((40, 3, 35), (0, 2)), ((7,), (0,)), ((3, 4), (1, 0)),
  ]
  for shape, dims in cases:
    x = (rs.randint(0, 7, size=shape)).astype(f32)
    ours, ref = both(jax, lambda L, v: L.reduce(v, 1., lambda a, b: a * 0.5 + b, dims), x)
    same_as_jax(ours, ref)


# --- windowed reductions --------------------------------------------------------------------
def _naive_windows(shape, wd, ws, pads, bd, wdil):
  """For each output index: the operand indices its window covers (row-major)."""
  nd = len(shape)
  dil = [0 if n == 0 else (n - 1) * b + 1 for n, b in zip(shape, bd)]
  padded = [d + lo + hi for d, (lo, hi) in zip(dil, pads)]
  out_shape = []
  for p, w, s, r in zip(padded, wd, ws, wdil):
    eff = (w - 1) * r + 1
    out_shape.append((p - eff) // s + 1 if p >= eff else 0)
  res = {}
  for o in itertools.product(*[range(n) for n in out_shape]):
    idxs = []
    for k in itertools.product(*[range(w) for w in wd]):
      src = []
      for i in range(nd):
        q = o[i] * ws[i] + k[i] * wdil[i] - pads[i][0]
        if q < 0 or q % bd[i] or q // bd[i] >= shape[i]:
          break
        src.append(q // bd[i])
      else:
        idxs.append(tuple(src))
    res[o] = idxs
  return tuple(out_shape), res


def _naive_reduce_window(x, init, fn, wd, ws, pads, bd, wdil):
  out_shape, wins = _naive_windows(x.shape, wd, ws, pads, bd, wdil)
  out = np.empty(out_shape, x.dtype)
  with np.errstate(over="ignore"):
    for o, idxs in wins.items():
      acc = init
      for i in idxs:
        acc = fn(acc, x[i])
      out[o] = acc
  return out


def _random_window_config(rs, nd):
  shape = tuple(int(v) for v in rs.randint(0, 6, size=nd))
  wd = tuple(int(v) for v in rs.randint(1, 4, size=nd))
  ws = tuple(int(v) for v in rs.randint(1, 3, size=nd))
  pads = tuple((int(rs.randint(-1, 3)), int(rs.randint(-1, 3))) for _ in range(nd))
  bd = tuple(int(v) for v in rs.randint(1, 3, size=nd))
  wdil = tuple(int(v) for v in rs.randint(1, 3, size=nd))
  return shape, wd, ws, pads, bd, wdil


def test_reduce_window_vs_naive_reference():
  rs = np.random.RandomState(0)
  for trial in range(60):
    shape, wd, ws, pads, bd, wdil = _random_window_config(rs, 1 + trial % 3)
    x = rs.randint(-9, 10, size=shape).astype(f32)
    xi = x.astype(i8)
    sums = lax.reduce_window(xi, np.int8(0), lax.add, wd, ws, pads, bd, wdil)
    check(sums, _naive_reduce_window(xi, np.int8(0), lambda a, b: np.int8(a + b), wd, ws, pads, bd, wdil))
    mx = lax.reduce_window(x, -np.inf, lax.max, wd, ws, pads, bd, wdil)
    check(mx, _naive_reduce_window(x, np.float32(-np.inf), max, wd, ws, pads, bd, wdil))
    mn = lax.reduce_window(xi, np.int8(127), lax.min, wd, ws, pads, bd, wdil)
    check(mn, _naive_reduce_window(xi, np.int8(127), min, wd, ws, pads, bd, wdil))
    gen = lax.reduce_window(x, 3., lambda a, b: a * 0.5 + b, wd, ws, pads, bd, wdil)
    check(gen, _naive_reduce_window(x, np.float32(3), lambda a, b: np.float32(a * np.float32(0.5) + b),
                                    wd, ws, pads, bd, wdil))


def test_reduce_window_monoids_and_jaxpr():
  av = ShapedArray((3, 4), f32)
  for fn, prim in [(lambda x: lax.reduce_window(x, 0., lax.add, (2, 2), (1, 1), "SAME"), "reduce_window_sum"),
                   (lambda x: lax.reduce_window(x, -np.inf, lax.max, (2, 2)), "reduce_window_max"),
                   (lambda x: lax.reduce_window(x, np.inf, lax.min, (2, 2)), "reduce_window_min"),
                   (lambda x: lax.reduce_window(x, 1., lax.mul, (2, 2)), "reduce_window"),
                   (lambda x: lax.reduce_window(x, 5., lax.add, (2, 2)), "reduce_window")]:
    names, j = _prims(fn, av)
    assert names == [prim]
  _, j = _prims(lambda x: lax.reduce_window(x, 0., lax.add, (2, 2), (1, 1), "SAME", (2, 1), (1, 2)), av)
  p = j.jaxpr.eqns[0].params
  assert p == dict(window_dimensions=(2, 2), window_strides=(1, 1), padding=((0, 1), (1, 1)),
                   base_dilation=(2, 1), window_dilation=(1, 2))


def test_reduce_window_padding_strings_and_types():
  x = np.arange(12, dtype=f32).reshape(3, 4)
  same = lax.reduce_window(x, 0., lax.add, (2, 2), (1, 1), "SAME")
  check(same, np.array([[10, 14, 18, 10], [26, 30, 34, 18], [17, 19, 21, 11]], f32))
  check(lax.reduce_window(x, 0., lax.add, (2, 2), (1, 1), "same"), npv(same))
  check(lax.reduce_window(x, 0., lax.add, (2, 2), (1, 1), "SAME_LOWER"),
        _naive_reduce_window(x, np.float32(0), lambda a, b: a + b, (2, 2), (1, 1), ((1, 0), (1, 0)), (1, 1), (1, 1)))
  check(lax.reduce_window(x, 0., lax.add, (2, 2)), lax.reduce_window(x, 0., lax.add, (2, 2), None, "VALID"))
  check(lax.reduce_window(x, 0., lax.add, [2, 2], [1, 1], [[1, 0], [0, 1]]),
        _naive_reduce_window(x, np.float32(0), lambda a, b: a + b, (2, 2), (1, 1), ((1, 0), (0, 1)), (1, 1), (1, 1)))
  # init applied once; padding and holes hold no elements
  assert npv(lax.reduce_window(x, 5., lax.add, (2, 2), (1, 1), ((1, 0), (0, 0))))[0].tolist() == [6, 8, 10]
  check(lax.reduce_window(np.zeros((0, 3), f32), -np.inf, lax.max, (2, 2), (1, 1), ((1, 1), (0, 0))),
        np.full((1, 2), -np.inf, f32))
  check(lax.reduce_window(x, 0., lax.add, (5, 2)), np.zeros((0, 3), f32))
  w = weak(2.0, (3,))
  assert lax.reduce_window(w, 0., lax.add, (2,), (1,)).weak_type
  assert lax.reduce_window(w, -np.inf, lax.max, (2,), (1,)).weak_type
  assert not lax.reduce_window(w, 0., lambda a, b: a + b * 2, (2,), (1,)).weak_type
  b = x > 3
  check(lax.reduce_window(b, False, lax.max, (2, 2), (1, 1), "SAME"),
        _naive_reduce_window(b, False, lambda a, c: a or c, (2, 2), (1, 1), ((0, 1), (0, 1)), (1, 1), (1, 1)))
  check(lax.reduce_window(b, False, lax.bitwise_or, (2, 2)), np.ones((2, 3), bool))
  s, p = lax.reduce_window((x, x), (0., 1.), lambda a, c: (a[0] + c[0], a[1] * c[1]), (2, 2), (1, 1))
  check(s, np.array([[10, 14, 18], [26, 30, 34]], f32))
  check(p, np.array([[0, 60, 252], [1440, 2700, 4620]], f32))
  # signed zeros and NaN in windowed max/min; large windows
  check(lax.reduce_window(np.array([-0., 0., -0., -0.], f32), -np.inf, lax.max, (2,), (1,)),
        np.array([0., 0., -0.], f32))
  out = npv(lax.reduce_window(np.array([1., np.nan, 2, 3], f32), -np.inf, lax.max, (2,), (1,)))
  assert np.isnan(out[:2]).all() and out[2] == 3
  check(lax.reduce_window(np.ones(300, f16), np.float16(0), lax.add, (100,), (50,)), np.full(5, 100, f16))
  check(lax.reduce_window(np.arange(200, dtype=i8), np.int8(0), lax.add, (100,), (7,)),
        _naive_reduce_window(np.arange(200, dtype=i8), np.int8(0), lambda a, c: np.int8(a + c), (100,), (7,), ((0, 0),), (1,), (1,)))


def test_reduce_window_errors():
  x = np.zeros((3, 4), f32)
  with pytest.raises(TypeError, match=r"reduce_window got the wrong number of window_dimensions for operand: "
                                      r"got operand shape \(3, 4\) with window_dimensions \(2,\)\."):
    lax.reduce_window(x, 0., lax.add, (2,), (1,), "VALID")
  with pytest.raises(TypeError, match=r"inconsistent window_strides and window_dimensions: got window_strides \(1,\)"):
    lax.reduce_window(x, 0., lax.add, (2, 2), (1,), "VALID")
  with pytest.raises(TypeError, match="inconsistent base_dilation and window_dimensions"):
    lax.reduce_window(x, 0., lax.add, (2, 2), (1, 1), "VALID", (2,))
  with pytest.raises(TypeError, match="inconsistent window_dilation and window_dimensions"):
    lax.reduce_window(x, 0., lax.add, (2, 2), (1, 1), "VALID", None, (2,))
  with pytest.raises(TypeError, match=r"window_strides must have every element be strictly positive, got \(0, 1\)"):
    lax.reduce_window(x, 0., lax.add, (2, 2), (0, 1))
  with pytest.raises(TypeError, match=r"window_dimensions must have every element be strictly positive, got \(0, 2\)"):
    lax.reduce_window(x, 0., lax.add, (0, 2), (1, 1))
  with pytest.raises(TypeError, match=r"All dilations must be positive, got \(0, 1\)"):
    lax.reduce_window(x, 0., lax.add, (2, 2), (1, 1), "VALID", (0, 1))
  with pytest.raises(RuntimeError, match="Unrecognized padding type: expected 'VALID', 'SAME', or 'SAME_LOWER', got FOO."):
    lax.reduce_window(x, 0., lax.add, (2, 2), (1, 1), "FOO")
  with pytest.raises(ValueError):
    lax.reduce_window(x, 0., lax.add, (2, 2), (1, 1), ((1, 0),))
  with pytest.raises(ValueError):
    lax.reduce_window(x, 0., lax.add, (2, 2), (1, 1), ((1, 0, 3), (0, 1)))
  with pytest.raises(TypeError, match="operand to reduce_window_sum must have a number dtype, got bool"):
    lax.reduce_window(x > 0, False, lax.add, (2, 2))
  with pytest.raises(TypeError, match=r"reduce_window got inconsistent dtypes for operands and init_values: got "
                                      r"operand dtypes \[dtype\('float32'\)\] and init_value dtypes \[dtype\('int32'\)\]\."):
    lax.reduce_window(x, 0, lambda a, b: a + 2 * b, (2, 2))
  with pytest.raises(TypeError, match=r"reduce_window expected init_values to be scalars but init_values have shapes \[\(2,\)\]\."):
    lax.reduce_window(x, np.zeros(2, f32), lax.add, (2, 2))
  with pytest.raises(ValueError, match="Operands must have the same tree structure as init_values"):
    lax.reduce_window((x, x), (0.,), lax.add, (2, 2))


def test_reduce_window_shape_tuple():
  assert lax.reduce_window_shape_tuple((3, 4), (2, 2), (1, 1), ((0, 1), (1, 1)), (2, 1), (1, 2)) == (5, 4)
  assert lax.reduce_window_shape_tuple((3,), (5,), (1,), ((0, 0),)) == (0,)


def test_reduce_window_matches_jax(jax):
  rs = np.random.RandomState(1)
  for trial in range(6):
    shape, wd, ws, pads, bd, wdil = _random_window_config(rs, 1 + trial % 3)
    pads = tuple((max(lo, 0), max(hi, 0)) for lo, hi in pads)
    x = rand(shape, f32, seed=trial)
    for init, comp in [(0., "add"), (-np.inf, "max"), (np.inf, "min"), (1., "mul")]:
      ours, ref = both(jax, lambda L, v: L.reduce_window(v, init, getattr(L, comp), wd, ws, pads, bd, wdil), x)
      if isinstance(ref, Exception):
        assert type(ours) is type(ref)
        continue
      same_as_jax(ours, ref, exact=comp in ("max", "min"), rtol=1e-5)
  x = rand((6, 7), f32)
  for pad in ("SAME", "VALID", "SAME_LOWER"):
    ours, ref = both(jax, lambda L, v: L.reduce_window(v, 0., lambda a, b: a * 0.5 + b, (3, 2), (2, 1), pad, (1, 2), (2, 1)), x)
    same_as_jax(ours, ref, rtol=1e-5)


# --- select_and_scatter_add / select_and_gather_add ----------------------------------------
def _naive_select(x, idxs, prim):
  keep = np.greater_equal if prim == "ge" else np.less_equal
  sel = None
  for i in idxs:
    if sel is None or not keep(x[sel], x[i]):
      sel = i
  return sel


def test_select_and_scatter_add_vs_naive():
  rs = np.random.RandomState(2)
  for trial in range(40):
    nd = 1 + trial % 3
    shape, wd, ws, pads, _, _ = _random_window_config(rs, nd)
    pads = tuple((max(lo, 0), max(hi, 0)) for lo, hi in pads)
    ones = (1,) * nd
    x = rs.randint(0, 3, size=shape).astype(f32)  # ties: the first extreme element wins
    out_shape, wins = _naive_windows(shape, wd, ws, pads, ones, ones)
    src = rs.randn(*out_shape).astype(f32)
    for prim, p in (("ge", lax_ew.ge_p), ("le", lax_ew.le_p)):
      expected = np.zeros(shape, f32)
      for o, idxs in wins.items():
        s = _naive_select(x, idxs, prim)
        if s is not None:
          expected[s] += src[o]
      out = lax_win._select_and_scatter_add(src, x, p, wd, ws, pads)
      check(out, expected, exact=False, rtol=1e-6, atol=1e-6)


def test_select_and_gather_add_vs_naive_without_padding():
  rs = np.random.RandomState(3)
  for trial in range(40):
    nd = 1 + trial % 3
    shape, wd, ws, _, bd, wdil = _random_window_config(rs, nd)
    pads = ((0, 0),) * nd
    x = rs.randint(0, 3, size=shape).astype(f32)
    t = rs.randn(*shape).astype(f32)
    out_shape, wins = _naive_windows(shape, wd, ws, pads, bd, wdil)
    for prim, p in (("ge", lax_ew.ge_p), ("le", lax_ew.le_p)):
      expected = np.zeros(out_shape, f32)
      for o, idxs in wins.items():
        s = _naive_select(x, idxs, prim)
        expected[o] = 0 if s is None else t[s]
      check(lax_win._select_and_gather_add(t, x, p, wd, ws, pads, bd, wdil), expected)


def test_select_and_scatter_errors_and_jaxpr():
  x = np.zeros((3, 4), f32)
  with pytest.raises(ValueError, match="select_and_scatter_add expects source of shape"):
    lax_win._select_and_scatter_add(np.ones((3, 4), f32), x, lax_ew.ge_p, (2, 2), (1, 1), ((0, 0), (0, 0)))
  j = core.trace_to_jaxpr(
      lambda s, v: [lax_win._select_and_scatter_add(s, v, lax_ew.ge_p, (2, 2), (1, 1), ((0, 1), (0, 1)))],
      [ShapedArray((3, 4), f32), ShapedArray((3, 4), f32)])
  assert "select_and_scatter_add[\n      padding=((0, 1), (0, 1))\n      select_prim=ge\n" in str(j)


def test_select_and_gather_add_matches_jax_for_pooling(jax):
  from jax._src.lax import windowed_reductions as wr  # the oracle's private helpers
  rs = np.random.RandomState(4)
  for trial in range(4):
    k, s = int(rs.choice([2, 3])), int(rs.choice([1, 2]))
    shape = (2, int(rs.randint(3, 7)), int(rs.randint(3, 7)), 2)
    wd, ws = (1, k, k, 1), (1, s, s, 1)
    pad = tuple(map(tuple, jax.lax.padtype_to_pads(shape, wd, ws, "SAME" if trial % 2 else "VALID")))
    x = np.maximum(rs.randn(*shape), 0).astype(f32)
    t = rs.randn(*shape).astype(f32)
    ones = (1,) * 4
    ref = wr._select_and_gather_add(t, x, jax.lax.ge_p, wd, ws, pad, ones, ones)
    check(lax_win._select_and_gather_add(t, x, lax_ew.ge_p, wd, ws, pad, ones, ones), np.asarray(ref))
    out_shape = jax.lax.reduce_window_shape_tuple(shape, wd, ws, pad)
    src = rs.randn(*out_shape).astype(f32)
    ref = wr._select_and_scatter_add(src, x, jax.lax.ge_p, wd, ws, pad)
    check(lax_win._select_and_scatter_add(src, x, lax_ew.ge_p, wd, ws, pad), np.asarray(ref),
          exact=False, rtol=1e-6, atol=1e-6)


# --- jaxpr text -------------------------------------------------------------------------------
_TEXT_CASES = [
    lambda L, x: (L.reduce_sum(x, (0,)),),
    lambda L, x: (L.reduce_max(x, (0, 1)), L.reduce_min(x, (1,)), L.reduce_prod(x, ())),
    lambda L, x: (L.argmax(x, 1, np.int32), L.argmin(x, 0, np.uint8)),
    lambda L, x: (L.cumsum(x, 1, reverse=True), L.cumlogsumexp(x, 0), L.cummax(x), L.cummin(x, 1), L.cumprod(x)),
    lambda L, x: (L.reduce(x, 0., L.add, (0,)), L.reduce(x, -np.inf, L.max, (1,))),
    lambda L, x: tuple(L.reduce((x, x), (0., 1.), lambda a, b: (a[0] + b[0], a[1] * b[1]), (0,))),
    lambda L, x: (L.reduce_window(x, 0., L.add, (2, 2), (1, 1), "SAME"),),
    lambda L, x: (L.reduce_window(x, -np.inf, L.max, (2, 2), (1, 1), "VALID", (2, 1), (1, 2)),),
    lambda L, x: (L.reduce_window(x, 1., L.mul, (2, 2), (1, 1), "VALID"),),
    lambda L, x: tuple(L.reduce_window((x, x), (0., 1.), lambda a, b: (a[0] + b[0], a[1] * b[1]), (2, 2))),
    lambda L, x: (L.reduce_and(L.gt(x, np.float32(2)), (0,)), L.reduce_xor(L.gt(x, np.float32(2)), (0, 1))),
]


@pytest.mark.parametrize("case", range(len(_TEXT_CASES)))
def test_jaxpr_text_matches_jax(jax, case):
  f = _TEXT_CASES[case]
  ours = str(core.trace_to_jaxpr(lambda x: list(f(lax, x)), [ShapedArray((3, 4), f32)]))
  ref = str(jax.make_jaxpr(lambda x: f(jax.lax, x))(np.ones((3, 4), f32)))
  assert ours == ref


@pytest.mark.parametrize("compile_mode", ["off", "sync"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, "bfloat16"])
def test_sum_over_size_one_axes_keeps_negative_zero(compile_mode, dtype):
  """XLA drops a reduction whose reduced axes all have size 1, so a -0 stays -0 (a fold
  from +0 gives +0 when any axis is longer); eager and both jit tiers alike. Found by the
  differential fuzzer."""
  from pyjax._src.backends.cpu import executable
  dt = np.dtype(ml_dtypes.bfloat16) if dtype == "bfloat16" else np.dtype(dtype)
  x = np.full((1, 2, 1), -0.0, dt)

  def f(x):
    return (jnp.sum(x, axis=(0, 2)), jnp.mean(x, axis=0), jnp.sum(x, axis=1),
            jnp.sum(x[0, 0]))
  with executable.compile_mode_override(compile_mode):
    outs = [f(x), pyjax.jit(f)(x)]
  for out in outs:
    signs = [bool(np.signbit(np.asarray(o, np.float32)).all()) for o in out]
    assert signs == [True, True, False, True]


@pytest.mark.parametrize("compile_mode", ["off", "sync"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, "bfloat16", np.complex64])
def test_cumsum_of_negative_zeros_is_positive_zero(compile_mode, dtype):
  """XLA's cumulative sum folds from +0, so running sums of -0 are +0 (NumPy's cumsum
  keeps -0); eager and both jit tiers, both directions. Found by the differential fuzzer."""
  from pyjax._src.backends.cpu import executable
  dt = np.dtype(ml_dtypes.bfloat16) if dtype == "bfloat16" else np.dtype(dtype)
  x = np.full((2, 3, 70), -0.0, dt)    # inner blocks and single rows both
  x[1, 1, 1] = 1

  def f(x):
    return [lax.cumsum(x, axis=a, reverse=r) for a in range(3) for r in (False, True)]
  with executable.compile_mode_override(compile_mode):
    for out in (f(x), pyjax.jit(f)(x)):
      for o in out:
        o = np.asarray(o).astype(np.complex128).real
        assert not np.signbit(o).any()
        assert np.count_nonzero(o) > 0


@pytest.mark.parametrize("compile_mode", ["off", "sync"])
def test_cumsum_over_a_length_one_axis_is_the_identity(compile_mode):
  """XLA drops a cumulative sum over a length-1 axis, so -0 stays -0 there (longer axes
  fold from +0). Found by the differential fuzzer."""
  from pyjax._src.backends.cpu import executable
  x = np.full((1, 3), -0.0, np.float32)

  def f(x):
    return lax.cumsum(x, axis=0), lax.cumsum(x, axis=1)
  with executable.compile_mode_override(compile_mode):
    for a0, a1 in (f(x), pyjax.jit(f)(x)):
      assert np.signbit(np.asarray(a0)).all() and not np.signbit(np.asarray(a1)).any()
