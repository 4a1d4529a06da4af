"""pyjax.scipy.stats against real JAX (values, dtypes, weak types, errors, gradients) and
against scipy.stats in float64."""
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import pyjax
import pyjax.scipy.stats as pst
from jax_compare import check, rand

sst = pytest.importorskip("scipy.stats")

SETTINGS = settings(max_examples=8, deadline=None, derandomize=True,
                    suppress_health_check=list(HealthCheck))

N = (6,)


def _x(seed=0, lo=-3., hi=3., dtype=np.float32):
  return rand(N, dtype, seed, lo, hi)


def _p(seed=0, dtype=np.float32):
  return rand(N, dtype, seed, 0.05, 0.95)


def _pos(seed=0, lo=0.3, hi=4., dtype=np.float32):
  return rand(N, dtype, seed, lo, hi)


def _k(seed=0, hi=6, dtype=np.float32):
  return np.floor(rand(N, np.float64, seed, 0, hi + 0.999)).astype(dtype)


CONT = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]
# (module, function) -> (args builder(dtype), scipy callable or None)
CASES = {}


def _add(mod, funcs, build, ref=None):
  for f in funcs:
    CASES[(mod, f)] = (build, ref(f) if ref else None)


def _sref(dist, fname_map=None):
  def ref(f):
    name = (fname_map or {}).get(f, f)
    return getattr(getattr(sst, dist), name)
  return ref


_add("norm", CONT + ["ppf", "isf"], lambda d: (_x(1, dtype=d), _x(2, dtype=d), _pos(3, dtype=d)),
     _sref("norm"))
_add("uniform", ["logpdf", "pdf", "cdf", "ppf"],
     lambda d: (_x(4, dtype=d), _x(5, dtype=d), _pos(6, dtype=d)), _sref("uniform"))
_add("beta", CONT, lambda d: (_p(7, dtype=d), _pos(8, dtype=d), _pos(9, dtype=d)),
     _sref("beta"))
_add("gamma", CONT, lambda d: (_pos(10, dtype=d), _pos(11, dtype=d)), _sref("gamma"))
_add("t", ["logpdf", "pdf"], lambda d: (_x(12, dtype=d), _pos(13, dtype=d)), _sref("t"))
_add("cauchy", CONT, lambda d: (_x(14, dtype=d), _x(15, dtype=d)), _sref("cauchy"))
_add("cauchy", ["ppf", "isf"], lambda d: (_p(14, dtype=d), _x(15, dtype=d), _pos(56, dtype=d)),
     _sref("cauchy"))
_add("laplace", ["logpdf", "pdf", "cdf"], lambda d: (_x(16, dtype=d), _x(17, dtype=d)),
     _sref("laplace"))
_add("logistic", ["logpdf", "pdf", "cdf", "sf"], lambda d: (_x(18, dtype=d),),
     _sref("logistic"))
_add("logistic", ["ppf", "isf"], lambda d: (_p(19, dtype=d),), _sref("logistic"))
_add("chi2", CONT, lambda d: (_pos(20, dtype=d), _pos(21, dtype=d)), _sref("chi2"))
_add("expon", CONT + ["ppf"], lambda d: (_pos(22, 0., 3., dtype=d),), _sref("expon"))
_add("pareto", CONT + ["ppf"], lambda d: (_pos(23, 1.1, 5., dtype=d), _pos(24, dtype=d)),
     _sref("pareto"))
_add("gumbel_l", CONT + ["ppf"], lambda d: (_p(25, dtype=d),), _sref("gumbel_l"))
_add("gumbel_r", CONT + ["ppf"], lambda d: (_p(26, dtype=d),), _sref("gumbel_r"))
_add("gennorm", ["logpdf", "pdf", "cdf"], lambda d: (_x(27, dtype=d), _pos(28, dtype=d)),
     _sref("gennorm"))
_add("truncnorm", CONT, lambda d: (_x(29, -1., 1., dtype=d), -_pos(30, 0.5, 2, dtype=d),
                                   _pos(31, 0.5, 2, dtype=d)), _sref("truncnorm"))
