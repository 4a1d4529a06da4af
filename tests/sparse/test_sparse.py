"""jax.experimental.sparse (BCOO): layouts, products, jit/grad/vmap, against real JAX and
scipy.sparse.  Small shapes: CI runs this file three times."""
import numpy as np
import pytest
import scipy.sparse as ssp

import pyjax
import pyjax.numpy as jnp
from pyjax.experimental import sparse

_rng = np.random.default_rng(0)
A = ((_rng.random((5, 6)) < 0.4) * _rng.standard_normal((5, 6))).astype(np.float32)
A[0, 0] = 0.0
B = _rng.standard_normal((6, 3)).astype(np.float32)
C = _rng.standard_normal((2, 5)).astype(np.float32)


W = _rng.standard_normal(A.shape).astype(np.float32)
X3 = np.stack([A, -A, 0 * A])
NNZ = int((A != 0).sum())
DUP_IDX = np.array([[0, 1], [2, 0], [0, 1], [3, 0]])
DUP_DATA = np.array([1., 2., 3., 7.], np.float32)
SA = _rng.standard_normal((5, 4)).astype(np.float32)
SB = _rng.standard_normal((4, 6)).astype(np.float32)
DN = (([1], [0]), ([], []))
RANDOM_KW = dict(shape=(2, 5, 6), n_batch=1, nse=0.2, dtype=np.float32, sorted_indices=True)
SORT_IDX = np.array([[[2, 1], [0, 1], [2, 1], [5, 0], [1, 1], [0, 1]],
                     [[0, 1], [1, 1], [5, 0], [2, 1], [0, 1], [2, 1]]])


def _dup_loss(cls, np_):
  def loss(d):
    m = cls((d, SORT_IDX), shape=(2, 3, 2))
    a = m.sum_duplicates(nse=3, remove_zeros=False).data
    return np_.sum(a * np_.arange(3.)) + np_.sum(m.sort_indices().data * np_.arange(6.))
  return loss


def _jax():
  return pytest.importorskip("jax")


@pytest.fixture(scope="module")
def ref():
  """Every real-JAX reference of this file, computed by one jitted function (JAX's eager
  sparse ops compile per op and would take tens of seconds)."""
  jax = _jax()
  from jax.experimental import sparse as js
  jnp_ = jax.numpy

  def f(a, x2, x3, w, b, c, sa, sb, dup_data):
    r = js.BCOO.fromdense(a, nse=NNZ)
    out = {"fd0": js.BCOO.fromdense(a, nse=NNZ + 2),
           "fd1": js.BCOO.fromdense(x2, nse=NNZ, n_batch=1, index_dtype=np.int16),
           "fd2": js.BCOO.fromdense(a, nse=5, n_dense=1),
           "spdot": r @ r.T, "vec": r @ b[:, 0], "rvec": r.T @ c.T}
    dup = js.BCOO((dup_data, DUP_IDX), shape=(3, 2))
    out["sumdup"] = dup.sum_duplicates(nse=3, remove_zeros=False)
    rb = js.BCOO.fromdense(x3[:2], nse=NNZ, n_batch=1)
    out["trans"] = rb.transpose((0, 2, 1))
    out["reduce"] = [js.bcoo_reduce_sum(r, axes=ax).todense() for ax in [(0,), (1,), (0, 1)]]
    out["mul"] = js.bcoo_multiply_dense(r, w)
    d2 = js.BCOO((jnp_.ones(3), np.array([[0, 1], [0, 1], [2, 2]])), shape=A.shape)
    out["extract"] = [js.bcoo_extract(d2, w, assume_unique=u).data for u in (True, False)]
    out["sorted"] = d2.T.sort_indices().indices

    def loss(d, bb):
      return jnp_.sum(jnp_.tanh(js.BCOO((d, r.indices), shape=A.shape) @ bb))
    out["grad_dot"] = jax.grad(loss, argnums=(0, 1))(r.data, b)
    out["grad_rdot"] = jax.grad(
        lambda cc, d: (cc @ js.BCOO((d, r.indices), shape=A.shape)).sum(), argnums=(0, 1))(c, r.data)
    out["vmap"] = jax.vmap(lambda bb: r @ bb)(np.stack([B, 2 * B]))

    def sampled(sa, sb):
      return js.bcoo_dot_general_sampled(sa, sb, r.indices, dimension_numbers=DN)
    out["sampled"] = sampled(sa, sb)
    out["bcsr"] = js.BCSR.fromdense(x2, nse=NNZ, n_batch=1)
    csr = js.BCSR.fromdense(a, nse=NNZ + 2)
    out["bcsr_grad"] = jax.grad(lambda d: jnp_.sum(
        js.BCSR((d, csr.indices, csr.indptr), shape=A.shape) @ b))(csr.data)
    out["random"] = js.random_bcoo(jax.random.key(3), **RANDOM_KW)
    out["index"] = [r[1], r[1:4:2, 2:]]
    out["grad_dup"] = jax.grad(_dup_loss(js.BCOO, jnp_))(np.arange(12.0, dtype=np.float32).reshape(2, 6))
    out["grad_sampled"] = jax.grad(lambda x, y: jnp_.sum(sampled(x, y) ** 2), argnums=(0, 1))(sa, sb)
    return out
  return jax.jit(f)(A, np.stack([A, 2 * A[::-1]]), X3, W, B, C, SA, SB, DUP_DATA)


