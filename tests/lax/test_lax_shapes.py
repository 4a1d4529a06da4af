"""Structural lax primitives: broadcast_in_dim, reshape, transpose, squeeze/expand_dims, rev,
concatenate, pad, iota, slice, dynamic_slice, dynamic_update_slice and their wrappers.
Compared with NumPy and, where installed, with real JAX (values, dtypes, weak types, errors,
jaxpr text)."""
import ml_dtypes
import numpy as np
import pytest

import pyjax.numpy as jnp
from pyjax import lax
from pyjax._src import core
from pyjax._src.avals import ShapedArray
from pyjax._src.lax import shapes as lax_s

bf16 = np.dtype(ml_dtypes.bfloat16)
DTYPES = [bf16, np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.int8),
          np.dtype(np.uint8), np.dtype(np.int32), np.dtype(np.bool_)]
f32 = np.dtype(np.float32)
i32 = np.dtype(np.int32)


def _np(shape, dtype, seed=0):
  rng = np.random.RandomState(seed)
  if dtype == np.bool_:
    return rng.rand(*shape) > 0.5
  if dtype.kind in "iu":
    return rng.randint(0, 100, size=shape).astype(dtype)
  return rng.randn(*shape).astype(dtype)


def _pj(a):
  return jnp.asarray(a)


def _check(out, expected, dtype=None, weak=False):
  expected = np.asarray(expected)
  assert out.shape == expected.shape, (out.shape, expected.shape)
  assert out.dtype == (expected.dtype if dtype is None else dtype)
  assert out.weak_type == weak
  np.testing.assert_array_equal(np.asarray(out).astype(np.float64) if out.dtype == bf16 else np.asarray(out),
                                expected.astype(np.float64) if expected.dtype == bf16 else expected)


def _same_as_jax(jax, fn, *np_args):
  """Run fn(lax, *arrays) with pyjax and with JAX on the same NumPy inputs; compare."""
  import jax.numpy as jjnp
  ours = fn(lax, *[_pj(a) for a in np_args])
  ref = fn(jax.lax, *[jjnp.asarray(a) for a in np_args])
  ours_l = ours if isinstance(ours, (list, tuple)) else [ours]
  ref_l = ref if isinstance(ref, (list, tuple)) else [ref]
  for o, r in zip(ours_l, ref_l):
    assert o.shape == r.shape, (o.shape, r.shape)
    assert o.dtype == r.dtype, (o.dtype, r.dtype)
    assert o.weak_type == r.weak_type, (o.weak_type, r.weak_type)
    np.testing.assert_array_equal(np.asarray(o), np.asarray(r))


def trace(fun, *avals):
  return core.trace_to_jaxpr(lambda *a: list(fun(*a)), list(avals))


def _raises_like_jax(jax, fn, *np_args, traced=True):
  """fn(lax, *arrays) raises the same class and message with pyjax as with JAX (JAX run
  under make_jaxpr when ``traced``: its shape rules, not its eager fast paths)."""
  import jax.numpy as jjnp
  with pytest.raises(Exception) as ref:
    if traced:
      jax.make_jaxpr(lambda *a: fn(jax.lax, *a))(*[jjnp.asarray(a) for a in np_args])
    else:
      fn(jax.lax, *[jjnp.asarray(a) for a in np_args])
  with pytest.raises(Exception) as ours:
    fn(lax, *[_pj(a) for a in np_args])
  with pytest.raises(Exception) as ours_traced:
    trace(lambda *a: [fn(lax, *a)], *[ShapedArray(a.shape, a.dtype) for a in np_args])
  for e in (ours.value, ours_traced.value):
    assert isinstance(e, type(ref.value)) or type(e).__name__ == type(ref.value).__name__, \
        (type(e), type(ref.value))
    assert str(e).split("\n")[0] == str(ref.value).split("\n")[0]
  return ours.value


