"""lax/buffers.py's empty, stage, optimization_barrier and dce_sink (with lax/shapes.py's
broadcast_like and shape_as_value, which the same programs use)

Programs are run with pyjax and with real JAX (``jax`` fixture) and compared: values,
dtypes, weak types, jaxpr text, exception classes and messages.  Known-answer tests
that need no JAX compare with NumPy or with recorded values.
"""
import numpy as np
import pytest

import pyjax
import pyjax.numpy as jnp
from pyjax import lax
from jax_compare import assert_raises_same, assert_same_tree, jaxpr_text, libraries

PY = (pyjax, jnp, lax)


# --- empty, stage, optimization_barrier, dce_sink, broadcast_like, dtype, shape_as_value ---
def _misc_prog(jax, jnp, lax):
  x = jnp.arange(3.)
  return [lax.empty((2, 3), jnp.float32), lax.empty(4, jnp.int32),
          lax.stage(x), lax.stage(2.0), lax.stage(np.arange(3)),
          jax.jit(lambda x: lax.stage(x) + lax.stage(1.0))(x),
          jax.grad(lambda x: (lax.stage(x) ** 2).sum())(x),
          lax.optimization_barrier((x, 2 * x)), jax.jit(lax.optimization_barrier)([x, x]),
          jax.grad(lambda x: lax.optimization_barrier((x, x * 2))[1].sum())(x),
          jax.vmap(lambda x: lax.optimization_barrier(x * 2))(x),
          jax.jvp(lambda x: lax.optimization_barrier(x * 3), (x,), (x,)),
          lax.dce_sink(x), jax.jit(lambda x: (lax.dce_sink(x), x + 1)[1])(x),
          jax.grad(lambda x: (lax.dce_sink(x), (x ** 2).sum())[1])(x),
          lax.broadcast_like(x, jnp.zeros((2, 3))), lax.broadcast_like(2., jnp.zeros((2, 3))),
          lax.broadcast_like(x, x), lax.shape_as_value((2, 3)), lax.shape_as_value(())]


def test_misc_matches_jax(jax):
  assert_same_tree(_misc_prog(*PY), _misc_prog(*libraries(jax)))


@pytest.mark.parametrize("name", ["stage", "barrier_grad", "barrier_vmap", "dce", "bl",
                                  "bl_same"])
def test_misc_jaxprs_match_jax(jax, name):
  def progs(jax, jnp, lax):
    return {
        "stage": lambda x: (lax.stage(x), lax.stage(2.0)),
        "barrier_grad": jax.grad(lambda x: lax.optimization_barrier((x, x * 2))[1].sum()),
        "barrier_vmap": jax.vmap(lambda x: lax.optimization_barrier(x)),
        "dce": lambda x: lax.dce_sink(x),
        "bl": lambda x: lax.broadcast_like(x, np.zeros((2, 3), np.float32)),
        "bl_same": lambda x: lax.broadcast_like(x, x),
    }[name]
  x = np.arange(3., dtype=np.float32)
  assert jaxpr_text(pyjax, progs(*PY), x) == jaxpr_text(jax, progs(*libraries(jax)), x)


def test_misc_errors_match_jax(jax):
  for case in [lambda lax, jnp: lax.broadcast_like(jnp.ones(2), jnp.zeros((2, 3))),
               lambda lax, jnp: lax.broadcast_like(jnp.ones((2, 2, 3)), jnp.zeros((2, 3)))]:
    assert_raises_same(lambda: case(lax, jnp), lambda: case(jax.lax, jax.numpy))


def test_empty_jaxpr_and_dtype():
  j = str(pyjax.make_jaxpr(lambda: lax.empty((2, 3), jnp.float32))())
  assert "empty[dtype=float32 out_sharding=None shape=(2, 3)]" in j
  with pytest.warns(UserWarning, match="requested in lax.empty is not available"):
    assert lax.empty((2,), np.int64).dtype == np.int32   # x64 off: canonicalized
  assert pyjax.vmap(lambda x: x + lax.empty((2,), jnp.float32))(jnp.ones((3, 2))).shape == (3, 2)


def test_dce_sink_keeps_its_operand_alive():
  closed = pyjax.make_jaxpr(lambda x: (lax.dce_sink(x * 2), x)[1])(1.)
  assert [e.primitive.name for e in closed.jaxpr.eqns] == ["mul", "dce_sink"]
  assert closed.jaxpr.eqns[-1].effects
