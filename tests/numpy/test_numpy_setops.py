"""Set routines (unique and the array-API unique_*, union1d, intersect1d, setdiff1d,
setxor1d, isin): values against NumPy, against real JAX (values, dtypes, errors,
``size=``/``fill_value=`` padding, jit), hypothesis over sizes/dtypes/NaNs."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import pyjax
import pyjax.numpy as pjnp
from jax_compare import check_both

SETTINGS = settings(max_examples=12, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])

x = np.array([3, 1, 2, 3, 1, 5, 0], np.int32)
y = np.array([5, 7, 1, 1], np.int32)
f = np.array([2., np.nan, 1., np.nan, 2., -0.5], np.float32)
m = np.array([[1, 2], [3, 4], [1, 2], [0, 9]], np.int32)
c = np.array([1 + 1j, 1, 1 + 1j, np.nan, 2], np.complex64)
ENV = dict(x=x, y=y, f=f, m=m, c=c)


# --- NumPy known answers -----------------------------------------------------------------------
def test_unique_against_numpy():
  for a in (x, f, m):
    got = pjnp.unique(a, return_index=True, return_inverse=True, return_counts=True)
    want = np.unique(a, return_index=True, return_inverse=True, return_counts=True)
    for g, w in zip(got, want):
      np.testing.assert_array_equal(np.asarray(g), np.asarray(w).reshape(np.shape(g)))
  got = pjnp.unique(m, axis=0, return_index=True, return_inverse=True, return_counts=True)
  want = np.unique(m, axis=0, return_index=True, return_inverse=True, return_counts=True)
  for g, w in zip(got, want):
    np.testing.assert_array_equal(np.asarray(g), np.asarray(w).reshape(np.shape(g)))


def test_set_functions_against_numpy():
  np.testing.assert_array_equal(pjnp.union1d(x, y), np.union1d(x, y))
  np.testing.assert_array_equal(pjnp.intersect1d(x, y), np.intersect1d(x, y))
  for g, w in zip(pjnp.intersect1d(x, y, return_indices=True),
                  np.intersect1d(x, y, return_indices=True)):
    np.testing.assert_array_equal(g, w)
  np.testing.assert_array_equal(pjnp.setdiff1d(x, y), np.setdiff1d(x, y))
  np.testing.assert_array_equal(pjnp.setxor1d(x, y), np.setxor1d(x, y))
  np.testing.assert_array_equal(pjnp.isin(m, y), np.isin(m, y))
  np.testing.assert_array_equal(pjnp.isin(m, y, invert=True), np.isin(m, y, invert=True))
  for method in ("sort", "binary_search", "compare_all"):
    np.testing.assert_array_equal(pjnp.isin(m, y, method=method), np.isin(m, y))


def _padded(ref, size, fill):
  ref = np.asarray(ref)[:size]
  out = np.full((size,), fill, ref.dtype if ref.size else np.float32)
  out[:ref.size] = ref
  return out


@SETTINGS
@given(a=st.lists(st.integers(0, 6), max_size=9), b=st.lists(st.integers(0, 6), max_size=6),
       size=st.integers(1, 10), dtype=st.sampled_from([np.int32, np.float32, np.uint8]))
def test_property_fixed_size(a, b, size, dtype):
  a = np.asarray(a, dtype)
  b = np.asarray(b, dtype)
  if a.size:
    u = pjnp.unique(a, size=size, fill_value=7)
    np.testing.assert_array_equal(u, _padded(np.unique(a), size, 7))
    u0 = np.asarray(pjnp.unique(a, size=size))
    ref = np.unique(a)
    np.testing.assert_array_equal(u0[:ref.size], ref[:size])
    assert (u0[ref.size:] == ref.min()).all()
    vals, cnt = pjnp.unique(a, size=size, return_counts=True, fill_value=0)
    rv, rc = np.unique(a, return_counts=True)
    np.testing.assert_array_equal(cnt, _padded(rc, size, 0))
  for fn in ("union1d", "intersect1d", "setdiff1d", "setxor1d"):
    ref = getattr(np, fn)(a, b)
    got = getattr(pjnp, fn)(a, b, size=size, fill_value=9)
    np.testing.assert_array_equal(got, _padded(ref, size, 9).astype(got.dtype))
    np.testing.assert_array_equal(getattr(pjnp, fn)(a, b), ref)
  np.testing.assert_array_equal(pjnp.isin(a, b), np.isin(a, b))


@SETTINGS
@given(a=st.lists(st.sampled_from([0., 1., -1., np.nan, np.inf]), min_size=1, max_size=8))
def test_property_nan_inf(a):
  a = np.asarray(a, np.float32)
  np.testing.assert_array_equal(pjnp.unique(a), np.unique(a))
  np.testing.assert_array_equal(pjnp.unique(a, equal_nan=False), np.unique(a, equal_nan=False))
  np.testing.assert_array_equal(pjnp.unique_values(a), np.unique_values(a))


def test_fixed_size_under_jit():
  f = pyjax.jit(lambda a, b: (pjnp.unique(a, size=4, return_counts=True),
                              pjnp.intersect1d(a, b, size=3, return_indices=True),
                              pjnp.setdiff1d(a, b, size=4), pjnp.setxor1d(a, b, size=5),
                              pjnp.union1d(a, b, size=8), pjnp.isin(a, b)))
  (u, cnt), (i, i1, i2), d, xr, un, isin = f(x, y)
  np.testing.assert_array_equal(u, [0, 1, 2, 3])
  np.testing.assert_array_equal(cnt, [1, 2, 1, 2])
  np.testing.assert_array_equal(i, [1, 5, 1])
  np.testing.assert_array_equal(d, [0, 2, 3, 0])
  np.testing.assert_array_equal(xr, [0, 2, 3, 7, 0])
  np.testing.assert_array_equal(un, [0, 1, 2, 3, 5, 7, 0, 0])
  np.testing.assert_array_equal(isin, np.isin(x, y))
  with pytest.raises(pyjax.errors.ConcretizationTypeError):
    pyjax.jit(pjnp.unique)(x)


# --- against JAX --------------------------------------------------------------------------------
CASES = [
    'jnp.unique(x)',
    'jnp.unique(x, return_index=True, return_inverse=True, return_counts=True)',
    'jnp.unique(x, size=8)',
    'jnp.unique(x, size=3)',
    'jnp.unique(x, size=8, fill_value=-1)',
    'jnp.unique(x, return_index=True, return_inverse=True, return_counts=True, size=8, fill_value=99)',
    'jnp.unique(x, return_counts=True, size=3)',
    'jnp.unique(f)',
    'jnp.unique(f, equal_nan=False)',
    'jnp.unique(f, return_counts=True)',
    'jnp.unique(m, axis=0)',
    'jnp.unique(m, axis=0, return_index=True, return_inverse=True, return_counts=True)',
    'jnp.unique(m, axis=1, return_inverse=True)',
    'jnp.unique(m, axis=0, size=5, fill_value=0)',
    'jnp.unique(m, return_inverse=True)',
    'jnp.unique(c)',
    'jnp.unique(jnp.zeros((0,)))',
    'jnp.unique(jnp.zeros((0,)), size=3)',
    'jnp.unique(jnp.zeros((0,)), size=3, fill_value=1)',
    'jnp.unique(jnp.zeros((3, 0)), axis=0)',
    'jnp.unique(jnp.zeros((0,)), return_counts=True, return_inverse=True, return_index=True)',
    'jnp.unique([1, 2])',
    'jnp.unique(x, axis=2)',
    'jit(lambda a: jnp.unique(a))(x)',
    'jit(lambda a: jnp.unique(a, size=4, return_counts=True))(x)',
    'jit(lambda a: jnp.unique(a, size=4, return_inverse=True, return_index=True))(x)',
    'jnp.unique_all(f)',
    'jnp.unique_counts(x)',
    'jnp.unique_inverse(m)',
    'jnp.unique_values(f)',
    'jnp.unique_values(x, size=9, fill_value=0)',
    'jnp.unique_all(x, size=6)',
    'jnp.union1d(x, y)',
    'jnp.union1d(x, f)',
    'jnp.union1d(x, y, size=10)',
    'jnp.union1d(x, y, size=10, fill_value=-3)',
    'jit(lambda a, b: jnp.union1d(a, b))(x, y)',
    'jit(lambda a, b: jnp.union1d(a, b, size=4))(x, y)',
    'jnp.intersect1d(x, y)',
    'jnp.intersect1d(x, y, return_indices=True)',
    'jnp.intersect1d(x, y, assume_unique=True)',
    'jnp.intersect1d(x, y, size=4)',
    'jnp.intersect1d(x, y, size=4, fill_value=7)',
    'jnp.intersect1d(x, y, size=4, return_indices=True)',
    'jnp.intersect1d(jnp.array([1,2,3]), jnp.array([3,2,9]), size=4, return_indices=True, assume_unique=True)',
    'jnp.intersect1d(jnp.array([1,2,3]), jnp.array([3,2,9]), return_indices=True, assume_unique=True)',
    'jnp.intersect1d(x, f)',
    'jnp.intersect1d(jnp.zeros(0), y, size=2)',
    'jit(lambda a, b: jnp.intersect1d(a, b, size=3, return_indices=True))(x, y)',
    'jnp.setdiff1d(x, y)',
    'jnp.setdiff1d(x, y, size=5)',
    'jnp.setdiff1d(x, y, size=2)',
    'jnp.setdiff1d(x, y, size=5, fill_value=-1)',
    'jnp.setdiff1d(jnp.array([1,2,3]), jnp.array([2]), assume_unique=True)',
    'jnp.setdiff1d(jnp.array([1,2,3]), jnp.array([2]), assume_unique=True, size=3)',
    'jnp.setdiff1d(jnp.zeros(0), y)',
    'jnp.setdiff1d(jnp.zeros(0), y, size=2, fill_value=3)',
    'jnp.setdiff1d(f, y)',
    'jit(lambda a, b: jnp.setdiff1d(a, b, size=4))(x, y)',
    'jit(lambda a, b: jnp.setdiff1d(a, b))(x, y)',
    'jnp.setxor1d(x, y)',
    'jnp.setxor1d(x, y, size=6)',
    'jnp.setxor1d(x, y, size=2)',
    'jnp.setxor1d(x, y, size=6, fill_value=0)',
    'jnp.setxor1d(jnp.array([1,2,3]), jnp.array([3,4]), assume_unique=True)',
    'jnp.setxor1d(jnp.array([1,2,3]), jnp.array([3,4]), assume_unique=True, size=5)',
    'jnp.setxor1d(jnp.zeros(0), jnp.zeros(0))',
    'jnp.setxor1d(f, y)',
    'jit(lambda a, b: jnp.setxor1d(a, b, size=5))(x, y)',
    'jnp.isin(x, y)',
    'jnp.isin(x, y, invert=True)',
    'jnp.isin(m, y)',
    "jnp.isin(m, y, method='sort')",
    "jnp.isin(m, y, method='sort', invert=True)",
    "jnp.isin(m, y, method='binary_search')",
    "jnp.isin(m, y, method='binary_search', invert=True)",
    "jnp.isin(m, y, method='foo')",
    'jnp.isin(f, f)',
    'jnp.isin(x, jnp.zeros(0))',
    'jnp.isin(3, y)',
    'jit(lambda a, b: jnp.isin(a, b))(m, y)',
]


@pytest.mark.parametrize("expr", CASES)
def test_against_jax(expr, jax):
  check_both(expr, ENV, jax)
