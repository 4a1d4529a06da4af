"""jnp reductions: sum/prod/max/min/all/any, mean/var/std/average, ptp, argmax/argmin,
count_nonzero, cumulative reductions, nan* variants and median.

Each case runs the same function with pyjax.numpy and with jax.numpy on the same NumPy
inputs and compares values, dtypes, shapes, weak types and exceptions (class + message);
a few tests compare values with NumPy only, so the file is useful without JAX too."""
import warnings

import numpy as np
import pytest

from jax_compare import (bf16, f16, f32, i8, u8, i32, b_, c64, ALL, weak, arr, check_jnp,
                         fast, pjnp)


AXES_2D = [None, 0, 1, -1, -2, (0, 1), (1, 0), (), [0]]


# --- sum / prod / max / min / all / any --------------------------------------------------
@pytest.mark.parametrize("name", ["sum", "prod", "max", "min", "all", "any", "amax", "amin"])
@pytest.mark.parametrize("dtype", fast(ALL, [i8, bf16]))
def test_basic_reductions_dtypes(name, dtype):
  x = arr((3, 4), dtype, low=1 if name == "prod" else None)
  check_jnp(lambda m: getattr(m, name)(x))
  check_jnp(lambda m: getattr(m, name)(x, axis=1, keepdims=True))


@pytest.mark.parametrize("name", fast(["sum", "prod", "max", "min", "all", "any"], ["sum"]))
@pytest.mark.parametrize("axis", AXES_2D)
@pytest.mark.parametrize("keepdims", fast([False, True], [False]))
def test_basic_reductions_axes(name, axis, keepdims):
  x = arr((3, 4), f32)
  check_jnp(lambda m: getattr(m, name)(x, axis=axis, keepdims=keepdims))


@pytest.mark.parametrize("name", fast(["sum", "prod", "max", "min", "all", "any", "mean"],
                                      ["sum", "max"]))
@pytest.mark.parametrize("shape,axis", [((0,), None), ((0, 3), 0), ((0, 3), 1), ((2, 0), 1),
                                        ((1,), 0), ((1, 1), None), ((), None)])
def test_reductions_empty_and_unit(name, shape, axis):
  x = arr(shape, f32)
  check_jnp(lambda m: getattr(m, name)(x, axis=axis))


@pytest.mark.parametrize("name", ["sum", "prod", "max", "min", "mean", "var", "argmax",
                                  "cumsum", "all", "ptp", "median", "count_nonzero",
                                  "nansum", "nanmax", "average", "std"])
@pytest.mark.parametrize("dtype", fast([f32, i32], [f32]))
def test_weak_inputs_give_strong_results(name, dtype):
  check_jnp(lambda m: getattr(m, name)(weak(m, [1, 2, 3], dtype)))
  check_jnp(lambda m: getattr(m, name)(2.0 if dtype == f32 else 2))


@pytest.mark.parametrize("dtype,kw", [
    (b_, {}), (i8, {}), (u8, {}), (np.dtype(np.int16), {}), (np.dtype(np.uint16), {}),
    (u8, {"promote_integers": False}), (i8, {"promote_integers": False}),
    (i32, {"dtype": np.int8}), (f32, {"dtype": np.int32}), (b_, {"dtype": bool}),
    (b_, {"dtype": np.complex64}), (bf16, {"dtype": bf16}), (f16, {"dtype": f32}),
    (i32, {"dtype": "float16"}), (u8, {"dtype": "uint8"})])
@pytest.mark.parametrize("name", fast(["sum", "prod"], ["sum"]))
def test_sum_prod_result_dtypes(name, dtype, kw):
  x = arr((2, 5), dtype, low=1)
  check_jnp(lambda m: getattr(m, name)(x, axis=0, **kw))


