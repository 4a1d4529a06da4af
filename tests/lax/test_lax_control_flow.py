"""Structured control flow: cond, switch, while_loop, fori_loop, scan, map,
associative_scan.

Every program is written once against a (jax, jnp, lax) namespace and run with pyjax and
with real JAX (the oracle) under each transformation: values, dtypes, weak types and
error messages must agree; jaxpr texts of simple programs must be identical.  A few
known-answer tests (recorded values) run without JAX.
"""
import re

import numpy as np
import pytest

import pyjax
import pyjax.numpy as pjnp
from pyjax import lax as plax
from pyjax._src import core
from pyjax._src.avals import ShapedArray
from pyjax._src.backends.cpu import eager as cpu_eager
from pyjax._src.lax.control_flow import common as cf_common


def _real_jax():
  jax = pytest.importorskip("jax")
  return jax, jax.numpy, jax.lax


def _pyjax():
  return pyjax, pjnp, plax


def _leaves(tree, jx):
  return jx.tree_util.tree_leaves(tree)


def _assert_same(rj, rp, jax, rtol=2e-5, atol=2e-5):
  lj = _leaves(rj, jax)
  lp = _leaves(rp, pyjax)
  assert len(lj) == len(lp)
  for a, b in zip(lj, lp):
    an, bn = np.asarray(a), np.asarray(b)
    assert an.shape == bn.shape, (an.shape, bn.shape)
    assert an.dtype == bn.dtype, (an.dtype, bn.dtype)
    if an.dtype.kind != "V":   # float0 tangents have no values
      np.testing.assert_allclose(an, bn, rtol=rtol, atol=atol)
    assert getattr(a, "weak_type", False) == getattr(b, "weak_type", False)


def _run_both(make, *args, **kw):
  """Run ``make(jax, jnp, lax)(*args)`` with JAX and pyjax; results or exceptions must
  agree."""
  jax, jnp, lax = _real_jax()
  try:
    rj = make(jax, jnp, lax)(*args)
  except Exception as e:  # noqa: BLE001
    rj = e
  try:
    rp = make(*_pyjax())(*args)
  except Exception as e:  # noqa: BLE001
    if not isinstance(rj, Exception):
      raise
    rp = e
  if isinstance(rj, Exception):
    assert isinstance(rp, Exception), f"JAX raised {rj!r}, pyjax returned {rp!r}"
    assert type(rp).__name__ == type(rj).__name__
    assert _norm_msg(str(rp)) == _norm_msg(str(rj))
    return rj, rp
  _assert_same(rj, rp, jax, **kw)
  return rj, rp


def _norm_msg(s):
  s = s.replace("jax._src.core.ShapedArray", "ShapedArray")
  s = s.replace("pyjax._src.avals.ShapedArray", "ShapedArray")
  s = re.sub(r"\n-+\nFor simplicity, JAX has removed.*", "", s, flags=re.S)
  s = re.sub(r"\nSee https://docs.jax.dev/en/latest/errors.html#.*", "", s)
  return s


# --------------------------------------------------------------------------------------
# programs × transformations
# --------------------------------------------------------------------------------------
def _programs(jax, jnp, lax):
  """One function per control-flow primitive (f32[4] -> array), nesting and closures
  over outer values included."""
  P = {}
  P["cond"] = lambda x: lax.cond(x.sum() > 1.5, lambda x: jnp.sin(x) * 2, lambda x: jnp.cos(x) + x, x)
  P["cond_closure"] = lambda x: lax.cond(x[0] > 0.5, lambda: x * x[1], lambda: x - x[2])
  P["switch"] = lambda x: lax.switch((x.sum() * 3).astype(jnp.int32) % 4,
                                     [lambda x: x, jnp.sin, lambda x: x * x, lambda x: -x], x)
  P["scan"] = lambda x: (lambda r: r[0].sum() + r[1])(
      lax.scan(lambda c, xi: (c * jnp.tanh(xi) + xi, c ** 2), x[0], x))
  P["scan_rev_tree"] = lambda x: lax.scan(
      lambda c, xi: ({"a": jnp.sin(c["a"]) + xi * c["b"], "b": c["b"] * 0.9}, (c["a"] * xi, xi)),
      {"a": x[1], "b": x[2]}, x, reverse=True)[1][0]
  P["fori_static"] = lambda x: lax.fori_loop(0, 4, lambda i, c: c * jnp.cos(c + i), x)
  P["fori_closure"] = lambda x: lax.fori_loop(1, 4, lambda i, c: c * x[0] + jnp.sin(c) * i, x)
  P["while"] = lambda x: lax.while_loop(lambda c: c[0] < 5,
                                        lambda c: (c[0] + 1, jnp.sin(c[1]) * x), (0, x))[1]
  P["while_lanes"] = lambda x: lax.while_loop(lambda c: c.sum() < 10.,
                                              lambda c: c * 1.5 + 0.1, x)
  P["nested"] = lambda x: lax.scan(
      lambda c, xi: (lax.fori_loop(0, 2, lambda i, d: lax.cond(
          d.sum() > 1., lambda d: d * 0.5, lambda d: d + xi, d), c), c.sum()), x, x)[0]
  P["map"] = lambda x: lax.map(lambda v: jnp.sin(v) * v, x)
  P["associative_scan"] = lambda x: (lax.associative_scan(jnp.add, x)
                                     * lax.associative_scan(lambda a, b: a * b, x, reverse=True))
  return P


