"""jnp shape manipulation: reshape/ravel/transpose/moveaxis/squeeze/expand_dims, stacking
and splitting, flip/rot90/roll/tile/repeat, broadcasting, where/clip/select/choose,
append/insert/delete/resize, pad (every mode), trim_zeros, unstack, block and the
introspection helpers.  Compared with real JAX (values, dtypes, weak types, error classes
and messages) where installed, and with NumPy."""
import warnings

import ml_dtypes
import numpy as np
import pytest

import pyjax
import pyjax.numpy as jnp
from pyjax._src import core, errors
from pyjax._src.avals import ShapedArray

DTYPE_NAMES = ["bfloat16", "float16", "float32", "int8", "uint8", "int32", "bool_"]
bf16 = np.dtype(ml_dtypes.bfloat16)

PRE = """
w = jnp.asarray(1.0)
wf = jnp.full(3, 1.0)
x = jnp.arange(6.).reshape(2, 3)
a = jnp.arange(10)
a1 = jnp.arange(1)
a2 = jnp.arange(2)
a3 = jnp.arange(3)
a36 = jnp.arange(3, 6)
a5 = jnp.arange(1, 6)
x3 = jnp.arange(24).reshape(2, 3, 4)
b2 = jnp.array([[True, False, True], [False, False, True]])
xi = jnp.array([[3, 1, 4], [1, 5, 9]], jnp.int8)
xb = jnp.array([[1., 2., 4.], [8., 16., 32.]], jnp.bfloat16)
"""


# --- comparison machinery (pyjax vs JAX on the same expression) ---------------------------
_envs = {}


def _run(mod, expr):
  key = mod.__name__
  if key not in _envs:
    env = {}
    exec(PRE, {"np": np, "jnp": mod}, env)
    _envs[key] = env
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    try:
      return True, eval(expr, {"np": np, "jnp": mod, **_envs[key]})
    except Exception as e:  # noqa: BLE001
      return False, e


def _as_np(a):
  a = np.asarray(a)
  return a.astype(np.float32) if a.dtype == bf16 else a


def _assert_same(ours, ref, expr):
  if isinstance(ref, (list, tuple)):
    assert isinstance(ours, (list, tuple)), (expr, type(ours))
    assert type(ours) is type(ref) or not (ref and hasattr(ref[0], "dtype")), (expr, type(ours), type(ref))
    assert len(ours) == len(ref), expr
    for o, r in zip(ours, ref):
      _assert_same(o, r, expr)
    return
  if hasattr(ref, "dtype") and hasattr(ref, "shape") and not isinstance(ref, (np.ndarray, np.generic)):
    assert isinstance(ours, pyjax.Array), (expr, type(ours))
    assert ours.shape == ref.shape, (expr, ours.shape, ref.shape)
    assert ours.dtype == ref.dtype, (expr, ours.dtype, ref.dtype)
    assert ours.weak_type == ref.weak_type, (expr, ours.weak_type, ref.weak_type)
    o, r = _as_np(ours), _as_np(ref)
    if o.dtype.kind in "fc":
      np.testing.assert_allclose(o, r, rtol=2e-6 if ours.dtype.itemsize >= 4 else 1e-2,
                                 atol=1e-6, equal_nan=True, err_msg=expr)
    else:
      np.testing.assert_array_equal(o, r, err_msg=expr)
    return
  if isinstance(ref, (int, np.integer)) and not isinstance(ref, bool):
    assert isinstance(ours, (int, np.integer)) and not isinstance(ours, bool), (expr, ours)
  else:
    assert type(ours) is type(ref), (expr, type(ours), type(ref))
  assert ours == ref, (expr, ours, ref)


_bases = (NotImplementedError, ZeroDivisionError, IndexError, TypeError, ValueError)


def _compare(jax, expr, loose_msg=False):
  import jax.numpy as jjnp
  ok_r, ref = _run(jjnp, expr)
  ok_o, ours = _run(jnp, expr)
  if ok_r:
    assert ok_o, f"{expr}: JAX gives a value, pyjax raised {type(ours).__name__}: {ours}"
    _assert_same(ours, ref, expr)
    return
  assert not ok_o, f"{expr}: JAX raised {type(ref).__name__}: {ref}; pyjax returned {ours!r}"
  if type(ref).__name__ != type(ours).__name__:
    base = next((b for b in _bases if isinstance(ref, b)), Exception)
    assert isinstance(ours, base), (expr, type(ours), type(ref))
  if not loose_msg:
    assert str(ours).split("\n")[0] == str(ref).split("\n")[0], (expr, str(ours), str(ref))


def _lines(block):
  return [l.strip() for l in block.strip().split("\n") if l.strip()]


