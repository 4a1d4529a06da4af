"""lax/dot.py: lax.dot_general / dot / batch_matmul, against NumPy and real JAX (the helpers
here also serve test_lax_convolution.py)."""
import itertools

import ml_dtypes
import numpy as np
import pytest

from pyjax import lax
from pyjax._src import core
from pyjax._src.avals import ShapedArray

bf16 = np.dtype(ml_dtypes.bfloat16)
DTYPES = [bf16, np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.int8),
          np.dtype(np.uint8), np.dtype(np.int32), np.dtype(np.bool_)]


def _rand(rng, shape, dtype):
  dtype = np.dtype(dtype)
  if dtype == np.bool_:
    return rng.random(shape) < 0.5
  if dtype.kind in "iu":
    lo = 0 if dtype.kind == "u" else -5
    return rng.integers(lo, 6, size=shape).astype(dtype)
  if dtype.kind == "c":
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
  return rng.standard_normal(shape).astype(dtype)


def _tol(dtype):
  dtype = np.dtype(dtype)
  if dtype in (bf16,):
    return 5e-2
  if dtype == np.float16:
    return 1e-2
  return 1e-5


def _check_close(ours, ref, dtype=None):
  ours_np = np.asarray(ours)
  ref_np = np.asarray(ref)
  assert ours_np.shape == ref_np.shape
  assert ours_np.dtype == ref_np.dtype, (ours_np.dtype, ref_np.dtype)
  d = ours_np.dtype if dtype is None else dtype
  if d.kind in "iub":
    np.testing.assert_array_equal(ours_np, ref_np)
  else:
    t = _tol(d)
    np.testing.assert_allclose(ours_np.astype(np.float64 if d.kind != "c" else np.complex128),
                               ref_np.astype(np.float64 if d.kind != "c" else np.complex128),
                               rtol=t, atol=t)


def _trace(fun, *avals):
  return core.trace_to_jaxpr(lambda *a: list(fun(*a)), list(avals))


def _err(fn):
  try:
    fn()
  except Exception as e:  # noqa: BLE001
    return type(e), str(e)
  return None


# --- dot_general -------------------------------------------------------------------------
DOT_CASES = [
    ((3, 4), (4, 5), (((1,), (0,)), ((), ()))),
    ((4,), (4,), (((0,), (0,)), ((), ()))),
    ((3, 4), (4,), (((1,), (0,)), ((), ()))),
    ((4,), (4, 5), (((0,), (0,)), ((), ()))),
    ((3, 4), (5, 4), (((1,), (1,)), ((), ()))),
    ((2, 3, 4), (2, 4, 5), (((2,), (1,)), ((0,), (0,)))),
    ((3, 4, 2), (5, 4, 2), (((1,), (1,)), ((2,), (2,)))),
    ((2, 3, 4), (5, 4, 2), (((2,), (1,)), ((0,), (2,)))),
    ((2, 3), (4,), (((), ()), ((), ()))),
    ((2, 3, 4), (3, 4, 5), (((1, 2), (0, 1)), ((), ()))),
    ((2, 3, 4), (4, 3, 5), (((1, 2), (1, 0)), ((), ()))),
    ((0, 4), (4, 5), (((1,), (0,)), ((), ()))),
    ((3, 0), (0, 5), (((1,), (0,)), ((), ()))),
    ((1, 1), (1, 1), (((1,), (0,)), ((), ()))),
    ((2, 2, 3, 4), (2, 2, 4, 1), (((3,), (2,)), ((0, 1), (0, 1)))),
]