def test_sum_overflow_wraps_like_jax():
  x = np.array([200, 200], np.uint8)
  r = check_jnp(lambda m: m.sum(x))
  assert r is None or int(r) == 400
  check_jnp(lambda m: m.sum(x, promote_integers=False))
  check_jnp(lambda m: m.prod(np.array([100, 100, 100], np.int8)))


def test_sum_x64_dtype_warning_and_truncation():
  x = arr((3,), f32)
  with pytest.warns(UserWarning, match="Explicitly requested dtype int64"):
    out = pjnp.sum(x, dtype=np.int64)
  assert out.dtype == i32


@pytest.mark.parametrize("name", ["sum", "prod", "max", "min"])
@pytest.mark.parametrize("dtype", fast([f32, i32, f16, u8], [f16]))
def test_where_and_initial(name, dtype):
  x = arr((3, 4), dtype, low=1)
  w = arr((3, 4), b_, seed=3)
  check_jnp(lambda m: getattr(m, name)(x, where=w, initial=2))
  check_jnp(lambda m: getattr(m, name)(x, axis=1, where=w, initial=3, keepdims=True))
  check_jnp(lambda m: getattr(m, name)(x, axis=0, where=w[0], initial=1))  # broadcast where
  check_jnp(lambda m: getattr(m, name)(x, initial=1))
  check_jnp(lambda m: getattr(m, name)(x, axis=0, where=np.zeros((3, 4), bool), initial=0))


def test_where_for_all_any():
  x = arr((3, 4), f32)
  w = arr((3, 4), b_, seed=3)
  check_jnp(lambda m: m.all(x > 0, where=w))
  check_jnp(lambda m: m.any(x > 0, axis=1, where=w))
  check_jnp(lambda m: m.sum(x, where=w))  # identity-based: no initial needed


def test_initial_edge_values():
  x = np.array([2, 3], np.int8)
  check_jnp(lambda m: m.min(x, initial=1000))  # wraps like convert_element_type
  check_jnp(lambda m: m.sum(x, initial=1.5))
  check_jnp(lambda m: m.max(np.ones((0, 3), np.float32), initial=-1.0))
  check_jnp(lambda m: m.max(np.ones((0, 3), np.float32), axis=0, initial=-1.0))


def test_all_any_casts():
  check_jnp(lambda m: m.all(np.array([1, 0, 2])))
  check_jnp(lambda m: m.any(np.array([1j, 0], np.complex64)))  # uses the real part, as JAX
  check_jnp(lambda m: m.all(np.array([0.5, 1.0], np.float32), axis=0, keepdims=True))
  check_jnp(lambda m: m.any(np.zeros((0,), bool)))


@pytest.mark.parametrize("case", [
    lambda m, x: m.sum([1, 2]),
    lambda m, x: m.sum(x, out=x),
    lambda m, x: m.max(x, out=x),
    lambda m, x: m.sum(x, axis=2),
    lambda m, x: m.sum(x, axis=-3),
    lambda m, x: m.sum(x, axis=(0, 0)),
    lambda m, x: m.sum(x, axis=(0, -2)),
    lambda m, x: m.sum(x, axis=1.0),
    lambda m, x: m.max(np.ones((0, 3))),
    lambda m, x: m.min(np.ones((2, 0)), axis=1),
    lambda m, x: m.max(x, where=x > 0),
    lambda m, x: m.sum(x, where=np.ones((2, 3), np.int32)),
    lambda m, x: m.sum(x, initial=np.ones(2)),
    lambda m, x: m.sum(x, axis=0, where=np.array([True, False])),
    lambda m, x: m.sum(2.0, axis=0),
    lambda m, x: m.all(x, out=1),
    lambda m, x: m.prod((1, 2)),
])
def test_reduction_errors(case):
  x = arr((2, 3), f32)
  check_jnp(lambda m: case(m, x))