def _same(x, y, tol=1e-5):
  x, y = np.asarray(x), np.asarray(y)
  assert x.dtype == y.dtype and x.shape == y.shape
  np.testing.assert_allclose(x, y, rtol=tol, atol=tol)


def _same_bcoo(ours, theirs):
  assert repr(ours) == repr(theirs)
  _same(ours.data, theirs.data)
  np.testing.assert_array_equal(np.asarray(ours.indices), np.asarray(theirs.indices))
  assert ours.indices.dtype == theirs.indices.dtype


def test_positional_constructor_is_a_type_error():
  with pytest.raises(TypeError, match=r"^BCOO.__init__\(\) takes 2 positional arguments but 4 "
                     r"were given$"):
    sparse.BCOO((10, 10), [1, 2, 3], [4, 5, 6])
  m = sparse.BCOO((jnp.array([4., 5., 6.]), jnp.array([[1, 1], [2, 2], [3, 3]])), shape=(10, 10))
  assert repr(m @ m.T) == "BCOO(float32[10, 10], nse=9)"
  np.testing.assert_array_equal(np.diag(np.asarray((m @ m.T).todense()))[1:4], [16, 25, 36])


def test_fromdense_layouts_match_jax(ref):
  cases = [("fd0", A, dict(nse=NNZ + 2)),
           ("fd1", np.stack([A, 2 * A[::-1]]), dict(n_batch=1, index_dtype=np.int16)),
           ("fd2", A, dict(nse=5, n_dense=1))]
  for key, x, kw in cases:
    ours = sparse.BCOO.fromdense(x, **kw)
    _same_bcoo(ours, ref[key])
    assert (ours.n_batch, ours.n_sparse, ours.n_dense) == \
           (ref[key].n_batch, ref[key].n_sparse, ref[key].n_dense)
    assert ours.indices_sorted and ours.unique_indices
    _same(ours.todense(), x)


def test_duplicates_and_padding(ref):
  m = sparse.BCOO((jnp.asarray(DUP_DATA), jnp.asarray(DUP_IDX)), shape=(3, 2))
  _same(m.todense(), np.array([[0, 4], [0, 0], [2, 0]], np.float32))   # row 3 is padding
  s = m.sum_duplicates()
  assert s.nse == 2 and s.indices_sorted and s.unique_indices
  np.testing.assert_array_equal(np.asarray(s.indices), [[0, 1], [2, 0]])
  o = m.sum_duplicates(nse=3, remove_zeros=False)
  _same(o.data, ref["sumdup"].data)
  np.testing.assert_array_equal(np.asarray(o.indices), np.asarray(ref["sumdup"].indices))
  _same(pyjax.jit(lambda x: x.sum_duplicates(nse=3, remove_zeros=False).data)(m), o.data)


