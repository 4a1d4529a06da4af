"""pyjax.custom_batching: custom_vmap and sequential_vmap (against NumPy and real JAX)."""
import numpy as np
import pytest

import pyjax
import pyjax.numpy as jnp
from pyjax import custom_batching


def _make(calls=None):
  @custom_batching.custom_vmap
  def f(x, y):
    return jnp.sin(x) * y

  @f.def_vmap
  def rule(axis_size, in_batched, xs, ys):
    if calls is not None:
      calls.append((axis_size, list(in_batched), np.shape(xs), np.shape(ys)))
    return jnp.cos(xs) * ys, any(in_batched)
  return f


def test_unbatched_calls_function():
  f = _make()
  np.testing.assert_allclose(f(1., 2.), np.sin(1.) * 2, rtol=1e-6)
  np.testing.assert_allclose(pyjax.jit(f)(1., 2.), np.sin(1.) * 2, rtol=1e-6)


def test_vmap_uses_rule():
  calls = []
  f = _make(calls)
  x = jnp.arange(3.)
  np.testing.assert_allclose(pyjax.vmap(f)(x, jnp.ones(3)), np.cos(np.arange(3.)), rtol=1e-6)
  assert calls[-1] == (3, [True, True], (3,), (3,))
  np.testing.assert_allclose(pyjax.vmap(f, in_axes=(0, None))(x, 2.),
                             2 * np.cos(np.arange(3.)), rtol=1e-6)
  assert calls[-1] == (3, [True, False], (3,), ())
  out = pyjax.vmap(f, in_axes=(1, 1), out_axes=1)(jnp.ones((2, 3)), jnp.ones((2, 3)))
  assert out.shape == (2, 3)
  np.testing.assert_allclose(out, np.full((2, 3), np.cos(1.)), rtol=1e-6)


def test_jit_and_nested_vmap():
  calls = []
  f = _make(calls)
  out = pyjax.jit(pyjax.vmap(f))(jnp.arange(3.), jnp.ones(3))
  np.testing.assert_allclose(out, np.cos(np.arange(3.)), rtol=1e-6)
  out = pyjax.vmap(pyjax.vmap(f))(jnp.ones((2, 3)), jnp.ones((2, 3)))
  np.testing.assert_allclose(out, np.full((2, 3), np.cos(1.)), rtol=1e-6)  # as JAX
  out = pyjax.vmap(pyjax.jit(f))(jnp.arange(3.), jnp.ones(3))
  np.testing.assert_allclose(out, np.cos(np.arange(3.)), rtol=1e-6)


def test_jvp():
  f = _make()
  p, t = pyjax.jvp(f, (1., 2.), (1., 0.))
  np.testing.assert_allclose([p, t], [np.sin(1.) * 2, np.cos(1.) * 2], rtol=1e-6)
  x = jnp.arange(3.)
  p, t = pyjax.jvp(pyjax.vmap(f), (x, jnp.ones(3)), (jnp.ones(3), jnp.zeros(3)))
  np.testing.assert_allclose(p, np.cos(np.arange(3.)), rtol=1e-6)
  np.testing.assert_allclose(t, -np.sin(np.arange(3.)), rtol=1e-6, atol=1e-7)
  calls = []
  f = _make(calls)
  p, t = pyjax.vmap(lambda x, y: pyjax.jvp(f, (x, y), (1., 0.)))(x, jnp.ones(3))
  np.testing.assert_allclose(p, np.cos(np.arange(3.)), rtol=1e-6)
  np.testing.assert_allclose(t, -np.sin(np.arange(3.)), rtol=1e-6, atol=1e-7)
  assert calls[-1] == (3, [False, False], (), ())   # as JAX: mutually batched dims only


def test_jacfwd_and_hessian():
  @custom_batching.custom_vmap
  def f(x, n):
    return x * n

  @f.def_vmap
  def rule(size, in_batched, x, n):
    return x * n + 1, any(in_batched)
  np.testing.assert_allclose(pyjax.jacfwd(pyjax.vmap(lambda x: f(x, 3)))(jnp.arange(3.)),
                             3 * np.eye(3))
  np.testing.assert_allclose(pyjax.jit(pyjax.vmap(pyjax.jacfwd(lambda x: f(x, 3))))(
      jnp.arange(3.)), [3., 3., 3.])
  np.testing.assert_allclose(
      pyjax.hessian(lambda x: pyjax.vmap(lambda x: f(x, 3))(x).sum())(jnp.arange(3.)),
      np.zeros((3, 3)))


def test_grad():
  f = _make()
  with pytest.raises(ValueError, match="Linearization failed to produce known values"):
    pyjax.grad(f)(1., 2.)
  g = pyjax.grad(lambda x: pyjax.vmap(f)(x, jnp.ones(3)).sum())(jnp.arange(3.))
  np.testing.assert_allclose(g, -np.sin(np.arange(3.)), rtol=1e-6, atol=1e-7)


