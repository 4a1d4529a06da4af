"""jax.experimental.sparse: the older COO/CSR/CSC formats and their primitives, todense,
empty/eye in every format, bcoo_broadcast_in_dim/dynamic_slice/rev/gather,
bcsr_concatenate, sparse-aware grad, and the public name set -- against real JAX 0.10."""
import numpy as np
import pytest

import pyjax
import pyjax.numpy as pnp
from pyjax.experimental import sparse as ps

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
js = pytest.importorskip("jax.experimental.sparse")

M = np.array([[0, 1., 0, 2], [3, 0, 0, 0], [0, 0, 4, 0]], np.float32)
# stored elements with negative and out-of-range rows/columns (JAX: reads clamp, writes drop)
D = np.array([1., 2., 4., 8., 16.], np.float32)
R = np.array([0, -1, 5, 1, 2])
C = np.array([0, 1, 1, -2, 7])


def _cases(L, S, J):
  v = L.arange(1., 5.)
  B = L.arange(8.).reshape(4, 2)
  m = S.COO((L.asarray(D), L.asarray(R), L.asarray(C)), shape=(3, 4))
  cs, cc, co = S.CSR.fromdense(L.asarray(M)), S.CSC.fromdense(L.asarray(M)), \
      S.COO.fromdense(L.asarray(M), nse=6)
  bm = S.BCOO.fromdense(L.asarray(M))
  out = dict(
      coo_mv=m @ v, coo_dense=m.todense(), coo_jit=J.jit(lambda m, v: m @ v)(m, v),
      coo_mvT=S.coo_matvec(m, L.arange(1., 4.), transpose=True), coo_mm=m @ B,
      coo_T=m.T.todense(),
      coo_gdata=J.grad(lambda d: (S.COO((d, m.row, m.col), shape=(3, 4)) @ v).sum())(m.data),
      coo_gvec=J.grad(lambda x: (m @ x).sum())(v),
      coo_fd=(co.data, co.row, co.col), csr_fd=(cs.data, cs.indices, cs.indptr),
      csc_fd=(cc.data, cc.indices, cc.indptr),
      csr_mv=cs @ v, csc_mv=cc @ v, csr_dense=cs.todense(), csc_dense=cc.todense(),
      csr_mm=J.jit(lambda a, b: a @ b)(cs, B),
      csr_gdata=J.grad(lambda d: (S.CSR((d, cs.indices, cs.indptr), shape=(3, 4)) @ v).sum())(
          cs.data),
      csr_jit_fd=J.jit(lambda x: S.CSR.fromdense(x, nse=5).indptr)(L.asarray(M)),
      eye_csr=S.eye(3, 4, 1, sparse_format="csr").todense(),
      eye_csc=S.eye(3, 4, -1, sparse_format="csc").todense(),
      eye_coo=S.eye(4, 3, 1, sparse_format="coo").todense(),
      empty_csc=S.empty((2, 3), sparse_format="csc").todense(),
      todense_csr=S.todense(cs), todense_dense=S.todense(L.asarray(M)),
      todense_grad=J.grad(lambda d: (S.todense(S.BCOO((d, bm.indices), shape=(3, 4))) * M).sum())(
          bm.data),
  )
  b = S.bcoo_broadcast_in_dim(bm, shape=(2, 3, 4), broadcast_dimensions=(1, 2))
  out["bid"] = (b.todense(), b.n_batch, b.indices)
  out["bid_sparse1"] = S.bcoo_broadcast_in_dim(bm, shape=(3, 1, 4),
                                               broadcast_dimensions=(0, 2)).todense()
  ds = S.bcoo_dynamic_slice(bm, [1, 1], (2, 2))
  out["dslice"] = (ds.todense(), ds.indices, ds.data)
  ds = J.jit(lambda m, i: S.bcoo_dynamic_slice(m, [i, 2], (2, 2)))(bm, 5)   # start clamped
  out["dslice_jit"] = (ds.todense(), ds.indices)
  rv = S.bcoo_rev(bm, (1,))
  out["rev"] = (rv.todense(), rv.indices)
  out["rev_batch"] = S.bcoo_rev(S.BCOO.fromdense(L.asarray(M), n_batch=1), (0, 1)).todense()
  dn = J.lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,),
                                    start_index_map=(0,))
  g = S.bcoo_gather(bm, L.asarray(np.array([[2], [0]])), dn, (1, 4))
  out["gather"] = (g.todense(), g.nse, g.n_batch)
  sg = S.grad(lambda m: (m @ v).sum())(bm)
  out["sparse_grad"] = (type(sg).__name__, sg.data, sg.indices)
  val, vg = S.value_and_grad(lambda m: (m @ v).sum())(bm)
  out["value_and_grad"] = (val, vg.data)
  out["jacfwd"] = S.jacfwd(lambda m: m @ v)(bm).data
  m3 = S.BCOO.fromdense(L.asarray(np.arange(24.).reshape(2, 3, 4) *
                                  (np.arange(24).reshape(2, 3, 4) % 3 == 0)))
  for k, ix in enumerate([(L.array([1, 0]),), (1, L.array([2, 0, 1])),
                          (L.array([0, -1]), slice(None)), (slice(None), L.array([[2], [0]]))]):
    r = m3[ix]
    out[f"getitem_array{k}"] = (r.todense(), r.nse, r.n_batch)
  sp = [lambda x: J.lax.rev(x, (1,)), lambda x: J.lax.broadcast_in_dim(x, (2, 3, 4), (1, 2)),
        lambda x: J.lax.dynamic_slice(x, (L.int32(1), L.int32(1)), (2, 2)),
        lambda x: x[L.array([2, 0])], lambda x: x[:, L.array([3, 1])].sum(0)]
  for k, f in enumerate(sp):
    r = S.sparsify(f)(bm)
    out[f"sparsify{k}"] = r.todense() if hasattr(r, "todense") else r
  x = np.array([[[0, 1., 0, 2, 0, 0, 3]]], np.float32)
  k = np.array([[[1., 0, -1]]], np.float32)
  for j, pad in enumerate(("SAME", [(2, 1)])):
    r = S.bcoo_conv_general_dilated(S.BCOO.fromdense(L.asarray(x), n_batch=2), L.asarray(k),
                                    window_strides=(1,), padding=pad)
    out[f"conv{j}"] = (r.data, r.indices, r.todense())
  r = S.sparsify(lambda a, b: J.lax.conv_general_dilated(a, b, (1,), "VALID"))(
      L.asarray(x), S.BCOO.fromdense(L.asarray(k), n_batch=2))
  out["conv_sparsify"] = (r.data, r.indices)
  out["bcsr_concat"] = S.bcsr_concatenate([S.BCSR.fromdense(L.asarray(M))] * 2,
                                          dimension=0).todense()
  return out


