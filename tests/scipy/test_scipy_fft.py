"""pyjax.scipy.fft (the DCT family) against real JAX and SciPy."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import pyjax.scipy.fft as pfft
from jax_compare import check, rand, slow_except

scipy = pytest.importorskip("scipy")
import scipy.fft as sfft  # noqa: E402

SETTINGS = settings(max_examples=8, deadline=None, derandomize=True,
                    suppress_health_check=list(HealthCheck))
R = np.random.RandomState(0)


# --- fft (DCT) ----------------------------------------------------------------------------
XF = R.randn(4, 5, 6).astype(np.float32)


@pytest.mark.parametrize("name,kw", slow_except([
    ("dct", {}), ("dct", {"norm": "ortho", "axis": 1}), ("dct", {"n": 8}),
    ("dct", {"n": 3, "axis": 0}), ("idct", {}), ("idct", {"norm": "ortho", "axis": 0}),
    ("idct", {"n": 7}), ("dctn", {}), ("dctn", {"axes": (0, 2), "norm": "ortho"}),
    ("dctn", {"s": (3, 7)}), ("dctn", {"axes": [1]}), ("idctn", {}),
    ("idctn", {"axes": (1,), "norm": "ortho"}), ("idctn", {"s": (4, 4), "axes": (0, 1)}),
], {0, 1, 4, 8, 11, 13}))
def test_dct_family(name, kw):
  check(lambda m: getattr(m.fft, name)(XF, **kw), tol=2e-5)
  sk = dict(kw)
  got = np.asarray(getattr(pfft, name)(XF, **kw))
  want = getattr(sfft, name)(XF.astype(np.float64), **sk)
  np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-4 * np.abs(want).max())


def test_dct_complex_ints_roundtrip_grad_errors():
  z = (XF + 1j * XF[::-1]).astype(np.complex64)
  check(lambda m: m.fft.dct(z), tol=2e-5)
  check(lambda m: m.fft.dctn(z, axes=(0, 1)), tol=2e-5)
  check(lambda m: m.fft.dct(np.arange(6, dtype=np.int32)), tol=2e-5)
  np.testing.assert_allclose(pfft.idct(pfft.dct(XF)), XF, rtol=1e-4, atol=1e-5)
  np.testing.assert_allclose(pfft.idctn(pfft.dctn(XF, norm="ortho"), norm="ortho"), XF,
                             rtol=1e-4, atol=1e-5)
  check(lambda m: m.top.grad(lambda v: m.fft.dct(v, norm="ortho")[2])(XF[0, 0]), tol=1e-5)
  check(lambda m: m.fft.dct(XF, type=3))
  check(lambda m: m.fft.dct(XF, norm="forward"))
  check(lambda m: m.fft.dctn(XF, s=(1, 2, 3, 4)))


@SETTINGS
@given(n=st.integers(1, 9), norm=st.sampled_from([None, "ortho"]))
def test_dct_sizes(n, norm):
  x = rand((2, n), np.float32, n)
  np.testing.assert_allclose(pfft.dct(x, norm=norm),
                             sfft.dct(x.astype(np.float64), norm=norm), rtol=1e-4, atol=1e-4)
  np.testing.assert_allclose(pfft.idct(x, norm=norm),
                             sfft.idct(x.astype(np.float64), norm=norm), rtol=1e-4, atol=1e-4)
