"""Eager ``jnp.var``/``jnp.std`` over leading axes in one backend step
(``backends/cpu/eager/moments.py``): bit for bit the primitives one by one, natively and
on the NumPy fallback; not taken under tracing, with ``where``/``mean``, or for layouts
it does not own; values against JAX."""
import numpy as np
import pytest

import pyjax
import pyjax.numpy as jnp
from pyjax._src.backends.cpu.eager import moments as em
from pyjax._src.backends.cpu import executable
from pyjax._src.runtime import dispatch

pytestmark = pytest.mark.filterwarnings(
    "ignore:(divide by zero|invalid value):RuntimeWarning")


def _bits(a):
  a = np.asarray(a)
  return a.dtype, a.shape, a.tobytes()


def _op_by_op(monkeypatch, fn):
  """``fn()`` with the composite turned off (the primitives one by one)."""
  with monkeypatch.context() as m:
    m.setattr(dispatch, "run_composite", lambda *a, **k: None)
    return fn()


def _data(shape, dt, seed=0):
  x = np.random.default_rng(seed).standard_normal(shape) * 3 + 5
  return jnp.asarray(x.astype(dt))


CASES = [((10000, 10), 0, {}), ((70000, 3), 0, {"ddof": 1}),
         ((200, 400, 2), (0, 1), {"keepdims": True}), ((5000, 40), 0, {"correction": 0.5}),
         ((600, 255), 0, {})]


@pytest.mark.parametrize("route", ["native", "numpy"])
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_var_std_bits_equal_primitives(monkeypatch, route, dt):
  prev = executable.set_compile_mode("sync")
  if route == "numpy":   # the kernel building (or no C compiler): the NumPy steps
    monkeypatch.setattr(em._en, "_cached_kernel", lambda *a, **k: None)
  try:
    for shape, axis, kw in CASES:
      x = _data(shape, dt)
      before = dict(em.stats)
      got = [jnp.var(x, axis=axis, **kw), jnp.std(x, axis=axis, **kw)]
      taken = sum(em.stats.values()) - sum(before.values())
      want = _op_by_op(monkeypatch, lambda: [jnp.var(x, axis=axis, **kw),
                                             jnp.std(x, axis=axis, **kw)])
      big = x.size > 65536
      assert taken == (2 if big else 0), (shape, taken)
      for g, w in zip(got, want):
        assert g.aval == w.aval
        assert _bits(g) == _bits(w), (shape, axis, kw)
    if route == "numpy":
      assert em.stats["numpy"] > before["numpy"]
  finally:
    executable.set_compile_mode(prev)


def test_specials_and_non_positive_normalizer(monkeypatch):
  x = np.random.default_rng(1).standard_normal((40000, 4)).astype(np.float32)
  x[5, 0] = np.nan
  x[7, 1] = np.inf
  x[:, 2] = -0.0
  xa = jnp.asarray(x)
  got = jnp.std(xa, axis=0)
  want = _op_by_op(monkeypatch, lambda: jnp.std(xa, axis=0))
  assert _bits(got) == _bits(want)
  assert np.isnan(np.asarray(got)[:2]).all()
  # normalizer 40000 - 40000 = 0: JAX's NaN, from the primitives' where
  r = jnp.var(xa, axis=0, ddof=40000)
  assert np.isnan(np.asarray(r)).all()


def test_not_taken_when_tracing_or_masked():
  x = _data((10000, 10), np.float32)
  jaxpr = str(pyjax.make_jaxpr(lambda a: jnp.var(a, axis=0))(x))
  assert "reduce_sum" in jaxpr and ("integer_pow" in jaxpr or "square" in jaxpr)
  before = sum(em.stats.values())
  g = pyjax.grad(lambda a: jnp.std(a, axis=0).sum())(x)
  jnp.var(x, axis=0, where=np.ones((10000, 10), bool))
  jnp.var(x, axis=0, mean=jnp.mean(x, axis=0, keepdims=True))
  jnp.var(x, axis=1)          # trailing axes: rows, NumPy's order
  jnp.var(x.astype(jnp.float16), axis=0)
  assert sum(em.stats.values()) == before
  assert g.shape == x.shape


def test_values_match_jax():
  jax = pytest.importorskip("jax")
  x = np.random.default_rng(2).standard_normal((30000, 7)).astype(np.float32) * 4 + 2
  for kw in ({}, {"ddof": 1}, {"keepdims": True}):
    got = np.asarray(jnp.std(jnp.asarray(x), axis=0, **kw))
    want = np.asarray(jax.numpy.std(x, axis=0, **kw))
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_small_vector_sum_signed_zero():
  """The eager short-vector sum: a fold from +0 (never -0) except over one element."""
  assert np.signbit(np.asarray(jnp.sum(jnp.array([-0.0], jnp.float32))))
  assert not np.signbit(np.asarray(jnp.sum(jnp.array([-0.0, -0.0], jnp.float32))))
  assert float(jnp.sum(jnp.arange(3.0))) == 3.0


def test_eager_mean_shortcut_bits(monkeypatch):
  """``jnp.mean``'s eager shortcut (sum, then a division by a NumPy scalar count) against
  the general path: avals and bits, small (XLA's order) and large sums, axis orders."""
  from pyjax._src.numpy import reductions as red
  rng = np.random.default_rng(4)
  for shape, axes in [((7,), [None, 0]), ((10000, 10), [0, -1, (1, 0)]),
                      ((30, 7, 5), [(0, 2), None])]:
    x = jnp.asarray((rng.standard_normal(shape) * 10).astype(np.float32))
    for ax in axes:
      got = jnp.mean(x, axis=ax)
      with monkeypatch.context() as m:
        m.setattr(red, "_eager_float_mean", lambda *a: None)
        want = jnp.mean(x, axis=ax)
      assert got.aval == want.aval and _bits(got) == _bits(want), (shape, ax)
  with pytest.raises(ValueError, match="duplicate value in 'axis'"):
    jnp.mean(jnp.ones((3, 4)), axis=(0, 0))
