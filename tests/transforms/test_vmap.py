"""vmap: batching rules of every primitive, in_axes/out_axes, nesting and composition
with grad/jit, collectives over named axes, custom_jvp/custom_vjp, errors.

Every batching rule is checked against a Python loop over the batch (vmap(f)(xs) equals
the stacked per-example results, with the same dtype and weak type) for several
in_axes/out_axes; error messages, jaxprs and values are compared with real JAX where it
is installed (JAX's texts are also recorded here for runs without it).
"""
import gc
import sys

import numpy as np
import pytest

import pyjax
import pyjax.numpy as jnp
from pyjax import lax
from pyjax._src import core
from pyjax._src.interpreters import batching

vmap, grad, jit = pyjax.vmap, pyjax.grad, pyjax.jit


# --- the loop oracle --------------------------------------------------------------------
def _take(a, i, ax):
  return jnp.asarray(np.take(np.asarray(a), i, axis=ax))


def _loop(f, args, in_axes, out_axes=0):
  """Stack f over the batch: the reference for vmap(f, in_axes, out_axes)(*args)."""
  axes = in_axes if isinstance(in_axes, (tuple, list)) else [in_axes] * len(args)
  n = next(np.shape(a)[ax] for a, ax in zip(args, axes) if ax is not None)
  outs = [f(*[a if ax is None else _take(a, i, ax) for a, ax in zip(args, axes)])
          for i in range(n)]
  return outs


def check(f, args, in_axes=0, out_axes=0, rtol=1e-5, atol=1e-6):
  got = vmap(f, in_axes=in_axes, out_axes=out_axes)(*args)
  per = _loop(f, args, in_axes)
  got_l = got if isinstance(got, (list, tuple)) else [got]
  per_l = [p if isinstance(p, (list, tuple)) else [p] for p in per]
  oaxes = out_axes if isinstance(out_axes, (list, tuple)) else [out_axes] * len(got_l)
  for k, (g, oa) in enumerate(zip(got_l, oaxes)):
    ex = np.stack([np.asarray(p[k]) for p in per_l], axis=oa)
    g_np = np.asarray(g)
    assert g_np.shape == ex.shape, (g_np.shape, ex.shape)
    assert g.dtype == per_l[0][k].dtype, (g.dtype, per_l[0][k].dtype)
    assert g.weak_type == per_l[0][k].weak_type
    if g_np.dtype.kind in "fc":
      np.testing.assert_allclose(g_np, ex, rtol=rtol, atol=atol)
    else:
      np.testing.assert_array_equal(g_np, ex)
  return got


def _axes_variants(args):
  """in_axes to try: all 0, all last, and each argument unbatched in turn (as a tuple)."""
  nd = [np.ndim(a) for a in args]
  variants = [tuple(0 for _ in args), tuple(-1 for _ in args)]
  if len(args) > 1:
    for i in range(len(args)):
      variants.append(tuple(None if j == i else 0 for j in range(len(args))))
  return [v for v in variants if all(d >= 1 or ax is None for d, ax in zip(nd, v))]


def _batched(x, b=3, axis=0, seed=0):
  """``b`` different examples of ``x`` stacked along ``axis``."""
  rng = np.random.default_rng(seed)
  x = np.asarray(x)
  if x.dtype.kind == "f":
    xs = [x + rng.uniform(-0.1, 0.1, x.shape).astype(x.dtype) for _ in range(b)]
  elif x.dtype.kind in "iu":
    xs = [np.clip(x + rng.integers(-1, 2, x.shape), np.iinfo(x.dtype).min,
                  np.iinfo(x.dtype).max).astype(x.dtype) for _ in range(b)]
  elif x.dtype.kind == "c":
    xs = [x + (rng.uniform(-0.1, 0.1, x.shape) * 1j).astype(x.dtype) for _ in range(b)]
  else:
    xs = [rng.integers(0, 2, x.shape).astype(x.dtype) for _ in range(b)]
  return np.stack(xs, axis=axis)


def check_all_axes(f, examples, rtol=1e-5, atol=1e-6, unbatched=()):
  """vmap f over every in_axes variant; ``examples`` are single (per-example) args.
  ``unbatched`` lists arguments that must stay unbatched (static-like)."""
  for axes in _axes_variants(examples):
    axes = tuple(None if i in unbatched else a for i, a in enumerate(axes))
    if all(a is None for a in axes):
      continue
    args = []
    for k, (x, ax) in enumerate(zip(examples, axes)):
      if ax is None:
        args.append(jnp.asarray(x))
      else:
        pos = ax if ax >= 0 else np.ndim(x) + 1 + ax
        args.append(_batched(x, axis=pos, seed=k))
    check(f, args, in_axes=axes, rtol=rtol, atol=atol)
    check(f, args, in_axes=axes, out_axes=-1, rtol=rtol, atol=atol)


# --- every primitive has a rule ---------------------------------------------------------
# Primitives with no operands (iota, iota_2x32_shape) can never see a batched argument;
# custom_lin only exists inside linearized jaxprs (it is transposed, never evaluated).
# cholesky_update belongs to lax/linalg.py, owned elsewhere (JAX has no rule either).
_NO_RULE_NEEDED = {"iota", "iota_2x32_shape", "custom_lin"}
_OWNED_ELSEWHERE = {"cholesky_update"}
# JAX 0.10 defines no batching rule for these either (vmap raises the same
# NotImplementedError): the older sparse formats' primitives and sparse.linalg.spsolve
_NO_RULE_IN_JAX = {"coo_todense", "coo_fromdense", "coo_matvec", "coo_matmat", "csr_todense",
                   "csr_fromdense", "csr_matvec", "csr_matmat", "spsolve"}
# Pallas's kernel-jaxpr primitives (pallas/stateful.py) exist only inside a pallas_call's
# kernel jaxpr, which is discharged before it runs; vmap of a pallas_call adds a grid axis
# (pallas_call's own rule) and never batches them.  (JAX has rules for get/swap/addupdate,
# which its refs use outside Pallas too; pyjax's refs outside kernels bind no primitive:
# state/primitives.py.  program_id, masked_load/swap and run_scoped have none in JAX.)
_KERNEL_JAXPR_ONLY = {"get", "swap", "addupdate", "program_id", "masked_load", "masked_swap",
                      "run_scoped"}


def _test_defined(prims):
  """Primitives that tests define: attributes of modules outside pyjax (test modules).
  Primitives a test function makes at run time are excluded by taking the census when
  this module is collected, before any test runs."""
  ids = set()
  for name, mod in list(sys.modules.items()):
    if name != "pyjax" and not name.startswith("pyjax."):
      ids.update(id(v) for v in list(getattr(mod, "__dict__", {}).values())
                 if isinstance(v, core.Primitive))
  return [p for p in prims if id(p) not in ids]


_CENSUS = [o for o in gc.get_objects() if isinstance(o, core.Primitive)]


def test_every_primitive_has_a_batching_rule():
  # hijax primitives (pyjax._src.hijax, and any a test defines) are lowered to ordinary
  # primitives when staged; they are not lo primitives of their own
  from pyjax._src.hijax import HiPrimitive
  prims = [o for o in _test_defined(_CENSUS) if not isinstance(o, HiPrimitive)]
  missing = sorted({p.name for p in prims if not batching.has_rule(p)}
                   - _NO_RULE_NEEDED - _OWNED_ELSEWHERE - _NO_RULE_IN_JAX
                   - _KERNEL_JAXPR_ONLY)
  assert not missing, missing


def test_missing_rule_error():
  p = core.Primitive("made_up_prim")
  p.def_abstract_eval(lambda x: x)
  with pytest.raises(NotImplementedError, match="Batching rule for 'made_up_prim' not implemented"):
    vmap(lambda x: p.bind(x))(jnp.ones(3))


# --- elementwise --------------------------------------------------------------------------
_F = np.float32
_UNARY = [
    (lax.neg, 0.5), (lax.sign, -0.5), (lax.floor, 1.3), (lax.ceil, 1.3), (lax.round, 1.5),
    (lax.is_finite, 1.0), (lax.exp, 0.3), (lax.exp2, 0.3), (lax.log, 1.5), (lax.expm1, 0.2),
    (lax.log1p, 0.2), (lax.tanh, 0.3), (lax.logistic, 0.3), (lax.sin, 0.3), (lax.cos, 0.3),
    (lax.tan, 0.3), (lax.asin, 0.3), (lax.acos, 0.3), (lax.atan, 0.3), (lax.sinh, 0.3),
    (lax.cosh, 0.3), (lax.asinh, 0.3), (lax.acosh, 1.5), (lax.atanh, 0.3), (lax.sqrt, 1.5),
    (lax.rsqrt, 1.5), (lax.cbrt, 1.5), (lax.square, 0.5), (lax.abs, -0.5), (lax.erf, 0.3),
    (lax.erfc, 0.3), (lax.erf_inv, 0.3), (lax.lgamma, 1.5), (lax.digamma, 1.5),
    (lax.bessel_i0e, 0.3), (lax.bessel_i1e, 0.3), (lambda x: lax.integer_pow(x, 3), 0.5),
    (lambda x: lax.convert_element_type(x, np.int32), 2.5),
    (lambda x: lax.reduce_precision(x, 5, 10), 0.3), (lambda x: lax.bitcast_convert_type(x, np.int32), 0.3),
    (lambda x: lax.bitcast_convert_type(x, np.uint16), 0.3), (lax.stop_gradient, 0.3),
    (lax.real, 1 + 2j), (lax.imag, 1 + 2j), (lax.conj, 1 + 2j),
    (lax.bitwise_not, 5), (lax.population_count, 5), (lax.clz, 5),
]


