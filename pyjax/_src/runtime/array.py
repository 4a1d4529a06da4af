"""The concrete Array: an immutable buffer on a device.

``ArrayImpl`` holds a NumPy buffer (or, for asynchronously computed values, a pending
result that is waited on at first read), its aval (shape, dtype, weak_type), its device,
and whether it is committed to that device.  Operators and NumPy-style methods are
attached by ``pyjax._src.numpy`` (the library layer), as JAX does.
"""
from __future__ import annotations

import abc
import math
import operator

import numpy as np

from pyjax._src import dtypes
from pyjax._src.avals import ShapedArray
from pyjax._src.runtime import devices as _devices
from pyjax._src.runtime.stream import PendingBuffer


class Array(abc.ABC):
  """``pyjax.Array``: the abstract array type; concrete arrays and tracers are instances."""
  __slots__ = ()


class SingleDeviceSharding:
  """The sharding of an array that lives wholly on one device."""

  def __init__(self, device, *, memory_kind=None):
    self._device = device
    self.memory_kind = memory_kind or "device"

  @property
  def device_set(self):
    return {self._device}

  def __repr__(self):
    return f"SingleDeviceSharding(device={self._device!r}, memory_kind={self.memory_kind})"

  def __eq__(self, other):
    return isinstance(other, SingleDeviceSharding) and other._device is self._device

  def __hash__(self):
    return hash(("SingleDeviceSharding", id(self._device)))

  def is_equivalent_to(self, other, ndim):
    """Whether ``other`` places an ``ndim``-dimensional array alike: wholly on this device
    (a NamedSharding over a one-device mesh of it too, as in JAX)."""
    if isinstance(other, SingleDeviceSharding):
      return self == other and self.memory_kind == other.memory_kind
    eq = getattr(other, "is_equivalent_to", None)
    return eq is not None and eq(self, ndim)

  @property
  def is_fully_replicated(self):
    return True

  @property
  def is_fully_addressable(self):
    return True

  @property
  def addressable_devices(self):
    return {self._device}

  @property
  def num_devices(self):
    return 1

  @property
  def _device_assignment(self):
    return [self._device]

  @property
  def _addressable_device_assignment(self):
    return [self._device]

  def with_memory_kind(self, kind):
    return SingleDeviceSharding(self._device, memory_kind=kind)

  def shard_shape(self, global_shape):
    """The whole array is the device's one shard."""
    return tuple(global_shape)

  def devices_indices_map(self, global_shape):
    """``{device: slices}``: the one device holds every index."""
    return {self._device: tuple(slice(None) for _ in global_shape)}

  def addressable_devices_indices_map(self, global_shape):
    return self.devices_indices_map(global_shape)


class _ArrayImplType(abc.ABCMeta):
  """The metaclass of ``ArrayImpl``: its layout subclasses (``ShardedArrayImpl``) compare
  and hash equal to ``ArrayImpl`` itself, so ``type(x) == type(y)`` holds for any two
  concrete arrays, as in JAX where every array is one ``ArrayImpl`` whatever its sharding.

  Differs from JAX: ``type(x) is type(y)`` is still False between a sharded and a
  single-device array (pyjax keeps the single-device fast paths on an exact type test)."""

  def __eq__(cls, other):
    if cls is other:
      return True
    if isinstance(other, _ArrayImplType):
      return (getattr(cls, "_array_type", cls)
              is getattr(other, "_array_type", other))
    return NotImplemented

  def __ne__(cls, other):
    eq = _ArrayImplType.__eq__(cls, other)
    return eq if eq is NotImplemented else not eq

  def __hash__(cls):
    # one constant for every class of this metaclass (equal classes hash alike): the
    # cheapest Python-level hash, as it runs on every set/dict look-up of an array's type
    # (tree_flatten's leaf test, per leaf); a look-up of ``type(x)`` costs ~2x a plain
    # class's instead of ~10x with a computed hash
    return 0x7A1A7E11


