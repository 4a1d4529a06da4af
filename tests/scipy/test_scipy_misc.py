"""pyjax.scipy.{integrate, ndimage, fft, signal (spectral), optimize, cluster.vq,
interpolate} against real JAX and SciPy."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import pyjax
import pyjax.numpy as pjnp
import pyjax.scipy.fft as pfft
import pyjax.scipy.integrate as pint
import pyjax.scipy.ndimage as pnd
import pyjax.scipy.optimize as popt
import pyjax.scipy.signal as psig
from pyjax.scipy.cluster.vq import vq as pvq
from pyjax.scipy.interpolate import RegularGridInterpolator as PRGI
from jax_compare import bf16, check, rand

scipy = pytest.importorskip("scipy")
import scipy.fft as sfft  # noqa: E402
import scipy.integrate as sint  # noqa: E402
import scipy.ndimage as snd  # noqa: E402
import scipy.signal as ssig  # noqa: E402

def _fast(values, keep):
  """Parameters where only the indices in ``keep`` run by default (the rest are slow);
  tuples are several parameter names."""
  def slow(v):
    return pytest.param(*v, marks=pytest.mark.slow) if isinstance(v, tuple) else \
        pytest.param(v, marks=pytest.mark.slow)
  return [v if i in keep else slow(v) for i, v in enumerate(values)]


SETTINGS = settings(max_examples=8, deadline=None, derandomize=True,
                    suppress_health_check=list(HealthCheck))
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


# --- ndimage ------------------------------------------------------------------------------
IMG = R.randn(5, 6).astype(np.float32)
COORDS = [R.rand(7).astype(np.float32) * 7 - 1, R.rand(7).astype(np.float32) * 8 - 1]


@pytest.mark.parametrize("order,mode", _fast(
    [(o, md) for o in (0, 1) for md in ("constant", "nearest", "wrap", "mirror", "reflect")],
    {0, 6, 7, 9}))
def test_map_coordinates(order, mode):
  check(lambda m: m.ndimage.map_coordinates(IMG, COORDS, order, mode=mode, cval=1.5), tol=1e-5)
  if mode != "wrap" and not (order == 0 and mode == "mirror"):
    smode = "grid-constant" if mode == "constant" else mode   # JAX's 'constant' semantics
    ref = snd.map_coordinates(IMG.astype(np.float64), np.stack(COORDS).astype(np.float64),
                              order=order, mode=smode, cval=1.5)
    np.testing.assert_allclose(pnd.map_coordinates(IMG, COORDS, order, mode=mode, cval=1.5),
                               ref, rtol=1e-5, atol=1e-5)


def test_map_coordinates_ints_grad_errors():
  img_i = (IMG * 10).astype(np.int32)
  check(lambda m: m.ndimage.map_coordinates(img_i, COORDS, 1))
  check(lambda m: m.top.grad(lambda im: m.ndimage.map_coordinates(im, COORDS, 1).sum())(IMG))
  check(lambda m: m.top.grad(lambda c: m.ndimage.map_coordinates(IMG, [c, COORDS[1]], 1)
                             .sum())(COORDS[0]))
  check(lambda m: m.ndimage.map_coordinates(IMG, COORDS, 3))
  check(lambda m: m.ndimage.map_coordinates(IMG, COORDS, 1, mode="grid-wrap"), message=False)
  check(lambda m: m.ndimage.map_coordinates(IMG, COORDS[:1], 1))
  vol = R.randn(3, 4, 5).astype(np.float32)
  c3 = [R.rand(2, 3).astype(np.float32) * 3 for _ in range(3)]
  check(lambda m: m.ndimage.map_coordinates(vol, c3, 1, mode="nearest"), tol=1e-5)


# --- fft (DCT) ----------------------------------------------------------------------------
XF = R.randn(4, 5, 6).astype(np.float32)


@pytest.mark.parametrize("name,kw", _fast([
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


# --- signal: FFT convolution and spectral analysis ----------------------------------------
SX = R.randn(3, 200).astype(np.float32)
SY = R.randn(3, 200).astype(np.float32)


@pytest.mark.parametrize("kw", _fast([{}, {"mode": "same"}, {"mode": "valid"}, {"axes": 1},
                                      {"axes": (1,), "mode": "same"}], {0, 2, 3}))
def test_fftconvolve(kw):
  check(lambda m: m.signal.fftconvolve(SX, SY[:, :7], **kw), tol=1e-4)
  ref = ssig.fftconvolve(SX.astype(np.float64), SY[:, :7].astype(np.float64), **kw)
  np.testing.assert_allclose(psig.fftconvolve(SX, SY[:, :7], **kw), ref, rtol=1e-4, atol=1e-4)


def test_fftconvolve_misc():
  check(lambda m: m.signal.fftconvolve(SX[:, :5], SY[:2, :3], mode="valid"), tol=1e-4)
  check(lambda m: m.signal.fftconvolve((SX + 1j * SY)[0], SY[0, :4]), tol=1e-4)
  check(lambda m: m.signal.fftconvolve(SX[0, :1], SY[0, :1]), tol=1e-4)
  check(lambda m: m.signal.convolve(SX[0], SY[0, :9], method="fft"), tol=1e-4)
  check(lambda m: m.signal.fftconvolve(SX, SY[:2], axes=1))
  check(lambda m: m.signal.fftconvolve(SX, SY, mode="bogus"))
  check(lambda m: m.top.grad(lambda a: m.signal.fftconvolve(a, SY[0, :5]).sum())(SX[0]),
        tol=1e-4)


@pytest.mark.parametrize("kw", [{}, {"type": "constant", "axis": 0}, {"bp": [50, 120]}])
def test_detrend(kw):
  check(lambda m: m.signal.detrend(SX, **kw), tol=1e-4)
  np.testing.assert_allclose(psig.detrend(SX, **kw),
                             ssig.detrend(SX.astype(np.float64), **kw), atol=1e-4)


STFT_CASES = [
    {"nperseg": 32}, {"nperseg": 31, "noverlap": 10, "boundary": "even"},
    {"nperseg": 16, "boundary": None, "padded": False, "window": "hamming"},
    {"nperseg": 20, "boundary": "odd", "nfft": 32, "return_onesided": False},
    {"nperseg": 24, "boundary": "constant", "detrend": "linear", "fs": 10.0},
]


@pytest.mark.parametrize("kw", _fast(STFT_CASES, {0, 3}))
def test_stft(kw):
  check(lambda m: m.signal.stft(SX, **kw), tol=1e-4)
  f, t, z = psig.stft(SX, **kw)
  sf, st_, sz = ssig.stft(SX.astype(np.float64), **kw)
  np.testing.assert_allclose(f, sf, rtol=1e-5)
  np.testing.assert_allclose(t, st_, rtol=1e-5)
  np.testing.assert_allclose(z, sz, atol=1e-4)


@pytest.mark.parametrize("kw", _fast([{"nperseg": 64}, {"nperseg": 33, "average": "median",
                                                        "scaling": "spectrum"},
                                      {"nperseg": 40, "detrend": "linear", "noverlap": 5},
                                      {"nperseg": 50, "return_onesided": False, "nfft": 64}],
                                     {0}))
def test_welch_and_csd(kw):
  check(lambda m: m.signal.welch(SX, **kw), tol=1e-4)
  check(lambda m: m.signal.csd(SX, SY, **kw), tol=1e-4)
  f, p = psig.welch(SX, **kw)
  sf, sp_ = ssig.welch(SX.astype(np.float64), **kw)
  np.testing.assert_allclose(f, sf, rtol=1e-5)
  np.testing.assert_allclose(p, sp_, rtol=1e-3, atol=1e-6)
  f, p = psig.csd(SX, SY, **kw)
  sf, sp_ = ssig.csd(SX.astype(np.float64), SY.astype(np.float64), **kw)
  np.testing.assert_allclose(p, sp_, rtol=1e-3, atol=1e-6)


@pytest.mark.slow
def test_welch_axis_and_errors():
  check(lambda m: m.signal.welch(SX.T, axis=0, nperseg=40), tol=1e-4)
  check(lambda m: m.signal.welch(SX, nperseg=16, noverlap=16))
  check(lambda m: m.signal.welch(SX, nperseg=32, nfft=16))
  check(lambda m: m.signal.welch(SX, nperseg=32, average="bogus"))
  check(lambda m: m.signal.welch(SX, nperseg=32, scaling="bogus"))
  check(lambda m: m.signal.welch(np.zeros((2, 0), np.float32)))


@pytest.mark.parametrize("kw", _fast([{"nperseg": 32}, {}, {"nperseg": 32, "noverlap": 20},
                                      {"nperseg": 32, "boundary": False}], {0}))
def test_istft(kw):
  _, _, z = ssig.stft(SX.astype(np.float64), nperseg=kw.get("nperseg", 256),
                      noverlap=kw.get("noverlap"))
  z = z.astype(np.complex64)
  check(lambda m: m.signal.istft(z, **kw), tol=1e-4)
  if kw.get("boundary", True):
    t, x = psig.istft(z, **kw)
    st_, sx = ssig.istft(z.astype(np.complex128), **kw)
    np.testing.assert_allclose(x, sx, atol=1e-4)


def test_istft_axes_roundtrip():
  _, _, z = psig.stft(SX, nperseg=32)
  _, back = psig.istft(z, nperseg=32)
  np.testing.assert_allclose(np.asarray(back)[:, :200], SX, atol=1e-4)
  zt = np.swapaxes(np.asarray(z), -1, -2)
  check(lambda m: m.signal.istft(zt, nperseg=32, time_axis=-2, freq_axis=-1), tol=1e-4)
  check(lambda m: m.signal.istft(zt, time_axis=1, freq_axis=1))


# --- optimize -----------------------------------------------------------------------------
def _rosen(m):
  def f(x):
    return m.jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)
  return f


def _quad(m):
  A = np.diag(np.arange(1., 5.)).astype(np.float32)

  def f(x, c):
    return 0.5 * x @ (m.jnp.asarray(A) @ x) - c @ x
  return f


def test_minimize_bfgs_matches_jax():
  x0 = np.float32([0.5, -0.3, 1.2, 0.1])
  c = np.float32([1., 2., 3., 4.])
  check(lambda m: m.optimize.minimize(_quad(m), x0, (c,), method="BFGS"), tol=1e-4)


def test_minimize_bfgs_rosenbrock_x64(x64):
  x0 = np.array([-1.2, 1.0, 0.5, 0.3])
  res = check(lambda m: m.optimize.minimize(_rosen(m), x0, method="BFGS"), tol=1e-6)
  assert bool(res.success) and int(res.status) == 0
  sres = scipy.optimize.minimize(lambda x: float(np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2
                                                         + (1 - x[:-1]) ** 2)), x0,
                                 method="BFGS")
  np.testing.assert_allclose(res.fun, sres.fun, atol=1e-6)


@pytest.mark.slow
def test_minimize_options_and_lbfgs():
  x0 = np.float32([0.5, -0.3, 1.2, 0.1])
  c = np.float32([1., 2., 3., 4.])
  check(lambda m: m.optimize.minimize(_quad(m), x0, (c,), method="BFGS",
                                      options={"maxiter": 2}), tol=1e-4)
  check(lambda m: m.optimize.minimize(_quad(m), x0, (c,), method="bfgs",
                                      options={"gtol": 1e-2, "norm": 2}), tol=1e-4)
  check(lambda m: m.optimize.minimize(_quad(m), x0, (c,),
                                      method="l-bfgs-experimental-do-not-rely-on-this"),
        tol=1e-4)
  check(lambda m: m.optimize.minimize(_quad(m), x0, c, method="BFGS"))
  check(lambda m: m.optimize.minimize(_quad(m), x0, (c,), method="Nelder-Mead"))


def test_minimize_under_jit():
  c = np.float32([1., 2., 3., 4.])
  f = pyjax.jit(lambda x0: popt.minimize(_quad(type("M", (), {"jnp": pjnp})), x0, (c,),
                                         method="BFGS").x)
  np.testing.assert_allclose(f(np.zeros(4, np.float32)), c / np.arange(1., 5.), rtol=1e-4)


# --- cluster.vq and interpolate -----------------------------------------------------------
def test_vq():
  obs = R.randn(6, 3).astype(np.float32)
  cb = R.randn(4, 3).astype(np.float32)
  check(lambda m: m.vq.vq(obs, cb), tol=1e-5)
  check(lambda m: m.vq.vq(obs[:, 0], cb[:, 0]), tol=1e-5)
  check(lambda m: m.vq.vq(obs, cb[:, 0]))
  code, dist = pvq(obs, cb)
  import scipy.cluster.vq as svq
  scode, sdist = svq.vq(obs.astype(np.float64), cb.astype(np.float64))
  np.testing.assert_array_equal(code, scode)
  np.testing.assert_allclose(dist, sdist, rtol=1e-5)


GRID = (np.linspace(0, 1, 4), np.linspace(0, 2, 5))
VALS = R.randn(4, 5).astype(np.float32)
PTS = (R.rand(6, 2) * 2.2 - 0.1)


@pytest.mark.parametrize("method,fill", _fast(
    [(md, f) for md in ("linear", "nearest") for f in (np.nan, None, 0.0)], {0, 4}))
def test_regular_grid_interpolator(method, fill):
  check(lambda m: m.interpolate.RegularGridInterpolator(GRID, VALS, method=method,
                                                        fill_value=fill)(PTS), tol=1e-5)
  from scipy.interpolate import RegularGridInterpolator as SRGI
  got = np.asarray(PRGI(GRID, VALS, method=method, fill_value=fill,
                        bounds_error=False)(PTS))
  want = SRGI(GRID, VALS.astype(np.float64), method=method, fill_value=fill,
              bounds_error=False)(PTS)
  np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_regular_grid_interpolator_misc():
  vals3 = R.randn(4, 5, 2).astype(np.float32)
  check(lambda m: m.interpolate.RegularGridInterpolator(GRID, vals3)(PTS), tol=1e-5)
  check(lambda m: m.interpolate.RegularGridInterpolator(GRID, VALS)(
      (PTS[:, 0], PTS[:, 1])), tol=1e-5)
  check(lambda m: m.interpolate.RegularGridInterpolator(GRID, VALS, method="cubic"))
  check(lambda m: m.interpolate.RegularGridInterpolator(GRID, VALS, bounds_error=True))
  interp = PRGI(GRID, VALS)
  np.testing.assert_allclose(pyjax.jit(lambda it, p: it(p))(interp, PTS), interp(PTS),
                             rtol=1e-6)


@SETTINGS
@given(n=st.integers(1, 9), norm=st.sampled_from([None, "ortho"]))
def test_dct_sizes(n, norm):
  x = rand((2, n), np.float32, n)
  np.testing.assert_allclose(pfft.dct(x, norm=norm),
                             sfft.dct(x.astype(np.float64), norm=norm), rtol=1e-4, atol=1e-4)
  np.testing.assert_allclose(pfft.idct(x, norm=norm),
                             sfft.idct(x.astype(np.float64), norm=norm), rtol=1e-4, atol=1e-4)



# --- sparse.linalg ------------------------------------------------------------------------
SA = R.randn(6, 6).astype(np.float32)
SSPD = (SA @ SA.T + 6 * np.eye(6)).astype(np.float32)
SGEN = (SA + 6 * np.eye(6)).astype(np.float32)
SB = R.randn(6).astype(np.float32)


def _sparse(m):
  import importlib
  return importlib.import_module(f"{m.name}.scipy.sparse.linalg")


@pytest.mark.parametrize("name,mat,kw", _fast([
    ("cg", SSPD, {}), ("cg", SSPD, {"M": np.diag(1 / np.diag(SSPD)), "tol": 1e-6}),
    ("bicgstab", SGEN, {}), ("gmres", SGEN, {}),
    ("gmres", SGEN, {"solve_method": "incremental", "restart": 3}),
    ("cg", SSPD, {"maxiter": 2}), ("gmres", SGEN, {"x0": SB}),
], {0, 2, 3}))
def test_sparse_solvers(name, mat, kw):
  check(lambda m: getattr(_sparse(m), name)(mat, SB, **kw), tol=1e-4)
  x, _ = getattr(__import__("pyjax.scipy.sparse.linalg", fromlist=["x"]), name)(mat, SB)
  np.testing.assert_allclose(x, np.linalg.solve(mat.astype(np.float64), SB), rtol=1e-3,
                             atol=1e-4)


@pytest.mark.slow
def test_sparse_solvers_pytrees_grads_errors():
  tree = {"u": SB[:3], "v": SB[3:]}
  check(lambda m: _sparse(m).cg(lambda t: {"u": 2 * t["u"], "v": 3 * t["v"]}, tree), tol=1e-5)
  check(lambda m: m.top.grad(lambda b: _sparse(m).cg(SSPD, b)[0].sum())(SB), tol=1e-4)
  check(lambda m: m.top.grad(lambda b: _sparse(m).gmres(SGEN, b)[0].sum())(SB), tol=1e-4)
  check(lambda m: _sparse(m).cg(SSPD[:3], SB))
  check(lambda m: _sparse(m).cg(SSPD, SB, x0=SB[:3]))
  check(lambda m: _sparse(m).gmres(SGEN, SB, solve_method="bogus"))


# --- spatial.transform --------------------------------------------------------------------
QUATS = R.randn(5, 4).astype(np.float32)
VECS = R.randn(5, 3).astype(np.float32)


def _rot(m):
  import importlib
  return importlib.import_module(f"{m.name}.scipy.spatial.transform")


@pytest.mark.parametrize("method", _fast(["as_matrix", "as_mrp", "as_rotvec", "as_quat",
                                          "magnitude", "mean"], {0, 2}))
def test_rotation_conversions(method):
  check(lambda m: getattr(_rot(m).Rotation.from_quat(QUATS), method)(), tol=1e-5)


@pytest.mark.parametrize("seq", _fast(["xyz", "ZYX", "zxz", "XYX", "xzy"], {1, 2}))
def test_rotation_euler(seq):
  check(lambda m: _rot(m).Rotation.from_quat(QUATS).as_euler(seq), tol=1e-5)
  check(lambda m: _rot(m).Rotation.from_euler(seq, VECS, degrees=True).as_quat(), tol=1e-5)
  from scipy.spatial.transform import Rotation as SR
  from pyjax.scipy.spatial.transform import Rotation as PR
  np.testing.assert_allclose(PR.from_quat(QUATS).as_euler(seq),
                             SR.from_quat(QUATS.astype(np.float64)).as_euler(seq), atol=2e-5)


def test_rotation_misc_and_slerp():
  check(lambda m: _rot(m).Rotation.from_quat(QUATS).apply(VECS, inverse=True), tol=1e-5)
  check(lambda m: (_rot(m).Rotation.from_quat(QUATS) * _rot(m).Rotation.from_quat(
      QUATS[::-1])).as_quat(canonical=True, scalar_first=True), tol=1e-5)
  mats = np.asarray(__import__("scipy.spatial.transform", fromlist=["R"]).Rotation.from_quat(
      QUATS.astype(np.float64)).as_matrix(), np.float32)
  check(lambda m: _rot(m).Rotation.from_matrix(mats).as_quat(), tol=1e-5)
  check(lambda m: _rot(m).Rotation.from_rotvec(VECS).inv().as_quat(), tol=1e-5)
  check(lambda m: _rot(m).Rotation.from_mrp(VECS * 0.3).as_quat(), tol=1e-5)
  check(lambda m: _rot(m).Slerp.init(np.arange(5.), _rot(m).Rotation.from_quat(QUATS))(
      np.float32([0.5, 1.7, 3.9])).as_quat(), tol=1e-5)
  check(lambda m: _rot(m).Rotation.from_euler("xxz", VECS))
  check(lambda m: _rot(m).Rotation.from_quat(QUATS[0])[0])
  check(lambda m: _rot(m).Slerp.init(np.arange(5.), _rot(m).Rotation.from_quat(QUATS[0])))
