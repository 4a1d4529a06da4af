"""Differentiation rules (JVP and transpose) of the elementwise primitives.

Kept beside ``elementwise.py`` (which defines the primitives) while that module is being
edited elsewhere; the rules are registered when this module is imported (by
``pyjax._src.api_ad``).  The formulas are JAX's: symbolic zeros for non-differentiable
outputs (comparisons, integer ops, rounding), max/min split ties evenly, abs has slope +1
at 0, the transposes of complex-valued linear maps use JAX's (unconjugated) convention.
"""
from __future__ import annotations

import math

import numpy as np

from pyjax._src import core, dtypes
from pyjax._src.interpreters import ad

__all__ = ["stop_gradient"]
from pyjax._src.lax.elementwise import (  # noqa: F401
    neg_p, sign_p, floor_p, ceil_p, round_p, is_finite_p, exp_p, exp2_p, log_p, expm1_p,
    log1p_p, tanh_p, logistic_p, sin_p, cos_p, tan_p, asin_p, acos_p, atan_p, sinh_p,
    cosh_p, asinh_p, acosh_p, atanh_p, sqrt_p, rsqrt_p, cbrt_p, square_p, abs_p, real_p,
    imag_p, conj_p, erf_p, erfc_p, erf_inv_p, lgamma_p, digamma_p, bessel_i0e_p,
    bessel_i1e_p, not_p, population_count_p, clz_p, add_p, sub_p, mul_p, div_p, rem_p,
    max_p, min_p, atan2_p, nextafter_p, complex_p, and_p, or_p, xor_p, shift_left_p,
    shift_right_arithmetic_p, shift_right_logical_p, eq_p, ne_p, lt_p, le_p, gt_p, ge_p,
    igamma_p, igammac_p, igamma_grad_a_p, random_gamma_grad_p, polygamma_p, zeta_p, pow_p,
    regularized_incomplete_beta_p, integer_pow_p, convert_element_type_p,
    bitcast_convert_type_p, reduce_precision_p, select_n_p, clamp_p)


# --- differentiation rules ----------------------------------------------------------------
def _ad_bind(p):
  return lambda *args, **params: p.bind(*args, **params)


_neg, _exp, _log, _sin, _cos = map(_ad_bind, (neg_p, exp_p, log_p, sin_p, cos_p))
_sinh, _cosh, _sqrt, _rsqrt, _square = map(_ad_bind, (sinh_p, cosh_p, sqrt_p, rsqrt_p, square_p))
_sign, _floor, _abs, _real, _imag = map(_ad_bind, (sign_p, floor_p, abs_p, real_p, imag_p))
_add, _sub, _mul, _div, _pow = map(_ad_bind, (add_p, sub_p, mul_p, div_p, pow_p))
_eq, _gt, _lt, _ge, _and = map(_ad_bind, (eq_p, gt_p, lt_p, ge_p, and_p))
_digamma, _polygamma, _bessel_i1e, _bessel_i0e = map(
    _ad_bind, (digamma_p, polygamma_p, bessel_i1e_p, bessel_i0e_p))
_lgamma, _log1p, _complex = map(_ad_bind, (lgamma_p, log1p_p, complex_p))
_igamma_grad_a = _ad_bind(igamma_grad_a_p)


def _integer_pow(x, y):
  return integer_pow_p.bind(x, y=y)


def _conj(x):
  return conj_p.bind(x, input_dtype=core.get_aval(x).dtype)


def _convert(x, dtype, weak_type=False):
  return convert_element_type_p.bind(x, new_dtype=dtype, weak_type=weak_type, sharding=None)


def _c(x, val):
  """The constant ``val`` with ``x``'s dtype and weak type (a concrete 0-d array)."""
  return ad.const_like(x, val)


def _select(pred, on_true, on_false):
  return select_n_p.bind(pred, on_false, on_true)


def _full_like(x, val):
  aval = core.get_aval(x)
  c = ad.scalar_const(val, aval.dtype, aval.weak_type)
  return ad.broadcast_to_shape(c, aval.shape) if aval.shape else c


def _zeros(x):
  return _full_like(x, 0)


def _replace_zero(x):
  return _select(_eq(x, _c(x, 0)), _full_like(x, 1), x)


for _p in (sign_p, floor_p, ceil_p, round_p, is_finite_p, not_p, population_count_p, clz_p,
           and_p, or_p, xor_p, shift_left_p, shift_right_arithmetic_p, shift_right_logical_p,
           eq_p, ne_p, lt_p, le_p, gt_p, ge_p, bitcast_convert_type_p):
  ad.defjvp_zero(_p)