# --- values against NumPy, every dtype ---------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_structural_values_all_dtypes(dtype):
  a = _np((2, 3), dtype)
  x = _pj(a)
  _check(lax.broadcast_in_dim(x, (4, 2, 3), (1, 2)), np.broadcast_to(a, (4, 2, 3)))
  _check(lax.broadcast_in_dim(lax.reshape(x, (2, 1, 3)), (2, 5, 3), (0, 1, 2)),
         np.broadcast_to(a.reshape(2, 1, 3), (2, 5, 3)))
  _check(lax.broadcast(x, (2,)), np.broadcast_to(a, (2, 2, 3)))
  _check(lax.reshape(x, (3, 2)), a.reshape(3, 2))
  _check(lax.reshape(x, (3, 2), (1, 0)), a.T.reshape(3, 2))
  _check(lax.transpose(x, (1, 0)), a.T)
  _check(lax.squeeze(lax.reshape(x, (1, 2, 1, 3)), (0, -2)), a)
  _check(lax.expand_dims(x, (0, 3)), a[None, :, :, None])
  _check(lax.rev(x, (0, 1)), a[::-1, ::-1])
  _check(lax.rev(x, ()), a)
  _check(lax.concatenate([x, x, x], 1), np.concatenate([a, a, a], 1))
  _check(lax.slice(x, (0, 1), (2, 3)), a[0:2, 1:3])
  _check(lax.slice(x, (0, 0), (2, 3), (2, 2)), a[0:2:2, 0:3:2])
  _check(lax.dynamic_slice(x, (1, 1), (1, 2)), a[1:2, 1:3])
  upd = _np((1, 2), dtype, 1)
  expected = a.copy()
  expected[1:2, 0:2] = upd
  _check(lax.dynamic_update_slice(x, _pj(upd), (1, 0)), expected)
  pv = np.zeros((), dtype)
  padded = lax.pad(x, _pj(pv), [(1, 0, 1), (0, 2, 0)])
  ref = np.zeros((4, 5), dtype)
  ref[1::2, 0:3] = a
  _check(padded, ref)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_structural_matches_jax_all_dtypes(jax, dtype):
  a = _np((2, 3), dtype)
  b = _np((2, 1), dtype, 2)
  pv = np.ones((), dtype)
  _same_as_jax(jax, lambda lx, x: lx.broadcast_in_dim(x, (4, 2, 3), (1, 2)), a)
  _same_as_jax(jax, lambda lx, x: lx.reshape(x, (6,), (1, 0)), a)
  _same_as_jax(jax, lambda lx, x, y: lx.concatenate([x, y, x], 1), a, b)
  _same_as_jax(jax, lambda lx, x, p: lx.pad(x, p, [(-1, 2, 2), (1, -2, 1)]), a, pv)
  _same_as_jax(jax, lambda lx, x: lx.dynamic_slice(x, (-1, 2), (2, 2)), a)
  _same_as_jax(jax, lambda lx, x, y: lx.dynamic_update_slice(x, y, (5, -1)), a, b)
  _same_as_jax(jax, lambda lx, x: lx.rev(lx.transpose(x, (1, 0)), (1,)), a)


# --- zero- and one-sized dimensions ------------------------------------------------------
@pytest.mark.parametrize("shape", [(0, 3), (1, 3), (3, 0), (1, 1), (0, 0)])
def test_empty_and_unit_dims(jax, shape):
  a = _np(shape, f32)
  _same_as_jax(jax, lambda lx, x: lx.broadcast_in_dim(x, (2,) + shape, (1, 2)), a)
  _same_as_jax(jax, lambda lx, x: lx.reshape(x, (shape[1], shape[0])), a)
  _same_as_jax(jax, lambda lx, x: lx.transpose(x, (1, 0)), a)
  _same_as_jax(jax, lambda lx, x: lx.rev(x, (0, 1)), a)
  _same_as_jax(jax, lambda lx, x: lx.concatenate([x, x], 0), a)
  _same_as_jax(jax, lambda lx, x: lx.concatenate([x, x], 1), a)
  _same_as_jax(jax, lambda lx, x: lx.pad(x, np.float32(7), [(1, 1, 2), (0, 1, 1)]), a)
  _same_as_jax(jax, lambda lx, x: lx.slice(x, (0, 0), shape, (2, 2)), a)
  _same_as_jax(jax, lambda lx, x: lx.dynamic_slice(x, (3, -3), shape), a)
  _same_as_jax(jax, lambda lx, x: lx.dynamic_update_slice(x, x, (1, 1)), a)
  _same_as_jax(jax, lambda lx, x: lx.collapse(x, 0), a)
  _same_as_jax(jax, lambda lx, x: lx.full_like(x, 3), a)


# --- pad ---------------------------------------------------------------------------------
_PAD_CONFIGS = [
    [(0, 0, 0), (0, 0, 0)],
    [(1, 2, 0), (3, 0, 0)],
    [(-1, 0, 0), (0, -2, 0)],
    [(0, 0, 2), (0, 0, 1)],
    [(-2, -1, 1), (2, -3, 2)],
    [(-4, 0, 1), (0, 0, 3)],
    [(-3, -2, 1), (-1, -1, 0)],
    [(5, -5, 0), (0, 0, 0)],
]


