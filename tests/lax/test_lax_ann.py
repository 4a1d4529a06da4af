"""Approximate top-k (lax/ann.py): approx_max_k / approx_min_k, aggregated and not."""
import numpy as np
import pytest

import pyjax
import pyjax.numpy as jnp
from pyjax import lax
from jax_compare import assert_raises_same, assert_same_tree, jaxpr_text, libraries

PY = (pyjax, jnp, lax)


# --- approx_max_k / approx_min_k --------------------------------------------------------------
def _ann_prog(jax, jnp, lax):
  x = jnp.arange(12.).reshape(3, 4)
  y = jnp.array([[1., 3., 3., 2., np.nan, -np.inf, 0.]])
  return [lax.approx_max_k(x, 2), lax.approx_min_k(x, 2, reduction_dimension=0),
          lax.approx_max_k(y, 3), lax.approx_max_k(y[:, :4], 2, aggregate_to_topk=False),
          lax.approx_max_k(jnp.array([0., -0., 0.]), 2),
          lax.approx_max_k(jnp.array([-0., 0., -0.]), 2),
          lax.approx_max_k(jnp.ones(3, jnp.bfloat16), 2),
          jax.jit(lambda x: lax.approx_min_k(x, 2))(jnp.array([3., 1., 2.])),
          jax.grad(lambda x: (lax.approx_max_k(x, 2)[0] ** 2).sum())(x),
          jax.vmap(lambda x: lax.approx_min_k(x, 1), in_axes=1)(x)]


def test_approx_top_k_matches_jax(jax):
  assert_same_tree(_ann_prog(*PY), _ann_prog(*libraries(jax)))
  assert isinstance(lax.approx_max_k(jnp.ones(3), 1), list)
  f = lambda lax: (lambda x: lax.approx_max_k(x, 2))
  x = np.arange(12., dtype=np.float32).reshape(3, 4)
  assert jaxpr_text(pyjax, f(lax), x) == jaxpr_text(jax, f(jax.lax), x)
  g = lambda jax, lax: jax.vmap(lambda x: lax.approx_max_k(x, 2))
  assert jaxpr_text(pyjax, g(pyjax, lax), x) == jaxpr_text(jax, g(jax, jax.lax), x)
  for args in [(jnp.arange(3), 1), (jnp.ones(3), 0), (jnp.ones(3), 4), (jnp.float32(1), 1)]:
    jargs = (jax.numpy.asarray(np.asarray(args[0])), args[1])
    assert_raises_same(lambda: lax.approx_max_k(*args), lambda: jax.lax.approx_max_k(*jargs))


@pytest.mark.parametrize("shape,k,recall,axis", [
    ((1, 2000), 2, 0.95, -1), ((2000,), 2, 0.95, 0), ((2000,), 1, 0.95, 0),
    ((1, 2000), 2, 0.5, -1), ((20, 100), 2, 0.95, 0), ((3, 5000), 10, 0.9, 1),
    ((3, 50000), 3, 0.99, 1), ((70000,), 5, 0.95, 0)])
def test_approx_top_k_unaggregated_sizes_match_jax(jax, shape, k, recall, axis):
  x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
  ours = lax.approx_max_k(x, k, recall_target=recall, reduction_dimension=axis,
                          aggregate_to_topk=False)
  theirs = jax.lax.approx_max_k(x, k, recall_target=recall, reduction_dimension=axis,
                                aggregate_to_topk=False)
  assert_same_tree(ours, theirs)


def test_approx_top_k_is_exact_against_numpy():
  rng = np.random.RandomState(3)
  x = rng.randn(5, 40).astype(np.float32)
  vals, idx = lax.approx_min_k(x, 7)
  want = np.sort(x, axis=1)[:, :7]
  np.testing.assert_array_equal(vals, want)
  np.testing.assert_array_equal(np.take_along_axis(x, np.asarray(idx), 1), want)
  vals, idx = lax.approx_max_k(x, 3, reduction_dimension=0)
  np.testing.assert_array_equal(vals, -np.sort(-x, axis=0)[:3])
