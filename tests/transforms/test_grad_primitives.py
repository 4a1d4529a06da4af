"""Every primitive of the foundation lax families, table-driven: JVP against central finite
differences and VJP against JVP (<u, J v> == <J^T u, v>), in float32 and float64.

The table must classify every primitive defined in the lax family modules (and the
transformation primitives): a new primitive without an entry fails
``test_every_primitive_is_classified``.  Primitives JAX does not differentiate are listed
in ``NON_DIFFERENTIABLE`` and must raise JAX's NotImplementedError.
"""
import zlib

import numpy as np
import pytest

import pyjax
import pyjax.numpy as jnp
from pyjax import lax
from pyjax._src import core
from pyjax._src.interpreters import ad
from pyjax._src.lax import (convolution, dot, elementwise, reductions, shapes, sorting, windowed)
from pyjax._src.lax import gather_scatter
from pyjax._src.lax import windowed

FAMILY_MODULES = [elementwise, shapes, gather_scatter, reductions, windowed, dot, convolution, sorting]


def _tol(dt):
  return (dict(eps=1e-3, rtol=3e-2, atol=3e-2, rev=2e-3) if dt == np.float32
          else dict(eps=1e-6, rtol=1e-5, atol=1e-6, rev=1e-9))


def check_grads(f, args, dt, modes=("fwd", "rev"), seed=0):
  rng = np.random.default_rng(seed)
  args = [np.asarray(a, dt) for a in args]
  tol = _tol(dt)
  v = [rng.standard_normal(a.shape).astype(dt) for a in args]
  out, tout = pyjax.jvp(f, tuple(args), tuple(v))
  outs = out if isinstance(out, (tuple, list)) else [out]
  touts = tout if isinstance(tout, (tuple, list)) else [tout]
  for o, t in zip(outs, touts):
    assert np.asarray(t).shape == np.asarray(o).shape
  if "fwd" in modes:
    e = tol["eps"]
    plus = f(*[jnp.asarray(a + e * t) for a, t in zip(args, v)])
    minus = f(*[jnp.asarray(a - e * t) for a, t in zip(args, v)])
    plus = plus if isinstance(plus, (tuple, list)) else [plus]
    minus = minus if isinstance(minus, (tuple, list)) else [minus]
    for p, m, t in zip(plus, minus, touts):
      fd = (np.asarray(p, np.float64) - np.asarray(m, np.float64)) / (2 * e)
      np.testing.assert_allclose(np.asarray(t, np.float64), fd, rtol=tol["rtol"],
                                 atol=tol["atol"])
  if "rev" in modes:
    out2, f_vjp = pyjax.vjp(f, *args)
    u = [rng.standard_normal(np.shape(o)).astype(np.asarray(o).dtype) for o in outs]
    cts = f_vjp(type(out2)(u) if isinstance(out2, (tuple, list)) else u[0])
    lhs = sum(float(np.vdot(np.asarray(a, np.float64), np.asarray(b, np.float64)))
              for a, b in zip(u, touts))
    rhs = sum(float(np.vdot(np.asarray(a, np.float64), np.asarray(b, np.float64)))
              for a, b in zip(cts, v))
    assert abs(lhs - rhs) <= tol["rev"] * max(1.0, abs(lhs), abs(rhs)), (lhs, rhs)
    for c, a in zip(cts, args):
      assert np.asarray(c).shape == a.shape and np.asarray(c).dtype == a.dtype


def U(shape, lo, hi):
  return ("uniform", shape, lo, hi)


def _make(spec, rng):
  _, shape, lo, hi = spec
  return rng.uniform(lo, hi, shape)


_GNUMS = lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,),
                                    start_index_map=(0,))
_SNUMS = lax.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                     scatter_dims_to_operand_dims=(0,))
_IDX = np.array([[2], [0], [3]], np.int32)
_UIDX = np.array([[2], [0], [1]], np.int32)


def _scatter(fn, idx=_IDX):
  return lambda x, u: fn(x, idx, u, _SNUMS)