@pytest.mark.parametrize("k", range(len(_UNARY)))
def test_unary(k):
  fn, v = _UNARY[k]
  dt = np.complex64 if isinstance(v, complex) else (np.int32 if isinstance(v, int) else _F)
  x = np.full((2, 3), v, dt)
  check_all_axes(fn, [x])
  check_all_axes(fn, [np.asarray(v, dt)])


def test_bitcast_to_wider_on_the_last_axis():
  x = _batched(np.arange(4, dtype=np.uint16).reshape(2, 2), axis=2)
  check(lambda a: lax.bitcast_convert_type(a, np.uint32), [x], in_axes=2)


_BINARY = [
    (lax.add, _F), (lax.sub, _F), (lax.mul, _F), (lax.div, _F), (lax.rem, _F), (lax.max, _F),
    (lax.min, _F), (lax.atan2, _F), (lax.nextafter, _F), (lax.complex, _F), (lax.pow, _F),
    (lax.bitwise_and, np.int32), (lax.bitwise_or, np.int32), (lax.bitwise_xor, np.int32),
    (lax.shift_left, np.int32), (lax.shift_right_arithmetic, np.int32),
    (lax.shift_right_logical, np.int32), (lax.eq, _F), (lax.ne, _F), (lax.lt, _F),
    (lax.le, _F), (lax.gt, _F), (lax.ge, _F), (lax.igamma, _F), (lax.igammac, _F),
    (lax.igamma_grad_a, _F), (lax.random_gamma_grad, _F), (lax.polygamma, _F), (lax.zeta, _F),
    (lambda x, y: jnp.add(x, y), _F),
]


@pytest.mark.parametrize("k", range(len(_BINARY)))
def test_binary(k):
  fn, dt = _BINARY[k]
  if dt is _F:
    x, y = np.full((2, 3), 1.5, dt), np.full((2, 3), 2.5, dt)
  else:
    x, y = np.full((2, 3), 6, dt), np.full((2, 3), 2, dt)
  if fn is lax.polygamma:
    x = np.full((2, 3), 1.0, dt)
  check_all_axes(fn, [x, y])
  check_all_axes(fn, [x[0, 0], y[0, 0]])
  # rank-0 operands broadcast against batched arrays and vice versa
  check_all_axes(fn, [x, y[0, 0]])
  check_all_axes(fn, [x[0, 0], y])


def test_mixed_scalar_and_array_operands():
  x = np.arange(6, dtype=_F).reshape(3, 2)
  check(lambda a, s: lax.mul(a, s), [x, np.arange(3, dtype=_F)])
  check(lambda a, s: lax.mul(s, a), [x, np.arange(3, dtype=_F)])
  check(lambda a, s: lax.mul(a, s), [x.T, np.arange(3, dtype=_F)], in_axes=(1, 0))
  check(lambda a: a * 2.0, [x])                  # weak Python scalar
  check(lambda a: lax.pow(a, 2), [x + 1])          # integer exponent


def test_select_and_clamp():
  x = np.linspace(-2, 2, 6, dtype=_F).reshape(2, 3)
  p = x > 0
  check_all_axes(lambda a, b: lax.select(a > 0, a, b), [x, x * 3])
  check_all_axes(lambda pr, a, b: lax.select(pr, a, b), [p, x, x * 3])
  check_all_axes(lambda pr, a, b: lax.select(pr, a, b), [np.asarray(True), x, x * 3])
  check_all_axes(lambda pr, a, b: lax.select(pr, a, b), [np.asarray(True), _F(1), _F(2)])
  check_all_axes(lambda a, b: lax.select(a > 1.5, a, b), [_F(1), _F(2)])
  check_all_axes(lambda w, a, b, c: lax.select_n(w, a, b, c), [np.int32(2), x, x * 3, -x])
  check_all_axes(lambda w, a, b, c: lax.select_n(w, a, b, c),
                 [np.array([[0, 1, 2], [2, 1, 0]], np.int32), x, x * 3, -x])
  check_all_axes(lambda lo, a, hi: lax.clamp(lo, a, hi), [_F(-1), x, _F(1)])
  check_all_axes(lambda lo, a, hi: lax.clamp(lo, a, hi), [x - 1, x, _F(1)])
  check_all_axes(lambda lo, a, hi: lax.clamp(lo, a, hi), [x - 1, x, x + 0.5])
  check_all_axes(lambda a, b, c: lax.regularized_incomplete_beta(a, b, c),
                 [np.full(3, 1.5, _F), np.full(3, 2.0, _F), np.full(3, 0.3, _F)])


# --- structural ------------------------------------------------------------------------------
_X = np.arange(24, dtype=_F).reshape(2, 3, 4) / 7


@pytest.mark.parametrize("k", range(16))
def test_structural(k):
  fns = [
      lambda a: lax.broadcast_in_dim(a, (5, 2, 3, 4), (1, 2, 3)),
      lambda a: lax.broadcast_in_dim(a[:, :1], (2, 3, 3, 4), (0, 2, 3)),
      lambda a: lax.reshape(a, (4, 6)),
      lambda a: lax.reshape(a, (6, 4), dimensions=(2, 0, 1)),
      lambda a: lax.transpose(a, (2, 0, 1)),
      lambda a: lax.squeeze(a[:1, :, :1], (0, 2)),
      lambda a: lax.expand_dims(a, (0, 3)),
      lambda a: lax.rev(a, (0, 2)),
      lambda a: lax.concatenate([a, a * 2, jnp.asarray(_X)], 1),
      lambda a: lax.pad(a, _F(0.5), [(1, 2, 0), (0, -1, 1), (-1, 0, 2)]),
      lambda a: lax.slice(a, (0, 1, 0), (2, 3, 4)),
      lambda a: lax.slice(a, (0, 0, 1), (2, 3, 4), (1, 2, 2)),
      lambda a: lax.dynamic_slice(a, (1, 1, 2), (1, 2, 2)),
      lambda a: lax.dynamic_update_slice(a, a[:1, :2, :2] * 3, (1, 1, 1)),
      lambda a: a[1, ::-1, 1:3] * a[0, 1:, :2].sum(),
      lambda a: lax.collapse(a, 1, 3),
  ]
  check_all_axes(fns[k], [_X])


def test_concatenate_and_pad_with_batched_and_unbatched_operands():
  x = _X
  check_all_axes(lambda a, b: lax.concatenate([a, b], 2), [x, x[:, :, :2]])
  check_all_axes(lambda a, v: lax.pad(a, v, [(1, 2, 1), (0, -1, 0), (2, 0, 0)]),
                 [x, _F(0.25)])


def test_dynamic_slice_and_update_with_batched_indices():
  x = _X
  i = np.int32(1)
  check_all_axes(lambda a, i: lax.dynamic_slice(a, (i, 0, i), (1, 2, 3)), [x, i])
  check_all_axes(lambda a, i, j: lax.dynamic_slice(a, (i, j, 5), (2, 2, 2)),
                 [x, i, np.int32(-1)])   # negative and out-of-range starts clamp
  u = np.ones((1, 2, 2), _F) * 9
  check_all_axes(lambda a, b, i: lax.dynamic_update_slice(a, b, (i, 1, i)), [x, u, i])
  check_all_axes(lambda a, b, i: lax.dynamic_update_slice(a, b, (i, 7, i)), [x, u, i])
  check_all_axes(lambda a, i: lax.dynamic_index_in_dim(a, i, 1, keepdims=False), [x, i])
  check_all_axes(lambda a, b, i: lax.dynamic_update_index_in_dim(a, b, i, 2),
                 [x, np.ones((2, 3), _F), np.int32(3)])


def test_iota_like_and_full_under_vmap():
  check(lambda a: a + lax.iota(np.float32, 4), [np.ones((3, 4), _F)])
  check(lambda a: lax.full_like(a, 2.0), [np.ones((3, 4), _F)])
  check(lambda a: jnp.zeros_like(a) + jnp.arange(4.0), [np.ones((3, 4), _F)])


