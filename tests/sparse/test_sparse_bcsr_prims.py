"""The BCSR primitives (bcsr_fromdense, bcsr_todense, bcsr_extract, bcsr_dot_general)
against real JAX 0.10: values under eager, jit, grad and vmap, and jaxpr text."""
import numpy as np
import pytest

import pyjax
from pyjax.experimental import sparse as ps

jax = pytest.importorskip("jax")
js = pytest.importorskip("jax.experimental.sparse")

M = np.array([[0, 1, 0, 2], [3, 0, 0, 0], [0, 0, 4, 5]], np.float32)
MB = np.stack([M, M[::-1] * 2])                     # n_batch=1 operand
V = np.arange(4, dtype=np.float32) - 1.5
W = np.arange(8, dtype=np.float32).reshape(4, 2) / 4
DN = (((1,), (0,)), ((), ()))


def _same(a, b):
  a, b = np.asarray(a), np.asarray(b)
  assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, a.shape, b.dtype, b.shape)
  np.testing.assert_allclose(a, b, rtol=1e-6)


def _bufs(lib, mat, **kw):
  m = lib.BCSR.fromdense(mat, **kw)
  return [np.asarray(x) for x in (m.data, m.indices, m.indptr)]


@pytest.mark.parametrize("mat,kw", [(M, {}), (M, {"nse": 7}), (MB, {"n_batch": 1})])
def test_fromdense_todense_extract_values(mat, kw):
  got, want = _bufs(ps, mat, **kw), _bufs(js, mat, **kw)
  for g, w in zip(got, want):
    _same(g, w)
  d, i, p = got
  m = ps.BCSR((d, i, p), shape=mat.shape)
  _same(m.todense(), mat)
  _same(pyjax.jit(lambda d: ps.BCSR((d, i, p), shape=mat.shape).todense())(d), mat)
  _same(ps.bcsr_extract(i, p, mat * 3), js.bcsr_extract(i, p, mat * 3))


def test_dot_general_values_grad_and_matmul():
  d, i, p = _bufs(ps, M)

  def f(lib):
    def loss(d, w):
      return lib.bcsr_dot_general(lib.BCSR((d, i, p), shape=M.shape), w,
                                  dimension_numbers=DN).sum() ** 2
    return loss
  _same(ps.bcsr_dot_general(ps.BCSR((d, i, p), shape=M.shape), V, dimension_numbers=DN),
        M @ V)
  _same(pyjax.jit(lambda d: ps.BCSR((d, i, p), shape=M.shape) @ W)(d), M @ W)
  for g, w in zip(pyjax.grad(f(ps), argnums=(0, 1))(d, W),
                  jax.grad(f(js), argnums=(0, 1))(d, W)):
    _same(g, w)
  # jvp/transpose of fromdense and extract
  gp = pyjax.grad(lambda x: (ps.BCSR.fromdense(x, nse=5).data ** 2).sum())(M)
  gj = jax.grad(lambda x: (js.BCSR.fromdense(x, nse=5).data ** 2).sum())(M)
  _same(gp, gj)
  gp = pyjax.grad(lambda x: ps.bcsr_extract(i, p, x).sum())(M)
  _same(gp, jax.grad(lambda x: js.bcsr_extract(i, p, x).sum())(M))


def test_vmap_matches_jax():
  d, i, p = _bufs(ps, MB, n_batch=1)
  got = pyjax.vmap(lambda d, i, p: ps.BCSR((d, i, p), shape=M.shape).todense())(d, i, p)
  _same(got, MB)
  f = lambda lib: (lambda d, i, p, w: lib.bcsr_dot_general(
      lib.BCSR((d, i, p), shape=M.shape), w, dimension_numbers=DN))
  WB = np.stack([W, -W])
  _same(pyjax.vmap(f(ps))(d, i, p, WB), jax.vmap(f(js))(d, i, p, WB))
  _same(pyjax.vmap(f(ps), (0, 0, 0, None))(d, i, p, W), jax.vmap(f(js), (0, 0, 0, None))(d, i, p, W))
  _same(pyjax.vmap(lambda x: ps.BCSR.fromdense(x, nse=5).indptr)(MB),
        jax.vmap(lambda x: js.BCSR.fromdense(x, nse=5).indptr)(MB))
  _same(pyjax.vmap(ps.bcsr_extract)(i, p, MB + 1), jax.vmap(js.bcsr_extract)(i, p, MB + 1))
  # an unbatched dense operand: JAX 0.10 raises TypeError here (its rule passes
  # broadcast_in_dim the wrong dimensions); pyjax broadcasts it
  _same(pyjax.vmap(ps.bcsr_extract, (0, 0, None))(i, p, M),
        np.stack([js.bcsr_extract(i[k], p[k], M) for k in range(2)]))


def test_jaxpr_text_matches_jax():
  d, i, p = _bufs(ps, M)
  cases = [
      (lambda lib: lambda x: lib.BCSR.fromdense(x, nse=5).todense(), (M,)),
      (lambda lib: lambda d, i, p, w: lib.bcsr_dot_general(
          lib.BCSR((d, i, p), shape=M.shape), w, dimension_numbers=DN), (d, i, p, V)),
      (lambda lib: lambda d, i, p, w: lib.BCSR((d, i, p), shape=M.shape) @ w, (d, i, p, W)),
      (lambda lib: lib.bcsr_extract, (i, p, M)),
      (lambda lib: lambda d, i, p, w: lib.sparsify(lambda m, w: m @ w)(
          lib.BCSR((d, i, p), shape=M.shape), w), (d, i, p, V)),
  ]
  for f, args in cases:
    assert str(pyjax.make_jaxpr(f(ps))(*args)) == str(jax.make_jaxpr(f(js))(*args))
