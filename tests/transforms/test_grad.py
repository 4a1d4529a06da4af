"""Differentiation: jvp/vjp/grad/jacobians/custom rules.

Every differentiable primitive family is checked two ways, in float32 and float64:
JVP against central finite differences, and VJP against JVP (<u, J v> == <J^T u, v>).
Values are compared with real JAX where it is installed.
"""
import functools

import numpy as np
import pytest

import pyjax
import pyjax.numpy as jnp
from pyjax import lax
from pyjax._src import api_ad
from pyjax._src import core
from pyjax._src.avals import ShapedArray
from pyjax._src.interpreters import ad

jvp, vjp, grad, value_and_grad = api_ad.jvp, api_ad.vjp, api_ad.grad, api_ad.value_and_grad
jacfwd, jacrev, jacobian, hessian, linearize = api_ad.jacfwd, api_ad.jacrev, api_ad.jacobian, api_ad.hessian, api_ad.linearize
custom_jvp, custom_vjp, stop_gradient = api_ad.custom_jvp, api_ad.custom_vjp, api_ad.stop_gradient

f32, f64 = np.float32, np.float64


def _np(x):
  return np.asarray(x)


def _tols(dt):
  return (dict(eps=1e-3, rtol=3e-2, atol=3e-2) if dt == np.float32
          else dict(eps=1e-6, rtol=1e-5, atol=1e-6))


def _tree_rand(rng, args, dt):
  return [rng.standard_normal(np.shape(a)).astype(dt) for a in args]


def _inner(a, b):
  a = [np.asarray(x, np.float64).ravel() for x in a]
  b = [np.asarray(x, np.float64).ravel() for x in b]
  return sum(float(np.dot(x, y)) for x, y in zip(a, b))


def check_grads(f, args, dt, seed=0, modes=("fwd", "rev"), rev_tol=None):
  """JVP vs central finite differences; VJP vs JVP."""
  rng = np.random.default_rng(seed)
  args = [np.asarray(a, dt) for a in args]
  tol = _tols(dt)
  v = _tree_rand(rng, args, dt)
  out, tout = jvp(f, tuple(args), tuple(v))
  outs = out if isinstance(out, (tuple, list)) else [out]
  touts = tout if isinstance(tout, (tuple, list)) else [tout]
  if "fwd" in modes:
    eps = tol["eps"]
    plus = f(*[jnp.asarray(a + eps * t) for a, t in zip(args, v)])
    minus = f(*[jnp.asarray(a - eps * t) for a, t in zip(args, v)])
    plus = plus if isinstance(plus, (tuple, list)) else [plus]
    minus = minus if isinstance(minus, (tuple, list)) else [minus]
    for p, m, t in zip(plus, minus, touts):
      fd = (np.asarray(p, np.float64) - np.asarray(m, np.float64)) / (2 * eps)
      np.testing.assert_allclose(np.asarray(t, np.float64), fd, rtol=tol["rtol"],
                                 atol=tol["atol"])
  if "rev" in modes:
    out2, f_vjp = vjp(f, *args)
    u = [rng.standard_normal(np.shape(o)).astype(np.asarray(o).dtype) for o in outs]
    cts = f_vjp(type(out2)(u) if isinstance(out2, (tuple, list)) else u[0])
    lhs = _inner(u, touts)
    rhs = _inner(cts, v)
    scale = max(1.0, abs(lhs), abs(rhs))
    if rev_tol is None:
      rev_tol = 1e-3 if dt == np.float32 else 1e-9
    assert abs(lhs - rhs) <= rev_tol * scale, (lhs, rhs)
    for c, a in zip(cts, args):
      assert np.asarray(c).shape == a.shape and np.asarray(c).dtype == a.dtype


# --- the seed examples ------------------------------------------------------------------
def sum_logistic(x):
  return jnp.sum(1.0 / (1.0 + jnp.exp(-x)))


def test_grad_sum_logistic():
  g = grad(sum_logistic)(jnp.arange(3.))
  np.testing.assert_allclose(_np(g), [0.25, 0.19661197, 0.10499357], rtol=1e-6)
  assert g.dtype == np.float32 and g.shape == (3,) and not g.weak_type


def test_third_derivative():
  d3 = grad(grad(grad(sum_logistic)))(1.0)
  np.testing.assert_allclose(float(d3), -0.0353256, rtol=1e-5)
  from pyjax import jit
  d3j = grad(jit(grad(jit(grad(sum_logistic)))))(1.0)   # the seeds' nesting
  np.testing.assert_allclose(float(d3j), -0.0353256, rtol=1e-5)


def test_jacobian_exp_and_hessian():
  x = jnp.arange(3.)
  np.testing.assert_allclose(_np(jacobian(jnp.exp)(x)), np.diag(np.exp(np.arange(3.))), rtol=1e-6)
  np.testing.assert_allclose(_np(jacfwd(jnp.exp)(x)), np.diag(np.exp(np.arange(3.))), rtol=1e-6)
  h = hessian(lambda x: jnp.sum(x ** 3))(x)
  np.testing.assert_allclose(_np(h), np.diag(6 * np.arange(3.)), rtol=1e-6)


def test_against_jax_values(jax):
  jjnp = jax.numpy

  def f(np_, x, y):
    return np_.sum(np_.tanh(x) * y ** 2 + np_.sin(x * y)) / (1.0 + np_.sum(x ** 2))
  x = np.linspace(-1, 1, 5).astype(np.float32)
  y = np.linspace(0.5, 2, 5).astype(np.float32)
  ours = grad(lambda a, b: f(jnp, a, b), argnums=(0, 1))(x, y)
  ref = jax.grad(lambda a, b: f(jjnp, a, b), argnums=(0, 1))(x, y)
  for o, r in zip(ours, ref):
    np.testing.assert_allclose(_np(o), np.asarray(r), rtol=2e-5, atol=1e-6)
  ours_h = hessian(lambda a: f(jnp, a, y))(x)
  ref_h = jax.hessian(lambda a: f(jjnp, a, y))(x)
  np.testing.assert_allclose(_np(ours_h), np.asarray(ref_h), rtol=2e-4, atol=1e-5)


# --- elementwise ------------------------------------------------------------------------
_UNARY = [
    ("neg", lax.neg, (-2, 2)), ("exp", lax.exp, (-2, 2)), ("exp2", lax.exp2, (-2, 2)),
    ("log", lax.log, (0.5, 3)), ("expm1", lax.expm1, (-2, 2)), ("log1p", lax.log1p, (-0.5, 2)),
    ("tanh", lax.tanh, (-2, 2)), ("logistic", lax.logistic, (-3, 3)), ("sin", lax.sin, (-3, 3)),
    ("cos", lax.cos, (-3, 3)), ("tan", lax.tan, (-1, 1)), ("asin", lax.asin, (-0.8, 0.8)),
    ("acos", lax.acos, (-0.8, 0.8)), ("atan", lax.atan, (-2, 2)), ("sinh", lax.sinh, (-2, 2)),
    ("cosh", lax.cosh, (-2, 2)), ("asinh", lax.asinh, (-2, 2)), ("acosh", lax.acosh, (1.2, 3)),
    ("atanh", lax.atanh, (-0.8, 0.8)), ("sqrt", lax.sqrt, (0.5, 3)), ("rsqrt", lax.rsqrt, (0.5, 3)),
    ("cbrt", lax.cbrt, (0.5, 3)), ("square", lax.square, (-2, 2)), ("abs", lax.abs, (0.1, 2)),
    ("erf", lax.erf, (-2, 2)), ("erfc", lax.erfc, (-2, 2)), ("erf_inv", lax.erf_inv, (-0.8, 0.8)),
    ("lgamma", lax.lgamma, (0.5, 3)), ("digamma", lax.digamma, (0.5, 3)),
    ("bessel_i0e", lax.bessel_i0e, (-2, 2)), ("bessel_i1e", lax.bessel_i1e, (-2, 2)),
    ("integer_pow3", lambda x: lax.integer_pow(x, 3), (-2, 2)),
    ("integer_pow-2", lambda x: lax.integer_pow(x, -2), (0.5, 2)),
    ("reciprocal", lax.reciprocal, (0.5, 2)),
]


@pytest.mark.parametrize("name,fn,dom", _UNARY, ids=[u[0] for u in _UNARY])
def test_unary_grads(name, fn, dom, dtype):
  x = np.linspace(dom[0], dom[1], 7)
  check_grads(fn, [x], dtype)


