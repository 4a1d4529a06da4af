"""The compare-with-JAX harness of the differential tests (jnp, lax, scipy, nn).

Every entry point runs the same computation with pyjax and with real JAX on the same NumPy
inputs (skipping when JAX is not installed) and compares the results leaf by leaf --
shape, dtype, weak type and values (tolerance by dtype) -- or, when JAX raises, that pyjax
raises the same exception class and message:

- ``check(fn)``: ``fn(m)`` with ``m`` a ``Mods`` (``m.jnp``, ``m.lax``, ``m.special``, ...);
  ``mods=`` builds another pair of arguments.
- ``check_jnp(fn)``: ``fn(m)`` with ``m`` the numpy module itself (``m.sum``, ...).
- ``check_both(expr, env, jax)``: a source expression evaluated with each library's
  ``jnp`` and ``jit``; ``run`` and ``compare`` are its pieces for tests that drive the
  two libraries themselves.
- ``assert_same_tree(ours, theirs)`` / ``assert_raises_same(f_ours, f_theirs)``: programs
  written once for both libraries (``prog(*libraries(jax))``), exact by default.

Also: dtype shorthands, deterministic input makers (``arr``, ``rand``, ``weak``) and
``fast`` (only some parameters in the default run).
"""
from __future__ import annotations

import importlib
import warnings

import ml_dtypes
import numpy as np
import pytest

import pyjax
import pyjax.numpy as pjnp
from pyjax._src.lax import elementwise as _plax_e

bf16 = np.dtype(ml_dtypes.bfloat16)
f16, f32, f64 = np.dtype("float16"), np.dtype("float32"), np.dtype("float64")
i8, u8, i32, u32 = (np.dtype(t) for t in ("int8", "uint8", "int32", "uint32"))
b_ = np.dtype(bool)
c64, c128 = np.dtype("complex64"), np.dtype("complex128")
ALL = [bf16, f16, f32, i8, u8, i32, b_]
NUMERIC = [bf16, f16, f32, i8, u8, i32]
FLOATS = [bf16, f16, f32]

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


def library_mods(name):
  """The ``Mods`` of ``"pyjax"`` or ``"jax"`` (built once)."""
  if name not in _cache:
    _cache[name] = Mods(name)
  return _cache[name]


# --- comparing results --------------------------------------------------------------------
def tol_for(dtype, f64_tol=1e-10):
  """rtol = atol for results of ``dtype`` (``f64_tol`` for 64-bit floats)."""
  d = np.dtype(dtype)
  if d == bf16:
    return 2e-2
  if d == f16:
    return 2e-3
  if d in (f32, c64):
    return 2e-5
  return f64_tol


def leaves(x):
  """The leaves of nested tuples, lists, named tuples and dicts (by sorted key)."""
  if isinstance(x, (tuple, list)):
    out = []
    for v in x:
      out.extend(leaves(v))
    return out
  if isinstance(x, dict):
    return leaves([x[k] for k in sorted(x)])
  return [x]


def run(fn, *args, quiet=False):
  """``(fn(*args), None)`` or ``(None, the exception)``; ``quiet`` silences warnings."""
  with warnings.catch_warnings():
    if quiet:
      warnings.simplefilter("ignore")
    try:
      return fn(*args), None
    except Exception as e:  # noqa: BLE001 -- compared by the caller
      return None, e


def assert_same_error(ours, ref, message=True, first_line=False):
  """pyjax raised ``ours`` where JAX raised ``ref``: same class (or a subclass, or pyjax's
  class of the same name) and, with ``message``, the same text (its first line only with
  ``first_line``)."""
  assert ours is not None, f"JAX raised {ref!r}, pyjax did not"
  assert isinstance(ours, type(ref)) or type(ours).__name__ == type(ref).__name__, (ours, ref)
  if message:
    o, r = str(ours), str(ref)
    if first_line:
      o, r = o.split("\n")[0], r.split("\n")[0]
    assert o == r, (o, r)