def test_products_match_scipy_and_jax(ref):
  s = sparse.BCOO.fromdense(A)
  sp = ssp.csr_matrix(A)
  _same(s @ B, (sp @ B).astype(np.float32))
  _same(C @ s, (sp.T @ C.T).T.astype(np.float32))
  _same(s @ B[:, 0], ref["vec"])
  _same(s.T @ C.T, ref["rvec"])
  prod = s @ s.T
  _same_bcoo(prod, ref["spdot"])
  _same(prod.todense(), (sp @ sp.T).toarray())
  ai = A.astype(np.int32)
  _same(sparse.BCOO.fromdense(ai) @ B.astype(np.int32), ai @ B.astype(np.int32))
  _same(pyjax.jit(lambda m, b: m @ b)(s, B), A @ B)


def test_jaxprs_match_jax():
  jax = _jax()
  from jax.experimental import sparse as js
  s = sparse.BCOO.fromdense(A)

  def f(cls):
    return lambda d, i: (cls((d, i), shape=A.shape) @ B).sum()
  ours = pyjax.make_jaxpr(f(sparse.BCOO))(s.data, s.indices)
  theirs = jax.make_jaxpr(f(js.BCOO))(np.asarray(s.data), np.asarray(s.indices))
  assert str(ours) == str(theirs)
  def h(mod):
    return lambda m: mod.BCOO.fromdense(m, nse=5, index_dtype=np.int16).T.todense()
  assert str(pyjax.make_jaxpr(h(sparse))(A)) == str(jax.make_jaxpr(h(js))(A))
  g = str(pyjax.make_jaxpr(pyjax.grad(f(sparse.BCOO)))(s.data, s.indices))
  assert "bcoo_dot_general_sampled" in g and "bcoo_todense" not in g


def test_grad_jit_vmap_match_jax(ref):
  s = sparse.BCOO.fromdense(A)

  def loss(d, b):
    return jnp.sum(jnp.tanh(sparse.BCOO((d, s.indices), shape=A.shape) @ b))
  go = pyjax.jit(pyjax.grad(loss, argnums=(0, 1)))(s.data, B)
  _same(go[0], ref["grad_dot"][0])
  _same(go[1], ref["grad_dot"][1])
  go = pyjax.grad(lambda c, d: (c @ sparse.BCOO((d, s.indices), shape=A.shape)).sum(),
                  argnums=(0, 1))(C, s.data)
  _same(go[0], ref["grad_rdot"][0])
  _same(go[1], ref["grad_rdot"][1])
  _same(pyjax.vmap(lambda b: s @ b)(np.stack([B, 2 * B])), ref["vmap"])
  sb = sparse.BCOO.fromdense(X3, n_batch=1)
  _same(pyjax.vmap(lambda m: m @ B)(sb), X3 @ B)
  _same(sb @ B, X3 @ B)
  v = pyjax.vmap(lambda m: sparse.BCOO.fromdense(m, nse=NNZ))(X3)
  assert repr(v) == f"BCOO(float32[3, 5, 6], nse={NNZ}, n_batch=1)"
  _same(v.todense(), X3)


def test_transpose_reduce_multiply_extract_match_jax(ref):
  s = sparse.BCOO.fromdense(X3[:2], n_batch=1)
  t = s.transpose((0, 2, 1))
  np.testing.assert_array_equal(np.asarray(t.indices), np.asarray(ref["trans"].indices))
  _same(t.todense(), np.swapaxes(X3[:2], 1, 2))
  with pytest.raises(NotImplementedError):
    s.transpose((1, 0, 2))
  s2 = sparse.BCOO.fromdense(A)
  for axes, r in zip([(0,), (1,), (0, 1)], ref["reduce"]):
    _same(sparse.bcoo_reduce_sum(s2, axes=axes).todense(), r)
  _same(sparse.bcoo_reduce_sum(s, axes=(0,)).todense(), X3[:2].sum(0))
  _same(sparse.bcoo_multiply_dense(s2, W), ref["mul"])
  _same((s2 * 2.0).todense(), 2 * A)
  _same((-s2).todense(), -A)
  dup = sparse.BCOO((jnp.ones(3), jnp.array([[0, 1], [0, 1], [2, 2]])), shape=A.shape)
  for u, r in zip((True, False), ref["extract"]):
    _same(sparse.bcoo_extract(dup, W, assume_unique=u).data, r)
  np.testing.assert_array_equal(np.asarray(dup.T.sort_indices().indices),
                                np.asarray(ref["sorted"]))


