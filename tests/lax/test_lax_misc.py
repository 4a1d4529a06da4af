"""The rest of jax.lax: split/stack/unstack/tile/copy, mulhi, total-order comparisons,
empty/stage/optimization_barrier/dce_sink, tokens, composite, platform_dependent,
custom_linear_solve/custom_root, approx_max_k/approx_min_k, rng_uniform/rng_bit_generator,
ragged_dot/ragged_dot_general, scaled_dot, conv_general_dilated_patches/local,
with_sharding_constraint/device_put_p, pbroadcast/pswapaxes/pcast/psend/precv/
ragged_all_to_all, select_and_scatter, dtype/shape_as_value/broadcast_like.

Programs are run with pyjax and with real JAX (``jax`` fixture) and compared: values,
dtypes, weak types, jaxpr text, exception classes and messages.  Known-answer tests
that need no JAX compare with NumPy or with recorded values.
"""

import numpy as np
import pytest

import golden
import pyjax
import pyjax.numpy as jnp
from pyjax import lax
from pyjax._src.runtime.array import SingleDeviceSharding


def _modules(jax):
  return jax, jax.numpy, jax.lax


PY = (pyjax, jnp, lax)


def _leaves(x):
  return pyjax.tree_util.tree_leaves(x)


def _assert_same(ours, theirs, rtol=0.0, atol=0.0):
  """Equal values (to tolerance), dtypes and weak types, leaf by leaf."""
  import jax
  lo = pyjax.tree_util.tree_leaves(ours)
  lt = jax.tree_util.tree_leaves(theirs)
  assert len(lo) == len(lt), (ours, theirs)
  for i, (a, b) in enumerate(zip(lo, lt)):
    an, bn = np.asarray(a), np.asarray(b)
    assert an.dtype == bn.dtype, (i, an.dtype, bn.dtype)
    assert an.shape == bn.shape, (i, an.shape, bn.shape)
    if rtol or atol:
      np.testing.assert_allclose(an.astype(np.float64) if an.dtype.kind not in "cb" else an,
                                 bn.astype(np.float64) if bn.dtype.kind not in "cb" else bn,
                                 rtol=rtol, atol=atol)
    else:
      np.testing.assert_array_equal(an, bn)
    assert getattr(a, "weak_type", False) == getattr(b, "weak_type", False)


def _same_error(f_ours, f_theirs, match_message=True):
  with pytest.raises(Exception) as e_ours:
    f_ours()
  with pytest.raises(Exception) as e_theirs:
    f_theirs()
  assert type(e_ours.value).__name__ == type(e_theirs.value).__name__, (e_ours.value,
                                                                        e_theirs.value)
  if match_message:
    assert str(e_ours.value) == str(e_theirs.value)
  return e_ours.value