_X = np.array([0.9, 0.3, 0.7, 0.25], np.float32)
_XS = np.stack([_X, -_X + 0.5, _X * 1.7])

_MODES = {
    "eager": lambda jx, f: f(_X),
    "jit": lambda jx, f: jx.jit(f)(_X),
    "grad": lambda jx, f: jx.grad(lambda v: f(v).sum())(_X),
    "vmap": lambda jx, f: jx.vmap(f)(_XS),
    "vmap_grad": lambda jx, f: jx.vmap(jx.grad(lambda v: f(v).sum()))(_XS),
    "jit_vmap": lambda jx, f: jx.jit(jx.vmap(f))(_XS),
}
_SLOW_MODES = {
    "jvp": lambda jx, f: jx.jvp(f, (_X,), (_X,)),
    "jit_grad": lambda jx, f: jx.jit(jx.grad(lambda v: f(v).sum()))(_X),
    "grad_jit": lambda jx, f: jx.grad(jx.jit(lambda v: f(v).sum()))(_X),
    "jacrev": lambda jx, f: jx.jacrev(f)(_X),
    "hessian": lambda jx, f: jx.hessian(lambda v: f(v).sum())(_X),
}
_NAMES = list(_programs(pyjax, pjnp, plax))


def _check_program(name, mode, modes):
  def make(jx, jnp, lax):
    f = _programs(jx, jnp, lax)[name]
    return lambda: modes[mode](jx, f)
  _run_both(make)


@pytest.mark.parametrize("mode", list(_MODES))
@pytest.mark.parametrize("name", _NAMES)
def test_program(name, mode):
  _check_program(name, mode, _MODES)


@pytest.mark.slow
@pytest.mark.parametrize("mode", list(_SLOW_MODES))
@pytest.mark.parametrize("name", _NAMES)
def test_program_more_modes(name, mode):
  _check_program(name, mode, _SLOW_MODES)


def test_while_reverse_mode_error():
  for jx, jnp, lax in (_real_jax(), _pyjax()):
    f = lambda x: lax.while_loop(lambda c: c < 3., lambda c: c * 2., x)  # noqa: E731
    with pytest.raises(ValueError, match="Reverse-mode differentiation does not work for "
                       "lax.while_loop or lax.fori_loop with dynamic start/stop values. Try "
                       "using lax.scan, or using fori_loop with static start/stop."):
      jx.grad(f)(1.0)
    # forward mode and linearize work
    np.testing.assert_allclose(jx.jvp(f, (1.0,), (1.0,))[1], 4.0)
    np.testing.assert_allclose(jx.linearize(f, 1.0)[1](1.0), 4.0)
    g = lambda x, n: lax.fori_loop(0, n, lambda i, c: c * x, x)  # noqa: E731
    with pytest.raises(ValueError, match="Reverse-mode differentiation does not work"):
      jx.jit(jx.grad(g), static_argnums=())(2.0, 3)