@pytest.mark.parametrize("cfg", _PAD_CONFIGS, ids=str)
def test_pad_configs(jax, cfg):
  a = _np((3, 4), f32)
  _same_as_jax(jax, lambda lx, x: lx.pad(x, np.float32(-1), cfg), a)


def test_pad_numpy_reference():
  a = np.arange(1, 5, dtype=np.int32)
  out = lax.pad(_pj(a), np.int32(0), [(-1, 2, 1)])
  _check(out, np.array([0, 2, 0, 3, 0, 4, 0, 0], np.int32))


def test_pad_weak_type():
  w = lax.full((3,), 1.0)
  assert lax.pad(w, 0.0, [(1, 1, 0)]).weak_type
  assert not lax.pad(w, np.float32(0), [(1, 1, 0)]).weak_type
  assert not lax.pad(_pj(np.ones(3, np.float32)), 0.0, [(1, 1, 0)]).weak_type
  assert lax.pad(2.0, 0.0, []).weak_type


# --- iota --------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.int8, np.float16, ml_dtypes.bfloat16,
                                   np.float32, np.complex64], ids=str)
def test_iota(jax, dtype):
  ours = lax.iota(dtype, 300)
  ref = jax.lax.iota(dtype, 300)
  assert ours.dtype == ref.dtype and not ours.weak_type
  np.testing.assert_array_equal(np.asarray(ours), np.asarray(ref))
  ours = lax.broadcasted_iota(dtype, (2, 3, 4), 1)
  ref = jax.lax.broadcasted_iota(dtype, (2, 3, 4), 1)
  np.testing.assert_array_equal(np.asarray(ours), np.asarray(ref))
  assert lax.iota(dtype, 0).shape == (0,)


def test_iota_x64_truncation_warns():
  with pytest.warns(UserWarning, match="broadcasted_iota"):
    out = lax.iota(np.int64, 3)
  assert out.dtype == np.int32
  assert lax.iota(int, 2).dtype == np.int32 and lax.iota(float, 2).dtype == np.float32


# --- slicing -----------------------------------------------------------------------------
def test_slice_family(jax):
  a = _np((4, 5), f32)
  _same_as_jax(jax, lambda lx, x: lx.slice(x, (1, 0), (4, 5), (2, 3)), a)
  _same_as_jax(jax, lambda lx, x: lx.slice(x, [0, 0], np.array([0, 5])), a)
  _same_as_jax(jax, lambda lx, x: lx.slice_in_dim(x, -2, None, axis=1), a)
  _same_as_jax(jax, lambda lx, x: lx.slice_in_dim(x, None, -1, stride=2, axis=-2), a)
  _same_as_jax(jax, lambda lx, x: lx.index_in_dim(x, -1, axis=1), a)
  _same_as_jax(jax, lambda lx, x: lx.index_in_dim(x, 2, axis=0, keepdims=False), a)


@pytest.mark.parametrize("starts", [(0, 0), (2, 3), (3, 4), (100, 100), (-1, -2), (-100, 2)])
def test_dynamic_slice_clamps(jax, starts):
  a = _np((4, 5), f32)
  _same_as_jax(jax, lambda lx, x: lx.dynamic_slice(x, starts, (2, 3)), a)
  _same_as_jax(jax, lambda lx, x: lx.dynamic_update_slice(x, lx.full((2, 3), np.float32(9)), starts), a)


@pytest.mark.parametrize("idx_dtype", [np.int8, np.uint8, np.int32, np.int16])
def test_dynamic_slice_array_indices(jax, idx_dtype):
  a = _np((4, 5), f32)
  i = np.array(3 if idx_dtype == np.uint8 else -1, idx_dtype)
  j = np.array(4, idx_dtype)
  _same_as_jax(jax, lambda lx, x, i, j: lx.dynamic_slice(x, (i, j), (2, 2)), a, i, j)
  _same_as_jax(jax, lambda lx, x, i, j: lx.dynamic_update_slice(x, lx.full((1, 2), np.float32(5)),
                                                                (i, j)), a, i, j)
  _same_as_jax(jax, lambda lx, x, i: lx.dynamic_slice_in_dim(x, i, 2, axis=1), a, i)
  _same_as_jax(jax, lambda lx, x, i: lx.dynamic_index_in_dim(x, i, 0, keepdims=False), a, i)
  _same_as_jax(jax, lambda lx, x, i: lx.dynamic_update_slice_in_dim(
      x, lx.full((4, 1), np.float32(2)), i, 1), a, i)
  _same_as_jax(jax, lambda lx, x, i: lx.dynamic_update_index_in_dim(
      x, lx.full((5,), np.float32(2)), i, 0), a, i)


