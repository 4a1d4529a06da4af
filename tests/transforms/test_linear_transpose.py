"""linear_transpose, fwd_and_bwd, float0 cotangents of integer inputs (as JAX 0.10)."""
import numpy as np
import pytest

import pyjax
import pyjax.numpy as jnp


def _jax():
  return pytest.importorskip("jax")


def _leaves(m, tree):
  return [(np.dtype(x.dtype), np.shape(x), None if x.dtype == m.dtypes.float0 else np.asarray(x))
          for x in m.tree_util.tree_leaves(tree)]


def _same(m_out, j_out, rtol=1e-6):
  assert len(m_out) == len(j_out)
  for (pd, ps, pv), (jd, js, jv) in zip(m_out, j_out):
    assert pd == jd and ps == js
    if pv is not None:
      np.testing.assert_allclose(pv, jv, rtol=rtol)


CASES = [
    ("two_args", lambda m: (lambda x, y: (2 * x + y.sum(0), x),
                            (m.numpy.ones(3), m.numpy.ones((2, 3))),
                            (m.numpy.arange(3.0), m.numpy.ones(3)))),
    ("scalar", lambda m: (lambda x: x * 2, (1.0,), 3.0)),
    ("int", lambda m: (lambda x: x * 2, (1,), 3)),
    ("int_vec", lambda m: (lambda x: x * 2, (m.numpy.ones(2, m.numpy.int32),),
                           m.numpy.ones(2, m.numpy.int32))),
    ("affine", lambda m: (lambda x: x + 1, (1.0,), 2.0)),
    ("zero", lambda m: (lambda x: m.numpy.zeros(3), (1.0,), m.numpy.ones(3))),
    ("complex", lambda m: (lambda x: (x * 2j).real, (1.0,), 2.0)),
    ("matmul", lambda m: (lambda a: a @ m.numpy.arange(6.0).reshape(3, 2),
                          (m.numpy.ones((4, 3)),), m.numpy.ones((4, 2)))),
    ("reshape_transpose", lambda m: (lambda a: (a.T.reshape(-1)[::2], a[1]),
                                     (m.numpy.ones((2, 3)),),
                                     (m.numpy.arange(3.0), m.numpy.arange(3.0) + 1))),
    ("sds", lambda m: (lambda x: x * 2, (m.ShapeDtypeStruct((2,), np.float32),),
                       m.numpy.ones(2))),
]


@pytest.mark.parametrize("name", [c[0] for c in CASES])
def test_linear_transpose_matches_jax(name):
  jax = _jax()
  build = dict(CASES)[name]
  outs = []
  for m in (pyjax, jax):
    f, primals, ct = build(m)
    outs.append(_leaves(m, m.linear_transpose(f, *primals)(ct)))
  _same(*outs)


def test_linear_transpose_returns_tuple_and_pytree():
  f_t = pyjax.linear_transpose(lambda d: {"a": d["x"] * 3}, {"x": jnp.ones(2)})
  out = f_t({"a": jnp.arange(2.0)})
  assert isinstance(out, tuple) and list(out[0]) == ["x"]
  np.testing.assert_allclose(out[0]["x"], [0.0, 3.0])
  # a Partial: it can be passed to jit
  g = pyjax.jit(lambda ft, c: ft(c))(f_t, {"a": jnp.ones(2)})
  np.testing.assert_allclose(g[0]["x"], [3.0, 3.0])


@pytest.mark.parametrize("case", ["mixed_dtypes", "bad_ct_shape", "bad_ct_tree"])
def test_linear_transpose_errors_match_jax(case):
  jax = _jax()
  msgs = []
  for m in (pyjax, jax):
    with pytest.raises(TypeError) as e:
      if case == "mixed_dtypes":
        m.linear_transpose(lambda x: x.astype(m.numpy.int32), 1.0)(3)
      elif case == "bad_ct_shape":
        m.linear_transpose(lambda x: x * 2, 1.0)(m.numpy.ones(2))
      else:
        m.linear_transpose(lambda x: x * 2, 1.0)((1.0,))
    msgs.append(str(e.value))
  if case == "bad_ct_shape":   # the rejected cotangent's repr differs in the prefix only
    assert msgs[0].split(" but got ")[0] == msgs[1].split(" but got ")[0]
  else:
    assert msgs[0] == msgs[1]


def test_linear_transpose_nonlinear_raises():
  with pytest.raises(Exception):
    pyjax.linear_transpose(lambda x: x * x, 1.0)(3.0)


