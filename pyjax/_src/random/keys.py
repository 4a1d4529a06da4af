"""Typed PRNG key arrays (dtype ``key<fry>``) and the key operations of ``jax.random``:
``key``, ``PRNGKey``, ``split``, ``fold_in``, ``clone``, ``key_data``, ``wrap_key_data``,
``key_impl``, ``key_dtype``.

Design (simpler than JAX's, see docs/architecture.md "Random"): a typed key array is a
``PRNGKeyArray`` holding its implementation and its raw key data, a ``uint32`` array (or
tracer) whose trailing dimension is the key shape ``(2,)``.  ``PRNGKeyArray`` is a
``pyjax.Array`` with the extended dtype ``KeyTy`` (``key<fry>``) and the key shape, and
it is registered as a pytree node with the raw data as its only leaf.  ``jit``, ``vmap``,
``grad`` and the control-flow primitives therefore see plain ``uint32`` arrays and need
no knowledge of keys.  The consequences (differences from JAX):

* staged jaxprs show the raw ``u32[..., 2]`` data (no ``key<fry>`` avals and no
  ``random_wrap``/``random_bits`` primitives; the hash appears as ``threefry2x32``);
* internally (``pyjax._src.tree_util``) a key array is a pytree node over its raw data;
  the public ``jax.tree_util`` / ``jax.tree`` functions take it as a leaf, as JAX does
  (``pyjax._src.tree_util.public``);
* ``vmap`` ``in_axes``/``out_axes`` on key arrays must be non-negative (a negative axis
  counts from the raw data's trailing key dimension);
* jax.numpy functions do not accept key arrays (no ``jnp.stack(keys)``); key arrays
  support indexing, ``.at[].get/set``, reshape/ravel/flatten/squeeze/swapaxes/take/
  transpose/``T``, iteration, ``len``, ``==``/``!=`` and ``copy`` as methods.
"""
from __future__ import annotations

import math
import operator
from collections.abc import Sequence

import numpy as np

from pyjax._src import core, dtypes
from pyjax._src import tree_util
from pyjax._src.avals import ShapedArray
from pyjax._src.config import config
from pyjax._src import key_reuse as _key_reuse
from pyjax._src.lax import lax_api as lax
from pyjax._src.random import prng
from pyjax._src.runtime.array import Array, ArrayImpl

__all__ = ["PRNGKeyArray", "KeyTy", "PRNGSpec", "extended", "prng_key", "key", "PRNGKey",
           "split", "fold_in", "clone", "key_data", "wrap_key_data", "key_impl",
           "key_dtype", "default_prng_impl", "resolve_prng_impl"]


# --- the extended dtype ------------------------------------------------------------------
from pyjax._src.dtypes import extended, prng_key  # noqa: E402  (scalar classes)


class KeyTy:
  """The dtype of typed PRNG key arrays: ``key<fry>`` for threefry2x32."""
  __slots__ = ("_impl",)
  type = prng_key
  kind = "V"
  _pyjax_extended = True

  def __init__(self, impl):
    self._impl = impl

  @property
  def impl(self):
    return self._impl

  @property
  def name(self):
    return f"key<{self._impl.tag}>"

  @property
  def itemsize(self):
    return math.prod(self._impl.key_shape) * np.dtype(np.uint32).itemsize

  def __repr__(self):
    return self.name

  __str__ = __repr__

  def __eq__(self, other):
    return type(other) is KeyTy and other._impl is self._impl

  def __ne__(self, other):
    return not self == other

  def __hash__(self):
    return hash((KeyTy, self._impl))


# --- key arrays --------------------------------------------------------------------------
def _check_prng_key_data(impl, key_data):
  ndim = len(impl.key_shape)
  if not all(hasattr(key_data, a) for a in ("ndim", "shape", "dtype")):
    raise TypeError("JAX encountered invalid PRNG key data: expected key_data to have ndim, "
                    f"shape, and dtype attributes. Got {key_data}")
  if key_data.ndim < 1:
    raise TypeError("JAX encountered invalid PRNG key data: expected key_data.ndim >= 1; "
                    f"got ndim={key_data.ndim}")
  if tuple(key_data.shape[-ndim:]) != impl.key_shape:
    raise TypeError("JAX encountered invalid PRNG key data: expected key_data.shape to end "
                    f"with {impl.key_shape}; got shape={tuple(key_data.shape)} for impl={impl}")
  if key_data.dtype not in (np.dtype(np.uint32), dtypes.float0):
    raise TypeError("JAX encountered invalid PRNG key data: expected key_data.dtype = uint32; "
                    f"got dtype={key_data.dtype}")