CASES = """
jnp.reshape(x3, (4, -1), order='F')
jnp.reshape(x3, (3, 8), order='F')
jnp.reshape(x3, -1, order='F')
jnp.ravel(x3, order='F')
jnp.reshape(wf, (3, 1))
jnp.reshape(jnp.zeros((0, 3)), (3, 0))
jnp.reshape(w, -1)
jnp.reshape(w, ())
jnp.reshape(x, np.array([3, 2]))
jnp.reshape(x, jnp.array([3, 2]))
jnp.reshape(x, [3, 2])
jnp.transpose(x3, (2, 0, 1))
jnp.transpose(x3, (-1, 0, 1))
jnp.transpose(w)
jnp.transpose(wf)
jnp.permute_dims(x3, (1, 2, 0))
jnp.matrix_transpose(x3)
jnp.moveaxis(x3, [0, 1], [2, 0])
jnp.moveaxis(x3, -1, 0)
jnp.moveaxis(x3, (), ())
jnp.swapaxes(x3, -1, 0)
jnp.swapaxes(x3, 1, 1)
jnp.rollaxis(x3, -1)
jnp.rollaxis(x3, 1, 3)
jnp.rollaxis(x3, 0, -1)
jnp.rollaxis(x3, 0, 4)
jnp.rollaxis(x3, 0, 5)
jnp.squeeze(jnp.ones((1, 1)))
jnp.squeeze(jnp.full((1, 2), 1.0))
jnp.squeeze(jnp.ones((1, 0, 1)))
jnp.squeeze(x, ())
jnp.expand_dims(x3, (-1, 0))
jnp.expand_dims(x3, (-1, -5))
jnp.expand_dims(wf, 1)
jnp.stack(x3, axis=1)
jnp.stack(x3, axis=-1)
jnp.stack(x3, axis=3)
jnp.stack([wf, wf], 1)
jnp.stack([jnp.ones(2), jnp.ones(3)])
jnp.stack([jnp.ones((0, 2)), jnp.ones((0, 2))], 1)
jnp.stack([x], 0)
jnp.stack([1, 2, 3])
jnp.stack([w])
jnp.stack([np.int8(1), np.uint8(2)])
jnp.hstack(x3)
jnp.hstack(a)
jnp.hstack([x3, x3])
jnp.vstack(a)
jnp.vstack(x)
jnp.vstack(x3)
jnp.vstack([w, w])
jnp.dstack(a)
jnp.dstack(x)
jnp.dstack(x3)
jnp.dstack([w, 2])
jnp.column_stack(a)
jnp.column_stack(x)
jnp.column_stack(x3)
jnp.column_stack([a, a])
jnp.column_stack([x3, x3])
jnp.column_stack([x, x])
jnp.concatenate(x3, axis=1)
jnp.concatenate(x3, axis=-1)
jnp.concatenate(x3, axis=None)
jnp.concatenate(x3, axis=2)
jnp.concatenate(a)
jnp.concatenate(w)
jnp.concatenate(jnp.zeros((0, 3)))
jnp.concatenate([wf, a])
jnp.concatenate([wf, wf])
jnp.concatenate([x3, x3], -2)
jnp.concatenate([x, a], axis=None)
jnp.concatenate([x, jnp.ones((2, 3), jnp.bfloat16)], dtype=jnp.float16)
jnp.concat([x, x])
jnp.concat([w, w], axis=None)
jnp.split(x3, [1, 3], axis=-1)
jnp.split(x3, 2, axis=2)
jnp.split(x3, np.array([1]), 1)
jnp.split(a, (3, 3))
jnp.split(a, np.array(2))
jnp.split(a, jnp.array(5))
jnp.split(jnp.zeros(0), 3)
jnp.split(wf, 3)
jnp.array_split(x3, 3, axis=2)
jnp.array_split(a, [])
jnp.array_split(jnp.zeros(0), 2)
jnp.hsplit(x3, [1])
jnp.vsplit(x3, 2)
jnp.dsplit(x3, [1, 2])
jnp.unstack(x3, axis=-1)
jnp.unstack(wf)
jnp.unstack(jnp.zeros((2, 0)), axis=1)
jnp.flip(x3, (0, -1))
jnp.flip(wf)
jnp.flip(x3, ())
jnp.flip(jnp.zeros((0, 2)), 0)
jnp.flipud(x3)
jnp.fliplr(x3)
jnp.rot90(x3, 3, (2, 1))
jnp.rot90(x3, -2, (0, 2))
jnp.rot90(x3, 0)
jnp.rot90(x, 1, (0, 5))
jnp.rot90(x, 1, (0, 1, 2))
jnp.roll(x3, 5)
jnp.roll(x3, -7, axis=(0, 2))
jnp.roll(x3, (1, -1), axis=(2, 2))
jnp.roll(x3, np.array([1, 2]), axis=(0, 1))
jnp.roll(x3, jnp.array([1, 2]), axis=(0, 1))
jnp.roll(x3, jnp.array([1, 2]), axis=(0, 5))
jnp.roll(x3, jnp.array(-4))
jnp.roll(x3, jnp.array([[1]]), axis=0)
jnp.roll(wf, 1)
jnp.roll(jnp.zeros((0, 3)), 2, axis=1)
jnp.roll(jnp.zeros((0, 3)), jnp.array(2), axis=0)
jnp.tile(x3, (2, 1, 1, 2))
jnp.tile(x3, 0)
jnp.tile(wf, (2, 2))
jnp.tile(w, ())
jnp.tile(jnp.zeros((0, 2)), 3)
jnp.tile(x, [2])
jnp.tile(x, (2.0,))
jnp.repeat(x3, 3, axis=-1)
jnp.repeat(x3, jnp.array([0, 2, 1]), axis=1)
jnp.repeat(x3, np.array([3]), axis=1)
jnp.repeat(x3, 2, axis=1, total_repeat_length=4)
jnp.repeat(x3, 2, axis=1, total_repeat_length=7)
jnp.repeat(x3, jnp.array([2, 0, 1]), axis=1, total_repeat_length=5)
jnp.repeat(x3, jnp.array([2, 0, 1]), axis=1, total_repeat_length=2)
jnp.repeat(wf, 2)
jnp.repeat(w, 3, total_repeat_length=3)
jnp.repeat(w, jnp.array([3]))
jnp.repeat(w, jnp.array([3, 4]))
jnp.repeat(jnp.zeros((0, 2)), 3, axis=0)
jnp.repeat(jnp.zeros((0, 2)), 3, axis=1)
jnp.repeat(jnp.zeros((2, 0)), jnp.array([1, 2]), axis=0)
jnp.repeat(x, jnp.array(2), axis=0, total_repeat_length=3)
jnp.broadcast_to(wf, (2, 3))
jnp.broadcast_to(x, (0, 2, 3))
jnp.broadcast_to(jnp.zeros((1, 0)), (3, 0))
jnp.broadcast_to(x, np.array([2, 2, 3]))
jnp.broadcast_to(x, jnp.array([2, 2, 3]))
jnp.broadcast_to(x, [2, 2, 3])
jnp.broadcast_to(jnp.ones((3, 1)), (3, 4))
jnp.broadcast_to(jnp.full((3, 1), 1.0), (2, 3, 5))
jnp.broadcast_to(jnp.full((3, 1), 1.0), (2, 4, 5))
jnp.broadcast_arrays(wf, 1.0, x)
jnp.broadcast_arrays(jnp.ones((2, 1)), jnp.ones((1, 0)))
jnp.broadcast_arrays(x)
jnp.broadcast_arrays(x, x)
jnp.broadcast_shapes((1,), ())
jnp.broadcast_shapes((5, 1, 3), (4, 1), (1,))
jnp.broadcast_shapes(3, (2, 1))
jnp.broadcast_shapes(np.int64(3), (2, 1))
jnp.broadcast_shapes((2, 3), (3, 2))
jnp.atleast_2d(x3)
jnp.atleast_2d(1, [1])
jnp.atleast_3d(wf)
jnp.atleast_3d(x, a, w)
jnp.atleast_1d(np.float64(2))
jnp.where(b2, 1, 2.5)
jnp.where(b2, wf, 2.5)
jnp.where(b2, jnp.ones(3, jnp.int8), jnp.ones(3, jnp.uint8))
jnp.where(b2, jnp.ones(3, jnp.bfloat16), jnp.ones(3, jnp.float16))
jnp.where(b2, jnp.ones(3, jnp.bfloat16), 2)
jnp.where(x, x, -x)
jnp.where(True, w, 2)
jnp.where(jnp.zeros((0, 3), bool), 1, 2)
jnp.where(b2, np.float64(1), 2)
jnp.where(b2, np.int64(1), np.int8(2))
jnp.where(jnp.ones(2, bool), jnp.ones((3, 1)), 0)
jnp.clip(wf, 0, 0.5)
jnp.clip(jnp.array([1, 200], jnp.uint8), 10, 100)
jnp.clip(jnp.array([1., 2.], jnp.bfloat16), 1.5, None)
jnp.clip(jnp.array([1., 2.], jnp.float16), None, jnp.array(1.5, jnp.float32))
jnp.clip(x, jnp.array([[1.], [4.]]), jnp.array([2., 3., 4.]))
jnp.clip(jnp.array([True, False]), False, True)
jnp.clip(x, 1, 1j)
jnp.clip(x, None, [1])
jnp.select([b2], [x])
jnp.select([b2, ~b2], [1, 2])
jnp.select([True, False], [x, 2 * x])
jnp.select([b2, True], [x, jnp.ones(3)])
jnp.select([b2], [jnp.ones(3, jnp.int8)], default=jnp.uint8(3))
jnp.select([x], [x], default=w)
jnp.select([b2, b2], [x])
jnp.choose(jnp.array([[0, 1, 0], [1, 1, 0]]), [x, -x], mode='wrap')
jnp.choose(jnp.array([0, 1, 0], jnp.uint8), [wf, 2 * wf])
jnp.choose(jnp.array([0, 1, 0]), [wf, jnp.full(3, 2)])
jnp.choose(jnp.array([0, 1]), [1, 2.5])
jnp.choose(jnp.array(1), [x, -x])
jnp.choose(1, [x, -x])
jnp.choose(jnp.zeros(0, int), [jnp.zeros(0)])
jnp.append(wf, wf)
jnp.append(x, jnp.ones((1, 3)), axis=0)
jnp.append(x, jnp.ones((2, 1), int), axis=-1)
jnp.append(1, 2)
jnp.insert(x3, 1, 99, axis=2)
jnp.insert(x3, jnp.array([0, 3, 1]), jnp.array([7, 8, 9]), axis=1)
jnp.insert(x3, np.array([2, 2]), 9, axis=-1)
jnp.insert(x3, slice(None), 0, axis=0)
jnp.insert(x3, slice(0, 0), 0, axis=0)
jnp.insert(x, [], 5.)
jnp.insert(x, np.array([], int), 5.)
jnp.insert(wf, 1, 2)
jnp.insert(wf, jnp.array([1]), jnp.array([2., 3.]))
jnp.insert(x, 0, jnp.array([[1.], [2.]]), axis=1)
jnp.insert(x, jnp.array([0, 1]), jnp.array([[1.], [2.]]), axis=1)
jnp.insert(x, 1, jnp.array([1., 2., 3., 4.]), axis=0)
jnp.insert(x, jnp.array([[1]]), 0., axis=0)
jnp.insert(a, -20, 99)
jnp.insert(a, 20, 99)
jnp.delete(x3, [0, 2], axis=2)
jnp.delete(x3, np.array([0, 2]), axis=2)
jnp.delete(x3, jnp.array([0, 2, 2]), axis=2)
jnp.delete(x3, jnp.array([0, -1]), axis=1)
jnp.delete(x3, np.array([True, False, True]), axis=1)
jnp.delete(x3, np.array([True, False]), axis=1)
jnp.delete(x3, slice(None, None, -2), axis=2)
jnp.delete(x3, slice(1, 100), axis=2)
jnp.delete(x3, -1, axis=-1)
jnp.delete(x3, jnp.array([0, 3]), axis=2, assume_unique_indices=True)
jnp.delete(x3, np.array([], int), axis=2)
jnp.delete(wf, 1)
jnp.delete(x, 5)
jnp.delete(x, np.array([[0], [1]]), axis=1)
jnp.delete(x, np.array([9]), axis=1)
jnp.resize(x3, (5, 5))
jnp.resize(x3, 7)
jnp.resize(wf, ())
jnp.resize(x, (0, 2))
jnp.trim_zeros(jnp.array([[0, 0, 0, 0], [0, 1, 0, 0], [0, 0, 2, 0]]), 'f', axis=1)
jnp.trim_zeros(jnp.array([[0, 0, 0, 0], [0, 1, 0, 0], [0, 0, 2, 0]]), 'b')
jnp.trim_zeros(jnp.array([[0, 0, 0, 0], [0, 1, 0, 0], [0, 0, 2, 0]]), axis=(0, 1))
jnp.trim_zeros(jnp.array([[0, 0, 0, 0], [0, 1, 0, 0], [0, 0, 2, 0]]), axis=-1)
jnp.trim_zeros(jnp.array([0., 0., 1.5, 0.]))
jnp.trim_zeros(jnp.array([False, True, False]))
jnp.trim_zeros(jnp.zeros(0))
jnp.trim_zeros(wf)
jnp.trim_zeros(jnp.array([0, 1, 0]), axis=1)
jnp.block([[x, x], [jnp.ones((1, 6))]])
jnp.block([[w]])
jnp.block([wf, 2])
jnp.block([[[x]], [[x]]])
jnp.block([x3, x3])
jnp.block([[x3], [x3]])
jnp.block([[1, 2], [3, 4.5]])
jnp.block([x, jnp.ones(3)])
jnp.ndim(w)
jnp.ndim([[1, 2]])
jnp.ndim(np.float32(2))
jnp.shape(w)
jnp.shape(3)
jnp.shape(np.zeros((2, 0)))
jnp.size(w)
jnp.size(x3, -1)
jnp.size(x3, (0, 2))
jnp.size(3)
jnp.size(x3, (0, 0))
jnp.size(x3, 3)
jnp.isscalar(np.complex64(1))
jnp.isscalar(jnp.float32(1))
jnp.isscalar(wf)
jnp.isscalar(jnp.bfloat16)
jnp.iscomplexobj(x + 1j)
jnp.iscomplexobj(jnp.complex64)
jnp.iscomplexobj(np.zeros(2, complex))
jnp.iscomplexobj(np.complex128(1))
jnp.iscomplexobj('a')
jnp.iscomplexobj(jnp.ones(2, jnp.bfloat16))
jnp.isrealobj(None)
jnp.isrealobj(x + 1j)
"""