# --------------------------------------------------------------------------------------
# special cases
# --------------------------------------------------------------------------------------
def _cases(jax, jnp, lax):
  C = {}
  C["while_lanes_intcarry"] = lambda: jax.vmap(lambda x: lax.while_loop(
      lambda c: c[1] < 10., lambda c: (c[0] + 1, c[1] * 2. + 0.1), (0, x)))(
      np.array([0.5, 3., 20., 1.], np.float32))
  C["while_unbatched_pred"] = lambda: jax.vmap(lambda x, y: lax.while_loop(
      lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * y), (0, x)), in_axes=(0, None))(
      np.array([0.5, 3., 2.], np.float32), np.float32(1.5))
  C["nested_vmap_while"] = lambda: jax.vmap(jax.vmap(lambda x: lax.while_loop(
      lambda c: c < 10., lambda c: c * 2. + 1., x)))(
      np.arange(6, dtype=np.float32).reshape(2, 3) * 3 - 0.5)
  C["cond_unbatched_pred"] = lambda: jax.vmap(lambda x, p: lax.cond(
      p, lambda x: x * 2., lambda x: x - 1., x), in_axes=(0, None))(
      np.array([0.5, 3., 2.], np.float32), True)
  C["switch_batched_index"] = lambda: jax.vmap(lambda i, x: lax.switch(
      i, [lambda x: x * 2., lambda x: x - 1., jnp.cos], x))(
      np.array([0, 2, 1, 5, -1], np.int32), np.array([0.5, 3., 2., 1., 4.], np.float32))
  C["vmap_scan_xs_only"] = lambda: jax.vmap(lambda xs, c0: lax.scan(
      lambda c, x: (c + x, c * x), c0, xs), in_axes=(0, None))(
      np.arange(6, dtype=np.float32).reshape(2, 3), np.float32(1.))
  C["vmap_in_axes1"] = lambda: jax.vmap(lambda x: lax.scan(
      lambda c, xi: (c + xi, c * xi), x[0], x), in_axes=1)(
      np.arange(6, dtype=np.float32).reshape(3, 2))
  C["grad_cond_jit_two_args"] = lambda: jax.jit(jax.grad(lambda x, y: lax.cond(
      x > 0, lambda x: x * y ** 2, lambda x: jnp.sin(x) * y, x), argnums=(0, 1)))(
      np.float32(0.7), np.float32(1.3))
  C["hessian_scan"] = lambda: jax.hessian(lambda x: lax.scan(
      lambda c, xi: (jnp.sin(c) * xi, c * c), 1., x)[1].sum())(
      np.array([0.5, 1.5, 2.], np.float32))
  C["grad_switch_closure"] = lambda: jax.grad(lambda x, i: lax.switch(
      i, [lambda: x * x, lambda: jnp.exp(x), lambda: x]))(np.float32(0.3), 1)
  C["grad_scan_reverse_xs"] = lambda: jax.grad(lambda c, xs: lax.scan(
      lambda c, x: (c * x + jnp.sin(x), c), c, xs, reverse=True)[1].sum(), argnums=(0, 1))(
      np.float32(0.7), np.array([0.5, 1.5, 2.], np.float32))
  C["grad_int_carry"] = lambda: jax.grad(lambda x: lax.scan(
      lambda c, _: ((c[0] + 1, c[1] * x + c[0]), None), (0, x), None, length=3)[0][1])(
      np.float32(0.7))
  C["jvp_while_int_carry"] = lambda: jax.jvp(lambda x: lax.while_loop(
      lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * x), (0, x)), (np.float32(0.7),),
      (np.float32(1.),))
  C["grad_nested_scan"] = lambda: jax.grad(lambda x: lax.scan(lambda c, xi: (lax.scan(
      lambda d, y: (d * y + c, d), c, xi)[0], c), 0.5, x)[0])(
      np.arange(6, dtype=np.float32).reshape(2, 3) / 5)
  C["jacfwd_vmap_while"] = lambda: jax.vmap(jax.jacfwd(lambda x: lax.while_loop(
      lambda c: c[1] < 5., lambda c: (c[0] + 1, c[1] * 1.7 + x), (0, x))[1]))(
      np.array([0.5, 1.5, 2.], np.float32))
  C["jit_vmap_grad_scan"] = lambda: jax.jit(jax.vmap(jax.grad(lambda x: lax.scan(
      lambda c, xi: (c * jnp.sin(xi) + 1., c), x, jnp.arange(3.) + x)[0])))(
      np.array([0.5, 1.5, 2.], np.float32))
  C["vmap_fori_batched_bound"] = lambda: jax.vmap(lambda n, x: lax.fori_loop(
      0, n, lambda i, c: c * 1.5 + i, x))(np.array([1, 4, 2], np.int32),
                                          np.array([0.5, 1.5, 2.], np.float32))
  C["grad_hoisted_residual"] = lambda: jax.jit(jax.grad(lambda W, xs: (lambda r: r[0].sum() + r[1].sum())(
      lax.scan(lambda h, x: (jnp.tanh(h @ W.T + jnp.exp(W).mean() * 0.1 * x), h.sum()),
               jnp.zeros(4) + 0.3, xs)), argnums=(0, 1)))(
      np.random.RandomState(0).randn(4, 4).astype(np.float32) * 0.3, np.ones((3, 4), np.float32))
  C["grad_map"] = lambda: jax.grad(lambda x: lax.map(lambda v: jnp.sin(v) * v, x).sum())(
      np.array([0.5, 1.5, 2.], np.float32))
  C["grad_associative_scan"] = lambda: jax.grad(lambda x: lax.associative_scan(
      lambda a, b: a * b + a, x).sum())(np.array([0.5, 1.5, 2., 0.3, 0.9], np.float32))
  C["scan_unroll"] = lambda: lax.scan(lambda c, xi: (c + xi, c), 0., np.arange(5, dtype=np.float32),
                                      unroll=2)
  C["scan_unroll_true"] = lambda: lax.scan(lambda c, xi: (c + xi, c), 0.,
                                           np.arange(5, dtype=np.float32), unroll=True)
  C["scan_length0"] = lambda: lax.scan(lambda c, xi: (c + xi, c), np.float32(2), jnp.zeros((0,)))
  C["scan_xs_none"] = lambda: lax.scan(lambda c, _: (c * 2, c), 1.0, None, length=4)
  C["scan_xs_tree"] = lambda: lax.scan(lambda c, x: (c + x["a"] * x["b"][0], x["b"][1]), 0.,
                                       {"a": np.arange(3.), "b": (np.ones(3), np.arange(6.).reshape(3, 2))})
  C["scan_forwarded"] = lambda: lax.scan(lambda c, x: (c, (x, c * 2)), np.float32(1.),
                                         np.arange(3, dtype=np.float32))
  C["scan_weak_promotion"] = lambda: lax.scan(lambda c, xi: (c + 1.5 * xi, c), 0,
                                              np.arange(3, dtype=np.float32))
  C["scan_int_carry"] = lambda: lax.scan(lambda c, x: (c + x, c), 0, np.arange(4, dtype=np.int32))
  C["map_batch_size"] = lambda: lax.map(lambda v: v * 2 + 1, np.arange(5, dtype=np.float32),
                                        batch_size=2)
  C["map_batch_size_tree"] = lambda: lax.map(lambda v: (v.sum(), v * 2),
                                             np.arange(12, dtype=np.float32).reshape(6, 2),
                                             batch_size=3)
  C["map_batch_size0"] = lambda: lax.map(lambda v: v * 2, np.arange(4, dtype=np.float32),
                                         batch_size=0)
  C["assoc_axis_reverse"] = lambda: lax.associative_scan(
      jnp.maximum, np.random.RandomState(0).rand(3, 5).astype(np.float32), axis=1, reverse=True)
  C["assoc_negative_axis"] = lambda: lax.associative_scan(
      jnp.add, np.arange(12, dtype=np.int32).reshape(3, 4), axis=-2)
  C["assoc_tree"] = lambda: lax.associative_scan(
      lambda a, b: (a[0] + b[0], a[1] * b[1]), (np.arange(7.), np.arange(7.) + 1))
  C["assoc_bool"] = lambda: lax.associative_scan(jnp.logical_or,
                                                 np.array([False, True, False, False]))
  C["cond_weak_branch0"] = lambda: lax.cond(True, lambda: 1.0, lambda: jnp.float32(2.))
  C["cond_weak_branch1"] = lambda: lax.cond(True, lambda: jnp.float32(2.), lambda: 1.0)
  C["cond_forwarded_scalar"] = lambda: lax.cond(True, lambda x: x, lambda x: x, 1.0)
  C["cond_float_pred"] = lambda: lax.cond(2.5, lambda x: x + 1, lambda x: x * 2, 2.)
  C["cond_int_pred"] = lambda: lax.cond(np.int32(0), lambda x: x + 1, lambda x: x * 2, 2.)
  C["cond_operand_kw"] = lambda: lax.cond(True, lambda x: x + 1, lambda x: x * 2, operand=2.)
  C["cond_deprecated_form"] = lambda: lax.cond(True, 1., lambda x: x + 1, 2., lambda x: x * 2)
  C["cond_pytree"] = lambda: lax.cond(False, lambda a, b: {"s": a + b[0], "t": b},
                                      lambda a, b: {"s": a - b[1], "t": (b[1], b[0])},
                                      np.float32(1.), (np.float32(2.), np.float32(3.)))
  C["cond_no_operands"] = lambda: lax.cond(False, lambda: np.int32(1), lambda: np.int32(2))
  C["switch_clamped"] = lambda: (lax.switch(7, [lambda x: x + 1, lambda x: x * 2], 2.),
                                 lax.switch(-3, [lambda x: x + 1, lambda x: x * 2], 2.))
  C["switch_one_branch"] = lambda: lax.switch(3, [lambda x: x + 1], 2.)
  C["while_weak"] = lambda: lax.while_loop(lambda c: c < 10, lambda c: c + 1, 0)
  C["while_tree"] = lambda: lax.while_loop(lambda c: c["i"] < 4,
                                           lambda c: {"i": c["i"] + 1, "v": c["v"] * 2.},
                                           {"i": 0, "v": np.ones(2, np.float32)})
  C["while_loop_invariant"] = lambda: lax.while_loop(lambda c: c[0] < 3,
                                                     lambda c: (c[0] + 1, c[1]), (0, 5.0))
  C["fori_tree"] = lambda: lax.fori_loop(0, 3, lambda i, c: {"a": c["a"] + i, "b": c["b"] * 2},
                                         {"a": np.float32(2.), "b": np.float32(2.)})
  C["fori_empty"] = lambda: lax.fori_loop(5, 2, lambda i, c: c + i, 1.0)
  C["fori_array_bounds"] = lambda: lax.fori_loop(jnp.int32(1), jnp.int32(4),
                                                 lambda i, c: c * i, np.float32(1.))
  C["fori_mixed_bounds"] = lambda: lax.fori_loop(np.int16(0), 3, lambda i, c: c + i, 0)
  C["fori_dynamic_jit"] = lambda: jax.jit(lambda n: lax.fori_loop(
      0, n, lambda i, c: c + i * i, 0.5))(5)
  C["fori_unroll"] = lambda: lax.fori_loop(0, 5, lambda i, c: c * 2 + i, 1, unroll=2)
  C["disable_jit"] = lambda: jax.disable_jit()(lambda: (
      lax.scan(lambda c, xi: (c + xi, c), 0., np.arange(3, dtype=np.float32)),
      lax.cond(True, lambda: np.arange(2.), lambda: np.arange(2.) * 2),
      lax.while_loop(lambda c: c < 5, lambda c: c + 1, 0),
      lax.fori_loop(0, 3, lambda i, c: c + i, 0)))()
  return C


