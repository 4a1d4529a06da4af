"""Gradient checks against finite differences (``jax.test_util``).

Each check looks in one pseudo-random direction (NumPy ``RandomState(0)``, as JAX), so it
stays cheap for large inputs and outputs: ``check_jvp`` compares a JVP with the central
difference ``(f(x + eps t) - f(x - eps t)) / (2 eps)``; ``check_vjp`` compares
``<t, vjp(c)>`` with ``<jvp(t), c>``.  Tolerances default per dtype to JAX's gradient
tolerances (float32: 2e-3; float64: 1e-5; ...), scaled by the number of elements.
"""
from __future__ import annotations

import functools
import operator

import ml_dtypes
import numpy as np

from pyjax._src import dtypes as _dtypes
from pyjax._src.config import config
from pyjax._src.tree_util import tree_map, tree_reduce

__all__ = ["check_grads", "check_jvp", "check_vjp"]

EPS = 1e-4


def _ml(name):
  t = getattr(ml_dtypes, name, None)
  return None if t is None else np.dtype(t)


_LOW_PRECISION_TOL = {"float4_e2m1fn": 1e0, "float8_e3m4": 1e-1, "float8_e4m3": 1e-1,
                      "float8_e8m0fnu": 1e0, "float8_e4m3b11fnuz": 1e-1,
                      "float8_e4m3fn": 1e-1, "float8_e4m3fnuz": 1e-1, "float8_e5m2": 1e-1,
                      "float8_e5m2fnuz": 1e-1}
_CUSTOM_FLOATS = {d for d in map(_ml, list(_LOW_PRECISION_TOL) + ["bfloat16"]) if d is not None}
_INTN = {d for d in map(_ml, ["int2", "int4", "uint2", "uint4", "int1", "uint1"])
         if d is not None}

# Exactness expected of values (a primal against f's own output).
_default_tolerance = {np.dtype(_dtypes.float0): 0, np.dtype(np.bool_): 0}
for _t in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64):
  _default_tolerance[np.dtype(_t)] = 0
for _d in _INTN:
  _default_tolerance[_d] = 0
for _n, _v in _LOW_PRECISION_TOL.items():
  if _ml(_n) is not None:
    _default_tolerance[_ml(_n)] = _v
_default_tolerance.update({
    np.dtype(ml_dtypes.bfloat16): 1e-2, np.dtype(np.float16): 1e-3,
    np.dtype(np.float32): 1e-6, np.dtype(np.float64): 1e-15,
    np.dtype(np.complex64): 1e-6, np.dtype(np.complex128): 1e-15})

# Tolerances of derivatives against finite differences.
default_gradient_tolerance = {_ml(n): v for n, v in _LOW_PRECISION_TOL.items()
                              if _ml(n) is not None}
default_gradient_tolerance.update({
    np.dtype(ml_dtypes.bfloat16): 1e-1, np.dtype(np.float16): 1e-2,
    np.dtype(np.float32): 2e-3, np.dtype(np.float64): 1e-5,
    np.dtype(np.complex64): 1e-3, np.dtype(np.complex128): 1e-5})


def default_tolerance():
  return _default_tolerance


def _is_python_scalar(x) -> bool:
  return isinstance(x, (bool, int, float, complex)) and not isinstance(x, np.generic)


def _dtype(x) -> np.dtype:
  """The NumPy dtype of a leaf; Python scalars get NumPy's 64-bit types."""
  d = getattr(x, "dtype", None)
  if d is not None:
    return np.dtype(d)
  return np.asarray(x).dtype


def _tol(dtype, tol) -> float:
  if tol is None:
    tol = {}
  if not isinstance(tol, dict):
    return tol
  tol = {np.dtype(k): v for k, v in tol.items()}
  d = _dtypes.canonicalize_dtype(np.dtype(dtype))
  return tol.get(d, _default_tolerance[d])


def _allclose(a, b, atol, rtol, err_msg):
  if a.dtype == b.dtype == np.dtype(_dtypes.float0):
    np.testing.assert_array_equal(a, b, err_msg=err_msg)
    return

  def widen(x):
    if x.dtype in _CUSTOM_FLOATS:
      return x.astype(np.float32)
    if x.dtype in _INTN:
      return x.astype(np.int8 if np.iinfo(x.dtype).min < 0 else np.uint8)
    return x

  kw = {}
  if atol:
    kw["atol"] = atol
  if rtol:
    kw["rtol"] = rtol
  with np.errstate(invalid="ignore"):
    np.testing.assert_allclose(widen(a), widen(b), err_msg=err_msg, **kw)