class ArrayImpl(Array, metaclass=_ArrayImplType):
  __slots__ = ("_buf", "aval", "_device", "_committed", "__weakref__")
  __array_priority__ = 100

  def __init__(self, buf, aval, device=None, committed=False):
    self._buf = buf
    self.aval = aval
    self._device = device
    self._committed = committed

  # -- data access -----------------------------------------------------------------------
  def _data(self):
    """The NumPy buffer, waiting for it if it is still being computed."""
    b = self._buf
    if type(b) is np.ndarray:
      return b
    return self._resolve()

  def _resolve(self):
    b = self._buf
    if type(b) is PendingBuffer:
      b = b.result()
    elif type(b) is _DeletedBuffer:
      raise RuntimeError("Array has been deleted with shape="
                         f"{self.aval.str_short(short_dtypes=False)}.")
    if type(b) is not np.ndarray:
      b = np.asarray(b)
    self._buf = b
    return b

  @property
  def _value(self):
    return self._data()

  def block_until_ready(self):
    if type(self._buf) is _DeletedBuffer:
      from pyjax._src.errors import JaxRuntimeError
      raise JaxRuntimeError("INVALID_ARGUMENT: BlockHostUntilReady() called on deleted or "
                            "donated buffer")
    self._data()
    return self

  def is_ready(self):
    """False while the value is still being computed asynchronously."""
    b = self._buf
    return type(b) is not PendingBuffer or b.done()

  def copy_to_host_async(self):
    """A no-op on CPU (the buffer is host memory); does not wait, as in JAX."""

  # -- metadata --------------------------------------------------------------------------
  @property
  def shape(self):
    return self.aval.shape

  @property
  def dtype(self):
    return self.aval.dtype

  @property
  def weak_type(self):
    return self.aval.weak_type

  @property
  def ndim(self):
    return len(self.aval.shape)

  @property
  def size(self):
    return math.prod(self.aval.shape)

  @property
  def itemsize(self):
    return self.aval.dtype.itemsize

  @property
  def nbytes(self):
    return self.size * self.aval.dtype.itemsize

  def _dev(self):
    d = self._device
    if d is None:  # uncommitted constants made without a device: the default one
      d = self._device = _devices.default_device()
    return d

  @property
  def device(self):
    return self._dev()

  def devices(self):
    return {self._dev()}

  @property
  def committed(self):
    return self._committed

  @property
  def sharding(self):
    return SingleDeviceSharding(self._dev())

  @property
  def is_fully_addressable(self):
    return True

  @property
  def is_fully_replicated(self):
    return True

  @property
  def addressable_shards(self):
    return [Shard(self._dev(), self)]

  @property
  def global_shards(self):
    return self.addressable_shards

  def addressable_data(self, index):
    return self

  def delete(self):
    """Free the buffer; a value still being computed is waited for first (an error of
    that computation is dropped with it)."""
    b = self._buf
    if type(b) is PendingBuffer:
      b.wait()
    self._buf = _DeletedBuffer()

  def _donate(self):
    """Mark the array deleted because a computation took its buffer: no wait (work that
    reads the buffer holds its own reference to it)."""
    self._buf = _DeletedBuffer()

  def is_deleted(self):
    return isinstance(self._buf, _DeletedBuffer)

  def unsafe_buffer_pointer(self):
    return self._data().ctypes.data

  # -- conversion ------------------------------------------------------------------------
  def __array__(self, dtype=None, copy=None):
    b = self._data()
    if b.flags.writeable:
      b.flags.writeable = False
    if dtype is not None and np.dtype(dtype) != b.dtype:
      return b.astype(dtype)
    if copy:
      return b.copy()
    return b

  def __dlpack__(self, *args, **kwargs):
    return self._data().__dlpack__(*args, **kwargs)

  def __dlpack_device__(self):
    return self._data().__dlpack_device__()

  def item(self, *args):
    return self._data().item(*args)

  def tolist(self):
    return self._data().tolist()

  def _scalar(self, convert, name):
    if self.aval.shape and self.size != 1:
      raise TypeError("Only scalar arrays can be converted to Python scalars; "
                      f"got arr.ndim={self.ndim}")
    return convert(self._data().reshape(()).item() if self.aval.shape else self._data()[()])

  def __bool__(self):
    if self.size != 1:
      raise ValueError("The truth value of an array with more than one element is "
                       "ambiguous. Use a.any() or a.all()")
    return bool(self._data().reshape(()))

  def __int__(self):
    return self._scalar(int, "int")

  def __float__(self):
    return self._scalar(float, "float")

  def __complex__(self):
    return self._scalar(complex, "complex")

  def __index__(self):
    if not dtypes.is_int(self.aval.dtype) and self.aval.dtype != dtypes.bool_:
      raise TypeError("only integer scalar arrays can be converted to a scalar index")
    if self.aval.shape:
      raise TypeError("only integer scalar arrays can be converted to a scalar index")
    return operator.index(self._data()[()])

  def __len__(self):
    if not self.aval.shape:
      raise TypeError("len() of unsized object")
    return self.aval.shape[0]

  def __iter__(self):
    if not self.aval.shape:
      raise TypeError("iteration over a 0-d array")
    b = self._data()
    aval = ShapedArray(self.aval.shape[1:], self.aval.dtype, self.aval.weak_type)
    for i in range(self.aval.shape[0]):
      yield ArrayImpl(b[i], aval, self._dev(), self._committed)

  def __hash__(self):
    raise TypeError("unhashable type: 'ArrayImpl'")

  def __setitem__(self, idx, value):
    raise TypeError("JAX arrays are immutable and do not support in-place item assignment. "
                    "Instead of x[idx] = y, use x = x.at[idx].set(y) or another .at[] "
                    "method: https://docs.jax.dev/en/latest/_autosummary/jax.numpy.ndarray.at.html")

  # -- printing --------------------------------------------------------------------------
  def __repr__(self):
    prefix = "Array("
    dtype_str = f"dtype={self.aval.dtype.name}" + (", weak_type=True)" if self.aval.weak_type else ")")
    if self.size == 0:
      body = f"[], shape={self.shape}"
    else:
      width = np.get_printoptions()["linewidth"]
      body = np.array2string(self._data(), prefix=prefix, suffix=",", separator=", ",
                             max_line_width=width)
      last_line = len(body) - body.rfind("\n") + 1
      if last_line + len(dtype_str) + 1 > width:
        return f"{prefix}{body},\n{' ' * len(prefix)}{dtype_str}"
    return f"{prefix}{body}, {dtype_str}"

  def __str__(self):
    return str(self._data())

  def __format__(self, spec):
    if self.ndim == 0:
      return format(self._data()[()], spec)
    return format(self._data(), spec)

  # -- copies and pickling ---------------------------------------------------------------
  def copy(self):
    return ArrayImpl(self._data().copy(), self.aval, self._dev(), self._committed)

  def __copy__(self):
    return self.copy()

  def __deepcopy__(self, memo):
    return self.copy()

  def __reduce__(self):
    return (_reconstruct, (self._data(), self.aval.weak_type))

  @property
  def __cuda_array_interface__(self):
    raise AttributeError("__cuda_array_interface__ is only defined for GPU arrays")


