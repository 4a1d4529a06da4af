"""Shared machinery for the property-based differential tests
(``tests/numpy/test_numpy_properties_*.py``): hypothesis strategies for dtypes, shapes (with 0-
and 1-sized dimensions), broadcastable shape pairs, axes (negative ones included) and array
values (NaN/inf included), a context manager that switches x64 in pyjax and JAX together,
and ``check``: run one function with ``pyjax.numpy`` and ``jax.numpy`` on the same inputs,
eagerly and under jit, and compare tree structure, shapes, dtypes, weak types and values
(NaN/inf per part) -- or, when JAX raises, the exception (``jax_compare``'s comparison).
``draw_array`` draws a dtype, a shape and an array in one go.

Each property test is written once with ``@prop(n=..., slow=..., data=st.data())``; the
decorator makes two pytest cases of it, a quick one (``n`` examples, in the default run)
and a thorough one (``slow`` examples, marked ``slow``).  Examples are derandomized, so
every run tests the same inputs.  Set ``PYJAX_HYPOTHESIS_SHRINK=1`` to let hypothesis
shrink a failing example (off by default: it costs CPU and the xfail-marked properties
would pay it on every run).  ``PYJAX_HYPOTHESIS_THOROUGH=k`` caps the thorough cases at k
examples (the first k of the same derandomized sequence): CI's compiled pass uses it,
where every example compiles new programs to C."""
import contextlib
import inspect
import math
import os
import warnings

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import pyjax
import pyjax.numpy as pjnp
from jax_compare import assert_same_error

bf16 = np.dtype(ml_dtypes.bfloat16)

BOOL = ["bool"]
INTS = ["int8", "int16", "int32", "int64"]
UINTS = ["uint8", "uint16", "uint32", "uint64"]
FLOATS = ["float16", "bfloat16", "float32", "float64"]
COMPLEX = ["complex64", "complex128"]
ALL = BOOL + INTS + UINTS + FLOATS + COMPLEX
NUMERIC = INTS + UINTS + FLOATS + COMPLEX
INEXACT = FLOATS + COMPLEX
REAL = BOOL + INTS + UINTS + FLOATS
WIDE = {"int64", "uint64", "float64", "complex128"}


def np_dtype(name):
  return bf16 if name == "bfloat16" else np.dtype(name)


# --- the decorator -------------------------------------------------------------------------
_SHRINK = os.environ.get("PYJAX_HYPOTHESIS_SHRINK") == "1"
_PHASES = (Phase.explicit, Phase.reuse, Phase.generate) + ((Phase.shrink,) if _SHRINK else ())
_THOROUGH_CAP = int(os.environ.get("PYJAX_HYPOTHESIS_THOROUGH") or 0)


def prop(n=20, slow=200, **strategies):
  """Turn ``fn(**pytest_args, **drawn)`` into a pytest test with a quick case (``n``
  examples) and a ``slow`` case (``slow`` examples); keyword strategies are drawn by
  hypothesis, other parameters stay pytest parameters/fixtures."""
  def deco(fn):
    sig = inspect.signature(fn)
    outer = [p for name, p in sig.parameters.items() if name not in strategies]

    def test(_budget, **kw):
      @settings(max_examples=_budget, deadline=None, derandomize=True, database=None,
                phases=_PHASES, suppress_health_check=list(HealthCheck))
      @given(**strategies)
      def inner(**drawn):
        fn(**kw, **drawn)
      inner()

    test.__signature__ = sig.replace(parameters=[
        inspect.Parameter("_budget", inspect.Parameter.POSITIONAL_OR_KEYWORD)] + outer)
    test.__name__ = fn.__name__
    test.__qualname__ = fn.__qualname__
    test.__doc__ = fn.__doc__
    test.__module__ = fn.__module__
    test.pytestmark = list(getattr(fn, "pytestmark", []))
    return pytest.mark.parametrize("_budget", [
        pytest.param(n, id="quick"),
        pytest.param(min(slow, _THOROUGH_CAP or slow), id="thorough",
                     marks=pytest.mark.slow)])(test)
  return deco