def test_dynamic_slice_index_array_and_allow_negative(jax):
  a = _np((4, 5), f32)
  idx = np.array([-1, 2], np.int32)
  _same_as_jax(jax, lambda lx, x, i: lx.dynamic_slice(x, i, (1, 2)), a, idx)
  _same_as_jax(jax, lambda lx, x: lx.dynamic_slice(x, np.array([1, 1]), (1, 2)), a)
  _same_as_jax(jax, lambda lx, x, i: lx.dynamic_slice(x, (lx.index_in_dim(i, 0, keepdims=False), 1), (1, 2),
                                                      allow_negative_indices=False), a, idx)
  _same_as_jax(jax, lambda lx, x: lx.dynamic_slice(x, (1, 1), (1, 2),
                                                   allow_negative_indices=(False, True)), a)


def test_dynamic_slice_weak_array_index(jax):
  a = _np((4, 5), f32)
  _same_as_jax(jax, lambda lx, x: lx.dynamic_slice(x, (lx.full((), -1), 1), (1, 2)), a)
  _same_as_jax(jax, lambda lx, x: lx.dynamic_update_slice(x, lx.full((1, 2), np.float32(0)),
                                                          (lx.full((), -2), lx.full((), 7))), a)


def test_x64_indices_and_iota(jax, x64):
  a = np.arange(20, dtype=np.float64).reshape(4, 5)
  _same_as_jax(jax, lambda lx, x: lx.dynamic_slice(x, (-1, 2), (1, 2)), a)
  _same_as_jax(jax, lambda lx: lx.iota(np.int64, 4))
  _same_as_jax(jax, lambda lx: lx.full((2,), 1))
  j = trace(lambda x: [lax.dynamic_slice(x, (1, -1), (1, 2))], ShapedArray((4, 5), np.dtype("float64")))
  assert str(j) == ("{ lambda ; a:f64[4,5]. let\n"
                    "    b:f64[1,2] = dynamic_slice[slice_sizes=(1, 2)] a 1:i64[] 4:i64[]\n"
                    "  in (b,) }")


def test_dynamic_update_slice_weak_types():
  w = lax.full((3,), 1.0)
  assert not lax.dynamic_update_slice(w, lax.full((1,), 2.0), (0,)).weak_type  # index is strong
  assert lax.dynamic_update_slice(lax.full((), 1.0), lax.full((), 2.0), ()).weak_type
  assert lax.dynamic_slice(w, (0,), (1,)).weak_type


# --- broadcasts, reshapes, helpers --------------------------------------------------------
def test_broadcast_helpers(jax):
  a = _np((2, 3), f32)
  _same_as_jax(jax, lambda lx, x: lx.broadcast_to_rank(x, 4), a)
  _same_as_jax(jax, lambda lx, x: lx.broadcast_to_rank(x, 1), a)
  _same_as_jax(jax, lambda lx, x: lx.broadcast_in_dim(lx.reshape(x, (2, 1, 3)), (2, 4, 3), (0, 1, 2)), a)
  _same_as_jax(jax, lambda lx, x: lx.broadcast_in_dim(x, (3, 2), (1, 0)), a)
  _same_as_jax(jax, lambda lx, x: lx.broadcast(x, ()), a)
  _same_as_jax(jax, lambda lx, x: lx.expand_dims(x, (-1, 0)), a)
  _same_as_jax(jax, lambda lx, x: [lx.collapse(x, 0), lx.collapse(x, 1, 1), lx.collapse(x, 0, 5),
                                   lx.collapse(lx.reshape(x, (1, 2, 3)), 0, -1)], a)


def test_noop_binds_return_operand():
  x = _pj(_np((2, 3), f32))
  assert lax.reshape(x, (2, 3)) is x
  assert lax.reshape(x, (2, 3), (0, 1)) is x
  assert lax.transpose(x, (0, 1)) is x
  assert lax.squeeze(x, ()) is x
  assert lax.expand_dims(x, ()) is x
  assert lax.broadcast_in_dim(x, (2, 3), (0, 1)) is x
  assert lax.concatenate([x], 0) is x
  out = lax.reshape(np.ones((2, 3)), (2, 3))  # NumPy operands become arrays
  assert out.dtype == f32 and type(out) is type(x)
  s = lax.broadcast(2.0, ())
  assert s.weak_type and s.dtype == f32 and type(s) is type(x)