def _as_device_array(x):
  if isinstance(x, (np.ndarray, np.generic)):
    from pyjax._src.runtime.array import make_array
    return make_array(np.asarray(x))
  return x


_public_leaf = [False]


def _note_public_leaf():
  # The public jax.tree_util / jax.tree functions take key arrays as leaves, as JAX's
  # do; internally (transformations) a key array stays a node over its raw data.
  from pyjax._src.tree_util import public as tree_util_public
  tree_util_public.note_leaf_type(PRNGKeyArray)
  _public_leaf[0] = True


class PRNGKeyArray(Array):
  """An array of PRNG keys: ``shape`` is the key-array shape, ``dtype`` is ``key<impl>``,
  and the raw ``uint32`` data (``key_data``) has the key shape as trailing dimensions.
  Arithmetic is not supported; use the ``pyjax.random`` functions."""
  __slots__ = ("_impl", "_base_array")
  __array_priority__ = 100

  def __init__(self, impl, key_data):
    self._impl = impl
    self._base_array = key_data
    if not _public_leaf[0]:
      _note_public_leaf()

  # -- metadata --------------------------------------------------------------------------
  @property
  def dtype(self):
    return KeyTy(self._impl)

  @property
  def shape(self):
    n = len(self._impl.key_shape)
    return tuple(self._base_array.shape[:-n])

  @property
  def ndim(self):
    return len(self.shape)

  @property
  def size(self):
    return math.prod(self.shape)

  @property
  def itemsize(self):
    return self.dtype.itemsize

  @property
  def nbytes(self):
    return self.size * self.itemsize

  @property
  def weak_type(self):
    return False

  @property
  def aval(self):
    return ShapedArray(self.shape, self.dtype)

  @property
  def sharding(self):
    return self._base_array.sharding

  @property
  def device(self):
    return self._base_array.device

  def devices(self):
    return self._base_array.devices()

  @property
  def committed(self):
    return self._base_array.committed

  @property
  def is_fully_addressable(self):
    return True

  @property
  def is_fully_replicated(self):
    return True

  def block_until_ready(self):
    self._base_array.block_until_ready()
    return self

  def copy_to_host_async(self):
    pass

  def is_deleted(self):
    return self._base_array.is_deleted()

  def delete(self):
    self._base_array.delete()

  def _is_traced(self):
    return isinstance(self._base_array, core.Tracer)

  # -- Python protocol -------------------------------------------------------------------
  def __len__(self):
    if not self.shape:
      raise TypeError("len() of unsized object")
    return self.shape[0]

  def __iter__(self):
    if not self.shape:
      raise TypeError("iteration over a 0-d key array")
    return (PRNGKeyArray(self._impl, self._base_array[i]) for i in range(self.shape[0]))

  def __bool__(self):
    raise TypeError("key array cannot be converted to boolean.")

  def __array__(self, dtype=None, copy=None):
    raise TypeError("JAX array with PRNGKey dtype cannot be converted to a NumPy array. Use "
                    "jax.random.key_data(arr) if you wish to extract the underlying integer "
                    "array.")

  def _no_scalar(self, what):
    raise TypeError(f"{what}() argument must be a string, a bytes-like object or a real "
                    "number, not 'PRNGKeyArray'")

  def __int__(self):
    self._no_scalar("int")

  def __float__(self):
    self._no_scalar("float")

  def __index__(self):
    raise TypeError("'PRNGKeyArray' object cannot be interpreted as an integer")

  __hash__ = None

  def __repr__(self):
    base = self._base_array
    if self._is_traced():
      return f"Traced<{self.dtype.name}[{','.join(map(str, self.shape))}]>with<{base._trace!r}>"
    if not isinstance(base, ArrayImpl):  # abstract data (eval_shape's ShapeDtypeStruct)
      return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name})"
    return f"Array({self.shape}, dtype={self.dtype.name}) overlaying:\n{base}"

  __str__ = __repr__

  def __reduce__(self):
    return (_unpickle_key, (self._impl.name, np.asarray(self._base_array)))

  def copy(self):
    b = self._base_array
    return PRNGKeyArray(self._impl, b.copy() if hasattr(b, "copy") else b)

  __copy__ = copy

  def __deepcopy__(self, memo):
    return self.copy()

  # -- equality --------------------------------------------------------------------------
  def _eq(self, other):
    if not isinstance(other, PRNGKeyArray) or other._impl is not self._impl:
      raise TypeError(f"Cannot compare a key array of dtype {self.dtype} with "
                      f"{getattr(other, 'dtype', type(other))}.")
    eq = lax.eq(*_broadcast_pair(self._base_array, other._base_array))
    return lax.reduce_and(eq, (eq.ndim - 1,))

  def __eq__(self, other):
    if not isinstance(other, PRNGKeyArray):
      return NotImplemented
    return self._eq(other)

  def __ne__(self, other):
    if not isinstance(other, PRNGKeyArray):
      return NotImplemented
    return lax.bitwise_not(self._eq(other))

  # -- structural methods (on the leading, key-array dimensions) ---------------------------
  def _wrap(self, base):
    return PRNGKeyArray(self._impl, base)

  def __getitem__(self, idx):
    return self._wrap(self._base_array[_key_index(idx, self.ndim)])

  @property
  def at(self):
    return _KeyIndexUpdateHelper(self)

  def reshape(self, *shape, order="C"):
    if len(shape) == 1 and not isinstance(shape[0], int) and shape[0] is not None:
      shape = tuple(shape[0])
    if order != "C":
      raise NotImplementedError("key array reshape supports only order='C'")
    return self._wrap(self._base_array.reshape((*shape, *self._impl.key_shape)))

  def ravel(self, order="C"):
    return self.reshape(-1, order=order)

  flatten = ravel

  def squeeze(self, axis=None):
    if axis is None:
      axis = tuple(i for i, d in enumerate(self.shape) if d == 1)
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    axes = tuple(_canon_axis(a, self.ndim) for a in axes)
    for a in axes:
      if self.shape[a] != 1:
        raise ValueError("cannot select an axis to squeeze out which has size not equal to "
                         f"one, got shape={self.shape} and dimensions={axes}")
    return self._wrap(lax.squeeze(self._base_array, axes) if axes else self._base_array)

  def transpose(self, *axes):
    if len(axes) == 1 and (axes[0] is None or not isinstance(axes[0], int)):
      axes = axes[0]
    nd = self.ndim
    perm = tuple(reversed(range(nd))) if not axes else tuple(_canon_axis(a, nd) for a in axes)
    if sorted(perm) != list(range(nd)):
      raise ValueError(f"axes don't match array: {axes}")
    k = len(self._impl.key_shape)
    return self._wrap(lax.transpose(self._base_array, (*perm, *range(nd, nd + k))))

  @property
  def T(self):
    return self.transpose()

  @property
  def mT(self):
    if self.ndim < 2:
      raise ValueError("Matrix transpose with ndim < 2 is undefined. Got array with "
                       f"ndim={self.ndim}")
    perm = list(range(self.ndim))
    perm[-2], perm[-1] = perm[-1], perm[-2]
    return self.transpose(perm)

  def swapaxes(self, axis1, axis2):
    perm = list(range(self.ndim))
    a, b = _canon_axis(axis1, self.ndim), _canon_axis(axis2, self.ndim)
    perm[a], perm[b] = perm[b], perm[a]
    return self.transpose(perm)

  def take(self, indices, axis=None):
    if axis is None:
      return self.ravel()[indices]
    axis = _canon_axis(axis, self.ndim)
    return self[(slice(None),) * axis + (indices,)]


