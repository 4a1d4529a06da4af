"""Polynomials (poly, polyval, polyfit, polyder, polyint, polyadd/sub/mul/div, roots,
vander) and window functions (bartlett, blackman, hamming, hanning, kaiser): values
against NumPy, against real JAX (values, dtypes, weak types, errors), hypothesis, grads."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import pyjax
import pyjax.numpy as pjnp
from jax_compare import check_both

SETTINGS = settings(max_examples=25, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
ENV = {}
coef_st = st.lists(st.integers(-4, 4), min_size=1, max_size=5)


@SETTINGS
@given(p=coef_st, q=coef_st, xs=st.lists(st.floats(-2, 2), min_size=1, max_size=4))
def test_property_polynomial_arithmetic(p, q, xs):
  p, q = np.asarray(p, np.float64), np.asarray(q, np.float64)
  xs = np.asarray(xs, np.float64)
  f32 = dict(rtol=1e-4, atol=1e-4)
  np.testing.assert_allclose(pjnp.polyval(p, xs), np.polyval(p, xs), **f32)
  np.testing.assert_allclose(pjnp.polyadd(p, q), np.polyadd(p, q).astype(np.float32)
                             if len(np.polyadd(p, q)) == max(len(p), len(q)) else
                             np.pad(np.polyadd(p, q), (max(len(p), len(q)) - len(np.polyadd(p, q)), 0)),
                             **f32)
  np.testing.assert_allclose(pjnp.polymul(p, q), np.convolve(p, q), **f32)
  np.testing.assert_allclose(pjnp.polyder(p), np.polyder(p) if len(p) > 1 else np.zeros(0), **f32)
  np.testing.assert_allclose(pjnp.polyint(p, k=2.), np.polyint(p, k=2.), **f32)
  if q[0] != 0:
    qq, rr = pjnp.polydiv(p, q)
    nq, nr = np.polydiv(p, q)
    pts = np.array([-1.5, 0.3, 2.])
    np.testing.assert_allclose(np.polyval(qq, pts) * np.polyval(q, pts) + np.polyval(rr, pts),
                               np.polyval(p, pts), rtol=1e-3, atol=1e-3)
    if len(p) >= len(q):
      np.testing.assert_allclose(qq, nq, rtol=1e-3, atol=1e-3)


@SETTINGS
@given(roots=st.lists(st.integers(-3, 3), min_size=1, max_size=4))
def test_property_roots_poly(roots):
  c = pjnp.poly(np.asarray(roots, np.float32))
  np.testing.assert_allclose(c, np.poly(roots), rtol=1e-4, atol=1e-4)
  r = np.sort_complex(np.asarray(pjnp.roots(c)))
  np.testing.assert_allclose(r, np.sort_complex(np.roots(np.poly(roots)).astype(np.complex64)),
                             rtol=1e-2, atol=2e-2)


def test_polyfit_against_numpy():
  x = np.linspace(-1, 1, 9)
  y = 3 * x ** 3 - x + 0.5 + 0.01 * np.sin(7 * x)
  for deg in (1, 2, 3):
    np.testing.assert_allclose(pjnp.polyfit(x, y, deg), np.polyfit(x, y, deg), rtol=1e-3,
                               atol=1e-3)
  c, cov = pjnp.polyfit(x, y, 2, cov=True)
  nc, ncov = np.polyfit(x, y, 2, cov=True)
  np.testing.assert_allclose(cov, ncov, rtol=1e-2, atol=1e-5)
  np.testing.assert_allclose(pjnp.polyfit(x, np.stack([y, -y], 1), 2),
                             np.polyfit(x, np.stack([y, -y], 1), 2), rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("name", ["bartlett", "blackman", "hamming", "hanning"])
def test_windows_against_numpy(name):
  for M in (0, 1, 2, 5, 8):
    np.testing.assert_allclose(getattr(pjnp, name)(M), getattr(np, name)(M), rtol=1e-5,
                               atol=1e-6)
  for M in (0, 1, 6, 9):
    for beta in (0., 4., 8.6):
      np.testing.assert_allclose(pjnp.kaiser(M, beta), np.kaiser(M, beta), rtol=1e-5, atol=1e-6)


def test_grads(jax):
  import jax.numpy as jjnp
  p = np.array([1., -2., 0.5, 3.])
  x = np.array([0.3, -1.2, 2.])
  for f in ("polyval(p, x)", "polyval(polyder(p), x)", "polyval(polyint(p), x)",
            "polyval(polymul(p, p), x)"):
    gp = pyjax.grad(lambda p: pjnp.sum(eval(f, vars(pjnp), dict(p=p, x=x))))(p)
    gj = jax.grad(lambda p: jjnp.sum(eval(f, vars(jjnp), dict(p=p, x=x))))(p)
    np.testing.assert_allclose(gp, gj, rtol=1e-5, err_msg=f)


CASES = [
    'jnp.vander(jnp.array([1., 2, 3]))',
    'jnp.vander(jnp.array([1, 2, 3]), N=4, increasing=True)',
    'jnp.vander(jnp.ones((2,2)))',
    'jnp.poly(jnp.array([1., 2, 3]))',
    'jnp.poly(jnp.array([1, 2]))',
    'jnp.poly(jnp.array([[1., 2], [3, 4]]))',
    'jnp.poly(jnp.zeros(0))',
    'jnp.polyval(jnp.array([1., 2, 3]), jnp.array([0.5, 2.]))',
    'jnp.polyval(jnp.array([1, 2, 3]), 2)',
    'jnp.polyval(jnp.array([[1., 2], [3, 4], [5, 6]]), jnp.array([0.5, 2.]))',
    'jnp.polyadd(jnp.array([1, 2]), jnp.array([1., 2, 3]))',
    'jnp.polysub(jnp.array([1, 2, 5]), jnp.array([1, 2]))',
    'jnp.polymul(jnp.array([1, 2]), jnp.array([1., 2, 3]))',
    'jnp.polymul(jnp.array([0, 1, 2]), jnp.array([1., 2, 3]), trim_leading_zeros=True)',
    'jnp.polydiv(jnp.array([1., 2, 3, 4]), jnp.array([1., 1]))',
    'jnp.polydiv(jnp.array([1., 2, 3, 4]), jnp.array([2., 1, 1]), trim_leading_zeros=True)',
    'jnp.polyder(jnp.array([1., 2, 3, 4]))',
    'jnp.polyder(jnp.array([1, 2, 3, 4]), m=2)',
    'jnp.polyder(jnp.array([1, 2, 3, 4]), m=0)',
    'jnp.polyder(jnp.array([1, 2, 3, 4]), m=-1)',
    'jnp.polyint(jnp.array([1., 2, 3]))',
    'jnp.polyint(jnp.array([1, 2, 3]), m=2, k=jnp.array([1., 2]))',
    'jnp.polyint(jnp.array([1, 2, 3]), m=2, k=3)',
    'jnp.polyint(jnp.array([1, 2, 3]), m=2, k=jnp.array([1., 2, 3]))',
    'jnp.roots(jnp.array([1., -3, 2]))',
    'jnp.roots(jnp.array([0., 0, 1., -3, 2]))',
    'jnp.roots(jnp.array([0., 0, 1., -3, 2]), strip_zeros=False)',
    'jnp.roots(jnp.array([1., 0, 1]))',
    'jnp.roots(jnp.array([2.]))',
    'jnp.polyfit(jnp.arange(6.), jnp.arange(6.)**2 + 1, 2)',
    'jnp.polyfit(jnp.arange(6.), jnp.stack([jnp.arange(6.), jnp.arange(6.)**2]).T, 2)',
    'jnp.polyfit(jnp.arange(6.), jnp.arange(6.)**2 + 1, 2, w=jnp.arange(1., 7))',
    'jnp.polyfit(jnp.arange(6.), jnp.arange(6.)**2 + 1, 2, full=True)',
    'jnp.polyfit(jnp.arange(6.), jnp.arange(6.)**3 + 1, 1, cov=True)',
    "jnp.polyfit(jnp.arange(6.), jnp.arange(6.)**3 + 1, 1, cov='unscaled')",
    'jnp.bartlett(7)',
    'jnp.bartlett(1)',
    'jnp.blackman(8)',
    'jnp.hamming(5)',
    'jnp.hanning(6)',
    'jnp.hanning(0)',
    'jnp.kaiser(9, 4.0)',
    'jnp.kaiser(1, 4.0)',
]


@pytest.mark.parametrize("expr", CASES)
def test_against_jax(expr, jax):
  tol = dict(rtol=2e-4, atol=1e-5) if "polyfit" in expr else dict(rtol=1e-5, atol=1e-6)
  check_both(expr, ENV, jax, **tol)