ad.deflinear(neg_p, lambda t: [_neg(t)])

ad.defjvp2(exp_p, lambda g, ans, x: _mul(g, ans))
ad.defjvp2(exp2_p, lambda g, ans, x: _mul(_log(_c(x, 2)), _mul(g, ans)))
ad.defjvp(log_p, lambda g, x: _div(g, x))
ad.defjvp2(expm1_p, lambda g, ans, x: _mul(g, _add(ans, _c(ans, 1))))
ad.defjvp(log1p_p, lambda g, x: _div(g, _add(x, _c(x, 1))))
ad.defjvp2(tanh_p, lambda g, ans, x: _mul(_add(g, _mul(g, ans)), _sub(_c(x, 1), ans)))
ad.defjvp2(logistic_p, lambda g, ans, x: _mul(g, _mul(ans, _sub(_c(ans, 1), ans))))
ad.defjvp(sin_p, lambda g, x: _mul(g, _cos(x)))
ad.defjvp(cos_p, lambda g, x: _neg(_mul(g, _sin(x))))
ad.defjvp2(tan_p, lambda g, ans, x: _mul(g, _add(_c(x, 1), _square(ans))))
ad.defjvp(asin_p, lambda g, x: _mul(g, _rsqrt(_sub(_c(x, 1), _square(x)))))
ad.defjvp(acos_p, lambda g, x: _mul(g, _neg(_rsqrt(_sub(_c(x, 1), _square(x))))))
ad.defjvp(atan_p, lambda g, x: _div(g, _add(_c(x, 1), _square(x))))
ad.defjvp(sinh_p, lambda g, x: _mul(g, _cosh(x)))
ad.defjvp(cosh_p, lambda g, x: _mul(g, _sinh(x)))
ad.defjvp(asinh_p, lambda g, x: _mul(g, _rsqrt(_add(_square(x), _c(x, 1)))))
ad.defjvp(acosh_p, lambda g, x: _mul(g, _rsqrt(_mul(_sub(x, _c(x, 1)), _add(x, _c(x, 1))))))
ad.defjvp(atanh_p, lambda g, x: _mul(_integer_pow(_add(_c(x, 1), x), -1),
                                     _div(g, _sub(_c(x, 1), x))))
ad.defjvp2(sqrt_p, lambda g, ans, x: _mul(g, _div(_c(x, 0.5), ans)))
ad.defjvp2(rsqrt_p, lambda g, ans, x: _mul(g, _mul(_c(x, -0.5), _div(ans, x))))
ad.defjvp2(cbrt_p, lambda g, ans, x: _mul(g, _mul(_c(x, 1 / 3), _integer_pow(ans, -2))))
ad.defjvp(square_p, lambda g, x: _mul(g, _mul(_c(x, 2), x)))


def _abs_jvp(g, ans, x):
  if dtypes.is_complex(core.get_aval(x).dtype):
    safe = _replace_zero(_convert(ans, core.get_aval(x).dtype))
    return _real(_mul(g, _div(_conj(x), safe)))
  return _select(_ge(x, _c(x, 0)), g, _neg(g))


ad.defjvp2(abs_p, _abs_jvp)


def _real_transpose(t):
  return [_complex(t, _zeros(t))]


def _imag_transpose(t):
  return [_complex(_zeros(t), _neg(t))]


ad.deflinear(real_p, _real_transpose)
ad.deflinear(imag_p, _imag_transpose)
ad.deflinear2(complex_p, lambda t, x, y: [
    ad.unbroadcast(_aval(x), _real(t)), ad.unbroadcast(_aval(y), _neg(_imag(t)))])


def _aval(x):
  return x.aval if ad.is_undefined_primal(x) else core.get_aval(x)


def _conj_transpose(t, x, **params):
  input_dtype = params.get("input_dtype") or _aval(x).dtype
  if dtypes.is_complex(input_dtype):
    return [_conj(t)]
  return [_real(t)]


ad.deflinear2(conj_p, _conj_transpose)

