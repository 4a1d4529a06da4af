"""jnp.vectorize (with signatures and excluded arguments), piecewise, apply_along_axis,
apply_over_axes, and jnp.ufunc objects / frompyfunc (call, reduce, accumulate, at,
reduceat, outer): values against NumPy and real JAX, jit, errors."""
import numpy as np
import pytest

import pyjax
import pyjax.numpy as pjnp
from jax_compare import check_both

a2 = np.random.default_rng(0).standard_normal((3, 5, 4)).astype(np.float32)
ENV = dict(a2=a2)


def test_vectorize_against_numpy():
  f = lambda a, b: a * 2 + b  # noqa: E731
  np.testing.assert_allclose(pjnp.vectorize(f)(np.ones((3, 1)), np.arange(4.)),
                             np.vectorize(f)(np.ones((3, 1)), np.arange(4.)))
  g = pjnp.vectorize(lambda m, v: m @ v, signature="(n,k),(k)->(n)")
  np.testing.assert_allclose(g(a2, np.ones(4, np.float32)), a2 @ np.ones(4), rtol=1e-5)
  h = pjnp.vectorize(lambda v: (pjnp.sum(v), pjnp.max(v)), signature="(n)->(),()")
  s, mx = h(a2)
  np.testing.assert_allclose(s, a2.sum(-1), rtol=1e-5)
  np.testing.assert_allclose(mx, a2.max(-1))
  with pytest.raises(ValueError, match="inconsistent size for core dimension"):
    g(a2, np.ones(3))
  with pytest.raises(TypeError, match="can only exclude integer or string"):
    pjnp.vectorize(f, excluded={1.5})
  jf = pyjax.jit(pjnp.vectorize(lambda a: pjnp.sum(a ** 2), signature="(n)->()"))
  np.testing.assert_allclose(jf(a2), (a2 ** 2).sum(-1), rtol=1e-5)


def test_piecewise_apply_against_numpy():
  x = np.linspace(-2, 2, 9)
  conds = [x < -1, x > 1]
  np.testing.assert_allclose(pjnp.piecewise(x, conds, [-1., 1., lambda v: v * 10]),
                             np.piecewise(x, conds, [-1., 1., lambda v: v * 10]), rtol=1e-6)
  np.testing.assert_allclose(pjnp.apply_along_axis(lambda v: v[::-1] * 2, 1, a2),
                             np.apply_along_axis(lambda v: v[::-1] * 2, 1, a2))
  np.testing.assert_allclose(pjnp.apply_along_axis(pjnp.sum, 2, a2),
                             np.apply_along_axis(np.sum, 2, a2), rtol=1e-5)
  np.testing.assert_allclose(pjnp.apply_over_axes(pjnp.sum, a2, [0, 2]),
                             np.apply_over_axes(np.sum, a2, [0, 2]), rtol=1e-5)


def test_ufunc_objects_against_numpy():
  add = pjnp.frompyfunc(lambda a, b: a + b, 2, 1, identity=0)
  assert add.nin == 2 and add.nout == 1 and add.identity == 0 and repr(add) == "<jnp.ufunc '<lambda>'>"
  np.testing.assert_allclose(add.reduce(a2, axis=1), np.add.reduce(a2, axis=1), rtol=1e-5)
  np.testing.assert_allclose(add.reduce(a2, axis=None), np.add.reduce(a2, axis=None), rtol=1e-4)
  np.testing.assert_allclose(add.accumulate(a2, axis=2), np.add.accumulate(a2, axis=2), rtol=1e-5)
  np.testing.assert_allclose(add.outer(np.arange(3.), np.arange(4.)), np.add.outer(np.arange(3.), np.arange(4.)))
  idx = np.array([0, 1, 1, 3])
  ref = np.zeros(5)
  np.add.at(ref, idx, np.array([1., 2, 3, 4]))
  np.testing.assert_allclose(add.at(np.zeros(5), idx, np.array([1., 2, 3, 4]), inplace=False), ref)
  np.testing.assert_allclose(add.reduceat(np.arange(8.), np.array([0, 4, 1, 5])),
                             np.add.reduceat(np.arange(8.), [0, 4, 1, 5]))
  with pytest.raises(NotImplementedError, match="immutable"):
    add.at(np.zeros(3), np.array([0]), np.ones(1))
  sub = pjnp.frompyfunc(lambda a, b: a - b, 2, 1)
  np.testing.assert_allclose(sub.reduce(np.arange(5.)), np.subtract.reduce(np.arange(5.)))
  with pytest.raises(ValueError, match="zero-size array to reduction operation"):
    sub.reduce(np.zeros((0, 2)))
  jitted = pyjax.jit(lambda a: (add.reduce(a, axis=0), add.accumulate(a, axis=1)))
  r, acc = jitted(a2)
  np.testing.assert_allclose(r, a2.sum(0), rtol=1e-5)
  np.testing.assert_allclose(acc, np.cumsum(a2, 1), rtol=1e-5)


