"""Statistics of jax.numpy: quantile/percentile (all methods, weights, nan-variants),
histogram/histogram2d/histogramdd/histogram_bin_edges, bincount, digitize, cov, corrcoef:
values against NumPy, against real JAX (values, dtypes, weak types, errors, jit),
hypothesis over shapes/axes/NaNs, and derivatives."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import pyjax
import pyjax.numpy as pjnp
from jax_compare import check_both

SETTINGS = settings(max_examples=20, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])

rng = np.random.default_rng(0)
a2 = rng.standard_normal((3, 5, 4)).astype(np.float32)
w2 = rng.uniform(0, 1, (3, 5, 4)).astype(np.float32)
i2 = rng.integers(0, 10, (3, 5)).astype(np.int32)
fn = a2[0].copy()
fn[1, 2] = np.nan
fn[:, 0] = np.nan
fn[3, 1:] = np.nan
f1 = rng.standard_normal(20).astype(np.float32)
w1 = rng.uniform(0, 1, 20).astype(np.float32)
f = np.array([2., np.nan, 1., np.nan, 2., -0.5], np.float32)
ENV = dict(a2=a2, w2=w2, i2=i2, fn=fn, f1=f1, w1=w1, f=f)
METHODS = ["linear", "lower", "higher", "midpoint", "nearest", "inverted_cdf"]


# --- NumPy known answers -------------------------------------------------------------------------
@pytest.mark.parametrize("method", METHODS)
def test_quantile_against_numpy(method):
  q = np.array([0., 0.1, 0.37, 0.5, 0.9, 1.], np.float32)
  for axis in (None, 0, 1, -1, (0, 2)):
    for keepdims in (False, True):
      got = pjnp.quantile(a2, q, axis=axis, method=method, keepdims=keepdims)
      want = np.quantile(a2, q, axis=axis, method=method, keepdims=keepdims)
      if method == "nearest":  # JAX breaks ties downwards, NumPy to even
        assert got.shape == want.shape
        continue
      np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
  got = pjnp.nanquantile(fn, q, axis=0, method=method)
  want = np.nanquantile(fn, q, axis=0, method=method)
  if method != "nearest":
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(pjnp.percentile(a2, 30, method=method if method != "nearest" else "linear"),
                             np.percentile(a2, 30, method=method if method != "nearest" else "linear"),
                             rtol=1e-5)


def test_weighted_inverted_cdf_against_numpy():
  q = np.array([0.2, 0.5, 0.8])
  for axis in (0, 1, 2):
    got = pjnp.quantile(a2, q, axis=axis, method="inverted_cdf", weights=w2)
    want = np.quantile(a2, q, axis=axis, method="inverted_cdf", weights=w2)
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_histograms_against_numpy():
  for bins in (1, 5, np.array([-2., -0.5, 0., 1., 3.])):
    for rng_ in (None, (-1, 1)):
      for density in (False, True):
        h, e = pjnp.histogram(f1, bins=bins, range=rng_, density=density, weights=w1)
        nh, ne = np.histogram(f1, bins=bins, range=rng_, density=density, weights=w1)
        np.testing.assert_allclose(h, nh, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(e, ne, rtol=1e-5, atol=1e-6)
  h, ex, ey = pjnp.histogram2d(f1, w1, bins=(3, 4))
  nh, nex, ney = np.histogram2d(f1, w1, bins=(3, 4))
  np.testing.assert_allclose(h, nh)
  np.testing.assert_allclose(ex, nex, rtol=1e-6)
  sample = a2[:, :, 0].T
  h, edges = pjnp.histogramdd(sample, bins=(2, 3, 2), density=True)
  nh, nedges = np.histogramdd(sample, bins=(2, 3, 2), density=True)
  np.testing.assert_allclose(h, nh, rtol=1e-5)
  for a, b in zip(edges, nedges):
    np.testing.assert_allclose(a, b, rtol=1e-6)


def test_counting_and_cov_against_numpy():
  ints = np.array([0, 1, 1, 3, 2, 1, 7])
  np.testing.assert_array_equal(pjnp.bincount(ints), np.bincount(ints))
  np.testing.assert_allclose(pjnp.bincount(ints, weights=np.arange(7.), minlength=10),
                             np.bincount(ints, weights=np.arange(7.), minlength=10))
  bins = np.array([0.0, 1.0, 2.5, 4.0, 10.0])
  xs = np.array([0.2, 6.4, 3.0, 1.6, 1.0, -1., 10.])
  for right in (False, True):
    np.testing.assert_array_equal(pjnp.digitize(xs, bins, right), np.digitize(xs, bins, right))
    np.testing.assert_array_equal(pjnp.digitize(xs, bins[::-1], right),
                                  np.digitize(xs, bins[::-1], right))
  for kw in ({}, dict(rowvar=False), dict(bias=True), dict(ddof=2),
             dict(fweights=np.array([1, 2, 3, 1, 1])), dict(aweights=np.array([.1, .2, .3, 1, 1])),
             dict(fweights=np.array([1, 2, 3, 1, 1]), aweights=np.array([.1, .2, .3, 1, 1]))):
    if "rowvar" in kw:
      np.testing.assert_allclose(pjnp.cov(a2[0], **kw), np.cov(a2[0], **kw), rtol=1e-5, atol=1e-6)
    else:
      np.testing.assert_allclose(pjnp.cov(a2[0].T, **kw), np.cov(a2[0].T, **kw), rtol=1e-5,
                                 atol=1e-6)
  np.testing.assert_allclose(pjnp.corrcoef(a2[0]), np.corrcoef(a2[0]), rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(pjnp.corrcoef(f1, w1), np.corrcoef(f1, w1), rtol=1e-5, atol=1e-6)


@SETTINGS
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple), data=st.data(),
       nan=st.booleans(), method=st.sampled_from(["linear", "lower", "higher", "midpoint"]))
def test_property_quantile(shape, data, nan, method):
  a = np.random.RandomState(len(shape)).randn(*shape).astype(np.float32)
  if nan:
    a.flat[0] = np.nan
  axis = data.draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1)))
  q = data.draw(st.one_of(st.floats(0, 1), st.lists(st.floats(0, 1), min_size=1, max_size=3)))
  q = np.asarray(q, np.float32)
  np.testing.assert_allclose(pjnp.quantile(a, q, axis=axis, method=method),
                             np.quantile(a, q, axis=axis, method=method), rtol=1e-4, atol=1e-5)
  with np.errstate(all="ignore"):
    import warnings
    with warnings.catch_warnings():
      warnings.simplefilter("ignore")
      want = np.nanquantile(a, q, axis=axis, method=method)
  np.testing.assert_allclose(pjnp.nanquantile(a, q, axis=axis, method=method), want,
                             rtol=1e-4, atol=1e-5)


@SETTINGS
@given(n=st.integers(0, 30), bins=st.integers(1, 6), weighted=st.booleans())
def test_property_histogram_bincount(n, bins, weighted):
  r = np.random.RandomState(n)
  a = r.randn(n).astype(np.float32)
  w = r.rand(n).astype(np.float32) if weighted else None
  rng_ = (-1., 1.) if n == 0 else None
  h, e = pjnp.histogram(a, bins=bins, weights=w, range=rng_)
  nh, ne = np.histogram(a, bins=bins, weights=w, range=rng_)
  np.testing.assert_allclose(h, nh, rtol=1e-5, atol=1e-5)
  np.testing.assert_allclose(e, ne, rtol=1e-5, atol=1e-6)
  ints = r.randint(0, 6, n)
  np.testing.assert_allclose(pjnp.bincount(ints, weights=w, length=7),
                             np.bincount(ints, weights=w, minlength=7), rtol=1e-5)


def test_quantile_grad(jax):
  import jax.numpy as jjnp
  q = np.array([0.25, 0.5])
  gp = pyjax.grad(lambda a: pjnp.sum(pjnp.quantile(a, q, axis=1)))(a2)
  gj = jax.grad(lambda a: jjnp.sum(jjnp.quantile(a, q, axis=1)))(a2)
  np.testing.assert_allclose(gp, gj, rtol=1e-6)
  gp = pyjax.grad(lambda a: pjnp.sum(pjnp.cov(a)))(a2[0])
  gj = jax.grad(lambda a: jjnp.sum(jjnp.cov(a)))(a2[0])
  np.testing.assert_allclose(gp, gj, rtol=1e-5, atol=1e-6)


# --- against JAX ---------------------------------------------------------------------------------
CASES = [
    'jnp.quantile(f, 0.5)',
    'jnp.quantile(a2, 0.3)',
    'jnp.quantile(a2, jnp.array([0.1, 0.5, 0.9]), axis=1)',
    'jnp.quantile(a2, jnp.array([0.1, 0.5, 0.9]), axis=(0, 2), keepdims=True)',
    'jnp.quantile(a2, 0.25, axis=-1, keepdims=True)',
    "jnp.quantile(a2, 0.37, axis=0, method='lower')",
    "jnp.quantile(a2, 0.37, axis=0, method='higher')",
    "jnp.quantile(a2, 0.37, axis=0, method='nearest')",
    "jnp.quantile(a2, 0.5, axis=0, method='nearest')",
    "jnp.quantile(a2, 0.37, axis=0, method='midpoint')",
    "jnp.quantile(a2, 0.37, axis=0, method='inverted_cdf')",
    "jnp.quantile(a2, jnp.array([0.2, 0.8]), axis=1, method='inverted_cdf', weights=w2)",
    "jnp.quantile(a2, jnp.array([0.2, 0.8]), axis=1, method='inverted_cdf', weights=w2[0, :, 0] + 0 * w2[0, :, 0])",
    "jnp.quantile(a2, 0.5, axis=None, method='inverted_cdf', keepdims=True)",
    "jnp.quantile(a2, 0.5, method='foo')",
    "jnp.quantile(a2, 0.5, method='linear', weights=w2)",
    'jnp.quantile(a2, jnp.ones((2,2)))',
    'jnp.quantile(a2 * 1j, 0.5)',
    'jnp.quantile(a2, 0.5, axis=(0,0))',
    'jnp.quantile(a2, 0.5, out=a2)',
    'jnp.quantile(i2, 0.5)',
    'jnp.quantile(i2, 1)',
    'jnp.quantile(jnp.ones(3, jnp.float16), 0.5)',
    'jnp.quantile(a2, 0.5, axis=3)',
    'jnp.quantile(fn, 0.5)',
    'jnp.quantile(fn, 0.5, axis=1)',
    'jnp.nanquantile(fn, 0.5, axis=1)',
    'jnp.nanquantile(fn, jnp.array([0., 0.3, 1.]), axis=0)',
    "jnp.nanquantile(fn, 0.3, axis=0, method='nearest')",
    "jnp.nanquantile(fn, 0.3, axis=0, method='inverted_cdf')",
    'jnp.nanquantile(jnp.full((3,), jnp.nan), 0.5)',
    'jnp.percentile(a2, 30)',
    'jnp.percentile(a2, jnp.array([10, 90]), axis=2)',
    'jnp.percentile(i2, 50)',
    'jnp.nanpercentile(fn, 40, axis=1, keepdims=True)',
    "jnp.nanpercentile(fn, jnp.array([40, 60.]), axis=0, method='midpoint')",
    'jit(lambda a, q: jnp.quantile(a, q, axis=1))(a2, jnp.array([0.3, 0.6]))',
    'jnp.bincount(jnp.array([0, 1, 1, 3, 2, 1, 7]))',
    'jnp.bincount(jnp.array([0, 1, 1, 3, 2, 1, 7]), minlength=10)',
    'jnp.bincount(jnp.array([0, 1, 1, 3]), weights=jnp.array([0.5, 1., 2., 3.]))',
    'jnp.bincount(jnp.array([0, 1, 1, 3]), length=2)',
    'jnp.bincount(jnp.array([-1, 1, 1, 3]), length=5)',
    'jnp.bincount(jnp.array([True, False, True]))',
    'jnp.bincount(jnp.array([1., 2.]))',
    'jnp.bincount(jnp.array([[1, 2]]))',
    'jnp.bincount(jnp.zeros(0, int))',
    'jnp.bincount(jnp.array([0, 1]), weights=jnp.array([1.]))',
    'jit(lambda x: jnp.bincount(x, length=4))(jnp.array([0, 1, 1, 3]))',
    'jit(lambda x: jnp.bincount(x))(jnp.array([0, 1, 1, 3]))',
    'jnp.digitize(jnp.array([0.2, 6.4, 3.0, 1.6]), jnp.array([0.0, 1.0, 2.5, 4.0, 10.0]))',
    'jnp.digitize(jnp.array([0.2, 6.4, 3.0, 1.6, 1.0]), jnp.array([0.0, 1.0, 2.5, 4.0, 10.0]), right=True)',
    'jnp.digitize(jnp.array([0.2, 6.4, 3.0, 1.6]), jnp.array([10.0, 4.0, 2.5, 1.0, 0.0]))',
    'jnp.digitize(jnp.array([0.2, 6.4, 3.0, 1.0]), jnp.array([10.0, 4.0, 2.5, 1.0, 0.0]), right=True)',
    'jnp.digitize(jnp.array([1, 5]), jnp.array([]))',
    'jnp.digitize(jnp.array([1, 5]), jnp.ones((2,2)))',
    'jnp.digitize(a2, jnp.array([-1., 0., 1.]))',
    'jnp.histogram_bin_edges(f1)',
    'jnp.histogram_bin_edges(f1, bins=4, range=(0, 2))',
    'jnp.histogram_bin_edges(f1, bins=jnp.array([0, 1, 3]))',
    'jnp.histogram_bin_edges(jnp.ones(3))',
    'jnp.histogram_bin_edges(jnp.arange(5))',
    "jnp.histogram_bin_edges(f1, bins='auto')",
    'jnp.histogram(f1)',
    'jnp.histogram(f1, bins=5, range=(-1, 1))',
    'jnp.histogram(f1, bins=jnp.array([-2., 0., 0.5, 3.]))',
    'jnp.histogram(f1, bins=5, weights=w1)',
    'jnp.histogram(f1, bins=5, density=True)',
    'jnp.histogram(f1, bins=5, weights=w1, density=True)',
    'jnp.histogram(jnp.arange(10), bins=3)',
    'jnp.histogram(f1, weights=w1[:3])',
    'jit(lambda x: jnp.histogram(x, bins=4, range=(-2, 2)))(f1)',
    'jnp.histogram2d(f1, w1)',
    'jnp.histogram2d(f1, w1, bins=3)',
    'jnp.histogram2d(f1, w1, bins=(2, 4))',
    'jnp.histogram2d(f1, w1, bins=jnp.array([-2., 0, 2]))',
    'jnp.histogram2d(f1, w1, bins=3, range=[(-1, 1), (0, 1)], weights=w1, density=True)',
    'jnp.histogramdd(a2[:, :, 0].T)',
    'jnp.histogramdd(a2[:, :, 0].T, bins=(2, 3), density=True)',
    'jnp.histogramdd(a2[:, :, 0].T, bins=2, weights=w2[0, :, 0])',
    'jnp.histogramdd(a2[:, :, 0].T, range=[(0, 1)])',
    'jnp.cov(a2[0])',
    'jnp.cov(a2[0], rowvar=False)',
    'jnp.cov(a2[0], bias=True)',
    'jnp.cov(a2[0], ddof=2)',
    'jnp.cov(f1)',
    'jnp.cov(f1, w1)',
    'jnp.cov(a2[0], a2[1])',
    'jnp.cov(a2[0], fweights=jnp.array([1, 2, 3, 1, 1]))',
    'jnp.cov(a2[0], aweights=jnp.array([.1, .2, .3, 1, 1]))',
    'jnp.cov(a2[0], fweights=jnp.array([1, 2, 3, 1, 1]), aweights=jnp.array([.1, .2, .3, 1, 1]))',
    'jnp.cov(a2[0], fweights=jnp.array([1, 2, 3, 1, 1]), aweights=jnp.array([.1, .2, .3, 1, 1]), ddof=0)',
    'jnp.cov(a2[0], fweights=jnp.array([1., 2, 3, 1, 1]))',
    'jnp.cov(a2)',
    'jnp.cov(i2[0])',
    'jnp.cov(jnp.zeros((0, 3)))',
    'jnp.cov(jnp.zeros((2, 0)))',
    'jnp.cov(jnp.zeros((1, 0)))',
    'jnp.cov(a2[0] * (1 + 2j))',
    'jnp.cov(a2[0], dtype=jnp.int32)',
    'jnp.corrcoef(a2[0])',
    'jnp.corrcoef(f1, w1)',
    'jnp.corrcoef(a2[0], rowvar=False)',
    'jnp.corrcoef(f1)',
    'jnp.corrcoef(a2[0] * (1 + 2j))',
]


@pytest.mark.parametrize("expr", CASES)
def test_against_jax(expr, jax):
  if expr == "jnp.quantile(i2, 1)":
    pytest.skip("JAX fails (floor of an int32 q); pyjax returns the maximum")
  if expr == "jnp.digitize(jnp.array([1, 5]), jnp.ones((2,2)))":
    with pytest.raises(ValueError, match="digitize: bins must be a 1-dimensional array"):
      eval(expr, dict(jnp=pjnp))
    return
  check_both(expr, ENV, jax, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("keepdims", [False, True])
def test_mean_jaxpr_divides_by_a_literal_count_as_jax(keepdims):
  """The count is a literal of the computation dtype (`div x 4.0:f32[]`), not a staged
  conversion of an int32 literal: make_jaxpr's text equals JAX's."""
  jax = pytest.importorskip("jax")
  x = np.ones((3, 4), np.float32)
  ours = str(pyjax.make_jaxpr(lambda v: pjnp.mean(v, axis=-1, keepdims=keepdims))(x))
  theirs = str(jax.make_jaxpr(lambda v: jax.numpy.mean(v, axis=-1, keepdims=keepdims))(x))
  assert ours == theirs
  assert "div" in ours and "4.0:f32[]" in ours