_SQRT_PI = math.sqrt(math.pi)
ad.defjvp(erf_p, lambda g, x: _mul(_c(x, 2 / _SQRT_PI), _mul(g, _exp(_neg(_square(x))))))
ad.defjvp(erfc_p, lambda g, x: _mul(_c(x, -2 / _SQRT_PI), _mul(g, _exp(_neg(_square(x))))))
ad.defjvp2(erf_inv_p, lambda g, ans, x: _mul(_c(x, _SQRT_PI / 2), _mul(g, _exp(_square(ans)))))
ad.defjvp(lgamma_p, lambda g, x: _mul(g, _digamma(x)))
ad.defjvp(digamma_p, lambda g, x: _mul(g, _polygamma(_c(x, 1), x)))
ad.defjvp2(bessel_i0e_p, lambda g, y, x: _mul(g, _sub(_bessel_i1e(x), _mul(_sign(x), y))))


def _bessel_i1e_jvp(g, y, x):
  eps = float(dtypes.finfo(core.get_aval(x).dtype).eps)
  not_tiny = _gt(_abs(x), _c(x, eps))
  safe_x = _select(not_tiny, x, _full_like(x, eps))
  dy = _sub(_bessel_i0e(safe_x), _mul(y, _add(_sign(safe_x), _integer_pow(safe_x, -1))))
  dy = _select(not_tiny, dy, _full_like(x, 0.5))
  return _mul(g, dy)


ad.defjvp2(bessel_i1e_p, _bessel_i1e_jvp)


# add / sub: linear, lax broadcasting of rank-0 and size-1 operands undone on transposes
def _add_jvp(primals, tangents):
  x, y = primals
  tx, ty = tangents
  out = add_p.bind(x, y)
  shape = core.get_aval(out).shape
  if type(tx) is ad.Zero:
    return out, ad.broadcast_to_shape(ty, shape)
  if type(ty) is ad.Zero:
    return out, ad.broadcast_to_shape(tx, shape)
  return out, ad.broadcast_to_shape(_add(tx, ty), shape)


def _sub_jvp(primals, tangents):
  x, y = primals
  tx, ty = tangents
  out = sub_p.bind(x, y)
  shape = core.get_aval(out).shape
  if type(tx) is ad.Zero:
    return out, ad.broadcast_to_shape(_neg(ty), shape)
  if type(ty) is ad.Zero:
    return out, ad.broadcast_to_shape(tx, shape)
  return out, ad.broadcast_to_shape(_sub(tx, ty), shape)


def _add_transpose(t, x, y):
  return [ad.unbroadcast(x.aval, t) if ad.is_undefined_primal(x) else None,
          ad.unbroadcast(y.aval, t) if ad.is_undefined_primal(y) else None]


def _sub_transpose(t, x, y):
  return [ad.unbroadcast(x.aval, t) if ad.is_undefined_primal(x) else None,
          ad.unbroadcast(y.aval, _neg(t)) if ad.is_undefined_primal(y) else None]


ad.primitive_jvps[add_p] = _add_jvp
ad.primitive_jvps[sub_p] = _sub_jvp
ad.primitive_transposes[add_p] = _add_transpose
ad.primitive_transposes[sub_p] = _sub_transpose


def _nonlinear_error(name):
  return ValueError(f"Linearization of {name} with both operands linear is not supported")


def _mul_transpose(t, x, y):
  if ad.is_undefined_primal(x) and ad.is_undefined_primal(y):
    raise _nonlinear_error("mul")
  if ad.is_undefined_primal(x):
    return [ad.unbroadcast(x.aval, _mul(t, y)), None]
  return [None, ad.unbroadcast(y.aval, _mul(x, t))]


def _div_transpose(t, x, y):
  if ad.is_undefined_primal(y):
    raise _nonlinear_error("div")
  return [ad.unbroadcast(x.aval, _div(t, y)), None]


ad.defjvp(mul_p, lambda g, x, y: _mul(g, y), lambda g, x, y: _mul(x, g))
ad.primitive_transposes[mul_p] = _mul_transpose
ad.defjvp(div_p, lambda g, x, y: _div(g, y),
          lambda g, x, y: _mul(_mul(_neg(g), x), _integer_pow(y, -2)))
ad.primitive_transposes[div_p] = _div_transpose
ad.defjvp(rem_p, lambda g, x, y: g,
          lambda g, x, y: _mul(_neg(g), _mul(_sign(_div(x, y)), _floor(_abs(_div(x, y))))))


def _balanced_eq(x, z, y):
  """1 where x == z and y != z, 1/2 where both equal z, else 0 (dtype of z)."""
  ones, zeros = _full_like(z, 1), _full_like(z, 0)
  return _div(_select(_eq(x, z), ones, zeros), _select(_eq(y, z), _full_like(z, 2), ones))