def test_axis_forms():
  x = arr((2, 3, 4), f32)
  check_jnp(lambda m: m.sum(x, axis=np.int64(1)))
  check_jnp(lambda m: m.sum(x, axis=np.array([0, 2])))
  check_jnp(lambda m: m.sum(x, axis=[2, 0], keepdims=True))
  check_jnp(lambda m: m.max(x, axis=(-1, 0)))


def test_methods_dispatch_here():
  x = pjnp.asarray(arr((2, 3), f32))
  np.testing.assert_allclose(np.asarray(x.sum(axis=1)), np.asarray(x).sum(axis=1), rtol=1e-6)
  np.testing.assert_allclose(np.asarray(x.mean()), np.asarray(x).mean(), rtol=1e-6)
  assert int(x.argmax()) == int(np.asarray(x).argmax())
  np.testing.assert_allclose(np.asarray(x.cumsum(axis=0)), np.asarray(x).cumsum(axis=0), rtol=1e-6)
  np.testing.assert_allclose(np.asarray(x.var(ddof=1)), np.asarray(x).var(ddof=1), rtol=1e-5)


# --- NumPy value agreement (no JAX needed) ----------------------------------------------
@pytest.mark.parametrize("name", ["sum", "prod", "max", "min", "mean", "var", "std", "ptp",
                                  "all", "any", "argmax", "argmin", "count_nonzero",
                                  "median", "cumsum", "cumprod"])
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_numpy_values(name, axis):
  x = arr((4, 5), f32, seed=7)
  ours = np.asarray(getattr(pjnp, name)(x, axis=axis))
  ref = getattr(np, name)(x, axis=axis)
  np.testing.assert_allclose(ours, ref, rtol=2e-5, atol=2e-6)


def test_numpy_nan_values():
  x = arr((4, 5), f32, seed=2, nan=True)
  for name in ["nansum", "nanprod", "nanmax", "nanmin", "nanmean", "nanvar", "nanstd",
               "nancumsum", "nancumprod", "nanmedian"]:
    with warnings.catch_warnings():
      warnings.simplefilter("ignore")
      ref = getattr(np, name)(x, axis=1)
    np.testing.assert_allclose(np.asarray(getattr(pjnp, name)(x, axis=1)), ref, rtol=2e-5,
                               atol=2e-6, err_msg=name)


# --- mean / var / std / average ---------------------------------------------------------
@pytest.mark.parametrize("name", ["mean", "var", "std"])
@pytest.mark.parametrize("dtype", fast(ALL + [c64], [i8, bf16, c64]))
def test_moments_dtypes(name, dtype):
  x = arr((3, 4), dtype)
  check_jnp(lambda m: getattr(m, name)(x))
  check_jnp(lambda m: getattr(m, name)(x, axis=0, keepdims=True))


@pytest.mark.parametrize("name", fast(["mean", "var", "std"], ["var"]))
@pytest.mark.parametrize("axis", [None, 1, (0, 1), -1, ()])
def test_moments_axes_where(name, axis):
  x = arr((3, 4), f32)
  w = arr((3, 4), b_, seed=5)
  check_jnp(lambda m: getattr(m, name)(x, axis=axis))
  check_jnp(lambda m: getattr(m, name)(x, axis=axis, where=w, keepdims=True))


@pytest.mark.parametrize("kw", [{"ddof": 1}, {"ddof": 3}, {"ddof": 5}, {"correction": 1},
                                {"correction": 0.5}, {"ddof": 1, "correction": 1},
                                {"dtype": np.float16}, {"dtype": np.int32},
                                {"mean": "m"}])
@pytest.mark.parametrize("name", fast(["var", "std"], ["var"]))
def test_var_std_options(name, kw):
  x = arr((3, 4), i32)
  if kw.get("mean") == "m":
    kw = {"mean": np.ones((3, 1), np.float32), "axis": 1}
  check_jnp(lambda m: getattr(m, name)(x, **kw))