def _own_bits(x):
  fi = np.finfo(x.dtype)
  return int(fi.nexp), int(fi.nmant)


# name -> (function of float arrays, argument specs[, modes])
CASES = {
    # elementwise, unary
    "abs": (lax.abs, [U((6,), 0.1, 2)]),
    "acos": (lax.acos, [U((6,), -0.8, 0.8)]),
    "acosh": (lax.acosh, [U((6,), 1.2, 3)]),
    "asin": (lax.asin, [U((6,), -0.8, 0.8)]),
    "asinh": (lax.asinh, [U((6,), -2, 2)]),
    "atan": (lax.atan, [U((6,), -2, 2)]),
    "atanh": (lax.atanh, [U((6,), -0.8, 0.8)]),
    "bessel_i0e": (lax.bessel_i0e, [U((6,), -2, 2)]),
    "bessel_i1e": (lax.bessel_i1e, [U((6,), -2, 2)]),
    "cbrt": (lax.cbrt, [U((6,), 0.5, 3)]),
    "cos": (lax.cos, [U((6,), -2, 2)]),
    "cosh": (lax.cosh, [U((6,), -2, 2)]),
    "digamma": (lax.digamma, [U((6,), 0.5, 3)]),
    "erf": (lax.erf, [U((6,), -2, 2)]),
    "erf_inv": (lax.erf_inv, [U((6,), -0.8, 0.8)]),
    "erfc": (lax.erfc, [U((6,), -2, 2)]),
    "exp": (lax.exp, [U((6,), -2, 2)]),
    "exp2": (lax.exp2, [U((6,), -2, 2)]),
    "expm1": (lax.expm1, [U((6,), -2, 2)]),
    "lgamma": (lax.lgamma, [U((6,), 0.5, 3)]),
    "log": (lax.log, [U((6,), 0.5, 3)]),
    "log1p": (lax.log1p, [U((6,), -0.5, 2)]),
    "logistic": (lax.logistic, [U((6,), -3, 3)]),
    "neg": (lax.neg, [U((6,), -2, 2)]),
    "rsqrt": (lax.rsqrt, [U((6,), 0.5, 3)]),
    "sin": (lax.sin, [U((6,), -2, 2)]),
    "sinh": (lax.sinh, [U((6,), -2, 2)]),
    "sqrt": (lax.sqrt, [U((6,), 0.5, 3)]),
    "square": (lax.square, [U((6,), -2, 2)]),
    "tan": (lax.tan, [U((6,), -1, 1)]),
    "tanh": (lax.tanh, [U((6,), -2, 2)]),
    "integer_pow": (lambda x: lax.integer_pow(x, 3) + lax.integer_pow(x, -2), [U((6,), 0.5, 2)]),
    # (rounding to the operand's own precision: the identity, differentiable exactly)
    "reduce_precision": (lambda x: lax.reduce_precision(x, *_own_bits(x)) * x,
                         [U((6,), -2, 2)]),
    "convert_element_type": (lambda x: lax.real(lax.convert_element_type(
        x, np.complex64 if x.dtype == np.float32 else np.complex128)) * x, [U((6,), -2, 2)]),
    "real": (lambda x, y: lax.real(lax.mul(lax.complex(x, y), lax.complex(y, x))),
             [U((4,), -2, 2), U((4,), -2, 2)]),
    "imag": (lambda x, y: lax.imag(lax.mul(lax.complex(x, y), lax.complex(y, x))),
             [U((4,), -2, 2), U((4,), -2, 2)]),
    "complex": (lambda x, y: lax.abs(lax.complex(x, y)), [U((4,), 0.5, 2), U((4,), 0.5, 2)]),
    "conj": (lambda x, y: lax.imag(lax.conj(lax.complex(x, y)) * lax.complex(x, x)),
             [U((4,), -2, 2), U((4,), -2, 2)]),
    # elementwise, n-ary
    "add": (lax.add, [U((5,), -2, 2), U((5,), -2, 2)]),
    "sub": (lax.sub, [U((5,), -2, 2), U((5,), -2, 2)]),
    "mul": (lax.mul, [U((5,), -2, 2), U((5,), -2, 2)]),
    "div": (lax.div, [U((5,), -2, 2), U((5,), 0.5, 2)]),
    "rem": (lax.rem, [U((5,), 2.1, 5.3), U((5,), 0.7, 1.9)]),
    "max": (lax.max, [U((5,), -2, 2), U((5,), -2, 2)]),
    "min": (lax.min, [U((5,), -2, 2), U((5,), -2, 2)]),
    "atan2": (lax.atan2, [U((5,), -2, 2), U((5,), 0.5, 2)]),
    "pow": (lax.pow, [U((5,), 0.5, 2), U((5,), -2, 2)]),
    "igamma": (lax.igamma, [U((5,), 0.5, 3), U((5,), 0.5, 3)]),
    "igammac": (lax.igammac, [U((5,), 0.5, 3), U((5,), 0.5, 3)]),
    "polygamma": (lambda x: lax.polygamma(np.full(x.shape, 1.0, x.dtype), x), [U((5,), 0.5, 3)]),
    "regularized_incomplete_beta": (
        lambda x: lax.regularized_incomplete_beta(np.full(x.shape, 2.0, x.dtype),
                                                  np.full(x.shape, 3.0, x.dtype), x),
        [U((5,), 0.1, 0.9)]),
    "select_n": (lambda p, a, b: lax.select_n(p > 0, a, b), [U((5,), -1, 1), U((5,), -2, 2),
                                                             U((5,), -2, 2)]),
    "clamp": (lambda lo, x: lax.clamp(lo, x, np.asarray(1.5, x.dtype)),
              [U((), -0.7, -0.5), U((6,), -2, 2)]),
    "add_any": (lambda x, y: ad.add_any_p.bind(x, y), [U((5,), -2, 2), U((5,), -2, 2)]),
    # structural
    "broadcast_in_dim": (lambda x: lax.broadcast_in_dim(x, (2, 3, 4), (1, 2)), [U((3, 4), -2, 2)]),
    "concatenate": (lambda x, y: lax.concatenate([x, y, x], 1), [U((2, 3), -2, 2),
                                                                 U((2, 1), -2, 2)]),
    "dynamic_slice": (lambda x: lax.dynamic_slice(x, (1, 0), (2, 2)), [U((3, 4), -2, 2)]),
    "dynamic_update_slice": (lambda x, u: lax.dynamic_update_slice(x, u, (1, 2)),
                             [U((3, 4), -2, 2), U((2, 2), -2, 2)]),
    "pad": (lambda x, p: lax.pad(x, p, [(1, 2, 1), (-1, 0, 0)]), [U((3, 4), -2, 2), U((), -1, 1)]),
    "reshape": (lambda x: lax.reshape(x, (4, 3), (1, 0)), [U((3, 4), -2, 2)]),
    "split": (lambda x: lax.split(x, (1, 3), 1)[1], [U((3, 4), -2, 2)]),
    "stack": (lambda x, y: lax.stack((x, y), 1), [U((3, 4), -2, 2), U((3, 4), -2, 2)]),
    "unstack": (lambda x: lax.unstack(x, 1)[2], [U((3, 4), -2, 2)]),
    "tile": (lambda x: lax.tile(x, (2, 1)), [U((3, 4), -2, 2)]),
    "rev": (lambda x: lax.rev(x, (0,)), [U((3, 4), -2, 2)]),
    "slice": (lambda x: lax.slice(x, (0, 1), (3, 4), (2, 2)), [U((3, 4), -2, 2)]),
    "squeeze": (lambda x: lax.squeeze(x, (1,)), [U((3, 1, 2), -2, 2)]),
    "transpose": (lambda x: lax.transpose(x, (2, 0, 1)), [U((2, 3, 4), -2, 2)]),
    # gather / scatter
    "gather": (lambda x: lax.gather(x, _IDX, _GNUMS, (1, 3)), [U((4, 3), -2, 2)]),
    "scatter": (_scatter(lax.scatter, _UIDX), [U((4, 3), -2, 2), U((3, 3), -2, 2)]),
    "scatter-add": (_scatter(lax.scatter_add), [U((4, 3), -2, 2), U((3, 3), -2, 2)]),
    "scatter-sub": (_scatter(lax.scatter_sub), [U((4, 3), -2, 2), U((3, 3), -2, 2)]),
    "scatter-mul": (lambda x, u: lax.scatter_mul(x, _UIDX, u, _SNUMS, unique_indices=True), [U((4, 3), 0.5, 2), U((3, 3), 0.5, 2)]),
    "scatter-max": (_scatter(lax.scatter_max), [U((4, 3), -2, 2), U((3, 3), -2, 2)]),
    "scatter-min": (_scatter(lax.scatter_min), [U((4, 3), -2, 2), U((3, 3), -2, 2)]),
    # reductions
    "reduce_sum": (lambda x: lax.reduce_sum(x, (0,)), [U((3, 4), -2, 2)]),
    "reduce_prod": (lambda x: lax.reduce_prod(x, (1,)), [U((3, 4), 0.5, 2)]),
    "reduce_max": (lambda x: lax.reduce_max(x, (0,)), [U((3, 4), -2, 2)]),
    "reduce_min": (lambda x: lax.reduce_min(x, (1,)), [U((3, 4), -2, 2)]),
    "reduce": (lambda x, y: lax.reduce((x, y), (np.asarray(0, x.dtype), np.asarray(1, x.dtype)),
                                       lambda a, b: (a[0] + b[0], a[1] * b[1]), (1,)),
               [U((3, 4), -2, 2), U((3, 4), 0.5, 2)]),
    "cumsum": (lambda x: lax.cumsum(x, 1), [U((3, 4), -2, 2)]),
    "cumprod": (lambda x: lax.cumprod(x, 1, reverse=True), [U((3, 4), 0.5, 2)]),
    "cummax": (lambda x: lax.cummax(x, 0), [U((3, 4), -2, 2)]),
    "cummin": (lambda x: lax.cummin(x, 1), [U((3, 4), -2, 2)]),
    "cumlogsumexp": (lambda x: lax.cumlogsumexp(x, 1), [U((3, 4), -2, 2)]),
    # windowed
    "reduce_window_sum": (lambda x: lax.reduce_window(x, 0., lax.add, (2, 2), (1, 1), "SAME"),
                          [U((3, 4), -2, 2)]),
    "reduce_window_max": (lambda x: lax.reduce_window(x, -np.inf, lax.max, (2, 2), (1, 2),
                                                      "VALID"), [U((3, 4), -2, 2)]),
    "reduce_window_min": (lambda x: lax.reduce_window(x, np.inf, lax.min, (2, 1), (1, 1),
                                                      [(1, 0), (0, 0)]), [U((3, 4), -2, 2)]),
    "reduce_window": (lambda x: lax.reduce_window(x, 1., lambda a, b: a * b, (2, 2), (1, 2),
                                                  [(1, 0), (0, 1)], (1, 2), (1, 1)),
                      [U((3, 4), 0.5, 2)]),
    "select_and_gather_add": (
        lambda t, x: windowed._select_and_gather_add(t, x, elementwise.ge_p, (2, 2), (1, 1),
                                              ((0, 0), (0, 0)), None, None),
        [U((3, 4), -2, 2), U((3, 4), -2, 2)],
        ("rev",)),
    "select_and_scatter_add": (
        lambda s, x: windowed._select_and_scatter_add(s, x, elementwise.ge_p, (2, 2), (1, 1),
                                               ((0, 0), (0, 0))),
        [U((2, 3), -2, 2), U((3, 4), -2, 2)], ("rev",)),
    # contractions
    "dot_general": (lambda a, b: lax.dot_general(a, b, (((2,), (1,)), ((0,), (0,)))),
                    [U((2, 3, 4), -2, 2), U((2, 4, 3), -2, 2)]),
    "conv_general_dilated": (
        lambda l, r: lax.conv_general_dilated(l, r, (1, 2), [(1, 0), (0, 1)], (1, 1), (2, 1),
                                              feature_group_count=2),
        [U((1, 4, 5, 6), -2, 2), U((2, 2, 2, 3), -2, 2)]),
    # sorting
    "sort": (lambda x, y: lax.sort((x, y), dimension=1, num_keys=1),
             [U((3, 4), -2, 2), U((3, 4), -2, 2)]),
    "top_k": (lambda x: lax.top_k(x, 2)[0], [U((3, 5), -2, 2)]),
}

