"""Closed-over constants in make_jaxpr: the order of the constvars and of
``make_jaxpr(f)(...).consts`` against real JAX, for functions closing over several Arrays,
through nested ``jit``, control flow, ``custom_jvp``/``custom_vjp`` (``num_consts`` is
printed when non-zero, as JAX) and jax.numpy functions that JAX runs as an inner ``jit``
(their Array arguments become constvars in argument order)."""
import types

import numpy as np
import pytest

import pyjax
import pyjax.numpy as jnp


def _programs(M):
  """name -> (f, closed-over consts) built from one namespace (pyjax's or JAX's)."""
  a, b, c, d = (M.jnp.full((3,), float(i)) for i in range(4))

  @M.custom_jvp
  def cj(y):
    return M.jnp.sin(y) * b

  cj.defjvp(lambda p, t: (cj(p[0]), t[0] * a))

  @M.custom_vjp
  def cv(y):
    return y * c

  cv.defvjp(lambda y: (y * c, y), lambda r, g: (g * a,))
  inner = M.jit(lambda y: y * b + a)
  return {
      "use_order": lambda x: x * c + b - a,
      "nested_jit": lambda x: inner(x) + c,
      "jit_twice": lambda x: M.jit(lambda z: z * d + c)(x) + M.jit(lambda z: z * b + d)(x) + a,
      "custom_jvp": lambda x: cj(x) + c,
      "custom_vjp": lambda x: cv(x) + b,
      "cond": lambda x: M.lax.cond(x[0] > 0, lambda z: z * c + a, lambda z: z + b * a, x),
      "scan": lambda x: M.lax.scan(lambda cr, xs: (cr * d + xs * a, cr + b), x,
                                   M.jnp.stack([x, x])),
      "numpy_and_array": lambda x: x * np.full(3, 7, np.float32) + a,
      "where_args": lambda x: M.jnp.where(x > a, b, c),
      "clip_args": lambda x: M.jnp.clip(x, c, b),
  }


def _summary(closed):
  return ([str(v.aval) for v in closed.jaxpr.constvars],
          [np.asarray(k).tolist() for k in closed.consts])


@pytest.mark.parametrize("name", sorted(_programs(types.SimpleNamespace(
    jit=pyjax.jit, jnp=jnp, lax=pyjax.lax, custom_jvp=pyjax.custom_jvp,
    custom_vjp=pyjax.custom_vjp))))
def test_consts_order_matches_jax(name):
  jax = pytest.importorskip("jax")
  J = types.SimpleNamespace(jit=jax.jit, jnp=jax.numpy, lax=jax.lax, custom_jvp=jax.custom_jvp,
                            custom_vjp=jax.custom_vjp)
  P = types.SimpleNamespace(jit=pyjax.jit, jnp=jnp, lax=pyjax.lax, custom_jvp=pyjax.custom_jvp,
                            custom_vjp=pyjax.custom_vjp)
  x = np.full(3, 0.5, np.float32)
  want = jax.make_jaxpr(_programs(J)[name])(x)
  got = pyjax.make_jaxpr(_programs(P)[name])(x)
  assert _summary(got) == _summary(want)
  if name not in ("where_args", "clip_args"):  # JAX prints those as inner jit equations
    assert str(got) == str(want)


def test_where_consts_in_argument_order_without_jax():
  """jnp.where(p, b, c) selects with select_n(p, c, b); the constvars still follow the
  arguments (b, then c), as JAX's jitted where binds them."""
  b, c = jnp.full((3,), 1.0), jnp.full((3,), 2.0)
  closed = pyjax.make_jaxpr(lambda x: jnp.where(x > 0, b, c))(np.ones(3, np.float32))
  assert [np.asarray(k).tolist() for k in closed.consts] == [[1.0] * 3, [2.0] * 3]
