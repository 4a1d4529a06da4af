"""chex: asserts (static and under jit via chexify), chex.dataclass as a pytree through
jit/grad, assert_max_traces, dimensions (plain JAX code; prints RESULT <json>)."""
import json

import chex
import jax
import jax.numpy as jnp
import numpy as np

result = {}


def raised(fn):
  try:
    fn()
  except AssertionError as e:
    return "AssertionError: " + str(e).splitlines()[0][:80]
  return "ok"


x = jnp.ones((2, 3), jnp.float32)
result["assert_shape_ok"] = raised(lambda: chex.assert_shape(x, (2, 3)))
result["assert_shape_bad"] = raised(lambda: chex.assert_shape(x, (3, 2)))
result["assert_rank"] = raised(lambda: chex.assert_rank([x, x[0]], [2, 1]))
result["assert_type_bad"] = raised(lambda: chex.assert_type(x, jnp.int32))
result["assert_trees_all_close"] = raised(
    lambda: chex.assert_trees_all_close({"a": x}, {"a": x + 1e-7}))
result["assert_trees_all_close_bad"] = raised(
    lambda: chex.assert_trees_all_close({"a": x}, {"a": x + 1.0}))
result["assert_tree_all_finite_bad"] = raised(
    lambda: chex.assert_tree_all_finite({"a": jnp.array([1.0, jnp.nan])}))
result["assert_equal_shape"] = raised(lambda: chex.assert_equal_shape([x, x]))
result["assert_trees_all_equal_structs"] = raised(
    lambda: chex.assert_trees_all_equal_structs({"a": 1, "b": 2}, {"a": 3, "b": 4}))


@chex.dataclass
class Params:
  w: chex.Array
  b: chex.Array


p = Params(w=jnp.arange(3.0), b=jnp.array(1.0))
loss = lambda p: jnp.sum(p.w ** 2) + p.b ** 2
g = jax.jit(jax.grad(loss))(p)
result["dataclass_grad"] = {"w": np.asarray(g.w).tolist(), "b": float(g.b)}
result["dataclass_replace"] = float(jnp.sum(p.replace(b=jnp.array(5.0)).b))
result["dataclass_leaves"] = len(jax.tree_util.tree_leaves(p))
result["dataclass_map"] = np.asarray(jax.tree.map(lambda a: a * 2, p).w).tolist()

traces = []


@jax.jit
@chex.assert_max_traces(n=1)
def f(a):
  traces.append(1)
  return a * 2


f(jnp.ones(3))
f(jnp.ones(3) * 2)
result["max_traces_ok"] = len(traces)
result["max_traces_bad"] = raised(lambda: f(jnp.ones(4)))


@chex.chexify
@jax.jit
def checked(a):
  chex.assert_tree_all_finite(a)
  return jnp.sum(a)


result["chexify_ok"] = float(checked(jnp.ones(3)))
try:
  checked(jnp.array([1.0, jnp.inf]))
  chex.block_until_chexify_assertions_complete()
  result["chexify_bad"] = "no error"
except AssertionError as e:
  result["chexify_bad"] = "AssertionError" if "finite" in str(e).lower() else str(e)[:80]

dims = chex.Dimensions(B=2, T=5)
result["dimensions"] = list(dims["BT"])
print("RESULT " + json.dumps(result))