# The derivative exists and is zero almost everywhere (JAX gives zero tangents).
ZERO_DERIVATIVE = {
    "sign": lax.sign, "floor": lax.floor, "ceil": lax.ceil, "round": lax.round,
    "is_finite": lax.is_finite, "eq": lambda x: lax.eq(x, x), "ne": lambda x: lax.ne(x, x),
    "lt": lambda x: lax.lt(x, x), "le": lambda x: lax.le(x, x), "gt": lambda x: lax.gt(x, x),
    "ge": lambda x: lax.ge(x, x), "stop_gradient": lax.stop_gradient,
    "eq_to": lambda x: lax.eq_to_p.bind(x, x), "le_to": lambda x: lax.le_to_p.bind(x, x),
    "lt_to": lambda x: lax.lt_to_p.bind(x, x),
    "argmax": lambda x: lax.argmax(x, 0, np.int32), "argmin": lambda x: lax.argmin(x, 0, np.int32),
    "bitcast_convert_type": lambda x: lax.bitcast_convert_type(x, np.int32 if x.dtype ==
                                                               np.float32 else np.int64),
}

# Operations on integers/booleans only: their tangents are float0.
INTEGER_ONLY = {
    "and": lambda x: lax.bitwise_and(x, x), "or": lambda x: lax.bitwise_or(x, x),
    "xor": lambda x: lax.bitwise_xor(x, x), "not": lax.bitwise_not,
    "population_count": lax.population_count, "clz": lax.clz,
    "mulhi": lambda x: lax.mulhi(x, x),
    "shift_left": lambda x: lax.shift_left(x, x), "shift_right_arithmetic":
    lambda x: lax.shift_right_arithmetic(x, x),
    "shift_right_logical": lambda x: lax.shift_right_logical(x, x),
    "reduce_and": lambda x: lax.reduce_and(x > 0, (0,)),
    "reduce_or": lambda x: lax.reduce_or(x > 0, (0,)),
    "reduce_xor": lambda x: lax.reduce_xor(x, (0,)),
}

