"""Collectives outside shard_map (lax/parallel.py): pbroadcast/pswapaxes/pcast/psend/precv/
ragged_all_to_all under vmap, and their errors."""
import numpy as np
import pytest

import pyjax
import pyjax.numpy as jnp
from pyjax import lax
from jax_compare import assert_raises_same, assert_same_tree, jaxpr_text, libraries

PY = (pyjax, jnp, lax)


# --- collectives ---------------------------------------------------------------------------
def _collective_prog(jax, jnp, lax):
  x = jnp.arange(9.).reshape(3, 3)
  return [jax.vmap(lambda x: lax.pswapaxes(x, "i", 0), axis_name="i")(x),
          jax.jit(jax.vmap(lambda x: lax.pswapaxes(x, "i", 0), axis_name="i"))(x),
          lax.pcast(x, (), to="foo")]


def test_collectives_match_jax(jax):
  assert_same_tree(_collective_prog(*PY), _collective_prog(*libraries(jax)))
  f = lambda jax, lax: jax.vmap(lambda x: lax.pswapaxes(x, "i", 0), axis_name="i")
  x = np.arange(9., dtype=np.float32).reshape(3, 3)
  assert jaxpr_text(pyjax, f(pyjax, lax), x) == jaxpr_text(jax, f(jax, jax.lax), x)
  ij = lambda jnp: jnp.array([0])
  cases = [
      lambda jax, jnp, lax: lax.pcast(x, "i", to="varying"),
      lambda jax, jnp, lax: lax.pcast(x, "i", to="reduced"),
      lambda jax, jnp, lax: lax.pcast(x, "i", to="unreduced"),
      lambda jax, jnp, lax: lax.pcast(x, {"i"}, to="varying"),
      lambda jax, jnp, lax: lax.psend(x, "i", [(0, 0)]),
      lambda jax, jnp, lax: lax.pswapaxes(x, "i", 0),
      lambda jax, jnp, lax: lax.ragged_all_to_all(x[0], jnp.zeros(4), ij(jnp), ij(jnp), ij(jnp),
                                                  ij(jnp), axis_name="i"),
      lambda jax, jnp, lax: jax.make_jaxpr(lambda x: lax.ragged_all_to_all(
          x, jnp.zeros(4), jnp.array([0.]), ij(jnp), ij(jnp), ij(jnp), axis_name="i"))(x[0]),
  ]
  for case in cases:
    assert_raises_same(lambda: case(pyjax, jnp, lax), lambda: case(jax, jax.numpy, jax.lax))
  with pytest.raises(ValueError, match="Got unexpected `to` value"):
    lax.pcast(x, "i", to="foo")


def test_pbroadcast_under_vmap():
  # JAX's vmap rule for pbroadcast is broken in 0.10.2 (TypeError); pyjax's gives every
  # member the source member's value
  x = jnp.arange(6.).reshape(3, 2)
  out = pyjax.vmap(lambda x: lax.pbroadcast(x, "i", 1), axis_name="i")(x)
  np.testing.assert_array_equal(out, [[2., 3.]] * 3)
  g = pyjax.grad(lambda x: (pyjax.vmap(lambda x: lax.pbroadcast(x, "i", 1), axis_name="i")(x)
                            * jnp.arange(3.)[:, None]).sum())(x)
  np.testing.assert_array_equal(g, [[0., 0.], [3., 3.], [0., 0.]])
  inner = pyjax.vmap(pyjax.vmap(lambda x: lax.pbroadcast(x, "i", 0), axis_name="i"))(
      jnp.arange(12.).reshape(2, 3, 2))
  np.testing.assert_array_equal(inner, np.repeat(np.arange(12.).reshape(2, 3, 2)[:, :1], 3, 1))
  with pytest.raises(NameError, match="unbound axis name: i"):
    lax.pbroadcast(x, "i", 0)


def _ragged_a2a_args():
  return (jnp.array([[1, 2, 2], [3, 4, 0]], jnp.float32), jnp.zeros((2, 4), jnp.float32),
          jnp.array([[0, 1], [0, 1]]), jnp.array([[1, 2], [1, 1]]),
          jnp.array([[0, 0], [1, 2]]), jnp.array([[1, 1], [2, 1]]))


def test_ragged_all_to_all_under_vmap():
  # the example of JAX's docstring (an axis of size 2); JAX itself raises under vmap
  f = lambda *a: lax.ragged_all_to_all(*a, axis_name="i")
  args = _ragged_a2a_args()
  out = pyjax.vmap(f, axis_name="i")(*args)
  np.testing.assert_array_equal(out, [[1, 3, 0, 0], [2, 2, 4, 0]])
  g_op, g_out = pyjax.grad(lambda op, o: pyjax.vmap(f, axis_name="i")(op, o, *args[2:]).sum(),
                           argnums=(0, 1))(*args[:2])
  np.testing.assert_array_equal(g_op, [[1, 1, 1], [1, 1, 0]])
  np.testing.assert_array_equal(g_out, [[0, 0, 1, 1], [0, 0, 0, 1]])
  ops = jnp.stack([args[0], args[0] * 10], 1)
  outs = jnp.stack([args[1], args[1]], 1)
  r = pyjax.vmap(pyjax.vmap(f, in_axes=(0, 0, None, None, None, None)), axis_name="i")(
      ops, outs, *args[2:])
  np.testing.assert_array_equal(r, [[[1, 3, 0, 0], [10, 30, 0, 0]],
                                    [[2, 2, 4, 0], [20, 20, 40, 0]]])
  jv = pyjax.jvp(lambda op: pyjax.vmap(f, axis_name="i")(op, *args[1:]), (args[0],),
                 (jnp.ones_like(args[0]),))[1]
  np.testing.assert_array_equal(jv, [[1, 1, 0, 0], [1, 1, 1, 0]])


def test_psend_precv_raise_clearly():
  x = jnp.ones(3)
  with pytest.raises(NotImplementedError, match="point-to-point"):
    pyjax.vmap(lambda x: lax.psend(x, "i", [(0, 1)]), axis_name="i")(jnp.ones((2, 3)))
  with pytest.raises(NotImplementedError, match="point-to-point"):
    pyjax.vmap(lambda x: lax.precv(lax.create_token(), pyjax.ShapeDtypeStruct((3,), np.float32),
                                   "i", [(0, 1)]), axis_name="i")(jnp.ones((2, 3)))
  with pytest.raises(NameError, match="please call precv under"):
    lax.precv(lax.create_token(), pyjax.ShapeDtypeStruct((3,), np.float32), "i", [(0, 0)])
  with pytest.raises(NameError, match="please call psend under"):
    lax.psend(x, "i", [(0, 0)])
