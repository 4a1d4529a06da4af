"""What training steps of the libraries need from the CPU compiler (benchmarks/ecosystem.py):

* a dense layer's weight gradient (``x.T @ g``, traced as ``transpose(dot(g, x))``) is
  computed in the layout its consumer reads (the operands swapped, no strided read);
* primitives defined by a ``lower_fun`` lowering rule (equinox's ``unvmap_any``,
  ``nonbatchable``, ``select_if_vmap``) are expanded when compiled, so loops containing them
  run in C;
* a scatter of a scalar literal (``x.at[i].set(True)``) runs natively.
"""
import numpy as np
import pytest

import pyjax
import pyjax.numpy as jnp
from pyjax import lax
from pyjax._src.backends.cpu import executable
from pyjax._src.backends.cpu.compiler.native import build
from pyjax._src.backends.cpu.compiler import driver
from pyjax._src.backends.cpu.compiler import simplify as simplify_mod
from pyjax._src.interpreters import mlir
from pyjax.extend import core as xcore

jax = pytest.importorskip("jax")

pytestmark = pytest.mark.skipif(build.toolchain() is None, reason="no C compiler")


def _compiled(mode, f, *args):
  prev = executable.set_compile_mode(mode)
  try:
    jf = pyjax.jit(f)
    exe = jf.lower(*args).compile().runtime_executable()
    return [np.asarray(v) for v in pyjax.tree_util.tree_leaves(jf(*args))], exe
  finally:
    executable.set_compile_mode(prev)


def _mlp_grad(np_, nn):
  def loss(w1, w2, x):
    return np_.sum(np_.tanh(nn.relu(x @ w1) @ w2) ** 2)
  return loss


def test_dense_weight_gradient_written_in_place(monkeypatch):
  rng = np.random.default_rng(0)
  x = rng.standard_normal((16, 96)).astype(np.float32)
  w1 = (rng.standard_normal((96, 64)) * 0.1).astype(np.float32)
  w2 = (rng.standard_normal((64, 10)) * 0.1).astype(np.float32)
  f = pyjax.grad(_mlp_grad(jnp, pyjax.nn), argnums=(0, 1))
  got, exe = _compiled("sync", f, w1, w2, x)
  closed = pyjax.make_jaxpr(f)(w1, w2, x)
  prims = [n.prim for n in driver.lower_parts(closed)[0].nodes]
  assert prims.count("dot_general") == 5 and "transpose" not in prims
  monkeypatch.setattr(simplify_mod, "_swap_transposed_dots", lambda program: False)
  prims = [n.prim for n in driver.lower_parts(closed)[0].nodes]
  assert prims.count("transpose") == 2   # what the rewrite removes
  base, _ = _compiled("sync", f, w1, w2, x)
  for a, b in zip(got, base):
    np.testing.assert_array_equal(a, b)   # the same sums of the same products
  ref = jax.grad(_mlp_grad(jax.numpy, jax.nn), argnums=(0, 1))(w1, w2, x)
  for a, b in zip(got, ref):
    np.testing.assert_allclose(a, np.asarray(b), rtol=2e-5, atol=2e-6)


def test_swap_transposed_dot_program():
  """The rewrite itself: transpose(dot(a, b)) -> dot(b, a), batch dimensions kept."""
  rng = np.random.default_rng(1)
  a = rng.standard_normal((3, 5, 7)).astype(np.float32)
  b = rng.standard_normal((3, 7, 4)).astype(np.float32)

  def f(a, b):
    d = lax.dot_general(a, b, (((2,), (1,)), ((0,), (0,))))
    return jnp.transpose(d, (0, 2, 1)) * 2.0
  got, exe = _compiled("sync", f, a, b)
  want, _ = _compiled("off", f, a, b)
  np.testing.assert_allclose(got[0], want[0], rtol=1e-6, atol=1e-6)
  ref = np.asarray(jax.jit(lambda a, b: jax.numpy.transpose(
      jax.lax.dot_general(a, b, (((2,), (1,)), ((0,), (0,)))), (0, 2, 1)) * 2.0)(a, b))
  np.testing.assert_allclose(got[0], ref, rtol=1e-5, atol=1e-5)
  # the program has no transpose left
  closed = pyjax.make_jaxpr(f)(a, b)
  assert "transpose" not in [n.prim for n in driver.lower_parts(closed)[0].nodes]


def _lowered_prims():
  any_p = xcore.Primitive("test_h8_unvmap_any")
  any_p.def_impl(lambda x: jnp.any(x))
  any_p.def_abstract_eval(lambda x: pyjax.core.ShapedArray((), np.dtype(bool)))
  mlir.register_lowering(any_p, mlir.lower_fun(lambda x: jnp.any(x), multiple_results=False))
  # a rule that binds another lowered primitive
  outer_p = xcore.Primitive("test_h8_nonbatchable")
  outer_p.def_impl(lambda x: x)
  outer_p.def_abstract_eval(lambda x: x)
  mlir.register_lowering(outer_p, mlir.lower_fun(
      lambda x: lax.select(any_p.bind(x > 100.0), x * 0.0, x), multiple_results=False))
  return any_p, outer_p


def test_lowered_primitives_expanded_into_native_loops():
  any_p, outer_p = _lowered_prims()

  def f(x):
    def cond(c):
      return jnp.logical_not(any_p.bind(c[0] > 10.0))

    def body(c):
      x, n = c
      return outer_p.bind(x * 1.5 + 0.25), n + 1
    return lax.while_loop(cond, body, (x, 0))
  x = np.linspace(0.5, 1.0, 8).astype(np.float32)
  got, exe = _compiled("sync", f, x)
  assert exe.tier == "native" and not exe.native.host_steps   # the loop runs in C
  want, _ = _compiled("off", f, x)
  for a, b in zip(got, want):
    np.testing.assert_array_equal(a, b)
  # what the primitives compute, without them
  ref = np.asarray(x)
  n = 0
  while not (ref > 10.0).any():
    ref = ref * np.float32(1.5) + np.float32(0.25)
    n += 1
  np.testing.assert_allclose(got[0], ref, rtol=1e-6)
  assert int(got[1]) == n
  # make_jaxpr still shows the primitives (only compilation expands them)
  assert "test_h8_unvmap_any" in str(pyjax.make_jaxpr(f)(x))


def test_expand_lowered_is_identity_without_rules():
  closed = pyjax.make_jaxpr(lambda x: jnp.sin(x) + 1.0)(np.ones(3, np.float32))
  assert mlir.expand_lowered(closed) is closed


@pytest.mark.parametrize("dtype,value", [(np.bool_, True), (np.int32, -7),
                                         (np.float32, 2.5)])
def test_scatter_of_a_literal_runs_natively(dtype, value):
  x = np.zeros(9, dtype)
  i = np.int32(4)

  def f(x, i):
    def body(k, x):
      return x.at[(i + k) % 9].set(value)
    return lax.fori_loop(0, 3, body, x)
  got, exe = _compiled("sync", f, x, i)
  assert exe.tier == "native" and not exe.native.host_steps
  want, _ = _compiled("off", f, x, i)
  np.testing.assert_array_equal(got[0], want[0])
  ref = np.asarray(jax.jit(lambda x, i: jax.lax.fori_loop(
      0, 3, lambda k, x: x.at[(i + k) % 9].set(value), x))(x, i))
  np.testing.assert_array_equal(got[0], ref)
  assert got[0].dtype == ref.dtype
