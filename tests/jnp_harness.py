"""The jnp comparison harness shared by the table-driven jnp test files: dtype shorthands,
deterministic input makers, ``check`` (pyjax.numpy against jax.numpy on the same inputs)
and ``fast`` (only some parameters in the default run)."""
import warnings

import ml_dtypes
import numpy as np
import pytest

import pyjax.numpy as pjnp
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


def check(fn, *, tol=None, message=True, values=True, mods=None):
  """Compare ``fn(pyjax.numpy)`` with ``fn(jax.numpy)``: values, shapes, dtypes, weak types,
  or the exception (class and, with ``message``, text).  ``mods(jax)`` may build the
  pair of arguments instead (e.g. objects holding a scipy submodule too)."""
  jax = pytest.importorskip("jax")
  import jax.numpy as jjnp
  pm, jm = (pjnp, jjnp) if mods is None else mods(jax)
  ours, our_err = _run(fn, pm)
  ref, ref_err = _run(fn, jm)
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