# Not differentiable in JAX either (no JVP rule): differentiating raises NotImplementedError.
NON_DIFFERENTIABLE = {
    "igamma_grad_a": lambda x: lax.igamma_grad_a(x, x),
    "random_gamma_grad": lambda x: lax.random_gamma_grad(x, x),
    "zeta": lambda x: lax.zeta(x, x + 1),
    "nextafter": lambda x: lax.nextafter(x, x + 1),
    "iota": None,          # no operands
}

# Transformation primitives, covered by their own tests.
COVERED_ELSEWHERE = {
    "jit": "test_grad.py (grad of jit, jit of grad)",
    "custom_jvp_call": "test_grad.py", "custom_vjp_call": "test_grad.py",
    "custom_lin": "test_grad.py (custom_vjp)",
    "remat2": "test_remat.py", "name": "test_remat.py",
    "debug_print": "test_debug_callback.py", "debug_callback": "test_debug_callback.py",
    "pure_callback": "test_debug_callback.py", "io_callback": "test_debug_callback.py",
}


def _family_primitives():
  prims = {v for m in FAMILY_MODULES for v in vars(m).values() if isinstance(v, core.Primitive)}
  prims |= {ad.add_any_p, ad.stop_gradient_p}
  from pyjax._src import ad_checkpoint, api_ad, callback, debugging  # noqa: F401
  from pyjax._src.interpreters import staging
  prims |= {staging.jit_p, api_ad.custom_jvp_call_p, api_ad.custom_vjp_call_p,
            api_ad.custom_lin_p, ad_checkpoint.remat_p, ad_checkpoint.name_p,
            debugging.debug_print_p, debugging.debug_callback_p, callback.pure_callback_p,
            callback.io_callback_p}
  return prims


