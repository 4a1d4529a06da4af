"""jax.random: typed keys, key derivation, bit generation and every sampler.

* Known-answer tests compare with values recorded from JAX 0.10.2 (``KAT``, read from
  ``tests/data/prng_golden.json``; they need no JAX): keys from several seeds in x32 and x64 mode, split/fold_in, bits of every
  width, uniform/randint in many dtypes, and most discrete samplers, under both
  ``jax_threefry_partitionable`` schemes.  Integer results and float bit patterns are
  compared exactly; samplers that evaluate transcendental functions with a tolerance.
* Live comparisons run every sampler in pyjax and in real JAX (skipped without JAX).
* Typed key arrays: dtype, repr, indexing, errors; jit/grad/vmap of samplers.
"""
import contextlib
import pickle

import ml_dtypes
import numpy as np
import pytest

import golden
import pyjax
import pyjax.numpy as jnp
from pyjax import random, lax


@contextlib.contextmanager
def flags(x64=False, partitionable=True, real_jax=None):
  """Set x64 and the threefry scheme in pyjax (and in real JAX when given)."""
  mods = [pyjax] + ([real_jax] if real_jax is not None else [])
  prev = [(m.config.jax_enable_x64, m.config.jax_threefry_partitionable) for m in mods]
  for m in mods:
    m.config.update("jax_enable_x64", x64)
    m.config.update("jax_threefry_partitionable", partitionable)
  try:
    yield
  finally:
    for m, (a, b) in zip(mods, prev):
      m.config.update("jax_enable_x64", a)
      m.config.update("jax_threefry_partitionable", b)


def _ints(x):
  """Integer values of an integer array, or the bit patterns of a float array."""
  x = np.asarray(x)
  if x.dtype.kind == "f" or x.dtype == ml_dtypes.bfloat16:
    x = x.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[x.dtype.itemsize])
  return [int(v) for v in x.ravel()]


def _floats(x):
  return np.asarray(x, np.float64).ravel().tolist()


# Values recorded from JAX 0.10.2, by mode: {"x32" | "x64" | "x32_orig" | ...: {case: value}}
# (tests/data/prng_golden.json).
KAT = golden.prng()["jax_random"]


# --- known answers ---------------------------------------------------------------------------
_FLOAT_KAT = {"normal": 2e-6, "exponential": 2e-6, "gamma": 5e-6, "truncated_normal": 5e-6,
              "laplace": 2e-6, "beta": 2e-5, "binomial": 0, "multinomial": 0}


def _kat_value(case):
  """Compute a KAT case with pyjax (the same calls that recorded it in JAX)."""
  kind, seed = case[0], case[1]
  if kind == "seed":
    return np.asarray(random.PRNGKey(seed)).tolist()
  k = random.key(seed)
  if kind == "split":
    return np.asarray(random.key_data(random.split(k, case[2]))).tolist()
  if kind == "fold_in":
    return np.asarray(random.key_data(random.fold_in(k, case[2]))).tolist()
  if kind == "bits":
    return _ints(random.bits(k, case[3], case[2]))
  if kind == "uniform":
    return _ints(random.uniform(k, (6,), case[2]))
  if kind == "uniform_range":
    return _ints(random.uniform(k, (2, 3), case[2], -1.5, 4.25))
  if kind == "randint":
    return _ints(random.randint(k, (6,), -3, 100, case[2]))
  if kind == "randint_full":
    info = np.iinfo(case[2])
    return _ints(random.randint(k, (4,), np.array(info.min, case[2]), np.array(info.max, case[2]),
                                case[2]))
  if kind == "bernoulli":
    return np.asarray(random.bernoulli(k, 0.3, (10,))).astype(int).tolist()
  if kind == "permutation":
    return _ints(random.permutation(k, 12))
  if kind == "permutation_axis":
    return _ints(random.permutation(k, jnp.arange(12).reshape(3, 4), axis=1))
  if kind == "permutation_indep":
    return _ints(random.permutation(k, jnp.arange(12).reshape(3, 4), axis=1, independent=True))
  if kind == "choice":
    return _ints(random.choice(k, 10, (4,)))
  if kind == "choice_noreplace":
    return _ints(random.choice(k, 10, (4,), replace=False))
  if kind == "choice_p":
    return _ints(random.choice(k, 10, (4,), p=jnp.linspace(0.1, 1.0, 10)))
  if kind == "choice_p_noreplace":
    return _ints(random.choice(k, 10, (4,), replace=False, p=jnp.linspace(0.1, 1.0, 10)))
  if kind == "categorical":
    return _ints(random.categorical(k, jnp.log(jnp.array([0.1, 0.2, 0.3, 0.4])), shape=(6,)))
  if kind == "rademacher":
    return _ints(random.rademacher(k, (8,)))
  if kind == "normal":
    return _floats(random.normal(k, (5,)))
  if kind == "exponential":
    return _floats(random.exponential(k, (4,)))
  if kind == "gamma":
    return _floats(random.gamma(k, jnp.array([0.3, 1.0, 4.5])))
  if kind == "truncated_normal":
    return _floats(random.truncated_normal(k, -0.5, 1.5, (4,)))
  if kind == "laplace":
    return _floats(random.laplace(k, (3,)))
  if kind == "beta":
    return _floats(random.beta(k, 2.0, 3.0, (3,)))
  if kind == "poisson":
    return _ints(random.poisson(k, jnp.array([0.0, 0.7, 4.0, 12.0, 250.0]), (2, 5)))
  if kind == "binomial":
    return _floats(random.binomial(k, jnp.array([3.0, 40.0, 500.0]), jnp.array([0.2, 0.5, 0.95])))
  if kind == "multinomial":
    return _floats(random.multinomial(k, 30.0, jnp.array([0.2, 0.5, 0.3])))
  raise AssertionError(case)


