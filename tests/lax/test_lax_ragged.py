"""Ragged and scaled contractions (lax/ragged.py): ragged_dot / ragged_dot_general and
scaled_dot."""
import numpy as np

import pyjax
import pyjax.numpy as jnp
from pyjax import lax
from jax_compare import assert_raises_same, assert_same_tree, jaxpr_text, libraries

PY = (pyjax, jnp, lax)


# --- ragged_dot / ragged_dot_general ---------------------------------------------------------
def _ragged_reference(lhs, rhs, gs):
  out = np.zeros((lhs.shape[0], rhs.shape[2]), np.float64)
  start = 0
  for g, n in enumerate(gs):
    out[start:start + n] = lhs[start:start + n].astype(np.float64) @ rhs[g]
    start += n
  return out


def test_ragged_dot_against_numpy():
  rng = np.random.RandomState(0)
  lhs = rng.randn(9, 3).astype(np.float32)
  rhs = rng.randn(3, 3, 4).astype(np.float32)
  gs = np.array([2, 3, 1], np.int32)
  np.testing.assert_allclose(lax.ragged_dot(lhs, rhs, gs), _ragged_reference(lhs, rhs, gs),
                             rtol=1e-5, atol=1e-5)
  gl, gr = pyjax.grad(lambda a, b: (lax.ragged_dot(a, b, gs) ** 2).sum(), argnums=(0, 1))(
      lhs, rhs)
  out = _ragged_reference(lhs, rhs, gs)
  want_l = np.zeros_like(lhs, np.float64)
  want_r = np.zeros_like(rhs, np.float64)
  start = 0
  for g, n in enumerate(gs):
    want_l[start:start + n] = 2 * out[start:start + n] @ rhs[g].T
    want_r[g] = lhs[start:start + n].T.astype(np.float64) @ (2 * out[start:start + n])
    start += n
  np.testing.assert_allclose(gl, want_l, rtol=1e-4, atol=1e-4)
  np.testing.assert_allclose(gr, want_r, rtol=1e-4, atol=1e-4)


def _ragged_prog(jax, jnp, lax):
  rng = np.random.RandomState(0)
  lhs = jnp.array(rng.randn(7, 3).astype(np.float32))
  rhs = jnp.array(rng.randn(3, 3, 4).astype(np.float32))
  gs = jnp.array([2, 3, 1], jnp.int32)
  rdn = lax.RaggedDotDimensionNumbers((([1], [0]), ([], [])), [1], [])
  l2 = jnp.array(rng.randn(2, 5).astype(np.float32))
  r2 = jnp.array(rng.randn(5, 3).astype(np.float32))
  rdn3 = lax.RaggedDotDimensionNumbers((([2], [1]), ([0], [0])), [0], [])
  l3 = jnp.array(rng.randn(4, 2, 3).astype(np.float32))
  r3 = jnp.array(rng.randn(4, 3, 2).astype(np.float32))
  return [lax.ragged_dot(lhs, rhs, gs), jax.jit(lax.ragged_dot)(lhs, rhs, gs),
          jax.grad(lambda a, b: lax.ragged_dot(a, b, gs).sum(), argnums=(0, 1))(lhs, rhs),
          jax.jvp(lambda a, b: lax.ragged_dot(a, b, gs), (lhs, rhs), (lhs * 2, rhs))[1],
          jax.vmap(lax.ragged_dot)(jnp.stack([lhs, lhs * 2]), jnp.stack([rhs, -rhs]),
                                   jnp.stack([gs, jnp.array([1, 1, 4], jnp.int32)])),
          lax.ragged_dot_general(l2, r2, jnp.array([2, 3], jnp.int32), rdn),
          lax.ragged_dot_general(l3, r3, jnp.array([1, 3], jnp.int32), rdn3),
          lax.ragged_dot(lhs, rhs, gs, preferred_element_type=jnp.float32),
          lax.ragged_dot(lhs.astype(jnp.bfloat16), rhs.astype(jnp.bfloat16), gs)]