ERR_CASES = """
jnp.reshape(x, (-1, -1))
jnp.reshape(x, (4, -1))
jnp.reshape(x, (4, 2))
jnp.reshape(x, (6,), order='A')
jnp.reshape(x, (6,), order='X')
jnp.reshape(x, newshape=(6,))
jnp.reshape(x)
jnp.reshape([1,2], (2,))
jnp.reshape(x, (2.0, 3))
jnp.reshape(jnp.zeros((0,3)), (-1, 0))
jnp.reshape(jnp.zeros((0,3)), (0, -1))
jnp.ravel(x, order='K')
jnp.transpose(x, (0,))
jnp.transpose(x, (0, 0))
jnp.transpose(x, (0, 2))
jnp.matrix_transpose(jnp.ones(3))
jnp.moveaxis(jnp.ones((2,3,4)), (0, 1), (0,))
jnp.moveaxis(jnp.ones((2,3,4)), 3, 0)
jnp.moveaxis(jnp.ones((2,3,4)), (0, 0), (1, 2))
jnp.swapaxes(jnp.ones((2,3,4)), 0, 5)
jnp.squeeze(jnp.ones((1,3,1)), 1)
jnp.squeeze(jnp.ones((1,3,1)), 3)
jnp.squeeze(w, 0)
jnp.expand_dims(x, 3)
jnp.expand_dims(x, (0, 0))
jnp.stack([x, x], axis=3)
jnp.stack([x, jnp.ones(3)])
jnp.stack([])
jnp.stack([[1, 2], [3, 4]])
jnp.stack([x, x], out=1)
jnp.concatenate([x, x], axis=2)
jnp.concatenate([w, w])
jnp.concatenate([])
jnp.concatenate([x, jnp.ones(3)])
jnp.concatenate([[1,2], [3]])
jnp.split(a, 3)
jnp.split(a, [3, 20])
jnp.split(a, [5, 3])
jnp.split(a, (-3,))
jnp.split(x, 3, axis=2)
jnp.split(w, 1)
jnp.split(a, 0)
jnp.array_split(a, 0)
jnp.dsplit(x, 2)
jnp.flip(x, 2)
jnp.fliplr(a)
jnp.flipud(w)
jnp.rot90(x, 1, (0, 0))
jnp.rot90(x, 1, (0,))
jnp.rot90(a)
jnp.roll(x, (1, 2, 3), axis=(0, 1))
jnp.roll(x, 1, axis=2)
jnp.repeat(x, [1, 2], axis=0)
jnp.repeat(x, jnp.array([1, 2, 3]), axis=0)
jnp.repeat(x, -1)
jnp.repeat(x, 2, axis=2)
jnp.broadcast_to(x, (3, 3))
jnp.broadcast_to(x, (3,))
jnp.broadcast_to(x, 3)
jnp.broadcast_to([1, 2], (2, 2))
jnp.broadcast_to(x, (2, -1))
jnp.broadcast_to(x, (2, 3.0))
jnp.broadcast_arrays(x, a)
jnp.broadcast_arrays([1], 2)
jnp.broadcast_shapes((2,), (3,))
jnp.broadcast_shapes((2,), (0,))
jnp.atleast_1d([1])
jnp.where(x > 2, x)
jnp.where(x > 2, None, x)
jnp.where(x > 2, x, 0, size=3)
jnp.where([True], 1, 0)
jnp.where(x > 2, x, jnp.ones(4))
jnp.clip(x, a_min=1)
jnp.clip(x + 1j, 0, 1)
jnp.clip(None, 0, 1)
jnp.clip([1, 2], 0, 1)
jnp.clip(arr=x, min=1)
jnp.select([a < 3], [a, a])
jnp.select([], [])
jnp.select([a < 3, a > 5], [a, a**2], default=jnp.ones(2))
jnp.select(a < 3, [a])
jnp.select([a < 3, a > 5], [a, x])
jnp.choose(jnp.array([0, 1, 2]), [a3, a36])
jnp.choose(jnp.array([0, 1, 2]), [a3, a36], mode='foo')
jnp.choose(jnp.array([0, 1, 0]), [a3, a36], out=1)
jnp.choose(jnp.array([0., 1, 0]), [a3, a36])
jnp.choose([0, 1, 0], (a3, a36))
jnp.choose(jnp.array([0, 1, 0]), [a3, [1,2,3]])
jnp.append(x, a3, axis=0)
jnp.append(a, [1])
jnp.append(x, x, axis=2)
jnp.insert(a, [2, 4], 99)
jnp.insert(x, [1], jnp.array([7., 8]), axis=1)
jnp.insert(a, 2.0, 99)
jnp.insert(a, [[2]], 99)
jnp.insert(x, 1, 7., axis=3)
jnp.delete(a, [2, 4])
jnp.delete(a, 10)
jnp.delete(a, [2, 2])
jnp.delete(a, [2, 2], assume_unique_indices=True)
jnp.delete(x, [True, False], axis=0)
jnp.delete(a, 2.0)
jnp.resize(x, -1)
jnp.resize([1,2], (2,))
jnp.trim_zeros([0, 1])
jnp.unstack(w)
jnp.unstack(x, axis=2)
jnp.block([])
jnp.block([[1, 2], 3])
jnp.block([a2, [3]])
jnp.block([w, jnp.ones((2,2))])
jnp.shape([1, [2]])
jnp.pad(w, ())
jnp.pad(x, -1)
jnp.pad(x, ((1, 2), (0, 1), (1, 1)))
jnp.pad(x, 1.5)
jnp.pad(a, (3, 2), mode='foo')
jnp.pad(a, (3, 2), mode='edge', constant_values=1)
jnp.pad(jnp.zeros(0), 2, mode='edge')
jnp.pad(jnp.zeros(0), 2, mode='reflect')
jnp.pad(jnp.zeros(0), 2, mode='wrap')
jnp.pad(a, (3, 2), mode='maximum', stat_length=0)
jnp.pad(a, 2, mode='constant', foo=1)
"""