def _ref_dot(lhs, rhs, dims):
  (lc, rc), (lb, rb) = dims
  letters = iter("abcdefghijklmnop")
  ls = [next(letters) for _ in range(lhs.ndim)]
  rs = [next(letters) for _ in range(rhs.ndim)]
  for a, b in zip(lc, rc):
    rs[b] = ls[a]
  for a, b in zip(lb, rb):
    rs[b] = ls[a]
  out = ([ls[i] for i in lb] + [ls[i] for i in range(lhs.ndim) if i not in lb + lc]
         + [rs[i] for i in range(rhs.ndim) if i not in rb + rc])
  spec = f"{''.join(ls)},{''.join(rs)}->{''.join(out)}"
  if lhs.dtype == np.bool_:
    return np.einsum(spec, lhs.astype(np.int64), rhs.astype(np.int64)) != 0
  if lhs.dtype.kind in "iu":
    return np.einsum(spec, lhs.astype(np.int64), rhs.astype(np.int64)).astype(lhs.dtype)
  return np.einsum(spec, lhs.astype(np.float64), rhs.astype(np.float64)).astype(lhs.dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("case", range(len(DOT_CASES)))
def test_dot_general_values(case, dtype):
  ls, rs, dims = DOT_CASES[case]
  rng = np.random.default_rng(case)
  lhs, rhs = _rand(rng, ls, dtype), _rand(rng, rs, dtype)
  out = lax.dot_general(lhs, rhs, dims)
  assert out.dtype == dtype and out.weak_type is False
  _check_close(out, _ref_dot(lhs, rhs, dims))


@pytest.mark.parametrize("case", range(len(DOT_CASES)))
def test_dot_general_matches_jax(jax, case):
  ls, rs, dims = DOT_CASES[case]
  rng = np.random.default_rng(100 + case)
  lhs, rhs = _rand(rng, ls, np.float32), _rand(rng, rs, np.float32)
  ref = jax.lax.dot_general(lhs, rhs, dims, precision="highest")
  _check_close(lax.dot_general(lhs, rhs, dims), ref)


def test_dot_shapes_and_errors(jax):
  for ls, rs in [((3, 4), (4, 5)), ((3,), (3,)), ((3, 3), (3,)), ((3,), (3, 2)), ((3, 4), (3, 4)),
                 ((2, 3, 3), (3, 2)), ((3,), (4,)), ((), ())]:
    lhs, rhs = np.ones(ls, np.float32), np.ones(rs, np.float32)
    ours, ref = _err(lambda: lax.dot(lhs, rhs)), _err(lambda: jax.lax.dot(lhs, rhs))
    assert ours == ref
    if ours is None:
      _check_close(lax.dot(lhs, rhs), jax.lax.dot(lhs, rhs))
  with pytest.raises(TypeError):
    lax.dot(np.ones((2, 2)), np.ones((2, 2)), lax.Precision.HIGHEST)  # keyword-only, as JAX
  out = lax.dot(np.ones((3, 4), np.float32), np.ones((5, 4), np.float32),
                dimension_numbers=(([1], [1]), ([], [])))
  assert out.shape == (3, 5)


BAD_DIMS = [
    ((3, 4), (4, 5), (((1,), (1,)), ((), ()))),
    ((3, 4), (4, 5), (((1,), (0,)), ((0,), (0,)))),
    ((3, 4), (4, 5), (((1, 0), (0,)), ((), ()))),
    ((3, 4), (4, 5), (((3,), (0,)), ((), ()))),
    ((3, 4), (4, 5), (((1,), (0, 1)), ((), ()))),
    ((3, 4), (4, 5), (((1, 1), (0, 0)), ((), ()))),
    ((2, 3, 4), (3, 4, 5), (((2,), (1,)), ((0,), (0,)))),
    ((2, 3, 4), (2, 4, 5), (((2,), (1,)), ((0,), (0, 1)))),
    ((2, 3, 4), (2, 4, 5), (((2,), (1,)), ((0,), (1,)))),
    ((2, 3, 4), (2, 4, 5), (((0,), (0,)), ((0,), (0,)))),
    ((2, 3, 4), (2, 4, 5), (((-1,), (1,)), ((0,), (0,)))),
    ((2, 2, 3), (2, 2, 3), (((2,), (2,)), ((0, 0), (0, 1)))),
    ((2, 2, 3), (2, 2, 3), (((2,), (2,)), ((0, 1), (0, 0)))),
    ((2, 2, 3), (2, 2, 3), (((2,), (2, 2)), ((0,), (0,)))),
    ((2, 2, 3), (2, 2, 3), (((2,), (2,)), ((0,), (0, 3)))),
    ((2, 2, 3), (2, 2, 3), (((2.0,), (2,)), ((0,), (0,)))),
]


@pytest.mark.parametrize("case", range(len(BAD_DIMS)))
def test_dot_general_errors_match_jax(jax, case):
  ls, rs, dims = BAD_DIMS[case]
  lhs, rhs = np.ones(ls, np.float32), np.ones(rs, np.float32)
  ours = _err(lambda: lax.dot_general(lhs, rhs, dims))
  ref = _err(lambda: jax.lax.dot_general(lhs, rhs, dims))
  assert ours is not None and ours == ref


def test_dot_general_accepts_arrays_and_ints_in_dims():
  lhs, rhs = np.ones((2, 3, 4), np.float32), np.ones((2, 4, 5), np.float32)
  o1 = lax.dot_general(lhs, rhs, ((np.array([2]), np.array([1])), ([0], [0])))
  o2 = lax.dot_general(lhs, rhs, ((2, 1), (0, 0)))
  assert o1.shape == o2.shape == (2, 3, 5)


def test_dot_non_jax_values(jax):
  ours = _err(lambda: lax.dot([1.0, 2.0], [3.0, 4.0]))
  assert ours == _err(lambda: jax.lax.dot([1.0, 2.0], [3.0, 4.0]))
  assert ours[0] is TypeError


MIXED = [np.float32, np.int32, bf16, np.float16, np.int8, np.uint8, np.uint32, np.bool_,
         np.complex64]


def _jax_shape(jax, f, *args):
  """(dtype, weak_type) or (exception class, message) of ``f`` under jax.eval_shape (no
  compilation, so it is fast)."""
  specs = [jax.ShapeDtypeStruct(np.shape(a), np.asarray(a).dtype) for a in args]
  try:
    out = jax.eval_shape(f, *specs)
  except Exception as e:  # noqa: BLE001
    return type(e), str(e)
  return np.dtype(out.dtype), out.shape


def _our_shape(f, *args):
  try:
    out = _trace(lambda *a: [f(*a)], *[core.get_aval(a) for a in args]).out_avals[0]
  except Exception as e:  # noqa: BLE001
    return type(e), str(e)
  return out.dtype, out.shape


def test_dot_mixed_dtypes_match_jax(jax):
  for a, b in itertools.product(MIXED, MIXED):
    lhs = np.arange(1, 7).reshape(2, 3).astype(a)
    rhs = np.arange(1, 7).reshape(3, 2).astype(b)
    assert _our_shape(lax.dot, lhs, rhs) == _jax_shape(jax, jax.lax.dot, lhs, rhs), (a, b)
  for a, b in [(np.float32, np.int32), (np.float16, bf16), (np.uint8, np.int8),
               (np.bool_, np.int8), (np.complex64, np.float32), (np.uint32, np.int8)]:
    lhs = (np.arange(6).reshape(2, 3) - 2).astype(a)
    rhs = (np.arange(6).reshape(3, 2) * 3 - 5).astype(b)
    _check_close(lax.dot(lhs, rhs), jax.lax.dot(lhs, rhs))


PREFS = [np.bool_, np.int8, np.uint8, np.int16, np.int32, np.uint32, np.float16, bf16,
         np.float32, np.complex64]


@pytest.mark.parametrize("ind", [np.bool_, np.int8, np.uint8, np.int32, np.uint32, np.float16,
                                 bf16, np.float32, np.complex64],
                         ids=lambda d: np.dtype(d).name)
def test_dot_preferred_element_type_match_jax(jax, ind):
  lhs = (np.arange(12).reshape(3, 4) % 5 - 1).astype(ind)
  rhs = (np.arange(20).reshape(4, 5) % 3 + 1).astype(ind)
  for pref in PREFS:
    f = lambda u, v, lx: lx.dot(u, v, preferred_element_type=pref)  # noqa: E731
    ours = _our_shape(lambda u, v: f(u, v, lax), lhs, rhs)
    assert ours == _jax_shape(jax, lambda u, v: f(u, v, jax.lax), lhs, rhs), (ind, pref)
    if not isinstance(ours[0], type):
      # values: the exact product converted to the preferred type
      pd = np.dtype(pref)
      if np.dtype(ind).kind in "biu":
        ref = lhs.astype(np.int64) @ rhs.astype(np.int64)
      else:
        ref = lhs.astype(np.complex128) @ rhs.astype(np.complex128)
      out = np.asarray(lax.dot(lhs, rhs, preferred_element_type=pref))
      if pd == np.bool_:
        np.testing.assert_array_equal(out, ref != 0)
      elif pd.kind in "iu":
        exp = ref if ref.dtype.kind == "i" else np.trunc(ref.real).astype(np.int64)
        np.testing.assert_array_equal(out, exp.astype(pd))
      else:
        exp = ref if pd.kind == "c" else ref.real
        np.testing.assert_allclose(out.astype(np.complex128), exp, rtol=1e-2, atol=1e-2)


def test_dot_preferred_conversions_match_jax(jax):
  cases = [
      (np.array([[200]], np.uint8), np.array([[-2]], np.int8), np.int32),
      (np.array([[200]], np.uint8), np.array([[-2]], np.int8), None),
      (np.array([[200]], np.uint8), np.array([[200]], np.uint8), np.int8),
      (np.array([[1e10, np.nan]], np.float32), np.array([[1.], [0.]], np.float32), np.int32),
      (np.array([[-1e10]], np.float32), np.array([[1.]], np.float32), np.int32),
      (np.array([[1.5]], np.float32), np.array([[1]], np.int32), np.int32),
      (np.array([[1 + 2j]], np.complex64), np.array([[3 + 1j]], np.complex64), np.float32),
      (np.array([[True, True]]), np.array([[True], [True]]), np.float32),
      (np.full((3, 4), 100, np.int8), np.full((4, 5), 100, np.int8), None),
      (np.full((3, 4), 100, np.int8), np.full((4, 5), 100, np.int8), np.int32),
  ]
  for lhs, rhs, pref in cases:
    _check_close(lax.dot(lhs, rhs, preferred_element_type=pref),
                 jax.lax.dot(lhs, rhs, preferred_element_type=pref))


def test_dot_weak_types(jax):
  def run(lx):
    w = lx.full((3,), 2.0)
    wi = lx.full((3,), 2)
    s = lx.full((3,), 2.0, dtype=np.float32)
    outs = [lx.dot(w, w), lx.dot(w, s), lx.dot(w, w, preferred_element_type=np.float32),
            lx.dot(w, w, preferred_element_type=bf16), lx.dot(wi, w),
            lx.dot(wi, wi, preferred_element_type=np.float32)]
    return [(o.dtype, o.weak_type) for o in outs]
  if not hasattr(lax, "full"):
    pytest.skip("lax.full not available yet")
  assert run(lax) == run(jax.lax)


def test_dot_weak_types_from_avals():
  w = ShapedArray((3,), np.dtype(np.float32), True)
  s = ShapedArray((3,), np.dtype(np.float32), False)
  dims = (((0,), (0,)), ((), ()))
  p = lax.dot_general_p
  assert p.abstract_eval(w, w, dimension_numbers=dims).weak_type is True
  assert p.abstract_eval(w, s, dimension_numbers=dims).weak_type is False
  assert p.abstract_eval(w, w, dimension_numbers=dims,
                         preferred_element_type=np.dtype(np.int32)).weak_type is True


def _to_jax_precision(jax, p):
  if isinstance(p, (tuple, list)):
    return type(p)(_to_jax_precision(jax, e) for e in p)
  if isinstance(p, lax.Precision):
    return getattr(jax.lax.Precision, p.name)
  if isinstance(p, lax.DotAlgorithmPreset):
    return getattr(jax.lax.DotAlgorithmPreset, p.name)
  return p


def test_precision_enum_and_strings(jax):
  P = lax.Precision
  assert [p.name for p in P] == ["DEFAULT", "HIGH", "HIGHEST"]
  assert repr(P.HIGHEST) == "Precision.HIGHEST" and str(P.HIGHEST) == "HIGHEST"
  assert P("highest") is P.HIGHEST and P("float32") is P.HIGHEST and P(1) is P.HIGH
  assert P("tensorfloat32") is P.HIGH and P("fastest") is P.DEFAULT
  with pytest.raises(ValueError):
    P("nope")
  x, y = np.ones((3, 4), np.float32), np.ones((4, 5), np.float32)
  a = [core.get_aval(x), core.get_aval(y)]
  for prec in ["highest", "float32", "high", "bfloat16_3x", "tensorfloat32", "default",
               "bfloat16", "fastest", ("high", "default"), ["high", "high"], P.HIGH,
               (P.HIGH, P.HIGHEST), "F32_F32_F32", lax.DotAlgorithmPreset.BF16_BF16_F32,
               "foo", 3, ("high", P.HIGH)]:
    jprec = _to_jax_precision(jax, prec)
    ours = _err(lambda: _trace(lambda u, v: [lax.dot(u, v, precision=prec)], *a))
    ref = _err(lambda: jax.make_jaxpr(lambda u, v: jax.lax.dot(u, v, precision=jprec))(x, y))
    assert ours == ref, prec
    if ours is None:
      ours = str(_trace(lambda u, v: [lax.dot(u, v, precision=prec)], *a))
      ref = str(jax.make_jaxpr(lambda u, v: jax.lax.dot(u, v, precision=jprec))(x, y))
      assert ours == ref


def test_dot_algorithm_preset():
  names = [p.name for p in lax.DotAlgorithmPreset]
  assert "F32_F32_F32" in names and "BF16_BF16_F32" in names and names[0] == "DEFAULT"
  # a preset disables the bit-width check of preferred_element_type, as in JAX
  out = lax.dot(np.ones((2, 2), np.int32), np.ones((2, 2), np.int32),
                precision=lax.DotAlgorithmPreset.DEFAULT, preferred_element_type=np.int8)
  assert out.dtype == np.int8


def test_default_matmul_precision_flag(jax):
  import pyjax
  x = np.ones((2, 2), np.float32)
  pyjax.config.update("jax_default_matmul_precision", "float32")
  try:
    ours = str(_trace(lambda u: [lax.dot(u, u)], core.get_aval(x)))
  finally:
    pyjax.config.update("jax_default_matmul_precision", None)
  with jax.default_matmul_precision("float32"):
    ref = str(jax.make_jaxpr(lambda u: jax.lax.dot(u, u))(x))
  assert ours == ref


def test_dot_jaxpr_text_matches_jax(jax):
  cases = [
      (lambda lx, a, b: lx.dot(a, b), (3, 4), (4, 5), np.float32),
      (lambda lx, a, b: lx.dot(a, b, preferred_element_type=np.float32), (3, 4), (4, 5), bf16),
      (lambda lx, a, b: lx.dot_general(a, b, (((2,), (1,)), ((0,), (0,)))), (2, 3, 4), (2, 4, 5),
       np.float32),
      (lambda lx, a, b: lx.batch_matmul(a, b), (2, 3, 4), (2, 4, 5), np.int8),
      (lambda lx, a, b: lx.dot(a, b), (3,), (3,), np.float32),
  ]
  for f, ls, rs, dt in cases:
    x, y = np.ones(ls, dt), np.ones(rs, dt)
    ours = str(_trace(lambda u, v: [f(lax, u, v)], core.get_aval(x), core.get_aval(y)))
    ref = str(jax.make_jaxpr(lambda u, v: f(jax.lax, u, v))(x, y))
    assert ours == ref


def test_batch_matmul(jax):
  rng = np.random.default_rng(0)
  a, b = rng.standard_normal((7, 2, 3, 4), np.float32), rng.standard_normal((7, 2, 4, 5), np.float32)
  np.testing.assert_allclose(lax.batch_matmul(a, b), a @ b, rtol=1e-5, atol=1e-5)
  for ls, rs in [((3,), (3, 3)), ((2, 3, 3), (3, 3)), ((2, 3, 4), (3, 4, 5))]:
    l, r = np.ones(ls, np.float32), np.ones(rs, np.float32)
    ours = _err(lambda: lax.batch_matmul(l, r))
    assert ours is not None and ours == _err(lambda: jax.lax.batch_matmul(l, r))


def test_dot_scalars_and_python_values():
  out = lax.dot_general(2, 2.0, (((), ()), ((), ())))
  assert out.dtype == np.float32 and out.weak_type is True and float(out) == 4.0
  out = lax.dot_general(np.ones(3, np.float32), 2.0, (((), ()), ((), ())))
  assert out.shape == (3,) and out.dtype == np.float32 and out.weak_type is False


def test_dot_large_int_exact():
  rng = np.random.default_rng(0)
  a = rng.integers(-2**30, 2**30, size=(5, 7)).astype(np.int32)
  b = rng.integers(-2**30, 2**30, size=(7, 3)).astype(np.int32)
  ref = (a.astype(np.int64) @ b.astype(np.int64)).astype(np.int32)   # wraps like XLA
  np.testing.assert_array_equal(lax.dot(a, b), ref)
  a8 = rng.integers(-128, 128, size=(4, 300)).astype(np.int8)
  b8 = rng.integers(-128, 128, size=(300, 2)).astype(np.int8)
  ref = a8.astype(np.int64) @ b8.astype(np.int64)
  np.testing.assert_array_equal(lax.dot(a8, b8, preferred_element_type=np.int32), ref)
  np.testing.assert_array_equal(lax.dot(a8, b8), ref.astype(np.int8))


def test_dot_x64(x64, jax):
  a = np.arange(6, dtype=np.float64).reshape(2, 3)
  out = lax.dot(a, a.T)
  assert out.dtype == np.float64
  np.testing.assert_allclose(out, a @ a.T)
  out = lax.dot(a.astype(np.float32), a.T.astype(np.float32), preferred_element_type=np.float64)
  assert out.dtype == np.float64