def test_dot_general_sampled_and_its_gradient_match_jax(ref):
  idx = sparse.BCOO.fromdense(A).indices
  _same(sparse.bcoo_dot_general_sampled(SA, SB, idx, dimension_numbers=DN), ref["sampled"])
  go = pyjax.grad(lambda a, b: jnp.sum(sparse.bcoo_dot_general_sampled(
      a, b, idx, dimension_numbers=DN) ** 2), argnums=(0, 1))(SA, SB)
  _same(go[0], ref["grad_sampled"][0], 1e-4)
  _same(go[1], ref["grad_sampled"][1], 1e-4)


def test_from_scipy_sparse_and_pytree():
  sp = ssp.random(7, 5, density=0.3, random_state=1, dtype=np.float32)
  m = sparse.BCOO.from_scipy_sparse(sp)
  assert m.nse == sp.nnz and m.indices.dtype == np.int32
  _same(m.todense(), sp.toarray())
  leaves, tree = pyjax.tree_util.tree_flatten(m)
  assert len(leaves) == 2
  assert pyjax.tree_util.tree_unflatten(tree, leaves).shape == m.shape
  _same(pyjax.jit(lambda x: (x * 3.0).todense())(m), 3 * sp.toarray())
  with pytest.raises(ValueError, match="nse must be specified"):
    pyjax.jit(lambda x: x.sum_duplicates().data)(m)


def test_bcsr_matches_jax(ref):
  x2 = np.stack([A, 2 * A[::-1]])
  o, r = sparse.BCSR.fromdense(x2, n_batch=1), ref["bcsr"]
  assert repr(o) == repr(r)
  for name in ("data", "indices", "indptr"):
    _same(getattr(o, name), getattr(r, name))
  _same(o.todense(), x2)
  _same(o.to_bcoo().indices, sparse.BCOO.fromdense(x2, n_batch=1).indices)
  csr = sparse.BCSR.fromdense(A, nse=NNZ + 2)
  _same(csr.indptr[-1], np.int32(NNZ))
  _same(csr.todense(), A)
  _same(csr @ B, A @ B)
  _same(C @ csr, C @ A)
  _same(pyjax.jit(lambda m: m @ B)(csr), A @ B)
  g = pyjax.grad(lambda d: jnp.sum(sparse.BCSR((d, csr.indices, csr.indptr), shape=A.shape) @ B))
  _same(g(csr.data), ref["bcsr_grad"])
  back = sparse.BCSR.from_bcoo(sparse.BCOO.fromdense(A).T.T)
  _same(back.indptr, csr.indptr)
  sp = ssp.random(4, 6, density=0.4, random_state=2, dtype=np.float32)
  _same(sparse.BCSR.from_scipy_sparse(sp).todense(), sp.toarray())
  dup = sparse.BCSR((jnp.array([1., 2., 3., 0.]), jnp.array([1, 0, 1, 2]), jnp.array([0, 3, 4])),
                    shape=(2, 3)).sum_duplicates()
  assert dup.nse == 2
  _same(dup.indptr, np.array([0, 2, 2], np.int32))
  _same(dup.todense(), np.array([[2, 4, 0], [0, 0, 0]], np.float32))
  xs = np.stack([A, -A])
  _same(pyjax.vmap(lambda m: m @ B)(sparse.BCSR.fromdense(xs, n_batch=1)), xs @ B)


