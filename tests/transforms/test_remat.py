"""jax.checkpoint / jax.remat: values equal the un-checkpointed function under every
transformation; jaxprs (what is saved, what is recomputed) equal JAX's."""
import numpy as np
import pytest

import pyjax
import pyjax.numpy as jnp
from pyjax import errors
from pyjax.ad_checkpoint import checkpoint_name, print_saved_residuals

P = pyjax.checkpoint_policies


def _jax():
  return pytest.importorskip("jax")


def _close(a, b, rtol=1e-5, atol=1e-6):
  for x, y in zip(pyjax.tree_util.tree_leaves(a), pyjax.tree_util.tree_leaves(b)):
    np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=rtol, atol=atol)


def _f(x, W):
  y = checkpoint_name(jnp.sin(x) * 2, "y")
  z = checkpoint_name(W @ y, "z")
  return jnp.sum(jnp.tanh(z) * y)


_POLICIES = [None, P.nothing_saveable, P.everything_saveable, P.dots_saveable,
             P.checkpoint_dots, P.dots_with_no_batch_dims_saveable,
             P.save_only_these_names("z"), P.save_any_names_but_these("y"),
             P.save_anything_except_these_names("z"),
             P.save_from_both_policies(P.dots_saveable, P.save_only_these_names("y")),
             P.offload_dot_with_no_batch_dims("device", "pinned_host"),
             P.save_and_offload_only_these_names(names_which_can_be_saved=["y"],
                                                 names_which_can_be_offloaded=["z"],
                                                 offload_src="device", offload_dst="pinned_host")]


@pytest.mark.parametrize("policy", _POLICIES, ids=range(len(_POLICIES)))
def test_values_equal_uncheckpointed(policy):
  x = jnp.linspace(-1., 1., 4)
  W = jnp.arange(16.).reshape(4, 4) / 10
  f = pyjax.checkpoint(_f, policy=policy)
  assert float(f(x, W)) == pytest.approx(float(_f(x, W)), rel=1e-6)
  _close(pyjax.grad(f, argnums=(0, 1))(x, W), pyjax.grad(_f, argnums=(0, 1))(x, W))
  _close(pyjax.jit(pyjax.grad(f))(x, W), pyjax.grad(_f)(x, W))
  _close(pyjax.grad(pyjax.jit(f))(x, W), pyjax.grad(_f)(x, W))
  _close(pyjax.jvp(f, (x, W), (x, W)), pyjax.jvp(_f, (x, W), (x, W)))
  _close(pyjax.hessian(f)(x, W), pyjax.hessian(_f)(x, W), rtol=1e-4, atol=1e-5)
  xs = jnp.stack([x, x * 2])
  _close(pyjax.vmap(pyjax.grad(f), in_axes=(0, None))(xs, W),
         pyjax.vmap(pyjax.grad(_f), in_axes=(0, None))(xs, W))
  _close(pyjax.grad(lambda x: jnp.sum(pyjax.vmap(f, in_axes=(0, None))(x, W)))(xs),
         pyjax.grad(lambda x: jnp.sum(pyjax.vmap(_f, in_axes=(0, None))(x, W)))(xs))


def test_nested_checkpoints_and_closures():
  a = jnp.float32(1.5)

  def inner(x):
    return jnp.sin(x) * a

  def outer(x):
    return jnp.sum(pyjax.checkpoint(inner)(pyjax.checkpoint(inner)(x)) ** 2)

  x = jnp.linspace(0., 1., 3)
  plain = lambda x: jnp.sum(inner(inner(x)) ** 2)  # noqa: E731
  _close(pyjax.grad(pyjax.checkpoint(outer))(x), pyjax.grad(plain)(x))
  # closing over a tracer of an enclosing transformation
  g = lambda s: pyjax.grad(lambda x: pyjax.checkpoint(lambda y: jnp.sum(y * s) ** 2)(x))(x)  # noqa: E731
  _close(pyjax.grad(lambda s: jnp.sum(g(s)))(2.0),
         pyjax.grad(lambda s: jnp.sum(pyjax.grad(lambda x: jnp.sum(x * s) ** 2)(x)))(2.0))