def test_custom_vjp_outside():
  @pyjax.custom_vjp
  @custom_batching.custom_vmap
  def f(x, y):
    return jnp.sin(x) * y

  @f.def_vmap
  def f_vmap_rule(axis_size, in_batched, xs, ys):
    return jnp.cos(xs) * ys, True

  f.defvjp(lambda x, y: (f(x, y), (jnp.cos(x), jnp.sin(x), y)),
           lambda res, g: (res[0] * g * res[2], res[1] * g))
  np.testing.assert_allclose(pyjax.vmap(f)(jnp.zeros(3), jnp.ones(3)), np.ones(3))
  assert float(pyjax.grad(f)(jnp.zeros(()), jnp.ones(()))) == 1.0


def test_rule_errors():
  @custom_batching.custom_vmap
  def h(x):
    return x
  with pytest.raises(AttributeError, match="No batching rule defined for custom_vmap "
                     "function h using def_vmap."):
    pyjax.vmap(h)(jnp.ones(3))

  @h.def_vmap
  def hr(n, b, x):
    return (x, x), True
  with pytest.raises(ValueError, match=r"structure of output value and output batching "
                     r"specification returned by custom vmap rule \(hr\) do not match."):
    pyjax.vmap(h)(jnp.ones(3))

  @custom_batching.custom_vmap
  def h3(x):
    return x

  @h3.def_vmap
  def hr3(n, b, x):
    return (x, x), (True, True)
  with pytest.raises(ValueError, match=r"structure of output returned by custom vmap rule "
                     r"\(hr3\) does not match that of original custom-vmapped function."):
    pyjax.vmap(h3)(jnp.ones(3))


def test_pytree_args_and_kwargs():
  @custom_batching.custom_vmap
  def f(d, scale=2.0):
    return {"s": d["a"] * scale + d["b"]}

  seen = []

  @f.def_vmap
  def rule(n, in_batched, d, scale):
    seen.append(in_batched)
    return {"s": d["a"] * scale - d["b"]}, {"s": True}
  d = {"a": jnp.arange(3.), "b": jnp.ones(3)}
  np.testing.assert_allclose(f({"a": 1., "b": 1.})["s"], 3.0)
  out = pyjax.vmap(lambda d: f(d, scale=3.0))(d)
  np.testing.assert_allclose(out["s"], np.arange(3.) * 3 - 1)
  assert seen[-1] == [{"a": True, "b": True}, False]


def test_sequential_vmap():
  calls = []

  @custom_batching.sequential_vmap
  def g(x, y):
    calls.append(np.shape(x))
    return x * 2 + y
  x = jnp.arange(3.)
  np.testing.assert_allclose(pyjax.vmap(g)(x, jnp.ones(3)), np.arange(3.) * 2 + 1)
  np.testing.assert_allclose(pyjax.vmap(g, in_axes=(0, None))(x, 1.), np.arange(3.) * 2 + 1)
  assert calls[-1] == ()   # the body is traced per element
  jaxpr = str(pyjax.make_jaxpr(pyjax.vmap(g))(x, jnp.ones(3)))
  assert "scan[" in jaxpr and "custom_vmap_call[" in jaxpr
  np.testing.assert_allclose(pyjax.jit(pyjax.vmap(g))(x, jnp.ones(3)), np.arange(3.) * 2 + 1)


def test_jaxpr_matches_jax():
  jax = pytest.importorskip("jax")
  import jax.numpy as jjnp

  def build(cb, np_):
    @cb.custom_vmap
    def f(x, y):
      return np_.sin(x) * y

    @f.def_vmap
    def rule(axis_size, in_batched, xs, ys):
      return np_.cos(xs) * ys, True
    return f
  f1, f2 = build(jax.custom_batching, jjnp), build(custom_batching, jnp)
  assert str(jax.make_jaxpr(f1)(1., 2.)) == str(pyjax.make_jaxpr(f2)(1., 2.))
  x = np.linspace(0, 1, 4, dtype=np.float32)
  np.testing.assert_allclose(pyjax.vmap(f2)(x, x), jax.vmap(f1)(x, x), rtol=1e-6)
  a = pyjax.jvp(pyjax.vmap(f2), (x, x), (x, x))
  b = jax.jvp(jax.vmap(f1), (x, x), (x, x))
  np.testing.assert_allclose(a, b, rtol=1e-6)


def test_jvp_with_integer_argument():
  @custom_batching.custom_vmap
  def f(x, n):
    return x * n

  @f.def_vmap
  def rule(size, in_batched, x, n):
    return x * n + 1, any(in_batched)
  p, t = pyjax.jvp(lambda x: f(x, jnp.int32(3)), (2.,), (1.,))
  assert (float(p), float(t)) == (6., 3.)
  p, t = pyjax.vmap(lambda x, n: pyjax.jvp(lambda x: f(x, n), (x,), (1.,)))(
      jnp.arange(3.), jnp.array([1, 2, 3]))
  np.testing.assert_allclose(p, np.arange(3.) * [1, 2, 3] + 1)
  np.testing.assert_allclose(t, [1., 2., 3.])
