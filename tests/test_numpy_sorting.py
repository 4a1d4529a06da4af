"""jnp sorting and searching: sort, argsort, lexsort, partition, argpartition,
sort_complex, searchsorted.

Each case runs the same function with pyjax.numpy and with jax.numpy on the same NumPy
inputs and compares values, dtypes, shapes, weak types and exceptions (class + message);
some tests compare values with NumPy only, so the file is useful without JAX too."""
import warnings

import ml_dtypes
import numpy as np
import pytest

import pyjax.numpy as pjnp
from pyjax._src.lax import elementwise as _plax_e

bf16 = np.dtype(ml_dtypes.bfloat16)
f16, f32, i8, u8, i32, u32 = (np.dtype(t) for t in ("float16", "float32", "int8", "uint8",
                                                     "int32", "uint32"))
b_ = np.dtype(bool)
c64 = np.dtype(np.complex64)
ALL = [bf16, f16, f32, i8, u8, i32, b_]
NUMERIC = [bf16, f16, f32, i8, u8, i32]
FLOATS = [bf16, f16, f32]


# --- the comparison harness -------------------------------------------------------------
def _is_pyjax(m):
  return m.__name__.startswith("pyjax")


def weak(m, value, dtype=None):
  """A weakly typed array of ``value`` in the library ``m`` (pyjax.numpy or jax.numpy)."""
  value = np.asarray(value, dtype)
  d = np.dtype(dtype) if dtype is not None else value.dtype
  if _is_pyjax(m):
    from pyjax._src import dtypes
    return _plax_e._convert_element_type(value, dtypes.canonicalize_dtype(d), True)
  from jax._src.lax import lax as jlax
  from jax._src import dtypes as jdt
  return jlax._convert_element_type(value, jdt.canonicalize_dtype(d), True)