@pytest.fixture(scope="module")
def both():
  return _cases(pnp, ps, pyjax), _cases(jnp, js, jax)


_KEYS = sorted([
    "coo_mv", "coo_dense", "coo_jit", "coo_mvT", "coo_mm", "coo_T", "coo_gdata", "coo_gvec",
    "coo_fd", "csr_fd", "csc_fd", "csr_mv", "csc_mv", "csr_dense", "csc_dense", "csr_mm",
    "csr_gdata", "csr_jit_fd", "eye_csr", "eye_csc", "eye_coo", "empty_csc", "todense_csr",
    "todense_dense", "todense_grad", "bid", "bid_sparse1", "dslice", "dslice_jit", "rev",
    "rev_batch", "gather", "sparse_grad", "value_and_grad", "jacfwd", "bcsr_concat",
    "getitem_array0", "getitem_array1", "getitem_array2", "getitem_array3", "sparsify0",
    "sparsify1", "sparsify2", "sparsify3", "sparsify4", "conv0", "conv1", "conv_sparsify"])


@pytest.mark.parametrize("key", _KEYS)
def test_matches_jax(both, key):
  got, want = both[0][key], both[1][key]
  got, want = (got if isinstance(got, tuple) else (got,)), (want if isinstance(want, tuple)
                                                           else (want,))
  assert len(got) == len(want)
  for a, b in zip(got, want):
    if isinstance(b, str):
      assert a == b
      continue
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape and a.dtype == b.dtype, (a, b)
    np.testing.assert_array_equal(a, b)


def test_classes_and_errors():
  m = ps.COO.fromdense(M)
  assert isinstance(m, ps.JAXSparse) and isinstance(ps.BCOO.fromdense(M), ps.JAXSparse)
  assert repr(ps.CSR.fromdense(M)) == "CSR(float32[3, 4], nse=4)"
  assert type(ps.CSR.fromdense(M).T) is ps.CSC and type(ps.CSC.fromdense(M).T) is ps.CSR
  with pytest.raises(NotImplementedError, match="matmul between two sparse objects"):
    m @ m.T
  with pytest.raises(ValueError, match="not recognized"):
    ps.empty((2, 2), sparse_format="dia")
  with pytest.raises(KeyError):
    ps.eye(2, sparse_format="bcsr")
  with pytest.raises(NotImplementedError, match="non-adjacent"):
    ps.BCOO.fromdense(np.ones((2, 3, 4), np.float32))[0, 1:3, pnp.array([3, 0])]
  leaves, tree = pyjax.tree_util.tree_flatten(ps.CSR.fromdense(M))
  assert len(leaves) == 3 and pyjax.tree_util.tree_unflatten(tree, leaves).shape == (3, 4)


# names JAX exports that pyjax does not (yet): see docs/sparse.md
_NOT_YET = set()


def test_public_names_match_jax():
  want = {n for n in dir(js) if not n.startswith("_")}
  have = {n for n in dir(ps) if not n.startswith("_")}
  assert want - have == _NOT_YET
  assert have - want <= {"SparseInfo", "bcoo_eliminate_zeros"}