_add("vonmises", ["logpdf", "pdf"], lambda d: (_x(32, dtype=d), _pos(33, dtype=d)),
     _sref("vonmises"))
_add("wrapcauchy", ["logpdf", "pdf"], lambda d: (_pos(34, 0., 6., dtype=d), _p(35, dtype=d)),
     _sref("wrapcauchy"))
_add("poisson", ["logpmf", "pmf", "cdf"], lambda d: (_k(36, dtype=d), _pos(37, dtype=d)),
     _sref("poisson"))
_add("bernoulli", ["logpmf", "pmf"], lambda d: (_k(38, 1, dtype=d), _p(39, dtype=d)),
     _sref("bernoulli"))
_add("bernoulli", ["cdf"], lambda d: (_x(40, -1, 2, dtype=d), _p(41, dtype=d)),
     _sref("bernoulli"))
_add("bernoulli", ["ppf"], lambda d: (_p(42, dtype=d), _p(43, dtype=d)), _sref("bernoulli"))
_add("binom", ["logpmf", "pmf"], lambda d: (_k(44, dtype=d), _k(45, dtype=d) + 6, _p(46, dtype=d)),
     _sref("binom"))
_add("nbinom", ["logpmf", "pmf"], lambda d: (_k(47, dtype=d), _pos(48, dtype=d), _p(49, dtype=d)),
     _sref("nbinom"))
_add("geom", ["logpmf", "pmf"], lambda d: (_k(50, dtype=d) + 1, _p(51, dtype=d)), _sref("geom"))
_add("betabinom", ["logpmf", "pmf"],
     lambda d: (_k(52, dtype=d), _k(53, dtype=d) + 6, _pos(54, dtype=d), _pos(55, dtype=d)),
     _sref("betabinom"))

FAST = {("norm", "logpdf"), ("norm", "ppf"), ("beta", "cdf"), ("gamma", "logpdf"),
        ("t", "logpdf"), ("truncnorm", "logcdf"), ("poisson", "cdf"), ("binom", "logpmf"),
        ("gumbel_r", "logsf"), ("pareto", "logcdf"), ("betabinom", "logpmf")}


def _params(keys, fast):
  return [k if k in fast else pytest.param(k, marks=pytest.mark.slow) for k in keys]


@pytest.mark.parametrize("key", _params(sorted(CASES), FAST), ids=lambda k: ".".join(k))
def test_matches_jax(key):
  mod, f = key
  args = CASES[key][0](np.float32)
  tol = 2e-4 if mod in ("beta", "betabinom", "truncnorm", "gumbel_l", "chi2", "gamma") else 3e-5
  check(lambda m: getattr(getattr(m.stats, mod), f)(*args), tol=tol)


@pytest.mark.parametrize("key", sorted(CASES), ids=lambda k: ".".join(k))
def test_matches_scipy_float64(key, x64):
  mod, f = key
  args = CASES[key][0](np.float64)
  ref = CASES[key][1]
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    got = np.asarray(getattr(getattr(pst, mod), f)(*args))
    want = ref(*args)
  rtol = 1e-6 if mod in ("betabinom", "beta", "truncnorm", "gennorm") else 1e-9
  np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-12)


def test_scipy_float32_without_jax():
  x = _x(1)
  np.testing.assert_allclose(pst.norm.logpdf(x, 0.5, 2.0), sst.norm.logpdf(x, 0.5, 2.0),
                             rtol=2e-6)
  np.testing.assert_allclose(pst.gamma.cdf(_pos(2), 2.5), sst.gamma.cdf(_pos(2), 2.5),
                             rtol=2e-5)
  np.testing.assert_allclose(pst.poisson.pmf(_k(3), 2.5), sst.poisson.pmf(_k(3), 2.5),
                             rtol=2e-5)


# --- broadcasting, dtypes, NaN --------------------------------------------------------------
@SETTINGS
@given(shapes=st.sampled_from([((3,), (), ()), ((2, 1), (1, 3), (3,)), ((0,), (1,), ()),
                               ((1, 0), (2, 1), (1,)), ((), (4,), (2, 1))]),
       name=st.sampled_from(["norm.logpdf", "norm.cdf", "cauchy.pdf", "laplace.cdf",
                             "logistic.logpdf", "expon.logsf", "uniform.cdf",
                             "gumbel_l.logpdf"]))