# --- x64 -----------------------------------------------------------------------------------
@contextlib.contextmanager
def x64_mode(enabled):
  """Set ``jax_enable_x64`` in pyjax and in JAX (when installed) for the block."""
  prev = pyjax.config.jax_enable_x64
  pyjax.config.update("jax_enable_x64", enabled)
  try:
    import jax as real_jax
  except ImportError:
    real_jax = None
  jprev = real_jax.config.jax_enable_x64 if real_jax is not None else None
  if real_jax is not None:
    real_jax.config.update("jax_enable_x64", enabled)
  try:
    yield
  finally:
    pyjax.config.update("jax_enable_x64", prev)
    if real_jax is not None:
      real_jax.config.update("jax_enable_x64", jprev)


def canonical(name):
  """The dtype name an input of dtype ``name`` has inside pyjax/JAX with the current x64."""
  if pyjax.config.jax_enable_x64:
    return name
  return {"int64": "int32", "uint64": "uint32", "float64": "float32",
          "complex128": "complex64"}.get(name, name)


# --- strategies ----------------------------------------------------------------------------
def shapes(min_dims=0, max_dims=3, min_side=0, max_side=4):
  """Shapes that often contain 0- and 1-sized dimensions."""
  side = st.one_of(st.sampled_from([0, 1]), st.integers(min_side, max_side)).filter(
      lambda s: min_side <= s <= max_side)
  return st.integers(min_dims, max_dims).flatmap(
      lambda nd: st.tuples(*[side] * nd))


def nonempty_shapes(min_dims=0, max_dims=3, max_side=4):
  return shapes(min_dims, max_dims, 1, max_side)


@st.composite
def broadcastable_shapes(draw, n=2, min_dims=0, max_dims=3, max_side=4):
  """``n`` shapes that broadcast together (some dimensions 1, some missing, some 0)."""
  out_shape = draw(shapes(min_dims, max_dims, 0, max_side))
  result = []
  for _ in range(n):
    nd = draw(st.integers(0, len(out_shape)))
    s = out_shape[len(out_shape) - nd:]
    s = tuple(1 if draw(st.integers(0, 3)) == 0 else d for d in s)
    result.append(s)
  return result


def elements(name, min_value=None, max_value=None, allow_nan=True, allow_inf=True):
  """A strategy for scalar values representable in dtype ``name``."""
  if name == "bool":
    return st.booleans()
  dt = np_dtype(name)
  if dt.kind in "iu":
    info = np.iinfo(dt)
    lo = info.min if min_value is None else max(info.min, int(min_value))
    hi = info.max if max_value is None else min(info.max, int(max_value))
    # bias towards the interesting values around zero and at the ends
    return st.one_of(st.integers(max(lo, -5), min(hi, 5)), st.integers(lo, hi),
                     st.sampled_from([lo, hi]))
  width = {"float16": 16, "bfloat16": 32, "float32": 32, "float64": 64,
           "complex64": 32, "complex128": 64}[name]
  fmax = float(np.finfo(np.float16).max) if name == "float16" else None
  lo = min_value if min_value is not None else (-fmax if fmax else None)
  hi = max_value if max_value is not None else fmax
  ftype = {16: np.float16, 32: np.float32, 64: np.float64}[width]
  if lo is not None:      # bounds representable at this width, inside the requested range
    lo_w = ftype(lo)
    lo = float(lo_w if lo_w >= lo else np.nextafter(lo_w, ftype(np.inf)))
  if hi is not None:
    hi_w = ftype(hi)
    hi = float(hi_w if hi_w <= hi else np.nextafter(hi_w, ftype(-np.inf)))
  finite = st.floats(lo, hi, width=width, allow_nan=False, allow_infinity=False,
                     allow_subnormal=False)
  zero_ok = (lo is None or lo <= 0) and (hi is None or hi >= 0)
  specials = ([-0.0] if zero_ok else [lo if lo is not None else hi]) + ([math.nan] if allow_nan else []) + (
      [math.inf, -math.inf] if allow_inf else [])
  # about one element in four is special (NaN, +-inf, -0.0)
  real = st.one_of(finite, finite, finite, st.sampled_from(specials))
  if dt.kind == "c":
    return st.builds(complex, real, real)
  return real