def test_static_argnums_and_python_control_flow():
  def f(x, n):
    for _ in range(n):
      x = jnp.sin(x)
    return x if n > 1 else -x
  g = pyjax.checkpoint(f, static_argnums=(1,))
  assert float(pyjax.grad(g)(0.5, 3)) == pytest.approx(float(pyjax.grad(f)(0.5, 3)), rel=1e-6)
  assert float(pyjax.grad(g)(0.5, 1)) == pytest.approx(-np.cos(0.5), rel=1e-6)
  g2 = pyjax.checkpoint(f, static_argnums=-1)
  assert float(g2(0.5, 2)) == pytest.approx(float(f(0.5, 2)))
  assert pyjax.remat(f, static_argnums=1)(0.5, 2) == g2(0.5, 2)


def test_errors():
  with pytest.raises(errors.TracerBoolConversionError) as e:
    pyjax.checkpoint(lambda x: x if x > 0 else -x)(1.0)
  msg = str(e.value)
  assert "for checkpoint / remat" in msg
  assert msg.endswith("Consider using the `static_argnums` parameter for `jax.remat` or "
                      "`jax.checkpoint`. See the `jax.checkpoint` docstring and its example "
                      "involving `static_argnums`:\n"
                      "https://docs.jax.dev/en/latest/_autosummary/jax.checkpoint.html\n")
  with pytest.raises(ValueError, match=r"can only take integer values greater than or equal "
                                       r"to `-len\(args\)` and less than `len\(args\)`, but got "
                                       r"\(3,\), while `len\(args\)` = 2"):
    pyjax.checkpoint(lambda x, n: x, static_argnums=(3,))(1.0, 2)
  with pytest.raises(TypeError, match="must be an int, tuple of ints"):
    pyjax.checkpoint(lambda x: x, static_argnums=(1.5,))(1.0)
  with pytest.raises(NotImplementedError, match="The `concrete` option to `jax.checkpoint`"):
    pyjax.checkpoint(lambda x: x, concrete=True)
  with pytest.raises(TypeError, match="prevent_cse must be a bool or tuple of bools"):
    pyjax.checkpoint(lambda x: x, prevent_cse="yes")
  with pytest.raises(ValueError, match="should be exclusive"):
    P.save_and_offload_only_these_names(names_which_can_be_saved=["a"],
                                        names_which_can_be_offloaded=["a"],
                                        offload_src="d", offload_dst="h")


def test_policy_namespace_matches_jax():
  jax = _jax()
  names = {n for n in dir(jax.checkpoint_policies) if not n.startswith("_")}
  assert names <= {n for n in dir(P) if not n.startswith("_")}
  assert repr(P.dots_saveable) == repr(jax.checkpoint_policies.dots_saveable)
  assert repr(P.save_only_these_names("a")) == repr(jax.checkpoint_policies.save_only_these_names("a"))


def test_eager_and_jit_evaluation():
  f = pyjax.checkpoint(lambda x: jnp.sin(x) * 2)
  x = jnp.arange(3.)
  _close(f(x), jnp.sin(x) * 2)
  _close(pyjax.jit(f)(x), jnp.sin(x) * 2)
  assert f(x).dtype == np.float32