def test_every_primitive_is_classified():
  tables = [CASES, ZERO_DERIVATIVE, INTEGER_ONLY, NON_DIFFERENTIABLE, COVERED_ELSEWHERE]
  names = [set(t) for t in tables]
  for i, a in enumerate(names):
    for b in names[i + 1:]:
      assert not a & b, a & b
  prims = _family_primitives()
  missing = sorted(p.name for p in prims if not any(p.name in t for t in names))
  assert not missing, f"unclassified primitives: {missing}"
  for p in prims:
    has_rule = p in ad.primitive_jvps or p in ad.interpreter_jvps
    assert has_rule == (p.name not in NON_DIFFERENTIABLE), p.name


def test_table_covers_every_registered_family_jvp():
  """Every JVP rule registered for a family primitive is exercised by the table."""
  prims = _family_primitives()
  registered = {p.name for p in list(ad.primitive_jvps) + list(ad.interpreter_jvps)
                if p in prims}
  exercised = set(CASES) | set(ZERO_DERIVATIVE) | set(INTEGER_ONLY) | set(COVERED_ELSEWHERE)
  assert registered <= exercised, registered - exercised


@pytest.mark.parametrize("name", sorted(CASES))
def test_primitive_grads(name, dtype):
  fn, specs, *modes = CASES[name]
  rng = np.random.default_rng(zlib.crc32(name.encode()))
  args = [_make(s, rng) for s in specs]
  check_grads(fn, args, dtype, modes=modes[0] if modes else ("fwd", "rev"))