def arrays(name, shape, **kw):
  """A NumPy array of dtype ``name`` and ``shape`` (bfloat16 drawn as float32 and cast)."""
  dt = np_dtype(name)
  draw_dt = np.float32 if dt == bf16 else dt
  return hnp.arrays(draw_dt, shape, elements=elements(name, **kw)).map(
      lambda a: _no_f32_subnormals(a.astype(dt)))


def draw_array(data, dtypes=ALL, shape=None, label="x", max_dims=3, **kw):
  """Draw (with ``data``, a ``st.data()``) a dtype from ``dtypes``, a shape of up to
  ``max_dims`` dimensions unless ``shape`` is given, then an array of them (``kw``:
  ``elements``' bounds and NaN/inf switches); ``label`` names the draws in reports."""
  name = data.draw(st.sampled_from(dtypes), label=label + ".dtype")
  if shape is None:
    shape = data.draw(shapes(max_dims=max_dims), label=label + ".shape")
  return data.draw(arrays(name, shape, **kw), label=label)


def _no_f32_subnormals(a):
  """Zero the float64/complex128 values that become float32 subnormals under x32: XLA:CPU
  flushes subnormals to zero and NumPy (so pyjax) does not, a platform difference that is
  not what these tests are about."""
  if a.dtype in (np.float64, np.complex128):
    tiny = np.finfo(np.float32).tiny
    if a.dtype == np.complex128:
      out = np.array(a, copy=True)
      re, im = out.real.copy(), out.imag.copy()
      re[np.abs(re) < tiny] = 0
      im[np.abs(im) < tiny] = 0
      out.real, out.imag = re, im
      return out
    a = a.copy()
    a[np.abs(a) < tiny] = 0
  return a


def axis_for(ndim, allow_none=False):
  """A valid axis for ``ndim`` dimensions, negative ones included."""
  if ndim == 0:
    return st.none() if allow_none else st.nothing()
  s = st.integers(-ndim, ndim - 1)
  return st.one_of(st.none(), s) if allow_none else s


def axes_for(ndim):
  """None, one axis, or a tuple of distinct axes (possibly negative, possibly empty)."""
  one = st.integers(-ndim, ndim - 1) if ndim else st.nothing()
  tup = st.permutations(list(range(ndim))).flatmap(
      lambda p: st.integers(0, ndim).map(lambda k: p[:k])).flatmap(
      lambda ax: st.tuples(*[st.sampled_from([a, a - ndim]) for a in ax]))
  return st.one_of(st.none(), one, tup)


def python_scalars(kinds="bifc"):
  """Python scalars (weakly typed in JAX)."""
  out = []
  if "b" in kinds:
    out.append(st.booleans())
  if "i" in kinds:
    out.append(st.integers(-100, 100))
  if "I" in kinds:   # ints that overflow small (or all) integer dtypes
    out.append(st.sampled_from([127, 128, 255, 256, -129, 2**31 - 1, 2**31, 2**32, -2**31 - 1,
                                2**63 - 1, 2**63, -2**63]))
  if "f" in kinds:
    # (no subnormals: XLA:CPU flushes them to zero, NumPy -- and so pyjax -- does not)
    out.append(st.one_of(st.floats(-100, 100, width=32, allow_subnormal=False),
                         st.sampled_from([math.nan, math.inf, -math.inf, -0.0])))
  if "c" in kinds:
    part = st.floats(-10, 10, width=32, allow_subnormal=False)
    out.append(st.builds(complex, part, part))
  return st.one_of(*out)


