"""The Array type: metadata, repr/str, conversion, immutability, copying and pickling."""
import copy
import pickle

import numpy as np
import pytest

import pyjax
import pyjax.numpy as jnp
from pyjax._src import dtypes


def A(x, dtype=None):
  return jnp.asarray(np.asarray(x) if dtype is None else np.asarray(x, dtype))


def test_metadata():
  x = A(np.arange(6, dtype=np.int32).reshape(2, 3))
  assert x.shape == (2, 3) and x.ndim == 2 and x.size == 6
  assert x.dtype == np.int32 and x.itemsize == 4 and x.nbytes == 24
  assert not x.weak_type
  assert isinstance(x, pyjax.Array)
  assert jnp.array(1.5).weak_type


@pytest.mark.parametrize("value,dtype,expected", [
    ([1, 2], np.int32, "Array([1, 2], dtype=int32)"),
    (1.5, None, "Array(1.5, dtype=float32, weak_type=True)"),
    ([], np.float32, "Array([], shape=(0,), dtype=float32)"),
    ([True, False], np.bool_, "Array([ True, False], dtype=bool)"),
    ([1.0, 1.0], np.float16, "Array([1., 1.], dtype=float16)"),
])
def test_repr_exact(value, dtype, expected):
  x = jnp.array(value) if dtype is None else jnp.array(np.array(value, dtype))
  assert repr(x) == expected


def test_repr_matches_jax(jax):
  import jax.numpy as jjnp
  cases = [np.arange(100, dtype=np.float32), np.zeros((2, 3, 4), np.float32),
           np.array([1 + 2j], np.complex64), np.zeros((0, 3), np.float32),
           np.arange(12, dtype=np.uint8).reshape(3, 4), np.array(3, np.int8),
           np.linspace(0, 1, 7, dtype=np.float32)]
  for c in cases:
    assert repr(jnp.array(c)) == repr(jjnp.array(c))
    assert str(jnp.array(c)) == str(jjnp.array(c))
  for v in [3, 1.5, True, 2j]:
    assert repr(jnp.array(v)) == repr(jjnp.array(v))
  bf = np.zeros((2, 3), dtypes.bfloat16)
  assert repr(jnp.array(bf)) == repr(jjnp.array(bf))


def test_str_and_format():
  x = A(np.ones((2, 2), np.float32))
  assert str(x) == "[[1. 1.]\n [1. 1.]]"
  assert format(jnp.float32(1.5), ".2f") == "1.50"
  assert f"{A(np.ones(2, np.float32))}" == "[1. 1.]"


def test_array_protocol_zero_copy_readonly():
  x = A(np.arange(4, dtype=np.float32))
  a = np.asarray(x)
  b = np.asarray(x)
  assert a.ctypes.data == b.ctypes.data
  assert not a.flags.writeable
  assert np.asarray(x, dtype=np.float64).dtype == np.float64


def test_scalar_conversions():
  assert float(jnp.float32(2.5)) == 2.5
  assert int(jnp.int32(7)) == 7
  assert complex(jnp.array(1j)) == 1j
  assert jnp.int32(3).item() == 3
  assert A([[1, 2], [3, 4]]).tolist() == [[1, 2], [3, 4]]
  assert [1, 2, 3][jnp.int32(1)] == 2
  with pytest.raises(TypeError, match="Only scalar arrays can be converted"):
    float(A(np.ones(2)))
  with pytest.raises(TypeError, match="only integer scalar arrays"):
    [1, 2][jnp.float32(1)]


def test_bool_only_size_one():
  assert bool(A([1]))
  assert not bool(jnp.array(0))
  with pytest.raises(ValueError, match="truth value of an array with more than one element"):
    bool(A([1, 2]))


def test_len_and_iteration():
  x = A(np.arange(6, dtype=np.int32).reshape(3, 2))
  assert len(x) == 3
  rows = list(x)
  assert len(rows) == 3 and all(isinstance(r, pyjax.Array) for r in rows)
  np.testing.assert_array_equal(rows[1], [2, 3])
  with pytest.raises(TypeError, match="len\\(\\) of unsized object"):
    len(jnp.float32(1))
  with pytest.raises(TypeError):
    iter(jnp.float32(1)).__next__()


def test_immutable_and_unhashable():
  x = A(np.arange(3))
  with pytest.raises(TypeError, match="JAX arrays are immutable"):
    x[0] = 1
  with pytest.raises(TypeError, match="unhashable type"):
    hash(x)


def test_copy_deepcopy_pickle():
  x = jnp.array(1.5)
  for y in (copy.copy(x), copy.deepcopy(x), pickle.loads(pickle.dumps(x)), x.copy()):
    assert isinstance(y, pyjax.Array)
    assert y.dtype == x.dtype and y.weak_type == x.weak_type
    np.testing.assert_array_equal(y, x)
  z = A(np.arange(4, dtype=np.int8))
  w = pickle.loads(pickle.dumps(z))
  assert repr(w) == repr(z)


def test_block_until_ready_and_tree():
  x = A(np.arange(3))
  assert x.block_until_ready() is x
  tree = {"a": x, "b": [x, 1]}
  assert pyjax.block_until_ready(tree) is tree


def test_astype():
  x = A(np.arange(3, dtype=np.int32))
  y = x.astype(jnp.float16)
  assert y.dtype == np.float16 and not y.weak_type
  assert jnp.array(1.0).astype(jnp.float32).weak_type is False


def test_list_inputs_rejected_like_jax():
  with pytest.raises(TypeError, match=r"add requires ndarray or scalar arguments, got <class 'list'> at position 0"):
    jnp.add([1, 2], 1)


def test_array_from_nested_and_overflow():
  assert jnp.array([[1, 2], [3, 4]]).dtype == np.int32
  assert jnp.array([1, 2.0]).dtype == np.float32
  assert jnp.array([1, 2.0]).weak_type is False
  with pytest.raises(OverflowError, match="too large to convert to int32"):
    jnp.array(2 ** 40)
  with pytest.raises(TypeError):
    jnp.array("hello")
  nested = jnp.array([jnp.float32(1), jnp.float32(2)])
  assert nested.shape == (2,) and nested.dtype == np.float32