_CASES = list(_cases(pyjax, pjnp, plax))


@pytest.mark.parametrize("name", _CASES)
def test_case(name):
  _run_both(lambda jx, jnp, lax: _cases(jx, jnp, lax)[name])


# --------------------------------------------------------------------------------------
# errors, compared with JAX
# --------------------------------------------------------------------------------------
def _errors(jax, jnp, lax):
  E = {}
  E["cond_not_callable"] = lambda: lax.cond(True, 1, 2)
  E["cond_pred_none"] = lambda: lax.cond(None, lambda: 1, lambda: 2)
  E["cond_pred_list"] = lambda: lax.cond([True], lambda: 1, lambda: 2)
  E["cond_pred_shape"] = lambda: lax.cond(np.ones(3) > 0, lambda: 1., lambda: 2.)
  E["cond_pred_complex"] = lambda: lax.cond(1j, lambda: 1.0, lambda: 2.)
  E["cond_operand_and_positional"] = lambda: lax.cond(True, lambda x: x, lambda x: x, 1,
                                                      operand=2)
  E["cond_structure"] = lambda: lax.cond(True, lambda: 1.0, lambda: (1.0, 2.0))
  E["cond_dtype"] = lambda: lax.cond(True, lambda: 1.0, lambda: jnp.int32(1))
  E["cond_types_tree"] = lambda: lax.cond(
      True, lambda: {"a": 1.0, "b": jnp.ones(2)}, lambda: {"a": jnp.int32(1), "b": jnp.ones(3)})
  E["cond_traced_pred_bool"] = lambda: jax.jit(lambda x: lax.cond(
      x, lambda x: x if x > 0 else -x, lambda x: x, x))(1.0)
  E["switch_float_index"] = lambda: lax.switch(1.0, [lambda: 1])
  E["switch_index_shape"] = lambda: lax.switch(np.ones(2, np.int32), [lambda: 1])
  E["switch_empty"] = lambda: lax.switch(1, [])
  E["switch_types"] = lambda: lax.switch(1, [lambda: 1., lambda: 2])
  E["switch_not_callable"] = lambda: lax.switch(1, [lambda: 1., 2])
  E["scan_not_callable"] = lambda: lax.scan(3, 0., np.arange(3.))
  E["scan_not_pair"] = lambda: lax.scan(lambda c, x: (c, x, x), 0., np.arange(3.))
  E["scan_not_pair_leaf"] = lambda: lax.scan(lambda c, x: c, 0., np.arange(3.))
  E["scan_length_disagrees"] = lambda: lax.scan(lambda c, x: (c, x), 0., np.arange(3.), length=4)
  E["scan_lengths_differ"] = lambda: lax.scan(lambda c, x: (c, x), 0.,
                                              (np.arange(3.), np.arange(4.)))
  E["scan_no_length"] = lambda: lax.scan(lambda c, x: (c, x), 0., None)
  E["scan_no_leading_axis"] = lambda: lax.scan(lambda c, x: (c, x), 0., 1.0)
  E["scan_carry_dtype"] = lambda: lax.scan(lambda c, x: (c.astype(jnp.int32), x), 0.,
                                           jnp.arange(3.))
  E["scan_carry_types"] = lambda: lax.scan(
      lambda c, x: ((c[0], c[1].astype(jnp.int32), c[0].astype(jnp.int32)), x),
      (0., 1., jnp.ones(2)), jnp.arange(3.))
  E["scan_carry_structure"] = lambda: lax.scan(lambda c, x: ((c, c), x), 0., jnp.arange(3.))
  E["scan_negative_unroll"] = lambda: lax.scan(lambda c, x: (c, x), 0., np.arange(3.), unroll=-1)
  E["while_not_callable"] = lambda: lax.while_loop(1, lambda c: c, 0)
  E["while_pred_dtype"] = lambda: lax.while_loop(lambda c: c, lambda c: c + 1, 0)
  E["while_pred_tree"] = lambda: lax.while_loop(lambda c: (c < 3, c < 3), lambda c: c, 0)
  E["while_carry_structure"] = lambda: lax.while_loop(lambda c: c < 3, lambda c: (c, c), 0)
  E["while_carry_dtype"] = lambda: lax.while_loop(lambda c: c[0] < 3,
                                                  lambda c: (c[0], c[1].astype(jnp.int32)),
                                                  (0, 1.5))
  E["fori_bound_types"] = lambda: lax.fori_loop(jnp.int16(0), jnp.int32(3), lambda i, c: c, 0)
  E["fori_unroll_dynamic"] = lambda: jax.jit(lambda n: lax.fori_loop(
      0, n, lambda i, c: c, 0, unroll=2))(3)
  E["fori_not_callable"] = lambda: lax.fori_loop(0, 3, 4, 0)
  E["tracer_in_body"] = lambda: lax.fori_loop(1, 4, lambda i, c: c * np.arange(4.)[i], 1.)
  E["tracer_in_cond_branch"] = lambda: lax.cond(True, lambda c: c * np.arange(4.)[c.astype(int)],
                                                lambda c: c, 1.)
  E["tracer_in_scan"] = lambda: lax.scan(lambda c, y: (c * np.arange(4.)[c.astype(int)], y), 1.,
                                         np.arange(3.))
  E["tracer_in_while_cond"] = lambda: lax.while_loop(lambda c: np.arange(4.)[c.astype(int)] > 0,
                                                     lambda c: c, 1.)
  E["assoc_not_callable"] = lambda: lax.associative_scan(1, np.arange(3.))
  E["assoc_lengths"] = lambda: lax.associative_scan(lambda a, b: a, (np.arange(3.), np.arange(4.)))
  return E