PAD_CASES = """
jnp.pad(jnp.arange(2), (5, 4), mode='reflect')
jnp.pad(jnp.arange(2), (5, 4), mode='reflect', reflect_type='odd')
jnp.pad(jnp.arange(1.), (3, 2), mode='reflect', reflect_type='odd')
jnp.pad(jnp.arange(1.), (3, 2), mode='symmetric', reflect_type='odd')
jnp.pad(x, ((3, 1), (4, 5)), constant_values=jnp.array([7, 8]))
jnp.pad(x, ((3, 1), (4, 5)), constant_values=jnp.array([[7, 8], [9, 10]]))
jnp.pad(x, ((3, 1), (4, 5)), constant_values=jnp.array([7]))
jnp.pad(x, ((3, 1), (4, 5)), constant_values=jnp.array([1, 2, 3]))
jnp.pad(x, jnp.array([1, 2]))
jnp.pad(x, ((1, 2, 3),))
jnp.pad(x, (1, 2, 3))
jnp.pad(x, True)
jnp.pad(wf, 2)
jnp.pad(wf, 2, constant_values=5)
jnp.pad(wf, 2, constant_values=np.float32(5))
jnp.pad(wf, 2, mode='edge')
jnp.pad(wf, 2, mode='reflect')
jnp.pad(wf, 2, mode='linear_ramp')
jnp.pad(wf, 2, mode='mean')
jnp.pad(wf, 2, mode='empty')
jnp.pad(wf, 2, mode='wrap')
jnp.pad(xi, 2, mode='mean')
jnp.pad(xi, 2, mode='median')
jnp.pad(xi, 2, mode='linear_ramp', end_values=10)
jnp.pad(xi, 2, mode='reflect', reflect_type='odd')
jnp.pad(xi, 2, constant_values=1.7)
jnp.pad(xb, 2, mode='mean')
jnp.pad(xb, 2, mode='linear_ramp')
jnp.pad(xb, 3, mode='reflect', reflect_type='odd')
jnp.pad(xb, ((0, 0), (1, 1)), mode='median', stat_length=2)
jnp.pad(jnp.array([[True, False]]), 1, mode='edge')
jnp.pad(jnp.array([[True, False]]), 1, mode='wrap')
jnp.pad(jnp.array([[True, False]]), 1, mode='maximum')
jnp.pad(jnp.array([[True, False]]), 1, constant_values=True)
jnp.pad(jnp.zeros((0, 2)), ((0, 0), (2, 1)), mode='reflect')
jnp.pad(jnp.zeros((0, 2)), ((0, 0), (2, 1)), mode='wrap')
jnp.pad(jnp.zeros((0, 2)), ((0, 0), (2, 1)), mode='mean')
jnp.pad(jnp.zeros((0, 2)), ((1, 0), (2, 1)), mode='constant')
jnp.pad(jnp.zeros((0, 2)), ((1, 0), (2, 1)), mode='mean')
"""

PAD_MORE_CASES = """
jnp.pad(a5, (7, 9), mode='reflect')
jnp.pad(a5, (0, 13), mode='reflect', reflect_type='odd')
jnp.pad(a5, (13, 0), mode='symmetric', reflect_type='odd')
jnp.pad(a5, (12, 12), mode='symmetric')
jnp.pad(a5, (12, 12), mode='wrap')
jnp.pad(x, ((3, 1), (4, 5)), mode='reflect')
jnp.pad(x, ((3, 1), (4, 5)), mode='reflect', reflect_type='odd')
jnp.pad(x, ((3, 1), (4, 5)), mode='symmetric')
jnp.pad(x, ((3, 1), (4, 5)), mode='wrap')
jnp.pad(x, ((3, 1), (4, 5)), mode='edge')
jnp.pad(x, ((3, 1), (4, 5)), mode='linear_ramp')
jnp.pad(x, ((3, 1), (4, 5)), mode='linear_ramp', end_values=((1, 2), (3, 4)))
jnp.pad(x, ((3, 1), (4, 5)), mode='linear_ramp', end_values=(-1, 7))
jnp.pad(x, ((3, 1), (4, 5)), mode='maximum')
jnp.pad(x, ((3, 1), (4, 5)), mode='minimum', stat_length=((1, 2), (2, 1)))
jnp.pad(x, ((3, 1), (4, 5)), mode='mean', stat_length=2)
jnp.pad(x, ((3, 1), (4, 5)), mode='median')
jnp.pad(x, ((3, 1), (4, 5)), mode='empty')
jnp.pad(x, ((3, 1), (4, 5)), constant_values=((1, 2), (3, 4)))
jnp.pad(x, ((3, 1), (4, 5)), constant_values=(7, 8))
jnp.pad(x, ((3, 1), (4, 5)), constant_values=np.array([[7], [9]]))
jnp.pad(x, [[1, 2], [3, 4]])
jnp.pad(x, np.array([[1, 2], [3, 4]]))
jnp.pad(x, ((1,),))
jnp.pad(x, [1])
jnp.pad(x, ((1, 2),))
jnp.pad(x, np.int8(1))
jnp.pad(x, 0, mode='reflect')
jnp.pad(x, 2, mode='mean', stat_length=((1,),))
jnp.pad(x, 2, mode='maximum', stat_length=5)
jnp.pad(x, 2, mode='maximum', stat_length=None)
jnp.pad(x, 2, mode=lambda v, pw, ax, kw: v * 2)
jnp.pad(a5, 2, mode='symmetric', reflect_type='odd')
"""