def test_loc_scale_broadcasting(shapes, name):
  mod, f = name.split(".")
  x = rand(shapes[0], np.float32, 1, -2, 2)
  loc = rand(shapes[1], np.float32, 2, -1, 1)
  scale = rand(shapes[2], np.float32, 3, 0.5, 2)
  check(lambda m: getattr(getattr(m.stats, mod), f)(x, loc, scale), tol=3e-5)


@SETTINGS
@given(dtype=st.sampled_from([np.int32, np.bool_, np.float16, np.float32]),
       name=st.sampled_from(["norm.logpdf", "expon.pdf", "poisson.logpmf", "t.logpdf",
                             "geom.pmf", "cauchy.cdf"]))
def test_input_dtypes(dtype, name):
  mod, f = name.split(".")
  x = rand((4,), dtype, 4, 0, 3)
  p2 = {"poisson": 2.0, "t": 3.0, "geom": 0.3}.get(mod)
  args = (x,) if p2 is None else (x, p2)
  check(lambda m: getattr(getattr(m.stats, mod), f)(*args), tol=3e-3)


NANS = np.array([np.nan, np.inf, -np.inf, 0.0, 1.0, -1.0], np.float32)


@pytest.mark.parametrize("name", ["norm.logcdf", "beta.logpdf", "gamma.sf", "truncnorm.logpdf",
                                  "poisson.logpmf", "bernoulli.cdf", "pareto.ppf"])
def test_nan_inf(name):
  mod, f = name.split(".")
  extra = {"beta": (2.0, 3.0), "gamma": (2.0,), "truncnorm": (-1.0, 1.0), "poisson": (2.0,),
           "bernoulli": (0.3,), "pareto": (2.0,)}.get(mod, ())
  check(lambda m: getattr(getattr(m.stats, mod), f)(NANS, *extra), tol=3e-5)


def test_invalid_parameters_give_nan():
  check(lambda m: m.stats.beta.logpdf(0.5, -1.0, 2.0))
  check(lambda m: m.stats.gumbel_r.logpdf(0.5, 0.0, -1.0))
  check(lambda m: m.stats.vonmises.logpdf(0.5, -1.0))
  check(lambda m: m.stats.wrapcauchy.logpdf(0.5, 1.5))
  check(lambda m: m.stats.betabinom.logpmf(2.0, -1.0, 1.0, 1.0))


# --- multivariate -------------------------------------------------------------------------
def test_multivariate_normal():
  rng = np.random.RandomState(0)
  A = rng.randn(3, 3).astype(np.float32)
  cov = (A @ A.T + np.eye(3)).astype(np.float32)
  mean = rng.randn(3).astype(np.float32)
  x = rng.randn(5, 3).astype(np.float32)
  check(lambda m: m.stats.multivariate_normal.logpdf(x, mean, cov), tol=1e-4)
  check(lambda m: m.stats.multivariate_normal.pdf(x[0], mean, cov), tol=1e-4)
  check(lambda m: m.stats.multivariate_normal.logpdf(x, mean, np.float32(2.0)), tol=1e-5)
  check(lambda m: m.stats.multivariate_normal.logpdf(x[:, 0], np.float32(0.5),
                                                     np.float32(2.0)), tol=1e-5)
  covs = np.stack([cov, 2 * cov]).astype(np.float32)
  check(lambda m: m.stats.multivariate_normal.logpdf(x[:2], mean, covs), tol=1e-4)
  np.testing.assert_allclose(pst.multivariate_normal.logpdf(x, mean, cov),
                             sst.multivariate_normal.logpdf(x, mean, cov), rtol=1e-5)
  check(lambda m: m.stats.multivariate_normal.logpdf(x, mean, cov, allow_singular=True))
  check(lambda m: m.stats.multivariate_normal.logpdf(x, mean, np.ones((2, 2), np.float32)),
        message=False)