def test_scalar_and_weak_operands(jax):
  for fn in [lambda lx: lx.broadcast_in_dim(2.0, (2, 3), ()),
             lambda lx: lx.broadcast(3, (2,)),
             lambda lx: lx.reshape(2.0, ()),
             lambda lx: lx.expand_dims(1.0, (0,)),
             lambda lx: lx.full((2,), 1.0),
             lambda lx: lx.full((2,), 1),
             lambda lx: lx.full((2,), True),
             lambda lx: lx.full(2, 1, np.int8),
             lambda lx: lx.full((2,), np.float64(1.5)),
             lambda lx: lx.full((2,), 1.5, np.int32),
             lambda lx: lx.full((2,), 300, np.int8),
             lambda lx: lx.full((2,), np.nan, np.int32),
             lambda lx: lx.full_like(2.0, 1),
             lambda lx: lx.full_like(np.ones(3), 1),
             lambda lx: lx.full_like(np.ones(3), 1.5, np.int32),
             lambda lx: lx.full_like(np.ones(3, np.int8), 1, shape=(2, 2))]:
    _same_as_jax(jax, fn)


def test_full_like_weak(jax):
  w = lax.full((2,), 1.0)
  assert lax.full_like(w, 3).weak_type
  assert not lax.full_like(w, 3, np.float32).weak_type
  assert lax_s.zeros_like_array(w).weak_type
  np.testing.assert_array_equal(np.asarray(lax_s.zeros_like_array(_pj(np.ones((2, 2), np.int8)))),
                                np.zeros((2, 2), np.int8))


def test_broadcast_shapes(jax):
  cases = [((2, 1), (1, 3)), ((2, 1), (3,)), ((0,), (1,)), ((1, 2), (3, 1), (1,)), ((2,),),
           ((np.int64(2),), (1,))]
  for c in cases:
    assert lax.broadcast_shapes(*c) == jax.lax.broadcast_shapes(*c)
    assert all(type(d) is int for d in lax.broadcast_shapes(*c))
  for c in [((2, 2), (3,)), ((0,), (2,))]:
    with pytest.raises(ValueError, match="Incompatible shapes for broadcasting"):
      lax.broadcast_shapes(*c)
  with pytest.raises(TypeError, match="Only non-negative"):
    lax.broadcast_shapes((-1,), (1,))


def test_concatenate_operand_forms(jax):
  a = _np((2, 3), f32)
  _same_as_jax(jax, lambda lx, x: lx.concatenate(x, 0), a)
  _same_as_jax(jax, lambda lx, x: lx.concatenate([x, np.ones((2, 3), np.float32)], 0), a)
  w = lax.full((2,), 1.0)
  assert lax.concatenate([w, w], 0).weak_type
  assert not lax.concatenate([w, _pj(np.ones(2, np.float32))], 0).weak_type


