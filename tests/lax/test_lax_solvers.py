"""Implicitly differentiated solvers (lax/solvers.py): custom_linear_solve and custom_root."""
import numpy as np

import pyjax
import pyjax.numpy as jnp
from pyjax import lax
from jax_compare import assert_raises_same, assert_same_tree, libraries

PY = (pyjax, jnp, lax)


# --- custom_linear_solve / custom_root --------------------------------------------------------
def _solve(jax, jnp):
  return lambda mv, b: jnp.linalg.solve(jax.jacfwd(mv)(b), b)


def _linear_solve_prog(jax, jnp, lax):
  A = jnp.array([[3., 1.], [1., 2.]])
  b = jnp.array([1., 2.])
  solve = _solve(jax, jnp)

  def ls(A, b, sym=False):
    mv = lambda x: A @ x
    if sym:
      return lax.custom_linear_solve(mv, b, solve, symmetric=True)
    return lax.custom_linear_solve(mv, b, solve, solve)

  Bs = jnp.stack([b, 2 * b, -b])
  As = jnp.stack([A, A + 1, A * 2])
  tree_b = {"u": b, "v": jnp.array(3.)}
  tree_solve = lambda mv, b: jax.tree_util.tree_map(lambda t: t / 2, b)
  return [ls(A, b), jax.jit(ls)(A, b),
          jax.grad(lambda A, b: (ls(A, b) ** 2).sum(), argnums=(0, 1))(A, b),
          jax.jacfwd(ls, argnums=(0, 1))(A, b),
          jax.jacrev(lambda A, b: ls(A, b, True), argnums=(0, 1))(A, b),
          jax.vmap(ls, in_axes=(None, 0))(A, Bs), jax.vmap(ls, in_axes=(0, None))(As, b),
          jax.vmap(jax.grad(lambda A, b: ls(A, b).sum()))(As, Bs),
          lax.custom_linear_solve(lambda t: jax.tree_util.tree_map(lambda v: 2 * v, t),
                                  tree_b, tree_solve, tree_solve),
          jax.grad(lambda b: lax.custom_linear_solve(
              lambda t: jax.tree_util.tree_map(lambda v: 2 * v, t), b, tree_solve,
              symmetric=True)["u"].sum())(tree_b)]


def test_custom_linear_solve_matches_jax(jax):
  assert_same_tree(_linear_solve_prog(*PY), _linear_solve_prog(*libraries(jax)), rtol=1e-5,
                   atol=1e-6)


def test_custom_linear_solve_against_numpy():
  A = np.array([[4., 1., 0.], [1., 3., 1.], [0., 1., 2.]])
  b = np.array([1., -2., 3.])
  solve = _solve(pyjax, jnp)
  f = lambda A, b: lax.custom_linear_solve(lambda x: A @ x, b, solve, solve)
  np.testing.assert_allclose(f(A, b), np.linalg.solve(A, b), rtol=1e-5)
  gA, gb = pyjax.grad(lambda A, b: f(A, b).sum(), argnums=(0, 1))(A, b)
  x = np.linalg.solve(A, b)
  lam = np.linalg.solve(A.T, np.ones(3))
  np.testing.assert_allclose(gb, lam, rtol=1e-5)
  np.testing.assert_allclose(gA, -np.outer(lam, x), rtol=1e-5, atol=1e-6)
  j = str(pyjax.make_jaxpr(f)(A, b))
  assert "custom_linear_solve[" in j and "const_lengths=_LinearSolveTuple(" in j


def test_custom_linear_solve_errors_match_jax(jax):
  for case in [
      lambda jax, lax, A, b: lax.custom_linear_solve(lambda x: (x, x), b, _solve(jax, jax.numpy)),
      lambda jax, lax, A, b: lax.custom_linear_solve(lambda x: A @ x, b, lambda mv, b: b[:1]),
      lambda jax, lax, A, b: jax.grad(lambda b: lax.custom_linear_solve(
          lambda x: A @ x, b, _solve(jax, jax.numpy)).sum())(b),
      lambda jax, lax, A, b: lax.custom_linear_solve(lambda x: A @ x, b, lambda mv, b: (b, b),
                                                     has_aux=False),
  ]:
    assert_raises_same(lambda: case(pyjax, lax, jnp.eye(2), jnp.ones(2)),
                       lambda: case(jax, jax.lax, jax.numpy.eye(2), jax.numpy.ones(2)))


def test_custom_linear_solve_has_aux(jax):
  def prog(jax, jnp, lax):
    A = jnp.array([[3., 1.], [1., 2.]])
    solve = _solve(jax, jnp)
    s_aux = lambda mv, b: (solve(mv, b), jnp.float32(3.))
    b = jnp.array([1., 2.])
    x, aux = lax.custom_linear_solve(lambda x: A @ x, b, s_aux, s_aux, has_aux=True)
    g = jax.grad(lambda b: lax.custom_linear_solve(lambda x: A @ x, b, s_aux, s_aux,
                                                   has_aux=True)[0].sum())(b)
    return [x, g, float(aux)]
  assert_same_tree(prog(*PY)[:2], prog(*libraries(jax))[:2], rtol=1e-6)
  assert prog(*PY)[2] == 3.0


def _root_prog(jax, jnp, lax):
  def sqrt_cubed(x):
    f = lambda y: y ** 2 - x ** 3

    def bisect(f, x0):
      def body(i, c):
        lo, hi = c
        mid = (lo + hi) / 2
        return jnp.where(f(mid) > 0, lo, mid), jnp.where(f(mid) > 0, mid, hi)
      lo, hi = lax.fori_loop(0, 60, body, (0., 100.))
      return (lo + hi) / 2
    return lax.custom_root(f, 0., bisect, lambda g, y: y / g(1.0))
  return [sqrt_cubed(5.), jax.grad(sqrt_cubed)(5.), jax.jit(jax.grad(sqrt_cubed))(5.),
          jax.vmap(sqrt_cubed)(jnp.array([1., 4.])), jax.grad(jax.grad(sqrt_cubed))(5.)]


def test_custom_root_matches_jax(jax):
  assert_same_tree(_root_prog(*PY), _root_prog(*libraries(jax)), rtol=1e-5)
  ours = _root_prog(*PY)
  np.testing.assert_allclose(ours[0], 5 ** 1.5, rtol=1e-5)
  np.testing.assert_allclose(ours[1], 1.5 * 5 ** 0.5, rtol=1e-5)


def test_custom_root_errors_match_jax(jax):
  for case in [lambda jax, lax: lax.custom_root(lambda x: (x, x), 0., lambda f, x: x,
                                                lambda g, y: y),
               lambda jax, lax: lax.custom_root(lambda x: x, 0., lambda f, x: (x, x),
                                                lambda g, y: y),
               lambda jax, lax: lax.custom_root(lambda x: x, 0., lambda f, x: x,
                                                lambda g, y: y, has_aux=True)]:
    assert_raises_same(lambda: case(pyjax, lax), lambda: case(jax, jax.lax))