# more value cases (slow: each needs JAX to compile its ops)
MORE_CASES = """
jnp.reshape(x, -1)
jnp.reshape(x, (3, -1))
jnp.reshape(x, (3, -1), order='F')
jnp.reshape(x, shape=(6,))
jnp.reshape(w, (1,1))
jnp.reshape(x, (6,), copy=True)
jnp.ravel(x, order='F')
jnp.ravel(w)
jnp.transpose(x)
jnp.transpose(x, (1, 0))
jnp.transpose(x, (-1, 0))
jnp.transpose(jnp.ones((2,3,4)), [2, 0, 1])
jnp.permute_dims(x, (1, 0))
jnp.matrix_transpose(x)
jnp.moveaxis(jnp.ones((2,3,4)), 0, -1)
jnp.moveaxis(jnp.ones((2,3,4)), (0, 1), (-1, 0))
jnp.swapaxes(jnp.ones((2,3,4)), 0, 2)
jnp.rollaxis(jnp.ones((2,3,4)), 2)
jnp.rollaxis(jnp.ones((2,3,4)), 0, 2)
jnp.squeeze(jnp.ones((1,3,1)))
jnp.squeeze(jnp.ones((1,3,1)), 0)
jnp.squeeze(jnp.ones((1,3,1)), (0, -1))
jnp.squeeze(w)
jnp.expand_dims(x, 0)
jnp.expand_dims(x, (0, 3))
jnp.expand_dims(x, -1)
jnp.expand_dims(w, 0)
jnp.expand_dims(x, [0, 1])
jnp.stack([x, x])
jnp.stack([x, x], axis=-1)
jnp.stack([1, 2.0])
jnp.stack([w, 2.0])
jnp.stack((jnp.ones(2, jnp.int8), jnp.ones(2, jnp.uint8)))
jnp.stack([x, x], dtype=int)
jnp.stack(x)
jnp.stack(np.ones((2, 3)))
jnp.hstack([x, x])
jnp.hstack([jnp.ones(2), jnp.ones(3)])
jnp.hstack([1, 2])
jnp.hstack([w, w])
jnp.hstack(x)
jnp.vstack([jnp.ones(2), jnp.ones(2)])
jnp.vstack([1, 2])
jnp.vstack([x, jnp.ones(3)], dtype=jnp.bfloat16)
jnp.dstack([jnp.ones(2), jnp.ones(2)])
jnp.dstack([x, x])
jnp.column_stack([jnp.ones(2), jnp.ones(2)])
jnp.column_stack([jnp.ones((2,2)), jnp.ones(2)])
jnp.column_stack([1, 2])
jnp.concatenate([x, x])
jnp.concatenate([x, x], axis=1)
jnp.concatenate([x, x], axis=None)
jnp.concatenate([x])
jnp.concatenate([x, jnp.ones((3,3))])
jnp.concatenate([jnp.ones(2, int), 1.5*jnp.ones(2)])
jnp.concatenate([jnp.ones(2, int), 1.5*jnp.ones(2)], dtype=int)
jnp.concatenate(x)
jnp.concatenate([np.ones(2), np.ones(3)])
jnp.concatenate((jnp.ones(2, jnp.bfloat16), jnp.ones(2, jnp.float16)))
jnp.concat([x, x], axis=None)
jnp.concat([x, x], axis=1)
jnp.concatenate([jnp.ones((0,3)), x])
jnp.split(a, 2)
jnp.split(a, [3, 5])
jnp.split(a, np.array([3, 5]))
jnp.split(a, jnp.array([3, 5]))
jnp.split(x, 3, axis=1)
jnp.split(a, 2.0)
jnp.split(a, [])
jnp.array_split(a, 3)
jnp.array_split(a, 11)
jnp.array_split(a, [2, 4])
jnp.hsplit(x, 3)
jnp.hsplit(a, 2)
jnp.vsplit(x, 2)
jnp.vsplit(a, 2)
jnp.dsplit(jnp.ones((2,2,4)), 2)
jnp.flip(x)
jnp.flip(x, 1)
jnp.flip(x, (0, 1))
jnp.flip(w)
jnp.flip(x, [0])
jnp.fliplr(x)
jnp.flipud(a)
jnp.rot90(x)
jnp.rot90(x, 2)
jnp.rot90(x, -1)
jnp.rot90(x, 5)
jnp.rot90(x, 1, (1, 0))
jnp.rot90(jnp.ones((2,3,4)), 1, (0, 2))
jnp.roll(a, 3)
jnp.roll(a, -13)
jnp.roll(x, 1)
jnp.roll(x, 1, axis=1)
jnp.roll(x, (1, 2), axis=(0, 1))
jnp.roll(x, (1, 2), axis=1)
jnp.roll(x, 1, axis=(0, 1))
jnp.roll(x, (1, 2), axis=0)
jnp.roll(x, jnp.array(1), axis=0)
jnp.roll(x, 1.5)
jnp.roll(w, 1)
jnp.roll(jnp.zeros(0), 1)
jnp.tile(a3, 2)
jnp.tile(a3, (2, 2))
jnp.tile(x, 2)
jnp.tile(x, (2, 1, 2))
jnp.tile(w, 3)
jnp.tile(x, ())
jnp.tile(x, 0)
jnp.tile(x, jnp.array(2))
jnp.repeat(a3, 2)
jnp.repeat(x, 2)
jnp.repeat(x, 2, axis=1)
jnp.repeat(x, jnp.array([1, 2]), axis=0)
jnp.repeat(x, jnp.array([1, 2, 0]), axis=1)
jnp.repeat(x, jnp.array([1, 2]), axis=0, total_repeat_length=3)
jnp.repeat(x, jnp.array([1, 2]), axis=0, total_repeat_length=2)
jnp.repeat(x, jnp.array([1, 2]), axis=0, total_repeat_length=5)
jnp.repeat(x, 2, axis=0, total_repeat_length=3)
jnp.repeat(x, 2, axis=0, total_repeat_length=5)
jnp.repeat(w, 3)
jnp.repeat(x, jnp.array(2))
jnp.repeat(x, jnp.array([2]), axis=0)
jnp.repeat(x, 0)
jnp.repeat(x, np.array([1, 2]), axis=0)
jnp.repeat(x, jnp.array([1,2]), axis=0, total_repeat_length=0)
jnp.repeat(x, jnp.array([[1,2]]), axis=0)
jnp.broadcast_to(w, (2, 3))
jnp.broadcast_to(x, (4, 2, 3))
jnp.broadcast_to(a1, 3)
jnp.broadcast_to(1, (2,))
jnp.broadcast_to(np.ones(3), (2,3))
jnp.broadcast_arrays(x, a3, 1)
jnp.broadcast_arrays(x, a3, w)
jnp.broadcast_arrays()
jnp.broadcast_shapes((2, 1), (3,))
jnp.broadcast_shapes((2, 1), 3)
jnp.broadcast_shapes()
jnp.broadcast_shapes((1,), (0,))
jnp.broadcast_shapes([2, 1], [3])
jnp.atleast_1d(w)
jnp.atleast_1d(1)
jnp.atleast_1d(x)
jnp.atleast_1d(w, a)
jnp.atleast_1d()
jnp.atleast_2d(a)
jnp.atleast_2d(w)
jnp.atleast_3d(a)
jnp.atleast_3d(x)
jnp.atleast_3d(w)
jnp.atleast_3d(jnp.ones((1,2,3,4)))
jnp.where(x > 2, x, 0)
jnp.where(x > 2, 1, 0)
jnp.where(x > 2, 1., 0)
jnp.where(x > 2, w, 0)
jnp.where(x > 2, a3, 0.5)
jnp.where(1, 2, 3)
jnp.where(jnp.array([0.5, 0.]), 1, 2)
jnp.clip(x, 1, 4)
jnp.clip(x, 1)
jnp.clip(x, max=4)
jnp.clip(x)
jnp.clip(x, min=1, max=4)
jnp.clip(a, 1.5, 4)
jnp.clip(a, 1, 4)
jnp.clip(w, 0, 0.5)
jnp.clip(1, 0, 2)
jnp.clip(x, jnp.array([1., 2., 3.]), 4)
jnp.clip(a, jnp.uint8(1), jnp.uint8(3))
jnp.clip(jnp.array([np.nan, 1.]), 0, 0.5)
jnp.clip(x, 4, 1)
jnp.clip(jnp.array([True, False]), 0, 1)
jnp.select([a < 3, a > 5], [a, a**2])
jnp.select([a < 3, a > 5], [a, a**2], default=-1)
jnp.select([a < 3, a > 5], [a, 0.5])
jnp.select([a < 3, a > 5], [a, a**2], default=0.5)
jnp.select([a], [a])
jnp.select((a < 3,), (a,))
jnp.choose(jnp.array([0, 1, 0]), [a3, a36])
jnp.choose(jnp.array([0, 1, 2]), [a3, a36], mode='clip')
jnp.choose(jnp.array([0, 1, 2]), [a3, a36], mode='wrap')
jnp.choose(jnp.array([[0], [1]]), [a3, 1.5])
jnp.choose(jnp.array([0, 1, 0]), jnp.stack([a3, a36]))
jnp.choose(np.array([0, 1, 0]), [a3, a36])
jnp.choose(jnp.array([0, 1, 0]), (a3, a36))
jnp.append(a, 1)
jnp.append(a, 1.5)
jnp.append(x, x, axis=0)
jnp.append(x, a3)
jnp.append(w, 2)
jnp.insert(a, 2, 99)
jnp.insert(a, jnp.array([2, 4]), jnp.array([98, 99]))
jnp.insert(a, 2, jnp.array([98, 99]))
jnp.insert(a, slice(2, 6, 2), 99)
jnp.insert(x, 1, 7., axis=0)
jnp.insert(x, 1, jnp.array([7., 8, 9]), axis=0)
jnp.insert(x, 1, jnp.array([7., 8]), axis=1)
jnp.insert(x, 1, 7.)
jnp.insert(a, 2, 1.5)
jnp.insert(a, -1, 99)
jnp.insert(a, 11, 99)
jnp.insert(a, 10, 99)
jnp.insert(a, jnp.array(2), 99)
jnp.insert(w, 0, 2.)
jnp.delete(a, 2)
jnp.delete(a, jnp.array([2, 4]))
jnp.delete(a, slice(2, 8, 2))
jnp.delete(a, -1)
jnp.delete(x, 1, axis=1)
jnp.delete(x, 1)
jnp.delete(a, jnp.array(3))
jnp.delete(w, 0)
jnp.resize(a, 3)
jnp.resize(a, (3, 4))
jnp.resize(x, (5,))
jnp.resize(x, 0)
jnp.resize(jnp.zeros(0), 3)
jnp.resize(w, (2,))
jnp.resize(1, (2,))
jnp.trim_zeros(jnp.array([0, 0, 1, 2, 0]))
jnp.trim_zeros(jnp.array([0, 0, 1, 2, 0]), 'f')
jnp.trim_zeros(jnp.array([0, 0, 1, 2, 0]), 'b')
jnp.trim_zeros(jnp.array([0, 0, 0]))
jnp.trim_zeros(jnp.array([0, 0, 1, 2, 0]), 'x')
jnp.trim_zeros(jnp.array([0, 0, 1, 2, 0]), 'fB')
jnp.trim_zeros(x)
jnp.trim_zeros(jnp.array([[0,0,0],[0,1,0]]), axis=0)
jnp.trim_zeros(jnp.array([[0,0,0],[0,1,0]]), axis=1)
jnp.trim_zeros(w)
jnp.unstack(x)
jnp.unstack(x, axis=1)
jnp.unstack(jnp.zeros((0, 2)))
jnp.block([x, x])
jnp.block([[x], [x]])
jnp.block([[x, x], [x, x]])
jnp.block([1, 2])
jnp.block([[1, 2], [3, 4]])
jnp.block(x)
jnp.block(1)
jnp.block([[[1.5]], [[2]]])
jnp.block([jnp.ones(2, int), w])
jnp.ndim(x)
jnp.ndim([1, 2])
jnp.ndim(1)
jnp.shape([[1, 2]])
jnp.shape(x)
jnp.size(x)
jnp.size(x, 1)
jnp.size(x, (0, 1))
jnp.size([1,2,3])
jnp.isscalar(1)
jnp.isscalar(w)
jnp.isscalar(x)
jnp.isscalar(np.float32(1))
jnp.isscalar(np.array(1))
jnp.isscalar('a')
jnp.isscalar([1])
jnp.isscalar(None)
jnp.iscomplexobj(x)
jnp.iscomplexobj(1j)
jnp.iscomplexobj([1j])
jnp.iscomplexobj(None)
jnp.isrealobj(x)
jnp.isrealobj(1j)
jnp.isrealobj([1])
jnp.pad(a, 2)
jnp.pad(a, (1, 2))
jnp.pad(a, ((1, 2),))
jnp.pad(x, ((1, 2), (0, 1)))
jnp.pad(x, 1, constant_values=9)
jnp.pad(x, 1, constant_values=1.5)
jnp.pad(a, 1, constant_values=1.5)
jnp.pad(x, 1, constant_values=((1, 2), (3, 4)))
jnp.pad(x, 1, constant_values=(7, 8))
jnp.pad(w, 1)
jnp.pad(x, jnp.array(1))
jnp.pad(a, 3, mode='edge')
jnp.pad(a, (3, 2), mode='reflect')
jnp.pad(a, (7, 9), mode='reflect')
jnp.pad(a, (7, 9), mode='reflect', reflect_type='odd')
jnp.pad(a, (7, 9), mode='symmetric')
jnp.pad(a, (7, 9), mode='symmetric', reflect_type='odd')
jnp.pad(a, (7, 9), mode='wrap')
jnp.pad(a, (3, 2), mode='linear_ramp')
jnp.pad(a, (3, 2), mode='linear_ramp', end_values=(5, -4))
jnp.pad(x, 2, mode='linear_ramp', end_values=((1, 2), (3, 4)))
jnp.pad(a, (3, 2), mode='maximum')
jnp.pad(a, (3, 2), mode='maximum', stat_length=2)
jnp.pad(a, (3, 2), mode='minimum', stat_length=(1, 3))
jnp.pad(a, (3, 2), mode='mean')
jnp.pad(a, (3, 2), mode='mean', stat_length=2)
jnp.pad(jnp.array([1., 2, 4, 8]), (3, 2), mode='median')
jnp.pad(jnp.array([1., 2, 4, 8]), (3, 2), mode='median', stat_length=2)
jnp.pad(a, (3, 2), mode='empty')
jnp.pad(x, 2, mode='reflect')
jnp.pad(x, 2, mode='wrap')
jnp.pad(x, ((1,2),(3,4)), mode='symmetric')
jnp.pad(jnp.zeros(0), 2)
jnp.pad(jnp.zeros((0, 2)), ((0, 0), (1, 1)), mode='edge')
jnp.pad(jnp.ones(1), 3, mode='reflect')
jnp.pad(jnp.ones(1), 3, mode='symmetric')
jnp.pad(a, 2, mode=lambda v, pw, ax, kw: v)
jnp.pad(a, (3, 2), mode='mean', stat_length=-1)
jnp.pad(jnp.ones((2,2), jnp.bfloat16), 1, mode='mean')
jnp.pad(jnp.array([True, False]), 1)
jnp.pad(jnp.array([True, False]), 1, mode='mean')
jnp.pad(jnp.array([1, 2], jnp.uint8), 2, mode='linear_ramp')
jnp.pad(jnp.array([1, 2], jnp.uint8), 2, mode='mean')
jnp.pad(jnp.array([1, 2], jnp.int8), 2, mode='median')
"""