def _kat_cases():
  for tag, cases in KAT.items():
    for case in cases:
      yield pytest.param(tag, case, id=f"{tag}-{'-'.join(map(str, case))}")


@pytest.mark.parametrize("tag,case", list(_kat_cases()))
def test_known_answers(tag, case):
  expected = KAT[tag][case]
  with flags(x64=tag.startswith("x64"), partitionable=not tag.endswith("_orig")):
    got = _kat_value(case)
  tol = _FLOAT_KAT.get(case[0])
  if tol is None:
    assert _flat(got) == _flat(expected)
  else:
    np.testing.assert_allclose(got, expected, rtol=tol, atol=1e-7)


def _flat(x):
  return [int(v) for v in np.ravel(np.array(x, dtype=object))]


def test_threefry_test_vectors():
  """The Random123 known-answer vectors of Threefry-2x32 (20 rounds)."""
  from pyjax._src.random import prng
  u32 = lambda *v: jnp.array(v, dtype=np.uint32)
  for key, count, expected in golden.prng()["threefry2x32"]:
    out = prng.threefry2x32(u32(key[0]), u32(key[1]), u32(count[0]), u32(count[1]))
    assert [int(o[0]) for o in out] == list(expected)
    raw = prng.threefry_2x32(u32(*key), u32(*count))
    assert raw.tolist() == list(expected)


# --- typed keys ---------------------------------------------------------------------------------
def test_key_dtype_shape_repr():
  k = random.key(0)
  assert isinstance(k, pyjax.Array)
  assert k.shape == () and k.ndim == 0 and k.size == 1
  assert k.dtype.name == "key<fry>" and str(k.dtype) == "key<fry>" and repr(k.dtype) == "key<fry>"
  assert k.dtype == random.key_dtype() == random.key_dtype("threefry2x32")
  assert k.itemsize == 8 and k.nbytes == 8
  assert repr(k) == "Array((), dtype=key<fry>) overlaying:\n[0 0]"
  ks = random.split(k)
  assert repr(ks) == ("Array((2,), dtype=key<fry>) overlaying:\n"
                      "[[1797259609 2579123966]\n [ 928981903 3453687069]]")
  assert random.key_impl(k) == "threefry2x32"
  assert random.key_impl(random.PRNGKey(0)) == "threefry2x32"


def test_raw_keys():
  k = random.PRNGKey(42)
  assert k.dtype == np.uint32 and k.shape == (2,)
  assert k.tolist() == [0, 42]
  ks = random.split(k, 3)
  assert ks.dtype == np.uint32 and ks.shape == (3, 2)
  np.testing.assert_array_equal(ks, random.key_data(random.split(random.key(42), 3)))
  np.testing.assert_array_equal(random.fold_in(k, 3), random.key_data(random.fold_in(random.key(42), 3)))
  np.testing.assert_array_equal(random.uniform(k, (3,)), random.uniform(random.key(42), (3,)))
  np.testing.assert_array_equal(random.uniform(np.asarray(k), (3,)), random.uniform(k, (3,)))
  assert random.clone(k) is k


def test_key_data_wrap_roundtrip():
  ks = random.split(random.key(3), (2, 3))
  data = random.key_data(ks)
  assert data.shape == (2, 3, 2) and data.dtype == np.uint32
  back = random.wrap_key_data(data)
  assert back.shape == (2, 3) and back.dtype == ks.dtype
  assert bool(jnp.all(back == ks))
  back2 = random.wrap_key_data(np.asarray(data), impl="threefry2x32")
  assert bool(jnp.all(back2 == ks))
  assert random.wrap_key_data(data[0, 0], dtype=ks.dtype).shape == ()


def test_key_indexing_and_methods():
  ks = random.split(random.key(1), (2, 3))
  data = np.asarray(random.key_data(ks))
  np.testing.assert_array_equal(random.key_data(ks[1]), data[1])
  np.testing.assert_array_equal(random.key_data(ks[:, 2]), data[:, 2])
  np.testing.assert_array_equal(random.key_data(ks[..., 0]), data[..., 0, :])
  np.testing.assert_array_equal(random.key_data(ks[jnp.array([1, 0])]), data[[1, 0]])
  assert ks[None].shape == (1, 2, 3)
  assert ks.reshape(6).shape == (6,) and ks.reshape(3, -1).shape == (3, 2)
  np.testing.assert_array_equal(random.key_data(ks.ravel()), data.reshape(6, 2))
  np.testing.assert_array_equal(random.key_data(ks.T), data.transpose(1, 0, 2))
  np.testing.assert_array_equal(random.key_data(ks.swapaxes(0, 1)), data.transpose(1, 0, 2))
  np.testing.assert_array_equal(random.key_data(ks.take(jnp.array([2, 0]), axis=1)), data[:, [2, 0]])
  assert ks[:1].squeeze(0).shape == (3,)
  assert len(ks) == 2
  a, b = random.split(random.key(0))
  assert a.shape == () and bool(a != b) and bool(a == a)
  np.testing.assert_array_equal(ks == ks[0], [[True] * 3, [False] * 3])
  upd = ks.at[0, 1].set(random.key(9))
  np.testing.assert_array_equal(random.key_data(upd[0, 1]), [0, 9])
  np.testing.assert_array_equal(random.key_data(upd.at[1].get()), data[1])
  c = random.clone(ks)
  assert c is not ks and bool(jnp.all(c == ks))
  p = pickle.loads(pickle.dumps(ks))
  assert p.dtype == ks.dtype and bool(jnp.all(p == ks))