_BINARY = [
    ("add", lax.add, (-2, 2), (-2, 2)), ("sub", lax.sub, (-2, 2), (-2, 2)),
    ("mul", lax.mul, (-2, 2), (-2, 2)), ("div", lax.div, (-2, 2), (0.5, 2)),
    ("max", lax.max, (-2, 2), (-1.5, 1.7)), ("min", lax.min, (-2, 2), (-1.5, 1.7)),
    ("atan2", lax.atan2, (-2, 2), (0.5, 2)), ("pow", lax.pow, (0.5, 2), (-2, 2)),
    ("rem", lax.rem, (2.1, 5.3), (0.7, 1.9)),
    ("igamma", lax.igamma, (0.5, 3), (0.5, 3)),
]


@pytest.mark.parametrize("name,fn,d1,d2", _BINARY, ids=[b[0] for b in _BINARY])
def test_binary_grads(name, fn, d1, d2, dtype):
  x = np.linspace(d1[0], d1[1], 6)
  y = np.linspace(d2[0], d2[1], 6)[::-1].copy()
  modes = ("rev",) if name == "igamma" else ("fwd", "rev")
  if name == "igamma":  # only the x derivative is checked against finite differences
    check_grads(lambda b: fn(x.astype(dtype), b), [y], dtype)
  else:
    check_grads(fn, [x, y], dtype, modes=modes)


def test_scalar_broadcasting_operands(dtype):
  x = np.linspace(-1, 1, 5)
  check_grads(lambda a, s: lax.mul(a, s), [x, np.array(1.5)], dtype)
  check_grads(lambda a, s: lax.add(s, a), [x, np.array(1.5)], dtype)
  check_grads(lambda a, s: lax.div(s, a + 3), [x, np.array(1.5)], dtype)


def test_select_clamp_convert(dtype):
  x = np.linspace(-2, 2, 7)
  y = np.linspace(1, 3, 7)
  check_grads(lambda a, b: lax.select(a > 0, a * b, b), [x + 0.05, y], dtype)
  check_grads(lambda a: lax.clamp(dtype(-1.0), a, dtype(1.0)), [x + 0.05], dtype)
  check_grads(lambda lo, a: lax.clamp(lo, a, dtype(1.5)), [np.array(-0.5), x + 0.05], dtype)
  # rounding makes finite differences meaningless here: check VJP against JVP only
  check_grads(lambda a: lax.convert_element_type(a, np.float16).astype(dtype) * a, [x], dtype,
              modes=("rev",), rev_tol=1e-2)
  check_grads(lambda a: lax.reduce_precision(a, 8, 7) * 2, [x], dtype, modes=("rev",),
              rev_tol=3e-2)


def test_complex_functions():
  x = np.array([0.5, -1.0, 2.0], np.float32)
  y = np.array([1.5, 0.3, -0.7], np.float32)

  def f(a, b):
    z = lax.complex(a, b)
    w = z * z + lax.conj(z) * 2
    return lax.real(w) + lax.imag(w) * 3 + lax.abs(z)
  check_grads(f, [x, y], np.float32)


def test_holomorphic_grad(jax):
  z = np.complex64(1.0 + 2.0j)
  ours = grad(lambda z: z * z + jnp.sin(z), holomorphic=True)(z)
  ref = jax.grad(lambda z: z * z + jax.numpy.sin(z), holomorphic=True)(z)
  np.testing.assert_allclose(complex(ours), complex(ref), rtol=1e-5)
  assert ours.dtype == np.complex64


# --- structural -------------------------------------------------------------------------
def _w(shape, seed=1):
  return np.random.default_rng(seed).standard_normal(shape)


def test_structural_grads(dtype):
  x = np.arange(24.).reshape(2, 3, 4) / 10
  w = _w((2, 3, 4)).astype(dtype)
  fns = [
      lambda a: lax.broadcast_in_dim(a, (5, 2, 3, 4), (1, 2, 3)) * 1.5,
      lambda a: lax.broadcast_in_dim(a[:, :1], (2, 3, 3, 4), (0, 2, 3)),
      lambda a: lax.reshape(a, (4, 6)),
      lambda a: lax.reshape(a, (6, 4), dimensions=(2, 0, 1)),
      lambda a: lax.transpose(a, (2, 0, 1)),
      lambda a: lax.squeeze(a[:1], (0,)),
      lambda a: lax.expand_dims(a, (0, 3)),
      lambda a: lax.rev(a, (0, 2)),
      lambda a: lax.concatenate([a, a * 2, w], 1),
      lambda a: lax.pad(a, dtype(0.5), [(1, 2, 0), (0, -1, 1), (-1, 0, 2)]),
      lambda a: lax.slice(a, (0, 1, 0), (2, 3, 4)),
      lambda a: lax.slice(a, (0, 0, 1), (2, 3, 4), (1, 2, 2)),
      lambda a: lax.dynamic_slice(a, (1, 1, 2), (1, 2, 2)),
      lambda a: lax.dynamic_slice(a, (jnp.array(1), jnp.array(-1), jnp.array(9)), (1, 2, 2)),
      lambda a: lax.dynamic_update_slice(a, a[:1, :2, :2] * 3, (1, 1, 1)),
      lambda a: a[1, ::-1, 1:3] * a[0, 1:, :2].sum(),
  ]
  for i, fn in enumerate(fns):
    check_grads(fn, [x], dtype, seed=i)


def test_pad_value_and_dus_update(dtype):
  x = np.arange(6.).reshape(2, 3) / 7
  check_grads(lambda a, v: lax.pad(a, v, [(1, 1, 1), (2, -1, 0)]), [x, np.array(0.3)], dtype)
  check_grads(lambda a, u: lax.dynamic_update_slice(a, u, (jnp.array(0), jnp.array(1))),
              [x, np.ones((2, 2)) * 0.2], dtype)


def test_gather_scatter_grads(dtype):
  x = np.arange(20.).reshape(4, 5) / 9
  idx = jnp.array([2, 0, 2, 3])
  fns = [
      lambda a: a[idx],
      lambda a: a[:, idx] * 2,
      lambda a: a[idx, idx],
      lambda a: jnp.take(a, jnp.array([1, 7, -1]), axis=1, mode="fill", fill_value=0.),
      lambda a: a.at[idx].add(a[0] * 3),
      lambda a: a.at[idx, 1].set(a[1, 2] ** 2),
      lambda a: a.at[jnp.array([1, 3]), 1].set(a[1, 2] ** 2),
      lambda a: a.at[idx].multiply(2.0),
      lambda a: a.at[idx].max(a[0] - 1),
      lambda a: a.at[idx, 2].min(jnp.array([0.3, 0.4, 0.5, 0.6], dtype)),
      lambda a: jnp.take_along_axis(a, jnp.array([[0], [2], [1], [4]]), axis=1),
  ]
  for i, fn in enumerate(fns):
    check_grads(fn, [x], dtype, seed=i)


def test_scatter_mul_updates_needs_unique(dtype):
  x = np.arange(4.)
  with pytest.raises(NotImplementedError, match="unique_indices=True"):
    grad(lambda u: jnp.sum(jnp.asarray(x, dtype).at[jnp.array([0, 0])].multiply(u)))(
        np.ones(2, dtype))
  check_grads(lambda a, u: a.at[jnp.array([1, 3])].multiply(u, unique_indices=True),
              [x, np.array([2., 3.])], dtype)