def test_linear_transpose_under_jit_and_closure():
  def outer(w, ct):
    return pyjax.linear_transpose(lambda x: x * w, jnp.ones(3))(ct)[0]
  out = pyjax.jit(outer)(jnp.arange(3.0), jnp.ones(3))
  np.testing.assert_allclose(out, [0.0, 1.0, 2.0])


# --- fwd_and_bwd ------------------------------------------------------------------------------
def test_fwd_and_bwd_matches_vjp_and_compiles_once():
  jax = _jax()
  f = lambda x, W: jnp.tanh(x @ W)  # noqa: E731
  x = jnp.arange(16.0).reshape(4, 4) / 16
  W = jnp.ones((4, 4)) / 4
  ct = jnp.ones((4, 4))
  fwd, bwd = pyjax.fwd_and_bwd(f, argnums=(0, 1))
  for _ in range(3):
    y, res = fwd(x, W)
    cx, cW = bwd(res, ct)
  assert fwd._cache_size() == 1 and bwd._cache_size() == 1
  ex, eW = pyjax.vjp(f, x, W)[1](ct)
  np.testing.assert_allclose(cx, ex, rtol=1e-6)
  np.testing.assert_allclose(cW, eW, rtol=1e-6)
  jf, jb = jax.fwd_and_bwd(lambda a, b: jax.numpy.tanh(a @ b), argnums=(0, 1))
  jy, jres = jf(np.asarray(x), np.asarray(W))
  jcx, jcW = jb(jres, np.ones((4, 4), np.float32))
  np.testing.assert_allclose(y, jy, rtol=1e-5)
  np.testing.assert_allclose(cx, jcx, rtol=1e-3, atol=1e-6)
  assert len(pyjax.tree_util.tree_leaves(res)) == len(jax.tree_util.tree_leaves(jres))


def test_fwd_and_bwd_int_argnums_aux_unjitted():
  fwd, bwd = pyjax.fwd_and_bwd(lambda x, y: (jnp.sin(x) * y, x * 2), argnums=0,
                               has_aux=True, jitted=False)
  y, res, aux = fwd(1.0, 3.0)
  np.testing.assert_allclose(y, 3 * np.sin(1.0), rtol=1e-6)
  assert float(aux) == 2.0
  g = bwd(res, 1.0)
  np.testing.assert_allclose(g, 3 * np.cos(1.0), rtol=1e-6)
  with pytest.raises(TypeError, match="argnums"):
    pyjax.fwd_and_bwd(lambda x: x, argnums=2)[0](1.0)


# --- float0 -----------------------------------------------------------------------------------
def test_float0_dtype():
  jax = _jax()
  assert pyjax.float0 == jax.float0 == np.dtype([("float0", "V")])
  assert pyjax.dtypes.float0 is pyjax.float0
  assert str(pyjax.float0) == str(jax.float0)


@pytest.mark.parametrize("case", ["grad_allow_int", "vjp_int", "jacrev_allow_int",
                                  "grad_int_error", "grad_bool_error", "jacrev_int_error",
                                  "grad_bool_allow_int"])
def test_integer_inputs_match_jax(case):
  jax = _jax()
  outs = []
  for m in (pyjax, jax):
    n = m.numpy
    try:
      if case == "grad_allow_int":
        r = m.grad(lambda x, i: x * i, argnums=(0, 1), allow_int=True)(2.0, 3)
      elif case == "vjp_int":
        r = m.vjp(lambda x, i: x * i, 2.0, n.arange(3))[1](n.ones(3))
      elif case == "jacrev_allow_int":
        r = m.jacrev(lambda x, i: x * i, argnums=(0, 1), allow_int=True)(2.0, n.arange(3))
      elif case == "grad_int_error":
        r = m.grad(lambda x, i: x * i, argnums=(0, 1))(2.0, 3)
      elif case == "grad_bool_error":
        r = m.grad(lambda b: 2.0)(True)
      elif case == "jacrev_int_error":
        r = m.jacrev(lambda x, i: x * i, argnums=1)(2.0, n.arange(3))
      else:
        r = m.grad(lambda x, b: (x * b).sum(), argnums=1, allow_int=True)(
            n.ones(3), n.array([True, False, True]))
      outs.append(_leaves(m, r))
    except TypeError as e:
      outs.append(str(e))
  if isinstance(outs[0], str) or isinstance(outs[1], str):
    assert outs[0] == outs[1]
  else:
    _same(*outs)
