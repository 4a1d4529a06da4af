"""lax.sort / sort_key_val / top_k against NumPy and real JAX."""
import functools

import ml_dtypes
import numpy as np
import pytest

import pyjax.numpy as jnp
from pyjax import lax
from pyjax._src import core
from pyjax._src.avals import ShapedArray

bf16 = np.dtype(ml_dtypes.bfloat16)
DTYPES = [bf16, np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.int8),
          np.dtype(np.uint8), np.dtype(np.int32), np.dtype(np.bool_)]

SPECIAL = [3., np.nan, -0.0, 0.0, -np.inf, np.inf, -np.nan, 1.0, 0.0, -0.0, 2.5, -1.0]


def _err(fn):
  try:
    fn()
  except Exception as e:  # noqa: BLE001
    return type(e), str(e)
  return None


def _trace(fun, *avals):
  return core.trace_to_jaxpr(lambda *a: list(fun(*a)), list(avals))


def _same(ours, ref):
  """Equal values (NaNs equal, signs of zeros and NaNs compared), dtypes and shapes."""
  o, r = np.asarray(ours), np.asarray(ref)
  assert o.dtype == r.dtype and o.shape == r.shape
  if o.dtype.kind in "fV" or o.dtype == bf16:
    of, rf = o.astype(np.float32), r.astype(np.float32)
    np.testing.assert_array_equal(np.isnan(of), np.isnan(rf))
    np.testing.assert_array_equal(np.signbit(of), np.signbit(rf))
    np.testing.assert_array_equal(np.where(np.isnan(of), 0, of), np.where(np.isnan(rf), 0, rf))
  elif o.dtype.kind == "c":
    _same(o.real, r.real)
    _same(o.imag, r.imag)
  else:
    np.testing.assert_array_equal(o, r)


def _rand(rng, shape, dtype):
  dtype = np.dtype(dtype)
  if dtype == np.bool_:
    return rng.random(shape) < 0.5
  if dtype.kind in "iu":
    lo = 0 if dtype.kind == "u" else -4
    return rng.integers(lo, 5, size=shape).astype(dtype)   # many ties
  x = rng.choice(np.array(SPECIAL, np.float32), size=shape)
  return x.astype(dtype)


def _ref_order(keys, axis):
  """Stable permutation sorting lexicographically by ``keys`` along ``axis`` with JAX's
  float order (NaN last, -0.0 == 0.0), computed with Python's sort."""
  keys = [np.moveaxis(np.asarray(k), axis, -1) for k in keys]
  shape = keys[0].shape

  def key_of(v):
    if isinstance(v, (complex, np.complexfloating)):
      return key_of(v.real) + key_of(v.imag)
    if isinstance(v, (float, np.floating)) or type(v).__name__ == "bfloat16":
      v = float(v)
      return (1, 0.0) if np.isnan(v) else (0, v + 0.0)
    return (0, int(v))

  perm = np.zeros(shape, np.int64)
  for idx in np.ndindex(*shape[:-1]):
    rows = [k[idx] for k in keys]
    order = sorted(range(shape[-1]),
                   key=lambda i: tuple(x for r in rows for x in key_of(r[i])))
    perm[idx] = order
  return np.moveaxis(perm, -1, axis)


# --- sort --------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape,axis", [((12,), 0), ((3, 7), 1), ((3, 7), 0), ((2, 3, 5), 1),
                                        ((0, 4), 1), ((1,), 0), ((4, 1), 1)])
def test_sort_values(dtype, shape, axis):
  rng = np.random.default_rng(0)
  x = _rand(rng, shape, dtype)
  out = lax.sort(x, dimension=axis)
  perm = _ref_order([x], axis)
  _same(out, np.take_along_axis(x, perm, axis))
  assert out.weak_type is False


def test_sort_special_floats_match_jax(jax):
  x = np.array(SPECIAL, np.float32)
  for dt in (np.float32, np.float16, bf16):
    _same(lax.sort(x.astype(dt)), jax.lax.sort(x.astype(dt)))
  # -0.0 and 0.0 compare equal (stable: input order kept); NaNs of either sign go last
  out = np.asarray(lax.sort(np.array([0.0, -0.0, 0.0, -0.0], np.float32)))
  np.testing.assert_array_equal(np.signbit(out), [False, True, False, True])
  out = np.asarray(lax.sort(np.array([np.nan, 1.0, -np.nan, -np.inf], np.float32)))
  np.testing.assert_array_equal(np.signbit(out), [True, False, False, True])


def test_sort_complex_match_jax(jax):
  c = np.array([1 + 2j, 1 + 1j, 5j, complex(np.nan, 0), complex(1, np.nan), -1 - 1j,
                complex(1, -np.inf), complex(-np.nan, 1), 0j, complex(-0.0, -0.0),
                complex(2, 0)], np.complex64)
  _same(lax.sort(c), jax.lax.sort(c))
  k, v = lax.sort_key_val(c, np.arange(c.size, dtype=np.int32))
  jk, jv = jax.lax.sort_key_val(c, np.arange(c.size, dtype=np.int32))
  _same(k, jk)
  _same(v, jv)