def test_key_errors():
  k = random.key(0)
  with pytest.raises(TypeError, match="cannot be converted to a NumPy array"):
    np.asarray(k)
  with pytest.raises(TypeError, match="key array cannot be converted to boolean"):
    bool(k)
  with pytest.raises(TypeError, match="unhashable"):
    hash(k)
  with pytest.raises(TypeError, match="len\\(\\) of unsized object"):
    len(k)
  with pytest.raises(TypeError, match="iteration over a 0-d key array"):
    iter(k)
  with pytest.raises(IndexError, match="Too many indices"):
    random.split(k)[0, 1]
  with pytest.raises(ValueError, match="uniform accepts a single key, but was given a key array "
                     "of shape \\(2,\\) != \\(\\). Use jax.vmap for batching."):
    random.uniform(random.split(k))
  with pytest.raises(TypeError, match="unexpected PRNG key type <class 'list'>"):
    random.uniform([1, 2])
  with pytest.raises(TypeError, match="expected key_data.shape to end with \\(2,\\); got shape=\\(3,\\)"):
    random.uniform(jnp.array([1, 2, 3], jnp.uint32))
  with pytest.raises(TypeError, match="expected key_data.dtype = uint32; got dtype=int32"):
    random.uniform(jnp.array([1, 2], jnp.int32))
  with pytest.raises(TypeError, match="expected key_data to have ndim, shape, and dtype"):
    random.wrap_key_data([1, 2])
  with pytest.raises(TypeError, match="key accepts a scalar seed, but was given a PRNG key"):
    random.key(k)
  with pytest.raises(TypeError, match="PRNGKey accepts a scalar seed, but was given an array of shape \\(2,\\)"):
    random.PRNGKey(jnp.array([1, 2]))
  with pytest.raises(TypeError, match="PRNG key seed must be an integer"):
    random.PRNGKey(1.0)
  with pytest.raises(OverflowError):
    random.key(2 ** 63)
  with pytest.raises(OverflowError):
    random.key(-2 ** 63 - 1)
  with pytest.raises(ValueError, match='unrecognized PRNG implementation "foo"'):
    random.key(0, impl="foo")
  with pytest.raises(TypeError, match="unrecognized type <class 'int'> for specifying PRNG"):
    random.key(0, impl=3)
  with pytest.raises(ValueError, match="Cannot specify both `impl` and `dtype`"):
    random.key(0, impl="threefry2x32", dtype=k.dtype)
  with pytest.raises(TypeError, match="fold_in accepts a scalar, but was given an array of"):
    random.fold_in(k, jnp.array([1, 2]))
  with pytest.raises(OverflowError):
    random.fold_in(k, -1)


@pytest.mark.parametrize("bad_dtype,fn,msg", [
    (np.int32, lambda k, d: random.bits(k, (2,), d), "must be an unsigned int dtype"),
    (np.int32, lambda k, d: random.uniform(k, (2,), d), "dtype argument to `uniform` must be a float dtype"),
    (np.int32, lambda k, d: random.normal(k, (2,), d), "must be a float or complex dtype"),
    (np.int32, lambda k, d: random.gamma(k, 1.0, (2,), d), "dtype argument to `gamma` must be a float dtype"),
    (np.float32, lambda k, d: random.geometric(k, 0.5, (2,), d), "must be an int dtype"),
])
def test_sampler_dtype_errors(bad_dtype, fn, msg):
  with pytest.raises(ValueError, match=msg):
    fn(random.key(0), bad_dtype)


def test_sampler_argument_errors():
  k = random.key(0)
  with pytest.raises(TypeError, match="randint only accepts integer dtypes, got float32"):
    random.randint(k, (3,), 0, 10, np.float32)
  with pytest.raises(ValueError, match="Cannot take a larger sample \\(size 5\\) than population \\(size 3\\)"):
    random.choice(k, 3, (5,), replace=False)
  with pytest.raises(ValueError, match="p must be None or a 1D vector"):
    random.choice(k, 3, (2,), p=jnp.ones(4))
  with pytest.raises(TypeError, match="shape argument of jax.random.choice must be a sequence"):
    random.choice(k, 3, 2)
  with pytest.raises(ValueError, match="Incompatible shapes for broadcasting"):
    random.truncated_normal(k, jnp.zeros(3), 1.0, (2,))
  with pytest.raises(ValueError, match="pareto parameter shapes must be broadcast-compatible with "
                     "shape argument.*got result \\(2, 3\\) for shape argument \\(3,\\)"):
    random.pareto(k, jnp.ones((2, 1)), (3,))
  with pytest.raises(TypeError, match="bernoulli probability `p` must have a floating dtype"):
    random.bernoulli(k, 1)
  with pytest.raises(ValueError, match="got mode='mid', expected 'high' or 'low'"):
    random.bernoulli(k, 0.5, mode="mid")
  with pytest.raises(TypeError, match="x must be an integer or at least 1-dimensional"):
    random.permutation(k, 2.5)
  with pytest.raises(ValueError, match="dirichlet requires alpha.ndim >= 1"):
    random.dirichlet(k, 1.0)