def _unpickle_key(impl_name, data):
  from pyjax._src.runtime.array import make_array
  return PRNGKeyArray(prng.prngs[impl_name], make_array(np.asarray(data, np.uint32)))


def _broadcast_pair(a, b):
  if tuple(a.shape) == tuple(b.shape):
    return a, b
  shape = lax.broadcast_shapes(tuple(a.shape), tuple(b.shape))
  def bc(x):
    return lax.broadcast_in_dim(x, shape, tuple(range(len(shape) - x.ndim, len(shape))))
  return bc(a), bc(b)


def _canon_axis(axis, ndim):
  axis = operator.index(axis)
  if not -ndim <= axis < ndim:
    raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
  return axis % ndim if ndim else 0


def _key_index(idx, ndim):
  """An index of the key-array dimensions as an index of the raw data (the trailing key
  dimensions are kept whole)."""
  if not isinstance(idx, tuple):
    idx = (idx,)
  if any(i is Ellipsis for i in idx):
    return (*idx, slice(None))
  n = 0
  for i in idx:
    if i is None:
      continue
    nd = getattr(i, "ndim", None)
    dt = getattr(i, "dtype", None)
    n += nd if (dt is not None and dt == np.dtype(bool) and nd) else 1
  if n > ndim:
    raise IndexError(f"Too many indices: {ndim}-dimensional array indexed with {n} "
                     "regular indices.")
  return (*idx, Ellipsis)