@pytest.mark.parametrize("num_keys", [1, 2, 3])
def test_sort_multiple_operands(num_keys, jax):
  rng = np.random.default_rng(num_keys)
  ops = [rng.integers(0, 3, size=(4, 9)).astype(np.int32),
         _rand(rng, (4, 9), np.float32),
         rng.integers(0, 3, size=(4, 9)).astype(np.uint8),
         rng.standard_normal((4, 9)).astype(np.float16)]
  out = lax.sort(ops, dimension=1, num_keys=num_keys)
  assert isinstance(out, tuple) and len(out) == 4
  perm = _ref_order(ops[:num_keys], 1)
  for o, x in zip(out, ops):
    _same(o, np.take_along_axis(x, perm, 1))
  ref = jax.lax.sort(ops, dimension=1, num_keys=num_keys)
  for o, r in zip(out, ref):
    _same(o, r)


def test_sort_is_stable():
  keys = np.array([1, 0, 1, 0, 1, 0], np.int32)
  vals = np.arange(6, dtype=np.int32)
  k, v = lax.sort_key_val(keys, vals)
  np.testing.assert_array_equal(v, [1, 3, 5, 0, 2, 4])
  k, v = lax.sort((keys, vals), is_stable=False)
  np.testing.assert_array_equal(k, [0, 0, 0, 1, 1, 1])


def test_sort_single_and_sequences(jax):
  x = np.array([3, 1, 2], np.int32)
  assert type(lax.sort(x)).__name__ != "tuple"
  for arg in [(x,), [x]]:
    out = lax.sort(arg)
    assert isinstance(out, tuple) and len(out) == 1
    np.testing.assert_array_equal(out[0], [1, 2, 3])
  out = lax.sort_key_val(np.array([[3, 1], [0, 2]]), np.array([[1., 2.], [3., 4.]]), dimension=0)
  assert isinstance(out, tuple)
  np.testing.assert_array_equal(out[0], [[0, 1], [3, 2]])
  np.testing.assert_array_equal(out[1], [[3., 2.], [1., 4.]])


@pytest.mark.parametrize("call", [
    lambda lx, x: lx.sort(x, num_keys=2),
    lambda lx, x: lx.sort((x, x[:2]), num_keys=1),
    lambda lx, x: lx.sort((x, x, x), num_keys=4),
    lambda lx, x: lx.sort((x, x, x), num_keys=0),
    lambda lx, x: lx.sort([]),
    lambda lx, x: lx.sort(x, dimension=1),
    lambda lx, x: lx.sort(x, dimension=-2),
    lambda lx, x: lx.sort(x[0]),
    lambda lx, x: lx.sort_key_val(x, x[:2]),
    lambda lx, x: lx.sort((x, x), dimension=1),
])
def test_sort_errors_match_jax(jax, call):
  x = np.array([3, 1, 2], np.int32)
  ours = _err(lambda: call(lax, x))
  assert ours is not None and ours == _err(lambda: call(jax.lax, x))


def test_sort_weak_type_and_jaxpr(jax):
  w = ShapedArray((3,), np.dtype(np.float32), True)
  s = ShapedArray((3,), np.dtype(np.int32), False)
  j = _trace(lambda a, b: lax.sort((a, b)), w, s)
  assert [a.weak_type for a in j.out_avals] == [True, False]
  x = np.ones((2, 3), np.float32)
  a = core.get_aval(x)
  for f in [lambda lx, u: [lx.sort(u)],
            lambda lx, u: list(lx.sort((u, u), dimension=0, is_stable=False)),
            lambda lx, u: list(lx.sort_key_val(u, u, dimension=-1)),
            lambda lx, u: list(lx.sort([u, u, u], num_keys=2))]:
    ours = str(_trace(functools.partial(f, lax), a))
    ref = str(jax.make_jaxpr(lambda u: f(jax.lax, u))(x))
    assert ours == ref


def test_sort_params():
  j = _trace(lambda a: [lax.sort(a, dimension=-1)], ShapedArray((2, 3), np.dtype(np.float32)))
  eqn = j.eqns[0]
  assert eqn.primitive is lax.sort_p and lax.sort_p.multiple_results
  assert eqn.params == {"dimension": 1, "is_stable": True, "num_keys": 1}


def test_sort_large_fast_path():
  rng = np.random.default_rng(0)
  x = rng.standard_normal((50, 400)).astype(np.float32)
  x[::7, ::5] = np.nan
  _same(lax.sort(x), np.sort(x, axis=-1))
  y = rng.integers(-100, 100, size=(50, 400)).astype(np.int32)
  k, v = lax.sort_key_val(y, x)
  perm = np.argsort(y, axis=-1, kind="stable")
  _same(k, np.take_along_axis(y, perm, -1))
  _same(v, np.take_along_axis(x, perm, -1))