# --- gather / scatter ------------------------------------------------------------------------
def test_gather_scatter_indexing():
  x = np.arange(20, dtype=_F).reshape(4, 5)
  idx = np.array([2, 0, 3], np.int32)
  check_all_axes(lambda a, i: a[i], [x, idx])
  check_all_axes(lambda a, i: a[:, i], [x, idx])
  check_all_axes(lambda a, i: a[i, 1:3], [x, np.int32(2)])
  check_all_axes(lambda a, i: jnp.take(a, i, axis=1, mode="clip"), [x, idx + 3])
  check_all_axes(lambda a, i: jnp.take(a, i, axis=0, mode="fill", fill_value=-1.0), [x, idx + 2])
  check_all_axes(lambda a, i: jnp.take_along_axis(a, i, axis=1),
                 [x, np.array([[0, 1], [4, 2], [1, 1], [3, 0]], np.int32)])
  check_all_axes(lambda a, i, u: a.at[i].set(u), [x, idx, np.ones((3, 5), _F)])
  check_all_axes(lambda a, i, u: a.at[i].add(u), [x, np.array([1, 1, 2], np.int32),
                                                  np.ones((3, 5), _F)])
  check_all_axes(lambda a, i, u: a.at[:, i].mul(u), [x, idx, np.full((4, 3), 2.0, _F)])
  check_all_axes(lambda a, i, u: a.at[i].min(u), [x, idx, np.full((3, 5), 3.0, _F)])
  check_all_axes(lambda a, i, u: a.at[i].max(u), [x, idx, np.full((3, 5), 3.0, _F)])
  check_all_axes(lambda a, i: a.at[i].add(1.0, mode="drop"), [x, idx + 2])
  check_all_axes(lambda a, i, u: lax.scatter_sub(
      a, i[:, None], u, lax.ScatterDimensionNumbers((1,), (0,), (0,))),
      [x, idx, np.ones((3, 5), _F)])


def test_gather_with_batching_dims():
  x = np.arange(24, dtype=_F).reshape(2, 3, 4)
  idx = np.array([[[1], [2]], [[0], [3]]], np.int32)
  dn = lax.GatherDimensionNumbers(offset_dims=(2,), collapsed_slice_dims=(2,),
                                  start_index_map=(2,), operand_batching_dims=(0,),
                                  start_indices_batching_dims=(0,))
  f = lambda a, i: lax.gather(a, i, dn, (1, 3, 1), mode="clip")
  check_all_axes(f, [x, idx])


# --- reductions / cumulative / windows ---------------------------------------------------------
@pytest.mark.parametrize("k", range(14))
def test_reductions(k):
  fns = [
      lambda a: lax.reduce_sum(a, (1,)), lambda a: lax.reduce_sum(a, (0, 2)),
      lambda a: lax.reduce_prod(a, (2,)), lambda a: lax.reduce_max(a, (0,)),
      lambda a: lax.reduce_min(a, (1, 2)), lambda a: lax.reduce_and(a > 0.5, (1,)),
      lambda a: lax.reduce_or(a > 1.5, (2,)), lambda a: lax.reduce_xor(a > 1.0, (0, 1)),
      lambda a: lax.argmax(a, 1, np.int32), lambda a: lax.argmin(a, 2, np.int32),
      lambda a: lax.cumsum(a, 1), lambda a: lax.cumprod(a, 2, reverse=True),
      lambda a: lax.cummax(a, 0) + lax.cummin(a, 1), lambda a: lax.cumlogsumexp(a, 2),
  ]
  check_all_axes(fns[k], [_X], rtol=1e-4)


def test_generic_reduce_and_reduce_window():
  x = _X
  check_all_axes(lambda a: lax.reduce((a, a * 2), (0.0, 1.0),
                                      lambda p, q: (p[0] + q[0], p[1] * q[1]), (1,)), [x],
                 rtol=1e-4)
  check_all_axes(lambda a: lax.reduce(a, 0.5, lambda p, q: p + q * 2, (0, 2)), [x])
  with pytest.raises(NotImplementedError):
    vmap(lambda a, i: lax.reduce(a, i, lambda p, q: p * q, (0,)))(
        jnp.ones((3, 2)), jnp.ones(3))


@pytest.mark.parametrize("k", range(6))
def test_windowed(k):
  fns = [
      lambda a: lax.reduce_window(a, 0.0, lax.add, (2, 2, 1), (1, 1, 1), "VALID"),
      lambda a: lax.reduce_window(a, -np.inf, lax.max, (1, 2, 2), (1, 1, 2), "SAME"),
      lambda a: lax.reduce_window(a, np.inf, lax.min, (2, 1, 2), (1, 1, 1), [(0, 1), (1, 0), (0, 0)],
                                  base_dilation=(1, 2, 1), window_dilation=(1, 1, 2)),
      lambda a: lax.reduce_window(a, 1.0, lax.mul, (1, 2, 2), (1, 1, 1), "VALID"),
      lambda a: grad(lambda b: lax.reduce_window(b, -np.inf, lax.max, (1, 2, 2), (1, 1, 1),
                                                 "VALID").sum())(a),
      lambda a: pyjax.jvp(lambda b: lax.reduce_window(b, -np.inf, lax.max, (1, 2, 2), (1, 1, 1),
                                                      "VALID"), (a,), (a * 2,))[1],
  ]
  x = np.random.default_rng(0).permutation(24).astype(_F).reshape(2, 3, 4)
  check_all_axes(fns[k], [x])


# --- dot / conv / sort ---------------------------------------------------------------------------
def test_dot_general():
  rng = np.random.default_rng(0)
  a = rng.standard_normal((3, 4)).astype(_F)
  b = rng.standard_normal((4, 5)).astype(_F)
  v = rng.standard_normal(4).astype(_F)
  check_all_axes(lambda x, y: x @ y, [a, b], rtol=1e-4)
  check_all_axes(lambda x, y: x @ y, [a, v], rtol=1e-4)
  check_all_axes(lambda x, y: jnp.dot(x, y), [v, v], rtol=1e-4)
  c = rng.standard_normal((2, 3, 4)).astype(_F)
  d = rng.standard_normal((2, 4, 5)).astype(_F)
  check_all_axes(lambda x, y: lax.dot_general(x, y, (((2,), (1,)), ((0,), (0,)))), [c, d],
                 rtol=1e-4)
  check_all_axes(lambda x, y: lax.dot_general(x, y, (((1,), (0,)), ((), ()))),
                 [c.transpose(1, 2, 0), d.transpose(1, 0, 2)], rtol=1e-4)
  check_all_axes(lambda x, y: jnp.einsum("ij,kj->ik", x, y), [a, b.T[:3]], rtol=1e-4)


def test_matvec_seed_example():
  mat = np.random.default_rng(1).standard_normal((150, 100)).astype(_F)
  batched_x = np.random.default_rng(2).standard_normal((10, 100)).astype(_F)
  by_hand = jnp.dot(batched_x, mat.T)
  ours = vmap(lambda v: jnp.dot(mat, v))(batched_x)
  np.testing.assert_allclose(np.asarray(ours), np.asarray(by_hand), rtol=1e-5, atol=1e-5)


_CONV = [
    dict(window_strides=(1, 1), padding="SAME"),
    dict(window_strides=(2, 1), padding="VALID", rhs_dilation=(1, 2)),
    dict(window_strides=(1, 1), padding=[(1, 0), (0, 1)], lhs_dilation=(2, 1)),
    dict(window_strides=(1, 1), padding="VALID", feature_group_count=2),
    dict(window_strides=(1, 1), padding="VALID", batch_group_count=2),
]