CASES = [
    'jnp.vectorize(lambda a, b: a + b)(jnp.ones((3, 1)), jnp.arange(4.))',
    "jnp.vectorize(lambda a: jnp.sum(a), signature='(n)->()')(a2)",
    "jnp.vectorize(lambda a, b: a @ b, signature='(n,m),(m)->(n)')(a2, jnp.ones(4))",
    'jnp.vectorize(lambda a, b: (a + b, a - b))(jnp.ones(3), jnp.arange(3.))',
    'jnp.vectorize(lambda a, b, c: a * b + c, excluded={1})(jnp.ones(3), 2., jnp.arange(3.))',
    "jnp.vectorize(lambda a, b: a * b, excluded={'b'})(jnp.arange(3.), b=3.)",
    "jnp.vectorize(lambda a: a, signature='(n)->(n)')(jnp.ones(()))",
    "jnp.vectorize(lambda a, b: a @ b, signature='(n,m),(m)->(n)')(a2, jnp.ones(3))",
    "jnp.vectorize(lambda a: a[:2], signature='(n)->(n)')(a2)",
    "jnp.vectorize(lambda a: a, signature='(n)->(n')(a2)",
    'jnp.piecewise(jnp.linspace(-2, 2, 9), [jnp.linspace(-2, 2, 9) < 0, jnp.linspace(-2, 2, 9) >= 0], [lambda x: -x, lambda x: x**2])',
    'jnp.piecewise(jnp.linspace(-2, 2, 9), [jnp.linspace(-2, 2, 9) < -1, jnp.linspace(-2, 2, 9) > 1], [-1., 1., lambda x: x * 10])',
    'jnp.piecewise(jnp.arange(5), [jnp.arange(5) > 2], [7])',
    'jnp.piecewise(jnp.arange(5), [jnp.arange(5) > 2], [7, 1, 2])',
    'jnp.apply_along_axis(jnp.sum, 1, a2)',
    'jnp.apply_along_axis(lambda v: v[::-1] * 2, 0, a2)',
    'jnp.apply_along_axis(lambda v: jnp.outer(v, v), 2, a2[:2, :2])',
    'jnp.apply_over_axes(jnp.sum, a2, [0, 2])',
    'jnp.apply_over_axes(lambda a, ax: a * 2, a2, [0])',
    'jnp.frompyfunc(lambda a, b: a * b + 1, 2, 1)(jnp.arange(3.), 2.)',
    'jnp.frompyfunc(lambda a, b: a * b + 1, 2, 1).reduce(jnp.arange(1., 5.))',
    'jnp.frompyfunc(lambda a, b: a * b + 1, 2, 1).reduce(a2, axis=1)',
    'jnp.frompyfunc(lambda a, b: a * b + 1, 2, 1).reduce(a2, axis=None, keepdims=True)',
    'jnp.frompyfunc(lambda a, b: a + b, 2, 1, identity=0).reduce(a2, axis=2, where=a2 > 0)',
    'jnp.frompyfunc(lambda a, b: a + b, 2, 1).reduce(a2, axis=2, where=a2 > 0)',
    'jnp.frompyfunc(lambda a, b: a + b, 2, 1, identity=0).reduce(jnp.zeros((0, 3)))',
    'jnp.frompyfunc(lambda a, b: a + b, 2, 1).reduce(jnp.zeros((0, 3)))',
    'jnp.frompyfunc(lambda a, b: a * b + 1, 2, 1).accumulate(jnp.arange(1., 5.))',
    'jnp.frompyfunc(lambda a, b: a * b + 1, 2, 1).accumulate(a2, axis=1)',
    'jnp.frompyfunc(lambda a, b: a * 2 + b, 2, 1).at(jnp.zeros(4), jnp.array([0, 1, 1, 3]), jnp.array([1., 2, 3, 4]), inplace=False)',
    'jnp.frompyfunc(lambda a, b: a * 2 + b, 2, 1).at(jnp.zeros(4), jnp.array([0, 1, 1, 3]), jnp.array([1., 2, 3, 4]))',
    'jnp.frompyfunc(lambda a: a * 2 + 1, 1, 1).at(jnp.arange(4.), jnp.array([0, 0, 2]), inplace=False)',
    'jnp.frompyfunc(lambda a, b: a + b, 2, 1).reduceat(jnp.arange(8.), jnp.array([0, 4, 1, 5]))',
    'jnp.frompyfunc(lambda a, b: a + b, 2, 1).outer(jnp.arange(3.), jnp.arange(4.))',
    'jnp.frompyfunc(lambda a, b: a - b, 2, 1).outer(jnp.ones((2, 2)), jnp.arange(3.))',
    'jnp.frompyfunc(lambda a: a * 2, 1, 1).reduce(jnp.arange(3.))',
    'jnp.frompyfunc(lambda a: a * 2, 1, 1)',
    'jnp.frompyfunc(lambda a: a * 2, 1, 1).nin',
    'jit(lambda a: jnp.frompyfunc(lambda a, b: a * b + 1, 2, 1).reduce(a, axis=1))(a2)',
    'jit(lambda a: jnp.frompyfunc(lambda a, b: a * b + 1, 2, 1).accumulate(a, axis=0))(a2)',
]


@pytest.mark.parametrize("expr", CASES)
def test_against_jax(expr, jax):
  check_both(expr, ENV, jax, rtol=1e-5, atol=1e-5)
