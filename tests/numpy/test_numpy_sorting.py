"""jnp sorting and searching: sort, argsort, lexsort, partition, argpartition,
sort_complex, searchsorted.

Each case runs the same function with pyjax.numpy and with jax.numpy on the same NumPy
inputs and compares values, dtypes, shapes, weak types and exceptions (class + message);
some tests compare values with NumPy only, so the file is useful without JAX too."""
import numpy as np
import pytest

from jax_compare import (bf16, f16, f32, i8, u8, i32, b_, c64, ALL, weak, arr, check_jnp,
                         fast, pjnp)


SPECIALS = np.array([np.nan, 1.0, -np.inf, -0.0, 0.0, np.inf, -np.nan, 2.0, 1.0, -3.5],
                    np.float32)


# --- sort / argsort ---------------------------------------------------------------------
@pytest.mark.parametrize("dtype", fast(ALL + [c64], [bf16, i8, b_, c64]))
@pytest.mark.parametrize("axis", [-1, 0, None])
def test_sort_argsort_dtypes(dtype, axis):
  x = arr((3, 5), dtype, nan=True)
  check_jnp(lambda m: m.sort(x, axis=axis))
  check_jnp(lambda m: m.argsort(x, axis=axis))
  check_jnp(lambda m: m.sort(x, axis=axis, descending=True))
  check_jnp(lambda m: m.argsort(x, axis=axis, descending=True))


@pytest.mark.parametrize("stable", [True, False])
@pytest.mark.parametrize("descending", [True, False])
def test_sort_ties_and_specials(stable, descending):
  ties = np.array([1, 2, 1, 2, 1, 0, 2], np.int32)
  check_jnp(lambda m: m.argsort(ties, stable=stable, descending=descending), values=stable)
  check_jnp(lambda m: m.sort(SPECIALS, stable=stable, descending=descending))
  check_jnp(lambda m: m.argsort(SPECIALS, stable=True, descending=descending))
  if stable:
    ref = np.argsort(-ties if descending else ties, kind="stable")
    if not descending:
      np.testing.assert_array_equal(np.asarray(pjnp.argsort(ties)), ref)


@pytest.mark.parametrize("shape,axis", [((0,), -1), ((2, 0), 1), ((2, 0), 0), ((1,), 0),
                                        ((2, 3, 4), 1), ((2, 3, 4), -3), ((), None)])
def test_sort_shapes(shape, axis):
  x = arr(shape, f32)
  check_jnp(lambda m: m.sort(x, axis=axis))
  check_jnp(lambda m: m.argsort(x, axis=axis))


def test_sort_weak_and_options():
  check_jnp(lambda m: m.sort(weak(m, [3.0, 1.0, 2.0], np.float32)))
  check_jnp(lambda m: m.argsort(weak(m, [3, 1, 2], np.int32)))
  check_jnp(lambda m: m.argsort(np.array([3, 1, 2]), dtype=np.int16))
  check_jnp(lambda m: m.argsort(np.array([3, 1, 2]), dtype=np.uint8))


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
  check_jnp(case)


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
  check_jnp(lambda m: m.partition(x, kth))
  check_jnp(lambda m: m.argpartition(x, kth))
  check_jnp(lambda m: m.partition(x, kth % 3, axis=0))
  check_jnp(lambda m: m.argpartition(x, kth % 3, axis=0))
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
  check_jnp(lambda m: m.partition(np.array([5, 1, 4, 2, 3, 0]), 2))
  check_jnp(lambda m: m.argpartition(np.array([5, 1, 4, 1, 1, 0, 5]), 3))
  check_jnp(lambda m: m.partition(np.array([5, 255, 0, 2, 3, 0], np.uint8), 2))
  check_jnp(lambda m: m.argpartition(np.array([5, 255, 0, 2, 3, 0], np.uint8), 4))
  check_jnp(lambda m: m.partition(arr((2, 3, 4), f32), 1, axis=1))
  check_jnp(lambda m: m.argpartition(arr((2, 3, 4), f32), 1, axis=1))
  check_jnp(lambda m: m.partition(weak(m, [3.0, 1.0, 2.0], np.float32), 1))
  check_jnp(lambda m: m.partition(np.ones((4, 1), np.float32), 0))
  check_jnp(lambda m: m.argpartition(np.ones((4, 1), np.float32), 0))


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
  check_jnp(case)