@pytest.mark.parametrize("k", range(len(_CONV)))
def test_conv(k):
  kw = _CONV[k]
  rng = np.random.default_rng(k)
  fgc, bgc = kw.get("feature_group_count", 1), kw.get("batch_group_count", 1)
  lhs = rng.standard_normal((2 * bgc, 4, 5, 6)).astype(_F)
  rhs = rng.standard_normal((4 * bgc, 4 // fgc, 3, 2)).astype(_F)
  check_all_axes(lambda l, r: lax.conv_general_dilated(l, r, **kw), [lhs, rhs], rtol=1e-4,
                 atol=1e-4)


def test_conv_nhwc():
  rng = np.random.default_rng(3)
  lhs = rng.standard_normal((2, 5, 6, 4)).astype(_F)
  rhs = rng.standard_normal((3, 2, 2, 6)).astype(_F)
  f = lambda l, r: lax.conv_general_dilated(l, r, (1, 1), "SAME", feature_group_count=2,
                                            dimension_numbers=("NHWC", "HWIO", "NHWC"))
  check_all_axes(f, [lhs, rhs], rtol=1e-4, atol=1e-4)


def test_sort_and_top_k():
  x = np.random.default_rng(0).permutation(24).astype(_F).reshape(2, 3, 4)
  check_all_axes(lambda a: lax.sort(a, dimension=1), [x])
  check_all_axes(lambda a, b: lax.sort((a, b), dimension=2, num_keys=1), [x, -x])
  check_all_axes(lambda a, b: lax.sort_key_val(a, b, 0), [x, x * 2])
  check_all_axes(lambda a: lax.top_k(a, 2), [x])
  check_all_axes(lambda a: jnp.argsort(a, axis=1), [x])


# --- jax.numpy on top of the rules -----------------------------------------------------------
_JNP = [
    lambda a: jnp.var(a, axis=0), lambda a: jnp.std(a), lambda a: jnp.median(a),
    lambda a: jnp.roll(a, 2, axis=1), lambda a: jnp.tile(a, (2, 1)),
    lambda a: jnp.repeat(a, 2, axis=0), lambda a: jnp.split(a, [1, 3], axis=1)[1],
    lambda a: jnp.triu(a), lambda a: jnp.trace(a), lambda a: jnp.outer(a[0], a[1]),
    lambda a: jnp.einsum("ij,kj->ik", a, a), lambda a: jnp.argsort(a, axis=-1),
    lambda a: jnp.round(a, 2), lambda a: jnp.take(a, jnp.array([0, 3]), axis=1),
    lambda a: jnp.log(jnp.sum(jnp.exp(a))), lambda a: jnp.convolve(a[0], a[1]),
    lambda a: jnp.cross(a[:, :3], a[:, 1:4]), lambda a: jnp.pad(a, 1, mode="reflect"),
    lambda a: jnp.searchsorted(jnp.sort(a[0]), a[1]), lambda a: a.at[1:3, ::2].set(0.0),
    lambda a: jnp.mean(a, axis=1, keepdims=True), lambda a: jnp.argmax(a),
    lambda a: jnp.any(a > 1), lambda a: jnp.cumsum(a[::-1], axis=0),
]


@pytest.mark.parametrize("k", range(len(_JNP)))
def test_numpy_functions(k):
  x = np.random.default_rng(k).standard_normal((3, 4, 5)).astype(_F)
  check(_JNP[k], [x], rtol=1e-4, atol=1e-5)
  check(_JNP[k], [np.moveaxis(x, 0, 2)], in_axes=2, out_axes=-1, rtol=1e-4, atol=1e-5)


# --- in_axes / out_axes -----------------------------------------------------------------
def test_axes_variants():
  x = np.arange(24, dtype=_F).reshape(2, 3, 4)
  f = lambda a, b: jnp.sin(a)[..., :1] * b
  for ia in [0, 1, 2, -1, -3]:
    n = x.shape[ia]
    for ib in [None, 0, 1, -1]:
      y = np.arange(4, dtype=_F) if ib is None else _batched(np.arange(4, dtype=_F), n,
                                                              axis=ib if ib >= 0 else 1)
      for oa in [0, 1, -1, 2]:
        check(f, [x, y], in_axes=(ia, ib), out_axes=oa)
  check(f, [x, np.arange(4, dtype=_F)], in_axes=[1, None])   # a list is a tuple


def test_pytree_axes_and_kwargs():
  x = jnp.arange(6.).reshape(2, 3)
  tree = {"a": x, "b": (x.T, 2.0)}
  out = vmap(lambda t: t["a"].sum() + t["b"][0].sum() * t["b"][1],
             in_axes=({"a": 0, "b": (1, None)},))(tree)
  np.testing.assert_allclose(np.asarray(out), np.asarray(x.sum(1) * 3))
  out = vmap(lambda a, b: (a, {"s": b}), in_axes=(0, 1), out_axes=(1, {"s": 0}))(x, x.T)
  assert out[0].shape == (3, 2) and out[1]["s"].shape == (2, 3)
  out = vmap(lambda a, b=None: a + b)(x, b=x * 2)   # keyword arguments: axis 0
  np.testing.assert_allclose(np.asarray(out), np.asarray(x * 3))
  out = vmap(lambda a: {"k": a, "n": None})(x)
  assert out["n"] is None and out["k"].shape == (2, 3)
  out = vmap(lambda a, n: a * n, in_axes=(0, None))(x, 3)
  np.testing.assert_allclose(np.asarray(out), np.asarray(x * 3))


def test_unbatched_outputs_and_axis_size():
  x = jnp.arange(3.)
  out = vmap(lambda a: 1.0)(x)
  assert out.shape == (3,) and out.dtype == np.float32 and out.weak_type
  assert vmap(lambda a: 1.0, out_axes=None)(x) == 1.0
  out = vmap(lambda: jnp.ones(2), axis_size=4)()
  assert out.shape == (4, 2)
  out = vmap(lambda a, b: b, in_axes=(0, None), out_axes=1)(x, jnp.ones(2))
  assert out.shape == (2, 3)
  out = vmap(lambda a: (a, a.sum()), out_axes=(0, None), in_axes=None, axis_size=2)(x)
  assert out[0].shape == (2, 3) and out[1].shape == ()


def test_nested_vmap():
  x = np.arange(24, dtype=_F).reshape(2, 3, 4)
  got = vmap(vmap(lambda v, w: (v * w).sum(), (0, None)), (None, 0))(x[0], x[1])
  np.testing.assert_allclose(np.asarray(got), np.asarray(x[1] @ x[0].T), rtol=1e-5)
  got = vmap(vmap(jnp.sum, in_axes=1), in_axes=2)(x)
  np.testing.assert_allclose(np.asarray(got), np.asarray(x).sum(0).T, rtol=1e-5)
  got = vmap(vmap(vmap(lambda s: s * 2)))(x)
  np.testing.assert_allclose(np.asarray(got), np.asarray(x) * 2)


# --- composition with grad and jit ----------------------------------------------------
def _loss(w, x):
  return jnp.sum(jnp.tanh(x @ w) ** 2) + jnp.sum(jnp.maximum(w, 0.1))


def test_vmap_of_grad_and_grad_of_vmap():
  rng = np.random.default_rng(0)
  w = rng.standard_normal((4, 2)).astype(_F)
  xs = rng.standard_normal((5, 3, 4)).astype(_F)
  per = vmap(grad(_loss), in_axes=(None, 0))(w, xs)
  ref = np.stack([np.asarray(grad(_loss)(w, x)) for x in xs])
  np.testing.assert_allclose(np.asarray(per), ref, rtol=1e-5, atol=1e-6)
  g = grad(lambda w: vmap(_loss, in_axes=(None, 0))(w, xs).sum())(w)
  np.testing.assert_allclose(np.asarray(g), ref.sum(0), rtol=1e-4, atol=1e-5)
  ws = rng.standard_normal((5, 4, 2)).astype(_F)
  g2 = vmap(grad(_loss))(ws, xs)
  ref2 = np.stack([np.asarray(grad(_loss)(w_, x_)) for w_, x_ in zip(ws, xs)])
  np.testing.assert_allclose(np.asarray(g2), ref2, rtol=1e-5, atol=1e-6)
  # jacobians are vmaps of jvp/vjp
  h = vmap(pyjax.hessian(lambda v: jnp.sum(jnp.sin(v) * v)))(xs[:, 0])
  assert h.shape == (5, 4, 4)


def test_jit_and_vmap_compose():
  x = jnp.arange(12.).reshape(3, 4)
  f = lambda a: jnp.sin(a) @ jnp.ones(4) + a.sum()
  ref = np.stack([np.asarray(f(r)) for r in x])
  np.testing.assert_allclose(np.asarray(jit(vmap(f))(x)), ref, rtol=1e-5)
  np.testing.assert_allclose(np.asarray(vmap(jit(f))(x)), ref, rtol=1e-5)
  np.testing.assert_allclose(np.asarray(vmap(jit(f), in_axes=1)(x.T)), ref, rtol=1e-5)
  np.testing.assert_allclose(np.asarray(grad(lambda y: vmap(jit(f))(y).sum())(x)),
                             np.asarray(grad(lambda y: sum(f(r) for r in y))(x)), rtol=1e-5)
  np.testing.assert_allclose(np.asarray(vmap(grad(jit(lambda a: jnp.sum(a ** 3))))(x)),
                             3 * np.asarray(x) ** 2, rtol=1e-5)
  # the batched jit stays staged in jaxprs
  jaxpr = pyjax.make_jaxpr(vmap(jit(f)))(x)
  assert any(e.primitive.name == "jit" for e in jaxpr.eqns)


def test_vmap_of_jit_is_cached():
  calls = []

  @jit
  def f(a):
    calls.append(1)
    return a * 2
  x = jnp.ones((3, 2))
  vmap(f)(x)
  vmap(f)(x)
  assert len(calls) == 1


def test_make_jaxpr_of_vmap_is_shape_correct():
  x = jnp.ones((5, 3))
  jaxpr = pyjax.make_jaxpr(vmap(lambda a: jnp.sum(jnp.sin(a)) * a))(x)
  assert [str(v.aval) for v in jaxpr.jaxpr.invars] == ["float32[5,3]"]
  assert [str(v.aval) for v in jaxpr.jaxpr.outvars] == ["float32[5,3]"]
  for eqn in jaxpr.eqns:
    out = eqn.primitive.abstract_eval(*[v.aval for v in eqn.invars], **eqn.params)
    outs = out if eqn.primitive.multiple_results else [out]
    assert [o.shape for o in outs] == [v.aval.shape for v in eqn.outvars]


_JAXPRS = [
    ("mul_unbatched", lambda a, b: a * b, (1, None), [(4, 3), (4,)],
     "{ lambda ; a:f32[4,3] b:f32[4]. let\n    c:f32[3,4] = transpose[permutation=(1, 0)] a\n"
     "    d:f32[1,4] = broadcast_in_dim[broadcast_dimensions=(np.int64(1),)] b\n"
     "    e:f32[3,4] = mul c d\n  in (e,) }"),
    ("sum_axis1", lambda a: jnp.sum(a), 1, [(3, 4, 5)],
     "{ lambda ; a:f32[3,4,5]. let\n"
     "    b:f32[4] = reduce_sum[axes=(np.int64(0), np.int64(2)) out_sharding=None] a\n"
     "  in (b,) }"),
    ("matvec", lambda a, b: a @ b, (None, 0), [(4, 5), (3, 5)],
     "{ lambda ; a:f32[4,5] b:f32[3,5]. let\n    c:f32[4,3] = dot_general[\n"
     "      dimension_numbers=(([1], [1]), ([], []))\n      preferred_element_type=float32\n"
     "    ] a b\n    d:f32[3,4] = transpose[permutation=(1, 0)] c\n  in (d,) }"),
    ("const", lambda a: 2.0, 0, [(3,)],
     "{ lambda ; a:f32[3]. let b:f32[3] = broadcast_in_dim 2.0:f32[] in (b,) }"),
    ("jit_inner", jit(jnp.sin), 1, [(3, 4, 5)],
     "{ lambda ; a:f32[3,4,5]. let\n    b:f32[3,4,5] = jit[\n      name=sin\n"
     "      jaxpr={ lambda ; a:f32[3,4,5]. let b:f32[3,4,5] = sin a in (b,) }\n    ] a\n"
     "    c:f32[4,3,5] = transpose[permutation=(1, 0, 2)] b\n  in (c,) }"),
]


@pytest.mark.parametrize("name,f,in_axes,shapes,text", _JAXPRS, ids=[j[0] for j in _JAXPRS])
def test_jaxpr_text_matches_jax(name, f, in_axes, shapes, text):
  args = [jnp.ones(s) for s in shapes]
  assert str(pyjax.make_jaxpr(vmap(f, in_axes=in_axes))(*args)) == text


def test_jaxpr_text_against_live_jax(jax):
  for name, f, in_axes, shapes, text in _JAXPRS[:4]:
    args = [np.ones(s, _F) for s in shapes]
    jf = {"mul_unbatched": lambda a, b: a * b, "sum_axis1": lambda a: jax.numpy.sum(a),
          "matvec": lambda a, b: a @ b, "const": lambda a: 2.0}[name]
    assert str(jax.make_jaxpr(jax.vmap(jf, in_axes=in_axes))(*args)) == text


def _rule_cases(L, N):
  """(name, f, in_axes, args) built on a lax module ``L`` and a numpy module ``N``."""
  rng = np.random.default_rng(7)
  x = rng.standard_normal((3, 4)).astype(_F)
  i = np.array([0, 1, 2], np.int32)
  l4 = rng.standard_normal((2, 1, 3, 5, 5)).astype(_F)
  r4 = rng.standard_normal((2, 4, 3, 2, 2)).astype(_F)
  return [
      ("select", lambda a, b: L.select(a > 0, a, b), (0, 1), (x, x.T)),
      ("select_unb", lambda a, b: L.select(a > 0, a, b), (0, None), (x, x[0])),
      ("clamp", lambda a: L.clamp(0.0, a, 1.0), 1, (x,)),
      ("bcast", lambda a: L.broadcast_in_dim(a, (2, 4), (1,)), 0, (x,)),
      ("reshape", lambda a: L.reshape(a, (3, 1)), 1, (x,)),
      ("squeeze", lambda a: L.squeeze(a[None], (0,)), 1, (x,)),
      ("concat", lambda a, b: L.concatenate([a, b], 0), (0, None), (x, x[0])),
      ("pad", lambda a: L.pad(a, 0.0, [(1, 1, 0)]), 0, (x,)),
      ("pad_batched_value", lambda a, v: L.pad(a, v, [(1, 1, 0)]), (0, 0), (x, x[:, 0])),
      ("slice", lambda a: L.slice(a, (1,), (3,)), 1, (x,)),
      ("dslice", lambda a, j: L.dynamic_slice(a, (j,), (2,)), (0, 0), (x, i)),
      ("dslice_operand", lambda a: L.dynamic_slice(a, (1,), (2,)), 1, (x,)),
      ("dus", lambda a, j: L.dynamic_update_slice(a, N.ones(2), (j,)), (0, 0), (x, i)),
      ("dus_operand", lambda a, u: L.dynamic_update_slice(a, u, (1,)), (0, 0), (x, x[:, :2])),
      ("gather", lambda a, j: a[j], (0, 0), (x, i)),
      ("gather_operand", lambda a: a[N.array([1, 0])], 1, (x,)),
      ("scatter", lambda a, j: a.at[j].add(1.0), (0, 0), (x, i)),
      ("cumsum", lambda a: L.cumsum(a, 0), 1, (x,)),
      ("argmax", lambda a: L.argmax(a, 0, np.int32), 1, (x,)),
      ("sort", lambda a: L.sort(a), 1, (x,)),
      ("reduce_window", lambda a: L.reduce_window(a, 0.0, L.add, (2,), (1,), "VALID"), 1, (x,)),
      ("dot_both", lambda a, b: a @ b, (0, 0), (x, x)),
      ("transpose", lambda a: L.transpose(a[None], (1, 0)), 1, (x,)),
      ("rev", lambda a: L.rev(a, (0,)), 1, (x,)),
      ("top_k", lambda a: L.top_k(a, 2), 1, (x,)),
      ("iota_add", lambda a: a + N.arange(4.0), 0, (x,)),
      ("conv_lhs", lambda a, b: L.conv(a, b, (1, 1), "SAME"), (0, None), (l4, r4[0])),
      ("conv_rhs", lambda a, b: L.conv(a, b, (1, 1), "SAME"), (None, 0), (l4[0], r4)),
      ("conv_both", lambda a, b: L.conv(a, b, (1, 1), "SAME"), (0, 0), (l4, r4)),
      ("max", lambda a: N.max(a), 1, (x,)),
      ("outer", lambda a: a[:, None] * a[None, :], 0, (x,)),
      ("psum", lambda a: L.psum(a, "i") + L.axis_index("i"), 0, (x,)),
      ("all_gather_tiled", lambda a: L.all_gather(a, "i", tiled=True), 0, (x,)),
  ]


def test_rule_jaxprs_match_live_jax(jax):
  ours = _rule_cases(lax, jnp)
  theirs = _rule_cases(jax.lax, jax.numpy)
  for (name, f, ia, args), (_, g, _, _) in zip(ours, theirs):
    a = str(pyjax.make_jaxpr(vmap(f, in_axes=ia, axis_name="i"))(*args))
    b = str(jax.make_jaxpr(jax.vmap(g, in_axes=ia, axis_name="i"))(*args))
    assert a == b, name


def test_rule_cases_values():
  for name, f, ia, args in _rule_cases(lax, jnp):
    if name in ("psum", "all_gather_tiled"):   # collectives: see test_collectives_values
      continue
    check(f, [jnp.asarray(a) for a in args], in_axes=ia, rtol=1e-4, atol=1e-4)


# --- errors --------------------------------------------------------------------------------
_ERRORS = [
    ("sizes", lambda: vmap(lambda a, b: a + 1)(jnp.ones(3), jnp.ones(4)), ValueError,
     "vmap got inconsistent sizes for array axes to be mapped:\n"
     "  * one axis had size 3: axis 0 of argument a of type float32[3];\n"
     "  * one axis had size 4: axis 0 of argument b of type float32[4]"),
    ("sizes_most", lambda: vmap(lambda a, b: a + 1)(jnp.ones(3), {"a": jnp.ones(4),
                                                                  "b": (jnp.ones(3), jnp.ones(3))}),
     ValueError,
     "vmap got inconsistent sizes for array axes to be mapped:\n"
     "  * most axes (3 of them) had size 3, e.g. axis 0 of argument a of type float32[3];\n"
     "  * one axis had size 4: axis 0 of argument b['a'] of type float32[4]"),
    ("sizes_kwargs", lambda: vmap(lambda a, b: a)(jnp.ones(3), b=jnp.ones(5)), ValueError,
     "vmap got inconsistent sizes for array axes to be mapped:\n"
     "  * one axis had size 3: axis 0 of argument a of type float32[3];\n"
     "  * one axis had size 5: axis 0 of kwargs['b'] of type float32[5]"),
    ("sizes_axis_size", lambda: vmap(lambda a: a, axis_size=4)(jnp.ones(3)), ValueError,
     "vmap got inconsistent sizes for array axes to be mapped:\n"
     "  * the `axis_size` argument was 4;\n"
     "  * one axis had size 3: axis 0 of argument a of type float32[3]"),
    ("rank", lambda: vmap(lambda a: a + 1, in_axes=1)(jnp.ones(3)), ValueError,
     "vmap was requested to map its argument along axis 1, which implies that its rank "
     "should be at least 2, but is only 1 (its shape is (3,))"),
    ("rank_neg", lambda: vmap(lambda a: a, in_axes=-2)(jnp.ones(3)), ValueError,
     "vmap was requested to map its argument along axis -2, which implies that its rank "
     "should be at least 2, but is only 1 (its shape is (3,))"),
    ("scalar", lambda: vmap(lambda a: a)(1.0), ValueError,
     "vmap was requested to map its argument along axis 0, which implies that its rank "
     "should be at least 1, but is only 0 (its shape is ())"),
    ("no_mapped", lambda: vmap(lambda a: a + 1, in_axes=None)(jnp.ones(3)), ValueError,
     "vmap must have at least one non-None value in in_axes or axis_size must be specified"),
    ("no_args", lambda: vmap(lambda: 1.0)(), ValueError,
     "vmap wrapped function must be passed at least one argument containing an array or "
     "axis_size must be specified, got empty *args=() and **kwargs={}"),
    ("in_axes_len", lambda: vmap(lambda a: a + 1, in_axes=(0, 0))(jnp.ones(3)), ValueError,
     "vmap in_axes must be an int, None, or a tuple of entries corresponding to the "
     "positional arguments passed to the function, but got len(in_axes)=2, len(args)=1"),
    ("in_axes_type", lambda: vmap(lambda a: a + 1, in_axes="a"), TypeError,
     "vmap in_axes must be an int, None, or a tuple of entries corresponding to the "
     "positional arguments passed to the function, but got a."),
    ("in_axes_float", lambda: vmap(lambda a: a + 1, in_axes=1.0), TypeError,
     "vmap in_axes must be an int, None, or a tuple of entries corresponding to the "
     "positional arguments passed to the function, but got 1.0."),
    ("in_axes_leaf", lambda: vmap(lambda a: a + 1, in_axes=(0, "a")), TypeError,
     "vmap in_axes must be an int, None, or (nested) container with those types as leaves, "
     "but got (0, 'a')."),
    ("out_axes_leaf", lambda: vmap(lambda a: a + 1, out_axes="a"), TypeError,
     "vmap out_axes must be an int, None, or (nested) container with those types as leaves, "
     "but got a."),
    ("out_none", lambda: vmap(lambda a: a + 1, out_axes=None)(jnp.ones(3)), ValueError,
     "at vmap out_axes, got axis spec None but output was batched on axis 0"),
    ("out_none_named", lambda: vmap(lambda a: a + 1, out_axes=None, axis_name="i")(jnp.ones(3)),
     ValueError, "vmap has mapped output (axis_name=i) but out_axes is None"),
    ("out_bounds", lambda: vmap(lambda a: a + 1, out_axes=2)(jnp.ones(3)), ValueError,
     "axis 2 is out of bounds for array of dimension 1"),
    ("out_bounds_neg", lambda: vmap(lambda a: a, out_axes=-3)(jnp.ones(3)), ValueError,
     "axis -3 is out of bounds for array of dimension 1"),
    ("out_type", lambda: vmap(lambda a: "s")(jnp.ones(3)), TypeError,
     "Output from batched function 's' with type <class 'str'> is not a valid JAX type"),
    ("arg_type", lambda: vmap(lambda a, s: a)(jnp.ones(3), "str"), TypeError,  # (mapped)
     "Argument 'str' of type <class 'str'> is not a valid JAX type"),
    ("callable", lambda: vmap(3), TypeError, "Expected a callable value, got 3"),
    ("psum_unbound", lambda: lax.psum(1.0, "i"), NameError, "unbound axis name: i"),
    ("psum_other", lambda: vmap(lambda a: lax.psum(a, "j"), axis_name="i")(jnp.ones(3)),
     NameError, "Found an unbound axis name: j. To fix this, please call psum under "
     "`jax.shard_map`."),
    ("axis_index_unbound", lambda: lax.axis_index("i"), NameError,
     "Found an unbound axis name: i. To fix this, please call axis_index under "
     "`jax.shard_map`."),
    ("psum_staged", lambda: pyjax.make_jaxpr(lambda a: lax.psum(a, "i"))(1.0), NameError,
     "Found an unbound axis name: i. To fix this, please call psum under `jax.shard_map`."),
    ("pmax_eager", lambda: lax.pmax(jnp.ones(3), "i"), NameError,
     "Found an unbound axis name: i. To fix this, please call pmax under `jax.shard_map`."),
    ("pmean_eager", lambda: lax.pmean(jnp.ones(3), "i"), NameError, "unbound axis name: i"),
    ("groups", lambda: vmap(lambda a: lax.psum(a, "i", axis_index_groups=[[0, 1], [2]]),
                            axis_name="i")(jnp.ones(3)), NotImplementedError,
     "axis_index_groups not supported in vmap collectives. Please open a feature request!"),
]


@pytest.mark.parametrize("name,fn,exc,msg", _ERRORS, ids=[e[0] for e in _ERRORS])
def test_errors(name, fn, exc, msg):
  with pytest.raises(exc) as info:
    fn()
  assert str(info.value) == msg


def test_prefix_errors():
  with pytest.raises(ValueError) as info:
    vmap(lambda a: a + 1, in_axes=({"a": 0},))(jnp.ones(3))
  assert str(info.value) == (
      "vmap in_axes specification must be a tree prefix of the corresponding value; \n"
      "  Mismatch details (1 found):\n  pytree structure error: different types at key path\n"
      "    vmap in_axes[0]\nAt that key path, the prefix pytree vmap in_axes has a subtree of "
      "type\n    <class 'dict'>\nbut at the same key path the full pytree has a subtree of "
      "different type\n    <class 'pyjax._src.api_vmap.PytreeLeaf'>.")
  with pytest.raises(ValueError) as info:
    vmap(lambda a: (a + 1, a), out_axes=(0,))(jnp.ones(3))
  assert str(info.value) == (
      "vmap out_axes specification must be a tree prefix of the corresponding value; \n"
      "  Mismatch details (1 found):\n  pytree structure error: different lengths of tuple at "
      "key path\n    vmap out_axes\nAt that key path, the prefix pytree vmap out_axes has a "
      "subtree of type tuple of length 1, but the full pytree has a subtree of the same type "
      "but of length 2.")


def test_errors_match_live_jax(jax):
  jjnp = jax.numpy
  cases = [
      (lambda v: v(lambda a, b: a + 1)(jjnp.ones(3), jjnp.ones(4)), "sizes"),
      (lambda v: v(lambda a: a + 1, in_axes=1)(jjnp.ones(3)), "rank"),
      (lambda v: v(lambda a: a + 1, out_axes=None)(jjnp.ones(3)), "out_none"),
      (lambda v: v(lambda a: a, axis_size=4)(jjnp.ones(3)), "sizes_axis_size"),
      (lambda v: v(lambda a: a + 1, in_axes=(0, "a")), "in_axes_leaf"),
  ]
  recorded = {e[0]: e[3] for e in _ERRORS}
  for fn, name in cases:
    with pytest.raises(Exception) as info:
      fn(jax.vmap)
    assert str(info.value) == recorded[name]


def test_tracer_errors_under_vmap():
  with pytest.raises(pyjax.errors.TracerBoolConversionError):
    vmap(lambda a: a if a > 0 else -a)(jnp.ones(3))
  with pytest.raises(pyjax.errors.ConcretizationTypeError):
    vmap(lambda a: float(a))(jnp.ones(3))
  seen = []
  vmap(lambda a: seen.append(repr(a)) or a)(jnp.ones(3))
  assert seen == ["VmapTracer(aval=float32[], batched=float32[3])"]


def test_leaked_tracer():
  leaked = []
  vmap(lambda a: leaked.append(a) or a)(jnp.ones(3))
  with pytest.raises(pyjax.errors.UnexpectedTracerError):
    jit(lambda b: b + leaked[0])(1.0)


def test_wrapped_function_metadata():
  def f(x):
    """Doc of f."""
    return x
  g = vmap(f)
  assert g.__name__ == "f"
  assert g.__doc__.startswith("Vectorized version of f. Takes similar arguments as f but with "
                              "additional array axes over which f is mapped.")
  assert "Doc of f." in g.__doc__


# --- collectives ---------------------------------------------------------------------------
def test_collectives_values():
  x = jnp.arange(3.)
  np.testing.assert_allclose(np.asarray(vmap(lambda a: lax.psum(a, "i"), axis_name="i")(x)),
                             [3, 3, 3])
  np.testing.assert_allclose(np.asarray(vmap(lambda a: lax.pmean(a, "i"), axis_name="i")(x)),
                             [1, 1, 1])
  np.testing.assert_allclose(np.asarray(vmap(lambda a: a - lax.pmax(a, "i"), axis_name="i")(x)),
                             [-2, -1, 0])
  np.testing.assert_allclose(np.asarray(vmap(lambda a: lax.pmin(a, "i"), axis_name="i")(x)),
                             [0, 0, 0])
  idx = vmap(lambda a: lax.axis_index("i"), axis_name="i")(x)
  assert idx.dtype == np.int32 and list(np.asarray(idx)) == [0, 1, 2]
  assert list(np.asarray(vmap(lambda a: lax.axis_size("i"), axis_name="i")(x))) == [3, 3, 3]
  g = vmap(lambda a: lax.all_gather(a * jnp.ones(2), "i", axis=1), axis_name="i")(x)
  assert g.shape == (3, 2, 3)
  np.testing.assert_allclose(np.asarray(g[1, 0]), [0, 1, 2])
  gt = vmap(lambda a: lax.all_gather(a * jnp.ones(2), "i", tiled=True), axis_name="i")(x)
  np.testing.assert_allclose(np.asarray(gt[0]), [0, 0, 1, 1, 2, 2])
  s = vmap(lambda a: lax.psum_scatter(jnp.arange(3.) * a, "i"), axis_name="i")(x)
  np.testing.assert_allclose(np.asarray(s), [0, 3, 6])
  st = vmap(lambda a: lax.psum_scatter(jnp.ones(6) * a, "i", tiled=True), axis_name="i")(x)
  np.testing.assert_allclose(np.asarray(st), np.full((3, 2), 3.0))
  p = vmap(lambda a: lax.ppermute(a, "i", [(0, 1), (1, 2), (2, 0)]), axis_name="i")(x)
  np.testing.assert_allclose(np.asarray(p), [2, 0, 1])
  b = vmap(lambda a: lax.psum(a > 0, "i"), axis_name="i")(x)
  assert b.dtype == np.int32 and list(np.asarray(b)) == [2, 2, 2]
  c = vmap(lambda a: lax.psum(1, "i") + a, axis_name="i")(x)
  np.testing.assert_allclose(np.asarray(c), [3, 4, 5])


def test_all_to_all():
  x = np.arange(72, dtype=_F).reshape(3, 3, 4, 2)
  f = lambda s, c, **kw: vmap(lambda a: lax.all_to_all(a, "i", s, c, **kw), axis_name="i")
  # member j gets [x_i[j] for i] along the concat axis
  np.testing.assert_array_equal(np.asarray(f(0, 0)(x)), x.transpose(1, 0, 2, 3))
  np.testing.assert_array_equal(np.asarray(f(0, 2)(x)), x.transpose(1, 2, 3, 0))
  y = np.arange(36, dtype=_F).reshape(3, 6, 2)
  ref = np.stack([np.concatenate([y[i, 2 * j:2 * j + 2] for i in range(3)], 1)
                  for j in range(3)])
  np.testing.assert_array_equal(np.asarray(f(0, 1, tiled=True)(y)), ref)
  with pytest.raises(ValueError, match="all_to_all requires the size of the mapped axis"):
    f(0, 1)(y)
  w = np.arange(12, dtype=_F).reshape(4, 3)
  g = lambda a: (lax.all_to_all(a, "i", 0, 1) * w).sum()
  z = x[..., 0]
  np.testing.assert_allclose(np.asarray(vmap(grad(g), axis_name="i")(z)),
                             np.asarray(grad(lambda zs: vmap(g, axis_name="i")(zs).sum())(z)))


def test_collectives_nested_and_multiple_axes():
  x = jnp.arange(6.).reshape(2, 3)
  f = vmap(vmap(lambda a: lax.psum(a, ("i", "j")), axis_name="j"), axis_name="i")
  np.testing.assert_allclose(np.asarray(f(x)), np.full((2, 3), 15.0))
  f = vmap(vmap(lambda a: lax.psum(a, "i"), axis_name="j"), axis_name="i")
  np.testing.assert_allclose(np.asarray(f(x)), np.tile([3.0, 5.0, 7.0], (2, 1)))
  f = vmap(vmap(lambda a: lax.axis_index(("i", "j")), axis_name="j"), axis_name="i")
  assert np.asarray(f(x)).tolist() == [[0, 1, 2], [3, 4, 5]]
  f = vmap(vmap(lambda a: lax.all_gather(a, "i"), axis_name="j"), axis_name="i")
  np.testing.assert_allclose(np.asarray(f(x))[1, 2], [2.0, 5.0])
  f = vmap(vmap(lambda a: lax.pmax(a, "i") + lax.pmin(a, "j"), axis_name="j"), axis_name="i")
  np.testing.assert_allclose(np.asarray(f(x)), [[3, 4, 5], [6, 7, 8]])


def test_collectives_under_jit_and_grad():
  x = jnp.arange(3.)
  out = vmap(lambda a: jit(lambda b: lax.psum(b, "i"))(a), axis_name="i")(x)
  np.testing.assert_allclose(np.asarray(out), [3, 3, 3])
  out = vmap(lambda a: jit(lambda: lax.axis_index("i"))(), axis_name="i")(x)
  assert np.asarray(out).tolist() == [0, 1, 2]
  out = jit(vmap(lambda a: a - lax.pmean(a, "i"), axis_name="i"))(x)
  np.testing.assert_allclose(np.asarray(out), [-1, 0, 1])
  g = vmap(grad(lambda a: lax.psum(a * a, "i")), axis_name="i")(x)
  np.testing.assert_allclose(np.asarray(g), [0, 6, 12])
  g = grad(lambda xs: vmap(lambda a: lax.psum(a * a, "i"), axis_name="i")(xs).sum())(x)
  np.testing.assert_allclose(np.asarray(g), [0, 6, 12])
  g = vmap(grad(lambda a: lax.all_gather(a, "i").sum()), axis_name="i")(x)
  np.testing.assert_allclose(np.asarray(g), [3, 3, 3])
  with pytest.raises(NotImplementedError, match="Differentiation rule for 'pmax'"):
    vmap(grad(lambda a: lax.pmax(a, "i")), axis_name="i")(x)


_PJAXPRS = [
    (lambda a: lax.psum((a, a * 2), "i"),
     "{ lambda ; a:f32[3]. let\n    b:f32[3] = mul a 2.0:f32[]\n"
     "    c:f32[] = psum[axes=(0,) axis_index_groups=None] a\n"
     "    d:f32[] = psum[axes=(0,) axis_index_groups=None] b\n"
     "    e:f32[3] = broadcast_in_dim c\n    f:f32[3] = broadcast_in_dim d\n  in (e, f) }"),
    (lambda a: lax.pmax(a, "i") + lax.axis_index("i"),
     "{ lambda ; a:f32[3]. let\n    b:f32[] = pmax[axes=(0,) axis_index_groups=None] a\n"
     "    c:i32[3] = iota[dimension=0 dtype=int32 shape=(3,) sharding=None] \n"
     "    d:f32[3] = convert_element_type[new_dtype=float32 weak_type=False] c\n"
     "    e:f32[3] = add b d\n  in (e,) }"),
    (lambda a: a + lax.psum(1, "i"),
     "{ lambda ; a:f32[3]. let b:f32[3] = add a 3.0:f32[] in (b,) }"),
    (lambda a: lax.pmean(a, "i"),
     "{ lambda ; a:f32[3]. let\n    b:f32[] = psum[axes=(0,) axis_index_groups=None] a\n"
     "    c:f32[] = div b 3.0:f32[]\n    d:f32[3] = broadcast_in_dim c\n  in (d,) }"),
    (lambda a: lax.all_gather(a, "i"),
     "{ lambda ; a:f32[3]. let\n"
     "    b:f32[3,3] = broadcast_in_dim[broadcast_dimensions=(np.int64(1),)] a\n  in (b,) }"),
]


@pytest.mark.parametrize("k", range(len(_PJAXPRS)))
def test_collective_jaxprs_match_jax(k):
  f, text = _PJAXPRS[k]
  assert str(pyjax.make_jaxpr(vmap(f, axis_name="i"))(jnp.ones(3))) == text


# --- custom_jvp / custom_vjp -----------------------------------------------------------------
@pyjax.custom_jvp
def _cj(x, y):
  return jnp.sin(x) * y


@_cj.defjvp
def _cj_jvp(primals, tangents):
  x, y = primals
  tx, ty = tangents
  return _cj(x, y), 2.0 * jnp.cos(x) * y * tx + jnp.sin(x) * ty   # 2x: a visible custom rule


@pyjax.custom_vjp
def _cv(x, y):
  return jnp.sin(x) * y


def _cv_fwd(x, y):
  return _cv(x, y), (jnp.cos(x), jnp.sin(x), y)


def _cv_bwd(res, ct):
  c, s, y = res
  return 2.0 * c * y * ct, s * ct


_cv.defvjp(_cv_fwd, _cv_bwd)


@pytest.mark.parametrize("fn", [_cj, _cv], ids=["custom_jvp", "custom_vjp"])
def test_custom_rules_under_vmap(fn):
  x = jnp.arange(3.)
  y = jnp.float32(2.0)
  ys = jnp.array([1.0, 2.0, 3.0])
  np.testing.assert_allclose(np.asarray(vmap(fn, in_axes=(0, None))(x, y)),
                             np.sin(np.arange(3.)) * 2, rtol=1e-6)
  expect = 4 * np.cos(np.arange(3.))
  np.testing.assert_allclose(np.asarray(vmap(grad(fn), in_axes=(0, None))(x, y)), expect,
                             rtol=1e-6)
  gx, gy = grad(lambda a, b: vmap(fn, in_axes=(0, None))(a, b).sum(), argnums=(0, 1))(x, y)
  np.testing.assert_allclose(np.asarray(gx), expect, rtol=1e-6)
  np.testing.assert_allclose(float(gy), np.sin(np.arange(3.)).sum(), rtol=1e-6)
  gx, gy = grad(lambda a, b: jit(vmap(fn))(a, b).sum(), argnums=(0, 1))(x, ys)
  np.testing.assert_allclose(np.asarray(gx), 2 * np.cos(np.arange(3.)) * np.arange(1, 4),
                             rtol=1e-6)
  np.testing.assert_allclose(np.asarray(gy), np.sin(np.arange(3.)), rtol=1e-6)
  if fn is _cj:
    j = pyjax.jacfwd(lambda a: vmap(fn, in_axes=(0, None))(a, y))(x)
    np.testing.assert_allclose(np.asarray(j), np.diag(expect), rtol=1e-6)
  jaxpr = pyjax.make_jaxpr(vmap(fn, in_axes=(0, None)))(x, y)
  assert jaxpr.eqns[0].primitive.name in ("custom_jvp_call", "custom_vjp_call")


def test_custom_jvp_closing_over_batched_value():
  def outer(c, x):
    @pyjax.custom_jvp
    def f(x):
      return x * c

    @f.defjvp
    def f_jvp(p, t):
      return f(p[0]), t[0] * c * 10.0
    return grad(f)(x)
  cs = jnp.arange(3.)
  np.testing.assert_allclose(np.asarray(vmap(outer, in_axes=(0, None))(cs, 1.0)),
                             10 * np.arange(3.), rtol=1e-6)


def test_custom_jvp_using_the_axis_with_unbatched_arguments():
  @pyjax.custom_jvp
  def f(x):
    return x + lax.axis_index("i")
  f.defjvp(lambda p, t: (f(p[0]), t[0]))
  np.testing.assert_allclose(np.asarray(vmap(lambda a: f(1.0), axis_name="i")(jnp.ones(3))),
                             [1, 2, 3])


def test_nn_style_custom_jvp_functions():
  x = jnp.linspace(-2, 2, 12).reshape(3, 4)
  f = lambda r: jnp.sum(jnp.maximum(r, 0.0) ** 2) + jnp.log(jnp.sum(jnp.exp(r)))
  ref = np.stack([np.asarray(grad(f)(r)) for r in x])
  np.testing.assert_allclose(np.asarray(vmap(grad(f))(x)), ref, rtol=1e-5)


# --- batch_jaxpr helpers (the API other modules use) --------------------------------------
def test_batch_jaxpr_helpers():
  from pyjax._src.avals import ShapedArray
  closed = core.trace_to_jaxpr(lambda a, b: [a * b, b + 1.0],
                               [ShapedArray((2,), np.dtype(np.float32)),
                                ShapedArray((), np.dtype(np.float32))])
  new, out_b = batching.batch_jaxpr(closed, 5, [True, False], False)
  assert out_b == [True, False]
  assert [v.aval.shape for v in new.jaxpr.invars] == [(5, 2), ()]
  new2, out_b2 = batching.batch_jaxpr(closed, 5, [True, False], True)
  assert out_b2 == [True, True] and new2.out_avals[1].shape == (5,)
  assert batching.batch_jaxpr(closed, 5, [True, False], False)[0] is new   # cached
  new3, dims = batching.batch_jaxpr_axes(closed, 4, [1, None])
  assert [v.aval.shape for v in new3.jaxpr.invars] == [(2, 4), ()]
  assert dims == (1, None)
  new4, dims4 = batching.batch_jaxpr_axes(closed, 4, [1, None], out_dims=[0, 0])
  assert dims4 == (0, 0) and new4.out_avals[0].shape == (4, 2)
  outs = core.eval_jaxpr(new4.jaxpr, new4.consts, jnp.ones((2, 4)), jnp.float32(3))
  np.testing.assert_allclose(np.asarray(outs[0]), np.full((4, 2), 3.0))
  np.testing.assert_allclose(np.asarray(outs[1]), np.full(4, 4.0))


def test_vmap_against_live_jax(jax):
  rng = np.random.default_rng(0)
  x = rng.standard_normal((4, 3, 5)).astype(_F)

  def f(np_, a):
    return np_.tanh(a).sum(axis=0) * np_.sort(a, axis=-1)[0] + np_.max(a)
  ours = vmap(lambda a: f(jnp, a), in_axes=1, out_axes=1)(x)
  ref = jax.vmap(lambda a: f(jax.numpy, a), in_axes=1, out_axes=1)(x)
  np.testing.assert_allclose(np.asarray(ours), np.asarray(ref), rtol=1e-5, atol=1e-6)
  assert ours.dtype == ref.dtype and ours.shape == ref.shape


def test_jit_under_vmap_retraces_for_a_new_axis_size():
  """A jitted function using collectives bakes the named axis' size into its trace: a vmap
  of another size must trace again (JAX's values)."""
  f = pyjax.jit(lambda x: pyjax.lax.pmean(x, "i"))
  g = pyjax.jit(lambda x: x * pyjax.lax.axis_size("i"))
  np.testing.assert_array_equal(pyjax.vmap(f, axis_name="i")(np.arange(3.0)), [1.0] * 3)
  np.testing.assert_array_equal(pyjax.vmap(f, axis_name="i")(np.arange(4.0)), [1.5] * 4)
  np.testing.assert_array_equal(pyjax.vmap(g, axis_name="i")(np.ones(3)), [3.0] * 3)
  np.testing.assert_array_equal(pyjax.vmap(g, axis_name="i")(np.ones(5)), [5.0] * 5)
  np.testing.assert_array_equal(pyjax.vmap(g, axis_name="i")(np.ones(3)), [3.0] * 3)


def test_vmap_of_grad_adds_unbatched_cotangents_at_batch_size():
  # squareplus's backward pass adds an unbatched cotangent to a batched one (add_any):
  # the staged result must have the batch size, or compiled code allocates a [1, ...] buffer
  g = pyjax.grad(lambda x: pyjax.nn.squareplus(x).sum())
  x = np.linspace(-2, 2, 36).astype(np.float32).reshape(3, 3, 4)
  closed = pyjax.make_jaxpr(pyjax.vmap(g))(x)
  assert [a.shape for a in closed.out_avals] == [(3, 3, 4)]
  want = np.stack([np.asarray(g(e)) for e in x])
  np.testing.assert_allclose(np.asarray(pyjax.jit(pyjax.vmap(g))(x)), want, rtol=1e-6)
