"""jax.scipy.signal: convolve, correlate, convolve2d, correlate2d.

Each case runs the same function with pyjax.scipy.signal and with jax.scipy.signal on the
same NumPy inputs and compares values, dtypes, shapes, weak types and exceptions; values
are also compared with scipy.signal (no JAX needed)."""
import numpy as np
import pytest

import pyjax.scipy.signal as psig

from jax_compare import (bf16, f16, f32, i8, u8, i32, b_, c64, weak, arr, fast,
                         check_jnp as _check, pjnp)


class _Mods:
  def __init__(self, np_mod, signal):
    self.np, self.signal, self.__name__ = np_mod, signal, np_mod.__name__


def check(fn, **kw):
  """Compare fn(m) for m holding pyjax.numpy/pyjax.scipy.signal with JAX's."""
  def mods(jax):
    import jax.scipy.signal as jsig
    return _Mods(pjnp, psig), _Mods(jax.numpy, jsig)
  return _check(fn, mods=mods, **kw)


scipy_signal = pytest.importorskip("scipy.signal")

SHAPES_1D = [((5,), (3,)), ((3,), (5,)), ((4,), (4,)), ((1,), (1,)), ((6,), (1,)), ((2,), (7,))]
SHAPES_2D = [((5, 6), (3, 2)), ((3, 2), (5, 6)), ((4, 4), (4, 4)), ((1, 1), (1, 1)),
             ((6, 5), (1, 5)), ((2, 3), (4, 3)), ((7, 1), (3, 1))]
SHAPES_3D = [((4, 5, 3), (2, 3, 1)), ((2, 2, 2), (3, 4, 5))]


@pytest.mark.parametrize("name", ["convolve", "correlate"])
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("sa,sb", SHAPES_1D + SHAPES_2D + SHAPES_3D)
def test_convolve_correlate_nd(name, mode, sa, sb):
  a, b = arr(sa, f32), arr(sb, f32, seed=1)
  check(lambda m: getattr(m.signal, name)(a, b, mode=mode))
  ours = np.asarray(getattr(psig, name)(a, b, mode=mode))
  ref = getattr(scipy_signal, name)(a, b, mode=mode, method="direct")
  np.testing.assert_allclose(ours, ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", ["convolve2d", "correlate2d"])
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("sa,sb", SHAPES_2D)
def test_2d(name, mode, sa, sb):
  a, b = arr(sa, f32), arr(sb, f32, seed=1)
  check(lambda m: getattr(m.signal, name)(a, b, mode=mode))
  if mode == "valid" and not (all(x >= y for x, y in zip(sa, sb)) or
                              all(x <= y for x, y in zip(sa, sb))):
    return
  np.testing.assert_allclose(np.asarray(getattr(psig, name)(a, b, mode=mode)),
                             getattr(scipy_signal, name)(a, b, mode=mode), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", ["convolve", "correlate", "convolve2d", "correlate2d"])
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("sa,sb", [((3, 4), (2, 2)), ((2, 2), (3, 4))])
def test_complex(name, mode, sa, sb):
  a, b = arr(sa, c64), arr(sb, c64, seed=1)
  check(lambda m: getattr(m.signal, name)(a, b, mode=mode))
  np.testing.assert_allclose(np.asarray(getattr(psig, name)(a, b, mode=mode)),
                             getattr(scipy_signal, name)(a, b, mode=mode), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", ["convolve", "correlate", "convolve2d", "correlate2d"])
@pytest.mark.parametrize("da,db", fast([(i32, i32), (b_, b_), (f16, f16), (bf16, f16),
                                        (i8, f32), (u8, u8), (f32, c64)],
                                       [(i32, i32), (bf16, f16), (f32, c64)], True))
def test_dtypes(name, da, db):
  a, b = arr((4, 5), da), arr((2, 3), db, seed=1)
  check(lambda m: getattr(m.signal, name)(a, b))
  check(lambda m: getattr(m.signal, name)(b, a, mode="same"))


def test_weak_and_options():
  check(lambda m: m.signal.convolve(weak(m, [1.0, 2.0], np.float32), weak(m, [1.0, 2.0, 3.0], np.float32)))
  check(lambda m: m.signal.correlate(weak(m, [1, 2], np.int32), weak(m, [1, 2, 3], np.int32)))
  a, b = arr((5,), f32), arr((3,), f32, seed=1)
  for method in ("auto", "direct", "fft"):
    check(lambda m: m.signal.convolve(a, b, method=method), tol=1e-5)
    check(lambda m: m.signal.correlate(a, b, mode="same", method=method), tol=1e-5)
  check(lambda m: m.signal.convolve(a, b, precision="highest"))
  check(lambda m: m.signal.convolve2d(a[None], b[None], precision="highest"))
  check(lambda m: m.signal.convolve(np.float32(2.0), np.float32(3.0)))


@pytest.mark.parametrize("case", [
    lambda m: m.signal.convolve(np.ones(3), np.ones(3), mode="foo"),
    lambda m: m.signal.convolve(np.ones(3), np.ones(3), method="foo"),
    lambda m: m.signal.correlate(np.ones(3), np.ones(3), method="foo"),
    lambda m: m.signal.convolve(np.ones((2, 3)), np.ones(3)),
    lambda m: m.signal.convolve(np.ones(0), np.ones(3)),
    lambda m: m.signal.convolve(np.ones((2, 3)), np.ones((3, 2))),
    lambda m: m.signal.convolve2d(np.ones((2, 3)), np.ones((3, 2))),
    lambda m: m.signal.convolve2d(np.ones(3), np.ones(3)),
    lambda m: m.signal.correlate2d(np.ones((2, 2, 2)), np.ones((1, 1, 1))),
    lambda m: m.signal.convolve2d(np.ones((2, 2)), np.ones((1, 1)), boundary="wrap"),
    lambda m: m.signal.correlate2d(np.ones((2, 2)), np.ones((1, 1)), fillvalue=1),
])
def test_errors(case):
  check(case)


def test_list_inputs_raise_type_error():
  with pytest.raises(TypeError):
    psig.convolve([1.0, 2.0], [1.0])


def test_public_module():
  import pyjax
  import pyjax.scipy
  assert pyjax.scipy.signal.convolve is psig.convolve
  with pytest.raises(AttributeError):
    pyjax.scipy.not_a_module  # noqa: B018