def test_grad_through_sum_duplicates_and_sort_indices(ref):
  d = np.arange(12.0, dtype=np.float32).reshape(2, 6)
  _same(pyjax.grad(_dup_loss(sparse.BCOO, jnp))(d), ref["grad_dup"])
  _same(pyjax.jit(pyjax.grad(_dup_loss(sparse.BCOO, jnp)))(d), ref["grad_dup"])


def test_empty_and_eye():
  e = sparse.eye(3, 5, k=-1)
  assert repr(e) == "BCOO(float32[3, 5], nse=2)" and e.indices_sorted and e.unique_indices
  np.testing.assert_array_equal(np.asarray(e.indices), [[1, 0], [2, 1]])
  _same(e.todense(), np.eye(3, 5, -1, dtype=np.float32))
  b = sparse.eye(3, n_batch=1)
  assert (b.n_batch, b.nse) == (1, 1)
  _same(b.todense(), np.eye(3, dtype=np.float32))
  assert sparse.eye(3, 4, k=9).nse == 0
  z = sparse.empty((2, 3, 4), n_batch=1, nse=2, sparse_format="bcsr", dtype=np.int32)
  assert repr(z) == "BCSR(int32[2, 3, 4], nse=2, n_batch=1)"
  np.testing.assert_array_equal(np.asarray(z.indices), np.full((2, 2), 4))
  _same(z.todense(), np.zeros((2, 3, 4), np.int32))
  z = sparse.empty((3, 4), nse=2)
  np.testing.assert_array_equal(np.asarray(z.indices), [[3, 4], [3, 4]])
  with pytest.raises(ValueError, match="not recognized"):
    sparse.empty((3,), sparse_format="dense")


def test_arithmetic():
  s = sparse.BCOO.fromdense(A)
  t = s - 2.0 * s                 # stored elements of both operands, not summed (as JAX)
  assert t.nse == 2 * s.nse
  np.testing.assert_array_equal(np.asarray(t.indices), np.concatenate([s.indices] * 2))
  _same(t.todense(), -A)
  _same(s + A, 2 * A)
  _same(jnp.asarray(W) - s, W - A)
  _same((s ** 2).todense(), A ** 2)
  _same((s / 4).todense(), A / 4)
  _same(s.sum(), np.float32(A.sum()))
  _same(s.sum(0).todense(), A.sum(0))
  with pytest.raises(NotImplementedError, match="silent densification"):
    s + 1.0
  p = sparse.BCOO.fromdense(W, nse=3) * s          # one slot per pair of stored elements
  assert p.nse == 3 * s.nse
  _same(p.todense(), np.where(np.asarray(sparse.BCOO.fromdense(W, nse=3).todense()) != 0,
                              W, 0) * A)
  _same(sparse.sparsify(lambda x, y: x * y)(s, s).todense(), A * A)


def test_reshape():
  x = np.stack([A, -A]).reshape(2, 5, 3, 2)
  for kw, shape in [({}, (10, 6)), ({}, (60,)), (dict(n_batch=1), (2, 15, 2)),
                    (dict(n_batch=1, n_dense=1), (2, 3, 5, 2))]:
    m = sparse.BCOO.fromdense(x, **kw).reshape(shape)
    assert m.shape == shape and m.n_batch == kw.get("n_batch", 0)
    _same(m.todense(), x.reshape(shape))
  _same(sparse.BCOO.fromdense(A, nse=NNZ + 3).reshape(-1).todense(), A.reshape(-1))
  with pytest.raises(ValueError, match="cannot mix batch and sparse"):
    sparse.BCOO.fromdense(x, n_batch=1).reshape(4, 15)


def test_indexing_matches_jax(ref):
  s = sparse.BCOO.fromdense(A)
  for o, r, want in zip([s[1], s[1:4:2, 2:]], ref["index"], [A[1], A[1:4:2, 2:]]):
    _same_bcoo(o, r)
    _same(o.todense(), want)
  x = np.stack([A, -A])
  _same(sparse.BCOO.fromdense(x, n_batch=1)[1, 2:, ::2].todense(), x[1, 2:, ::2])
  with pytest.raises(IndexError):
    s[5]