def _close_leaf(a, b, atol, rtol, err_msg):
  a, b = np.asarray(a), np.asarray(b)
  assert a.shape == b.shape, f"{err_msg}: shapes differ, {a.shape} vs {b.shape}"
  at = max(_tol(a.dtype, atol), _tol(b.dtype, atol))
  rt = max(_tol(a.dtype, rtol), _tol(b.dtype, rtol))
  # Tolerances grow with the number of elements (errors add up in the projections).
  _allclose(a, b, at * a.size, rt * b.size, err_msg)


def check_close(xs, ys, atol=None, rtol=None, err_msg=""):
  """Assert two pytrees are leafwise close under the per-dtype tolerances."""
  tree_map(functools.partial(_close_leaf, atol=atol, rtol=rtol, err_msg=err_msg), xs, ys)


def _check_dtypes_match(xs, ys):
  def same(x, y):
    dx, dy = _dtype(x), _dtype(y)
    if not config.jax_enable_x64:
      dx, dy = _dtypes.canonicalize_dtype(dx), _dtypes.canonicalize_dtype(dy)
    assert dx == dy, f"dtypes differ: {dx} vs {dy}"
  tree_map(same, xs, ys)


def _inner_prod(xs, ys):
  def dot(x, y):
    x, y = np.asarray(x), np.asarray(y)
    return np.real(np.dot(np.conj(x).reshape(-1), y.reshape(-1)))
  return tree_reduce(np.add, tree_map(dot, xs, ys))


def _keep_type(op):
  """Apply a NumPy op leafwise in the first operand's dtype; Python scalars stay scalars."""
  def leaf(*xs):
    out = np.array(op(*xs), dtype=_dtype(xs[0]))
    return out.item() if all(_is_python_scalar(x) for x in xs) else out
  return functools.partial(tree_map, leaf)


_add = _keep_type(operator.add)
_sub = _keep_type(operator.sub)
_conj = _keep_type(np.conj)


def _safe_sub(xs, ys):
  """Leafwise ``x - y`` in ``x``'s dtype, with ``inf - inf == 0``."""
  def leaf(x, y):
    d = _dtype(x)
    with np.errstate(invalid="ignore"):
      return np.where(np.equal(x, y), np.array(0, d), np.subtract(x, y, dtype=d))
  return tree_map(leaf, xs, ys)


def _scale(xs, a):
  def leaf(x):
    d = _dtype(x)
    out = np.multiply(x, np.array(a, dtype=d), dtype=d)
    return out.item() if _is_python_scalar(x) else out
  return tree_map(leaf, xs)


def _rand_like(rng, x):
  shape, d = np.shape(x), _dtype(x)
  out = np.asarray(rng.randn(*shape), dtype=d)
  if np.issubdtype(d, np.complexfloating):
    out = out + d.type(1j) * np.asarray(rng.randn(*shape), dtype=d)
  return out.item() if _is_python_scalar(x) else out


def numerical_jvp(f, primals, tangents, eps=EPS):
  """Central finite difference of ``f`` at ``primals`` in direction ``tangents``."""
  step = _scale(tangents, eps)
  hi = f(*_add(primals, step))
  lo = f(*_sub(primals, step))
  return _scale(_safe_sub(hi, lo), 0.5 / eps)


def _merge_tolerance(tol, default):
  if tol is None:
    return default
  if not isinstance(tol, dict):
    return tol
  out = dict(default)
  out.update({np.dtype(k): v for k, v in tol.items()})
  return out


def _with(err_msg, what):
  return f"{err_msg} {what}" if err_msg else what