ad.defjvp2(max_p, lambda g, ans, x, y: _mul(g, _balanced_eq(x, ans, y)),
           lambda g, ans, x, y: _mul(g, _balanced_eq(y, ans, x)))
ad.defjvp2(min_p, lambda g, ans, x, y: _mul(g, _balanced_eq(x, ans, y)),
           lambda g, ans, x, y: _mul(g, _balanced_eq(y, ans, x)))
ad.defjvp(atan2_p, lambda g, x, y: _mul(g, _div(y, _add(_square(x), _square(y)))),
          lambda g, x, y: _mul(g, _div(_neg(x), _add(_square(x), _square(y)))))


def _igamma_gradx(g, a, x):
  return _mul(g, _exp(_sub(_sub(_mul(_sub(a, _c(a, 1)), _log(x)), x), _lgamma(a))))


def _igamma_grada(g, a, x):
  return _mul(g, _igamma_grad_a(a, x))


ad.defjvp(igamma_p, _igamma_grada, _igamma_gradx)
ad.defjvp(igammac_p, lambda g, a, x: _neg(_igamma_grada(g, a, x)),
          lambda g, a, x: _neg(_igamma_gradx(g, a, x)))


def _polygamma_gradm(g, m, x):
  raise ValueError("polygamma gradient with respect to m is not supported")


ad.defjvp(polygamma_p, _polygamma_gradm,
          lambda g, m, x: _mul(g, _polygamma(_add(m, _c(m, 1)), x)))


def _betainc_grad_ab(g, a, b, x):
  raise ValueError("Betainc gradient with respect to a and b not supported.")


def _betainc_gradx(g, a, b, x):
  lbeta = _sub(_add(_lgamma(a), _lgamma(b)), _lgamma(_add(a, b)))
  partial_x = _exp(_sub(_add(_mul(_sub(b, _c(b, 1)), _log1p(_neg(x))),
                             _mul(_sub(a, _c(a, 1)), _log(x))), lbeta))
  return _mul(partial_x, g)


ad.defjvp(regularized_incomplete_beta_p, _betainc_grad_ab, _betainc_grad_ab, _betainc_gradx)


def _strong(x, dtype=None):
  """``x`` converted to ``dtype`` (default: its own) and strongly typed; concrete values
  are converted now (JAX folds these conversions)."""
  aval = core.get_aval(x)
  dtype = aval.dtype if dtype is None else dtype
  if aval.dtype == dtype and not aval.weak_type:
    return x
  if isinstance(x, core.Tracer):
    return _convert(x, dtype)
  with core.set_interpreter(core.eval_interpreter):
    return _convert(x, dtype)


def _pow_jvp_lhs(g, ans, x, y):
  xd = core.get_aval(x).dtype
  x = _strong(x)
  if dtypes.is_int(core.get_aval(y).dtype):
    y = _strong(y, xd)
    is_zero = _eq(y, _c(y, 0))
    nz = _mul(_replace_zero(y), _pow(x, _sub(y, _c(y, 1))))
    shape = core.get_aval(nz).shape
    if core.get_aval(is_zero).shape not in ((), shape):
      is_zero = ad.broadcast_to_shape(is_zero, shape)
    jac = _select(is_zero, _zeros(nz), nz)
  else:
    y = _strong(y)
    jac = _mul(y, _pow(x, _sub(y, _c(y, 1))))
  return _mul(g, jac)


def _pow_jvp_rhs(g, ans, x, y):
  return _mul(g, _mul(_log(_replace_zero(x)), ans))


ad.defjvp2(pow_p, _pow_jvp_lhs, _pow_jvp_rhs)


def _integer_pow_jvp(g, x, *, y):
  if y == 0:
    return _zeros(g)
  return _mul(g, _mul(_c(x, y), x if y == 2 else _integer_pow(x, y - 1)))


ad.defjvp(integer_pow_p, _integer_pow_jvp)


def _convert_jvp(primals, tangents, *, new_dtype, weak_type=False, sharding=None):
  x, = primals
  t, = tangents
  out = convert_element_type_p.bind(x, new_dtype=new_dtype, weak_type=weak_type,
                                    sharding=sharding)
  if ad.has_float0_tangent(core.get_aval(out)) or type(t) is ad.Zero:
    return out, ad.Zero.from_primal_value(out)
  return out, convert_element_type_p.bind(t, new_dtype=new_dtype, weak_type=weak_type,
                                          sharding=sharding)


