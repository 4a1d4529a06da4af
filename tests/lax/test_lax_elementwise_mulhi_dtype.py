"""lax/elementwise.py's mulhi, the total-order comparisons (eq_to, le_to, lt_to), lax.dtype,
Tolerance and AccuracyMode

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