# --- comparison ----------------------------------------------------------------------------
def _tol(dtype, rtol):
  if rtol is not None:
    return rtol
  name = np.dtype(dtype).name
  return {"bfloat16": 2e-2, "float16": 2e-3, "float32": 2e-5, "complex64": 2e-5,
          "float64": 1e-11, "complex128": 1e-11}.get(name, 0)


def _as_cmp(a):
  a = np.asarray(a)
  if a.dtype == bf16 or a.dtype == np.float16:
    return a.astype(np.float32)
  return a


def _is_array(x):
  return hasattr(x, "dtype") and hasattr(x, "shape") and not isinstance(x, (np.ndarray, np.generic))


def assert_same(p, j, rtol=None, atol=None, what="", check_weak=True, values=True):
  """Assert pyjax result ``p`` matches JAX result ``j``: tree structure, shapes, dtypes,
  weak types and values (NaN where NaN, inf where inf)."""
  if isinstance(j, (list, tuple)):
    assert isinstance(p, (list, tuple)), (what, type(p), type(j))
    assert len(p) == len(j), (what, len(p), len(j))
    if hasattr(type(j), "_fields"):
      assert getattr(type(p), "_fields", None) == type(j)._fields, (what, type(p), type(j))
    for k, (a, b) in enumerate(zip(p, j)):
      assert_same(a, b, rtol, atol, f"{what}[{k}]", check_weak, values)
    return
  if _is_array(j):
    assert isinstance(p, pyjax.Array), (what, type(p))
    assert tuple(p.shape) == tuple(j.shape), (what, "shape", p.shape, j.shape)
    assert np.dtype(p.dtype) == np.dtype(j.dtype), (what, "dtype", p.dtype, j.dtype)
    if check_weak:
      assert bool(p.weak_type) == bool(j.weak_type), (what, "weak_type", p.weak_type, j.weak_type)
    if not values:
      return
    a, b = _as_cmp(p), _as_cmp(j)
    if a.dtype.kind == "c":   # real and imaginary parts separately (inf/NaN per part)
      a = np.stack([a.real, a.imag], -1)
      b = np.stack([b.real, b.imag], -1)
    if a.dtype.kind in "fc":
      r = _tol(p.dtype, rtol)
      at = atol if atol is not None else r
      np.testing.assert_allclose(a, b, rtol=r, atol=at, equal_nan=True, err_msg=what)
    else:
      np.testing.assert_array_equal(a, b, err_msg=what)
    return
  if isinstance(j, np.dtype) or isinstance(j, type):
    assert p == j, (what, p, j)
    return
  if isinstance(j, (float, complex)) and not isinstance(j, bool):
    assert type(p) is type(j), (what, type(p), type(j))
    np.testing.assert_allclose(p, j, rtol=_tol(np.float64, rtol), equal_nan=True, err_msg=what)
    return
  assert type(p) is type(j) or (isinstance(p, np.generic) and isinstance(j, np.generic)), (
      what, type(p), type(j))
  assert p == j, (what, p, j)


def _call(f):
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    try:
      return f(), None
    except Exception as e:  # noqa: BLE001 -- compared by the caller
      return None, e


def _split_args(args):
  """Positions of the NumPy-array arguments (traced under jit; the rest is closed over)."""
  return [k for k, a in enumerate(args) if isinstance(a, np.ndarray)]


def _jitted(jit_fn, jnp, fn, args, kwargs):
  pos = _split_args(args)

  def body(*arrs):
    full = list(args)
    for k, a in zip(pos, arrs):
      full[k] = a
    return fn(jnp, *full, **kwargs)
  return lambda: jit_fn(body)(*[args[k] for k in pos])