@pytest.mark.parametrize("name", sorted(ZERO_DERIVATIVE))
def test_zero_derivative(name, dtype):
  fn = ZERO_DERIVATIVE[name]
  x = np.linspace(-2.3, 2.1, 6).astype(dtype)
  out, t = pyjax.jvp(fn, (x,), (np.ones_like(x),))
  if np.asarray(out).dtype.kind == "f":
    np.testing.assert_array_equal(np.asarray(t), np.zeros(np.shape(out)))
  else:
    assert np.asarray(t).dtype == ad.float0
  g = pyjax.grad(lambda x: jnp.sum(jnp.asarray(fn(x), dtype)))(x)
  np.testing.assert_array_equal(np.asarray(g), np.zeros_like(x))


@pytest.mark.parametrize("name", sorted(INTEGER_ONLY))
def test_integer_only_ops_have_float0_tangents(name):
  fn = INTEGER_ONLY[name]
  x = np.arange(1, 5, dtype=np.int32)
  out, t = pyjax.jvp(fn, (x,), (np.zeros(x.shape, ad.float0),))
  assert np.asarray(t).dtype == ad.float0 and np.asarray(t).shape == np.shape(out)


@pytest.mark.parametrize("name", sorted(n for n, f in NON_DIFFERENTIABLE.items() if f))
def test_non_differentiable_raise_like_jax(name):
  fn = NON_DIFFERENTIABLE[name]
  with pytest.raises(NotImplementedError,
                     match=f"Differentiation rule for '{name}' not implemented"):
    pyjax.grad(lambda x: jnp.sum(fn(x)))(np.linspace(1.5, 2.5, 3).astype(np.float32))


