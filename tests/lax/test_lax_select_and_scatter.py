"""select_and_scatter (lax/select_and_scatter.py) against NumPy."""
import numpy as np
import pytest

import pyjax
import pyjax.numpy as jnp
from pyjax import lax


# --- select_and_scatter ----------------------------------------------------------------------
def test_select_and_scatter():
  from pyjax._src.lax.select_and_scatter import _select_and_scatter
  x = jnp.array([[1., 5, 2, 0], [3, 4, 8, 1], [0, 2, 2, 7]])
  src = jnp.array([[10., 20.], [30., 40.]])
  f = lambda x, s: _select_and_scatter(x, lax.ge, (2, 2), (1, 2), ((0, 0), (0, 0)), s, 0.,
                                       lax.add)
  want = [[0, 10, 0, 0], [0, 30, 60, 0], [0, 0, 0, 0]]
  np.testing.assert_array_equal(f(x, src), want)
  np.testing.assert_array_equal(pyjax.jit(f)(x, src), want)
  # the same as the gradient of a max pool (select_and_scatter_add)
  pool = lambda x: lax.reduce_window(x, -np.inf, lax.max, (2, 2), (1, 2), "VALID")
  np.testing.assert_array_equal(pyjax.vjp(pool, x)[1](src)[0], want)
  v = pyjax.vmap(f)(jnp.stack([x, -x]), jnp.stack([src, src]))
  np.testing.assert_array_equal(v[0], want)
  np.testing.assert_array_equal(v[1], [[10, 0, 0, 20], [0, 0, 0, 40], [30, 0, 0, 0]])
  # padding positions are never picked; min selection; multiply scatter
  g = _select_and_scatter(x, lax.le, (2, 2), (2, 2), ((1, 0), (0, 0)), jnp.full((2, 2), 3.),
                          1., lax.mul)
  np.testing.assert_array_equal(g, [[3, 1, 1, 3], [1, 1, 1, 3], [3, 1, 1, 1]])
  j = str(pyjax.make_jaxpr(f)(x, src))
  assert "select_and_scatter[" in j and "select_jaxpr={ lambda ; " in j
  with pytest.raises(NotImplementedError, match="Differentiation rule for 'select_and_scatter'"):
    pyjax.grad(lambda x: f(x, src).sum())(x)
