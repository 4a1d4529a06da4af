"""Placement primitives (lax/sharding.py): with_sharding_constraint and the traced
device_put."""
import numpy as np

import pyjax
import pyjax.numpy as jnp
from pyjax import lax
from pyjax._src.runtime.array import SingleDeviceSharding
from jax_compare import assert_raises_same, assert_same_tree, jaxpr_text, libraries

PY = (pyjax, jnp, lax)


# --- sharding / device_put -----------------------------------------------------------------
def _sharding_prog(jax, jnp, lax, s):
  x = jnp.arange(12.).reshape(4, 3)
  return [lax.with_sharding_constraint(x, s), lax.with_sharding_constraint((x, 2 * x), s),
          jax.jit(lambda x: lax.with_sharding_constraint(x, s) * 2)(x),
          jax.grad(lambda x: (lax.with_sharding_constraint(x, s) ** 2).sum())(x),
          jax.vmap(lambda x: lax.with_sharding_constraint(x, s))(x),
          lax.with_sharding_constraint(2., s)]


def test_sharding_constraint_matches_jax(jax):
  js = jax.sharding.SingleDeviceSharding(jax.devices()[0])
  s = SingleDeviceSharding(pyjax.devices()[0])
  assert_same_tree(_sharding_prog(*PY, s), _sharding_prog(*libraries(jax), js))
  progs = lambda jax, lax, s: [
      jax.grad(lambda x: lax.with_sharding_constraint(x, s).sum()),
      jax.vmap(lambda x: lax.with_sharding_constraint(x, s))]
  x = np.ones((4, 3), np.float32)
  for a, b in zip(progs(pyjax, lax, s), progs(jax, jax.lax, js)):
    assert jaxpr_text(pyjax, a, x) == jaxpr_text(jax, b, x)
  for case in [lambda lax, s: lax.with_sharding_constraint(x, "foo"),
               lambda lax, s: lax.with_sharding_constraint(x, None),
               lambda lax, s: lax.with_sharding_constraint((x, x), (s, s, s)),
               lambda lax, s: lax.with_sharding_constraint((x, x), (s, None))]:
    assert_raises_same(lambda: case(lax, s), lambda: case(jax.lax, js))


def test_device_put_primitive():
  from pyjax._src.lax import sharding as lax_sharding
  dev = pyjax.devices()[0]
  x = jnp.arange(3.)
  cs = (lax_sharding.ArrayCopySemantics.REUSE_INPUT,)
  f = lambda x: lax_sharding.bind_device_put([x], [dev], [None], cs)[0]
  j = str(pyjax.make_jaxpr(f)(x))
  assert "device_put[" in j and "copy_semantics=(ArrayCopySemantics.REUSE_INPUT,)" in j
  assert "devices=(CpuDevice(id=0),)" in j
  g = str(pyjax.make_jaxpr(pyjax.grad(lambda x: f(x).sum()))(x))
  assert "copy_semantics=(ArrayCopySemantics.ALWAYS_COPY,)" in g and "srcs=(CpuDevice(id=0),)" in g
  np.testing.assert_array_equal(pyjax.grad(lambda x: (f(x) ** 2).sum())(x), 2 * np.arange(3.))
  np.testing.assert_array_equal(pyjax.vmap(f)(jnp.ones((2, 3))), np.ones((2, 3)))
  np.testing.assert_array_equal(pyjax.jit(f)(x), x)
  y = f(x)
  assert y.committed if hasattr(y, "committed") else True
  np.testing.assert_array_equal(y, x)