@pytest.mark.slow
def test_grads_match_jax_on_table():
  """Gradients of the table's functions equal JAX's (float32, fixed inputs)."""
  jax = pytest.importorskip("jax")
  jlax = jax.lax
  # JAX cannot differentiate clamp with a scalar bound nor its generic reduce_window in
  # reverse mode; add_any and the select_and_* primitives have no public JAX function
  skip = {"add_any", "select_and_gather_add", "select_and_scatter_add", "reduce_window", "clamp"}
  rng = np.random.default_rng(0)
  for name in sorted(set(CASES) - skip):
    fn, specs, *_ = CASES[name]
    args = [_make(s, rng).astype(np.float32) for s in specs]
    w = [rng.standard_normal(np.shape(o)).astype(np.float32)
         for o in pyjax.tree_util.tree_leaves(fn(*args))]

    def total(out, np_):
      return sum(np_.sum(o * c) for o, c in zip(pyjax.tree_util.tree_leaves(out)
                                                if np_ is jnp else jax.tree_util.tree_leaves(out), w))
    ours = pyjax.grad(lambda *a: total(fn(*a), jnp), argnums=tuple(range(len(args))))(*args)
    jfn = _jax_version(name, fn, jlax)
    theirs = jax.grad(lambda *a: total(jfn(*a), jax.numpy),
                      argnums=tuple(range(len(args))))(*args)
    for a, b in zip(ours, theirs):
      np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-4, atol=2e-5,
                                 err_msg=name)


def _jax_version(name, fn, jlax):
  """The table entry with pyjax.lax swapped for jax.lax (the lambdas read ``lax``)."""
  import types
  if fn.__module__ != __name__:   # a lax function itself: the table key is its name
    return getattr(jlax, name)
  g = dict(fn.__globals__)

  class _JLax:   # jax.lax, with pyjax's extra public names mapped to JAX's
    def __getattr__(self, n):
      return getattr(jlax, {"regularized_incomplete_beta": "betainc"}.get(n, n))
  g["lax"] = _JLax()
  closure = fn.__closure__
  if closure:
    cells = []
    for c in closure:
      v = c.cell_contents
      if callable(v) and getattr(v, "__module__", "").startswith("pyjax"):
        v = getattr(jlax, v.__name__)
      cells.append(types.CellType(v))
    closure = tuple(cells)
  return types.FunctionType(fn.__code__, g, fn.__name__, fn.__defaults__, closure)


@pytest.mark.parametrize("tier", ["off", "sync"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_jit_equals_eager(name, dtype, tier):
  """jit(f) == f for every primitive in the table, on the NumPy tier and natively
  compiled. Jitted transcendentals and convolutions use pyjax's own vector math and
  kernels on both tiers (bit-identical tiers); eager transcendentals run the same kernels
  (eager/kernel_calls.py) but compositions may still round differently (convolutions, or
  NumPy's libm without a C compiler), so those cases compare to a tolerance; everything
  else is bit-identical on the NumPy tier.  (Inputs from a seed fixed per case name:
  ``hash(str)`` changes between processes and made the finite differences flaky.)"""
  from pyjax._src.backends.cpu import executable
  from pyjax._src.backends.cpu.numpy_tier import native
  fn, specs, *_ = CASES[name]
  rng = np.random.default_rng(zlib.crc32(name.encode()))
  args = [np.asarray(_make(s, rng), dtype) for s in specs]
  eager = pyjax.tree_util.tree_leaves(fn(*args))
  prev = executable.set_compile_mode(tier)
  try:
    jitted = pyjax.tree_util.tree_leaves(pyjax.jit(fn)(*args))
  finally:
    executable.set_compile_mode(prev)
  assert len(eager) == len(jitted)
  for e, j in zip(eager, jitted):
    assert e.dtype == j.dtype and e.shape == j.shape and e.weak_type == j.weak_type
    own_math = native.ENABLED and any(
        eqn.primitive.name in native.PRIMS | native.OPAQUE_PRIMS
        for eqn in pyjax.make_jaxpr(fn)(*args).jaxpr.eqns)
    if tier == "off" and not own_math:
      np.testing.assert_array_equal(np.asarray(j), np.asarray(e))
    else:
      tol = 1e-5 if dtype == np.float32 else 1e-12
      np.testing.assert_allclose(np.asarray(j), np.asarray(e), rtol=tol, atol=tol)