def test_dtypes_and_weak_types():
  k = random.key(0)
  assert random.uniform(k).dtype == np.float32 and not random.uniform(k).weak_type
  assert random.normal(k, (2,), jnp.bfloat16).dtype == jnp.bfloat16
  assert random.randint(k, (2,), 0, 5).dtype == np.int32
  assert random.randint(k, (2,), 0, 5, np.int8).dtype == np.int8
  assert random.bits(k).dtype == np.uint32
  assert random.bernoulli(k, 0.5, (3,)).dtype == np.bool_
  assert random.permutation(k, 5).dtype == np.int32
  assert random.categorical(k, jnp.zeros(4)).dtype == np.int32
  assert random.rademacher(k, (2,)).dtype == np.int32
  assert random.gamma(k, 2.0).dtype == np.float32
  assert random.normal(k, (2,), np.complex64).dtype == np.complex64
  with flags(x64=True):
    assert random.uniform(k).dtype == np.float64
    assert random.randint(k, (2,), 0, 5).dtype == np.int64
    assert random.bits(k).dtype == np.uint64
    assert random.bernoulli(k, 0.5, (3,)).dtype == np.bool_


def test_uniform_range_and_clipping():
  k = random.key(5)
  for dt in (jnp.bfloat16, np.float16, np.float32):
    u = np.asarray(random.uniform(k, (2000,), dt, -3.0, 2.0), np.float64)
    assert u.min() >= -3.0 and u.max() < 2.0
  r = np.asarray(random.randint(k, (2000,), 0, 256, np.uint8))
  assert r.min() == 0 and r.max() == 255
  r = np.asarray(random.randint(k, (100,), 5, 5))
  assert (r == 5).all()
  t = np.asarray(random.truncated_normal(k, -0.1, 0.2, (2000,)))
  assert t.min() > -0.1 and t.max() < 0.2


def test_statistics():
  """Moments of a few samplers (sanity of the algorithms, not of the bits)."""
  k = random.key(11)
  n = 20000
  assert abs(float(jnp.mean(random.normal(k, (n,))))) < 0.03
  assert abs(float(jnp.std(random.normal(k, (n,)))) - 1) < 0.03
  assert abs(float(jnp.mean(random.exponential(k, (n,)))) - 1) < 0.03
  assert abs(float(jnp.mean(random.gamma(k, 3.0, (n,)))) - 3) < 0.08
  assert abs(float(jnp.mean(random.gamma(k, 0.2, (n,)))) - 0.2) < 0.02
  assert abs(float(jnp.mean(random.beta(k, 2.0, 6.0, (n,)))) - 0.25) < 0.01
  assert abs(float(jnp.mean(random.bernoulli(k, 0.3, (n,)))) - 0.3) < 0.015
  counts = np.bincount(np.asarray(random.randint(k, (n,), 0, 4)), minlength=4) / n
  np.testing.assert_allclose(counts, 0.25, atol=0.015)
  perm = np.asarray(random.permutation(k, 50))
  assert sorted(perm.tolist()) == list(range(50))


# --- transformations --------------------------------------------------------------------------
def test_jit_matches_eager():
  k = random.key(7)
  f = lambda k: (random.uniform(k, (3,)), random.normal(k, (2,)), random.randint(k, (4,), 0, 9),
                 random.permutation(k, 6), random.gamma(k, 1.5, (2,)),
                 random.poisson(k, 3.0, (3,)), random.binomial(k, 50.0, 0.4, (2,)),
                 random.split(k))
  eager = f(k)
  jitted = pyjax.jit(f)(k)
  for a, b in zip(eager[:-1], jitted[:-1]):
    np.testing.assert_array_equal(a, b)
  assert jitted[-1].dtype == k.dtype and jitted[-1].shape == (2,)
  np.testing.assert_array_equal(random.key_data(eager[-1]), random.key_data(jitted[-1]))


def test_keys_as_jit_arguments_and_outputs():
  @pyjax.jit
  def step(key):
    key, sub = random.split(key)
    return key, random.uniform(sub, (2,))
  k = random.key(0)
  k1, u1 = step(k)
  assert k1.dtype == k.dtype and k1.shape == ()
  ref_key, ref_sub = random.split(k)
  np.testing.assert_array_equal(random.key_data(k1), random.key_data(ref_key))
  np.testing.assert_array_equal(u1, random.uniform(ref_sub, (2,)))
  seeded = pyjax.jit(lambda s: random.key_data(random.key(s)))(jnp.int32(-7))
  np.testing.assert_array_equal(seeded, random.key_data(random.key(-7)))
  folded = pyjax.jit(lambda k, d: random.fold_in(k, d))(k, jnp.uint32(12))
  np.testing.assert_array_equal(random.key_data(folded), random.key_data(random.fold_in(k, 12)))


def test_vmap_over_keys():
  ks = random.split(random.key(3), 4)
  for f in (lambda k: random.uniform(k, (3,)), lambda k: random.normal(k),
            lambda k: random.randint(k, (2,), 0, 50), lambda k: random.permutation(k, 5),
            lambda k: random.bernoulli(k, 0.4, (3,)), lambda k: random.gamma(k, 0.7, (2,)),
            lambda k: random.choice(k, 7, (3,), replace=False),
            lambda k: random.key_data(random.split(k, 3)),
            lambda k: random.key_data(random.fold_in(k, 5)),
            lambda k: random.poisson(k, jnp.array([1.0, 30.0])),
            lambda k: random.binomial(k, 20.0, 0.3, (2,))):
    batched = pyjax.vmap(f)(ks)
    looped = jnp.stack([f(k) for k in ks])
    np.testing.assert_array_equal(batched, looped)
  jv = pyjax.jit(pyjax.vmap(lambda k: random.normal(k, (2,))))(ks)
  np.testing.assert_array_equal(jv, jnp.stack([random.normal(k, (2,)) for k in ks]))
  out = pyjax.vmap(lambda k: random.split(k))(ks)
  assert out.dtype == ks.dtype and out.shape == (4, 2)