def assert_close(o, r, tol=None, *, rtol=None, atol=None, weak=True, values=True,
                 equal_nan=True, f64_tol=1e-10):
  """One leaf: shape, dtype, weak type (with ``weak``) and values (with ``values``;
  floats within ``rtol``/``atol``, both ``tol`` -- by default ``tol_for`` the dtype --,
  integers and bools exact)."""
  assert np.shape(o) == np.shape(r), (np.shape(o), np.shape(r))
  od, rd = np.asarray(o).dtype, np.asarray(r).dtype
  assert od == rd, (od, rd)
  if weak:
    ow, rw = bool(getattr(o, "weak_type", False)), bool(getattr(r, "weak_type", False))
    assert ow == rw, ("weak_type", ow, rw)
  if not values:
    return
  on, rn = np.asarray(o), np.asarray(r)
  if on.dtype.kind in "fc" or on.dtype == bf16:
    big = np.complex128 if on.dtype.kind == "c" else np.float64
    t = tol_for(rd, f64_tol) if tol is None else tol
    np.testing.assert_allclose(on.astype(big), rn.astype(big),
                               rtol=t if rtol is None else rtol, atol=t if atol is None else atol,
                               equal_nan=equal_nan)
  else:
    np.testing.assert_array_equal(on, rn)


def _compare_leaves(ours, ref, **kw):
  ol, rl = leaves(ours), leaves(ref)
  assert len(ol) == len(rl), (len(ol), len(rl))
  for o, r in zip(ol, rl):
    if not hasattr(r, "dtype"):   # None, Python scalars, strings
      assert o == r or repr(o) == repr(r) or (o is not None and np.asarray(o) == np.asarray(r)), \
          (o, r)
      continue
    assert_close(o, r, **kw)


def compare(rp, rj, rtol=1e-5, atol=1e-6, check_weak=True, check_type=True):
  """Compare pyjax's result ``rp`` with JAX's ``rj`` leaf by leaf (``check_type``: a named
  tuple has the same class name and fields)."""
  if check_type and isinstance(rj, tuple) and hasattr(type(rj), "_fields"):
    assert type(rp).__name__ == type(rj).__name__ and rp._fields == rj._fields
  _compare_leaves(rp, rj, rtol=rtol, atol=atol, weak=check_weak)


def libraries(jax):
  """``(jax, jax.numpy, jax.lax)`` of the library ``jax`` (pyjax or real JAX): the
  arguments of a program written once for both (``prog(*libraries(jax))``)."""
  return jax, jax.numpy, jax.lax


def jaxpr_text(jax, f, *args):
  """``str(jax.make_jaxpr(f)(*args))`` in the library ``jax``."""
  return str(jax.make_jaxpr(f)(*args))


def assert_same_tree(ours, theirs, rtol=0.0, atol=0.0):
  """pyjax's pytree ``ours`` against JAX's ``theirs``: equal values (within ``rtol``/``atol``
  when given, else exactly), dtypes, shapes and weak types, leaf by leaf (each library
  flattens its own tree)."""
  import jax
  lo = pyjax.tree_util.tree_leaves(ours)
  lt = jax.tree_util.tree_leaves(theirs)
  assert len(lo) == len(lt), (ours, theirs)
  for i, (a, b) in enumerate(zip(lo, lt)):
    an, bn = np.asarray(a), np.asarray(b)
    assert an.dtype == bn.dtype, (i, an.dtype, bn.dtype)
    assert an.shape == bn.shape, (i, an.shape, bn.shape)
    if rtol or atol:
      np.testing.assert_allclose(an.astype(np.float64) if an.dtype.kind not in "cb" else an,
                                 bn.astype(np.float64) if bn.dtype.kind not in "cb" else bn,
                                 rtol=rtol, atol=atol)
    else:
      np.testing.assert_array_equal(an, bn)
    assert getattr(a, "weak_type", False) == getattr(b, "weak_type", False)


def assert_raises_same(f_ours, f_theirs, message=True):
  """``f_ours()`` (pyjax) and ``f_theirs()`` (JAX) both raise, exceptions of the same class
  name and, with ``message``, the same text; returns pyjax's exception."""
  with pytest.raises(Exception) as e_ours:
    f_ours()
  with pytest.raises(Exception) as e_theirs:
    f_theirs()
  assert type(e_ours.value).__name__ == type(e_theirs.value).__name__, (e_ours.value,
                                                                        e_theirs.value)
  if message:
    assert str(e_ours.value) == str(e_theirs.value)
  return e_ours.value