# JAX's message differs for a reason noted beside each (the exception class agrees)
LOOSE = {
    "jnp.stack([jnp.ones(2), jnp.ones(3)])": "no lax.stack: shapes are not listed",
}


@pytest.mark.parametrize("expr", _lines(CASES))
def test_matches_jax(jax, expr):
  _compare(jax, expr, loose_msg=expr in LOOSE)


@pytest.mark.parametrize("expr", _lines(ERR_CASES))
def test_errors_match_jax(jax, expr):
  _compare(jax, expr, loose_msg=expr in LOOSE)


@pytest.mark.parametrize("expr", _lines(PAD_CASES))
def test_pad_matches_jax(jax, expr):
  _compare(jax, expr)


@pytest.mark.slow
@pytest.mark.parametrize("expr", _lines(MORE_CASES) + _lines(PAD_MORE_CASES))
def test_more_matches_jax(jax, expr):
  _compare(jax, expr)


DTYPE_CASES = [
    "jnp.reshape(jnp.ones((2, 3), jnp.{d}), (3, -1), order='F')",
    "jnp.transpose(jnp.zeros((2, 0, 3), jnp.{d}), (2, 0, 1))",
    "jnp.concatenate([jnp.ones((1, 2), jnp.{d}), jnp.zeros((0, 2), jnp.{d})])",
    "jnp.concatenate([jnp.ones(2, jnp.{d}), wf])",
    "jnp.stack([jnp.ones(2, jnp.{d}), jnp.zeros(2, jnp.{d})], -1)",
    "jnp.split(jnp.ones((4, 1), jnp.{d}), [1, 1, 3])",
    "jnp.roll(jnp.arange(6).astype(jnp.{d}).reshape(2, 3), (1, -1), (0, 1))",
    "jnp.tile(jnp.ones((1, 2), jnp.{d}), (2, 1, 2))",
    "jnp.repeat(jnp.ones((2, 2), jnp.{d}), jnp.array([0, 3]), axis=1)",
    "jnp.where(b2, jnp.ones(3, jnp.{d}), 0)",
    "jnp.pad(jnp.arange(4).astype(jnp.{d}).reshape(2, 2), ((1, 2), (3, 0)), mode='reflect')",
    "jnp.pad(jnp.arange(4).astype(jnp.{d}).reshape(2, 2), 1, mode='mean')",
    "jnp.pad(jnp.ones((2, 2), jnp.{d}), 2, constant_values=3)",
    "jnp.clip(jnp.arange(5).astype(jnp.{d}), 1, 3)",
    "jnp.insert(jnp.ones((2, 2), jnp.{d}), 1, 0, axis=1)",
    "jnp.delete(jnp.arange(5).astype(jnp.{d}), np.array([0, 3]))",
]


@pytest.mark.slow
@pytest.mark.parametrize("d", DTYPE_NAMES)
@pytest.mark.parametrize("template", DTYPE_CASES)
def test_dtypes_match_jax(jax, template, d):
  _compare(jax, template.format(d=d), loose_msg=True)


# --- tests that need no JAX ----------------------------------------------------------------
def _rand(shape, dtype, seed=0):
  rng = np.random.RandomState(seed)
  if dtype == np.bool_:
    return rng.rand(*shape) > 0.5
  if np.dtype(dtype).kind in "iu":
    return rng.randint(0, 50, size=shape).astype(dtype)
  return rng.randn(*shape).astype(dtype)


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "symmetric", "wrap",
                                  "linear_ramp", "maximum", "minimum", "mean"])
@pytest.mark.parametrize("widths", [((0, 0), (0, 0)), ((1, 2), (3, 0)), ((4, 7), (9, 5))])
def test_pad_vs_numpy(mode, widths):
  a = _rand((3, 4), np.float32)
  ours = jnp.pad(jnp.asarray(a), widths, mode=mode)
  ref = np.pad(a, widths, mode=mode)
  assert ours.shape == ref.shape and ours.dtype == np.float32
  np.testing.assert_allclose(ours, ref, rtol=1e-5, atol=1e-6)
  if mode in ("reflect", "symmetric"):
    np.testing.assert_allclose(jnp.pad(jnp.asarray(a), widths, mode=mode, reflect_type="odd"),
                               np.pad(a, widths, mode=mode, reflect_type="odd"), rtol=1e-5, atol=1e-5)


NP_DTYPES = [bf16, np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.int8),
             np.dtype(np.uint8), np.dtype(np.int32), np.dtype(np.bool_)]