_ERRORS = list(_errors(pyjax, pjnp, plax))


@pytest.mark.parametrize("name", _ERRORS)
def test_error(name):
  rj, rp = _run_both(lambda jx, jnp, lax: _errors(jx, jnp, lax)[name])
  assert isinstance(rj, Exception) and isinstance(rp, Exception)


# --------------------------------------------------------------------------------------
# jaxpr text, compared with JAX
# --------------------------------------------------------------------------------------
_C3 = np.arange(3.0, dtype=np.float32)


def _jaxpr_programs(jax, jnp, lax):
  C = {}
  C["cond_bool"] = (lambda p, x: lax.cond(p, lambda x: x + 1., lambda x: x * 2., x), (True, 1.0))
  C["cond_int"] = (lambda p, x: lax.cond(p, lambda x: x + 1., lambda x: x * 2., x), (1, np.ones(3, np.float32)))
  C["switch"] = (lambda x: lax.switch(2, [lambda x: x, lambda x: x + 1, jnp.sin], x), (1.0,))
  C["switch_dynamic"] = (lambda x, i: lax.switch(i, [lambda x: x + 1, lambda x: x], x), (1.0, 1))
  C["while"] = (lambda x: lax.while_loop(lambda c: c[0] < 10, lambda c: (c[0] + 1, c[1] * x), (0, x)), (2.0,))
  C["while_const"] = (lambda x: lax.while_loop(lambda c: c < x, lambda c: c + c + c, 1.0), (2.0,))
  C["while_move_to_const"] = (lambda x, y: lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1]), (x, y)), (1, 2.0))
  C["scan"] = (lambda c, xs: lax.scan(lambda c, x: (c + x, c * x), c, xs), (0., np.arange(3, dtype=np.float32)))
  C["scan_reverse_unroll"] = (lambda c, xs: lax.scan(lambda c, x: (c + x, c * x), c, xs, reverse=True, unroll=2), (0., np.arange(3, dtype=np.float32)))
  C["scan_forwarding"] = (lambda x, xs: lax.scan(lambda c, x: (c + x * c, (x, c)), x, xs), (1.0, np.arange(3, dtype=np.float32)))
  C["scan_closure"] = (lambda x, xs: lax.scan(lambda c, x: (c + x * c + xs[0], x + c), x, xs), (1.0, np.arange(3, dtype=np.float32)))
  C["scan_carry_to_const"] = (lambda x: lax.scan(lambda c, x: (c, c), x, None, length=2), (1.0,))
  C["fori_static"] = (lambda x: lax.fori_loop(0, 5, lambda i, c: c + i, x), (1.0,))
  C["fori_unroll"] = (lambda x: lax.fori_loop(0, 3, lambda i, c: c + i, x, unroll=True), (1.0,))
  C["fori_dynamic"] = (lambda x, n: lax.fori_loop(0, n, lambda i, c: c + i, x), (1.0, 3))
  C["fori_int16"] = (lambda x, n: lax.fori_loop(0, n, lambda i, c: c + i, x), (1.0, np.int16(3)))
  C["map"] = (lambda x: lax.map(jnp.sin, x), (np.ones(3, np.float32),))
  C["map_tree"] = (lambda x: lax.map(lambda t: {"a": t[0] + 1, "b": t[1]}, (x, x)), (np.ones((2, 3), np.float32),))
  C["associative_scan"] = (lambda x: lax.associative_scan(jnp.add, x), (np.ones(4, np.float32),))
  C["associative_scan_reverse"] = (lambda x: lax.associative_scan(jnp.multiply, x, reverse=True), (np.ones(5, np.float32),))
  C["cond_consts"] = (lambda p, x, y: lax.cond(p, lambda x: x + _C3 + y, lambda x: x * 2., x), (True, np.ones(3, np.float32), 2.0))
  C["cond_forwarding"] = (lambda p, x, y: lax.cond(p, lambda x: (x, y), lambda x: (x, x * 2), x), (True, 1.0, 2.0))
  C["cond_literal_outputs"] = (lambda p: lax.cond(p, lambda: 1.0, lambda: jnp.float32(2.)), (True,))
  C["cond_concrete_pred"] = (lambda x: lax.cond(True, lambda x: x + 1, lambda x: x, x), (1.0,))
  C["cond_array_pred"] = (lambda x: lax.cond(jnp.int32(3), lambda x: x + 1, lambda x: x, x), (1.0,))
  C["nested"] = (lambda x: lax.fori_loop(0, 3, lambda i, c: lax.cond(i > 1, lambda c: c * 2, lambda c: c + 1, c), x), (1.0,))
  def br(x):
    return x * 2.

  def body(c, x):
    return c + x, c
  C["shared_bodies"] = (lambda p, x: (lax.cond(p, br, br, x), lax.scan(body, x, jnp.ones(3)),
                                      lax.scan(body, x + 1, jnp.ones(3))), (True, 1.0))
  C["vmap_cond"] = (jax.vmap(lambda x: lax.cond(x > 0, lambda x: x * 2., lambda x: x - 1., x)), (np.ones(3, np.float32),))
  C["vmap_cond_unbatched_pred"] = (jax.vmap(lambda x, p: lax.cond(p, lambda x: x * 2., lambda x: x - 1., x), in_axes=(0, None)), (np.ones(3, np.float32), True))
  C["vmap_while"] = (jax.vmap(lambda x: lax.while_loop(lambda c: c < 5., lambda c: c * 2., x)), (np.ones(3, np.float32),))
  C["vmap_scan"] = (jax.vmap(lambda x: lax.scan(lambda c, y: (c + y, c), 0., x)), (np.ones((2, 3), np.float32),))
  C["jvp_scan"] = (lambda x: jax.jvp(lambda x: lax.scan(lambda c, y: (jnp.sin(c) * y, c), x, jnp.arange(3.)), (x,), (x,)), (1.0,))
  C["jvp_while"] = (lambda x: jax.jvp(lambda x: lax.while_loop(lambda c: c < 5., lambda c: c * 2., x), (x,), (x,)), (1.0,))
  C["jvp_cond"] = (lambda x: jax.jvp(lambda x: lax.cond(x > 0, jnp.sin, jnp.cos, x), (x,), (x,)), (1.0,))
  return C