def test_vmap_over_parameters():
  k = random.key(2)
  a = jnp.array([0.3, 1.0, 5.0])
  g = pyjax.vmap(lambda a: random.gamma(k, a))(a)
  np.testing.assert_array_equal(g, jnp.stack([random.gamma(k, x) for x in a]))
  lo = jnp.array([-1.0, 0.0, 2.0])
  u = pyjax.vmap(lambda lo: random.uniform(k, (2,), minval=lo, maxval=lo + 1))(lo)
  np.testing.assert_array_equal(u, jnp.stack([random.uniform(k, (2,), minval=x, maxval=x + 1) for x in lo]))


def test_grad_reparameterized():
  k = random.key(4)
  eps = random.normal(k, (5,))
  g = pyjax.grad(lambda mu, sigma: jnp.sum(mu + sigma * random.normal(k, (5,))), argnums=(0, 1))(1.0, 2.0)
  np.testing.assert_allclose(g[0], 5.0)
  np.testing.assert_allclose(g[1], float(jnp.sum(eps)), rtol=1e-6)
  gu = pyjax.grad(lambda lo, hi: jnp.sum(random.uniform(k, (4,), minval=lo, maxval=hi)), argnums=(0, 1))(-1.0, 3.0)
  u01 = random.uniform(k, (4,))
  np.testing.assert_allclose(gu[1], float(jnp.sum(u01)), rtol=1e-5)
  np.testing.assert_allclose(gu[0], float(jnp.sum(1 - u01)), rtol=1e-5)
  # gamma: implicit reparameterization; check against a finite difference of the sample
  a, h = 2.5, 1e-3
  ga = pyjax.grad(lambda a: random.gamma(k, a))(a)
  fd = (float(random.gamma(k, a + h)) - float(random.gamma(k, a - h))) / (2 * h)
  np.testing.assert_allclose(ga, fd, rtol=2e-2)
  # loggamma: d log(sample) / da = (d sample / da) / sample, from random_gamma_grad
  s = random.loggamma(k, 0.5)
  gl = pyjax.grad(lambda a: random.loggamma(k, a))(0.5)
  np.testing.assert_allclose(gl, lax.random_gamma_grad(0.5, jnp.exp(s)) / jnp.exp(s), rtol=1e-5)
  gj = pyjax.jit(pyjax.grad(lambda a: jnp.sum(random.gamma(k, a, (3,)))))(1.5)
  assert np.isfinite(float(gj))
  gv = pyjax.vmap(pyjax.grad(lambda a: random.gamma(k, a)))(jnp.array([0.5, 2.0]))
  np.testing.assert_allclose(gv, [pyjax.grad(lambda a: random.gamma(k, a))(x) for x in (0.5, 2.0)], rtol=1e-6)
  # samplers with integer outputs or unused parameters differentiate to zero
  assert float(pyjax.grad(lambda p: jnp.sum(random.bernoulli(k, p, (3,)).astype(np.float32) * p))(0.5)) >= 0


def test_make_jaxpr_shows_threefry():
  text = str(pyjax.make_jaxpr(lambda k: random.uniform(k))(random.key(0)))
  assert "threefry2x32" in text and "u32[2]" in text


def test_partitionable_flag_changes_bits_and_jit_cache():
  k = random.key(0)
  f = pyjax.jit(lambda k: random.bits(k, (5,)))
  a = f(k)
  with flags(partitionable=False):
    b = f(k)
    np.testing.assert_array_equal(b, random.bits(k, (5,)))
  assert not np.array_equal(a, b)