def _convert_transpose(t, x, *, new_dtype, weak_type=False, sharding=None):
  old = x.aval
  return [convert_element_type_p.bind(t, new_dtype=old.dtype, weak_type=old.weak_type,
                                      sharding=None)]


ad.primitive_jvps[convert_element_type_p] = _convert_jvp
ad.primitive_transposes[convert_element_type_p] = _convert_transpose

ad.deflinear(reduce_precision_p, lambda t, **kw: [reduce_precision_p.bind(t, **kw)])


def _select_n_jvp(primals, tangents):
  which, *cases = primals
  _, *case_ts = tangents
  out = select_n_p.bind(which, *cases)
  if all(type(t) is ad.Zero for t in case_ts):
    return out, ad.Zero.from_primal_value(out)
  ts = [ad.instantiate_zeros(t) for t in case_ts]
  return out, select_n_p.bind(which, *ts)


def _select_n_transpose(t, which, *cases):
  if ad.is_undefined_primal(which):
    raise ValueError("select_n's predicate is not differentiable")
  zeros = _zeros(t)
  outs = [None]
  for i, c in enumerate(cases):
    if ad.is_undefined_primal(c):
      outs.append(select_n_p.bind(which, *[t if j == i else zeros for j in range(len(cases))]))
    else:
      outs.append(None)
  return outs


ad.primitive_jvps[select_n_p] = _select_n_jvp
ad.primitive_transposes[select_n_p] = _select_n_transpose


def _clamp_lo_jvp(g, lo, x, hi):
  return _select(_and(_gt(lo, x), _lt(lo, hi)), ad.broadcast_to_shape(g, _aval(x).shape),
                 _zeros(x))


def _clamp_x_jvp(g, lo, x, hi):
  return _select(_and(_gt(x, lo), _lt(x, hi)), g, _zeros(x))


def _clamp_hi_jvp(g, lo, x, hi):
  return _select(_lt(hi, x), ad.broadcast_to_shape(g, _aval(x).shape), _zeros(x))


ad.defjvp(clamp_p, _clamp_lo_jvp, _clamp_x_jvp, _clamp_hi_jvp)



def stop_gradient(x):
  """The identity with a zero derivative, applied to every leaf of the pytree ``x``
  (integer and boolean leaves are returned unchanged, as in JAX)."""
  from pyjax._src import tree_util

  def stop(v):
    if dtypes.is_inexact(core.get_aval(v).dtype):
      return ad.stop_gradient_p.bind(v)
    return v
  return tree_util.tree_map(stop, x)


_ = np


# --- batching rules -------------------------------------------------------------------------
# Unary elementwise operations commute with the batch dimension; n-ary ones use lax's
# broadcasting (batching.broadcast_batcher); select_n and clamp broadcast their scalar
# operands themselves.
from pyjax._src.interpreters import batching as _batching  # noqa: E402

for _p in (neg_p, sign_p, floor_p, ceil_p, round_p, is_finite_p, exp_p, exp2_p, log_p,
           expm1_p, log1p_p, tanh_p, logistic_p, sin_p, cos_p, tan_p, asin_p, acos_p, atan_p,
           sinh_p, cosh_p, asinh_p, acosh_p, atanh_p, sqrt_p, rsqrt_p, cbrt_p, square_p,
           abs_p, real_p, imag_p, conj_p, erf_p, erfc_p, erf_inv_p, lgamma_p, digamma_p,
           bessel_i0e_p, bessel_i1e_p, not_p, population_count_p, clz_p, integer_pow_p,
           convert_element_type_p, reduce_precision_p):
  _batching.defvectorized(_p)

for _p in (add_p, sub_p, mul_p, div_p, rem_p, max_p, min_p, atan2_p, nextafter_p, complex_p,
           and_p, or_p, xor_p, shift_left_p, shift_right_arithmetic_p, shift_right_logical_p,
           eq_p, ne_p, lt_p, le_p, gt_p, ge_p, igamma_p, igammac_p, igamma_grad_a_p,
           random_gamma_grad_p, polygamma_p, zeta_p, pow_p, regularized_incomplete_beta_p):
  _batching.defbroadcasting(_p)


def _bitcast_convert_type_batch(args, dims, *, new_dtype):
  x, = args
  d, = dims
  aval = core.get_aval(x)
  if d == aval.ndim - 1:  # the trailing axis may be split or merged: keep the batch dim off it
    x, d = _batching.moveaxis(x, d, 0), 0
  return bitcast_convert_type_p.bind(x, new_dtype=new_dtype), d