class _DeletedBuffer:
  """The buffer of a deleted Array: every read raises (see ``ArrayImpl._resolve``)."""
  __slots__ = ()


class Shard:
  """One device's part of an Array: ``device``, ``index`` (a tuple of slices into the
  global array), ``replica_id`` and ``data`` (an Array on ``device``).  pyjax arrays live
  on one device, so their one shard is the whole array."""

  def __init__(self, device, data):
    self.device = device
    self.data = data
    self.index = tuple(slice(None) for _ in data.shape)
    self.replica_id = 0

  def __repr__(self):
    return (f"Shard(device={self.device!r}, index={self.index}, "
            f"replica_id={self.replica_id}, data={self.data})")


def _reconstruct(buf, weak_type):
  return make_array(np.array(buf), weak_type)


def make_array(buf, weak_type=False, device=None, committed=False):
  """Wrap a NumPy buffer (already of a canonical dtype) as an Array on ``device``."""
  if device is None:
    device = _devices.default_device()
  return ArrayImpl(buf, ShapedArray(buf.shape, buf.dtype, weak_type), device, committed)


Array.register(ArrayImpl)
ArrayImpl.__module__ = "pyjax"
ArrayImpl._array_type = ArrayImpl  # what every layout subclass compares equal to


def _flatten_fast_path():
  """Let the pytree flatteners test for ``ArrayImpl`` by identity (``registry.ARRAY_TYPE``)."""
  from pyjax._src.tree_util import flatten, registry
  registry.ARRAY_TYPE = flatten.ARRAY_TYPE = ArrayImpl


_flatten_fast_path()