def _concretization_errors():
  import jax
  e = jax.errors
  return tuple(c for c in (getattr(e, n, None) for n in (
      "ConcretizationTypeError", "TracerIntegerConversionError", "TracerBoolConversionError",
      "TracerArrayConversionError", "NonConcreteBooleanIndexError")) if c is not None)


def check(fn, *args, rtol=None, atol=None, check_weak=True, values=True, message=False,
          jit=None, **kwargs):
  """Call ``fn(jnp, *args, **kwargs)`` with pyjax.numpy and jax.numpy on the same inputs
  and assert that both raise (the same exception class; the same first message line when
  ``message``) or both return matching results (shapes, dtypes, weak types, values).

  The oracle runs under ``jax.jit`` (one XLA compilation per call instead of one per op)
  with the NumPy-array arguments traced and everything else closed over; if that needs
  concrete values, it runs eagerly.  pyjax runs eagerly and, unless the function is
  value-dependent or ``jit=False``, under ``pyjax.jit`` too.  ``jit=None`` means: jit when
  some argument is a NumPy array (a function of Python values only may return non-arrays,
  which jit would turn into arrays).  Returns pyjax's eager result (None when both raised)."""
  import jax
  import jax.numpy as jjnp
  if jit is None:
    jit = bool(_split_args(args))
  value_dependent = not jit
  if jit:
    rj, ej = _call(_jitted(jax.jit, jjnp, fn, args, kwargs))
  if not jit or (ej is not None and isinstance(ej, _concretization_errors())):
    value_dependent = True
    rj, ej = _call(lambda: fn(jjnp, *args, **kwargs))
  eager_oracle = []

  def compare(rp, mode):
    try:
      assert_same(rp, rj, rtol, atol, f"{getattr(fn, '__name__', '')} ({mode})", check_weak,
                  values)
    except AssertionError:
      if value_dependent:
        raise
      # XLA's compile-time simplifications sometimes make JAX's jitted result differ from
      # its eager one (float->uint conversions, 0/0 folding): match either
      if not eager_oracle:
        eager_oracle.append(_call(lambda: fn(jjnp, *args, **kwargs)))
      rje, eje = eager_oracle[0]
      if eje is not None:
        raise
      assert_same(rp, rje, rtol, atol, f"{getattr(fn, '__name__', '')} ({mode}, vs eager JAX)",
                  check_weak, values)

  runs = [("eager", lambda: fn(pjnp, *args, **kwargs))]
  if jit and not value_dependent:
    runs.append(("jit", _jitted(pyjax.jit, pjnp, fn, args, kwargs)))
  first = None
  for mode, f in runs:
    rp, ep = _call(f)
    if ej is not None:
      assert_same_error(ep, ej, message, first_line=True)
      continue
    if ep is not None:
      raise AssertionError(
          f"pyjax ({mode}) raised {type(ep).__name__}: {ep}; JAX returned {rj!r}") from ep
    compare(rp, mode)
    if first is None:
      first = rp
  return first


def check_grad(fn, *args, argnums=0, rtol=None, atol=None):
  """Compare ``pyjax.grad(lambda *a: fn(pyjax.numpy, *a))`` (eager and jitted) with the same
  under JAX (jitted).  ``args`` are the differentiable arrays; close over everything else."""
  import jax
  import jax.numpy as jjnp
  gj, ej = _call(lambda: jax.jit(jax.grad(lambda *a: fn(jjnp, *a), argnums=argnums))(*args))
  gfun = pyjax.grad(lambda *a: fn(pjnp, *a), argnums=argnums)
  for mode, f in (("eager", lambda: gfun(*args)), ("jit", lambda: pyjax.jit(gfun)(*args))):
    gp, ep = _call(f)
    if ej is not None:
      assert_same_error(ep, ej, False)
      continue
    if ep is not None:
      raise AssertionError(f"pyjax grad ({mode}) raised {type(ep).__name__}: {ep}") from ep
    assert_same(gp, gj, rtol, atol, f"grad ({mode})")