def test_dirichlet_and_multinomial():
  alpha = np.float32([1.5, 2.0, 3.0])
  x = np.float32([[0.2, 0.3], [0.3, 0.3], [0.5, 0.4]])
  check(lambda m: m.stats.dirichlet.logpdf(x, alpha), tol=1e-5)
  check(lambda m: m.stats.dirichlet.pdf(x[:2], alpha), tol=1e-5)
  check(lambda m: m.stats.dirichlet.logpdf(x, alpha[None]))
  check(lambda m: m.stats.dirichlet.logpdf(x[:1], alpha))
  np.testing.assert_allclose(pst.dirichlet.logpdf(x, alpha), sst.dirichlet.logpdf(x, alpha),
                             rtol=1e-5)
  p = np.float32([0.2, 0.3, 0.5])
  check(lambda m: m.stats.multinomial.logpmf(np.array([1, 2, 0]), 3, p), tol=1e-5)
  check(lambda m: m.stats.multinomial.pmf(np.array([1, 2, 1]), 3, p), tol=1e-5)
  check(lambda m: m.stats.multinomial.logpmf(np.float32([1, 2, 0]), 3, p))


def test_poisson_entropy():
  mu = np.float32([0.0, 0.5, 3.0, 9.9, 10.0, 50.0, 99.0, 100.0, 1e4])
  check(lambda m: m.stats.poisson.entropy(mu), tol=1e-4)
  # JAX's asymptotic formula for mu >= 100 is accurate to ~1e-3 relative
  np.testing.assert_allclose(pst.poisson.entropy(mu[1:]), sst.poisson.entropy(mu[1:]),
                             rtol=1e-3)


# --- mode, rankdata, sem ------------------------------------------------------------------
@pytest.mark.parametrize("kw", [{}, {"axis": 1}, {"axis": None}, {"keepdims": True},
                                {"axis": -1, "keepdims": True}])
def test_mode(kw):
  x = np.array([[1, 2, 2, 3], [3, 3, 1, 1], [0, 5, 5, 5]], np.int32)
  check(lambda m: m.stats.mode(x, **kw))
  xf = np.array([np.nan, 1.0, np.nan, 2.0, 2.0, np.nan], np.float32)
  check(lambda m: m.stats.mode(xf))
  check(lambda m: m.stats.mode(np.zeros((0, 3), np.float32), axis=0))
  check(lambda m: m.stats.mode(x, nan_policy="omit"))
  check(lambda m: m.stats.mode(x, nan_policy="bogus"))


@pytest.mark.parametrize("method", ["average", "min", "max", "dense", "ordinal"])
def test_rankdata(method):
  x = np.array([[3, 1, 2, 2], [5, 5, 5, 1]], np.float32)
  check(lambda m: m.stats.rankdata(x, method))
  check(lambda m: m.stats.rankdata(x, method, axis=1))
  check(lambda m: m.stats.rankdata(x, method, axis=0))
  np.testing.assert_array_equal(pst.rankdata(x, method), sst.rankdata(x, method))
  check(lambda m: m.stats.rankdata(np.float32([1.0, np.nan, 2.0]), method))


def test_rankdata_errors():
  check(lambda m: m.stats.rankdata(np.ones(3), "bogus"))
  check(lambda m: m.stats.rankdata(np.ones(3), nan_policy="raise"))


def test_sem():
  x = rand((4, 5), np.float32, 3)
  check(lambda m: m.stats.sem(x))
  check(lambda m: m.stats.sem(x, axis=1, ddof=0))
  check(lambda m: m.stats.sem(x, axis=None, keepdims=True))
  xn = x.copy()
  xn[0, 0] = np.nan
  check(lambda m: m.stats.sem(xn, nan_policy="omit"))
  np.testing.assert_allclose(pst.sem(x), sst.sem(x), rtol=1e-5)