_JAXPRS = list(_jaxpr_programs(pyjax, pjnp, plax))


@pytest.mark.parametrize("name", _JAXPRS)
def test_jaxpr_text(name):
  jax, jnp, lax = _real_jax()
  fj, args = _jaxpr_programs(jax, jnp, lax)[name]
  fp, _ = _jaxpr_programs(pyjax, pjnp, plax)[name]
  assert str(pyjax.make_jaxpr(fp)(*args)) == str(jax.make_jaxpr(fj)(*args))


def test_grad_scan_jaxpr_is_two_scans():
  """Reverse mode of a scan is a forward scan emitting residuals and a reverse scan over
  them (not an unrolled loop)."""
  f = lambda x: plax.scan(lambda c, _: (pjnp.sin(c) * x, None), x, None, length=50)[0]  # noqa: E731
  jaxpr = pyjax.make_jaxpr(pyjax.grad(f))(1.0).jaxpr
  scans = [e for e in jaxpr.eqns if e.primitive.name == "scan"]
  assert len(scans) == 2
  assert [e.params["reverse"] for e in scans] == [False, True]
  assert all(e.params["length"] == 50 for e in scans)
  assert len(jaxpr.eqns) < 10


# --------------------------------------------------------------------------------------
# tracing once per signature; known answers without JAX; backend semantics
# --------------------------------------------------------------------------------------
def test_body_traced_once_per_signature():
  calls = []

  def body(c, x):
    calls.append(1)
    return c + x, c * x

  xs = pjnp.arange(3.0)
  for _ in range(3):
    plax.scan(body, 0.0, xs)
  assert len(calls) == 1
  plax.scan(body, 0.0, pjnp.arange(4.0))       # same body signature (f32[] slices)
  assert len(calls) == 1
  plax.scan(body, pjnp.zeros(2), pjnp.ones((3, 2)))   # a new signature traces again
  assert len(calls) == 2

  def branch(x):
    calls.append(1)
    return x * 2

  for p in (True, False, True):
    plax.cond(p, branch, branch, 1.0)
  assert len(calls) == 3     # one trace serves both branches

  def w_body(c):
    calls.append(1)
    return c + 1
  for _ in range(3):
    plax.while_loop(lambda c: c < 3, w_body, 0)
  assert len(calls) == 4