# --- errors (class and message as JAX's shape rules) ---------------------------------------
_ERRORS = [
    lambda lx, x: lx.reshape(x, (-1,)),
    lambda lx, x: lx.reshape(x, (2, 3), (0,)),
    lambda lx, x: lx.reshape(x, (6,), (1, 2)),
    lambda lx, x: lx.reshape(x, (2.0, 3)),
    lambda lx, x: lx.transpose(x, (0,)),
    lambda lx, x: lx.transpose(x, (0, 0)),
    lambda lx, x: lx.transpose(x, (-1, 0)),
    lambda lx, x: lx.squeeze(x, (0,)),
    lambda lx, x: lx.squeeze(x, (2,)),
    lambda lx, x: lx.squeeze(lx.reshape(x, (1, 2, 3)), (0, -3)),
    lambda lx, x: lx.expand_dims(x, (3,)),
    lambda lx, x: lx.expand_dims(x, (0, 0)),
    lambda lx, x: lx.expand_dims(x, (-4,)),
    lambda lx, x: lx.rev(x, (2,)),
    lambda lx, x: lx.rev(x, (-1,)),
    lambda lx, x: lx.rev(x, (0, 0)),
    lambda lx, x: lx.concatenate([x, lx.reshape(x, (3, 2))], 0),
    lambda lx, x: lx.concatenate([x, lx.convert_element_type(x, np.int32)], 1),
    lambda lx, x: lx.concatenate([x, lx.reshape(x, (6,))], 0),
    lambda lx, x: lx.concatenate([x, x], 2),
    lambda lx, x: lx.concatenate([x, x], -1),
    lambda lx, x: lx.concatenate([], 0),
    lambda lx, x: lx.pad(x, 0.0, [(0, 0, 0)]),
    lambda lx, x: lx.pad(x, 0.0, [(0, 0, -1), (0, 0, 0)]),
    lambda lx, x: lx.pad(x, 0.0, [(-3, 0, 0), (0, 0, 0)]),
    lambda lx, x: lx.pad(x, 0.0, [(-4, 0, 1), (0, 0, 0)]),
    lambda lx, x: lx.pad(x, lx.broadcast(np.float32(0), (1,)), [(0, 0, 0), (0, 0, 0)]),
    lambda lx, x: lx.pad(x, np.float16(0), [(0, 0, 0), (0, 0, 0)]),
    lambda lx, x: lx.pad(x, 0, [(0, 0, 0), (0, 0, 0)]),
    lambda lx, x: lx.pad(x, 0.0, [(0, 0), (0, 0)]),
    lambda lx, x: lx.iota(np.int32, -1),
    lambda lx, x: lx.iota(np.bool_, 3),
    lambda lx, x: lx.iota(np.int32, 3.0),
    lambda lx, x: lx.broadcasted_iota(np.int32, (2, 3), 2),
    lambda lx, x: lx.broadcasted_iota(np.int32, (2, -3), 0),
    lambda lx, x: lx.slice(x, (0, 0), (3, 3)),
    lambda lx, x: lx.slice(x, (0,), (2,)),
    lambda lx, x: lx.slice(x, (0, 0), (2,)),
    lambda lx, x: lx.slice(x, (-1, 0), (2, 3)),
    lambda lx, x: lx.slice(x, (2, 0), (1, 3)),
    lambda lx, x: lx.slice(x, (0, 0), (2, 3), (1,)),
    lambda lx, x: lx.slice(x, (0, 0), (2, 3), (-1, 1)),
    lambda lx, x: lx.slice_in_dim(x, 0, 5, axis=1),
    lambda lx, x: lx.index_in_dim(x, 3, axis=1),
    lambda lx, x: lx.index_in_dim(x, -4, axis=1),
    lambda lx, x: lx.dynamic_slice(x, (0,), (1, 2)),
    lambda lx, x: lx.dynamic_slice(x, (0, 0), (3, 2)),
    lambda lx, x: lx.dynamic_slice(x, (0, 0), (-1, 2)),
    lambda lx, x: lx.dynamic_slice(x, (0, 0), (1.0, 2)),
    lambda lx, x: lx.dynamic_slice(x, (1.0, 0), (1, 2)),
    lambda lx, x: lx.dynamic_slice(x, (np.int8(1), 0), (1, 2)),
    lambda lx, x: lx.dynamic_slice(x, (True, 0), (1, 2)),
    lambda lx, x: lx.dynamic_slice(x, (lx.iota(np.int32, 2), 0), (1, 2)),
    lambda lx, x: lx.dynamic_slice(x, np.array([[1, 1]]), (1, 2)),
    lambda lx, x: lx.dynamic_slice(x, (0, -1), (1, 2), allow_negative_indices=False),
    lambda lx, x: lx.dynamic_update_slice(x, x, (0,)),
    lambda lx, x: lx.dynamic_update_slice(x, lx.broadcast(x, (2,)), (0, 0)),
    lambda lx, x: lx.dynamic_update_slice(x, lx.reshape(x, (3, 2)), (0, 0)),
    lambda lx, x: lx.dynamic_update_slice(x, lx.convert_element_type(x, np.int32), (0, 0)),
    lambda lx, x: lx.dynamic_update_slice(x, x, (0, 0.0)),
    lambda lx, x: lx.dynamic_update_slice(x, x, (lx.iota(np.int32, 2), 0)),
    lambda lx, x: lx.broadcast_in_dim(x, (2, 3, 4), (0,)),
    lambda lx, x: lx.broadcast_in_dim(x, (2, 3, 4), (0, 2)),
    lambda lx, x: lx.broadcast_in_dim(x, (2, 3, 4), (0, 3)),
    lambda lx, x: lx.broadcast_in_dim(x, (3,), (0,)),
    lambda lx, x: lx.broadcast_in_dim(x, (2, -3), (0, 1)),
    lambda lx, x: lx.broadcast_in_dim(x, (2, 3), (-2, -1)),
    lambda lx, x: lx.broadcast(x, (-1,)),
    lambda lx, x: lx.collapse(x, 2, 1),
    lambda lx, x: lx.full((2,), lx.broadcast(np.float32(1), (2,))),
    lambda lx, x: lx.full((-2,), 1),
    lambda lx, x: lx.full((2,), [1]),
]