# --- top_k -------------------------------------------------------------------------------
def _ref_top_k(x, k, axis=-1):
  """Descending IEEE total order, ties by lower index."""
  x = np.asarray(x)
  xm = np.moveaxis(x, axis, -1)
  vals = np.zeros(xm.shape[:-1] + (k,), x.dtype)
  idx = np.zeros(xm.shape[:-1] + (k,), np.int32)

  def key(v):
    v = float(v) if x.dtype.kind not in "iub" else int(v)
    if isinstance(v, float):
      if np.isnan(v):
        return (1 if not np.signbit(v) else -1, 0.0, 0)
      return (0, v, 0 if np.signbit(v) else 1)
    return (0, v, 0)

  for i in np.ndindex(*xm.shape[:-1]):
    row = xm[i]
    order = sorted(range(row.size), key=lambda j: key(row[j]), reverse=True)
    # Python's sort is stable with reverse=True too: ties keep index order
    vals[i] = row[order[:k]]
    idx[i] = order[:k]
  return np.moveaxis(vals, -1, axis), np.moveaxis(idx, -1, axis)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape,k,axis", [((12,), 5, -1), ((3, 7), 7, -1), ((3, 7), 2, 0),
                                          ((2, 3, 5), 1, 1), ((4, 0), 0, -1), ((1,), 1, -1),
                                          ((3, 4), 0, -1)])
def test_top_k_values(dtype, shape, k, axis):
  rng = np.random.default_rng(1)
  x = _rand(rng, shape, dtype)
  v, i = lax.top_k(x, k, axis=axis)
  rv, ri = _ref_top_k(x, k, axis)
  _same(v, rv)
  _same(i, ri)
  assert i.dtype == np.int32


def test_top_k_special_match_jax(jax):
  cases = [np.array([1., 3., 3., 2., np.nan], np.float32),
           np.array([1., 3., 3., 2., -0.0, 0.0], np.float32),
           np.array([-0.0, 0.0, -0.0], np.float32),
           np.array([1.0, -np.nan, np.nan, -np.inf, 2.0], np.float32),
           np.array([1, 2, 2, 0], np.uint8),
           np.array([True, False, True]),
           np.array([[1, 5, 3], [7, 2, 2]], np.int32),
           np.array([1., 3., 3., 2.], bf16)]
  for x in cases:
    k = x.shape[-1]
    ours = lax.top_k(x, k)
    ref = jax.lax.top_k(x, k)
    assert isinstance(ours, list)
    _same(ours[0], ref[0])
    _same(ours[1], ref[1])


@pytest.mark.parametrize("call", [
    lambda lx, x: lx.top_k(x, 5),
    lambda lx, x: lx.top_k(x, -1),
    lambda lx, x: lx.top_k(x, 2, axis=2),
    lambda lx, x: lx.top_k(x, 5, axis=0),
    lambda lx, x: lx.top_k(x[0, 0], 1),
    lambda lx, x: lx.top_k(x.astype(np.complex64), 1),
    lambda lx, x: lx.top_k([1.0, 2.0], 1),
])
def test_top_k_errors_match_jax(jax, call):
  x = np.ones((3, 4), np.float32)
  ours = _err(lambda: call(lax, x))
  assert ours is not None and ours == _err(lambda: call(jax.lax, x))


def test_top_k_k_and_axis_forms(jax):
  x = np.array([[1., 3., 2.], [0., -1., 5.]], np.float32)
  for k, axis in [(2.0, -1), (np.int64(1), -1), (jnp.asarray(2), -1), (1, -2), (2, 0)]:
    ours = lax.top_k(x, k, axis=axis)
    ref = jax.lax.top_k(x, int(k), axis=axis)
    _same(ours[0], ref[0])
    _same(ours[1], ref[1])


def test_top_k_weak_type_and_jaxpr(jax):
  w = ShapedArray((3,), np.dtype(np.float32), True)
  j = _trace(lambda a: lax.top_k(a, 2), w)
  assert [(a.dtype, a.weak_type) for a in j.out_avals] == [(np.dtype(np.float32), True),
                                                            (np.dtype(np.int32), True)]
  x = np.ones((2, 3), np.float32)
  for f in [lambda lx, u: lx.top_k(u, 2), lambda lx, u: lx.top_k(u, 1, axis=-2)]:
    ours = str(_trace(functools.partial(f, lax), core.get_aval(x)))
    ref = str(jax.make_jaxpr(lambda u: f(jax.lax, u))(x))
    assert ours == ref


def test_top_k_large():
  rng = np.random.default_rng(0)
  x = rng.integers(0, 50, size=(20, 1000)).astype(np.float32)   # many ties
  v, i = lax.top_k(x, 10)
  rv, ri = _ref_top_k(x[:3], 10)
  _same(np.asarray(v)[:3], rv)
  _same(np.asarray(i)[:3], ri)
  np.testing.assert_array_equal(np.take_along_axis(x, np.asarray(i), -1), v)