# --- entry points -------------------------------------------------------------------------
def check(fn, *, tol=None, message=True, weak=True, values=True, mods=None, f64_tol=1e-10):
  """Compare ``fn(pyjax's Mods)`` with ``fn(JAX's Mods)`` (or with the pair ``mods(jax)``
  returns); returns pyjax's result (None when both raised)."""
  jax = pytest.importorskip("jax")
  pm, jm = (library_mods("pyjax"), library_mods("jax")) if mods is None else mods(jax)
  ours, our_err = run(fn, pm, quiet=True)
  ref, ref_err = run(fn, jm, quiet=True)
  if ref_err is not None:
    assert our_err is not None, f"JAX raised {ref_err!r}, pyjax returned {ours}"
    assert_same_error(our_err, ref_err, message)
    return None
  if our_err is not None:
    raise our_err
  _compare_leaves(ours, ref, tol=tol, weak=weak, values=values, f64_tol=f64_tol)
  return ours


def check_jnp(fn, *, tol=None, message=True, values=True, mods=None):
  """``check`` with ``fn`` given the numpy module itself (pyjax.numpy, then jax.numpy), or
  the pair ``mods(jax)`` returns; float64 within 1e-12."""
  def pair(jax):
    return (pjnp, jax.numpy) if mods is None else mods(jax)
  return check(fn, tol=tol, message=message, values=values, mods=pair, f64_tol=1e-12)


def check_both(expr, env, jax, rtol=1e-5, atol=1e-6, check_weak=True, jit=False):
  """Evaluate ``expr`` (source using ``jnp``, ``jit`` and names from ``env``) with
  pyjax.numpy/pyjax.jit and jax.numpy/jax.jit; compare results or exceptions (class and
  first line of the message)."""
  import jax.numpy as jjnp

  def make(jnp_mod, jit_fn):
    ns = dict(env, jnp=jnp_mod, np=np, jit=jit_fn)
    if jit:
      return lambda: jit_fn(lambda: eval(expr, ns))()
    return lambda: eval(expr, ns)
  rp, ep = run(make(pjnp, pyjax.jit))
  rj, ej = run(make(jjnp, jax.jit))
  if ej is not None or ep is not None:
    assert ej is not None and ep is not None, (expr, ep, ej)
    assert_same_error(ep, ej, first_line=True)
    return None
  compare(rp, rj, rtol=rtol, atol=atol, check_weak=check_weak)
  return rp


# --- inputs -------------------------------------------------------------------------------
def weak(m, value, dtype=None):
  """A weakly typed array of ``value`` in the library ``m`` (pyjax.numpy or jax.numpy)."""
  value = np.asarray(value, dtype)
  d = np.dtype(dtype) if dtype is not None else value.dtype
  if m.__name__.startswith("pyjax"):
    from pyjax._src import dtypes
    return _plax_e._convert_element_type(value, dtypes.canonicalize_dtype(d), True)
  from jax._src.lax import lax as jlax
  from jax._src import dtypes as jdt
  return jlax._convert_element_type(value, jdt.canonicalize_dtype(d), True)


def arr(shape, dtype, seed=0, nan=False, low=None):
  """Deterministic standard-normal floats (a third NaN with ``nan``), small integers in
  [low, 6), bools, complex."""
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


def rand(shape, dtype=np.float32, seed=0, low=-3.0, high=3.0):
  """Deterministic uniform values in [low, high] (integers, bools and complex too)."""
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


def fast(values, keep, unpack=False):
  """Parameters where only ``keep`` run by default; the rest are marked slow (the JAX
  oracle compiles every new signature, which dominates the run time).  ``unpack`` for
  tuples of several parameter names."""
  def slow(v):
    return pytest.param(*v, marks=pytest.mark.slow) if unpack else \
        pytest.param(v, marks=pytest.mark.slow)
  return [v if any(v is k or (type(v) is type(k) and v == k) for k in keep) else slow(v)
          for v in values]


def slow_except(values, keep):
  """Parameters where only the indices in ``keep`` run by default (the rest are marked
  slow); a tuple is several parameter names."""
  def slow(v):
    return pytest.param(*v, marks=pytest.mark.slow) if isinstance(v, tuple) else \
        pytest.param(v, marks=pytest.mark.slow)
  return [v if i in keep else slow(v) for i, v in enumerate(values)]