# --- live comparison with JAX ------------------------------------------------------------------
_EXACT = {
    "bits8": lambda r, k, np_: r.bits(k, (7,), np.uint8),
    "bits16": lambda r, k, np_: r.bits(k, (2, 5), np.uint16),
    "bits32": lambda r, k, np_: r.bits(k, (3, 3)),
    "split": lambda r, k, np_: r.key_data(r.split(k, (3, 2))),
    "fold_in": lambda r, k, np_: r.key_data(r.fold_in(k, 2 ** 32 - 1)),
    "uniform16": lambda r, k, np_: r.uniform(k, (9,), np.float16, -2.0, 5.0),
    "uniformbf16": lambda r, k, np_: r.uniform(k, (9,), ml_dtypes.bfloat16),
    "uniform32": lambda r, k, np_: r.uniform(k, (4, 3), np.float32, np.array([[0.], [1.], [2.], [3.]], np.float32), 7.5),
    "randint8": lambda r, k, np_: r.randint(k, (9,), -128, 128, np.int8),
    "randintu8": lambda r, k, np_: r.randint(k, (9,), 0, 256, np.uint8),
    "randint32": lambda r, k, np_: r.randint(k, (3, 4), np.array([[-5], [0], [7]]), 1000),
    "randintu32": lambda r, k, np_: r.randint(k, (9,), 0, np.uint32(4000000000), np.uint32),
    "bernoulli": lambda r, k, np_: r.bernoulli(k, np.linspace(0, 1, 9, dtype=np.float32)),
    "bernoulli_high": lambda r, k, np_: r.bernoulli(k, np.float32(1e-3), (50,), mode="high"),
    "permutation": lambda r, k, np_: r.permutation(k, 30),
    "permutation_2d": lambda r, k, np_: r.permutation(k, np.arange(20.).reshape(4, 5), axis=-1),
    "permutation_indep": lambda r, k, np_: r.permutation(k, np.arange(20).reshape(4, 5), 0, True),
    "choice": lambda r, k, np_: r.choice(k, np.arange(12).reshape(3, 4), (2, 2), axis=1),
    "choice_noreplace": lambda r, k, np_: r.choice(k, 15, (6,), replace=False),
    "choice_p": lambda r, k, np_: r.choice(k, 5, (8,), p=np.array([0.1, 0, 0.4, 0.3, 0.2])),
    "choice_p_noreplace": lambda r, k, np_: r.choice(k, 5, (3,), False, np.array([0.1, 0.05, 0.4, 0.3, 0.15])),
    "categorical": lambda r, k, np_: r.categorical(k, np.log(np.array([[0.2, 0.8], [0.6, 0.4], [0.5, 0.5]])), axis=-1, shape=(4, 3)),
    "categorical_axis0": lambda r, k, np_: r.categorical(k, np.zeros((5, 2)), axis=0),
    "categorical_noreplace": lambda r, k, np_: r.categorical(k, np.zeros(6), shape=(4,), replace=False),
    "rademacher": lambda r, k, np_: r.rademacher(k, (10,), np.int8),
    "geometric": lambda r, k, np_: r.geometric(k, 0.2, (10,)),
    "poisson": lambda r, k, np_: r.poisson(k, np.array([0., 0.3, 2.5, 9.99, 10., 37., 1e4]), (3, 7)),
    "binomial": lambda r, k, np_: r.binomial(k, np.array([0., 5., 30., 200., np.inf, -1.]), np.array([0.3, 0.9, 0.5, 0.02, 0.5, 0.5])),
    "multinomial": lambda r, k, np_: r.multinomial(k, np.array([10., 100.]), np.array([0.1, 0.6, 0.3]), shape=(2, 3)),
}
_CLOSE = {
    "normal": (lambda r, k, np_: r.normal(k, (40,)), 5e-6),
    "normal16": (lambda r, k, np_: r.normal(k, (20,), np.float16), 2e-3),
    "normal_c64": (lambda r, k, np_: r.normal(k, (6,), np.complex64), 5e-6),
    "truncated_normal": (lambda r, k, np_: r.truncated_normal(k, np.array([-1., 0.5]), 2.0, (3, 2)), 5e-6),
    "exponential": (lambda r, k, np_: r.exponential(k, (20,)), 2e-6),
    "gumbel": (lambda r, k, np_: r.gumbel(k, (20,)), 1e-5),
    "gumbel_high": (lambda r, k, np_: r.gumbel(k, (20,), mode="high"), 1e-5),
    "gumbel_highest": (lambda r, k, np_: r.gumbel(k, (20,), mode="highest"), 1e-5),
    "laplace": (lambda r, k, np_: r.laplace(k, (20,)), 2e-6),
    "logistic": (lambda r, k, np_: r.logistic(k, (20,)), 2e-6),
    "cauchy": (lambda r, k, np_: r.cauchy(k, (20,)), 2e-6),
    "pareto": (lambda r, k, np_: r.pareto(k, np.array([1.0, 3.0]), (5, 2)), 2e-6),
    "rayleigh": (lambda r, k, np_: r.rayleigh(k, 2.0, (10,)), 2e-6),
    "wald": (lambda r, k, np_: r.wald(k, np.float32(1.5), (10,)), 1e-5),
    "triangular": (lambda r, k, np_: r.triangular(k, -1.0, 0.0, 2.0, (10,)), 2e-6),
    "lognormal": (lambda r, k, np_: r.lognormal(k, 0.7, (10,)), 5e-6),
    "weibull_min": (lambda r, k, np_: r.weibull_min(k, 2.0, 1.5, (10,)), 5e-6),
    "maxwell": (lambda r, k, np_: r.maxwell(k, (10,)), 5e-6),
    "double_sided_maxwell": (lambda r, k, np_: r.double_sided_maxwell(k, 1.0, np.array([1., 2.]), (3,)), 5e-6),
    "gamma": (lambda r, k, np_: r.gamma(k, np.array([0.01, 0.3, 1.0, 2.0, 50.0]), (4, 5)), 5e-5),
    "gamma16": (lambda r, k, np_: r.gamma(k, 1.7, (10,), np.float16), 5e-3),
    "loggamma": (lambda r, k, np_: r.loggamma(k, np.array([0.001, 0.1, 1.0, 10.0]), (2, 4)), 5e-5),
    "beta": (lambda r, k, np_: r.beta(k, np.array([0.2, 1.0, 4.0]), 2.0), 5e-5),
    "dirichlet": (lambda r, k, np_: r.dirichlet(k, np.array([0.1, 1.0, 10.0]), (3,)), 5e-5),
    "t": (lambda r, k, np_: r.t(k, 3.5, (8,)), 5e-5),
    "chisquare": (lambda r, k, np_: r.chisquare(k, np.array([1.0, 6.0]), (4, 2)), 5e-5),
    "f": (lambda r, k, np_: r.f(k, 3.0, 8.0, (8,)), 5e-5),
    "generalized_normal": (lambda r, k, np_: r.generalized_normal(k, 1.3, (8,)), 5e-5),
    "ball": (lambda r, k, np_: r.ball(k, 4, 1.5, (3,)), 5e-5),
    "orthogonal": (lambda r, k, np_: r.orthogonal(k, 4, (2,)), 1e-5),
    "orthogonal_wide": (lambda r, k, np_: r.orthogonal(k, 2, m=3), 1e-5),
    "multivariate_normal": (lambda r, k, np_: r.multivariate_normal(k, np.array([1., -1.]), np.array([[2., .5], [.5, 1.]]), (3,)), 1e-5),
    "multivariate_normal_svd": (lambda r, k, np_: r.multivariate_normal(k, np.zeros(2), np.array([[2., .5], [.5, 1.]]), (3,), method="svd"), 1e-5),
    "multivariate_normal_eigh": (lambda r, k, np_: r.multivariate_normal(k, np.zeros(2), np.array([[2., .5], [.5, 1.]]), (3,), method="eigh"), 1e-5),
}


