"""lax/shapes.py's split, stack, unstack and tile (and the array ``copy`` of lax/buffers.py,
which jnp.copy binds like them)

Programs are run with pyjax and with real JAX (``jax`` fixture) and compared: values,
dtypes, weak types, jaxpr text, exception classes and messages.  Known-answer tests
that need no JAX compare with NumPy or with recorded values.
"""
import numpy as np
import pytest

import pyjax
import pyjax.numpy as jnp
from pyjax import lax
from jax_compare import assert_raises_same, assert_same_tree, jaxpr_text, libraries

PY = (pyjax, jnp, lax)


# --- split / stack / unstack / tile / copy ------------------------------------------------
def _structural_prog(jax, jnp, lax):
  x = jnp.arange(12.).reshape(4, 3)
  return [lax.split(x, (1, 3)), lax.split(x, (1, 2), axis=-1), lax.split(x, (4,)),
          lax.stack([x, x * 2], axis=1), lax.stack([1., 2.]), lax.stack([x]),
          lax.unstack(x, axis=1), lax.unstack(np.arange(4.)),
          lax.tile(x, (2, 1)), lax.tile(x, (1, 0)), lax.tile(jnp.int8(3), ()),
          jax.grad(lambda x: lax.split(x, (1, 3))[1].sum())(x),
          jax.grad(lambda x: (lax.tile(x, (2, 3)) ** 2).sum())(x),
          jax.grad(lambda x: (lax.stack([x, x * 2], axis=1) ** 2).sum())(x),
          jax.grad(lambda x: (lax.unstack(x, axis=1)[0] ** 2).sum())(x),
          jax.vmap(lambda x: lax.split(x, (1, 2)))(x),
          jax.vmap(lambda x: lax.tile(x, (2,)), in_axes=1)(x),
          jax.vmap(lambda x, y: lax.stack([x, y]), in_axes=(0, None))(x, x[0]),
          jax.vmap(lambda x: lax.unstack(x), in_axes=1)(x),
          jax.jit(lambda x: lax.split(x, (2, 2)))(x),
          jax.jvp(lambda x: lax.tile(x, (1, 2)), (x,), (x,))[1]]


def test_structural_matches_jax(jax):
  assert_same_tree(_structural_prog(*PY), _structural_prog(*libraries(jax)))


@pytest.mark.parametrize("name", ["split", "split_grad", "split_vmap", "tile_grad", "tile_vmap",
                                  "stack_grad", "stack_vmap", "unstack_grad", "unstack_vmap",
                                  "copy", "copy_grad"])
def test_structural_jaxprs_match_jax(jax, name):
  def progs(jax, jnp, lax):
    return {
        "split": lambda x: lax.split(x, (1, 3)),
        "split_grad": jax.grad(lambda x: lax.split(x, (1, 3))[1].sum()),
        "split_vmap": jax.vmap(lambda x: lax.split(x, (1, 2))),
        "tile_grad": jax.grad(lambda x: lax.tile(x, (2, 1)).sum()),
        "tile_vmap": jax.vmap(lambda x: lax.tile(x, (2,))),
        "stack_grad": jax.grad(lambda x: lax.stack([x, x * 2], axis=1).sum()),
        "stack_vmap": jax.vmap(lambda x: lax.stack([x, x], axis=1)),
        "unstack_grad": jax.grad(lambda x: lax.unstack(x, axis=1)[0].sum()),
        "unstack_vmap": jax.vmap(lambda x: lax.unstack(x)),
        "copy": lambda x: lax.copy_p.bind(x),
        "copy_grad": jax.grad(lambda x: lax.copy_p.bind(x).sum()),
    }[name]
  x = np.arange(12., dtype=np.float32).reshape(4, 3)
  assert jaxpr_text(pyjax, progs(*PY), x) == jaxpr_text(jax, progs(*libraries(jax)), x)


@pytest.mark.parametrize("case", [
    lambda lax, jnp, x: lax.stack([x, x.astype(int)]),
    lambda lax, jnp, x: lax.stack([x, jnp.ones((3, 2))]),
    lambda lax, jnp, x: lax.stack([x, jnp.ones(3)]),
    lambda lax, jnp, x: lax.stack([]),
    lambda lax, jnp, x: lax.stack([x, x], axis=4),
    lambda lax, jnp, x: lax.unstack(jnp.float32(1)),
    lambda lax, jnp, x: lax.unstack(x, axis=2),
    lambda lax, jnp, x: lax.split(x, (1, 3)),
    lambda lax, jnp, x: lax.split(x, (3, -1)),
    lambda lax, jnp, x: lax.split(x, (1, 1), axis=3),
    lambda lax, jnp, x: lax.tile(x, (2,)),
])
def test_structural_errors_match_jax(jax, case):
  assert_raises_same(lambda: case(lax, jnp, jnp.ones((2, 3))),
                     lambda: case(jax.lax, jax.numpy, jax.numpy.ones((2, 3))))


def test_clearer_errors_than_jax():
  with pytest.raises(ValueError, match="tile reps must be nonnegative"):
    lax.tile(jnp.ones((2, 3)), (2, -1))   # JAX fails while compiling
  with pytest.raises(ValueError, match="unstack requires arrays with rank > 0"):
    lax.unstack_p.bind(jnp.float32(1), axis=0)   # JAX: IndexError from its dtype rule
  with pytest.raises(NotImplementedError, match="Unimplemented group_offset support"):
    lax.ragged_dot(jnp.ones((5, 3)), jnp.ones((2, 3, 4)), jnp.array([2, 3]),
                   group_offset=jnp.array([0]))   # JAX: TypeError (unhashable param)


def test_structural_against_numpy():
  rng = np.random.RandomState(0)
  x = rng.randn(3, 4, 5).astype(np.float32)
  for sizes, axis in [((1, 2), 0), ((0, 4), 1), ((2, 2, 1), 2)]:
    got = lax.split(x, sizes, axis=axis)
    want = np.split(x, np.cumsum(sizes)[:-1], axis=axis)
    assert [g.shape for g in got] == [w.shape for w in want]
    for g, w in zip(got, want):
      np.testing.assert_array_equal(g, w)
  np.testing.assert_array_equal(lax.tile(x, (2, 1, 3)), np.tile(x, (2, 1, 3)))
  np.testing.assert_array_equal(lax.stack([x, x + 1], axis=-1), np.stack([x, x + 1], -1))
  for a, b in zip(lax.unstack(x, axis=2), np.moveaxis(x, 2, 0)):
    np.testing.assert_array_equal(a, b)
  c = lax.copy_p.bind(jnp.asarray(x))
  np.testing.assert_array_equal(c, x)
  assert lax.split(jnp.ones(2, jnp.bfloat16), (1, 1))[0].dtype == jnp.bfloat16
  w = lax.stack([1., 2.])
  assert w.dtype == np.float32 and w.weak_type