def test_mean_special():
  check_jnp(lambda m: m.mean(np.ones((0,), np.float32)))
  check_jnp(lambda m: m.mean(np.array([1, 2]), dtype=np.int32))
  check_jnp(lambda m: m.mean(np.array([True, False])))
  check_jnp(lambda m: m.mean(arr((3,), f32), out=1))
  check_jnp(lambda m: m.mean(arr((3, 2), f32), axis=5))
  check_jnp(lambda m: m.var(np.array([1j, 2], np.complex64), dtype=np.float32))
  check_jnp(lambda m: m.std(arr((3,), f32), dtype=np.int32))
  check_jnp(lambda m: m.var(arr((3,), f32), out=1))


@pytest.mark.parametrize("dtype", fast([f32, i32, bf16, f16], [i32]))
def test_average(dtype):
  x = arr((2, 3, 4), dtype)
  w3 = np.array([1.0, 2.0, 3.0], np.float32)
  check_jnp(lambda m: m.average(x))
  check_jnp(lambda m: m.average(x, axis=1))
  check_jnp(lambda m: m.average(x, axis=1, weights=w3))
  check_jnp(lambda m: m.average(x, axis=1, weights=w3, returned=True, keepdims=True))
  check_jnp(lambda m: m.average(x, axis=(2, 0), weights=np.arange(1, 9, dtype=np.float32).reshape(4, 2)))
  check_jnp(lambda m: m.average(x, weights=arr((2, 3, 4), f32, seed=3) ** 2, returned=True))
  check_jnp(lambda m: m.average(x, returned=True))
  check_jnp(lambda m: m.average(x, axis=(0, 2), returned=True))


def test_average_errors():
  x = arr((2, 3), f32)
  check_jnp(lambda m: m.average(x, weights=np.ones(3)))
  check_jnp(lambda m: m.average(x, axis=0, weights=np.ones(3)))
  with pytest.raises(TypeError):  # JAX: TracerArrayConversionError, a TypeError
    pjnp.average([1.0, 2.0])


# --- ptp, count_nonzero -----------------------------------------------------------------
@pytest.mark.parametrize("dtype", fast(ALL, [u8, b_]))
def test_ptp_count_nonzero(dtype):
  x = arr((3, 4), dtype)
  check_jnp(lambda m: m.ptp(x))
  check_jnp(lambda m: m.ptp(x, axis=0, keepdims=True))
  check_jnp(lambda m: m.count_nonzero(x))
  check_jnp(lambda m: m.count_nonzero(x, axis=(0, 1)))
  check_jnp(lambda m: m.count_nonzero(x, axis=1, keepdims=True))


def test_ptp_out():
  check_jnp(lambda m: m.ptp(arr((2,), f32), out=1))


# --- argmax / argmin --------------------------------------------------------------------
@pytest.mark.parametrize("name", ["argmax", "argmin", "nanargmax", "nanargmin"])
@pytest.mark.parametrize("dtype", fast(ALL, [bf16]))
def test_arg_reductions_dtypes(name, dtype):
  x = arr((3, 4), dtype)
  check_jnp(lambda m: getattr(m, name)(x))
  check_jnp(lambda m: getattr(m, name)(x, axis=1))
  check_jnp(lambda m: getattr(m, name)(x, axis=0, keepdims=True))


@pytest.mark.parametrize("name", fast(["argmax", "argmin", "nanargmax", "nanargmin"],
                                      ["nanargmin"]))
@pytest.mark.parametrize("axis,keepdims", [(None, False), (None, True), (-1, True),
                                           (-2, False), (2, False), (-3, False),
                                           ((0,), False), (1.0, False)])
def test_arg_reductions_axes(name, axis, keepdims):
  x = arr((3, 4), f32, nan=True)
  check_jnp(lambda m: getattr(m, name)(x, axis=axis, keepdims=keepdims))


@pytest.mark.parametrize("name", fast(["argmax", "argmin", "nanargmax", "nanargmin"],
                                      ["argmax", "nanargmin"]))