# --- reductions -------------------------------------------------------------------------
def test_reduction_grads(dtype):
  x = (np.arange(24.).reshape(2, 3, 4) - 11.5) / 5
  xz = x.copy()
  xz[0, 1, 2] = 0.0
  fns = [
      lambda a: lax.reduce_sum(a, (0, 2)),
      lambda a: lax.reduce_max(a, (1,)),
      lambda a: lax.reduce_min(a, (0, 1, 2)),
      lambda a: lax.reduce_prod(a, (1,)),
      lambda a: jnp.prod(a, axis=(0, 2)),
      lambda a: lax.cumsum(a, 1),
      lambda a: lax.cumsum(a, 2, reverse=True),
      lambda a: lax.cumprod(a, 2),
      lambda a: lax.cumprod(a, 1, reverse=True),
      lambda a: lax.cummax(a, 2),
      lambda a: lax.cummin(a, 0, reverse=True),
      lambda a: lax.cumlogsumexp(a, 2),
      lambda a: jnp.mean(a, axis=1) + jnp.var(a, axis=2).sum(),
      lambda a: lax.reduce(a, dtype(1), lambda u, v: u * v, (1,)),
      lambda a: lax.reduce((a, a * 2), (dtype(0), dtype(0)),
                           lambda u, v: (u[0] + v[0], lax.max(u[1], v[1])), (0, 2))[1],
      lambda a: jnp.sqrt(jnp.sum(a.reshape(6, 4) ** 2, axis=1)),
  ]
  for i, fn in enumerate(fns):
    check_grads(fn, [x], dtype, seed=i)
  check_grads(lambda a: lax.reduce_prod(a, (1, 2)), [xz], dtype)
  check_grads(lambda a: lax.cumprod(a, 1), [xz], dtype)


def test_reduce_max_ties_split_evenly():
  g = grad(lambda a: lax.reduce_max(a, (0,)))(jnp.array([1., 0., 2., 2.]))
  np.testing.assert_array_equal(_np(g), [0, 0, 0.5, 0.5])
  g = grad(lambda a: jnp.maximum(a, 1.0).sum())(jnp.array([1., 0., 2.]))
  np.testing.assert_array_equal(_np(g), [0.5, 0, 1])


def test_reduction_zero_products_match_jax(jax):
  x = np.array([1., 0., 2., 2.], np.float32)
  np.testing.assert_allclose(_np(grad(lambda a: lax.reduce_prod(a, (0,)))(x)),
                             np.asarray(jax.grad(lambda a: jax.lax.reduce_prod(a, (0,)))(x)))
  np.testing.assert_allclose(_np(grad(lambda a: lax.cumprod(a).sum())(x)),
                             np.asarray(jax.grad(lambda a: jax.lax.cumprod(a).sum())(x)))
  np.testing.assert_allclose(_np(grad(lambda a: lax.cumlogsumexp(a).sum())(x)),
                             np.asarray(jax.grad(lambda a: jax.lax.cumlogsumexp(a).sum())(x)),
                             rtol=1e-6)


# --- windowed ---------------------------------------------------------------------------
def test_windowed_grads(dtype):
  x = np.random.default_rng(3).permutation(30).reshape(5, 6).astype(np.float64) / 7
  fns = [
      lambda a: lax.reduce_window(a, dtype(0), lax.add, (2, 3), (1, 2), "VALID"),
      lambda a: lax.reduce_window(a, dtype(0), lax.add, (2, 2), (2, 1), ((1, 0), (0, 2))),
      lambda a: lax.reduce_window(a, dtype(0), lax.add, (2, 2), (1, 1), "SAME",
                                  base_dilation=(2, 1), window_dilation=(1, 2)),
      lambda a: lax.reduce_window(a, -jnp.inf, lax.max, (2, 3), (1, 2), "VALID"),
      lambda a: lax.reduce_window(a, -jnp.inf, lax.max, (3, 3), (2, 2), "SAME"),
      lambda a: lax.reduce_window(a, jnp.inf, lax.min, (2, 2), (1, 1), ((1, 1), (0, 1))),
  ]
  for i, fn in enumerate(fns):
    check_grads(fn, [x], dtype, seed=i)


def test_maxpool_grad_matches_jax(jax):
  x = np.array([[1., 3., 3., 0.], [2., 5., 1., 5.], [0., 1., 2., 2.]], np.float32)

  def f(lax_, a):
    return (lax_.reduce_window(a, -np.inf, lax_.max, (2, 2), (1, 1), "SAME") ** 2).sum()
  np.testing.assert_allclose(_np(grad(functools.partial(f, lax))(x)),
                             np.asarray(jax.grad(functools.partial(f, jax.lax))(x)))


# --- contractions -----------------------------------------------------------------------
def test_dot_general_grads(dtype):
  a = _w((2, 3, 4), 1)
  b = _w((2, 4, 5), 2)
  check_grads(lambda x, y: lax.dot_general(x, y, (((2,), (1,)), ((0,), (0,)))), [a, b], dtype)
  check_grads(lambda x, y: lax.dot_general(x, y, (((1, 2), (0, 1)), ((), ()))),
              [_w((3, 2, 4)), _w((2, 4, 5))], dtype)
  check_grads(lambda x, y: lax.dot_general(x, y, (((0,), (2,)), ((2,), (0,)))),
              [_w((3, 2, 4)), _w((4, 5, 3))], dtype)
  check_grads(lambda x, y: x @ y, [_w((4,)), _w((4, 3))], dtype)
  check_grads(lambda x, y: jnp.einsum("ij,jk,k->i", x, y, x[0]), [_w((3, 3)), _w((3, 3))], dtype)


_CONVS = [
    dict(window_strides=(1, 1), padding="VALID"),
    dict(window_strides=(2, 1), padding=((1, 2), (0, 1))),
    dict(window_strides=(1, 2), padding="SAME", rhs_dilation=(2, 1)),
    dict(window_strides=(1, 1), padding=((1, 1), (2, 0)), lhs_dilation=(2, 1)),
    dict(window_strides=(1, 1), padding="VALID", feature_group_count=2),
    dict(window_strides=(1, 1), padding="VALID", batch_group_count=2),
    dict(window_strides=(2, 2), padding="SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")),
]