class _KeyIndexUpdateHelper:
  __slots__ = ("_keys",)

  def __init__(self, keys):
    self._keys = keys

  def __getitem__(self, idx):
    return _KeyIndexUpdateRef(self._keys, idx)


class _KeyIndexUpdateRef:
  __slots__ = ("_keys", "_idx")

  def __init__(self, keys, idx):
    self._keys = keys
    self._idx = idx

  def get(self, **kwargs):
    k = self._keys
    return k._wrap(k._base_array.at[_key_index(self._idx, k.ndim)].get(**kwargs))

  def set(self, values, **kwargs):
    k = self._keys
    if not isinstance(values, PRNGKeyArray) or values._impl is not k._impl:
      raise TypeError("key array .at[].set() requires a key array of the same dtype, got "
                      f"{getattr(values, 'dtype', type(values))}")
    base = k._base_array.at[_key_index(self._idx, k.ndim)].set(values._base_array, **kwargs)
    return k._wrap(base)


def _flatten_keys(x):
  return (x._base_array,), x._impl


def _unflatten_keys(impl, children):
  base, = children
  if type(base) is np.ndarray and base.dtype == np.uint32:  # e.g. from device_get
    base = _as_device_array(base)
  return PRNGKeyArray(impl, base)


def _flatten_keys_with_keys(x):
  return ((tree_util.GetAttrKey("_base_array"), x._base_array),), x._impl


try:
  tree_util.register_pytree_with_keys(PRNGKeyArray, _flatten_keys_with_keys, _unflatten_keys,
                                      _flatten_keys)
except AttributeError:  # a tree_util without keyed registration
  tree_util.register_pytree_node(PRNGKeyArray, _flatten_keys, _unflatten_keys)


# --- implementation specs ------------------------------------------------------------------
class PRNGSpec:
  """Specifies a PRNG key implementation (what ``key_impl`` returns for unregistered
  implementations)."""
  __slots__ = ("_impl",)

  def __init__(self, impl):
    self._impl = impl

  def __repr__(self):
    return f"PRNGSpec({self._impl.name!r})"

  def __str__(self):
    return str(self._impl)

  def __hash__(self):
    return hash(self._impl)

  def __eq__(self, other):
    return isinstance(other, PRNGSpec) and self._impl == other._impl


def default_prng_impl():
  """The implementation named by ``config.jax_default_prng_impl``."""
  name = config.jax_default_prng_impl
  impl = prng.prngs.get(name)
  if impl is None:
    raise ValueError(f'unrecognized PRNG implementation "{name}" in jax_default_prng_impl; '
                     f"pyjax implements: {', '.join(prng.prngs)}")
  return impl