@pytest.mark.parametrize("dtype", NP_DTYPES, ids=str)
def test_dtypes_vs_numpy(dtype):
  """Every structural function keeps the dtype and moves values exactly like NumPy."""
  a = _rand((2, 3, 4), dtype)
  pa = jnp.asarray(a)
  z = np.zeros((2, 0, 4), dtype)
  checks = [
      (jnp.reshape(pa, (4, -1), order="F"), np.reshape(a, (4, -1), order="F")),
      (jnp.transpose(pa, (2, 0, 1)), np.transpose(a, (2, 0, 1))),
      (jnp.concatenate([pa, jnp.asarray(z)], 1), np.concatenate([a, z], 1)),
      (jnp.stack([pa, pa], -1), np.stack([a, a], -1)),
      (jnp.flip(pa, 1), np.flip(a, 1)),
      (jnp.rot90(pa, 1, (1, 2)), np.rot90(a, 1, (1, 2))),
      (jnp.roll(pa, (1, -3), (1, 2)), np.roll(a, (1, -3), (1, 2))),
      (jnp.tile(pa, (1, 2, 1)), np.tile(a, (1, 2, 1))),
      (jnp.repeat(pa, np.array([2, 0, 1]), axis=1), np.repeat(a, [2, 0, 1], axis=1)),
      (jnp.broadcast_to(pa, (3, 2, 3, 4)), np.broadcast_to(a, (3, 2, 3, 4))),
      (jnp.insert(pa, 1, jnp.asarray(a[:, 0]), axis=1), np.insert(a, 1, a[:, 0], axis=1)),
      (jnp.delete(pa, np.array([0, 2]), axis=2), np.delete(a, [0, 2], axis=2)),
      (jnp.where(jnp.asarray(a != 0), pa, jnp.asarray(a[::-1])), np.where(a != 0, a, a[::-1])),
      (jnp.pad(pa, ((0, 1), (2, 3), (4, 5)), mode="reflect"), np.pad(a, ((0, 1), (2, 3), (4, 5)), mode="reflect")),
      (jnp.pad(pa, ((1, 1), (2, 0), (0, 5)), mode="wrap"), np.pad(a, ((1, 1), (2, 0), (0, 5)), mode="wrap")),
      (jnp.pad(pa, 2, mode="edge"), np.pad(a, 2, mode="edge")),
      (jnp.pad(pa, 1, constant_values=1), np.pad(a, 1, constant_values=1)),
      (jnp.pad(pa, 1, mode="maximum"), np.pad(a, 1, mode="maximum")),
  ]
  for ours, ref in checks:
    assert ours.dtype == dtype and ours.shape == ref.shape
    np.testing.assert_array_equal(_as_np(ours), ref.astype(np.float32) if dtype == bf16 else ref)
  for o, r in zip(jnp.split(pa, [1, 3], axis=2), np.split(a, [1, 3], axis=2)):
    assert o.dtype == dtype
    np.testing.assert_array_equal(_as_np(o), r.astype(np.float32) if dtype == bf16 else r)


def test_pad_kwargs_vs_numpy():
  a = _rand((3, 4), np.float32)
  pj = jnp.asarray(a)
  for kw in [dict(mode="constant", constant_values=((1, 2), (3, 4))),
             dict(mode="linear_ramp", end_values=((1, 2), (3, 4))),
             dict(mode="maximum", stat_length=((1, 2), (2, 1))),
             dict(mode="mean", stat_length=2), dict(mode="median")]:
    np.testing.assert_allclose(jnp.pad(pj, ((2, 3), (1, 4)), **kw),
                               np.pad(a, ((2, 3), (1, 4)), **kw), rtol=1e-5, atol=1e-6)


def test_manipulation_vs_numpy():
  a = np.arange(24).reshape(2, 3, 4)
  pa = jnp.asarray(a)
  checks = [
      (jnp.reshape(pa, (4, -1), order="F"), np.reshape(a, (4, -1), order="F")),
      (jnp.ravel(pa, order="F"), np.ravel(a, order="F")),
      (jnp.moveaxis(pa, (0, 1), (-1, 0)), np.moveaxis(a, (0, 1), (-1, 0))),
      (jnp.swapaxes(pa, 0, 2), np.swapaxes(a, 0, 2)),
      (jnp.rollaxis(pa, 2, 1), np.rollaxis(a, 2, 1)),
      (jnp.expand_dims(pa, (0, -1)), np.expand_dims(a, (0, -1))),
      (jnp.stack([pa, pa], 2), np.stack([a, a], 2)),
      (jnp.hstack([pa, pa]), np.hstack([a, a])),
      (jnp.vstack([jnp.asarray(a[0]), jnp.asarray(a[1])]), np.vstack([a[0], a[1]])),
      (jnp.dstack([jnp.arange(3), jnp.arange(3)]), np.dstack([np.arange(3), np.arange(3)])),
      (jnp.column_stack([jnp.arange(3), jnp.arange(3)]), np.column_stack([np.arange(3)] * 2)),
      (jnp.flip(pa, (0, 2)), np.flip(a, (0, 2))),
      (jnp.rot90(pa, 3, (1, 2)), np.rot90(a, 3, (1, 2))),
      (jnp.roll(pa, (5, -2), (2, 1)), np.roll(a, (5, -2), (2, 1))),
      (jnp.roll(pa, 7), np.roll(a, 7)),
      (jnp.tile(pa, (2, 1, 1, 2)), np.tile(a, (2, 1, 1, 2))),
      (jnp.repeat(pa, 2, axis=1), np.repeat(a, 2, axis=1)),
      (jnp.repeat(pa, np.array([1, 0, 3]), axis=1), np.repeat(a, [1, 0, 3], axis=1)),
      (jnp.resize(pa, (5, 7)), np.resize(a, (5, 7))),
      (jnp.insert(pa, np.array([0, 2, 2]), 99, axis=2), np.insert(a, [0, 2, 2], 99, axis=2)),
      (jnp.delete(pa, np.array([0, 3]), axis=2), np.delete(a, [0, 3], axis=2)),
      (jnp.append(pa, pa, axis=1), np.append(a, a, axis=1)),
      (jnp.trim_zeros(jnp.array([0, 0, 3, 0, 1, 0])), np.trim_zeros(np.array([0, 0, 3, 0, 1, 0]))),
      (jnp.block([[jnp.ones((2, 2)), jnp.zeros((2, 1))]]), np.block([[np.ones((2, 2)), np.zeros((2, 1))]])),
      (jnp.clip(pa, 3, 17), np.clip(a, 3, 17)),
      (jnp.where(pa > 5, pa, -1), np.where(a > 5, a, -1)),
      (jnp.select([pa < 5, pa > 20], [pa, -pa], 7), np.select([a < 5, a > 20], [a, -a], 7)),
      (jnp.choose(jnp.array([0, 2, 1]), [jnp.arange(3), jnp.arange(3, 6), jnp.arange(6, 9)]),
       np.choose([0, 2, 1], [np.arange(3), np.arange(3, 6), np.arange(6, 9)])),
  ]
  for ours, ref in checks:
    np.testing.assert_array_equal(ours, ref)
  for o, r in zip(jnp.array_split(pa, 3, axis=2), np.array_split(a, 3, axis=2)):
    np.testing.assert_array_equal(o, r)
  for o, r in zip(jnp.split(pa, [1, 3], axis=2), np.split(a, [1, 3], axis=2)):
    np.testing.assert_array_equal(o, r)


def test_weak_types_kept():
  wf = jnp.full((2, 3), 1.0)
  assert wf.weak_type
  for out in [jnp.reshape(wf, -1), jnp.transpose(wf), jnp.flip(wf), jnp.roll(wf, 1),
              jnp.tile(wf, 2), jnp.repeat(wf, 2), jnp.broadcast_to(wf, (4, 2, 3)),
              jnp.concatenate([wf, wf]), jnp.stack([wf, wf]), jnp.pad(wf, 1),
              jnp.pad(wf, 1, mode="edge"), jnp.pad(wf, 1, mode="mean"),
              jnp.squeeze(jnp.expand_dims(wf, 0)),
              jnp.where(True, wf, 0), jnp.clip(wf, 0, 1), jnp.insert(wf, 1, 5.0, axis=0),
              jnp.delete(wf, 0, axis=0), jnp.resize(wf, (7,)), jnp.atleast_3d(wf)]:
    assert out.weak_type, out
  assert not jnp.concatenate([wf, jnp.ones((2, 3))]).weak_type
  assert not jnp.choose(jnp.array([0, 1]), [jnp.full(2, 1.0), jnp.full(2, 2.0)]).weak_type
  assert jnp.where(True, 1, 2).weak_type and jnp.where(True, 1, 2).dtype == np.int32


def test_errors_without_jax():
  x = jnp.ones((2, 3))
  with pytest.raises(ValueError, match="axis 2 is out of bounds for array of dimension 2"):
    jnp.flip(x, 2)
  with pytest.raises(ValueError, match="axis 0 is out of bounds for array of dimension 0"):
    jnp.flipud(jnp.asarray(1.0))
  with pytest.raises(TypeError, match="reshape requires ndarray or scalar arguments"):
    jnp.reshape([1, 2], (2,))
  with pytest.raises(TypeError, match="can only specify one unknown axis size"):
    jnp.reshape(x, (-1, -1))
  with pytest.raises(TypeError, match=r"into shape \(4, 2\) \(size 8\)"):
    jnp.reshape(x, (4, 2))
  with pytest.raises(TypeError, match="Shapes must be 1D sequences"):
    jnp.repeat(x, 2.0)  # (not compared with JAX: its jit cache confuses repeats=2 and 2.0)
  with pytest.raises(ValueError, match="equal division: rest is 1"):
    jnp.split(jnp.arange(10), 3)
  with pytest.raises(ValueError, match="Need at least one array to concatenate"):
    jnp.concatenate([])
  with pytest.raises(ValueError, match="size and fill_value arguments cannot be used"):
    jnp.where(x > 0, x, 0, size=3)
  with pytest.raises(ValueError, match="No input was provided to the clip function"):
    jnp.clip(None, 0, 1)
  with pytest.raises(TypeError):
    jnp.clip(x, a_min=1)
  with pytest.raises(ValueError, match="Incompatible shapes for broadcasting"):
    jnp.broadcast_arrays(x, jnp.ones(4))
  with pytest.raises(NotImplementedError, match="Unimplemented padding mode 'foo'"):
    jnp.pad(x, 1, mode="foo")
  with pytest.raises(ValueError, match="Cannot apply 'edge' padding to empty axis"):
    jnp.pad(jnp.zeros(0), 2, mode="edge")


