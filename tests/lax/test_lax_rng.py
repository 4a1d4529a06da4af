"""Low-level random primitives (lax/rng.py): rng_bit_generator (every algorithm; known bits
recorded from JAX in tests/data/prng_golden.json) and rng_uniform."""
import numpy as np
import pytest

import golden
import pyjax
import pyjax.numpy as jnp
from pyjax import lax
from jax_compare import assert_raises_same, assert_same_tree, jaxpr_text, libraries

PY = (pyjax, jnp, lax)


# --- rng_bit_generator / rng_uniform -----------------------------------------------------------
# Recorded from JAX 0.10.2 on CPU (key [1, 2, 3, 4]; tests/data/prng_golden.json).
_RBG_KNOWN = golden.prng()["rng_bit_generator"]


@pytest.mark.parametrize("alg,shape", list(_RBG_KNOWN))
def test_rng_bit_generator_known_bits(alg, shape):
  key = jnp.array([1, 2, 3, 4], jnp.uint32)
  new_key, bits = lax.rng_bit_generator(key, shape, algorithm=lax.RandomAlgorithm[alg])
  want_key, want_bits = _RBG_KNOWN[(alg, shape)]
  np.testing.assert_array_equal(new_key, want_key)
  np.testing.assert_array_equal(np.ravel(bits), want_bits)
  assert bits.shape == shape and bits.dtype == np.uint32


_RBG_SHAPES = [(), (3,), (2, 3), (3, 5), (1, 7), (5, 1, 3), (4, 2)]
_RBG_CASES = [("RNG_DEFAULT", "uint32"), ("RNG_THREE_FRY", "uint32"), ("RNG_PHILOX", "uint8"),
              ("RNG_THREE_FRY", "uint16")]
_RBG_SLOW = [(a, d) for a in ("RNG_DEFAULT", "RNG_THREE_FRY", "RNG_PHILOX")
             for d in ("uint8", "uint16", "uint32") if (a, d) not in _RBG_CASES]


@pytest.mark.parametrize("alg,dt", _RBG_CASES + [pytest.param(*c, marks=pytest.mark.slow)
                                                 for c in _RBG_SLOW])
def test_rng_bit_generator_matches_jax(jax, alg, dt):
  keys = [np.array([1, 2, 3, 4], np.uint32),
          np.array([0xFFFFFFFF, 7, 0xFFFFFFFE, 0xFFFFFFFF], np.uint32)]
  for key in keys:
    for shape in _RBG_SHAPES:
      ours = lax.rng_bit_generator(key, shape, dtype=np.dtype(dt),
                                   algorithm=lax.RandomAlgorithm[alg])
      theirs = jax.lax.rng_bit_generator(key, shape, dtype=np.dtype(dt),
                                         algorithm=jax.lax.RandomAlgorithm[alg])
      assert_same_tree(ours, theirs)


def test_rng_bit_generator_64_bit_matches_jax(jax, x64):
  key = np.array([5, 6, 7, 8], np.uint32)
  for alg in ["RNG_DEFAULT", "RNG_THREE_FRY"]:
    for shape in [(3,), (2, 3)]:
      assert_same_tree(lax.rng_bit_generator(key, shape, dtype=np.uint64,
                                             algorithm=lax.RandomAlgorithm[alg]),
                       jax.lax.rng_bit_generator(key, shape, dtype=np.uint64,
                                                 algorithm=jax.lax.RandomAlgorithm[alg]))
  key64 = np.array([3, 9], np.uint64)
  assert_same_tree(lax.rng_bit_generator(key64, (4,)), jax.lax.rng_bit_generator(key64, (4,)))


def test_rng_bit_generator_transforms_match_jax(jax):
  def prog(jax, jnp, lax):
    k = jnp.array([1, 2, 3, 4], jnp.uint32)
    return [jax.jit(lambda k: lax.rng_bit_generator(k, (3,)))(k),
            jax.vmap(lambda k: lax.rng_bit_generator(k, (3,)))(jnp.stack([k, k + 1]))]
  assert_same_tree(prog(*PY), prog(*libraries(jax)))
  f = lambda lax: (lambda k: lax.rng_bit_generator(k, (3,)))
  k = np.array([1, 2, 3, 4], np.uint32)
  assert jaxpr_text(pyjax, f(lax), k) == jaxpr_text(jax, f(jax.lax), k)
  assert_raises_same(lambda: lax.rng_bit_generator(k, (2,), dtype=jnp.int32),
                     lambda: jax.lax.rng_bit_generator(k, (2,), dtype=jax.numpy.int32))
  with pytest.raises(TypeError, match="uint32\\[4\\]"):
    lax.rng_bit_generator(jnp.zeros(3, jnp.uint32), (2,))


def test_rng_uniform(jax):
  a = lax.rng_uniform(0., 1., (1000,))
  b = lax.rng_uniform(0., 1., (1000,))
  assert a.dtype == np.float32 and a.weak_type and a.shape == (1000,)
  assert float(a.min()) >= 0 and float(a.max()) < 1 and not np.array_equal(a, b)
  assert 0.4 < float(a.mean()) < 0.6
  i = lax.rng_uniform(np.int32(3), np.int32(7), (500,))
  assert i.dtype == np.int32 and set(np.unique(i)) == {3, 4, 5, 6}
  j = pyjax.jit(lambda: lax.rng_uniform(0., 1., (3,)))
  assert not np.array_equal(j(), j())
  v = pyjax.vmap(lambda lo: lax.rng_uniform(lo, lo + 1., (4,)))(jnp.array([0., 10.]))
  assert v.shape == (2, 4) and float(v[1].min()) >= 10 and float(v[0].max()) < 1
  f = lambda lax: (lambda a: lax.rng_uniform(a, 1.0, (3,)))
  assert jaxpr_text(pyjax, f(lax), 0.) == jaxpr_text(jax, f(jax.lax), 0.)
  for case in [lambda lax, jnp: lax.rng_uniform(0., 1, (3,)),
               lambda lax, jnp: lax.rng_uniform(jnp.zeros(2), 1., (3,))]:
    assert_raises_same(lambda: case(lax, jnp), lambda: case(jax.lax, jax.numpy))