_SEEDS = [0, pytest.param(12345, marks=pytest.mark.slow)]


_SLOW_EXACT = {"poisson", "binomial", "multinomial"}  # JAX compiles their loops slowly; KATs cover them


@pytest.mark.parametrize("seed", _SEEDS)
@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in _SLOW_EXACT else n
                                  for n in sorted(_EXACT)])
def test_exact_vs_jax(jax, name, seed):
  with flags(real_jax=jax):
    ours = _EXACT[name](random, random.key(seed), jnp)
    ref = _EXACT[name](jax.random, jax.random.key(seed), jax.numpy)
  assert ours.dtype == ref.dtype and ours.shape == ref.shape
  np.testing.assert_array_equal(np.asarray(ours), np.asarray(ref))


_SLOW_CLOSE = {"beta", "ball", "f", "dirichlet", "t", "chisquare", "generalized_normal",
               "loggamma", "gamma16",  # JAX compiles their rejection loops slowly
               "orthogonal_wide", "multivariate_normal_svd", "multivariate_normal_eigh"}


@pytest.mark.parametrize("seed", _SEEDS)
@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in _SLOW_CLOSE else n
                                  for n in sorted(_CLOSE)])
def test_close_vs_jax(jax, name, seed):
  fn, rtol = _CLOSE[name]
  with flags(real_jax=jax):
    ours = fn(random, random.key(seed), jnp)
    ref = fn(jax.random, jax.random.key(seed), jax.numpy)
  assert ours.dtype == ref.dtype and ours.shape == ref.shape
  np.testing.assert_allclose(np.asarray(ours, np.float64) if ours.dtype != np.complex64 else np.asarray(ours),
                             np.asarray(ref, np.float64) if ref.dtype != np.complex64 else np.asarray(ref),
                             rtol=rtol, atol=rtol * 5e-2)


@pytest.mark.parametrize("x64,partitionable", [
    (False, True), pytest.param(False, False, marks=pytest.mark.slow),
    pytest.param(True, True, marks=pytest.mark.slow), pytest.param(True, False, marks=pytest.mark.slow)])
def test_bits_uniform_randint_vs_jax_all_modes(jax, x64, partitionable):
  with flags(x64=x64, partitionable=partitionable, real_jax=jax):
    for seed in (0, -3, 2 ** 35 + 17):
      k, jk = random.key(seed), jax.random.key(seed)
      np.testing.assert_array_equal(random.key_data(k), jax.random.key_data(jk))
      udts = ["uint8", "uint16", "uint32"] + (["uint64"] if x64 else [])
      for dt in udts:
        for shape in [(), (1,), (5,), (3, 7)]:
          np.testing.assert_array_equal(random.bits(k, shape, dt), jax.random.bits(jk, shape, dt))
      fdts = ["float16", "bfloat16", "float32"] + (["float64"] if x64 else [])
      for dt in fdts:
        a = random.uniform(k, (11,), dt, -0.25, 8.0)
        b = jax.random.uniform(jk, (11,), dt, -0.25, 8.0)
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(_ints(a), _ints(b))
      idts = ["int8", "int16", "int32", "uint32"] + (["int64", "uint64"] if x64 else [])
      for dt in idts:
        np.testing.assert_array_equal(random.randint(k, (9,), 0, 120, dt),
                                      jax.random.randint(jk, (9,), 0, 120, dt))
      np.testing.assert_array_equal(random.key_data(random.split(k, (2, 3))),
                                    jax.random.key_data(jax.random.split(jk, (2, 3))))
      np.testing.assert_array_equal(random.permutation(k, 25), jax.random.permutation(jk, 25))


@pytest.mark.slow
def test_x64_samplers_vs_jax(jax):
  with flags(x64=True, real_jax=jax):
    k, jk = random.key(8), jax.random.key(8)
    for name in ["normal", "exponential", "gamma", "beta", "t", "truncated_normal", "cauchy"]:
      fn, _ = _CLOSE[name]
      a, b = fn(random, k, jnp), fn(jax.random, jk, jax.numpy)
      assert a.dtype == b.dtype == np.float64
      np.testing.assert_allclose(a, b, rtol=1e-12)
    for name in ["bernoulli", "choice_p", "categorical", "geometric"]:
      a, b = _EXACT[name](random, k, jnp), _EXACT[name](jax.random, jk, jax.numpy)
      np.testing.assert_array_equal(a, b)