def test_arg_reductions_special(name):
  check_jnp(lambda m: getattr(m, name)(np.ones((0,), np.float32)))
  check_jnp(lambda m: getattr(m, name)(np.ones((0, 3), np.float32), axis=1))
  check_jnp(lambda m: getattr(m, name)(np.ones((2, 0), np.float32), axis=0))
  check_jnp(lambda m: getattr(m, name)(3.0))
  check_jnp(lambda m: getattr(m, name)(np.array([[np.nan, np.nan], [1.0, np.nan]], np.float32), axis=1))
  check_jnp(lambda m: getattr(m, name)(np.array([1.0, np.nan, 3.0], np.float32)))
  check_jnp(lambda m: getattr(m, name)(np.array([1.0, 2.0]), out=1))
  check_jnp(lambda m: getattr(m, name)([1.0, 2.0]))


# --- cumulative -------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["cumsum", "cumprod", "nancumsum", "nancumprod"])
@pytest.mark.parametrize("dtype", fast(ALL, [b_, u8]))
def test_cumulative_dtypes(name, dtype):
  x = arr((3, 4), dtype, low=1)
  check_jnp(lambda m: getattr(m, name)(x))
  check_jnp(lambda m: getattr(m, name)(x, axis=1))
  check_jnp(lambda m: getattr(m, name)(x, axis=-2))


@pytest.mark.parametrize("name", fast(["cumsum", "cumprod", "nancumsum", "nancumprod"],
                                      ["nancumsum"]))
@pytest.mark.parametrize("case", [
    lambda m, f, x: f(x, axis=0, dtype=bool),
    lambda m, f, x: f(x, axis=1, dtype=np.float16),
    lambda m, f, x: f(x, axis=1, dtype=np.int8),
    lambda m, f, x: f(x, axis=3),
    lambda m, f, x: f(x, out=1),
    lambda m, f, x: f(2.0, axis=0),
    lambda m, f, x: f(np.float32(2), axis=0),
    lambda m, f, x: f(m.asarray(2.0), axis=0),
    lambda m, f, x: f(np.ones((0, 3), np.float32), axis=0),
    lambda m, f, x: f(np.ones((2, 0), np.float32)),
    lambda m, f, x: f(np.array([np.nan, 1.0, 2.0], np.float32)),
    lambda m, f, x: f([1, 2]),
])
def test_cumulative_cases(name, case):
  x = arr((2, 3), f32, nan=True)
  check_jnp(lambda m: case(m, getattr(m, name), x))


@pytest.mark.parametrize("name", ["cumulative_sum", "cumulative_prod"])
@pytest.mark.parametrize("dtype", fast(ALL, [u8, b_]))
@pytest.mark.parametrize("include_initial", fast([False, True], [True]))
def test_array_api_cumulative(name, dtype, include_initial):
  x = arr((3, 4), dtype, low=1)
  check_jnp(lambda m: getattr(m, name)(x, axis=1, include_initial=include_initial))
  check_jnp(lambda m: getattr(m, name)(x[0], include_initial=include_initial))
  check_jnp(lambda m: getattr(m, name)(x, axis=0, dtype=np.float32, include_initial=include_initial))


@pytest.mark.parametrize("name", ["cumulative_sum", "cumulative_prod"])
def test_array_api_cumulative_errors(name):
  check_jnp(lambda m: getattr(m, name)(np.float32(1)))
  check_jnp(lambda m: getattr(m, name)(np.ones((2, 3))))
  check_jnp(lambda m: getattr(m, name)(np.ones((2, 3)), axis=2))
  check_jnp(lambda m: getattr(m, name)(np.ones((0,), np.int8), include_initial=True))


# --- nan reductions ---------------------------------------------------------------------
@pytest.mark.parametrize("name", ["nansum", "nanprod", "nanmax", "nanmin", "nanmean",
                                  "nanvar", "nanstd"])