def test_closure_over_tracer_not_cached():
  def f(x):
    return plax.scan(lambda c, _: (c * x, None), 1.0, None, length=3)[0]
  assert float(pyjax.grad(f)(2.0)) == pytest.approx(12.0)
  assert float(pyjax.grad(f)(3.0)) == pytest.approx(27.0)
  assert float(pyjax.jit(f)(2.0)) == pytest.approx(8.0)


def test_known_answers():
  c, ys = plax.scan(lambda c, x: (c + x, c * x), 0.0, pjnp.arange(4.0))
  np.testing.assert_allclose(c, 6.0)
  np.testing.assert_allclose(ys, [0.0, 0.0, 2.0, 9.0])
  assert ys.dtype == np.float32 and c.dtype == np.float32
  np.testing.assert_allclose(plax.fori_loop(0, 5, lambda i, c: c * 2 + i, 1), 58)
  assert plax.while_loop(lambda c: c < 10, lambda c: c + 3, 0).weak_type
  np.testing.assert_allclose(plax.switch(9, [lambda: 1.0, lambda: 2.0, lambda: 3.0]), 3.0)
  np.testing.assert_allclose(plax.switch(-9, [lambda: 1.0, lambda: 2.0, lambda: 3.0]), 1.0)
  np.testing.assert_allclose(plax.associative_scan(pjnp.add, pjnp.arange(6)), [0, 1, 3, 6, 10, 15])
  np.testing.assert_allclose(plax.associative_scan(pjnp.add, pjnp.arange(4), reverse=True),
                             [6, 6, 5, 3])
  g = pyjax.grad(lambda x: plax.scan(lambda c, _: (c * x, None), 1.0, None, length=4)[0])
  np.testing.assert_allclose(g(1.5), 4 * 1.5 ** 3, rtol=1e-6)
  lanes = pyjax.vmap(lambda x: plax.while_loop(lambda c: c < 8., lambda c: c * 2., x))(
      pjnp.array([1.0, 3.0, 9.0, 0.6]))
  np.testing.assert_allclose(lanes, [8.0, 12.0, 9.0, 9.6], rtol=1e-6)
  sel = pyjax.vmap(lambda p, x: plax.cond(p, lambda x: x + 1, lambda x: x - 1, x))(
      pjnp.array([True, False]), pjnp.array([1.0, 1.0]))
  np.testing.assert_allclose(sel, [2.0, 0.0])


