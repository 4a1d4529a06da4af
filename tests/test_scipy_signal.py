"""jax.scipy.signal: convolve, correlate, convolve2d, correlate2d.

Each case runs the same function with pyjax.scipy.signal and with jax.scipy.signal on the
same NumPy inputs and compares values, dtypes, shapes, weak types and exceptions; values
are also compared with scipy.signal (no JAX needed)."""
import warnings

import ml_dtypes
import numpy as np
import pytest

import pyjax.numpy as pjnp
import pyjax.scipy.signal as psig
from pyjax._src.lax import elementwise as _plax_e

bf16 = np.dtype(ml_dtypes.bfloat16)
f16, f32, i8, u8, i32, u32 = (np.dtype(t) for t in ("float16", "float32", "int8", "uint8",
                                                     "int32", "uint32"))
b_ = np.dtype(bool)
c64 = np.dtype(np.complex64)
ALL = [bf16, f16, f32, i8, u8, i32, b_]
NUMERIC = [bf16, f16, f32, i8, u8, i32]
FLOATS = [bf16, f16, f32]


# --- the comparison harness -------------------------------------------------------------
def _is_pyjax(m):
  return m.__name__.startswith("pyjax")


def weak(m, value, dtype=None):
  """A weakly typed array of ``value`` in the library ``m`` (pyjax.numpy or jax.numpy)."""
  value = np.asarray(value, dtype)
  d = np.dtype(dtype) if dtype is not None else value.dtype
  if _is_pyjax(m):
    from pyjax._src import dtypes
    return _plax_e._convert_element_type(value, dtypes.canonicalize_dtype(d), True)
  from jax._src.lax import lax as jlax
  from jax._src import dtypes as jdt
  return jlax._convert_element_type(value, jdt.canonicalize_dtype(d), True)


def arr(shape, dtype, seed=0, nan=False, low=None):
  rng = np.random.RandomState(seed)
  dtype = np.dtype(dtype)
  if dtype == b_:
    return np.asarray(rng.rand(*shape) > 0.4)
  if dtype.kind in "iu":
    lo = (0 if dtype.kind == "u" else -5) if low is None else low
    return np.asarray(rng.randint(lo, 6, size=shape)).astype(dtype)
  if dtype.kind == "c":
    return np.asarray(rng.randn(*shape) + 1j * rng.randn(*shape)).astype(dtype)
  x = np.asarray(rng.randn(*shape)).astype(np.float32)
  if nan and x.size:
    x.flat[rng.randint(0, x.size, size=max(1, x.size // 3))] = np.nan
  return x.astype(dtype)


def _tol(d):
  d = np.dtype(d)
  if d == bf16:
    return 2e-2
  if d == f16:
    return 2e-3
  if d in (np.dtype(np.float32), np.dtype(np.complex64)):
    return 2e-5
  return 1e-12


def _leaves(x):
  return list(x) if isinstance(x, (tuple, list)) else [x]


def _run(fn, m):
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    try:
      return fn(m), None
    except Exception as e:  # noqa: BLE001
      return None, e


class _Mods:
  def __init__(self, np_mod, signal):
    self.np, self.signal, self.__name__ = np_mod, signal, np_mod.__name__


def check(fn, *, tol=None, message=True, values=True):
  """Compare fn(m) for m holding pyjax.numpy/pyjax.scipy.signal with JAX's."""
  jax = pytest.importorskip("jax")
  import jax.numpy as jjnp
  import jax.scipy.signal as jsig
  ours, our_err = _run(fn, _Mods(pjnp, psig))
  ref, ref_err = _run(fn, _Mods(jjnp, jsig))
  if ref_err is not None:
    assert our_err is not None, f"JAX raised {ref_err!r}, pyjax returned {ours}"
    assert isinstance(our_err, type(ref_err)) or type(ref_err) in type(our_err).__mro__, \
        (our_err, ref_err)
    if message:
      assert str(our_err) == str(ref_err), (str(our_err), str(ref_err))
    return None
  if our_err is not None:
    raise our_err
  ol, rl = _leaves(ours), _leaves(ref)
  assert len(ol) == len(rl)
  for o, r in zip(ol, rl):
    assert o.shape == r.shape, (o.shape, r.shape)
    assert o.dtype == r.dtype, (o.dtype, r.dtype)
    assert o.weak_type == r.weak_type, ("weak_type", o.weak_type, r.weak_type)
    if values:
      on, rn = np.asarray(o), np.asarray(r)
      t = _tol(r.dtype) if tol is None else tol
      if on.dtype.kind in "fc" or on.dtype == bf16:
        np.testing.assert_allclose(on.astype(np.complex128 if on.dtype.kind == "c" else np.float64),
                                   rn.astype(np.complex128 if rn.dtype.kind == "c" else np.float64),
                                   rtol=t, atol=t, equal_nan=True)
      else:
        np.testing.assert_array_equal(on, rn)
  del jax
  return ours


def fast(values, keep, unpack=False):
  """Parameters where only ``keep`` run by default; the rest are marked slow (the JAX
  oracle compiles every new signature, which dominates the run time).  ``unpack`` for
  tuples of several parameter names."""
  def slow(v):
    return pytest.param(*v, marks=pytest.mark.slow) if unpack else \
        pytest.param(v, marks=pytest.mark.slow)
  return [v if any(v is k or (type(v) is type(k) and v == k) for k in keep) else slow(v)
          for v in values]


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