def _jaxpr(jax, f, *args):
  return str(jax.make_jaxpr(f)(*args))


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
  _assert_same(_structural_prog(*PY), _structural_prog(*_modules(jax)))


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
  assert _jaxpr(pyjax, progs(*PY), x) == _jaxpr(jax, progs(*_modules(jax)), x)


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
  _same_error(lambda: case(lax, jnp, jnp.ones((2, 3))),
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
  _assert_same(_mulhi_prog(*PY), _mulhi_prog(*_modules(jax)))
  _same_error(lambda: lax.mulhi(jnp.ones(2), jnp.ones(2)),
              lambda: jax.lax.mulhi(jax.numpy.ones(2), jax.numpy.ones(2)))
  _same_error(lambda: lax.mulhi(jnp.int32(1), jnp.int8(1)),
              lambda: jax.lax.mulhi(jax.numpy.int32(1), jax.numpy.int8(1)))
  f = lambda lax, jnp: (lambda x: lax.mulhi(x, 3))
  assert (_jaxpr(pyjax, f(lax, jnp), np.arange(3, dtype=np.int32))
          == _jaxpr(jax, f(jax.lax, jax.numpy), np.arange(3, dtype=np.int32)))


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
    _assert_same(ours, theirs)


def test_total_order_comparisons_rules(jax):
  f = lambda lax: (lambda a, b: lax.lt_to_p.bind(a, b))
  x = np.ones((2, 3), np.float32)
  assert _jaxpr(pyjax, f(lax), x, x) == _jaxpr(jax, f(jax.lax), x, x)
  _same_error(lambda: lax.lt_to_p.bind(jnp.ones(2) + 0j, jnp.ones(2) + 0j),
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
  _assert_same(_misc_prog(*PY), _misc_prog(*_modules(jax)))


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
  assert _jaxpr(pyjax, progs(*PY), x) == _jaxpr(jax, progs(*_modules(jax)), x)


def test_misc_errors_match_jax(jax):
  for case in [lambda lax, jnp: lax.broadcast_like(jnp.ones(2), jnp.zeros((2, 3))),
               lambda lax, jnp: lax.broadcast_like(jnp.ones((2, 2, 3)), jnp.zeros((2, 3)))]:
    _same_error(lambda: case(lax, jnp), lambda: case(jax.lax, jax.numpy))


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
    _same_error(lambda: lax.dtype(bad), lambda: jax.lax.dtype(bad),
                match_message=type(bad) is not object)


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
    _same_error(lambda: lax.Tolerance(**kw), lambda: jax.lax.Tolerance(**kw))
  assert [m.name for m in lax.AccuracyMode] == [m.name for m in jax.lax.AccuracyMode]
  assert [m.value for m in lax.AccuracyMode] == [m.value for m in jax.lax.AccuracyMode]
  assert str(lax.AccuracyMode.HIGHEST) == str(jax.lax.AccuracyMode.HIGHEST)


# --- tokens -------------------------------------------------------------------------------
def test_tokens(jax):
  f = lambda lax: (lambda: lax.after_all(lax.create_token(), lax.create_token()))
  assert _jaxpr(pyjax, f(lax)) == _jaxpr(jax, f(jax.lax))
  g = lambda lax: (lambda: lax.create_token())
  assert _jaxpr(pyjax, g(lax)) == _jaxpr(jax, g(jax.lax))
  tok = lax.create_token()
  assert lax.after_all(tok, lax.create_token(tok)) is not None
  _same_error(lambda: lax.after_all(jnp.ones(2)), lambda: jax.lax.after_all(jax.numpy.ones(2)))
  # a token passed into and created inside jit
  out = pyjax.jit(lambda t, x: (lax.after_all(t), x + 1))(tok, 1.)
  assert float(out[1]) == 2.0
  assert pyjax.vmap(lambda x: (lax.create_token(), x)[1])(jnp.ones(3)).shape == (3,)


# --- composite --------------------------------------------------------------------------------
def _composite_prog(jax, jnp, lax):
  f = lax.composite(lambda x, *, k: lax.sin(x) * k, name="my.sin")
  g = lax.composite(lambda x, y: (x + y, x * 2), name="g", version=3)
  x = jnp.arange(3.)
  return [f(x, k=2.0), jax.jit(lambda x: f(x, k=3.0))(x), g(1., 2.), g(x, x)]


def test_composite_matches_jax(jax):
  _assert_same(_composite_prog(*PY), _composite_prog(*_modules(jax)), rtol=1e-6)
  progs = lambda jnp, lax: [
      (lambda x: lax.composite(lambda x, *, k: lax.sin(x) * k, name="my.sin")(x, k=2.0)),
      (lambda x: lax.composite(lambda x, y: (x + y, x * 2), name="g")(x, x)),
      (lambda x: lax.composite(lambda x, *, k, arr: x * k + arr, name="h", version=2)(
          x, k=2.0, arr=np.ones(3, np.float32))),
  ]
  x = np.arange(3., dtype=np.float32)
  for a, b in zip(progs(jnp, lax), progs(jax.numpy, jax.lax)):
    assert _jaxpr(pyjax, a, x) == _jaxpr(jax, b, x)
  f = lambda lax: lax.composite(lambda x: x * 2, name="t")
  _same_error(lambda: pyjax.grad(f(lax))(1.), lambda: jax.grad(f(jax.lax))(1.))
  _same_error(lambda: pyjax.make_jaxpr(lambda x: lax.composite(lambda x, *, k: x * k, name="t")(
      x, k=x))(1.), lambda: jax.make_jaxpr(lambda x: jax.lax.composite(
          lambda x, *, k: x * k, name="t")(x, k=x))(1.))


def test_composite_batches():
  # JAX has no batching rule for composite; pyjax batches the decomposition
  f = lax.composite(lambda x, y: x * y + 1, name="fma1")
  x = jnp.arange(6.).reshape(2, 3)
  np.testing.assert_allclose(pyjax.vmap(f, in_axes=(0, None))(x, 2.), np.asarray(x) * 2 + 1)
  j = str(pyjax.make_jaxpr(pyjax.vmap(f, in_axes=(0, None)))(x, 2.))
  assert "composite[" in j and "name=fma1" in j


# --- platform_dependent ----------------------------------------------------------------------
def _pd_prog(jax, jnp, lax):
  x = jnp.arange(3.)
  f = lambda x: lax.platform_dependent(x, cpu=lambda x: x * 2, default=lambda x: x + 1)
  h = lambda x: lax.platform_dependent(x, tpu=lambda x: x * 2, default=lambda x: x + 1)
  return [f(x), jax.jit(f)(x), h(x), jax.jit(h)(x), jax.grad(lambda x: jax.jit(f)(x).sum())(x),
          jax.vmap(jax.jit(h))(x)]


def test_platform_dependent_matches_jax(jax):
  _assert_same(_pd_prog(*PY), _pd_prog(*_modules(jax)))
  progs = lambda lax: [
      lambda x: lax.platform_dependent(x, cpu=lambda x: x * 2, default=lambda x: x + 1),
      lambda x: lax.platform_dependent(x, cpu=lambda x: x * 2),
      lambda x: lax.platform_dependent(x, cuda=lambda x: x, rocm=lambda x: x,
                                       default=lambda x: (x, x)[0] * 3)]
  x = np.arange(3., dtype=np.float32)
  for a, b in zip(progs(lax), progs(jax.lax)):
    assert _jaxpr(pyjax, a, x) == _jaxpr(jax, b, x)
  for case in [lambda lax: lax.platform_dependent(1., tpu=lambda x: x),
               lambda lax: lax.platform_dependent(1., gpu=lambda x: x),
               lambda lax: lax.platform_dependent(1., cpu=3),
               lambda lax: lax.platform_dependent(1., cpu=lambda x: x, default=3)]:
    _same_error(lambda: case(lax), lambda: case(jax.lax))


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
  _assert_same(_linear_solve_prog(*PY), _linear_solve_prog(*_modules(jax)), rtol=1e-5,
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
    _same_error(lambda: case(pyjax, lax, jnp.eye(2), jnp.ones(2)),
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
  _assert_same(prog(*PY)[:2], prog(*_modules(jax))[:2], rtol=1e-6)
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
  _assert_same(_root_prog(*PY), _root_prog(*_modules(jax)), rtol=1e-5)
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
    _same_error(lambda: case(pyjax, lax), lambda: case(jax, jax.lax))


# --- approx_max_k / approx_min_k --------------------------------------------------------------
def _ann_prog(jax, jnp, lax):
  x = jnp.arange(12.).reshape(3, 4)
  y = jnp.array([[1., 3., 3., 2., np.nan, -np.inf, 0.]])
  return [lax.approx_max_k(x, 2), lax.approx_min_k(x, 2, reduction_dimension=0),
          lax.approx_max_k(y, 3), lax.approx_max_k(y[:, :4], 2, aggregate_to_topk=False),
          lax.approx_max_k(jnp.array([0., -0., 0.]), 2),
          lax.approx_max_k(jnp.array([-0., 0., -0.]), 2),
          lax.approx_max_k(jnp.ones(3, jnp.bfloat16), 2),
          jax.jit(lambda x: lax.approx_min_k(x, 2))(jnp.array([3., 1., 2.])),
          jax.grad(lambda x: (lax.approx_max_k(x, 2)[0] ** 2).sum())(x),
          jax.vmap(lambda x: lax.approx_min_k(x, 1), in_axes=1)(x)]


def test_approx_top_k_matches_jax(jax):
  _assert_same(_ann_prog(*PY), _ann_prog(*_modules(jax)))
  assert isinstance(lax.approx_max_k(jnp.ones(3), 1), list)
  f = lambda lax: (lambda x: lax.approx_max_k(x, 2))
  x = np.arange(12., dtype=np.float32).reshape(3, 4)
  assert _jaxpr(pyjax, f(lax), x) == _jaxpr(jax, f(jax.lax), x)
  g = lambda jax, lax: jax.vmap(lambda x: lax.approx_max_k(x, 2))
  assert _jaxpr(pyjax, g(pyjax, lax), x) == _jaxpr(jax, g(jax, jax.lax), x)
  for args in [(jnp.arange(3), 1), (jnp.ones(3), 0), (jnp.ones(3), 4), (jnp.float32(1), 1)]:
    jargs = (jax.numpy.asarray(np.asarray(args[0])), args[1])
    _same_error(lambda: lax.approx_max_k(*args), lambda: jax.lax.approx_max_k(*jargs))


@pytest.mark.parametrize("shape,k,recall,axis", [
    ((1, 2000), 2, 0.95, -1), ((2000,), 2, 0.95, 0), ((2000,), 1, 0.95, 0),
    ((1, 2000), 2, 0.5, -1), ((20, 100), 2, 0.95, 0), ((3, 5000), 10, 0.9, 1),
    ((3, 50000), 3, 0.99, 1), ((70000,), 5, 0.95, 0)])
def test_approx_top_k_unaggregated_sizes_match_jax(jax, shape, k, recall, axis):
  x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
  ours = lax.approx_max_k(x, k, recall_target=recall, reduction_dimension=axis,
                          aggregate_to_topk=False)
  theirs = jax.lax.approx_max_k(x, k, recall_target=recall, reduction_dimension=axis,
                                aggregate_to_topk=False)
  _assert_same(ours, theirs)


def test_approx_top_k_is_exact_against_numpy():
  rng = np.random.RandomState(3)
  x = rng.randn(5, 40).astype(np.float32)
  vals, idx = lax.approx_min_k(x, 7)
  want = np.sort(x, axis=1)[:, :7]
  np.testing.assert_array_equal(vals, want)
  np.testing.assert_array_equal(np.take_along_axis(x, np.asarray(idx), 1), want)
  vals, idx = lax.approx_max_k(x, 3, reduction_dimension=0)
  np.testing.assert_array_equal(vals, -np.sort(-x, axis=0)[:3])


# --- rng_bit_generator / rng_uniform -----------------------------------------------------------
# Recorded from JAX 0.10.2 on CPU (key [1, 2, 3, 4]; tests/data/prng_golden.json).
_RBG_KNOWN = golden.prng()["rng_bit_generator"]


@pytest.mark.parametrize("alg,shape", list(_RBG_KNOWN))
def test_rng_bit_generator_known_bits(alg, shape):
  key = jnp.array([1, 2, 3, 4], jnp.uint32)
  new_key, bits = lax.rng_bit_generator(key, shape, algorithm=lax.RandomAlgorithm[alg])
  want_key, want_bits = _RBG_KNOWN[(alg, shape)]
  np.testing.assert_array_equal(new_key, want_key)
  np.testing.assert_array_equal(np.ravel(bits), want_bits)
  assert bits.shape == shape and bits.dtype == np.uint32


_RBG_SHAPES = [(), (3,), (2, 3), (3, 5), (1, 7), (5, 1, 3), (4, 2)]
_RBG_CASES = [("RNG_DEFAULT", "uint32"), ("RNG_THREE_FRY", "uint32"), ("RNG_PHILOX", "uint8"),
              ("RNG_THREE_FRY", "uint16")]
_RBG_SLOW = [(a, d) for a in ("RNG_DEFAULT", "RNG_THREE_FRY", "RNG_PHILOX")
             for d in ("uint8", "uint16", "uint32") if (a, d) not in _RBG_CASES]


@pytest.mark.parametrize("alg,dt", _RBG_CASES + [pytest.param(*c, marks=pytest.mark.slow)
                                                 for c in _RBG_SLOW])
def test_rng_bit_generator_matches_jax(jax, alg, dt):
  keys = [np.array([1, 2, 3, 4], np.uint32),
          np.array([0xFFFFFFFF, 7, 0xFFFFFFFE, 0xFFFFFFFF], np.uint32)]
  for key in keys:
    for shape in _RBG_SHAPES:
      ours = lax.rng_bit_generator(key, shape, dtype=np.dtype(dt),
                                   algorithm=lax.RandomAlgorithm[alg])
      theirs = jax.lax.rng_bit_generator(key, shape, dtype=np.dtype(dt),
                                         algorithm=jax.lax.RandomAlgorithm[alg])
      _assert_same(ours, theirs)


def test_rng_bit_generator_64_bit_matches_jax(jax, x64):
  key = np.array([5, 6, 7, 8], np.uint32)
  for alg in ["RNG_DEFAULT", "RNG_THREE_FRY"]:
    for shape in [(3,), (2, 3)]:
      _assert_same(lax.rng_bit_generator(key, shape, dtype=np.uint64,
                                         algorithm=lax.RandomAlgorithm[alg]),
                   jax.lax.rng_bit_generator(key, shape, dtype=np.uint64,
                                             algorithm=jax.lax.RandomAlgorithm[alg]))
  key64 = np.array([3, 9], np.uint64)
  _assert_same(lax.rng_bit_generator(key64, (4,)), jax.lax.rng_bit_generator(key64, (4,)))


def test_rng_bit_generator_transforms_match_jax(jax):
  def prog(jax, jnp, lax):
    k = jnp.array([1, 2, 3, 4], jnp.uint32)
    return [jax.jit(lambda k: lax.rng_bit_generator(k, (3,)))(k),
            jax.vmap(lambda k: lax.rng_bit_generator(k, (3,)))(jnp.stack([k, k + 1]))]
  _assert_same(prog(*PY), prog(*_modules(jax)))
  f = lambda lax: (lambda k: lax.rng_bit_generator(k, (3,)))
  k = np.array([1, 2, 3, 4], np.uint32)
  assert _jaxpr(pyjax, f(lax), k) == _jaxpr(jax, f(jax.lax), k)
  _same_error(lambda: lax.rng_bit_generator(k, (2,), dtype=jnp.int32),
              lambda: jax.lax.rng_bit_generator(k, (2,), dtype=jax.numpy.int32))
  with pytest.raises(TypeError, match="uint32\\[4\\]"):
    lax.rng_bit_generator(jnp.zeros(3, jnp.uint32), (2,))


def test_rng_uniform(jax):
  a = lax.rng_uniform(0., 1., (1000,))
  b = lax.rng_uniform(0., 1., (1000,))
  assert a.dtype == np.float32 and a.weak_type and a.shape == (1000,)
  assert float(a.min()) >= 0 and float(a.max()) < 1 and not np.array_equal(a, b)
  assert 0.4 < float(a.mean()) < 0.6
  i = lax.rng_uniform(np.int32(3), np.int32(7), (500,))
  assert i.dtype == np.int32 and set(np.unique(i)) == {3, 4, 5, 6}
  j = pyjax.jit(lambda: lax.rng_uniform(0., 1., (3,)))
  assert not np.array_equal(j(), j())
  v = pyjax.vmap(lambda lo: lax.rng_uniform(lo, lo + 1., (4,)))(jnp.array([0., 10.]))
  assert v.shape == (2, 4) and float(v[1].min()) >= 10 and float(v[0].max()) < 1
  f = lambda lax: (lambda a: lax.rng_uniform(a, 1.0, (3,)))
  assert _jaxpr(pyjax, f(lax), 0.) == _jaxpr(jax, f(jax.lax), 0.)
  for case in [lambda lax, jnp: lax.rng_uniform(0., 1, (3,)),
               lambda lax, jnp: lax.rng_uniform(jnp.zeros(2), 1., (3,))]:
    _same_error(lambda: case(lax, jnp), lambda: case(jax.lax, jax.numpy))


# --- ragged_dot / ragged_dot_general ---------------------------------------------------------
def _ragged_reference(lhs, rhs, gs):
  out = np.zeros((lhs.shape[0], rhs.shape[2]), np.float64)
  start = 0
  for g, n in enumerate(gs):
    out[start:start + n] = lhs[start:start + n].astype(np.float64) @ rhs[g]
    start += n
  return out


def test_ragged_dot_against_numpy():
  rng = np.random.RandomState(0)
  lhs = rng.randn(9, 3).astype(np.float32)
  rhs = rng.randn(3, 3, 4).astype(np.float32)
  gs = np.array([2, 3, 1], np.int32)
  np.testing.assert_allclose(lax.ragged_dot(lhs, rhs, gs), _ragged_reference(lhs, rhs, gs),
                             rtol=1e-5, atol=1e-5)
  gl, gr = pyjax.grad(lambda a, b: (lax.ragged_dot(a, b, gs) ** 2).sum(), argnums=(0, 1))(
      lhs, rhs)
  out = _ragged_reference(lhs, rhs, gs)
  want_l = np.zeros_like(lhs, np.float64)
  want_r = np.zeros_like(rhs, np.float64)
  start = 0
  for g, n in enumerate(gs):
    want_l[start:start + n] = 2 * out[start:start + n] @ rhs[g].T
    want_r[g] = lhs[start:start + n].T.astype(np.float64) @ (2 * out[start:start + n])
    start += n
  np.testing.assert_allclose(gl, want_l, rtol=1e-4, atol=1e-4)
  np.testing.assert_allclose(gr, want_r, rtol=1e-4, atol=1e-4)


def _ragged_prog(jax, jnp, lax):
  rng = np.random.RandomState(0)
  lhs = jnp.array(rng.randn(7, 3).astype(np.float32))
  rhs = jnp.array(rng.randn(3, 3, 4).astype(np.float32))
  gs = jnp.array([2, 3, 1], jnp.int32)
  rdn = lax.RaggedDotDimensionNumbers((([1], [0]), ([], [])), [1], [])
  l2 = jnp.array(rng.randn(2, 5).astype(np.float32))
  r2 = jnp.array(rng.randn(5, 3).astype(np.float32))
  rdn3 = lax.RaggedDotDimensionNumbers((([2], [1]), ([0], [0])), [0], [])
  l3 = jnp.array(rng.randn(4, 2, 3).astype(np.float32))
  r3 = jnp.array(rng.randn(4, 3, 2).astype(np.float32))
  return [lax.ragged_dot(lhs, rhs, gs), jax.jit(lax.ragged_dot)(lhs, rhs, gs),
          jax.grad(lambda a, b: lax.ragged_dot(a, b, gs).sum(), argnums=(0, 1))(lhs, rhs),
          jax.jvp(lambda a, b: lax.ragged_dot(a, b, gs), (lhs, rhs), (lhs * 2, rhs))[1],
          jax.vmap(lax.ragged_dot)(jnp.stack([lhs, lhs * 2]), jnp.stack([rhs, -rhs]),
                                   jnp.stack([gs, jnp.array([1, 1, 4], jnp.int32)])),
          lax.ragged_dot_general(l2, r2, jnp.array([2, 3], jnp.int32), rdn),
          lax.ragged_dot_general(l3, r3, jnp.array([1, 3], jnp.int32), rdn3),
          lax.ragged_dot(lhs, rhs, gs, preferred_element_type=jnp.float32),
          lax.ragged_dot(lhs.astype(jnp.bfloat16), rhs.astype(jnp.bfloat16), gs)]


def test_ragged_dot_matches_jax(jax):
  _assert_same(_ragged_prog(*PY), _ragged_prog(*_modules(jax)), rtol=2e-2, atol=1e-5)
  f = lambda lax: (lambda a, b, g: lax.ragged_dot(a, b, g))
  args = (np.ones((5, 3), np.float32), np.ones((2, 3, 4), np.float32), np.array([2, 3], np.int32))
  assert _jaxpr(pyjax, f(lax), *args) == _jaxpr(jax, f(jax.lax), *args)
  rdn = lambda lax: lax.RaggedDotDimensionNumbers((([1], [1]), ([], [])), [0, 1], [0])
  c2 = lambda lax: lax.RaggedDotDimensionNumbers((([1], [0]), ([], [])), [1], [])
  cases = [lambda lax, jnp, a, b, g: lax.ragged_dot(a, b, jnp.array([1., 2.])),
           lambda lax, jnp, a, b, g: lax.ragged_dot(a, b, jnp.array([1, 2, 3])),
           lambda lax, jnp, a, b, g: lax.ragged_dot(a, b, jnp.int32(2)),
           lambda lax, jnp, a, b, g: lax.ragged_dot_general(a, b, g, rdn(lax))]
  for case in cases:
    _same_error(lambda: case(lax, jnp, *map(jnp.asarray, args)),
                lambda: case(jax.lax, jax.numpy, *map(jax.numpy.asarray, args)))
  l2, r2, g2 = np.ones((2, 5), np.float32), np.ones((5, 3), np.float32), np.array([2, 3],
                                                                                  np.int32)
  _same_error(lambda: pyjax.grad(lambda a: lax.ragged_dot_general(a, r2, g2, c2(lax)).sum())(l2),
              lambda: jax.grad(lambda a: jax.lax.ragged_dot_general(a, r2, g2, c2(jax.lax))
                               .sum())(l2))


def test_ragged_dot_vmap_of_unbatched_operand():
  # JAX raises NotImplementedError here; pyjax batches any operand at any position
  rng = np.random.RandomState(1)
  lhs = rng.randn(2, 7, 3).astype(np.float32)
  rhs = rng.randn(3, 3, 4).astype(np.float32)
  gs = np.array([2, 3, 1], np.int32)
  got = pyjax.vmap(lambda a: lax.ragged_dot(a, rhs, gs), in_axes=0)(lhs)
  for i in range(2):
    np.testing.assert_allclose(got[i], _ragged_reference(lhs[i], rhs, gs), rtol=1e-5,
                               atol=1e-5)


# --- scaled_dot ------------------------------------------------------------------------------
def _scaled_prog(jax, jnp, lax):
  rng = np.random.RandomState(2)
  lhs = jnp.arange(8.).reshape(2, 4).astype(jnp.float8_e4m3fn)
  rhs = jnp.arange(12.).reshape(4, 3).astype(jnp.float8_e4m3fn)
  ls = jnp.full((2, 2), 2.).astype(jnp.float8_e8m0fnu)
  rs = jnp.full((2, 3), 0.5).astype(jnp.float8_e8m0fnu)
  x3 = jnp.array(rng.randn(2, 3, 8).astype(np.float32))
  y3 = jnp.array(rng.randn(2, 8, 5).astype(np.float32))
  return [lax.scaled_dot(lhs, rhs, lhs_scale=ls, rhs_scale=rs), lax.scaled_dot(lhs, rhs),
          lax.scaled_dot(jnp.ones((2, 4)), jnp.ones((4, 3)), preferred_element_type=jnp.float32),
          lax.scaled_dot(x3, y3, lhs_scale=jnp.ones((2, 3, 2)).astype(jnp.float8_e8m0fnu) * 2,
                         preferred_element_type=jnp.float32),
          jax.vmap(lambda a, b: lax.scaled_dot(a, b, preferred_element_type=jnp.float32))(x3, y3)]


def test_scaled_dot_matches_jax(jax):
  _assert_same(_scaled_prog(*PY), _scaled_prog(*_modules(jax)), rtol=1e-6)
  f = lambda lax: (lambda a, b, c, d: lax.scaled_dot(a, b, lhs_scale=c, rhs_scale=d))
  import ml_dtypes
  args = (np.ones((2, 4), ml_dtypes.float8_e4m3fn), np.ones((4, 3), ml_dtypes.float8_e4m3fn),
          np.ones((2, 2), ml_dtypes.float8_e8m0fnu), np.ones((2, 3), ml_dtypes.float8_e8m0fnu))
  assert _jaxpr(pyjax, f(lax), *args) == _jaxpr(jax, f(jax.lax), *args)
  for case in [lambda lax, jnp: lax.scaled_dot(jnp.ones(4), jnp.ones(4)),
               lambda lax, jnp: lax.scaled_dot(jnp.ones((2, 4)), jnp.ones((4, 3)),
                                               lhs_scale=jnp.ones((2, 4))),
               lambda lax, jnp: lax.scaled_dot(jnp.ones((2, 4)), jnp.ones((4, 3)),
                                               lhs_scale=jnp.ones((2, 3))),
               lambda lax, jnp: lax.scaled_dot(jnp.ones((2, 4)), jnp.ones((5, 3)))]:
    _same_error(lambda: case(lax, jnp), lambda: case(jax.lax, jax.numpy))


# --- conv_general_dilated_patches / local ------------------------------------------------------
def _patches_prog(jax, jnp, lax):
  rng = np.random.RandomState(0)
  x = jnp.array(rng.randn(2, 3, 5, 4).astype(np.float32))
  xh = jnp.transpose(x, (0, 2, 3, 1))
  w = jnp.array(rng.randn(4, 3, 12, 5).astype(np.float32))
  return [lax.conv_general_dilated_patches(x, (2, 2), (1, 1), "VALID"),
          lax.conv_general_dilated_patches(x, (3, 2), (2, 1), "SAME", rhs_dilation=(1, 2)),
          lax.conv_general_dilated_patches(xh, (2, 3), (1, 1), [(1, 0), (0, 1)],
                                           dimension_numbers=("NHWC", "HWIO", "NHWC")),
          lax.conv_general_dilated_local(x, w, (1, 1), "VALID", (2, 2),
                                         dimension_numbers=("NCHW", "HWIO", "NCHW")),
          jax.grad(lambda x: (lax.conv_general_dilated_patches(x, (2, 2), (1, 1), "VALID") ** 2)
                   .sum())(x),
          jax.vmap(lambda x: lax.conv_general_dilated_patches(x[None], (2, 2), (1, 1), "VALID"))(x)]


def test_conv_patches_match_jax(jax):
  _assert_same(_patches_prog(*PY), _patches_prog(*_modules(jax)), rtol=1e-5, atol=1e-5)
  f = lambda lax: (lambda x: lax.conv_general_dilated_patches(x, (2, 2), (1, 1), "VALID"))
  x = np.ones((2, 3, 5, 4), np.float32)
  assert _jaxpr(pyjax, f(lax), x) == _jaxpr(jax, f(jax.lax), x)
  _same_error(lambda: lax.conv_general_dilated_local(x, x, (1, 1), "VALID", (2, 2),
                                                     precision=lax.DotAlgorithmPreset.DEFAULT),
              lambda: jax.lax.conv_general_dilated_local(
                  x, x, (1, 1), "VALID", (2, 2), precision=jax.lax.DotAlgorithmPreset.DEFAULT))


def test_conv_patches_against_numpy():
  rng = np.random.RandomState(5)
  x = rng.randn(1, 2, 4, 3).astype(np.float32)
  p = np.asarray(lax.conv_general_dilated_patches(x, (2, 2), (1, 1), "VALID"))
  assert p.shape == (1, 8, 3, 2)
  for i in range(3):
    for j in range(2):
      np.testing.assert_array_equal(p[0, :, i, j], x[0, :, i:i + 2, j:j + 2].reshape(-1))


# --- sharding / device_put -----------------------------------------------------------------
def _sharding_prog(jax, jnp, lax, s):
  x = jnp.arange(12.).reshape(4, 3)
  return [lax.with_sharding_constraint(x, s), lax.with_sharding_constraint((x, 2 * x), s),
          jax.jit(lambda x: lax.with_sharding_constraint(x, s) * 2)(x),
          jax.grad(lambda x: (lax.with_sharding_constraint(x, s) ** 2).sum())(x),
          jax.vmap(lambda x: lax.with_sharding_constraint(x, s))(x),
          lax.with_sharding_constraint(2., s)]


def test_sharding_constraint_matches_jax(jax):
  js = jax.sharding.SingleDeviceSharding(jax.devices()[0])
  s = SingleDeviceSharding(pyjax.devices()[0])
  _assert_same(_sharding_prog(*PY, s), _sharding_prog(*_modules(jax), js))
  progs = lambda jax, lax, s: [
      jax.grad(lambda x: lax.with_sharding_constraint(x, s).sum()),
      jax.vmap(lambda x: lax.with_sharding_constraint(x, s))]
  x = np.ones((4, 3), np.float32)
  for a, b in zip(progs(pyjax, lax, s), progs(jax, jax.lax, js)):
    assert _jaxpr(pyjax, a, x) == _jaxpr(jax, b, x)
  for case in [lambda lax, s: lax.with_sharding_constraint(x, "foo"),
               lambda lax, s: lax.with_sharding_constraint(x, None),
               lambda lax, s: lax.with_sharding_constraint((x, x), (s, s, s)),
               lambda lax, s: lax.with_sharding_constraint((x, x), (s, None))]:
    _same_error(lambda: case(lax, s), lambda: case(jax.lax, js))


def test_device_put_primitive():
  from pyjax._src.lax import sharding as S
  dev = pyjax.devices()[0]
  x = jnp.arange(3.)
  cs = (S.ArrayCopySemantics.REUSE_INPUT,)
  f = lambda x: S.bind_device_put([x], [dev], [None], cs)[0]
  j = str(pyjax.make_jaxpr(f)(x))
  assert "device_put[" in j and "copy_semantics=(ArrayCopySemantics.REUSE_INPUT,)" in j
  assert "devices=(CpuDevice(id=0),)" in j
  g = str(pyjax.make_jaxpr(pyjax.grad(lambda x: f(x).sum()))(x))
  assert "copy_semantics=(ArrayCopySemantics.ALWAYS_COPY,)" in g and "srcs=(CpuDevice(id=0),)" in g
  np.testing.assert_array_equal(pyjax.grad(lambda x: (f(x) ** 2).sum())(x), 2 * np.arange(3.))
  np.testing.assert_array_equal(pyjax.vmap(f)(jnp.ones((2, 3))), np.ones((2, 3)))
  np.testing.assert_array_equal(pyjax.jit(f)(x), x)
  y = f(x)
  assert y.committed if hasattr(y, "committed") else True
  np.testing.assert_array_equal(y, x)


# --- collectives ---------------------------------------------------------------------------
def _collective_prog(jax, jnp, lax):
  x = jnp.arange(9.).reshape(3, 3)
  return [jax.vmap(lambda x: lax.pswapaxes(x, "i", 0), axis_name="i")(x),
          jax.jit(jax.vmap(lambda x: lax.pswapaxes(x, "i", 0), axis_name="i"))(x),
          lax.pcast(x, (), to="foo")]


def test_collectives_match_jax(jax):
  _assert_same(_collective_prog(*PY), _collective_prog(*_modules(jax)))
  f = lambda jax, lax: jax.vmap(lambda x: lax.pswapaxes(x, "i", 0), axis_name="i")
  x = np.arange(9., dtype=np.float32).reshape(3, 3)
  assert _jaxpr(pyjax, f(pyjax, lax), x) == _jaxpr(jax, f(jax, jax.lax), x)
  ij = lambda jnp: jnp.array([0])
  cases = [
      lambda jax, jnp, lax: lax.pcast(x, "i", to="varying"),
      lambda jax, jnp, lax: lax.pcast(x, "i", to="reduced"),
      lambda jax, jnp, lax: lax.pcast(x, "i", to="unreduced"),
      lambda jax, jnp, lax: lax.pcast(x, {"i"}, to="varying"),
      lambda jax, jnp, lax: lax.psend(x, "i", [(0, 0)]),
      lambda jax, jnp, lax: lax.pswapaxes(x, "i", 0),
      lambda jax, jnp, lax: lax.ragged_all_to_all(x[0], jnp.zeros(4), ij(jnp), ij(jnp), ij(jnp),
                                                  ij(jnp), axis_name="i"),
      lambda jax, jnp, lax: jax.make_jaxpr(lambda x: lax.ragged_all_to_all(
          x, jnp.zeros(4), jnp.array([0.]), ij(jnp), ij(jnp), ij(jnp), axis_name="i"))(x[0]),
  ]
  for case in cases:
    _same_error(lambda: case(pyjax, jnp, lax), lambda: case(jax, jax.numpy, jax.lax))
  with pytest.raises(ValueError, match="Got unexpected `to` value"):
    lax.pcast(x, "i", to="foo")


def test_pbroadcast_under_vmap():
  # JAX's vmap rule for pbroadcast is broken in 0.10.2 (TypeError); pyjax's gives every
  # member the source member's value
  x = jnp.arange(6.).reshape(3, 2)
  out = pyjax.vmap(lambda x: lax.pbroadcast(x, "i", 1), axis_name="i")(x)
  np.testing.assert_array_equal(out, [[2., 3.]] * 3)
  g = pyjax.grad(lambda x: (pyjax.vmap(lambda x: lax.pbroadcast(x, "i", 1), axis_name="i")(x)
                            * jnp.arange(3.)[:, None]).sum())(x)
  np.testing.assert_array_equal(g, [[0., 0.], [3., 3.], [0., 0.]])
  inner = pyjax.vmap(pyjax.vmap(lambda x: lax.pbroadcast(x, "i", 0), axis_name="i"))(
      jnp.arange(12.).reshape(2, 3, 2))
  np.testing.assert_array_equal(inner, np.repeat(np.arange(12.).reshape(2, 3, 2)[:, :1], 3, 1))
  with pytest.raises(NameError, match="unbound axis name: i"):
    lax.pbroadcast(x, "i", 0)


def _ragged_a2a_args():
  return (jnp.array([[1, 2, 2], [3, 4, 0]], jnp.float32), jnp.zeros((2, 4), jnp.float32),
          jnp.array([[0, 1], [0, 1]]), jnp.array([[1, 2], [1, 1]]),
          jnp.array([[0, 0], [1, 2]]), jnp.array([[1, 1], [2, 1]]))


def test_ragged_all_to_all_under_vmap():
  # the example of JAX's docstring (an axis of size 2); JAX itself raises under vmap
  f = lambda *a: lax.ragged_all_to_all(*a, axis_name="i")
  args = _ragged_a2a_args()
  out = pyjax.vmap(f, axis_name="i")(*args)
  np.testing.assert_array_equal(out, [[1, 3, 0, 0], [2, 2, 4, 0]])
  g_op, g_out = pyjax.grad(lambda op, o: pyjax.vmap(f, axis_name="i")(op, o, *args[2:]).sum(),
                           argnums=(0, 1))(*args[:2])
  np.testing.assert_array_equal(g_op, [[1, 1, 1], [1, 1, 0]])
  np.testing.assert_array_equal(g_out, [[0, 0, 1, 1], [0, 0, 0, 1]])
  ops = jnp.stack([args[0], args[0] * 10], 1)
  outs = jnp.stack([args[1], args[1]], 1)
  r = pyjax.vmap(pyjax.vmap(f, in_axes=(0, 0, None, None, None, None)), axis_name="i")(
      ops, outs, *args[2:])
  np.testing.assert_array_equal(r, [[[1, 3, 0, 0], [10, 30, 0, 0]],
                                    [[2, 2, 4, 0], [20, 20, 40, 0]]])
  jv = pyjax.jvp(lambda op: pyjax.vmap(f, axis_name="i")(op, *args[1:]), (args[0],),
                 (jnp.ones_like(args[0]),))[1]
  np.testing.assert_array_equal(jv, [[1, 1, 0, 0], [1, 1, 1, 0]])


def test_psend_precv_raise_clearly():
  x = jnp.ones(3)
  with pytest.raises(NotImplementedError, match="point-to-point"):
    pyjax.vmap(lambda x: lax.psend(x, "i", [(0, 1)]), axis_name="i")(jnp.ones((2, 3)))
  with pytest.raises(NotImplementedError, match="point-to-point"):
    pyjax.vmap(lambda x: lax.precv(lax.create_token(), pyjax.ShapeDtypeStruct((3,), np.float32),
                                   "i", [(0, 1)]), axis_name="i")(jnp.ones((2, 3)))
  with pytest.raises(NameError, match="please call precv under"):
    lax.precv(lax.create_token(), pyjax.ShapeDtypeStruct((3,), np.float32), "i", [(0, 0)])
  with pytest.raises(NameError, match="please call psend under"):
    lax.psend(x, "i", [(0, 0)])


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