def _jaxpr_cases(jax, jnp, ckpt, pol, name):
  W = jnp.ones((3, 3))

  def g(x):
    return jnp.sin(jnp.sin(x))

  def h(x):
    return jnp.sum(jnp.sin(W @ jnp.sin(x)))

  def k(x, y):
    a = name(jnp.sin(x) * y, "a")
    b = name(jnp.cos(a) * x, "b")
    return jnp.sum(b * a)
  f = ckpt(lambda x: jnp.sin(x) * 2)
  x3, y3 = jnp.linspace(0., 1., 3), jnp.linspace(1., 2., 3)
  out = [
      jax.make_jaxpr(lambda x: f(f(x)))(1.0),
      jax.make_jaxpr(ckpt(g))(1.0),
      jax.make_jaxpr(jax.grad(ckpt(g)))(1.0),
      jax.make_jaxpr(jax.grad(ckpt(g, policy=pol.everything_saveable)))(1.0),
      jax.make_jaxpr(lambda x: jax.linearize(ckpt(h, policy=pol.dots_saveable), x)[1](x))(x3),
      jax.make_jaxpr(lambda x: jax.jvp(ckpt(h), (x,), (x,)))(x3),
      jax.make_jaxpr(jax.vmap(ckpt(lambda x: jnp.sin(x) * 2)))(x3),
      jax.make_jaxpr(ckpt(lambda x, n: x ** n, static_argnums=(1,)), static_argnums=1)(2., 3),
      jax.make_jaxpr(ckpt(lambda x, y: x * y, prevent_cse=(True, False)))(1., 2.),
      jax.make_jaxpr(jax.jit(jax.grad(ckpt(g))))(1.0),
  ]
  for p in [None, pol.save_only_these_names("a"), pol.save_any_names_but_these("a")]:
    out.append(jax.make_jaxpr(jax.grad(ckpt(k, policy=p)))(x3, y3))
  return [str(j) for j in out]


def test_jaxprs_match_jax():
  jax = _jax()
  import jax.ad_checkpoint
  import jax.numpy as jjnp
  ours = _jaxpr_cases(pyjax, jnp, pyjax.checkpoint, P, checkpoint_name)
  theirs = _jaxpr_cases(jax, jjnp, jax.checkpoint, jax.checkpoint_policies,
                        jax.ad_checkpoint.checkpoint_name)
  for a, b in zip(ours, theirs):
    assert a == b


def test_dots_saveable_grad_jaxpr_matches_jax_up_to_dot_transpose_params():
  jax = _jax()
  import jax.numpy as jjnp

  def prog(jax, jnp):
    W = jnp.ones((3, 3))

    def h(x):
      return jnp.sum(jnp.sin(W @ jnp.sin(x)))
    return str(jax.make_jaxpr(jax.grad(jax.checkpoint(h, policy=jax.checkpoint_policies.dots_saveable)))(jnp.ones(3)))
  ours = prog(pyjax, jnp)
  theirs = prog(jax, jjnp)
  assert ours == theirs


def test_print_saved_residuals_matches_jax(capsys):
  jax = _jax()
  import jax.ad_checkpoint
  import jax.numpy as jjnp

  def prog(jax, jnp, psr, name):
    def f(x, W):
      y = jnp.sin(x)
      z = name(W @ y, "z")
      return jnp.sum(jnp.sin(z))
    args = (jnp.ones(3), jnp.ones((3, 3)))
    psr(f, *args)
    psr(jax.checkpoint(f), *args)
    psr(jax.checkpoint(f, policy=jax.checkpoint_policies.save_only_these_names("z")), *args)
    psr(jax.checkpoint(f, policy=jax.checkpoint_policies.dots_saveable), *args)
  prog(pyjax, jnp, print_saved_residuals, checkpoint_name)
  ours = capsys.readouterr().out
  prog(jax, jjnp, jax.ad_checkpoint.print_saved_residuals, jax.ad_checkpoint.checkpoint_name)
  assert ours == capsys.readouterr().out


def test_checkpoint_with_debug_print(capsys):
  def f(x):
    pyjax.debug.print("x={}", x)
    return jnp.sin(x)
  # as in JAX, the print runs in the forward pass and again in the recomputation
  pyjax.grad(pyjax.checkpoint(f))(1.0)
  assert capsys.readouterr().out == "x=1.0\nx=1.0\n"
  pyjax.jit(pyjax.grad(pyjax.checkpoint(f, policy=P.everything_saveable)))(2.0)
  assert capsys.readouterr().out == "x=2.0\nx=2.0\n"
  jax = _jax()
  ours = str(pyjax.make_jaxpr(pyjax.grad(pyjax.checkpoint(f)))(1.0))

  def f2(x):
    jax.debug.print("x={}", x)
    return jax.numpy.sin(x)
  assert ours == str(jax.make_jaxpr(jax.grad(jax.checkpoint(f2)))(1.0))