@pytest.mark.parametrize("kw", _CONVS, ids=[str(i) for i in range(len(_CONVS))])
def test_conv_grads(kw, dtype):
  kw = dict(kw)
  dn = kw.get("dimension_numbers")
  fg, bg = kw.get("feature_group_count", 1), kw.get("batch_group_count", 1)
  lhs_shape = (2 * bg, 4, 6, 5)
  rhs_shape = (2 * fg * bg, 4 // fg, 3, 2)
  if dn is not None:
    lhs_shape = (2, 6, 5, 4)
    rhs_shape = (3, 2, 4, 3)
  check_grads(lambda a, b: lax.conv_general_dilated(a, b, **kw),
              [_w(lhs_shape, 1) / 2, _w(rhs_shape, 2) / 2], dtype)


def test_conv_grad_matches_jax(jax):
  lhs = _w((1, 3, 7, 6), 4).astype(np.float32)
  rhs = _w((4, 3, 3, 2), 5).astype(np.float32)

  def f(lax_, a, b):
    return (lax_.conv_general_dilated(a, b, (2, 1), ((1, 1), (0, 1)), rhs_dilation=(1, 2)) ** 2).sum()
  ours = grad(functools.partial(f, lax), argnums=(0, 1))(lhs, rhs)
  ref = jax.grad(functools.partial(f, jax.lax), argnums=(0, 1))(lhs, rhs)
  for o, r in zip(ours, ref):
    np.testing.assert_allclose(_np(o), np.asarray(r), rtol=1e-4, atol=1e-4)


# --- sorting ----------------------------------------------------------------------------
def test_sort_grads(dtype):
  x = np.random.default_rng(0).permutation(12).reshape(3, 4) / 5
  check_grads(lambda a: lax.sort(a, dimension=1), [x], dtype)
  check_grads(lambda a: lax.sort(a, dimension=0) * jnp.arange(4.), [x], dtype)
  check_grads(lambda a, b: lax.sort((a, b), num_keys=1)[1], [x, x[::-1] * 2], dtype)
  check_grads(lambda a: jnp.sort(a.ravel())[::2], [x], dtype)
  check_grads(lambda a: lax.top_k(a, 2)[0], [x], dtype)
  v, i = lax.sort_key_val(jnp.array([3, 1, 2]), jnp.array([0.1, 0.2, 0.3]))
  g = grad(lambda y: lax.sort_key_val(jnp.array([3, 1, 2]), y)[1][0])(jnp.array([0.1, 0.2, 0.3]))
  np.testing.assert_array_equal(_np(g), [0, 1, 0])


def test_argmax_and_comparisons_have_no_tangent():
  x = jnp.array([1., 3., 2.])
  g = grad(lambda a: a[jnp.argmax(a)] * 2)(x)
  np.testing.assert_array_equal(_np(g), [0, 2, 0])
  y, t = jvp(lambda a: a > 1, (x,), (jnp.ones(3),))
  assert t.dtype == ad.float0 and t.shape == (3,)
  y, t = jvp(lambda a: jnp.argsort(a), (x,), (jnp.ones(3),))
  assert t.dtype == ad.float0


# --- API behaviour ----------------------------------------------------------------------
def test_jvp_api():
  y, t = jvp(lambda x, y: x * y + jnp.sin(x), (2., 3.), (1., 0.))
  np.testing.assert_allclose(float(t), 3 + np.cos(2.), rtol=1e-6)
  (a, b), (ta, tb) = jvp(lambda d: (d["x"] ** 2, d["y"]), ({"x": 3., "y": 1.},),
                         ({"x": 1., "y": 2.},))
  assert float(ta) == 6.0 and float(tb) == 2.0
  y, t, aux = jvp(lambda x: (x * 2, x + 1), (1.,), (1.,), has_aux=True)
  assert float(aux) == 2.0 and float(t) == 2.0
  # integer primal: float0 tangents in and out
  y, t = jvp(lambda n: n * 2, (3,), (np.zeros((), ad.float0),))
  assert int(y) == 6 and t.dtype == ad.float0


def test_jvp_api_errors():
  with pytest.raises(TypeError, match="must be tuples or lists; found float and float"):
    jvp(lambda x: x, 1., 1.)
  with pytest.raises(TypeError, match="must have the same tree structure"):
    jvp(lambda x: x, (1.,), [1.])
  with pytest.raises(TypeError, match="Got primal dtype float32 and so expected tangent dtype "
                     "float32, but got tangent dtype int32 instead"):
    jvp(lambda x: x, (1.,), (1,))
  with pytest.raises(ValueError, match="different primal and tangent shapes"):
    jvp(lambda x: x, (1.,), (jnp.ones(2),))
  with pytest.raises(TypeError, match=r"expected tangent dtype \[\('float0', 'V'\)\]"):
    jvp(lambda x: x * 2, (1,), (1.,))


def test_vjp_api():
  y, f_vjp = vjp(lambda x, y: (x * y, jnp.sum(x)), jnp.arange(3.), 2.)
  gx, gy = f_vjp((jnp.ones(3), 1.0))
  np.testing.assert_allclose(_np(gx), [3, 3, 3])
  np.testing.assert_allclose(float(gy), 3.0)
  assert isinstance(f_vjp, pyjax.tree_util.Partial)
  y, f_vjp, aux = vjp(lambda x: (x * 2, {"a": x}), 1., has_aux=True)
  assert float(aux["a"]) == 1.0
  g, = f_vjp(1.0)
  assert float(g) == 2.0
  # integer inputs get float0 cotangents
  _, f_vjp = vjp(lambda x, n: x * n, 2., 3)
  gx, gn = f_vjp(1.0)
  assert float(gx) == 3.0 and gn.dtype == ad.float0


def test_vjp_api_errors():
  _, f_vjp = vjp(lambda x: x, 1.)
  with pytest.raises(ValueError, match=r"unexpected JAX type \(e.g. shape/dtype\) for argument "
                     "to VJP function: got int32\\[\\], but expected float32\\[\\] because the "
                     "corresponding output of the differentiated function had JAX type "
                     "float32\\[\\]"):
    f_vjp(jnp.int32(1))
  with pytest.raises(ValueError, match="got float32\\[2\\], but expected float32\\[\\]"):
    f_vjp(jnp.ones(2))
  with pytest.raises(ValueError, match="unexpected tree structure"):
    f_vjp((1., 1.))
  with pytest.raises(TypeError, match="must be called with a single argument"):
    f_vjp(1., 2.)


def test_grad_api():
  assert float(grad(lambda x, y: x * y, argnums=1)(2., 3.)) == 2.0
  assert float(grad(lambda x, y: x * y, argnums=-1)(2., 3.)) == 2.0
  gx, gy = grad(lambda x, y: x * y ** 2, argnums=(0, 1))(2., 3.)
  assert (float(gx), float(gy)) == (9.0, 12.0)
  g, aux = grad(lambda x: (x ** 2, x + 1), has_aux=True)(3.)
  assert float(g) == 6.0 and float(aux) == 4.0
  (v, aux), g = value_and_grad(lambda x: (x ** 2, "aux"), has_aux=True)(3.)
  assert float(v) == 9.0 and aux == "aux" and float(g) == 6.0
  v, g = value_and_grad(lambda d: d["a"] * d["b"])({"a": 2., "b": 5.})
  assert float(v) == 10.0 and float(g["a"]) == 5.0 and float(g["b"]) == 2.0
  # kwargs are passed through, not differentiated
  assert float(grad(lambda x, *, s: x * s)(2., s=4.)) == 4.0
  # constant output, unused input
  assert float(grad(lambda x: 2.0)(1.)) == 0.0
  assert float(grad(lambda x, y: x * 2, argnums=1)(1., 5.)) == 0.0
  # integer inputs with allow_int: float0 gradients
  g = grad(lambda x, n: x * n, argnums=(0, 1), allow_int=True)(2., 3)
  assert float(g[0]) == 3.0 and g[1].dtype == ad.float0 and g[1].shape == ()
  # weak types follow JAX
  assert grad(lambda x: x * 2.)(3.).weak_type
  assert not grad(lambda x: x * 2.)(jnp.float32(3.)).weak_type


def test_grad_api_errors():
  with pytest.raises(TypeError, match="grad requires real- or complex-valued inputs \\(input "
                     "dtype that is a sub-dtype of np.inexact\\), but got int32. If you want to "
                     "use Boolean- or integer-valued inputs, use vjp or set allow_int to True."):
    grad(lambda x: x * 2)(3)
  with pytest.raises(TypeError, match="Gradient only defined for scalar-output functions. "
                     "Output had shape: \\(3,\\)."):
    grad(lambda x: x)(jnp.ones(3))
  with pytest.raises(TypeError, match="Gradient only defined for scalar-output functions. "
                     "Output was None."):
    grad(lambda x: None)(1.)
  with pytest.raises(TypeError, match="grad requires real-valued outputs \\(output dtype that "
                     "is a sub-dtype of np.floating\\), but got complex64. For holomorphic"):
    grad(lambda x: x * 1j)(1.)
  with pytest.raises(TypeError, match="but got int32. For differentiation of functions with "
                     "integer outputs, use jax.vjp directly."):
    grad(lambda x: x.astype(jnp.int32))(1.)
  with pytest.raises(TypeError, match="grad with holomorphic=True requires inputs with complex "
                     "dtype, but got float32."):
    grad(lambda x: x, holomorphic=True)(1.)
  with pytest.raises(TypeError, match="differentiating with respect to argnums=2 requires at "
                     "least 3 positional arguments to be passed by the caller, but got only 2 "
                     "positional arguments."):
    grad(lambda x, y: x, argnums=2)(1., 2.)
  with pytest.raises(TypeError, match="expected function with aux output to return a "
                     "two-element tuple"):
    grad(lambda x: [x], has_aux=True)(1.)
  with pytest.raises(TypeError, match="Argument 'a' of type <class 'str'> is not a valid JAX "
                     "type."):
    grad(lambda x: x)("a")
  with pytest.raises(TypeError, match="Expected a callable value, got 1"):
    grad(1)


def test_grad_errors_match_jax(jax):
  cases = [
      (lambda g: g(lambda x: x * 2)(3)),
      (lambda g: g(lambda x: x)(jax.numpy.ones(3) if g is jax.grad else jnp.ones(3))),
      (lambda g: g(lambda x: x * 1j)(1.)),
      (lambda g: g(lambda x: x, holomorphic=True)(1.)),
  ]
  for case in cases:
    with pytest.raises(TypeError) as ours:
      case(grad)
    with pytest.raises(TypeError) as ref:
      case(jax.grad)
    assert str(ours.value) == str(ref.value)


def test_linearize():
  y, f_jvp = linearize(lambda x: jnp.sin(x) * x, 2.)
  np.testing.assert_allclose(float(y), np.sin(2.) * 2, rtol=1e-6)
  for t in (1., 0.5, -2.):
    np.testing.assert_allclose(float(f_jvp(t)), t * (np.cos(2.) * 2 + np.sin(2.)), rtol=1e-6)
  with pytest.raises(ValueError, match="linearized function called on tangent values "
                     "inconsistent with the original primal values"):
    f_jvp(jnp.ones(2))


def test_jacobians_pytrees_and_shapes():
  def f(d):
    return {"y": d["a"] * 2, "z": jnp.sum(d["a"] ** 2) + d["b"]}
  x = {"a": jnp.arange(3.), "b": 1.}
  for jac in (jacfwd, jacrev):
    j = jac(f)(x)
    assert j["y"]["a"].shape == (3, 3) and j["y"]["b"].shape == (3,)
    assert j["z"]["a"].shape == (3,) and j["z"]["b"].shape == ()
    np.testing.assert_allclose(_np(j["y"]["a"]), 2 * np.eye(3))
    np.testing.assert_allclose(_np(j["z"]["a"]), [0, 2, 4])
  j = jacrev(lambda x, y: x * y, argnums=(0, 1))(jnp.ones(2), 3.)
  assert isinstance(j, tuple) and j[0].shape == (2, 2) and j[1].shape == (2,)
  assert jacfwd(lambda x: x)(jnp.ones(0)).shape == (0, 0)
  assert jacrev(lambda x: x)(jnp.ones(0)).shape == (0, 0)
  j, aux = jacfwd(lambda x: (x ** 2, "a"), has_aux=True)(jnp.ones(2))
  assert aux == "a" and j.shape == (2, 2)
  h = hessian(lambda x, y: jnp.sum(x ** 2 * y), argnums=(0, 1))(jnp.ones(2), 2.)
  assert h[0][0].shape == (2, 2) and h[0][1].shape == (2,) and h[1][1].shape == ()
  np.testing.assert_allclose(_np(h[0][0]), 4 * np.eye(2))


def test_jacobian_errors():
  with pytest.raises(TypeError, match="jacfwd requires real-valued inputs"):
    jacfwd(lambda x: x)(1)
  with pytest.raises(TypeError, match="jacrev requires real- or complex-valued inputs"):
    jacrev(lambda x: x)(1)
  with pytest.raises(TypeError, match="jacrev requires real-valued outputs"):
    jacrev(lambda x: x * 1j)(1.)
  j = jacfwd(lambda x: x * 1j)(1.)
  assert complex(j) == 1j


def test_stop_gradient():
  assert float(grad(lambda x: x * stop_gradient(x))(3.)) == 3.0
  a, n = stop_gradient((jnp.ones(2), 3))
  assert n == 3 and a.shape == (2,)
  assert float(grad(lambda x: lax.stop_gradient(x * 5) + x)(1.)) == 1.0
  assert float(grad(lambda x: jnp.sum(lax.stop_gradient(jnp.ones(2) * x)) * x)(2.)) == 4.0
  j = core.trace_to_jaxpr(lambda x: [stop_gradient(x)], [ShapedArray((), np.dtype("float32"))])
  assert str(j) == "{ lambda ; a:f32[]. let b:f32[] = stop_gradient a in (b,) }"


# --- composition ------------------------------------------------------------------------
def test_higher_order_and_nesting():
  f = lambda x: jnp.sin(x) * x ** 2
  x = 0.7
  d1 = lambda x: np.cos(x) * x ** 2 + 2 * x * np.sin(x)
  d2 = lambda x: -np.sin(x) * x ** 2 + 4 * x * np.cos(x) + 2 * np.sin(x)
  np.testing.assert_allclose(float(grad(grad(f))(x)), d2(x), rtol=1e-5)
  _, t = jvp(grad(f), (x,), (1.,))
  np.testing.assert_allclose(float(t), d2(x), rtol=1e-5)
  np.testing.assert_allclose(float(grad(lambda x: jvp(f, (x,), (1.,))[1])(x)), d2(x), rtol=1e-5)
  np.testing.assert_allclose(float(jacfwd(jacrev(f))(x)), d2(x), rtol=1e-5)
  np.testing.assert_allclose(float(jacrev(jacfwd(f))(x)), d2(x), rtol=1e-5)
  np.testing.assert_allclose(float(grad(f)(x)), d1(x), rtol=1e-5)


def test_perturbation_confusion():
  # d/dx (x * d/dy (x + y)) = 1, not 2
  f = lambda x: x * grad(lambda y: x + y)(1.)
  assert float(grad(f)(1.)) == 1.0
  g = lambda x: jvp(lambda y: x * y, (2.,), (1.,))[1]
  assert float(grad(g)(3.)) == 1.0


def test_python_control_flow_under_grad():
  def f(x):
    return x ** 2 if x > 0 else -x * 3
  assert float(grad(f)(2.)) == 4.0
  assert float(grad(f)(-2.)) == -3.0
  seen = []
  grad(lambda x: (seen.append(repr(x)), x * 2)[1])(1.)
  assert seen[0].startswith("GradTracer(primal=1.0")
  with pytest.raises(pyjax.errors.ConcretizationTypeError):
    grad(lambda x: float(x) * x)(1.)


def test_grad_under_staging():
  def sl(x):
    return jnp.sum(1.0 / (1.0 + jnp.exp(-x)))
  j = core.trace_to_jaxpr(lambda x: [grad(sl)(x)], [ShapedArray((3,), np.dtype("float32"))])
  text = str(j)
  assert "integer_pow[y=-2]" in text and "reduce_sum" in text
  out = core.eval_jaxpr(j.jaxpr, j.consts, jnp.arange(3.))[0]
  np.testing.assert_allclose(_np(out), [0.25, 0.19661197, 0.10499357], rtol=1e-6)


def test_grad_jaxpr_matches_jax(jax):
  f = lambda np_: (lambda x: np_.sin(x) * x)
  ours = str(core.trace_to_jaxpr(lambda x: [grad(f(jnp))(x)], [ShapedArray((), np.dtype("float32"))]))
  ref = str(jax.make_jaxpr(jax.grad(f(jax.numpy)))(1.))
  assert ours == ref


def test_escaped_tracer():
  leaked = []
  grad(lambda x: (leaked.append(x), x)[1])(1.)
  with pytest.raises(pyjax.errors.UnexpectedTracerError):
    jnp.sin(leaked[0]) + 1


# --- custom_jvp / custom_vjp (examples from JAX's documentation) ------------------------
def test_custom_jvp_docs_example():
  @custom_jvp
  def f(x, y):
    return jnp.sin(x) * y

  @f.defjvp
  def f_jvp(primals, tangents):
    x, y = primals
    x_dot, y_dot = tangents
    primal_out = f(x, y)
    tangent_out = jnp.cos(x) * x_dot * y + jnp.sin(x) * y_dot
    return primal_out, tangent_out

  np.testing.assert_allclose(float(f(2., 3.)), 2.7278922, rtol=1e-6)
  y, y_dot = jvp(f, (2., 3.), (1., 0.))
  np.testing.assert_allclose([float(y), float(y_dot)], [2.7278922, -1.2484405], rtol=1e-6)
  np.testing.assert_allclose(float(grad(f)(2., 3.)), -1.2484405, rtol=1e-6)


def test_custom_jvp_log1pexp():
  @custom_jvp
  def log1pexp(x):
    return jnp.log(1. + jnp.exp(x))

  @log1pexp.defjvp
  def log1pexp_jvp(primals, tangents):
    x, = primals
    x_dot, = tangents
    ans = log1pexp(x)
    ans_dot = (1 - 1 / (1 + jnp.exp(x))) * x_dot
    return ans, ans_dot

  assert float(grad(log1pexp)(100.)) == 1.0
  np.testing.assert_allclose(float(grad(grad(log1pexp))(0.)), 0.25, rtol=1e-6)
  j = core.trace_to_jaxpr(lambda x: [log1pexp(x)], [ShapedArray((), np.dtype("float32"))])
  assert "custom_jvp_call" in str(j) and "jvp=log1pexp_jvp" in str(j)
  # the staged equation differentiates through its rule too
  out = grad(lambda x: core.eval_jaxpr(j.jaxpr, j.consts, x)[0])(100.)
  assert float(out) == 1.0


def test_custom_jvp_defjvps_and_nondiff():
  @custom_jvp
  def f(x, y):
    return jnp.sin(x) * y
  f.defjvps(lambda x_dot, primal_out, x, y: jnp.cos(x) * x_dot * y,
            lambda y_dot, primal_out, x, y: jnp.sin(x) * y_dot)
  gx, gy = grad(f, argnums=(0, 1))(2., 3.)
  np.testing.assert_allclose([float(gx), float(gy)], [3 * np.cos(2.), np.sin(2.)], rtol=1e-6)

  @functools.partial(custom_jvp, nondiff_argnums=(0,))
  def app(f, x):
    return f(x)

  def app_jvp(f, primals, tangents):
    x, = primals
    x_dot, = tangents
    return f(x), 2. * x_dot
  app.defjvp(app_jvp)
  assert float(app(lambda x: x ** 3, 3.)) == 27.0
  assert float(grad(app, 1)(lambda x: x ** 3, 3.)) == 2.0
  assert float(f(1., y=2.)) == float(jnp.sin(1.) * 2)


def test_custom_jvp_errors():
  @custom_jvp
  def f(x):
    return x
  with pytest.raises(AttributeError, match="No JVP defined for custom_jvp function f using "
                     "defjvp."):
    f(1.)
  f.defjvp(lambda p, t: (p[0], t[0], 1))
  with pytest.raises(TypeError, match="Custom JVP rule <lambda> for function f must produce a "
                     "pair \\(list or tuple of length two\\)"):
    jvp(f, (1.,), (1.,))
  f.defjvp(lambda p, t: (p[0], (t[0],)))
  with pytest.raises(TypeError, match="must produce primal and tangent outputs with equal "
                     "container \\(pytree\\) structures"):
    jvp(f, (1.,), (1.,))
  f.defjvp(lambda p, t: (p[0], jnp.ones(2)))
  with pytest.raises(TypeError, match="Expected float32\\[\\] \\(tangent type of float32\\[\\]\\) "
                     "but got float32\\[2\\]"):
    jvp(f, (1.,), (1.,))


def test_custom_vjp_docs_example():
  @custom_vjp
  def f(x, y):
    return jnp.sin(x) * y

  def f_fwd(x, y):
    return f(x, y), (jnp.cos(x), jnp.sin(x), y)

  def f_bwd(res, g):
    cos_x, sin_x, y = res
    return (cos_x * g * y, sin_x * g)

  f.defvjp(f_fwd, f_bwd)
  np.testing.assert_allclose(float(f(2., 3.)), 2.7278922, rtol=1e-6)
  np.testing.assert_allclose(float(grad(f)(2., 3.)), -1.2484405, rtol=1e-6)
  with pytest.raises(TypeError, match="can't apply forward-mode autodiff \\(jvp\\) to a "
                     "custom_vjp function."):
    jvp(f, (2., 3.), (1., 0.))
  with pytest.raises(TypeError, match="can't apply forward-mode autodiff"):
    jacfwd(f)(2., 3.)
  j = core.trace_to_jaxpr(lambda x: [f(x, 3.)], [ShapedArray((), np.dtype("float32"))])
  assert "custom_vjp_call" in str(j) and "fwd=f_fwd" in str(j) and "bwd=f_bwd" in str(j)
  out = grad(lambda x: core.eval_jaxpr(j.jaxpr, j.consts, x)[0])(2.)
  np.testing.assert_allclose(float(out), -1.2484405, rtol=1e-6)


def test_custom_vjp_clip_gradient():
  @functools.partial(custom_vjp, nondiff_argnums=(0, 1))
  def clip_gradient(lo, hi, x):
    return x

  def clip_gradient_fwd(lo, hi, x):
    return x, None

  def clip_gradient_bwd(lo, hi, _, g):
    return (jnp.clip(g, lo, hi),)

  clip_gradient.defvjp(clip_gradient_fwd, clip_gradient_bwd)

  def clip_sin(x):
    return jnp.sin(clip_gradient(-0.75, 0.75, x))
  assert float(grad(clip_sin)(0.)) == 0.75
  assert float(grad(grad(clip_sin))(0.5)) == 0.0  # cos(0.5) > 0.75 is clipped
  np.testing.assert_allclose(float(grad(grad(clip_sin))(1.0)), -np.sin(1.0), rtol=1e-6)


def test_custom_vjp_higher_order_and_hessian():
  @custom_vjp
  def f(x):
    return jnp.sin(x)
  f.defvjp(lambda x: (jnp.sin(x), jnp.cos(x)), lambda c, g: (c * g,))
  np.testing.assert_allclose(float(hessian(f)(1.)), -np.sin(1.), rtol=1e-6)
  np.testing.assert_allclose(float(grad(grad(f))(1.)), -np.sin(1.), rtol=1e-6)
  _, t = jvp(grad(f), (1.,), (1.,))
  np.testing.assert_allclose(float(t), -np.sin(1.), rtol=1e-6)


def test_custom_vjp_errors():
  @custom_vjp
  def g(x, y):
    return x * y
  with pytest.raises(AttributeError, match="No VJP defined for custom_vjp function g using "
                     "defvjp."):
    g(1., 2.)
  g.defvjp(lambda x, y: (x * y, (x, y)), lambda r, c: (c * r[1],))
  with pytest.raises(TypeError, match="Custom VJP bwd rule must produce an output with the same "
                     "container \\(pytree\\) structure as the args tuple of the primal function"):
    grad(g)(1., 2.)
  g.defvjp(lambda x, y: (x * y, (x, y)), lambda r, c: (c * r[1], None))
  assert float(grad(g)(1., 2.)) == 2.0
  g.defvjp(lambda x, y: (x * y, (x, y)), lambda r, c: (c * r[1], jnp.ones(2)))
  with pytest.raises(ValueError, match="at output\\[1\\] the bwd rule produced an output of "
                     "type float32\\[2\\] corresponding to an input of type float32\\[\\], so "
                     "the shapes do not match"):
    grad(g)(1., 2.)
  g.defvjp(lambda x, y: x * y, lambda r, c: (c, c))
  with pytest.raises(TypeError, match="Custom VJP fwd rule <lambda> for function g must produce "
                     "a pair"):
    grad(g)(1., 2.)
  g.defvjp(lambda x, y: (x * y, None), lambda r, c: (c.astype(jnp.float16), c))
  assert grad(g)(1., 2.).dtype == np.float32


def test_custom_jvp_errors_match_jax(jax):
  def make(cj):
    @cj
    def f(x):
      return x
    f.defjvp(lambda p, t: (p[0], jnp.ones(2) if cj is custom_jvp else jax.numpy.ones(2)))
    return f
  with pytest.raises(TypeError) as ours:
    jvp(make(custom_jvp), (1.,), (1.,))
  with pytest.raises(TypeError) as ref:
    jax.jvp(make(jax.custom_jvp), (1.,), (1.,))
  assert str(ours.value) == str(ref.value)


# --- jit ----------------------------------------------------------------------------------
@pytest.fixture
def api():
  return pytest.importorskip("pyjax._src.api")


def test_grad_of_jit_and_jit_of_grad(api):
  f = api.jit(lambda x: jnp.sin(x) * x)
  d1 = lambda x: np.cos(x) * x + np.sin(x)
  d2 = lambda x: -np.sin(x) * x + 2 * np.cos(x)
  np.testing.assert_allclose(float(grad(f)(1.)), d1(1.), rtol=1e-6)
  np.testing.assert_allclose(float(api.jit(grad(f))(1.)), d1(1.), rtol=1e-6)
  np.testing.assert_allclose(float(grad(grad(f))(1.)), d2(1.), rtol=1e-5)
  np.testing.assert_allclose(float(jvp(f, (1.,), (2.,))[1]), 2 * d1(1.), rtol=1e-6)
  np.testing.assert_allclose(float(jvp(grad(f), (1.,), (1.,))[1]), d2(1.), rtol=1e-5)
  np.testing.assert_allclose(float(hessian(f)(1.)), d2(1.), rtol=1e-5)
  np.testing.assert_allclose(float(api.jit(grad(grad(f)))(1.)), d2(1.), rtol=1e-5)
  # a jitted function closing over a value being differentiated
  g = lambda y: api.jit(lambda x: x * y)(2.)
  assert float(grad(g)(3.)) == 2.0
  # custom rules inside jit
  @custom_vjp
  def h(x):
    return jnp.sin(x)
  h.defvjp(lambda x: (jnp.sin(x), jnp.cos(x)), lambda c, g: (2 * c * g,))
  np.testing.assert_allclose(float(grad(api.jit(h))(1.)), 2 * np.cos(1.), rtol=1e-6)


def test_jit_grad_checks(api, dtype):
  f = api.jit(lambda a, b: jnp.sum(jnp.tanh(a) * b, axis=0))
  check_grads(f, [_w((3, 4)), _w((3, 4), 2)], dtype)
  check_grads(api.jit(grad(lambda a: jnp.sum(jnp.sin(a) ** 2))), [_w((5,))], dtype)


def test_grad_of_jit_jaxpr_matches_jax(api, jax):
  cases = [(lambda np_: (lambda x: np_.sin(x) * x), np.float32(0.5)),
           (lambda np_: (lambda x: np_.sum(np_.tanh(x) ** 2)),
            np.linspace(0.1, 1, 3).astype(np.float32))]
  for mk, x in cases:
    ours = str(api.make_jaxpr(grad(api.jit(mk(jnp))))(x))
    ref = str(jax.make_jaxpr(jax.grad(jax.jit(mk(jax.numpy))))(x))
    assert ours == ref


# --- dtypes, symbolic zeros, empty arrays ------------------------------------------------
@pytest.mark.parametrize("dt", ["float16", "bfloat16", "float32"])
def test_grad_keeps_input_dtype(dt, jax):
  x = np.array([0.5, 1.0, 2.0], dt)
  ours = grad(lambda a: jnp.sum(jnp.sin(a) * a))(x)
  ref = jax.grad(lambda a: jax.numpy.sum(jax.numpy.sin(a) * a))(x)
  assert ours.dtype == ref.dtype
  np.testing.assert_allclose(_np(ours).astype(np.float32), np.asarray(ref).astype(np.float32),
                             rtol=1e-2)


@pytest.mark.parametrize("dt", ["int8", "uint8", "int32", "bool"])
def test_integer_inputs_get_float0(dt):
  n = np.array([1, 0, 1], dt)
  g = grad(lambda a, b: jnp.sum(a * b), argnums=(0, 1), allow_int=True)(jnp.ones(3), n)
  np.testing.assert_array_equal(_np(g[0]), n.astype(np.float32))
  assert g[1].dtype == ad.float0 and g[1].shape == (3,)
  _, t = jvp(lambda b: b * 2, (n,), (np.zeros(3, ad.float0),))
  assert t.dtype == ad.float0


def test_weak_types_match_jax(jax):
  fns = [lambda np_, a: a * 2., lambda np_, a: np_.sin(a), lambda np_, a: a ** 2.5,
         lambda np_, a: np_.maximum(a, 0.5), lambda np_, a: 3.0,
         lambda np_, a: np_.float32(a) * 2]
  for fn in fns:
    for x in (1.0, np.float32(1.0)):
      o = grad(lambda a: fn(jnp, a))(x)
      r = jax.grad(lambda a: fn(jax.numpy, a))(x)
      assert (o.dtype, o.weak_type) == (r.dtype, r.weak_type)


def test_symbolic_zeros():
  seen = []

  @custom_jvp
  def f(x, y):
    return x * y

  def f_jvp(p, t):
    seen.append([type(v) is api_ad.SymbolicZero for v in t])
    x, y = p
    tx, ty = t
    out = 0.
    if type(tx) is not api_ad.SymbolicZero:
      out = out + tx * y
    if type(ty) is not api_ad.SymbolicZero:
      out = out + x * ty
    return f(x, y), out
  f.defjvp(f_jvp, symbolic_zeros=True)
  assert float(grad(f)(2., 3.)) == 3.0
  assert seen[-1] == [False, True]


def test_empty_arrays():
  assert grad(lambda a: jnp.sum(a ** 2))(jnp.ones((0, 3))).shape == (0, 3)
  assert jacfwd(lambda a: a ** 2)(jnp.ones((2, 0))).shape == (2, 0, 2, 0)
  assert jacrev(lambda a: a.sum(0))(jnp.ones((0, 2))).shape == (2, 0, 2)
  check_grads(lambda a: lax.reduce_prod(a, (0,)), [np.ones((0, 2))], np.float32)


def test_ties_and_duplicates_match_jax(jax):
  x = np.array([1., 0., 2., 2., 2., 1., 3., 3.], np.float32)
  w = np.arange(8.).astype(np.float32)
  for fn in (lambda l, a: (l.cummax(a) * w).sum(),
             lambda l, a: (l.cummin(a, reverse=True) * w).sum(),
             lambda l, a: (l.cumprod(a, reverse=True) * w).sum(),
             lambda l, a: (l.sort(a) * w).sum(),
             lambda l, a: l.reduce_window(a, -np.inf, l.max, (3,), (2,), "VALID").sum()):
    np.testing.assert_allclose(_np(grad(functools.partial(fn, lax))(x)),
                               np.asarray(jax.grad(functools.partial(fn, jax.lax))(x)))
  a0 = np.arange(12.).reshape(3, 4).astype(np.float32) / 5
  u = np.arange(12.).reshape(3, 4).astype(np.float32) / 7
  for fn in (lambda np_, a, b: (a.at[np_.array([0, 0, 2])].set(b) ** 2).sum(),
             lambda np_, a, b: (a.at[np_.array([0, 0, 2])].max(b * 0 + 1.0) ** 2).sum(),
             lambda np_, a, b: (a.at[np_.array([0, 5, -1])].add(b) ** 2).sum(),
             lambda np_, a, b: (a.at[np_.array([0, 5, -1])].get(mode="fill", fill_value=0.)
                                * b).sum()):
    ours = grad(functools.partial(fn, jnp), argnums=(0, 1))(a0, u)
    ref = jax.grad(functools.partial(fn, jax.numpy), argnums=(0, 1))(a0, u)
    for o, r in zip(ours, ref):
      np.testing.assert_allclose(_np(o), np.asarray(r), atol=1e-6)


def test_complex_conventions_match_jax(jax):
  z = np.array([0.3 + 0.4j, -1.5 + 0.2j, 2.0 - 1.0j], np.complex64)
  ct = np.array([1.0 + 2.0j, -0.5 + 0.1j, 0.3 - 1.0j], np.complex64)
  fs = [lambda np_, l, a: a * np_.conj(a) + np_.real(a) * 2j,
        lambda np_, l, a: np_.abs(a) * a,
        lambda np_, l, a: np_.exp(np_.imag(a)) + l.complex(np_.real(a), np_.abs(a)),
        lambda np_, l, a: np_.sum(a ** 3) * a / (a + 3)]
  for f in fs:
    o = vjp(lambda a: f(jnp, lax, a), z)[1](ct)[0]
    r = jax.vjp(lambda a: f(jax.numpy, jax.lax, a), z)[1](ct)[0]
    np.testing.assert_allclose(_np(o), np.asarray(r), rtol=1e-5, atol=1e-6)
  zr = np.array([0.3, -1.5, 2.0], np.float32)
  o = vjp(lambda a: a * (1 + 2j), zr)[1](ct)[0]
  assert o.dtype == np.float32
  np.testing.assert_allclose(_np(o), np.asarray(jax.vjp(lambda a: a * (1 + 2j), zr)[1](ct)[0]))
  for name in ("exp", "log", "tan", "acosh", "atanh", "sqrt", "logistic"):
    for w in z:
      o = grad(getattr(lax, name), holomorphic=True)(w)
      r = jax.grad(getattr(jax.lax, name), holomorphic=True)(w)
      np.testing.assert_allclose(complex(o), complex(r), rtol=1e-4, atol=1e-5)


# --- closure_convert and jax.custom_derivatives -------------------------------------------------
def _closure_convert_prog(jax, jnp):
  def apply(f, x):
    f_conv, consts = jax.closure_convert(f, x)
    return _apply(f_conv, x, *consts)

  @functools.partial(jax.custom_vjp, nondiff_argnums=(0,))
  def _apply(f, x, *consts):
    return f(x, *consts)

  def _fwd(f, x, *consts):
    return f(x, *consts), (x, consts)

  def _bwd(f, res, g):
    x, consts = res
    _, vjp_fn = jax.vjp(f, x, *consts)
    return vjp_fn(g)
  _apply.defvjp(_fwd, _bwd)

  def loss(w, x):
    return apply(lambda y: jnp.sin(w * y) + 1.0, x)
  out = [jax.grad(loss, argnums=(0, 1))(2.0, 3.0), jax.jit(jax.grad(loss))(2.0, 3.0)]
  c = jnp.ones(3)
  fc, consts = jax.closure_convert(lambda x: x * c, jnp.ones(3))
  out += [len(consts), fc(jnp.arange(3.))]

  def outer(w):
    fc, consts = jax.closure_convert(lambda x: x * w + c, 1.0)
    return len(consts), fc(2.0, *consts)
  out += [outer(3.0), jax.grad(lambda w: outer(w)[1].sum())(3.0)]
  with pytest.raises(TypeError) as e:
    fc(jnp.ones(3), jnp.ones(3))
  out.append(str(e.value))
  return out


def test_closure_convert_matches_jax():
  jax = pytest.importorskip("jax")
  import jax.numpy as jjnp
  ours = _closure_convert_prog(pyjax, jnp)
  theirs = _closure_convert_prog(jax, jjnp)
  assert repr(ours) == repr(theirs)
  assert ours[-1].startswith("The inputs to the closure produced by closure_convert must have "
                             "the same Pytree structure")


def test_closure_convert_hoists_only_perturbed_values():
  def f(w, n):
    g, consts = pyjax.closure_convert(lambda x: x * w + n, 1.0)
    return consts
  consts = []
  pyjax.grad(lambda w: (consts.append(len(f(w, 2))), w)[1])(1.0)
  assert consts == [1]
  ints = []
  pyjax.jit(lambda w, n: (ints.append(len(f(w, n))), w)[1])(1.0, 3)
  assert ints == [1]        # the integer n stays closed over; the float w is hoisted


def test_custom_derivatives_module():
  from pyjax import custom_derivatives as cd
  jax = pytest.importorskip("jax")
  import jax.custom_derivatives as jcd
  for name in ["custom_jvp", "custom_vjp", "custom_jvp_call_p", "custom_vjp_call_p",
               "SymbolicZero", "closure_convert", "zero_from_primal", "custom_gradient"]:
    assert hasattr(cd, name) and hasattr(jcd, name)
  assert cd.custom_jvp is pyjax.custom_jvp and cd.closure_convert is pyjax.closure_convert
  z = cd.zero_from_primal({"a": jnp.ones(2), "b": 1}, symbolic_zeros=True)
  assert isinstance(z["a"], cd.SymbolicZero) and z["a"].shape == (2,)
  assert z["a"].dtype == np.float32 and z["b"].dtype == ad.float0
  zz = cd.zero_from_primal(jnp.ones(2))
  np.testing.assert_array_equal(np.asarray(zz), [0., 0.])

  @functools.partial(cd.custom_jvp)
  def f(x):
    return x ** 2
  f.defjvps(lambda t, ans, x: 2 * x * t)
  assert float(pyjax.grad(f)(3.0)) == 6.0


# --- derived jaxprs are shared like JAX's (printed once, let-bound) ---------------------------
def _shared_jaxpr_prog(jax, jnp):
  l1 = jax.jit(lambda x: jnp.sin(x) - 1)
  l2 = jax.jit(lambda x: x - 2)
  f = jax.checkpoint(lambda x: jnp.sin(x) * 2)
  progs = [
      lambda x: l1(l1(x)) + l2(l2(x)) + l1(x),
      jax.grad(lambda x: l1(l1(x)) * l2(x)),
      lambda x: jax.jvp(lambda y: l1(l1(y)), (x,), (x,)),
      lambda x: jax.linearize(lambda y: l1(l1(y)), x)[1](x),
      jax.grad(lambda y: l1(l1(y))),
      jax.grad(jax.grad(lambda y: l1(l1(y)))),
      jax.grad(lambda x: f(f(x))),
      lambda x: jax.jvp(lambda y: f(f(y)), (x,), (x,)),
      lambda x: jax.linearize(lambda y: f(f(y)), x)[1](x),
  ]
  return [str(jax.make_jaxpr(p)(1.0)) for p in progs]


def test_derived_jaxprs_are_shared_like_jax():
  jax = pytest.importorskip("jax")
  import jax.numpy as jjnp
  ours = _shared_jaxpr_prog(pyjax, jnp)
  theirs = _shared_jaxpr_prog(jax, jjnp)
  assert any("let lambda" in t for t in theirs) and any("let jaxpr" in t for t in theirs)
  for a, b in zip(ours, theirs):
    assert a == b


def _custom_gradient_prog(jax, jnp):
  @jax.custom_gradient
  def f(x):
    return x ** 2, lambda g: (g * x,)

  @jax.custom_gradient
  def h(x, y):
    return x * y, lambda g: (g * y, g * x * 10)
  return [jax.grad(f)(3.), jax.jit(jax.grad(f))(3.), f(3.), jax.grad(h, argnums=(0, 1))(2., 3.),
          jax.vmap(jax.grad(f))(jnp.arange(3.)), jax.grad(lambda x: jax.grad(f)(x) * x)(2.)]


def test_custom_gradient_matches_jax():
  jax = pytest.importorskip("jax")
  import jax.numpy as jjnp
  assert repr(_custom_gradient_prog(pyjax, jnp)) == repr(_custom_gradient_prog(jax, jjnp))


def _custom_jvp_on_tangent_prog(jax, jnp):
  # a custom_jvp function applied to the tangent inside another JVP rule (an implicit
  # solve): reverse mode transposes the call, so it must not stay a custom_jvp_call
  @jax.custom_jvp
  def solve(A, b):
    return jnp.linalg.solve(A, b)

  @solve.defjvp
  def solve_jvp(primals, tangents):
    A, b = primals
    dA, db = tangents
    x = solve(A, b)
    return x, solve(A, db - dA @ x)

  A = jnp.array([[3., 1.], [1., 2.]])
  b = jnp.array([1., 2.])
  loss = lambda A, b: (solve(A, b) ** 2).sum()
  return [jax.grad(loss, argnums=(0, 1))(A, b), jax.jit(jax.grad(loss, argnums=1))(A, b),
          jax.vjp(lambda b: solve(A, b), b)[1](jnp.array([1., -1.])),
          jax.jvp(lambda b: solve(A, b), (b,), (jnp.ones(2),))[1],
          jax.grad(lambda b: jax.grad(loss, argnums=1)(A, b).sum())(b)]


def test_custom_jvp_applied_to_tangent_in_jvp_rule_transposes():
  ours = _custom_jvp_on_tangent_prog(pyjax, jnp)
  A = np.array([[3., 1.], [1., 2.]])
  b = np.array([1., 2.])
  x = np.linalg.solve(A, b)
  gb = np.linalg.solve(A.T, 2 * x)
  np.testing.assert_allclose(ours[0][1], gb, rtol=1e-5)
  np.testing.assert_allclose(ours[0][0], -np.outer(gb, x), rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(ours[1], gb, rtol=1e-5)
  jax = pytest.importorskip("jax")
  import jax.numpy as jjnp
  theirs = _custom_jvp_on_tangent_prog(jax, jjnp)
  for a, b_ in zip(pyjax.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs)):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b_), rtol=1e-5, atol=1e-6)
    assert a.dtype == b_.dtype