def test_backend_cond_clamps_index():
  impl = cpu_eager.impls["cond"]
  b0 = core.ClosedJaxpr(core.Jaxpr([], [], [core.Literal(1.0, core.get_aval(1.0))], []), [])
  b1 = core.ClosedJaxpr(core.Jaxpr([], [], [core.Literal(2.0, core.get_aval(2.0))], []), [])
  assert float(impl(np.int32(7), branches=(b0, b1))[0]) == 2.0
  assert float(impl(np.int32(-1), branches=(b0, b1))[0]) == 2.0
  assert float(impl(np.int32(0), branches=(b0, b1))[0]) == 1.0


def test_backend_while_batched_predicate():
  """A while whose predicate is a vector iterates until every lane is done and only
  updates the live lanes."""
  aval = ShapedArray((3,), np.dtype(np.float32))
  cj = core.trace_to_jaxpr(lambda c: [plax.lt(c, np.float32(5.0))], [aval])
  bj = core.trace_to_jaxpr(lambda c: [c * np.float32(2.0)], [aval])
  out = cpu_eager.impls["while"](np.array([1.0, 3.0, 7.0], np.float32), cond_jaxpr=cj,
                                 body_jaxpr=bj, cond_nconsts=0, body_nconsts=0)
  np.testing.assert_allclose(out[0], [8.0, 6.0, 7.0])


def test_jit_runs_control_flow():
  f = pyjax.jit(lambda x, n: (plax.fori_loop(0, n, lambda i, c: c + i, x),
                              plax.cond(x > 0, lambda: x, lambda: -x),
                              plax.scan(lambda c, y: (c + y, c), x, pjnp.arange(3.0))[0]))
  a, b, c = f(1.0, 4)
  assert (float(a), float(b), float(c)) == (7.0, 1.0, 4.0)


def test_trace_cache_is_weak():
  import gc
  import weakref

  def body(c, x):
    return c + x, c
  plax.scan(body, 0.0, pjnp.arange(2.0))
  assert body in cf_common._trace_cache
  r = weakref.ref(body)
  del body
  gc.collect()
  assert r() is None


def test_grad_scan_hoists_loop_invariant_residuals():
  """A residual computed from the scan's constants only (``W.T``) is computed once
  before the loop, not stacked per iteration."""
  W = pjnp.ones((4, 4))

  def f(W, xs):
    h, _ = plax.scan(lambda h, x: (pjnp.tanh(h @ W.T + x), None), pjnp.zeros(4), xs)
    return h.sum()
  jaxpr = pyjax.make_jaxpr(pyjax.grad(f))(W, pjnp.ones((7, 4))).jaxpr
  fwd = next(e for e in jaxpr.eqns if e.primitive.name == "scan")
  assert all(v.aval.shape != (7, 4, 4) for v in fwd.outvars)
  assert any(e.primitive.name == "transpose" for e in jaxpr.eqns)
