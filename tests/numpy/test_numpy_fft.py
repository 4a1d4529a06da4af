"""jnp.fft and lax.fft: values against NumPy (always), against real JAX (values, dtypes,
errors), hypothesis over shapes/axes/norms/dtypes, derivatives (the fft_p transpose
rules) against jax.grad, jit and vmap."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import pyjax
import pyjax.numpy as pjnp
from pyjax import lax as plax
from jax_compare import check_both, compare, run

PF = pjnp.fft
SETTINGS = settings(max_examples=25, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
rng = np.random.default_rng(0)
x = rng.standard_normal((3, 4, 5)).astype(np.float32)
c = (x + 1j * rng.standard_normal((3, 4, 5))).astype(np.complex64)
ENV = dict(x=x, c=c)

NORMS = [None, "backward", "ortho", "forward"]


# --- NumPy known answers ---------------------------------------------------------------------
@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("name", ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"])
def test_1d_against_numpy(name, norm):
  a = c if name in ("fft", "ifft", "irfft", "hfft") else x
  for n in (None, 3, 8):
    for axis in (-1, 0, 1):
      got = getattr(PF, name)(a, n=n, axis=axis, norm=norm)
      want = getattr(np.fft, name)(a, n=n, axis=axis, norm=norm)
      assert got.shape == want.shape
      np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("name", ["fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn", "rfftn",
                                  "irfftn"])
def test_nd_against_numpy(name, norm):
  a = x if name.startswith("rfft") else c
  for s, axes in [(None, None), ((3, 6), (0, 2)), ((2, 2), None), (None, (2, 0))]:
    if name.endswith("2") and axes is None and s is None:
      kw = {}
    elif name.endswith("2"):
      kw = dict(s=s, axes=axes if axes is not None else (-2, -1))
    else:
      kw = dict(s=s, axes=axes)
    got = getattr(PF, name)(a, norm=norm, **kw)
    want = getattr(np.fft, name)(a, norm=norm, **kw)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_freqs_and_shifts_numpy():
  assert PF.fftfreq(0).shape == (0,)
  for n in (1, 5, 6):
    np.testing.assert_allclose(PF.fftfreq(n, 0.3), np.fft.fftfreq(n, 0.3), rtol=1e-6)
    np.testing.assert_allclose(PF.rfftfreq(n, 0.3), np.fft.rfftfreq(n, 0.3), rtol=1e-6)
  for axes in (None, 0, (0, 2), -1):
    np.testing.assert_array_equal(PF.fftshift(x, axes), np.fft.fftshift(x, axes))
    np.testing.assert_array_equal(PF.ifftshift(x, axes), np.fft.ifftshift(x, axes))
  np.testing.assert_array_equal(PF.ifftshift(PF.fftshift(np.arange(7))), np.arange(7))


def test_more_than_three_axes_numpy():
  a = rng.standard_normal((2, 3, 2, 3, 2)).astype(np.float32)
  np.testing.assert_allclose(PF.fftn(a), np.fft.fftn(a), rtol=1e-4, atol=1e-4)
  np.testing.assert_allclose(PF.rfftn(a), np.fft.rfftn(a), rtol=1e-4, atol=1e-4)
  np.testing.assert_allclose(PF.irfftn(PF.rfftn(a), s=a.shape), a, rtol=1e-4, atol=1e-4)


def test_nonfinite_numpy():
  a = np.array([1., np.nan, 2., 3.], np.float32)
  assert np.isnan(np.asarray(PF.fft(a))).all()
  b = np.array([1., np.inf, 0., 0.], np.float32)
  np.testing.assert_array_equal(np.isnan(np.asarray(PF.rfft(b))), np.isnan(np.fft.rfft(b)))


@SETTINGS
@given(shape=st.lists(st.integers(1, 5), min_size=1, max_size=3).map(tuple),
       data=st.data(), norm=st.sampled_from(NORMS),
       dtype=st.sampled_from([np.float32, np.complex64, np.int32, np.float16]))
def test_property_roundtrip_and_numpy(shape, data, norm, dtype):
  a = (rng.standard_normal(shape) * 3).astype(dtype)
  axis = data.draw(st.integers(-len(shape), len(shape) - 1))
  n = data.draw(st.one_of(st.none(), st.integers(1, 6)))
  got = PF.fft(a, n=n, axis=axis, norm=norm)
  assert got.dtype == np.complex64
  np.testing.assert_allclose(got, np.fft.fft(a.astype(np.complex64), n=n, axis=axis, norm=norm),
                             rtol=2e-3, atol=2e-3)
  back = PF.ifft(PF.fft(a, axis=axis, norm=norm), axis=axis, norm=norm)
  np.testing.assert_allclose(back, a.astype(np.complex64), rtol=2e-3, atol=2e-3)
  if dtype == np.float16:
    with pytest.raises(ValueError, match="RFFT input must be float32 or float64"):
      PF.rfft(a)  # as in JAX
  elif dtype != np.complex64:
    m = shape[axis] if n is None else n
    r = PF.irfft(PF.rfft(a, n=n, axis=axis, norm=norm), n=m, axis=axis, norm=norm)
    ref = np.fft.irfft(np.fft.rfft(a.astype(np.float32), n=n, axis=axis, norm=norm), n=m,
                       axis=axis, norm=norm)
    np.testing.assert_allclose(r, ref, rtol=2e-3, atol=2e-3)


# --- against JAX -------------------------------------------------------------------------------
FFT_CASES = [
    "jnp.fft.fft(x)", "jnp.fft.fft(c, axis=0)", "jnp.fft.fft(x, n=8, axis=0, norm='ortho')",
    "jnp.fft.fft(x, n=3, axis=1, norm='forward')", "jnp.fft.ifft(c, norm='ortho')",
    "jnp.fft.ifft(c, n=7, norm='forward')", "jnp.fft.rfft(x)", "jnp.fft.rfft(x, n=9, axis=1, norm='ortho')",
    "jnp.fft.irfft(c)", "jnp.fft.irfft(c, n=7, axis=0, norm='forward')", "jnp.fft.irfft(c, n=2)",
    "jnp.fft.hfft(c)", "jnp.fft.hfft(c, n=5, norm='ortho')", "jnp.fft.hfft(c, n=6, norm='forward')",
    "jnp.fft.ihfft(x)", "jnp.fft.ihfft(x, n=4, norm='ortho')", "jnp.fft.ihfft(x, n=7, norm='forward')",
    "jnp.fft.fft2(x)", "jnp.fft.ifft2(c, s=(3, 6), axes=(0, 2))", "jnp.fft.rfft2(x, norm='ortho')",
    "jnp.fft.irfft2(c)", "jnp.fft.fftn(x)", "jnp.fft.fftn(c, axes=(0, 2))", "jnp.fft.fftn(c, s=(2, 3))",
    "jnp.fft.ifftn(c, s=(2, 3, 4), norm='forward')", "jnp.fft.rfftn(x)", "jnp.fft.irfftn(c)",
    "jnp.fft.irfftn(c, s=(3, 5), axes=(2, 0))", "jnp.fft.fftn(jnp.ones((2, 3, 2, 3, 2)))",
    "jnp.fft.rfftn(jnp.ones((2, 3, 2, 3, 2)))", "jnp.fft.irfftn(jnp.ones((2, 3, 2, 3, 2)))",
    "jnp.fft.fft(jnp.ones(3, int))", "jnp.fft.fft(jnp.ones(3, bool))", "jnp.fft.fft(jnp.ones(3, jnp.float16))",
    "jnp.fft.rfft(jnp.ones(3, jnp.float16))", "jnp.fft.rfft(jnp.ones(3, int))", "jnp.fft.fft(2.)",
    "jnp.fft.fft(jnp.ones(3), norm='x')", "jnp.fft.fft(jnp.ones(3), n=0)",
    "jnp.fft.fft(jnp.ones((3, 4, 5, 6)), axis=5)", "jnp.fft.fft(jnp.ones((3, 4, 5, 6)), axis=(0, 1))",
    "jnp.fft.fftn(jnp.ones((3, 4, 5, 6)), axes=(0, 0))", "jnp.fft.fftn(jnp.ones((3, 4, 5, 6)), s=(2, 3), axes=(0,))",
    "jnp.fft.fft2(x, axes=(0,))", "jnp.fft.fftfreq(5)", "jnp.fft.fftfreq(6, d=0.5)",
    "jnp.fft.fftfreq(5, dtype=jnp.float16)", "jnp.fft.fftfreq(5, dtype=jnp.int32)", "jnp.fft.fftfreq(5.)",
    "jnp.fft.fftfreq(0)", "jnp.fft.fftfreq([5])", "jnp.fft.rfftfreq(6)", "jnp.fft.rfftfreq(7, d=0.3)",
    "jnp.fft.rfftfreq(7, dtype=jnp.int32)", "jnp.fft.fftshift(jnp.arange(6))",
    "jnp.fft.fftshift(jnp.ones((3, 4)), axes=0)", "jnp.fft.fftshift(x, axes=(0, 2))", "jnp.fft.ifftshift(x)",
    "jnp.fft.ifftshift(jnp.arange(7))", "jnp.fft.fft([1., 2])", "jnp.fft.ifft(jnp.ones(0))",
    "jnp.fft.fft(jnp.ones((2, 0)), axis=0)", "jnp.fft.fftn(jnp.ones((3, 4)), axes=())",
    "jnp.fft.irfft(jnp.ones(1))", "jnp.fft.fft(jnp.ones((3, 4)) * 1.0)", "jnp.fft.fft(c[0, 0, 0])",
]


@pytest.mark.parametrize("expr", FFT_CASES)
def test_against_jax(expr, jax):
  check_both(expr, ENV, jax, rtol=2e-4, atol=2e-4)


@pytest.mark.parametrize("expr", ["jnp.fft.rfft2(x)", "jnp.fft.irfftn(c, s=(3, 5), axes=(2, 0))",
                                  "jnp.fft.hfft(c, n=5, norm='ortho')", "jnp.fft.fftfreq(5)"])
def test_under_jit(expr, jax):
  check_both(expr, ENV, jax, rtol=2e-4, atol=2e-4, jit=True)


LAX_CASES = [("fft", (4,)), ("ifft", (3, 4)), ("rfft", (4,)), ("rfft", (3, 4)), ("irfft", (6,)),
             ("irfft", (3, 8)), ("fft", (5,)), ("rfft", (4, 6, 1)), ("irfft", (7,)), ("FFT", (4,)),
             ("bad", (4,))]


@pytest.mark.parametrize("typ,lengths", LAX_CASES)
def test_lax_fft_against_jax(typ, lengths, jax):
  real = np.arange(12.).reshape(3, 4).astype(np.float32)
  comp = (rng.standard_normal((3, 4)) + 1j).astype(np.complex64)
  for a in (real, comp):
    rp, ep = run(lambda: plax.fft(a, typ, lengths))
    rj, ej = run(lambda: jax.lax.fft(a, typ, lengths))
    if ej is not None:
      if type(ej).__name__ in ("MLIRError", "JaxRuntimeError"):
        assert ep is not None  # JAX fails at lowering; pyjax at abstract evaluation
        continue
      assert type(ep) is type(ej) and str(ep) == str(ej), (ep, ej)
      continue
    assert ep is None, ep
    compare(rp, rj, rtol=1e-4, atol=1e-4)


def test_lax_fft_jaxpr_and_enum(jax):
  a = np.ones((4, 6), np.float32)
  text = str(pyjax.make_jaxpr(lambda a: plax.fft(a, plax.FftType.RFFT, (4, 6)))(a))
  assert "fft[fft_lengths=(4, 6) fft_type=2]" in text
  assert [t.name for t in plax.FftType] == [t.name for t in jax.lax.FftType]
  assert [int(t) for t in plax.FftType] == [int(t.value) for t in jax.lax.FftType]


# --- derivatives against JAX (exercises the fft_p transposes) -------------------------------------
GRAD_CASES = ["F.fft(a)", "F.ifft(a, n=8)", "F.rfft(a)", "F.rfft(a, n=5, axis=0)", "F.irfft(a)",
              "F.irfft(a, n=7)", "F.hfft(a)", "F.ihfft(a)", "F.fftn(a, norm='ortho')",
              "F.rfftn(a, norm='forward')", "F.irfftn(a, s=(3, 4, 5))", "F.fftshift(a)"]


@pytest.mark.parametrize("expr", GRAD_CASES)
@pytest.mark.parametrize("kind", ["real", "complex"])
def test_grad_against_jax(expr, kind, jax, x64):
  import jax.numpy as jjnp
  if kind == "complex" and ("rfft" in expr or "ihfft" in expr):
    pytest.skip("real-input transform")
  a = np.random.RandomState(0).randn(3, 4, 6)
  if kind == "complex":
    a = a + 1j * np.random.RandomState(1).randn(3, 4, 6)
  fp = eval("lambda a: " + expr, dict(F=PF))
  fj = eval("lambda a: " + expr, dict(F=jjnp.fft))
  w = np.random.RandomState(2).randn(*np.shape(fj(a)))
  gp = pyjax.grad(lambda a: pjnp.sum(pjnp.abs(fp(a)) ** 2 * w + pjnp.real(fp(a)) * w))(a)
  gj = jax.grad(lambda a: jjnp.sum(jjnp.abs(fj(a)) ** 2 * w + jjnp.real(fj(a)) * w))(a)
  np.testing.assert_allclose(np.asarray(gp), np.asarray(gj), rtol=1e-8, atol=1e-8)


def test_vmap():
  from pyjax._src.api_vmap import vmap
  np.testing.assert_allclose(vmap(PF.fft, in_axes=1)(x), np.fft.fft(x.transpose(1, 0, 2)),
                             rtol=1e-4, atol=1e-4)
  np.testing.assert_allclose(vmap(lambda v: PF.rfft(v, axis=0), in_axes=2)(x),
                             np.fft.rfft(x.transpose(2, 0, 1), axis=1), rtol=1e-4, atol=1e-4)