@pytest.mark.parametrize("dtype", fast(ALL, [f16]))
def test_nan_reductions_dtypes(name, dtype):
  x = arr((3, 4), dtype, nan=True)
  check_jnp(lambda m: getattr(m, name)(x))
  check_jnp(lambda m: getattr(m, name)(x, axis=1, keepdims=True))


@pytest.mark.parametrize("name", ["nansum", "nanprod", "nanmax", "nanmin", "nanmean",
                                  "nanvar", "nanstd"])
def test_nan_reductions_cases(name):
  allnan = np.array([[np.nan, np.nan], [1.0, np.nan]], np.float32)
  w = np.array([[True, False], [True, True]])
  f = lambda m: getattr(m, name)  # noqa: E731
  check_jnp(lambda m: f(m)(allnan, axis=1))
  check_jnp(lambda m: f(m)(allnan, axis=0, where=w))
  check_jnp(lambda m: f(m)(allnan, out=1))
  check_jnp(lambda m: f(m)([1.0]))
  if name in ("nanmax", "nanmin", "nansum", "nanprod"):
    check_jnp(lambda m: f(m)(allnan, axis=1, initial=3.0))
  if name in ("nanvar", "nanstd"):
    check_jnp(lambda m: f(m)(allnan, axis=0, ddof=1))
    check_jnp(lambda m: f(m)(arr((3, 4), f32, nan=True), ddof=2, axis=1))
  if name in ("nansum", "nanprod", "nanmean", "nanvar"):
    check_jnp(lambda m: f(m)(allnan, dtype=np.float16))


# --- median -----------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["median", "nanmedian"])
@pytest.mark.parametrize("dtype", fast(ALL, [i8, bf16]))
def test_median_dtypes(name, dtype):
  x = arr((3, 4), dtype)
  check_jnp(lambda m: getattr(m, name)(x))
  check_jnp(lambda m: getattr(m, name)(x, axis=0))


@pytest.mark.parametrize("name", fast(["median", "nanmedian"], ["median"]))
@pytest.mark.parametrize("axis,keepdims", [(None, False), (None, True), (1, False), (1, True),
                                           (-1, False), ((0, 2), False), ((0, 2), True),
                                           ((2, 0), False), ((0, 0), False), ([0, 1], False),
                                           (3, False)])
def test_median_axes(name, axis, keepdims):
  x = arr((3, 4, 5), f32, nan=True, seed=4)
  y = arr((3, 4, 5), f32, seed=4)
  check_jnp(lambda m: getattr(m, name)(x, axis=axis, keepdims=keepdims))
  check_jnp(lambda m: getattr(m, name)(y, axis=axis, keepdims=keepdims))


def test_median_errors():
  check_jnp(lambda m: m.median(np.ones(3, np.complex64)))
  check_jnp(lambda m: m.median(np.ones(3), out=1))
  check_jnp(lambda m: m.median(np.ones(3), overwrite_input=True))
  check_jnp(lambda m: m.median([1.0, 2.0]))
  check_jnp(lambda m: m.median(np.ones((0,), np.float32)), message=False)
  check_jnp(lambda m: m.median(np.array([1, 5, 3, 2])))


# --- x64 --------------------------------------------------------------------------------
def test_x64_dtype_rules(x64):
  x = np.arange(6, dtype=np.int32).reshape(2, 3)
  check_jnp(lambda m: m.sum(x))
  check_jnp(lambda m: m.sum(x.astype(np.uint8)))
  check_jnp(lambda m: m.mean(x))
  check_jnp(lambda m: m.argmax(x))
  check_jnp(lambda m: m.cumsum(x.astype(bool)))
  check_jnp(lambda m: m.cumulative_sum(x.astype(np.uint16), axis=1))
  check_jnp(lambda m: m.var(x.astype(np.float64)))
  check_jnp(lambda m: m.count_nonzero(x))
