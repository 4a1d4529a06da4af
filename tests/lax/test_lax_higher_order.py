"""Higher-order lax functions (lax/higher_order.py): composite and platform_dependent."""
import numpy as np

import pyjax
import pyjax.numpy as jnp
from pyjax import lax
from jax_compare import assert_raises_same, assert_same_tree, jaxpr_text, libraries

PY = (pyjax, jnp, lax)


# --- composite --------------------------------------------------------------------------------
def _composite_prog(jax, jnp, lax):
  f = lax.composite(lambda x, *, k: lax.sin(x) * k, name="my.sin")
  g = lax.composite(lambda x, y: (x + y, x * 2), name="g", version=3)
  x = jnp.arange(3.)
  return [f(x, k=2.0), jax.jit(lambda x: f(x, k=3.0))(x), g(1., 2.), g(x, x)]


def test_composite_matches_jax(jax):
  assert_same_tree(_composite_prog(*PY), _composite_prog(*libraries(jax)), rtol=1e-6)
  progs = lambda jnp, lax: [
      (lambda x: lax.composite(lambda x, *, k: lax.sin(x) * k, name="my.sin")(x, k=2.0)),
      (lambda x: lax.composite(lambda x, y: (x + y, x * 2), name="g")(x, x)),
      (lambda x: lax.composite(lambda x, *, k, arr: x * k + arr, name="h", version=2)(
          x, k=2.0, arr=np.ones(3, np.float32))),
  ]
  x = np.arange(3., dtype=np.float32)
  for a, b in zip(progs(jnp, lax), progs(jax.numpy, jax.lax)):
    assert jaxpr_text(pyjax, a, x) == jaxpr_text(jax, b, x)
  f = lambda lax: lax.composite(lambda x: x * 2, name="t")
  assert_raises_same(lambda: pyjax.grad(f(lax))(1.), lambda: jax.grad(f(jax.lax))(1.))
  assert_raises_same(
      lambda: pyjax.make_jaxpr(lambda x: lax.composite(lambda x, *, k: x * k, name="t")(
          x, k=x))(1.),
      lambda: jax.make_jaxpr(lambda x: jax.lax.composite(
          lambda x, *, k: x * k, name="t")(x, k=x))(1.))


def test_composite_batches():
  # JAX has no batching rule for composite; pyjax batches the decomposition
  f = lax.composite(lambda x, y: x * y + 1, name="fma1")
  x = jnp.arange(6.).reshape(2, 3)
  np.testing.assert_allclose(pyjax.vmap(f, in_axes=(0, None))(x, 2.), np.asarray(x) * 2 + 1)
  j = str(pyjax.make_jaxpr(pyjax.vmap(f, in_axes=(0, None)))(x, 2.))
  assert "composite[" in j and "name=fma1" in j


# --- platform_dependent ----------------------------------------------------------------------
def _pd_prog(jax, jnp, lax):
  x = jnp.arange(3.)
  f = lambda x: lax.platform_dependent(x, cpu=lambda x: x * 2, default=lambda x: x + 1)
  h = lambda x: lax.platform_dependent(x, tpu=lambda x: x * 2, default=lambda x: x + 1)
  return [f(x), jax.jit(f)(x), h(x), jax.jit(h)(x), jax.grad(lambda x: jax.jit(f)(x).sum())(x),
          jax.vmap(jax.jit(h))(x)]


def test_platform_dependent_matches_jax(jax):
  assert_same_tree(_pd_prog(*PY), _pd_prog(*libraries(jax)))
  progs = lambda lax: [
      lambda x: lax.platform_dependent(x, cpu=lambda x: x * 2, default=lambda x: x + 1),
      lambda x: lax.platform_dependent(x, cpu=lambda x: x * 2),
      lambda x: lax.platform_dependent(x, cuda=lambda x: x, rocm=lambda x: x,
                                       default=lambda x: (x, x)[0] * 3)]
  x = np.arange(3., dtype=np.float32)
  for a, b in zip(progs(lax), progs(jax.lax)):
    assert jaxpr_text(pyjax, a, x) == jaxpr_text(jax, b, x)
  for case in [lambda lax: lax.platform_dependent(1., tpu=lambda x: x),
               lambda lax: lax.platform_dependent(1., gpu=lambda x: x),
               lambda lax: lax.platform_dependent(1., cpu=3),
               lambda lax: lax.platform_dependent(1., cpu=lambda x: x, default=3)]:
    assert_raises_same(lambda: case(lax), lambda: case(jax.lax))