def check_jvp(f, f_jvp, args, atol=None, rtol=None, eps=EPS, err_msg=""):
  """Check a JVP against finite differences in one random direction.

  ``f_jvp(primals, tangents)`` must return ``(primal_out, tangent_out)`` (usually
  ``functools.partial(jax.jvp, f)``).  ``atol``/``rtol`` are numbers or per-dtype dicts
  merged over the default gradient tolerances; ``eps`` is the finite-difference step.
  Raises ``AssertionError`` when primal or tangent outputs differ.
  """
  atol = _merge_tolerance(atol, default_gradient_tolerance)
  rtol = _merge_tolerance(rtol, default_gradient_tolerance)
  rng = np.random.RandomState(0)
  tangent = tree_map(functools.partial(_rand_like, rng), args)
  v_out, t_out = f_jvp(args, tangent)
  _check_dtypes_match(v_out, t_out)
  v_expected = f(*args)
  _check_dtypes_match(v_out, v_expected)
  t_expected = numerical_jvp(f, args, tangent, eps=eps)
  check_close(v_out, v_expected, atol=atol, rtol=rtol, err_msg=_with(err_msg, "primal"))
  check_close(t_out, t_expected, atol=atol, rtol=rtol, err_msg=_with(err_msg, "tangent"))


def check_vjp(f, f_vjp, args, atol=None, rtol=None, eps=EPS, err_msg=""):
  """Check a VJP against finite differences: ``<t, vjp(c)>`` against ``<jvp_fd(t), c>``
  for random ``t`` and ``c``.

  ``f_vjp(*args)`` must return ``(primal_out, vjp_fun)`` (usually
  ``functools.partial(jax.vjp, f)``).  Raises ``AssertionError`` on a mismatch.
  """
  atol = _merge_tolerance(atol, default_gradient_tolerance)
  rtol = _merge_tolerance(rtol, default_gradient_tolerance)
  rand = functools.partial(_rand_like, np.random.RandomState(0))
  v_out, vjp_fun = f_vjp(*args)
  check_close(v_out, f(*args), atol=atol, rtol=rtol, err_msg=_with(err_msg, "primal"))
  tangent = tree_map(rand, args)
  tangent_out = numerical_jvp(f, args, tangent, eps=eps)
  cotangent = tree_map(rand, v_out)
  cotangent_out = _conj(vjp_fun(_conj(cotangent)))
  ip = _inner_prod(tangent, cotangent_out)
  ip_expected = _inner_prod(tangent_out, cotangent)
  check_close(ip, ip_expected, atol=atol, rtol=rtol,
              err_msg=_with(err_msg, "cotangent projection"))


def _jvp_via_linearize(f, primals, tangents):
  from pyjax._src.api_ad import linearize
  out, f_lin = linearize(f, *primals)
  return out, f_lin(*tangents)


def check_grads(f, args, order, modes=("fwd", "rev"), atol=None, rtol=None, eps=None):
  """Check derivatives of ``f`` at ``args`` up to ``order`` against finite differences.

  ``modes`` holds ``'fwd'`` (``jvp``), ``'rev'`` (``vjp``) and/or ``'lin'``
  (``linearize``); higher orders differentiate the derivative function again.  Raises
  ``AssertionError`` (message naming e.g. ``'JVP of VJP tangent'``) on a mismatch.
  """
  from pyjax._src.api_ad import jvp, vjp
  args = tuple(args)
  eps = eps or EPS
  cjvp = functools.partial(check_jvp, atol=atol, rtol=rtol, eps=eps)
  cvjp = functools.partial(check_vjp, atol=atol, rtol=rtol, eps=eps)

  def go(f, args, order, msg=""):
    if "fwd" in modes:
      m = f"JVP of {msg}" if msg else "JVP"
      cjvp(f, functools.partial(jvp, f), args, err_msg=m)
      if order > 1:
        go(functools.partial(jvp, f), (args, args), order - 1, m)
    if "rev" in modes:
      m = f"VJP of {msg}" if msg else "VJP"
      cvjp(f, functools.partial(vjp, f), args, err_msg=m)
      if order > 1:
        def f_vjp(*a):
          out, pullback = vjp(f, *a)
          return pullback(out)
        go(f_vjp, args, order - 1, m)
    if "lin" in modes:
      m = f"LIN of {msg}" if msg else "LIN"
      cjvp(f, functools.partial(_jvp_via_linearize, f), args, err_msg=m)
      if order > 1:
        go(functools.partial(_jvp_via_linearize, f), (args, args), order - 1, m)

  go(f, args, order)