# --- gaussian_kde -------------------------------------------------------------------------
def test_gaussian_kde():
  rng = np.random.RandomState(0)
  data = rng.randn(2, 30).astype(np.float32)
  w = rng.rand(30).astype(np.float32)
  pts = rng.randn(2, 5).astype(np.float32)
  for kw in ({}, {"weights": w}, {"bw_method": "silverman"}, {"bw_method": 0.4}):
    check(lambda m: m.stats.gaussian_kde(data, **kw).evaluate(pts), tol=1e-5)
    check(lambda m: m.stats.gaussian_kde(data, **kw).logpdf(pts), tol=1e-5)
    ref = sst.gaussian_kde(data.astype(np.float64), **kw)
    np.testing.assert_allclose(pst.gaussian_kde(data, **kw)(pts), ref(pts), rtol=1e-4)
  check(lambda m: m.stats.gaussian_kde(data).integrate_gaussian(np.zeros(2, np.float32),
                                                                np.eye(2, dtype=np.float32)),
        tol=1e-5)
  check(lambda m: m.stats.gaussian_kde(data).integrate_kde(m.stats.gaussian_kde(data[:, :9])),
        tol=1e-5)
  check(lambda m: m.stats.gaussian_kde(data[0]).integrate_box_1d(-1.0, 0.5), tol=1e-5)
  k = pst.gaussian_kde(data)
  np.testing.assert_allclose(pyjax.jit(lambda kde, p: kde.pdf(p))(k, pts), k.pdf(pts),
                             rtol=1e-6)
  check(lambda m: m.stats.gaussian_kde(np.ones(1)))
  check(lambda m: m.stats.gaussian_kde(data).integrate_box(0, 1))


# --- gradients ----------------------------------------------------------------------------
GRADS = [
    ("norm", "logpdf", (0.3, 0.1, 1.5), 2), ("norm", "logcdf", (-9.0,), 0),
    ("gamma", "logpdf", (1.2, 2.5), 1), ("beta", "cdf", (0.3, 2.0, 3.0), 0),
    ("t", "logpdf", (0.3, 3.0), 1), ("truncnorm", "logpdf", (0.3, -1.0, 2.0), 2),
    ("poisson", "logpmf", (3.0, 2.5), 1), ("binom", "logpmf", (3.0, 6.0, 0.3), 2),
    ("chi2", "logpdf", (1.5, 3.0), 0), ("logistic", "cdf", (0.4,), 0),
    ("gumbel_r", "logsf", (0.4,), 0), ("vonmises", "logpdf", (0.4, 2.0), 1),
    ("dirichlet", "logpdf", (np.float32([0.2, 0.3, 0.5]), np.float32([1.5, 2.0, 3.0])), 1),
]


@pytest.mark.parametrize("mod,f,args,argnum", [
    g if g[0] in ("norm", "gamma", "truncnorm") else pytest.param(*g, marks=pytest.mark.slow)
    for g in GRADS])
def test_grad_matches_jax(mod, f, args, argnum):
  # truncnorm's functions are jitted: JAX's jit transpose casts the cotangent back to the
  # (weak) input type, pyjax inlines jit under grad and does not (reported upstream)
  check(lambda m: m.top.grad(lambda *a: getattr(getattr(m.stats, mod), f)(*a),
                             argnums=argnum)(*args), tol=2e-4, weak=mod != "truncnorm")


def test_grad_multivariate_normal():
  rng = np.random.RandomState(1)
  A = rng.randn(3, 3).astype(np.float32)
  cov = (A @ A.T + np.eye(3)).astype(np.float32)
  x = rng.randn(3).astype(np.float32)
  check(lambda m: m.top.grad(lambda mu: m.stats.multivariate_normal.logpdf(x, mu, cov))(
      np.zeros(3, np.float32)), tol=1e-4)


def test_jit_and_vmap():
  x = _x(3)
  np.testing.assert_allclose(pyjax.jit(pst.norm.logpdf)(x, 0.1, 2.0),
                             pst.norm.logpdf(x, 0.1, 2.0), rtol=1e-6)
  np.testing.assert_allclose(pyjax.vmap(lambda v: pst.gamma.cdf(v, 2.0))(_pos(4)),
                             pst.gamma.cdf(_pos(4), 2.0), rtol=1e-6)
  np.testing.assert_allclose(pyjax.jit(pst.truncnorm.logcdf)(x, -1.0, 1.0),
                             pst.truncnorm.logcdf(x, -1.0, 1.0), rtol=1e-6)