@pytest.mark.parametrize("i", range(len(_ERRORS)))
def test_errors_match_jax(jax, i):
  _raises_like_jax(jax, _ERRORS[i], _np((2, 3), f32))


def test_float_shape_elements():
  # JAX's abstract-eval cache treats (2.0,) like (2,), so these are checked without JAX.
  x = _pj(_np((2, 3), f32))
  cases = [
      (lambda: lax.broadcast(x, (2.0,)), "broadcast_in_dim shape must have every element be an "
       "integer type, got (<class 'float'>, <class 'int'>, <class 'int'>)."),
      (lambda: lax.broadcast_in_dim(x, (2.0, 3), (0, 1)), "broadcast_in_dim shape must have every "
       "element be an integer type, got (<class 'float'>, <class 'int'>)."),
      (lambda: lax.broadcast_in_dim(x, (2, 3), (0.0, 1)), "broadcast_in_dim broadcast_dimensions "
       "must have every element be an integer type, got (<class 'float'>, <class 'int'>)."),
      (lambda: lax.rev(x, (0.0,)), "rev dimensions must have every element be an integer type, "
       "got (<class 'float'>,)."),
      (lambda: lax.slice(x, (0.0, 0), (2, 3)), "slice start_indices must have every element be "
       "an integer type, got (<class 'float'>, <class 'int'>)."),
  ]
  for fn, msg in cases:
    with pytest.raises(TypeError) as e:
      fn()
    assert str(e.value) == msg


def test_reshape_size_mismatch():
  x = _pj(_np((2, 3), f32))
  with pytest.raises(ValueError, match=r"reshape total size must be unchanged, got new_sizes "
                     r"\(4, 2\) \(of total size 8\) for shape \(2, 3\) \(of total size 6\)."):
    lax.reshape(x, (4, 2))
  with pytest.raises(ValueError, match="reshape total size must be unchanged"):
    trace(lambda x: (lax.reshape(x, (5,)),), ShapedArray((2, 3), f32))


def test_other_errors():
  x = _pj(_np((2, 3), f32))
  with pytest.raises(TypeError, match="slice strides must be positive"):
    lax.slice(x, (0, 0), (2, 3), (0, 1))
  with pytest.raises(ValueError, match="slice_sizes must have length equal"):
    lax.dynamic_slice(x, (0, 0), (1,))
  with pytest.raises(AssertionError):
    lax.dynamic_update_index_in_dim(x, lax.full((1, 1, 3), np.float32(0)), 0, 0)
  with pytest.raises(TypeError, match="JAX only supports number, bool, and string dtypes"):
    lax.full((2,), 1, object)


def test_tracer_shapes_raise_type_error():
  def f(x, i):
    for g in [lambda: lax.reshape(x, (i,)), lambda: lax.broadcast_in_dim(x, (i, 3), (0, 1)),
              lambda: lax.broadcast(x, (i,)), lambda: lax.iota(np.int32, i),
              lambda: lax.full((i,), 1), lambda: lax.dynamic_slice(x, (0, 0), (i, 1)),
              lambda: lax.slice(x, (i, 0), (2, 3)), lambda: lax.pad(x, 0.0, [(i, 0, 0), (0, 0, 0)])]:
      with pytest.raises(TypeError, match="Shapes must be 1D sequences of concrete values"):
        g()
    with pytest.raises(TypeError):
      lax.index_in_dim(x, i, 0)
    with pytest.raises(TypeError):
      lax.broadcasted_iota(np.int32, (2, 3), i)
    return [x]
  trace(f, ShapedArray((2, 3), f32), ShapedArray((), i32))