def test_dtypes_and_empty_layouts():
  m = sparse.BCOO.fromdense(jnp.asarray(A, jnp.bfloat16))
  out = m @ jnp.asarray(B, jnp.bfloat16)
  assert out.dtype == jnp.bfloat16
  np.testing.assert_allclose(np.asarray(out, np.float32), A @ B, rtol=0.05, atol=0.05)
  c = (A + 1j * A).astype(np.complex64)
  _same(sparse.BCOO.fromdense(c) @ B[:, 0].astype(np.complex64), c @ B[:, 0].astype(np.complex64))
  _same(sparse.BCOO.fromdense(A != 0).todense(), A != 0)
  z = sparse.BCOO.fromdense(np.zeros((3, 4), np.float32))
  assert z.nse == 0 and z.sum_duplicates().nse == 0
  _same(z @ np.ones(4, np.float32), np.zeros(3, np.float32))
  _same((z @ z.T).todense(), np.zeros((3, 3), np.float32))


def test_update_layout():
  x = np.stack([A, -A]).reshape(2, 5, 3, 2)
  for src, dst in [((0, 0), (1, 1)), ((2, 1), (0, 0)), ((1, 0), (0, 2)), ((0, 2), (2, 0))]:
    m = sparse.BCOO.fromdense(x, n_batch=src[0], n_dense=src[1])
    o = m.update_layout(n_batch=dst[0], n_dense=dst[1], on_inefficient=None)
    assert (o.n_batch, o.n_dense) == dst
    _same(o.todense(), x)
  m = sparse.BCOO.fromdense(x)
  with pytest.raises(sparse.SparseEfficiencyError, match="increasing n_batch from 0 to 1"):
    m.update_layout(n_batch=1)
  with pytest.warns(sparse.SparseEfficiencyWarning):
    m.update_layout(n_dense=1, on_inefficient="warn")


def test_concatenate():
  x, y = np.stack([A, -A]), np.stack([W, 0 * W])
  for kw, dim in [({}, 0), ({}, 2), (dict(n_batch=1), 0), (dict(n_batch=1), 1)]:
    a, b = sparse.BCOO.fromdense(x, **kw), sparse.BCOO.fromdense(y, **kw)
    out = sparse.bcoo_concatenate([a, b], dimension=dim)
    _same(out.todense(), np.concatenate([x, y], dim))
    assert out.nse == (max(a.nse, b.nse) if dim < a.n_batch else a.nse + b.nse)
  with pytest.raises(NotImplementedError, match="dense dimensions"):
    sparse.bcoo_concatenate([sparse.BCOO.fromdense(x, n_dense=1)] * 2, dimension=2)


def test_random_bcoo_is_jaxs(ref):
  _same_bcoo(sparse.random_bcoo(pyjax.random.key(3), **RANDOM_KW), ref["random"])


def test_sparsify():
  s = sparse.BCOO.fromdense(A)
  v = B[:, 0]

  def f(m, x):
    return 2 * jnp.dot(jnp.log1p(jnp.abs(m)).T, x[:5]) + 1
  want = 2 * np.log1p(np.abs(A)).T @ v[:5] + 1
  _same(sparse.sparsify(f)(s, v), want)
  _same(pyjax.jit(sparse.sparsify(f))(s, v), want)
  out = sparse.sparsify(lambda m: jnp.sin(m * 2.0) @ m.T)(s)
  assert isinstance(out, sparse.BCOO)
  _same(out.todense(), np.sin(2 * A) @ A.T, 1e-4)
  _same(sparse.sparsify(lambda m: (m ** 2).sum())(s), np.float32((A ** 2).sum()))
  g = pyjax.grad(lambda d: sparse.sparsify(f)(sparse.BCOO((d, s.indices), shape=A.shape), v).sum())
  i, j = np.asarray(s.indices).T
  _same(g(s.data), 2 * v[i] * np.sign(A[i, j]) / (1 + np.abs(A[i, j])))
  with pytest.raises(NotImplementedError, match="sparse rule for exp is not implemented "
                     "because it would result in dense output"):
    sparse.sparsify(jnp.exp)(s)
