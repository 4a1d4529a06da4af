"""lax/misc.py's primitives and functions: split/stack/unstack/tile/copy, mulhi, the total-order
comparisons, empty/stage/optimization_barrier/dce_sink, dtype/shape_as_value/broadcast_like,
Tolerance/AccuracyMode; and jax.lax's primitives under JAX's names.

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


# --- split / stack / unstack / tile / copy ------------------------------------------------
def _structural_prog(jax, jnp, lax):
  x = jnp.arange(12.).reshape(4, 3)
  return [lax.split(x, (1, 3)), lax.split(x, (1, 2), axis=-1), lax.split(x, (4,)),
          lax.stack([x, x * 2], axis=1), lax.stack([1., 2.]), lax.stack([x]),
          lax.unstack(x, axis=1), lax.unstack(np.arange(4.)),
          lax.tile(x, (2, 1)), lax.tile(x, (1, 0)), lax.tile(jnp.int8(3), ()),
          jax.grad(lambda x: lax.split(x, (1, 3))[1].sum())(x),
          jax.grad(lambda x: (lax.tile(x, (2, 3)) ** 2).sum())(x),
          jax.grad(lambda x: (lax.stack([x, x * 2], axis=1) ** 2).sum())(x),
          jax.grad(lambda x: (lax.unstack(x, axis=1)[0] ** 2).sum())(x),
          jax.vmap(lambda x: lax.split(x, (1, 2)))(x),
          jax.vmap(lambda x: lax.tile(x, (2,)), in_axes=1)(x),
          jax.vmap(lambda x, y: lax.stack([x, y]), in_axes=(0, None))(x, x[0]),
          jax.vmap(lambda x: lax.unstack(x), in_axes=1)(x),
          jax.jit(lambda x: lax.split(x, (2, 2)))(x),
          jax.jvp(lambda x: lax.tile(x, (1, 2)), (x,), (x,))[1]]


def test_structural_matches_jax(jax):
  assert_same_tree(_structural_prog(*PY), _structural_prog(*libraries(jax)))


@pytest.mark.parametrize("name", ["split", "split_grad", "split_vmap", "tile_grad", "tile_vmap",
                                  "stack_grad", "stack_vmap", "unstack_grad", "unstack_vmap",
                                  "copy", "copy_grad"])
def test_structural_jaxprs_match_jax(jax, name):
  def progs(jax, jnp, lax):
    return {
        "split": lambda x: lax.split(x, (1, 3)),
        "split_grad": jax.grad(lambda x: lax.split(x, (1, 3))[1].sum()),
        "split_vmap": jax.vmap(lambda x: lax.split(x, (1, 2))),
        "tile_grad": jax.grad(lambda x: lax.tile(x, (2, 1)).sum()),
        "tile_vmap": jax.vmap(lambda x: lax.tile(x, (2,))),
        "stack_grad": jax.grad(lambda x: lax.stack([x, x * 2], axis=1).sum()),
        "stack_vmap": jax.vmap(lambda x: lax.stack([x, x], axis=1)),
        "unstack_grad": jax.grad(lambda x: lax.unstack(x, axis=1)[0].sum()),
        "unstack_vmap": jax.vmap(lambda x: lax.unstack(x)),
        "copy": lambda x: lax.copy_p.bind(x),
        "copy_grad": jax.grad(lambda x: lax.copy_p.bind(x).sum()),
    }[name]
  x = np.arange(12., dtype=np.float32).reshape(4, 3)
  assert jaxpr_text(pyjax, progs(*PY), x) == jaxpr_text(jax, progs(*libraries(jax)), x)


@pytest.mark.parametrize("case", [
    lambda lax, jnp, x: lax.stack([x, x.astype(int)]),
    lambda lax, jnp, x: lax.stack([x, jnp.ones((3, 2))]),
    lambda lax, jnp, x: lax.stack([x, jnp.ones(3)]),
    lambda lax, jnp, x: lax.stack([]),
    lambda lax, jnp, x: lax.stack([x, x], axis=4),
    lambda lax, jnp, x: lax.unstack(jnp.float32(1)),
    lambda lax, jnp, x: lax.unstack(x, axis=2),
    lambda lax, jnp, x: lax.split(x, (1, 3)),
    lambda lax, jnp, x: lax.split(x, (3, -1)),
    lambda lax, jnp, x: lax.split(x, (1, 1), axis=3),
    lambda lax, jnp, x: lax.tile(x, (2,)),
])
def test_structural_errors_match_jax(jax, case):
  assert_raises_same(lambda: case(lax, jnp, jnp.ones((2, 3))),
                     lambda: case(jax.lax, jax.numpy, jax.numpy.ones((2, 3))))


def test_clearer_errors_than_jax():
  with pytest.raises(ValueError, match="tile reps must be nonnegative"):
    lax.tile(jnp.ones((2, 3)), (2, -1))   # JAX fails while compiling
  with pytest.raises(ValueError, match="unstack requires arrays with rank > 0"):
    lax.unstack_p.bind(jnp.float32(1), axis=0)   # JAX: IndexError from its dtype rule
  with pytest.raises(NotImplementedError, match="Unimplemented group_offset support"):
    lax.ragged_dot(jnp.ones((5, 3)), jnp.ones((2, 3, 4)), jnp.array([2, 3]),
                   group_offset=jnp.array([0]))   # JAX: TypeError (unhashable param)


def test_structural_against_numpy():
  rng = np.random.RandomState(0)
  x = rng.randn(3, 4, 5).astype(np.float32)
  for sizes, axis in [((1, 2), 0), ((0, 4), 1), ((2, 2, 1), 2)]:
    got = lax.split(x, sizes, axis=axis)
    want = np.split(x, np.cumsum(sizes)[:-1], axis=axis)
    assert [g.shape for g in got] == [w.shape for w in want]
    for g, w in zip(got, want):
      np.testing.assert_array_equal(g, w)
  np.testing.assert_array_equal(lax.tile(x, (2, 1, 3)), np.tile(x, (2, 1, 3)))
  np.testing.assert_array_equal(lax.stack([x, x + 1], axis=-1), np.stack([x, x + 1], -1))
  for a, b in zip(lax.unstack(x, axis=2), np.moveaxis(x, 2, 0)):
    np.testing.assert_array_equal(a, b)
  c = lax.copy_p.bind(jnp.asarray(x))
  np.testing.assert_array_equal(c, x)
  assert lax.split(jnp.ones(2, jnp.bfloat16), (1, 1))[0].dtype == jnp.bfloat16
  w = lax.stack([1., 2.])
  assert w.dtype == np.float32 and w.weak_type


# --- mulhi and the total-order comparisons ------------------------------------------------------
def _wide_mulhi(x, y, bits, signed):
  out = []
  for a, b in zip(x.ravel().tolist(), y.ravel().tolist()):
    p = (int(a) * int(b)) >> bits
    if not signed:
      p &= (1 << bits) - 1
    out.append(p)
  return np.array(out, x.dtype).reshape(x.shape)


@pytest.mark.parametrize("dt", [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32])
def test_mulhi_against_python_ints(dt):
  rng = np.random.RandomState(1)
  info = np.iinfo(dt)
  x = rng.randint(info.min, int(info.max) + 1, size=64, dtype=np.int64).astype(dt)
  y = rng.randint(info.min, int(info.max) + 1, size=64, dtype=np.int64).astype(dt)
  x[:4] = [info.min, info.max, 0, -1 if info.min < 0 else 1]
  y[:4] = [info.min, info.max, info.max, info.min]
  got = lax.mulhi(jnp.asarray(x), jnp.asarray(y))
  assert got.dtype == dt
  np.testing.assert_array_equal(got, _wide_mulhi(x, y, info.bits, info.min < 0))


@pytest.mark.parametrize("dt", [np.int64, np.uint64])
def test_mulhi_64_bit(x64, dt):
  rng = np.random.RandomState(2)
  info = np.iinfo(dt)
  x = rng.randint(np.iinfo(np.int64).min, np.iinfo(np.int64).max, size=64, dtype=np.int64).astype(dt)
  y = rng.randint(np.iinfo(np.int64).min, np.iinfo(np.int64).max, size=64, dtype=np.int64).astype(dt)
  x[:3] = [info.min, info.max, info.max]
  y[:3] = [info.min, info.max, info.min]
  got = lax.mulhi(jnp.asarray(x), jnp.asarray(y))
  np.testing.assert_array_equal(got, _wide_mulhi(x, y, 64, info.min < 0))
  np.testing.assert_array_equal(pyjax.jit(lax.mulhi)(x, y), got)


def _mulhi_prog(jax, jnp, lax):
  a = jnp.array([2 ** 30, -5, 7], jnp.int32)
  b = jnp.array([8, 3, -2 ** 31], jnp.int32)
  return [lax.mulhi(a, b), lax.mulhi(a, 3), jax.vmap(lambda x: lax.mulhi(x, 3))(a),
          jax.jit(lax.mulhi)(a, b), lax.mulhi(jnp.array([2 ** 31, 5], jnp.uint32), jnp.uint32(8)),
          jax.grad(lambda x: lax.mulhi(x, 3).astype(jnp.float32).sum(), allow_int=True)(a)]


def test_mulhi_matches_jax(jax):
  assert_same_tree(_mulhi_prog(*PY), _mulhi_prog(*libraries(jax)))
  assert_raises_same(lambda: lax.mulhi(jnp.ones(2), jnp.ones(2)),
                     lambda: jax.lax.mulhi(jax.numpy.ones(2), jax.numpy.ones(2)))
  assert_raises_same(lambda: lax.mulhi(jnp.int32(1), jnp.int8(1)),
                     lambda: jax.lax.mulhi(jax.numpy.int32(1), jax.numpy.int8(1)))
  f = lambda lax, jnp: (lambda x: lax.mulhi(x, 3))
  assert (jaxpr_text(pyjax, f(lax, jnp), np.arange(3, dtype=np.int32))
          == jaxpr_text(jax, f(jax.lax, jax.numpy), np.arange(3, dtype=np.int32)))


_SPECIAL = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 1e-30, -2.5],
                    np.float32)


@pytest.mark.parametrize("dt", [np.float32, np.float16, "bfloat16", np.int32, np.bool_])
def test_total_order_comparisons_match_jax(jax, dt):
  dt = jnp.bfloat16 if dt == "bfloat16" else dt
  vals = _SPECIAL if np.dtype(dt).kind != "b" else np.array([True, False])
  if np.dtype(dt).kind in "iub":
    vals = np.array([0, 1, -3, 7, 2], dt) if np.dtype(dt).kind != "b" else vals
  x = np.repeat(np.asarray(vals).astype(dt), len(vals))
  y = np.tile(np.asarray(vals).astype(dt), len(vals))
  for name in ("eq_to_p", "lt_to_p", "le_to_p"):
    ours = getattr(lax, name).bind(jnp.asarray(x), jnp.asarray(y))
    theirs = getattr(jax.lax, name).bind(jax.numpy.asarray(x), jax.numpy.asarray(y))
    assert_same_tree(ours, theirs)


def test_total_order_comparisons_rules(jax):
  f = lambda lax: (lambda a, b: lax.lt_to_p.bind(a, b))
  x = np.ones((2, 3), np.float32)
  assert jaxpr_text(pyjax, f(lax), x, x) == jaxpr_text(jax, f(jax.lax), x, x)
  assert_raises_same(lambda: lax.lt_to_p.bind(jnp.ones(2) + 0j, jnp.ones(2) + 0j),
                     lambda: jax.lax.lt_to_p.bind(jax.numpy.ones(2) + 0j, jax.numpy.ones(2) + 0j))
  v = pyjax.vmap(lambda a, b: lax.le_to_p.bind(a, b), in_axes=(0, None))(
      jnp.array([[1., np.nan], [-0., 2.]]), jnp.array([0., np.nan]))
  np.testing.assert_array_equal(v, [[False, True], [True, True]])
  assert pyjax.grad(lambda a: lax.eq_to_p.bind(a, a).astype(np.float32) * a)(1.) == 1.


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


def test_dtype_matches_jax(jax):
  cases = [1, 1.0, True, 1j, int, float, bool, complex, np.float32, np.int8, "bfloat16",
           np.dtype("float16"), np.array([1, 2], np.int16), np.float64(1.0), jnp.bfloat16]
  for c in cases:
    theirs_c = jax.numpy.bfloat16 if c is jnp.bfloat16 else c
    assert lax.dtype(c) == jax.lax.dtype(theirs_c), c
  assert lax.dtype(jnp.ones(2, jnp.int8)) == np.int8
  for bad in [None, "foo", object(), [1, 2], np.array(["a"]), "U"]:
    # an object()'s message shows its address
    assert_raises_same(lambda: lax.dtype(bad), lambda: jax.lax.dtype(bad),
                       message=type(bad) is not object)


def test_dtype_x64_and_warnings(x64, jax):
  assert lax.dtype(1) == np.int64 and lax.dtype(np.float64) == np.float64
  assert lax.dtype(np.array([1.], np.float64)) == jax.lax.dtype(np.array([1.], np.float64))


def test_dtype_warns_without_x64():
  with pytest.warns(UserWarning, match="Explicitly requested dtype int64"):
    assert lax.dtype(np.int64) == np.int32


def test_tolerance_and_accuracy_mode(jax):
  t = lax.Tolerance(atol=1e-3, ulps=2)
  assert (t.atol, t.rtol, t.ulps) == (1e-3, 0.0, 2)
  for kw in [dict(), dict(atol=-1.0)]:
    assert_raises_same(lambda: lax.Tolerance(**kw), lambda: jax.lax.Tolerance(**kw))
  assert [m.name for m in lax.AccuracyMode] == [m.name for m in jax.lax.AccuracyMode]
  assert [m.value for m in lax.AccuracyMode] == [m.value for m in jax.lax.AccuracyMode]
  assert str(lax.AccuracyMode.HIGHEST) == str(jax.lax.AccuracyMode.HIGHEST)


# --- the primitives under JAX's names ------------------------------------------------------
def test_primitive_names_are_the_primitives():
  from pyjax._src.lax import elementwise, shapes
  assert lax.add_p is elementwise.add_p and lax.reshape_p is shapes.reshape_p
  assert lax.add_p.bind(jnp.float32(1), jnp.float32(2)) == 3
  assert lax.linear_solve_p.name == "custom_linear_solve"
  for name in ["scan_p", "while_p", "cond_p", "stop_gradient_p", "igamma_p", "polygamma_p",
               "regularized_incomplete_beta_p", "bessel_i0e_p", "eq_to_p", "split_p", "tile_p",
               "stack_p", "unstack_p", "copy_p", "device_put_p", "sharding_constraint_p",
               "approx_top_k_p", "rng_bit_generator_p", "rng_uniform_p", "create_token_p",
               "after_all_p", "dce_sink_p", "stage_p", "optimization_barrier_p", "mulhi_p",
               "ragged_all_to_all_p", "select_and_scatter_p"]:
    p = getattr(lax, name)
    assert p.name == name[:-2] or name == "linear_solve_p", name


def test_primitive_names_match_jax(jax):
  for name in dir(jax.lax):
    if name.endswith("_p"):
      assert getattr(lax, name).name == getattr(jax.lax, name).name, name