def _jvp_of_jit_in_rule_prog(jax_mod, jnp_mod):
  """A custom_jvp rule that runs ``jax.jvp`` over a jitted function and multiplies its
  primal output by the primal (scipy.special.zeta's rule does this through jnp.cumprod)."""
  inc = jax_mod.jit(lambda a: a + 1.0)

  @jax_mod.custom_jvp
  def f(x):
    return jnp_mod.sin(x)

  f.defjvp(lambda p, t: jax_mod.jvp(lambda a: inc(a) * a, p, t))
  x = jnp_mod.float32(2.0)
  return (jax_mod.grad(f)(x), jax_mod.grad(lambda x: f(x) * x)(x),
          jax_mod.jit(jax_mod.grad(f))(x))


def test_jvp_of_jit_inside_custom_jvp_rule_under_grad():
  """Under linearize, the rule's jit of primal and tangent splits: its primal output is a
  known value (it raised 'Linearization of mul with both operands linear')."""
  ours = _jvp_of_jit_in_rule_prog(pyjax, jnp)
  np.testing.assert_allclose([float(v) for v in ours], [5.0, 5.0 * 2 + 6.0, 5.0])
  jax = pytest.importorskip("jax")
  theirs = _jvp_of_jit_in_rule_prog(jax, jax.numpy)
  for a, b in zip(ours, theirs):
    assert a.dtype == b.dtype and a.aval.weak_type == b.aval.weak_type
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6)