def test_introspection():
  x = jnp.ones((2, 3))
  assert jnp.ndim(x) == 2 and jnp.shape(x) == (2, 3) and jnp.size(x) == 6 and jnp.size(x, 1) == 3
  with pytest.warns(DeprecationWarning, match="ndim requires ndarray or scalar arguments"):
    assert jnp.ndim([1, 2]) == 1
  with pytest.warns(DeprecationWarning, match="shape requires ndarray"):
    assert jnp.shape([[1, 2]]) == (1, 2)
  assert jnp.isscalar(1) and jnp.isscalar(jnp.asarray(1.0)) and not jnp.isscalar(x)
  assert jnp.isscalar(np.float32(1)) and not jnp.isscalar([1]) and not jnp.isscalar(None)
  assert jnp.iscomplexobj(1j) and jnp.iscomplexobj(x + 1j) and not jnp.iscomplexobj(x)
  assert jnp.isrealobj(x) and not jnp.isrealobj(1j) and jnp.isrealobj(None)
  assert jnp.broadcast_shapes((2, 1), (3,)) == (2, 3) and jnp.broadcast_shapes() == ()


def test_where_one_arg():
  if not hasattr(jnp, "nonzero"):
    pytest.skip("jnp.nonzero is not available yet")
  x = jnp.array([[0, 1], [2, 0]])
  for o, r in zip(jnp.where(x), np.where(np.asarray(x))):
    np.testing.assert_array_equal(o, r)
  out = jnp.where(x, size=3, fill_value=-1)
  np.testing.assert_array_equal(out[0], [0, 1, -1])


def test_methods_route_here():
  x = jnp.arange(6).reshape(2, 3)
  np.testing.assert_array_equal(x.reshape(3, 2), np.arange(6).reshape(3, 2))
  np.testing.assert_array_equal(x.reshape((-1,)), np.arange(6))
  np.testing.assert_array_equal(x.T, np.arange(6).reshape(2, 3).T)
  np.testing.assert_array_equal(x.transpose(1, 0), np.arange(6).reshape(2, 3).T)
  np.testing.assert_array_equal(x.ravel(), np.arange(6))
  np.testing.assert_array_equal(x.flatten(order="F"), np.arange(6).reshape(2, 3).ravel("F"))
  np.testing.assert_array_equal(x.clip(1, 4), np.clip(np.arange(6).reshape(2, 3), 1, 4))
  np.testing.assert_array_equal(x.repeat(2, axis=0), np.arange(6).reshape(2, 3).repeat(2, 0))
  np.testing.assert_array_equal(x.swapaxes(0, 1), np.arange(6).reshape(2, 3).T)
  np.testing.assert_array_equal(jnp.ones((1, 3)).squeeze(0), np.ones(3))
  np.testing.assert_array_equal(x.mT, np.arange(6).reshape(2, 3).T)


# --- tracing ----------------------------------------------------------------------------
i32, f32 = np.dtype(np.int32), np.dtype(np.float32)


def _trace(fun, *avals):
  def flat(*a):
    out = fun(*a)
    return list(out) if isinstance(out, (list, tuple)) else [out]
  return core.trace_to_jaxpr(flat, list(avals))


def _eval(cj, *args):
  return core.eval_jaxpr(cj.jaxpr, cj.consts, *[jnp.asarray(a) for a in args])


def test_traced_dynamic_arguments():
  x = jnp.arange(12.).reshape(3, 4)
  cj = _trace(lambda s: jnp.roll(x, s, 1), ShapedArray((), i32))
  np.testing.assert_array_equal(_eval(cj, np.int32(-5))[0], np.roll(np.asarray(x), -5, 1))
  cj = _trace(lambda r: jnp.repeat(x, r, axis=0, total_repeat_length=5), ShapedArray((3,), i32))
  np.testing.assert_array_equal(_eval(cj, np.array([2, 0, 3], np.int32))[0],
                                np.repeat(np.asarray(x), [2, 0, 3], axis=0))
  cj = _trace(lambda i: jnp.delete(jnp.arange(10), i, assume_unique_indices=True),
              ShapedArray((2,), i32))
  np.testing.assert_array_equal(_eval(cj, np.array([7, 2], np.int32))[0],
                                np.delete(np.arange(10), [7, 2]))
  cj = _trace(lambda c: jnp.pad(x, 1, constant_values=c), ShapedArray((), f32))
  np.testing.assert_array_equal(_eval(cj, np.float32(9))[0], np.pad(np.asarray(x), 1, constant_values=9))
  cj = _trace(lambda i: jnp.choose(i, [x, -x], mode="clip"), ShapedArray((3, 4), i32))
  idx = np.array([[0, 1, 5, -1]] * 3, np.int32)
  np.testing.assert_array_equal(_eval(cj, idx)[0], np.choose(idx, [np.asarray(x), -np.asarray(x)], mode="clip"))


def test_traced_static_arguments_raise():
  x = jnp.arange(6.).reshape(2, 3)
  with pytest.raises(errors.ConcretizationTypeError, match="total number of repeats must be static"):
    _trace(lambda r: jnp.repeat(x, r, axis=0), ShapedArray((2,), i32))
  with pytest.raises(errors.ConcretizationTypeError, match="'obj' array argument of jnp.delete"):
    _trace(lambda i: jnp.delete(jnp.arange(10), i), ShapedArray((2,), i32))
  with pytest.raises(errors.ConcretizationTypeError, match="pad_width argument of jnp.pad"):
    _trace(lambda p: jnp.pad(x, p), ShapedArray((), i32))
  with pytest.raises(errors.ConcretizationTypeError, match="mode='raise'"):
    _trace(lambda i: jnp.choose(i, [x, x]), ShapedArray((2, 3), i32))
  with pytest.raises(errors.ConcretizationTypeError, match="`filt` argument of trim_zeros"):
    _trace(lambda v: jnp.trim_zeros(v), ShapedArray((3,), f32))
  with pytest.raises(TypeError, match="Shapes must be 1D sequences of concrete values"):
    _trace(lambda n: jnp.reshape(x, (n, 3)), ShapedArray((), i32))


def test_jaxpr_text():
  cj = _trace(lambda a: jnp.flip(a), ShapedArray((2, 3), f32))
  assert "rev[dimensions=(0, 1)] a" in str(cj)
  cj = _trace(lambda a: jnp.broadcast_to(a, (4, 2, 3)), ShapedArray((2, 3), f32))
  assert "f32[4,2,3] = broadcast_in_dim[broadcast_dimensions=(1, 2)] a" in str(cj)
  cj = _trace(lambda a: jnp.squeeze(a), ShapedArray((2, 3), f32))
  assert str(cj) == "{ lambda ; a:f32[2,3]. let  in (a,) }"
  cj = _trace(lambda a: jnp.reshape(a, (3, 2), order="F"), ShapedArray((2, 3), f32))
  assert "reshape[dimensions=(1, 0) new_sizes=(2, 3) sharding=None] a" in str(cj)
  assert "transpose[permutation=(1, 0)]" in str(cj)
  cj = _trace(lambda a: jnp.repeat(a, 2, 1), ShapedArray((2, 3), f32))
  assert "f32[2,3,2] = broadcast_in_dim[broadcast_dimensions=(0, 1)] a" in str(cj)


@pytest.mark.parametrize("reps", [[1, 2], [0, 2], [2, 0], [0, 0], [3, 3]])
@pytest.mark.parametrize("total", [0, 1, 3, 5])
def test_traced_repeat_matches_jax(jax, reps, total):
  x = np.arange(6.).reshape(2, 3).astype(np.float32)
  ref = jax.jit(lambda r: jax.numpy.repeat(x, r, axis=0, total_repeat_length=total))(np.array(reps, np.int32))
  cj = _trace(lambda r: jnp.repeat(jnp.asarray(x), r, axis=0, total_repeat_length=total),
              ShapedArray((2,), i32))
  out, = _eval(cj, np.array(reps, np.int32))
  assert out.shape == ref.shape and out.dtype == ref.dtype
  np.testing.assert_array_equal(out, ref)
  eager = jnp.repeat(jnp.asarray(x), jnp.asarray(np.array(reps, np.int32)), axis=0,
                     total_repeat_length=total)
  np.testing.assert_array_equal(eager, ref)
