"""sparsify in both of JAX's forms (jaxpr interpreter and SparseTracer) against real JAX."""
import numpy as np
import pytest

import pyjax
import pyjax.numpy as jnp
from pyjax import lax
from pyjax.experimental import sparse

A = np.array([[0, 1., 0, 2], [3, 0, 0, 0], [0, 0, 4, 5]], np.float32)
V = np.arange(4, dtype=np.float32)


def _cases(J, np_, S):
  l = J.lax
  return {
      "matvec": lambda m, v: 2 * m @ v,
      "add_self": lambda m, v: m + m,            # shared indices: data added, nse kept
      "mul_self": lambda m, v: m * m,
      "sub": lambda m, v: m - m * 2,
      "add_dense": lambda m, v: m + np_.ones((3, 4)),
      "div_dense": lambda m, v: m / (v + 1),
      "sin_T": lambda m, v: np_.sin(m).T,
      "stack_sum": lambda m, v: np_.stack([m, m]).sum(1),
      "jit": lambda m, v: J.jit(lambda a: a * 3)(m),
      "fori": lambda m, v: l.fori_loop(0, 3, lambda i, a: a * 2.0, m),
      "cond": lambda m, v: l.cond(True, lambda a: a * 2.0, lambda a: -a, m),
      "scan": lambda m, v: l.scan(lambda c, _: (c * 2.0, None), m, None, length=2)[0],
  }


def _run(J, np_, S, name, tracer):
  r = S.sparsify(_cases(J, np_, S)[name], use_tracer=tracer)(S.BCOO.fromdense(A), V)
  if hasattr(r, "todense"):
    return type(r).__name__, r.nse, np.asarray(r.todense()), r.dtype
  return "dense", None, np.asarray(r), r.dtype


@pytest.mark.parametrize("tracer", [False, True])
def test_sparsify_matches_jax(tracer):
  jax = pytest.importorskip("jax")
  from jax.experimental import sparse as js
  for name in _cases(pyjax, jnp, sparse):
    kind, nse, val, dt = _run(pyjax, jnp, sparse, name, tracer)
    jkind, jnse, jval, jdt = _run(jax, jax.numpy, js, name, tracer)
    assert (kind, dt) == (jkind, jdt), name
    np.testing.assert_allclose(val, jval, rtol=1e-6, err_msg=name)
    if not tracer:    # JAX's tracer form loses shared indices at its jnp jit wrappers
      assert nse == jnse, name


@pytest.mark.parametrize("tracer", [False, True])
def test_sparsify_errors_as_jax(tracer):
  jax = pytest.importorskip("jax")
  from jax.experimental import sparse as js
  fns = [lambda J, m: J.numpy.exp(m), lambda J, m: J.numpy.maximum(m, 0.),
         lambda J, m: m - J.numpy.ones((3, 4)), lambda J, m: m ** 0,
         lambda J, m: J.lax.scan(lambda c, x: (c, x), 0., m)]
  for fn in fns:
    msgs = []
    for J, S in ((pyjax, sparse), (jax, js)):
      with pytest.raises(NotImplementedError) as e:
        S.sparsify(lambda m: fn(J, m), use_tracer=tracer)(S.BCOO.fromdense(A))
      msgs.append(str(e.value))
    assert msgs[0] == msgs[1]


def test_bcsr_rule_set_as_jax():
  # BCSR has JAX's smaller rule set: dot_general works, transpose raises
  M = sparse.BCSR.fromdense(A)
  np.testing.assert_allclose(sparse.sparsify(lambda m: m @ V)(M), A @ V)
  with pytest.raises(NotImplementedError, match="sparse rule for transpose is not implemented."):
    sparse.sparsify(lambda m: m.T)(M)


def test_sparse_tracer_under_jit_and_grad():
  seen = []

  def f(m, v):
    seen.append(isinstance(m, sparse.SparseTracer) and isinstance(v, sparse.SparseTracer))
    if m.shape[0] == 3:      # Python control flow on static values, as in JAX's tracer form
      return jnp.sum((m @ v) ** 2)
    return 0.

  g = sparse.sparsify(f, use_tracer=True)
  want = np.sum((A @ V) ** 2)
  M = sparse.BCOO.fromdense(A)
  np.testing.assert_allclose(pyjax.jit(g)(M, V), want, rtol=1e-6)
  d = pyjax.grad(lambda data: g(sparse.BCOO((data, M.indices), shape=A.shape), V))(M.data)
  rows, cols = np.asarray(M.indices).T
  np.testing.assert_allclose(d, 2 * (A @ V)[rows] * V[cols], rtol=1e-6)
  assert seen == [True, True]
