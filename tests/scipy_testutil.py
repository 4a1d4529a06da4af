"""Shared harness for the pyjax.scipy / pyjax.nn differential tests.

``check(fn)`` runs ``fn(m)`` twice: with ``m`` holding pyjax's modules and with ``m``
holding JAX's (skipping when JAX is not installed), then compares the results leaf by
leaf -- shape, dtype, weak type and values (relative + absolute tolerance by dtype) -- or,
when JAX raises, that pyjax raises the same exception class (and message)."""
from __future__ import annotations

import importlib
import warnings

import ml_dtypes
import numpy as np
import pytest

bf16 = np.dtype(ml_dtypes.bfloat16)
f16, f32, f64 = np.dtype("float16"), np.dtype("float32"), np.dtype("float64")
c64, c128 = np.dtype("complex64"), np.dtype("complex128")

_SUBMODULES = ("numpy", "lax", "nn", "nn.initializers", "random", "scipy.special",
               "scipy.stats", "scipy.linalg", "scipy.signal", "scipy.fft", "scipy.ndimage",
               "scipy.integrate", "scipy.optimize", "scipy.cluster.vq", "scipy.interpolate")


class Mods:
  """Attribute access to one library's modules: ``m.jnp``, ``m.lax``, ``m.nn``,
  ``m.special``, ``m.stats``, ``m.linalg``, ``m.signal``, ``m.fft``, ``m.ndimage``,
  ``m.integrate``, ``m.optimize``, ``m.vq``, ``m.interpolate``, ``m.random``, ``m.init``
  and the top-level ``m.top`` (``grad``, ``jit``, ...)."""

  def __init__(self, root):
    self.name = root
    self.top = importlib.import_module(root)
    mods = {s: importlib.import_module(f"{root}.{s}") for s in _SUBMODULES}
    self.jnp, self.lax, self.nn = mods["numpy"], mods["lax"], mods["nn"]
    self.init, self.random = mods["nn.initializers"], mods["random"]
    self.special, self.stats = mods["scipy.special"], mods["scipy.stats"]
    self.linalg, self.signal = mods["scipy.linalg"], mods["scipy.signal"]
    self.fft, self.ndimage = mods["scipy.fft"], mods["scipy.ndimage"]
    self.integrate, self.optimize = mods["scipy.integrate"], mods["scipy.optimize"]
    self.vq, self.interpolate = mods["scipy.cluster.vq"], mods["scipy.interpolate"]

  @property
  def is_pyjax(self):
    return self.name == "pyjax"


_cache = {}


def mods(name):
  if name not in _cache:
    _cache[name] = Mods(name)
  return _cache[name]


def tol_for(dtype):
  d = np.dtype(dtype)
  if d == bf16:
    return 2e-2
  if d == f16:
    return 2e-3
  if d in (f32, c64):
    return 2e-5
  return 1e-10


def _run(fn, m):
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    try:
      return fn(m), None
    except Exception as e:  # noqa: BLE001
      return None, e


def leaves(x):
  if isinstance(x, (tuple, list)):
    out = []
    for v in x:
      out.extend(leaves(v))
    return out
  if hasattr(x, "_fields"):
    return leaves(tuple(x))
  if isinstance(x, dict):
    return leaves([x[k] for k in sorted(x)])
  return [x]


def assert_close(o, r, tol, weak=True, equal_nan=True):
  o_shape = np.shape(o)
  assert o_shape == np.shape(r), (o_shape, np.shape(r))
  od = getattr(o, "dtype", np.asarray(o).dtype)
  rd = getattr(r, "dtype", np.asarray(r).dtype)
  assert np.dtype(od) == np.dtype(rd), (od, rd)
  if weak and hasattr(r, "weak_type"):
    assert getattr(o, "weak_type", None) == r.weak_type, ("weak_type", o.weak_type,
                                                           r.weak_type)
  on, rn = np.asarray(o), np.asarray(r)
  if on.dtype.kind in "fc" or on.dtype == bf16:
    big = np.complex128 if on.dtype.kind == "c" else np.float64
    np.testing.assert_allclose(on.astype(big), rn.astype(big), rtol=tol, atol=tol,
                               equal_nan=equal_nan)
  else:
    np.testing.assert_array_equal(on, rn)


def check(fn, *, tol=None, message=True, weak=True, values=True):
  """Compare ``fn(pyjax modules)`` with ``fn(jax modules)``; returns pyjax's result."""
  pytest.importorskip("jax")
  ours, our_err = _run(fn, mods("pyjax"))
  ref, ref_err = _run(fn, mods("jax"))
  if ref_err is not None:
    assert our_err is not None, f"JAX raised {ref_err!r}, pyjax returned {ours}"
    assert isinstance(our_err, type(ref_err)) or type(ref_err) in type(our_err).__mro__, \
        (our_err, ref_err)
    if message:
      assert str(our_err) == str(ref_err), (str(our_err), str(ref_err))
    return None
  if our_err is not None:
    raise our_err
  ol, rl = leaves(ours), leaves(ref)
  assert len(ol) == len(rl), (len(ol), len(rl))
  for o, r in zip(ol, rl):
    if r is None or isinstance(r, (bool, int, float)) and not hasattr(r, "dtype"):
      assert o == r or (o is not None and np.asarray(o) == np.asarray(r)), (o, r)
      continue
    if values:
      assert_close(o, r, tol_for(np.asarray(r).dtype) if tol is None else tol, weak=weak)
    else:
      assert np.shape(o) == np.shape(r) and np.asarray(o).dtype == np.asarray(r).dtype
  return ours


def rand(shape, dtype=np.float32, seed=0, low=-3.0, high=3.0):
  rng = np.random.RandomState(seed)
  dtype = np.dtype(dtype)
  if dtype == np.bool_:
    return rng.rand(*shape) > 0.5
  if dtype.kind in "iu":
    return rng.randint(int(max(low, 0 if dtype.kind == "u" else low)), int(high) + 1,
                       size=shape).astype(dtype)
  x = rng.uniform(low, high, size=shape)
  if dtype.kind == "c":
    x = x + 1j * rng.uniform(low, high, size=shape)
  return np.asarray(x).astype(dtype)