def test_ragged_dot_matches_jax(jax):
  assert_same_tree(_ragged_prog(*PY), _ragged_prog(*libraries(jax)), rtol=2e-2, atol=1e-5)
  f = lambda lax: (lambda a, b, g: lax.ragged_dot(a, b, g))
  args = (np.ones((5, 3), np.float32), np.ones((2, 3, 4), np.float32), np.array([2, 3], np.int32))
  assert jaxpr_text(pyjax, f(lax), *args) == jaxpr_text(jax, f(jax.lax), *args)
  rdn = lambda lax: lax.RaggedDotDimensionNumbers((([1], [1]), ([], [])), [0, 1], [0])
  c2 = lambda lax: lax.RaggedDotDimensionNumbers((([1], [0]), ([], [])), [1], [])
  cases = [lambda lax, jnp, a, b, g: lax.ragged_dot(a, b, jnp.array([1., 2.])),
           lambda lax, jnp, a, b, g: lax.ragged_dot(a, b, jnp.array([1, 2, 3])),
           lambda lax, jnp, a, b, g: lax.ragged_dot(a, b, jnp.int32(2)),
           lambda lax, jnp, a, b, g: lax.ragged_dot_general(a, b, g, rdn(lax))]
  for case in cases:
    assert_raises_same(lambda: case(lax, jnp, *map(jnp.asarray, args)),
                       lambda: case(jax.lax, jax.numpy, *map(jax.numpy.asarray, args)))
  l2, r2, g2 = np.ones((2, 5), np.float32), np.ones((5, 3), np.float32), np.array([2, 3],
                                                                                  np.int32)
  assert_raises_same(
      lambda: pyjax.grad(lambda a: lax.ragged_dot_general(a, r2, g2, c2(lax)).sum())(l2),
      lambda: jax.grad(lambda a: jax.lax.ragged_dot_general(a, r2, g2, c2(jax.lax)).sum())(l2))


def test_ragged_dot_vmap_of_unbatched_operand():
  # JAX raises NotImplementedError here; pyjax batches any operand at any position
  rng = np.random.RandomState(1)
  lhs = rng.randn(2, 7, 3).astype(np.float32)
  rhs = rng.randn(3, 3, 4).astype(np.float32)
  gs = np.array([2, 3, 1], np.int32)
  got = pyjax.vmap(lambda a: lax.ragged_dot(a, rhs, gs), in_axes=0)(lhs)
  for i in range(2):
    np.testing.assert_allclose(got[i], _ragged_reference(lhs[i], rhs, gs), rtol=1e-5,
                               atol=1e-5)


# --- scaled_dot ------------------------------------------------------------------------------
def _scaled_prog(jax, jnp, lax):
  rng = np.random.RandomState(2)
  lhs = jnp.arange(8.).reshape(2, 4).astype(jnp.float8_e4m3fn)
  rhs = jnp.arange(12.).reshape(4, 3).astype(jnp.float8_e4m3fn)
  ls = jnp.full((2, 2), 2.).astype(jnp.float8_e8m0fnu)
  rs = jnp.full((2, 3), 0.5).astype(jnp.float8_e8m0fnu)
  x3 = jnp.array(rng.randn(2, 3, 8).astype(np.float32))
  y3 = jnp.array(rng.randn(2, 8, 5).astype(np.float32))
  return [lax.scaled_dot(lhs, rhs, lhs_scale=ls, rhs_scale=rs), lax.scaled_dot(lhs, rhs),
          lax.scaled_dot(jnp.ones((2, 4)), jnp.ones((4, 3)), preferred_element_type=jnp.float32),
          lax.scaled_dot(x3, y3, lhs_scale=jnp.ones((2, 3, 2)).astype(jnp.float8_e8m0fnu) * 2,
                         preferred_element_type=jnp.float32),
          jax.vmap(lambda a, b: lax.scaled_dot(a, b, preferred_element_type=jnp.float32))(x3, y3)]


def test_scaled_dot_matches_jax(jax):
  assert_same_tree(_scaled_prog(*PY), _scaled_prog(*libraries(jax)), rtol=1e-6)
  f = lambda lax: (lambda a, b, c, d: lax.scaled_dot(a, b, lhs_scale=c, rhs_scale=d))
  import ml_dtypes
  args = (np.ones((2, 4), ml_dtypes.float8_e4m3fn), np.ones((4, 3), ml_dtypes.float8_e4m3fn),
          np.ones((2, 2), ml_dtypes.float8_e8m0fnu), np.ones((2, 3), ml_dtypes.float8_e8m0fnu))
  assert jaxpr_text(pyjax, f(lax), *args) == jaxpr_text(jax, f(jax.lax), *args)
  for case in [lambda lax, jnp: lax.scaled_dot(jnp.ones(4), jnp.ones(4)),
               lambda lax, jnp: lax.scaled_dot(jnp.ones((2, 4)), jnp.ones((4, 3)),
                                               lhs_scale=jnp.ones((2, 4))),
               lambda lax, jnp: lax.scaled_dot(jnp.ones((2, 4)), jnp.ones((4, 3)),
                                               lhs_scale=jnp.ones((2, 3))),
               lambda lax, jnp: lax.scaled_dot(jnp.ones((2, 4)), jnp.ones((5, 3)))]:
    assert_raises_same(lambda: case(lax, jnp), lambda: case(jax.lax, jax.numpy))