@pytest.mark.slow
def test_vmap_grad_vs_jax(jax):
  with flags(real_jax=jax):
    for r, api in ((random, pyjax), (jax.random, jax)):
      ks = r.split(r.key(1), 3)
      v = api.vmap(lambda k: r.gamma(k, 1.3, (2,)))(ks)
      g = api.grad(lambda a: api.numpy.sum(r.gamma(r.key(2), a, (4,))))(0.8)
      gl = api.grad(lambda a: r.loggamma(r.key(4), a))(0.5)
      h = api.jit(api.vmap(lambda k: r.normal(k, (2,))))(ks)
      if r is random:
        ours = (v, g, gl, h)
      else:
        ref = (v, g, gl, h)
  for a, b in zip(ours, ref):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=5e-5)


# --- lax.switch augmentation: random.randint picks the branch ---------------------------------
def _augment(r, lax_, jnp_, key, img):
  k_branch, k_noise = r.split(key)
  branch = r.randint(k_branch, (), 0, 3)
  return lax_.switch(branch, [lambda x: x,
                              lambda x: jnp_.flip(x, 1),
                              lambda x: x + 0.1 * r.normal(k_noise, x.shape)], img)


def test_switch_augmentation():
  img = jnp.arange(12.0).reshape(3, 4)
  keys = random.split(random.key(0), 6)
  branches = [int(random.randint(random.split(k)[0], (), 0, 3)) for k in keys]
  assert len(set(branches)) > 1
  eager = [_augment(random, lax, jnp, k, img) for k in keys]
  jitted = pyjax.jit(lambda k, x: _augment(random, lax, jnp, k, x))
  batched = pyjax.vmap(lambda k: _augment(random, lax, jnp, k, img))(keys)
  for k, b, e, v in zip(keys, branches, eager, batched):
    noise = img + 0.1 * random.normal(random.split(k)[1], img.shape)
    expected = [img, jnp.flip(img, 1), noise][b]
    np.testing.assert_array_equal(e, expected)
    np.testing.assert_array_equal(jitted(k, img), expected)
    np.testing.assert_allclose(v, expected, rtol=1e-6)


def test_switch_augmentation_vs_jax(jax):
  img = np.arange(12.0, dtype=np.float32).reshape(3, 4)
  with flags(real_jax=jax):
    for seed in range(4):
      ours = pyjax.jit(lambda k, x: _augment(random, lax, jnp, k, x))(random.key(seed), img)
      ref = jax.jit(lambda k, x: _augment(jax.random, jax.lax, jax.numpy, k, x))(jax.random.key(seed), img)
      np.testing.assert_allclose(np.asarray(ours), np.asarray(ref), rtol=5e-6)
      ours_e = _augment(random, lax, jnp, random.key(seed), img)
      ref_e = _augment(jax.random, jax.lax, jax.numpy, jax.random.key(seed), img)
      np.testing.assert_allclose(np.asarray(ours_e), np.asarray(ref_e), rtol=5e-6)


# --- keys carried through control flow ---------------------------------------------------------
def _cf_programs(r, jax_, jnp_):
  k = r.key(3)

  def body(i, c):
    key, acc = c
    key, sub = r.split(key)
    return key, acc + r.uniform(sub, (2,))

  def sbody(key, x):
    key, sub = r.split(key)
    return key, x * r.normal(sub)

  return [
      jax_.lax.fori_loop(0, 5, body, (k, jnp_.zeros(2)))[1],
      jax_.jit(lambda k: jax_.lax.fori_loop(0, 5, body, (k, jnp_.zeros(2)))[1])(k),
      jax_.lax.scan(sbody, k, jnp_.arange(4.))[1],
      r.key_data(jax_.lax.scan(sbody, k, jnp_.arange(4.))[0]),
      jax_.lax.cond(True, lambda k: r.key_data(r.split(k)[0]), lambda k: r.key_data(k), k),
      jax_.lax.map(lambda k: r.uniform(k), r.split(k, 3)),
      jax_.grad(lambda x: jax_.lax.scan(lambda c, kx: (c + kx[1] * r.normal(kx[0]), None), 0.,
                                        (r.split(k, 3), x))[0])(jnp_.ones(3)),
      jax_.vmap(lambda k: r.poisson(k, 3.0, (2,)))(r.split(k, 3)),
      jax_.vmap(lambda lam: r.poisson(k, lam))(jnp_.array([1., 20.])),
      jax_.vmap(jax_.vmap(lambda k: r.uniform(k)))(r.split(k, (2, 3))),
  ]


def test_keys_in_control_flow():
  outs = _cf_programs(random, pyjax, jnp)
  k = random.key(3)
  acc, key = jnp.zeros(2), k
  for _ in range(5):
    key, sub = random.split(key)
    acc = acc + random.uniform(sub, (2,))
  np.testing.assert_array_equal(outs[0], acc)
  np.testing.assert_array_equal(outs[1], acc)
  key, ys = k, []
  for x in range(4):
    key, sub = random.split(key)
    ys.append(x * random.normal(sub))
  np.testing.assert_allclose(outs[2], ys, rtol=1e-6)
  np.testing.assert_array_equal(outs[3], random.key_data(key))
  np.testing.assert_array_equal(outs[5], [random.uniform(s) for s in random.split(k, 3)])
  np.testing.assert_allclose(outs[6], [random.normal(s) for s in random.split(k, 3)], rtol=1e-6)


def test_keys_in_control_flow_vs_jax(jax):
  with flags(real_jax=jax):
    ours = _cf_programs(random, pyjax, jnp)
    ref = _cf_programs(jax.random, jax, jax.numpy)
  for a, b in zip(ours, ref):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-6)
