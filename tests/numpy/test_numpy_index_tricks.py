"""Index helpers (ix_, indices, tril/triu/diag/mask index functions, ravel_multi_index,
unravel_index, fill_diagonal) and index objects (r_, c_, s_, index_exp, mgrid, ogrid):
values against NumPy, against real JAX (values, dtypes, errors), hypothesis."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import pyjax
import pyjax.numpy as pjnp
from jax_compare import check_both

SETTINGS = settings(max_examples=25, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
a2 = np.random.default_rng(0).standard_normal((3, 5, 4)).astype(np.float32)
ENV = dict(a2=a2)


def test_against_numpy():
  for n, k, m in [(3, 0, None), (4, 1, 5), (4, -2, 3), (0, 0, None)]:
    for f in ("tril_indices", "triu_indices"):
      for g, w in zip(getattr(pjnp, f)(n, k, m), getattr(np, f)(n, k, m)):
        np.testing.assert_array_equal(g, w)
  for g, w in zip(pjnp.diag_indices(4, 3), np.diag_indices(4, 3)):
    np.testing.assert_array_equal(g, w)
  for g, w in zip(pjnp.mask_indices(4, pjnp.triu, 1), np.mask_indices(4, np.triu, 1)):
    np.testing.assert_array_equal(g, w)
  np.testing.assert_array_equal(pjnp.indices((2, 3, 4)), np.indices((2, 3, 4)))
  for g, w in zip(pjnp.indices((2, 3), sparse=True), np.indices((2, 3), sparse=True)):
    np.testing.assert_array_equal(g, w)
  for g, w in zip(pjnp.ix_(np.array([0, 2]), np.array([1, 3, 4])),
                  np.ix_(np.array([0, 2]), np.array([1, 3, 4]))):
    np.testing.assert_array_equal(g, w)
  np.testing.assert_array_equal(pjnp.mgrid[0:3, 1:4:2], np.mgrid[0:3, 1:4:2])
  np.testing.assert_allclose(pjnp.mgrid[0:1:5j], np.mgrid[0:1:5j], rtol=1e-6)
  for g, w in zip(pjnp.ogrid[0:3, 0:2], np.ogrid[0:3, 0:2]):
    np.testing.assert_array_equal(g, w)
  np.testing.assert_array_equal(pjnp.r_[np.array([1, 2]), 0, 4:6], np.r_[np.array([1, 2]), 0, 4:6])
  np.testing.assert_array_equal(pjnp.r_["0,2,0", [1, 2], [3, 4]], np.r_["0,2,0", [1, 2], [3, 4]])
  np.testing.assert_array_equal(pjnp.c_[np.array([1, 2]), np.array([3, 4])],
                                np.c_[np.array([1, 2]), np.array([3, 4])])
  z = np.zeros((4, 5))
  np.fill_diagonal(z, [1, 2])
  np.testing.assert_array_equal(pjnp.fill_diagonal(np.zeros((4, 5)), np.array([1., 2]),
                                                   inplace=False), z)


@SETTINGS
@given(shape=st.lists(st.integers(1, 5), min_size=1, max_size=4).map(tuple), data=st.data(),
       order=st.sampled_from(["C", "F"]))
def test_property_ravel_unravel(shape, data, order):
  size = int(np.prod(shape))
  flat = np.asarray(data.draw(st.lists(st.integers(0, size - 1), min_size=1, max_size=6)))
  coords = np.unravel_index(flat, shape)
  got = pjnp.unravel_index(flat, shape)
  for g, w in zip(got, coords):
    np.testing.assert_array_equal(g, w)
  np.testing.assert_array_equal(pjnp.ravel_multi_index(coords, shape, order=order),
                                np.ravel_multi_index(coords, shape, order=order))
  wrapped = tuple(c + d for c, d in zip(coords, shape))
  np.testing.assert_array_equal(pjnp.ravel_multi_index(wrapped, shape, mode="wrap"),
                                np.ravel_multi_index(wrapped, shape, mode="wrap"))
  np.testing.assert_array_equal(pjnp.ravel_multi_index(wrapped, shape, mode="clip"),
                                np.ravel_multi_index(wrapped, shape, mode="clip"))


def test_under_jit():
  f = pyjax.jit(lambda i: pjnp.unravel_index(i, (3, 4)))
  r, c = f(np.array([0, 5, 11]))
  np.testing.assert_array_equal(r, [0, 1, 2])
  np.testing.assert_array_equal(c, [0, 1, 3])
  g = pyjax.jit(lambda r, c: pjnp.ravel_multi_index((r, c), (3, 4), mode="clip"))
  np.testing.assert_array_equal(g(np.array([0, 1, 5]), np.array([1, 2, 0])), [1, 6, 8])
  with pytest.raises(pyjax.errors.ConcretizationTypeError):
    pyjax.jit(lambda r: pjnp.ravel_multi_index((r,), (3,)))(np.array([1]))
  i, j = pyjax.jit(lambda: pjnp.mask_indices(3, pjnp.tril, size=8))()
  np.testing.assert_array_equal(i, [0, 1, 1, 2, 2, 2, 0, 0])


CASES = [
    'jnp.ix_(jnp.array([0, 1]), jnp.array([2, 3, 4]))',
    'jnp.ix_(jnp.array([0, 1]), jnp.zeros(0, int))',
    'jnp.ix_(jnp.array([[0, 1]]))',
    'jnp.ix_(jnp.array([True, False]))',
    'jnp.indices((2, 3))',
    'jnp.indices((2, 3), sparse=True)',
    'jnp.indices((2, 3), dtype=jnp.int16)',
    'jnp.indices(())',
    'jnp.tril_indices(4)',
    'jnp.tril_indices(4, k=1, m=5)',
    'jnp.triu_indices(4, -1)',
    'jnp.tril_indices_from(a2[0])',
    'jnp.triu_indices_from(a2[0], k=2)',
    'jnp.tril_indices_from(a2)',
    'jnp.diag_indices(3)',
    'jnp.diag_indices(3, ndim=3)',
    'jnp.diag_indices(-1)',
    'jnp.diag_indices_from(jnp.ones((3, 3)))',
    'jnp.diag_indices_from(jnp.ones((3, 4)))',
    'jnp.mask_indices(3, jnp.triu)',
    'jnp.mask_indices(3, jnp.triu, 1)',
    'jnp.mask_indices(3, jnp.tril, size=8)',
    'jnp.ravel_multi_index((jnp.array([0, 1, 2]), jnp.array([1, 2, 0])), (3, 4))',
    "jnp.ravel_multi_index((jnp.array([0, 1, 2]), jnp.array([1, 2, 5])), (3, 4), mode='clip')",
    "jnp.ravel_multi_index((jnp.array([0, 1, 2]), jnp.array([1, 2, 5])), (3, 4), mode='wrap', order='F')",
    'jnp.ravel_multi_index((jnp.array([0, 1, 2]), jnp.array([1, 2, 5])), (3, 4))',
    "jnp.ravel_multi_index((jnp.array([0., 1]), jnp.array([1, 2])), (3, 4), mode='clip')",
    'jnp.unravel_index(jnp.array([0, 5, 11, 12, -1, -20]), (3, 4))',
    'jnp.unravel_index(7, (3, 4))',
    'jnp.unravel_index(jnp.array([3, 4]), 5)',
    'jnp.fill_diagonal(jnp.zeros((3, 4)), 5, inplace=False)',
    'jnp.fill_diagonal(jnp.zeros((4, 3)), jnp.array([1., 2]), inplace=False)',
    'jnp.fill_diagonal(jnp.zeros((3, 3, 3)), 1, inplace=False)',
    'jnp.fill_diagonal(jnp.zeros((3, 3)), 1)',
    'jnp.r_[jnp.array([1, 2]), 0, jnp.array([3.])]',
    'jnp.r_[1:4, 0, 7]',
    'jnp.r_[-1:1:5j]',
    "jnp.r_['0,2', [1, 2], [3, 4]]",
    "jnp.r_['r', [1, 2], [3, 4]]",
    "jnp.r_['c', [1, 2], [3, 4]]",
    "jnp.r_['1,2,0', [1, 2], [3, 4]]",
    'jnp.c_[jnp.array([1, 2]), jnp.array([3, 4])]',
    'jnp.c_[jnp.ones((2, 2)), [5, 6]]',
    'jnp.mgrid[0:3, 0:2]',
    'jnp.mgrid[0:1:3j, 0:2]',
    'jnp.mgrid[0:4]',
    'jnp.ogrid[0:3, 0:2.]',
    'jnp.s_[1:2, ::3]',
    'jnp.index_exp[1:2]',
]


SKIP = {"jnp.ravel_multi_index((jnp.array([0., 1]), jnp.array([1, 2])), (3, 4), mode='clip')":
        "float indices: pyjax raises TypeError('only int indices permitted') like NumPy"}


@pytest.mark.parametrize("expr", CASES)
def test_against_jax(expr, jax):
  if expr in SKIP:
    pytest.skip(SKIP[expr])
  check_both(expr, ENV, jax)