def resolve_prng_impl(impl_spec):
  if impl_spec is None:
    return default_prng_impl()
  if type(impl_spec) is prng.PRNGImpl:
    return impl_spec
  if type(impl_spec) is PRNGSpec:
    return impl_spec._impl
  if isinstance(impl_spec, KeyTy):
    return impl_spec._impl
  if type(impl_spec) is str:
    if impl_spec in prng.prngs:
      return prng.prngs[impl_spec]
    keys_fmt = ", ".join(f'"{s}"' for s in prng.prngs)
    raise ValueError(f'unrecognized PRNG implementation "{impl_spec}". '
                     f"Did you mean one of: {keys_fmt}?")
  raise TypeError(f"unrecognized type {type(impl_spec)} for specifying PRNG implementation.")


def key_dtype(impl_spec=None):
  """The dtype (``key<fry>``) of keys of a PRNG implementation."""
  return KeyTy(resolve_prng_impl(impl_spec))


# --- wrapping and checking -----------------------------------------------------------------
def _is_key(x):
  return isinstance(x, PRNGKeyArray)


def _arraylike(x):
  return (isinstance(x, (np.ndarray, np.generic, Array)) or hasattr(x, "__jax_array__")
          or (np.isscalar(x) and not isinstance(x, (str, bytes))))


def random_wrap(base, impl):
  """A typed key array over raw key data ``base`` (validated)."""
  _check_prng_key_data(impl, base)
  return PRNGKeyArray(impl, _as_device_array(base))


def random_unwrap(keys):
  if not _is_key(keys):
    raise TypeError(f"random_unwrap takes key array operand, got keys.dtype={keys.dtype!r}")
  return keys._base_array


def _fresh_buffer(base):
  """The same key data as a distinct object (key reuse is tracked per buffer object)."""
  if type(base) is ArrayImpl:
    return ArrayImpl(base._buf, base.aval, base._device, base._committed)
  from pyjax._src.lax import buffers
  return buffers.copy_p.bind(base)


def _check_prng_key(name, key, *, allow_batched=False):
  """(typed key, was it raw?) of a ``key`` argument; raw ``uint32`` keys are wrapped."""
  if _is_key(key):
    wrapped_key, wrapped = key, False
  elif _arraylike(key):
    if hasattr(key, "__jax_array__") and not isinstance(key, Array):
      key = key.__jax_array__()
    mode = config.jax_legacy_prng_key
    if mode != "allow":   # jax_legacy_prng_key: 'warn' or 'error' on raw uint32 keys
      msg = ("Legacy uint32 key array passed as key to jax.random function. Please create "
             "keys using jax.random.key(). If use of a raw key array was intended, set "
             'jax_legacy_prng_key="allow".')
      if mode == "error":
        raise ValueError(msg)
      import warnings
      warnings.warn(msg, UserWarning, stacklevel=3)
    wrapped_key, wrapped = random_wrap(key, default_prng_impl()), True
    if config.jax_debug_key_reuse:   # raw keys are never checked: wrap a fresh buffer
      wrapped_key = PRNGKeyArray(wrapped_key._impl, _fresh_buffer(wrapped_key._base_array))
  else:
    raise TypeError(f"unexpected PRNG key type {type(key)}")
  if not allow_batched and wrapped_key.ndim:
    raise ValueError(f"{name} accepts a single key, but was given a key array of shape "
                     f"{wrapped_key.shape} != (). Use jax.vmap for batching.")
  return wrapped_key, wrapped


def _return_prng_keys(was_wrapped, keys):
  return keys._base_array if was_wrapped else keys


def negative_size_error():
  """JAX's error for a negative number of keys or (most) random sample sizes: JAX traces
  the size and fails to lower the program, with jaxlib's ``MLIRError``."""
  from pyjax._src.errors import MLIRError
  return MLIRError("Invalid type:\nerror: unknown: invalid tensor dimension size")


def _split(keys, num=2):
  """Split typed keys (any key shape: each key is split independently)."""
  shape = tuple(num) if isinstance(num, Sequence) else (num,)
  shape = tuple(core.concrete_or_error(operator.index, d,
                                       "The error occurred in jax.random.split()")
                for d in shape)
  if any(d < 0 for d in shape):
    raise negative_size_error()
  if config.jax_debug_key_reuse:
    _key_reuse.consume(keys._base_array, "random_split")
  return PRNGKeyArray(keys._impl, keys._impl.split(keys._base_array, shape))