_batching.primitive_batchers[bitcast_convert_type_p] = _bitcast_convert_type_batch


def _full_rank_at_front(x, d, shape, size):
  """An operand of per-example shape ``shape`` or () as a batched array of shape
  ``(size, *shape)``."""
  from pyjax._src.lax import shapes
  aval = core.get_aval(x)
  if d is _batching.not_mapped:
    if aval.shape == tuple(shape):
      return _batching.broadcast(x, size, 0)
    return shapes.broadcast_in_dim_p.bind(x, shape=(size,) + tuple(shape),
                                          broadcast_dimensions=(), sharding=None)
  x = _batching.moveaxis(x, d, 0)
  if aval.ndim - 1 == len(shape):
    return x
  return shapes.broadcast_in_dim_p.bind(x, shape=(size,) + tuple(shape),
                                        broadcast_dimensions=(0,), sharding=None)


def _per_example_shape(args, dims):
  for x, d in zip(args, dims):
    s = core.get_aval(x).shape
    if d is not _batching.not_mapped:
      return s[:d] + s[d + 1:], s[d]
  raise AssertionError


def _select_n_batch(args, dims):
  from pyjax._src.lax import shapes
  nm = _batching.not_mapped
  which, *cases = args
  wd, *cds = dims
  size = _per_example_shape(args, dims)[1]
  nd = lambda x: core.get_aval(x).ndim
  shape = lambda x: core.get_aval(x).shape
  # cheap cases: no transposes or broadcasts of the cases
  if all(wd == d for d in cds):
    if shape(which) == shape(cases[0]):
      return select_n_p.bind(which, *cases), wd
    which = shapes.broadcast_in_dim_p.bind(which, shape=shape(cases[0]),
                                           broadcast_dimensions=(wd,), sharding=None)
    return select_n_p.bind(which, *cases), wd
  if nd(which) == 0 and all(d is not nm for d in cds):
    if all(d == cds[0] for d in cds[1:]):
      return select_n_p.bind(which, *cases), cds[0]
    if all(shape(c) == shape(cases[0]) for c in cases):
      d0 = cds[0]
      return select_n_p.bind(which, cases[0], *[_batching.moveaxis(c, d, d0)
                                                for c, d in zip(cases[1:], cds[1:])]), d0
  # general case: batch dims to the front, broadcasting what is unbatched
  if shape(which):
    which = _batching.bdim_at_front(which, wd, size)
  if not all(shape(c) == () for c in cases):
    cases = [_batching.bdim_at_front(c, d, size) for c, d in zip(cases, cds)]
  if 0 < nd(which) < nd(cases[0]):   # a per-example scalar which against array cases
    which = shapes.broadcast_in_dim_p.bind(which, shape=shape(cases[0]),
                                           broadcast_dimensions=(0,), sharding=None)
  if nd(which) > nd(cases[0]):       # per-example scalar cases against a batched which
    cases = [shapes.broadcast_in_dim_p.bind(c, shape=shape(which), broadcast_dimensions=(),
                                            sharding=None) for c in cases]
  return select_n_p.bind(which, *cases), 0


_batching.primitive_batchers[select_n_p] = _select_n_batch


def _clamp_batch(args, dims):
  lo, x, hi = args
  ld, xd, hd = dims
  s = core.get_aval(x).shape
  x_shape = s if xd is _batching.not_mapped else s[:xd] + s[xd + 1:]
  size = _per_example_shape(args, dims)[1]
  if all(d == xd for d in dims) and core.get_aval(lo).shape == s == core.get_aval(hi).shape:
    return clamp_p.bind(lo, x, hi), xd
  if (xd is not _batching.not_mapped and ld is hd is _batching.not_mapped
      and not core.get_aval(lo).ndim and not core.get_aval(hi).ndim):
    return clamp_p.bind(lo, x, hi), xd
  x = _full_rank_at_front(x, xd, x_shape, size)
  bounds = []
  for b, d in ((lo, ld), (hi, hd)):
    if d is _batching.not_mapped and not core.get_aval(b).ndim:
      bounds.append(b)
    else:
      bounds.append(_full_rank_at_front(b, d, x_shape, size))
  return clamp_p.bind(bounds[0], x, bounds[1]), 0


_batching.primitive_batchers[clamp_p] = _clamp_batch
