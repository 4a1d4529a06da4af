"""pyjax.experimental.jet: Taylor coefficients against closed forms, nested jvp and JAX."""
import math

import numpy as np
import pytest

import pyjax
import pyjax.numpy as jnp
from pyjax import lax
from pyjax.experimental.jet import jet

X = np.array([0.3, 0.7, 1.2], np.float32)
W = np.arange(6, dtype=np.float32).reshape(3, 2) / 5


def _fns(jax, jnp, lax):
  return {
      "exp": jnp.exp, "log": jnp.log, "sin": jnp.sin, "cos": jnp.cos, "tanh": jnp.tanh,
      "logistic": jax.nn.sigmoid, "sqrt": jnp.sqrt, "rsqrt": lax.rsqrt,
      "pow": lambda x: x ** 2.5, "ipow": lambda x: x ** 3,
      "ipowneg": lambda x: lax.integer_pow(x, -2), "div": lambda x: 1 / (1 + x),
      "mul": lambda x: x * jnp.sin(x), "sub": lambda x: x - jnp.exp(x),
      "neg": lambda x: -x ** 2, "dot": lambda x: jnp.dot(x, W),
      "sum": lambda x: jnp.sum(x ** 2), "max": lambda x: jnp.max(x ** 2),
      "bcast": lambda x: jnp.broadcast_to(x, (2, 3)) * 2,
      "reshape": lambda x: jnp.reshape(x, (3, 1)) ** 2,
      "select": lambda x: jnp.where(x > 0.5, x ** 2, jnp.sin(x)),
      "sinh": jnp.sinh, "cosh": jnp.cosh, "erf": jax.scipy.special.erf,
      "atan2": lambda x: jnp.arctan2(x, 1 + x ** 2), "expm1": jnp.expm1,
      "log1p": jnp.log1p, "abs": lambda x: jnp.abs(x - 0.5),
      "maximum": lambda x: jnp.maximum(x, 0.6), "cumsum": jnp.cumsum,
      "cumprod": jnp.cumprod, "erfinv": lambda x: jax.scipy.special.erfinv(x / 2),
      "concat": lambda x: jnp.concatenate([x, x ** 2]),
      "slice": lambda x: x[1:] * x[:-1], "transpose": lambda x: jnp.outer(x, x).T,
      "square": jnp.square, "asinh": jnp.arcsinh, "atanh": lambda x: jnp.arctanh(x / 2),
      "jit": jax.jit(lambda x: jnp.tanh(x) * 3), "mean": jnp.mean,
  }


_SERIES = [1., 0.5, -0.3]


def _run(jet_fn, f):
  return jet_fn(f, (X,), ([np.full_like(X, t) for t in _SERIES],))


_FAST = {"exp", "log", "sin", "tanh", "logistic", "pow", "ipowneg", "div", "dot", "sum",
         "select", "rsqrt", "erfinv", "cumprod", "jit"}


@pytest.mark.parametrize("name", [n if n in _FAST else pytest.param(n, marks=pytest.mark.slow)
                                  for n in sorted(_fns(pyjax, jnp, lax))])
def test_matches_jax(name):
  jax = pytest.importorskip("jax")
  from jax.experimental.jet import jet as jjet
  f = _fns(pyjax, jnp, lax)[name]
  jf = _fns(jax, jax.numpy, jax.lax)[name]
  p, s = _run(jet, f)
  jp, js = _run(jjet, jf)
  np.testing.assert_allclose(p, jp, rtol=2e-5, atol=1e-6)
  assert len(s) == len(js) == 3
  for a, b in zip(s, js):
    np.testing.assert_allclose(a, b, rtol=2e-4, atol=1e-5)


def test_closed_forms():
  # exp along a unit direction: every derivative is exp(x)
  p, s = jet(jnp.exp, (X,), ([np.ones_like(X), np.zeros_like(X), np.zeros_like(X)],))
  for t in s:
    np.testing.assert_allclose(t, np.exp(X), rtol=1e-6)
  # sin(x^3) at 0.5 with h1 = 3x^2, h2 = 6x (Faa di Bruno)
  h0, h1, h2 = 0.5 ** 3, 3 * 0.5 ** 2, 6 * 0.5
  f0, (f1, f2) = jet(jnp.sin, (h0,), ((h1, h2),))
  np.testing.assert_allclose(f0, np.sin(h0), rtol=1e-6)
  np.testing.assert_allclose(f1, np.cos(h0) * h1, rtol=1e-6)
  np.testing.assert_allclose(f2, -np.sin(h0) * h1 ** 2 + np.cos(h0) * h2, rtol=1e-5)


def test_factorial_scaling():
  f = lambda x: jnp.sin(x) * jnp.exp(x)  # noqa: E731
  _, s1 = jet(f, (1.,), ((1., 0., 0.),))
  _, s2 = jet(f, (1.,), ((1., 0., 0.),), factorial_scaled=False)
  for k, (a, b) in enumerate(zip(s1, s2)):
    np.testing.assert_allclose(a, b * math.factorial(k + 1), rtol=1e-5)


def test_matches_nested_jvp():
  def f(x):
    return jnp.tanh(x) * jnp.log1p(x ** 2) / (1 + jnp.exp(-x))

  def d(f):
    return lambda x: pyjax.jvp(f, (x,), (jnp.ones_like(x),))[1]
  x = jnp.float32(0.7)
  _, s = jet(f, (x,), ((1., 0., 0., 0.),))
  g = f
  for k in range(4):
    g = d(g)
    np.testing.assert_allclose(s[k], g(x), rtol=2e-4)


def test_pytree_output_and_constants():
  p, s = jet(lambda x, y: {"a": x * y, "b": 2.}, (1., 3.), ((1., 0.), (0., 0.)))
  assert float(p["a"]) == 3. and float(p["b"]) == 2.
  np.testing.assert_allclose(s["a"], [3., 0.])
  np.testing.assert_allclose(s["b"], [0., 0.])
  p, s = jet(lambda x: (x > 0).astype(jnp.float32) + 1, (1.,), ((1.,),))
  assert float(p) == 2. and float(s[0]) == 0.


def test_custom_jvp_functions_use_their_definition():
  p, s = jet(pyjax.nn.relu, (0.5,), ((1., 0.5),))
  assert float(p) == 0.5
  np.testing.assert_allclose(s, [1., 0.5])


def test_errors():
  with pytest.raises(ValueError, match="jet terms have inconsistent lengths for different "
                     "arguments"):
    jet(lambda x, y: x, (1., 2.), ((1., 2.), (1.,)))
  with pytest.raises(ValueError, match="primal value at position 0 is not an array"):
    jet(lambda x: x, ((1., 2.),), ((1.,),))
  with pytest.raises(KeyError, match="reduce_prod") as e:
    jet(jnp.prod, (X,), ((X,),))
  assert isinstance(e.value, NotImplementedError)