def _random_bits(keys, bit_width, shape):
  if config.jax_debug_key_reuse:
    _key_reuse.consume(keys._base_array, "random_bits")
  return keys._impl.random_bits(keys._base_array, bit_width, tuple(shape))


# --- public key operations -----------------------------------------------------------------
def _seed_array(seed):
  from pyjax._src.numpy import array_constructors as _ac
  # a Python int goes through int64 first (as JAX: OverflowError beyond int64; wraps to
  # 32 bits without x64)
  if isinstance(seed, int):
    return _ac.asarray(np.int64(seed))
  return _ac.asarray(seed)


def _key(ctor_name, seed, impl_spec):
  impl = resolve_prng_impl(impl_spec)
  if _is_key(seed) or (hasattr(seed, "dtype") and isinstance(seed.dtype, KeyTy)):
    raise TypeError(f"{ctor_name} accepts a scalar seed, but was given a PRNG key.")
  if np.ndim(seed):
    raise TypeError(f"{ctor_name} accepts a scalar seed, but was given an array of shape "
                    f"{np.shape(seed)} != (). Use jax.vmap for batching")
  seed = _seed_array(seed)
  offset = config.jax_random_seed_offset
  if offset:   # jax_random_seed_offset: added to every seed, as in JAX
    seed = seed + np.asarray(offset, seed.dtype)
  return PRNGKeyArray(impl, impl.seed(seed))


def key(seed, *, impl=None, dtype=None):
  """A typed PRNG key (shape ``()``, dtype ``key<fry>``) from an integer seed.

  64-bit seeds give the key data (high word, low word); without x64 a Python int seed
  is first wrapped to int32 (as JAX)."""
  if dtype is not None:
    if impl is not None:
      raise ValueError("Cannot specify both `impl` and `dtype` arguments to jax.random.key")
    impl = dtype
  return _key("key", seed, impl)


def PRNGKey(seed, *, impl=None):
  """A legacy raw PRNG key: ``uint32[2]`` key data from an integer seed."""
  return _key("PRNGKey", seed, impl)._base_array


def fold_in(key, data):
  """A new key that is a deterministic function of ``key`` and the 32-bit integer
  ``data``."""
  key, wrapped = _check_prng_key("fold_in", key)
  if np.ndim(data):
    raise TypeError("fold_in accepts a scalar, but was given an array of"
                    f"shape {np.shape(data)} != (). Use jax.vmap for batching.")
  from pyjax._src.numpy import array_constructors as _ac
  data = _ac.asarray(data, dtype=np.uint32)
  out = PRNGKeyArray(key._impl, key._impl.fold_in(key._base_array, data))
  return _return_prng_keys(wrapped, out)


def split(key, num=2):
  """Split a key into ``num`` new keys (an int or a shape), along new leading axes."""
  typed_key, wrapped = _check_prng_key("split", key)
  return _return_prng_keys(wrapped, _split(typed_key, num))


def clone(key):
  """A copy of ``key`` (as JAX's, for key-reuse checking: the copy is a fresh key even
  when ``key`` was consumed; values are unchanged)."""
  if _is_key(key):
    base = key._base_array
    if config.jax_debug_key_reuse:   # a distinct buffer object, so its consumption is its own
      base = _fresh_buffer(base)
    return PRNGKeyArray(key._impl, base)
  return key


def key_impl(keys):
  """The name of the PRNG implementation of ``keys`` (``'threefry2x32'``)."""
  typed_keys, _ = _check_prng_key("key_impl", keys, allow_batched=True)
  impl = typed_keys._impl
  return impl.name if impl.name in prng.prngs else PRNGSpec(impl)


def key_data(keys):
  """The raw ``uint32`` key data of a key array (trailing dimension: the key shape)."""
  keys, _ = _check_prng_key("key_data", keys, allow_batched=True)
  return keys._base_array


def wrap_key_data(key_bits_array, *, impl=None, dtype=None):
  """A typed key array over raw ``uint32`` key data (trailing shape ``(2,)``)."""
  if dtype is not None:
    if impl is not None:
      raise ValueError("Cannot specify both `impl` and `dtype` arguments to "
                       "jax.random.wrap_key_data")
    impl = dtype
  return random_wrap(key_bits_array, resolve_prng_impl(impl))