def arr(shape, dtype, seed=0, nan=False, low=None):
  rng = np.random.RandomState(seed)
  dtype = np.dtype(dtype)
  if dtype == b_:
    return np.asarray(rng.rand(*shape) > 0.4)
  if dtype.kind in "iu":
    lo = (0 if dtype.kind == "u" else -5) if low is None else low
    return np.asarray(rng.randint(lo, 6, size=shape)).astype(dtype)
  if dtype.kind == "c":
    return np.asarray(rng.randn(*shape) + 1j * rng.randn(*shape)).astype(dtype)
  x = np.asarray(rng.randn(*shape)).astype(np.float32)
  if nan and x.size:
    x.flat[rng.randint(0, x.size, size=max(1, x.size // 3))] = np.nan
  return x.astype(dtype)


def _tol(d):
  d = np.dtype(d)
  if d == bf16:
    return 2e-2
  if d == f16:
    return 2e-3
  if d in (np.dtype(np.float32), np.dtype(np.complex64)):
    return 2e-5
  return 1e-12


def _leaves(x):
  return list(x) if isinstance(x, (tuple, list)) else [x]


def _run(fn, m):
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    try:
      return fn(m), None
    except Exception as e:  # noqa: BLE001
      return None, e


def check(fn, *, tol=None, message=True, values=True):
  """Compare fn(pyjax.numpy) with fn(jax.numpy)."""
  jax = pytest.importorskip("jax")
  import jax.numpy as jjnp
  ours, our_err = _run(fn, pjnp)
  ref, ref_err = _run(fn, jjnp)
  if ref_err is not None:
    assert our_err is not None, f"JAX raised {ref_err!r}, pyjax returned {ours}"
    assert isinstance(our_err, type(ref_err)) or type(ref_err) in type(our_err).__mro__, \
        (our_err, ref_err)
    if message:
      assert str(our_err) == str(ref_err), (str(our_err), str(ref_err))
    return None
  if our_err is not None:
    raise our_err
  ol, rl = _leaves(ours), _leaves(ref)
  assert len(ol) == len(rl)
  for o, r in zip(ol, rl):
    assert o.shape == r.shape, (o.shape, r.shape)
    assert o.dtype == r.dtype, (o.dtype, r.dtype)
    assert o.weak_type == r.weak_type, ("weak_type", o.weak_type, r.weak_type)
    if values:
      on, rn = np.asarray(o), np.asarray(r)
      t = _tol(r.dtype) if tol is None else tol
      if on.dtype.kind in "fc" or on.dtype == bf16:
        np.testing.assert_allclose(on.astype(np.complex128 if on.dtype.kind == "c" else np.float64),
                                   rn.astype(np.complex128 if rn.dtype.kind == "c" else np.float64),
                                   rtol=t, atol=t, equal_nan=True)
      else:
        np.testing.assert_array_equal(on, rn)
  del jax
  return ours


def fast(values, keep, unpack=False):
  """Parameters where only ``keep`` run by default; the rest are marked slow (the JAX
  oracle compiles every new signature, which dominates the run time).  ``unpack`` for
  tuples of several parameter names."""
  def slow(v):
    return pytest.param(*v, marks=pytest.mark.slow) if unpack else \
        pytest.param(v, marks=pytest.mark.slow)
  return [v if any(v is k or (type(v) is type(k) and v == k) for k in keep) else slow(v)
          for v in values]


SPECIALS = np.array([np.nan, 1.0, -np.inf, -0.0, 0.0, np.inf, -np.nan, 2.0, 1.0, -3.5],
                    np.float32)


# --- sort / argsort ---------------------------------------------------------------------
@pytest.mark.parametrize("dtype", fast(ALL + [c64], [bf16, i8, b_, c64]))
@pytest.mark.parametrize("axis", [-1, 0, None])
def test_sort_argsort_dtypes(dtype, axis):
  x = arr((3, 5), dtype, nan=True)
  check(lambda m: m.sort(x, axis=axis))
  check(lambda m: m.argsort(x, axis=axis))
  check(lambda m: m.sort(x, axis=axis, descending=True))
  check(lambda m: m.argsort(x, axis=axis, descending=True))


@pytest.mark.parametrize("stable", [True, False])
@pytest.mark.parametrize("descending", [True, False])
def test_sort_ties_and_specials(stable, descending):
  ties = np.array([1, 2, 1, 2, 1, 0, 2], np.int32)
  check(lambda m: m.argsort(ties, stable=stable, descending=descending), values=stable)
  check(lambda m: m.sort(SPECIALS, stable=stable, descending=descending))
  check(lambda m: m.argsort(SPECIALS, stable=True, descending=descending))
  if stable:
    ref = np.argsort(-ties if descending else ties, kind="stable")
    if not descending:
      np.testing.assert_array_equal(np.asarray(pjnp.argsort(ties)), ref)


@pytest.mark.parametrize("shape,axis", [((0,), -1), ((2, 0), 1), ((2, 0), 0), ((1,), 0),
                                        ((2, 3, 4), 1), ((2, 3, 4), -3), ((), None)])
def test_sort_shapes(shape, axis):
  x = arr(shape, f32)
  check(lambda m: m.sort(x, axis=axis))
  check(lambda m: m.argsort(x, axis=axis))


def test_sort_weak_and_options():
  check(lambda m: m.sort(weak(m, [3.0, 1.0, 2.0], np.float32)))
  check(lambda m: m.argsort(weak(m, [3, 1, 2], np.int32)))
  check(lambda m: m.argsort(np.array([3, 1, 2]), dtype=np.int16))
  check(lambda m: m.argsort(np.array([3, 1, 2]), dtype=np.uint8))


@pytest.mark.parametrize("case", [
    lambda m: m.sort(np.ones(3), kind="stable"),
    lambda m: m.sort(np.ones(3), order="x"),
    lambda m: m.argsort(np.ones(3), kind="quicksort"),
    lambda m: m.argsort(np.ones(3), order="x"),
    lambda m: m.sort(np.float32(1)),
    lambda m: m.argsort(np.float32(1)),
    lambda m: m.sort(np.ones((2, 3)), axis=2),
    lambda m: m.sort([1, 2]),
    lambda m: m.argsort((1, 2)),
])
def test_sort_errors(case):
  check(case)


def test_sort_numpy_values():
  x = arr((4, 6), f32, seed=3, nan=True)
  np.testing.assert_array_equal(np.asarray(pjnp.sort(x, axis=0)), np.sort(x, axis=0))
  np.testing.assert_array_equal(np.asarray(pjnp.argsort(x, axis=1)),
                                np.argsort(x, axis=1, kind="stable"))
  np.testing.assert_array_equal(np.asarray(pjnp.sort(x, axis=None)), np.sort(x, axis=None))
  y = arr((10,), i32, seed=1)
  np.testing.assert_array_equal(np.asarray(pjnp.argsort(y, descending=True)),
                                np.argsort(-y, kind="stable"))
  xx = pjnp.asarray(x)
  np.testing.assert_array_equal(np.asarray(xx.sort(axis=0)), np.sort(x, axis=0))
  np.testing.assert_array_equal(np.asarray(xx.argsort()), np.argsort(x, kind="stable"))


# --- partition / argpartition -----------------------------------------------------------
@pytest.mark.parametrize("dtype", fast([f32, bf16, f16, i8, u8, i32], [f32, u8]))
@pytest.mark.parametrize("kth", [0, 2, -1, -3])
def test_partition(dtype, kth):
  x = arr((3, 6), dtype, seed=2)
  check(lambda m: m.partition(x, kth))
  check(lambda m: m.argpartition(x, kth))
  check(lambda m: m.partition(x, kth % 3, axis=0))
  check(lambda m: m.argpartition(x, kth % 3, axis=0))
  # NumPy's partition contract
  out = np.asarray(pjnp.partition(x, kth)).astype(np.float64)
  k = kth % 6
  xs = np.sort(x.astype(np.float64), axis=-1)
  np.testing.assert_array_equal(out[:, k], xs[:, k])
  assert (out[:, :k] <= out[:, k:k + 1]).all() and (out[:, k + 1:] >= out[:, k:k + 1]).all()
  idx = np.asarray(pjnp.argpartition(x, kth))
  vals = np.take_along_axis(x, idx, -1).astype(np.float64)
  np.testing.assert_array_equal(vals[:, :k + 1], out[:, :k + 1])
  np.testing.assert_array_equal(np.sort(vals[:, k + 1:]), np.sort(out[:, k + 1:]))


def test_partition_specials():
  check(lambda m: m.partition(np.array([5, 1, 4, 2, 3, 0]), 2))
  check(lambda m: m.argpartition(np.array([5, 1, 4, 1, 1, 0, 5]), 3))
  check(lambda m: m.partition(np.array([5, 255, 0, 2, 3, 0], np.uint8), 2))
  check(lambda m: m.argpartition(np.array([5, 255, 0, 2, 3, 0], np.uint8), 4))
  check(lambda m: m.partition(arr((2, 3, 4), f32), 1, axis=1))
  check(lambda m: m.argpartition(arr((2, 3, 4), f32), 1, axis=1))
  check(lambda m: m.partition(weak(m, [3.0, 1.0, 2.0], np.float32), 1))
  check(lambda m: m.partition(np.ones((4, 1), np.float32), 0))
  check(lambda m: m.argpartition(np.ones((4, 1), np.float32), 0))


@pytest.mark.parametrize("case", [
    lambda m: m.partition(np.arange(6), 6),
    lambda m: m.partition(np.arange(6), -7),
    lambda m: m.partition(np.array([True, False]), 0),
    lambda m: m.argpartition(np.array([True, False]), 0),
    lambda m: m.partition(np.array([1j], np.complex64), 0),
    lambda m: m.argpartition(np.array([1j], np.complex64), 0),
    lambda m: m.partition(np.ones((2, 3)), 0, axis=2),
    lambda m: m.partition([1, 2], 0),
])
def test_partition_errors(case):
  check(case)


# --- sort_complex, lexsort ----------------------------------------------------------------
@pytest.mark.parametrize("dtype", [f32, i32, f16, c64, b_])
def test_sort_complex(dtype):
  x = arr((2, 4), dtype)
  check(lambda m: m.sort_complex(x))
  check(lambda m: m.sort_complex(x[0]))


def test_sort_complex_values():
  x = np.array([1 + 2j, 1 + 1j, 0 + 5j, np.nan, -1 - 1j], np.complex64)
  check(lambda m: m.sort_complex(x))
  np.testing.assert_array_equal(np.asarray(pjnp.sort_complex(x)), np.sort_complex(x))


@pytest.mark.parametrize("keys", [
    [np.array([1, 1, 0, 2, 1]), np.array([2, 1, 2, 0, 1])],
    [np.array([1.0, 1, 0, np.nan, 1], np.float32), np.array([2, 1, 2, 0, 1])],
    [np.array([3, 1, 2])],
    [np.array([True, False, True]), np.array([0.5, 0.5, -1.0], np.float32),
     np.array([1, 1, 1], np.uint8)],
])
def test_lexsort(keys):
  check(lambda m: m.lexsort(keys))
  check(lambda m: m.lexsort(tuple(keys)))
  np.testing.assert_array_equal(np.asarray(pjnp.lexsort(keys)), np.lexsort(keys))


def test_lexsort_cases():
  k2 = arr((2, 3, 4), i32)
  check(lambda m: m.lexsort(k2))
  check(lambda m: m.lexsort(k2, axis=0))
  check(lambda m: m.lexsort([np.int32(1)]))
  check(lambda m: m.lexsort([np.ones((0,), np.float32)]))
  check(lambda m: m.lexsort([]))
  check(lambda m: m.lexsort([np.array([1, 1, 0]), np.array([2, 1])]))
  check(lambda m: m.lexsort([np.ones(3)], axis=1))


# --- searchsorted -----------------------------------------------------------------------
@pytest.mark.parametrize("method", fast(["scan", "scan_unrolled", "compare_all", "sort"],
                                        ["scan", "compare_all"]))
@pytest.mark.parametrize("side", ["left", "right"])
@pytest.mark.parametrize("dtype", fast([f32, i32, u8, bf16, b_, c64], [f32, i32, b_, c64]))
def test_searchsorted(method, side, dtype):
  a = np.sort(arr((9,), dtype, seed=1))
  if dtype == b_:
    a = np.sort(np.array([False, False, True, True]))
  v = arr((2, 5), dtype, seed=2)
  check(lambda m: m.searchsorted(a, v, side=side, method=method))
  check(lambda m: m.searchsorted(a, v[0, 0], side=side, method=method))
  ref = np.searchsorted(a, v, side=side)
  if dtype != c64:
    np.testing.assert_array_equal(np.asarray(pjnp.searchsorted(a, v, side=side, method=method)), ref)


@pytest.mark.parametrize("side", ["left", "right"])
@pytest.mark.parametrize("method", fast(["scan", "compare_all"], ["scan"]))
def test_searchsorted_specials(side, method):
  a = np.sort(SPECIALS)  # NaNs last
  v = SPECIALS
  check(lambda m: m.searchsorted(a, v, side=side, method=method))
  check(lambda m: m.searchsorted(np.array([-0.0, 0.0, 0.0], np.float32),
                                 np.array([0.0, -0.0], np.float32), side=side, method=method))
  for n in (1, 2, 3, 4, 7, 8, 16, 17):
    a = np.arange(n, dtype=np.float32) * 2
    v = np.arange(-1, 2 * n + 1, dtype=np.float32) / 1.0
    np.testing.assert_array_equal(
        np.asarray(pjnp.searchsorted(a, v, side=side, method=method)),
        np.searchsorted(a, v, side=side), err_msg=str(n))
    a = np.repeat(np.arange(n, dtype=np.int32), 3)
    v = np.arange(-1, n + 1, dtype=np.int32)
    np.testing.assert_array_equal(
        np.asarray(pjnp.searchsorted(a, v, side=side, method=method)),
        np.searchsorted(a, v, side=side), err_msg=str(n))


def test_searchsorted_cases():
  a = np.array([1, 2, 2, 3])
  check(lambda m: m.searchsorted(a, np.array([0, 2, 5, 2.5])))
  check(lambda m: m.searchsorted(a, 2))
  check(lambda m: m.searchsorted(a, 2.5))
  check(lambda m: m.searchsorted(np.array([], np.float32), np.array([1.0, 2.0])))
  check(lambda m: m.searchsorted(np.array([3, 1, 2]), np.array([2, 0, 4]),
                                 sorter=np.array([1, 2, 0])))
  check(lambda m: m.searchsorted(weak(m, [1.0, 2.0], np.float32), weak(m, [1.5], np.float32)))
  check(lambda m: m.searchsorted(a.astype(np.int8), np.array([300])))
  check(lambda m: m.searchsorted(a, np.ones((0, 3))))
  assert int(pjnp.asarray(np.array([1.0, 2.0, 3.0], np.float32)).searchsorted(2.5)) == 2


@pytest.mark.parametrize("case", [
    lambda m: m.searchsorted(np.array([1, 2]), 2, side="mid"),
    lambda m: m.searchsorted(np.array([1, 2]), 2, method="foo"),
    lambda m: m.searchsorted(np.ones((2, 2)), 2),
    lambda m: m.searchsorted(np.float32(1), 2),
    lambda m: m.searchsorted([1, 2], 1),
    lambda m: m.searchsorted(np.array([1, 2]), [1]),
])
def test_searchsorted_errors(case):
  check(case)


def test_x64_index_dtypes(x64):
  x = arr((5,), f32)
  check(lambda m: m.argsort(x))
  check(lambda m: m.lexsort([x]))
  check(lambda m: m.searchsorted(np.sort(x), x))
  check(lambda m: m.argpartition(x, 2))
  check(lambda m: m.sort_complex(x.astype(np.float64)))