# --- jaxpr text ---------------------------------------------------------------------------
_JAXPRS = [
    lambda lx, x, i: [lx.broadcast_in_dim(x, (4, 2, 3), (1, 2)), lx.broadcast(x, (4,)),
                      lx.broadcast_to_rank(x, 4), lx.broadcast_in_dim(x, (2, 3), (0, 1))],
    lambda lx, x, i: [lx.reshape(x, (6,)), lx.reshape(x, (2, 3)), lx.reshape(x, (3, 2), (1, 0)),
                      lx.reshape(x, (2, 3), (1, 0)), lx.reshape(x, (3, 2), (0, 1))],
    lambda lx, x, i: [lx.transpose(x, (1, 0)), lx.transpose(x, (0, 1)), lx.squeeze(x, ()),
                      lx.expand_dims(x, (0, 2)), lx.expand_dims(x, ()),
                      lx.squeeze(lx.expand_dims(x, (0, 3)), (-1, 0))],
    lambda lx, x, i: [lx.rev(x, (0,)), lx.rev(x, ()), lx.concatenate([x, x], 0),
                      lx.concatenate([x], 0), lx.pad(x, np.float32(0), [(1, 2, 1), (0, -1, 0)])],
    lambda lx, x, i: [lx.iota(np.int32, 5), lx.broadcasted_iota(np.float32, (2, 3), 1),
                      lx.full((2, 3), 1.0), lx.full_like(x, 1), 
                      lx.full((2,), lx.squeeze(lx.slice(x, (0, 0), (1, 1)), (0, 1)), np.int32)],
    lambda lx, x, i: [lx.slice(x, (0, 1), (2, 3)), lx.collapse(x, 0, 2)],
    lambda lx, x, i: [lx.dynamic_slice(x, (i, 1), (1, 2)), lx.dynamic_slice(x, (-1, 1), (1, 2)),
                      lx.dynamic_update_slice(x, lx.full((1, 2), np.float32(1)), (i, -1))],
    lambda lx, x, i: [lx.dynamic_slice_in_dim(x, i, 2, axis=1),
                      lx.dynamic_update_slice_in_dim(x, lx.full((2, 1), np.float32(1)), i, axis=1)],
    lambda lx, x, i: [lx.dynamic_slice(x, lx.concatenate([lx.broadcast(i, (1,)),
                                                          lx.broadcast(i, (1,))], 0), (1, 2))],
]


@pytest.mark.parametrize("k", range(len(_JAXPRS)))
@pytest.mark.parametrize("weak_index", [False, True])
def test_jaxpr_text_matches_jax(jax, k, weak_index):
  fn = _JAXPRS[k]
  ours = str(trace(lambda x, i: fn(lax, x, i), ShapedArray((2, 3), f32),
                   ShapedArray((), i32, weak_index)))
  import jax.numpy as jjnp
  i = 1 if weak_index else jjnp.int32(1)
  ref = str(jax.make_jaxpr(lambda x, i: fn(jax.lax, x, i))(np.ones((2, 3), np.float32), i))
  assert ours == ref


def test_jaxpr_line_width_boundary(jax):
  fn = lambda lx, x: [lx.slice(x, (0, 1), (2, 3), (1, 2)), lx.slice_in_dim(x, 0, 1, axis=1),
                      lx.index_in_dim(x, 1, axis=1, keepdims=False)]
  ours = str(trace(lambda x: fn(lax, x), ShapedArray((2, 3), f32)))
  ref = str(jax.make_jaxpr(lambda x: fn(jax.lax, x))(np.ones((2, 3), np.float32)))
  assert ours == ref


def test_jaxpr_text_int8_and_unsigned_indices(jax):
  for dt in (np.int8, np.uint8):
    fn = lambda lx, x, i: [lx.dynamic_slice(x, (i, i), (1, 2)),
                           lx.dynamic_slice(x, (i, dt(1)), (1, 2)),
                           lx.dynamic_slice_in_dim(x, i, 1, 1)]
    ours = str(trace(lambda x, i: fn(lax, x, i), ShapedArray((2, 3), f32),
                     ShapedArray((), np.dtype(dt))))
    ref = str(jax.make_jaxpr(lambda x, i: fn(jax.lax, x, i))(np.ones((2, 3), np.float32),
                                                              np.array(1, dt)))
    assert ours == ref


def test_param_printing():
  j = trace(lambda x: [lax.broadcast_in_dim(2.0, (2, 3), ())], ShapedArray((2, 3), f32))
  assert str(j) == "{ lambda ; a:f32[2,3]. let b:f32[2,3] = broadcast_in_dim 2.0:f32[] in (b,) }"
  eqn = trace(lambda x: [lax.broadcast_in_dim(x, (4, 2, 3), (1, 2))], ShapedArray((2, 3), f32)).eqns[0]
  assert eqn.params == {"shape": (4, 2, 3), "broadcast_dimensions": (1, 2), "sharding": None}
  for e in trace(lambda x: [lax.pad(x, np.float32(0), [[1, 1, 0], [0, 0, 1]]),
                            lax.slice(x, np.array([0, 0]), [1, 1])], ShapedArray((2, 3), f32)).eqns:
    hash(tuple(sorted(e.params.items())))  # params are hashable
    for v in e.params.values():
      assert v is None or all(type(d) in (int, tuple) for d in v)