# --- sort_complex, lexsort ----------------------------------------------------------------
@pytest.mark.parametrize("dtype", [f32, i32, f16, c64, b_])
def test_sort_complex(dtype):
  x = arr((2, 4), dtype)
  check_jnp(lambda m: m.sort_complex(x))
  check_jnp(lambda m: m.sort_complex(x[0]))


def test_sort_complex_values():
  x = np.array([1 + 2j, 1 + 1j, 0 + 5j, np.nan, -1 - 1j], np.complex64)
  check_jnp(lambda m: m.sort_complex(x))
  np.testing.assert_array_equal(np.asarray(pjnp.sort_complex(x)), np.sort_complex(x))


@pytest.mark.parametrize("keys", [
    [np.array([1, 1, 0, 2, 1]), np.array([2, 1, 2, 0, 1])],
    [np.array([1.0, 1, 0, np.nan, 1], np.float32), np.array([2, 1, 2, 0, 1])],
    [np.array([3, 1, 2])],
    [np.array([True, False, True]), np.array([0.5, 0.5, -1.0], np.float32),
     np.array([1, 1, 1], np.uint8)],
])
def test_lexsort(keys):
  check_jnp(lambda m: m.lexsort(keys))
  check_jnp(lambda m: m.lexsort(tuple(keys)))
  np.testing.assert_array_equal(np.asarray(pjnp.lexsort(keys)), np.lexsort(keys))


def test_lexsort_cases():
  k2 = arr((2, 3, 4), i32)
  check_jnp(lambda m: m.lexsort(k2))
  check_jnp(lambda m: m.lexsort(k2, axis=0))
  check_jnp(lambda m: m.lexsort([np.int32(1)]))
  check_jnp(lambda m: m.lexsort([np.ones((0,), np.float32)]))
  check_jnp(lambda m: m.lexsort([]))
  check_jnp(lambda m: m.lexsort([np.array([1, 1, 0]), np.array([2, 1])]))
  check_jnp(lambda m: m.lexsort([np.ones(3)], axis=1))


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
  check_jnp(lambda m: m.searchsorted(a, v, side=side, method=method))
  check_jnp(lambda m: m.searchsorted(a, v[0, 0], side=side, method=method))
  ref = np.searchsorted(a, v, side=side)
  if dtype != c64:
    np.testing.assert_array_equal(np.asarray(pjnp.searchsorted(a, v, side=side, method=method)), ref)


@pytest.mark.parametrize("side", ["left", "right"])
@pytest.mark.parametrize("method", fast(["scan", "compare_all"], ["scan"]))
def test_searchsorted_specials(side, method):
  a = np.sort(SPECIALS)  # NaNs last
  v = SPECIALS
  check_jnp(lambda m: m.searchsorted(a, v, side=side, method=method))
  check_jnp(lambda m: m.searchsorted(np.array([-0.0, 0.0, 0.0], np.float32),
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
  check_jnp(lambda m: m.searchsorted(a, np.array([0, 2, 5, 2.5])))
  check_jnp(lambda m: m.searchsorted(a, 2))
  check_jnp(lambda m: m.searchsorted(a, 2.5))
  check_jnp(lambda m: m.searchsorted(np.array([], np.float32), np.array([1.0, 2.0])))
  check_jnp(lambda m: m.searchsorted(np.array([3, 1, 2]), np.array([2, 0, 4]),
                                 sorter=np.array([1, 2, 0])))
  check_jnp(lambda m: m.searchsorted(weak(m, [1.0, 2.0], np.float32), weak(m, [1.5], np.float32)))
  check_jnp(lambda m: m.searchsorted(a.astype(np.int8), np.array([300])))
  check_jnp(lambda m: m.searchsorted(a, np.ones((0, 3))))
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
  check_jnp(case)


def test_x64_index_dtypes(x64):
  x = arr((5,), f32)
  check_jnp(lambda m: m.argsort(x))
  check_jnp(lambda m: m.lexsort([x]))
  check_jnp(lambda m: m.searchsorted(np.sort(x), x))
  check_jnp(lambda m: m.argpartition(x, 2))
  check_jnp(lambda m: m.sort_complex(x.astype(np.float64)))
