"""BCOO @ BCOO (``bcoo_spdot_general``): JAX's output layout (nse, sorted pairs of free
indices, padding) and values, against real JAX, for the index-writing paths of the
eager kernel (int32 pairs as 64-bit words, int64 pairs, one-dimensional operands)."""
import numpy as np
import pytest

import pyjax
from pyjax.experimental import sparse as ps

jax = pytest.importorskip("jax")
js = pytest.importorskip("jax.experimental.sparse")


def _bcoo(S, shape, nse, seed, index_dtype=np.int32):
  """A BCOO of ``nse`` random elements (sorted, unique) and two padding slots, built from
  NumPy buffers (JAX's ``fromdense`` would compile a program per shape)."""
  rng = np.random.default_rng(seed)
  flat = np.sort(rng.choice(int(np.prod(shape)), nse, replace=False))
  idx = np.stack(np.unravel_index(flat, shape), 1)
  idx = np.concatenate([idx, np.tile(np.asarray(shape), (2, 1))]).astype(index_dtype)
  data = np.concatenate([rng.standard_normal(nse), [0, 0]]).astype(np.float32)
  return S.BCOO((data, idx), shape=shape)


_CASES = [((7, 5), 6, (9, 5), 4, (((1,), (1,)), ((), ()))),   # matrix @ matrix.T
          ((6,), 3, (6, 4), 5, (((0,), (0,)), ((), ())))]     # fully contracted lhs


@pytest.mark.parametrize("case", range(len(_CASES)))
def test_spdot_layout_matches_jax(case):
  ls, ln, rs, rn, dn = _CASES[case]
  got, want = [S.bcoo_dot_general(_bcoo(S, ls, ln, 1), _bcoo(S, rs, rn, 2),
                                  dimension_numbers=dn) for S in (ps, js)]
  assert got.shape == want.shape and got.nse == want.nse
  np.testing.assert_array_equal(np.asarray(got.indices), np.asarray(want.indices))
  np.testing.assert_allclose(np.asarray(got.data), np.asarray(want.data), rtol=1e-6)


def test_spdot_int64_indices():
  jax.config.update("jax_enable_x64", True)
  try:
    with pyjax.enable_x64(True):
      got, want = [(lambda m: m @ m.T)(_bcoo(S, (7, 5), 6, 3, np.int64)) for S in (ps, js)]
      assert got.indices.dtype == want.indices.dtype == np.int64
      np.testing.assert_array_equal(np.asarray(got.indices), np.asarray(want.indices))
      np.testing.assert_allclose(np.asarray(got.data), np.asarray(want.data), rtol=1e-6)
  finally:
    jax.config.update("jax_enable_x64", False)
