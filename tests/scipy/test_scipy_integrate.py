"""pyjax.scipy.integrate against real JAX and SciPy."""

import numpy as np
import pytest

import pyjax.scipy.integrate as pint
from jax_compare import bf16, check

scipy = pytest.importorskip("scipy")
import scipy.integrate as sint  # noqa: E402

R = np.random.RandomState(0)


# --- integrate ----------------------------------------------------------------------------
Y = R.randn(3, 5).astype(np.float32)
XS = np.cumsum(R.rand(5)).astype(np.float32)


@pytest.mark.parametrize("kw", [{}, {"dx": 0.3}, {"x": XS}, {"x": np.tile(XS, (3, 1))},
                                {"axis": 0}, {"axis": 0, "x": XS[:3]}])
def test_trapezoid(kw):
  check(lambda m: m.integrate.trapezoid(Y, **kw))
  ref = sint.trapezoid(Y.astype(np.float64), **{k: np.asarray(v, np.float64)
                                                if isinstance(v, np.ndarray) else v
                                                for k, v in kw.items()})
  np.testing.assert_allclose(pint.trapezoid(Y, **kw), ref, rtol=1e-5, atol=1e-6)


def test_trapezoid_dtypes_and_grad():
  check(lambda m: m.integrate.trapezoid(np.arange(6, dtype=np.int32)))
  check(lambda m: m.integrate.trapezoid(np.ones((2, 1), bf16)), tol=1e-2)
  check(lambda m: m.top.grad(lambda y: m.integrate.trapezoid(y, XS))(Y[0]))
