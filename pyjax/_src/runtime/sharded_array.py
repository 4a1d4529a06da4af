"""Sharded Arrays: one buffer per device.

A ``ShardedArrayImpl`` is an ``ArrayImpl`` laid out by a multi-device sharding (a
``NamedSharding`` over a mesh of several devices).  It holds one single-device Array per
device of the sharding, in the sharding's device order (``_device_assignment``): the part
of the global value that ``sharding.devices_indices_map`` assigns to that device (devices
that hold the same part -- replicas -- each have their own copy).  A shard's buffer may
still be being computed (a ``PendingBuffer`` of its device's stream: ``shard_map`` and
``pmap`` leave their outputs so), and is waited for at the first read.

The global value is assembled from the shards on first need (``np.asarray(x)``,
printing, an operation that computes on the whole array) and kept.  Eager elementwise
primitives on alike-sharded inputs run shard by shard on the devices' streams
(``per_shard``); other eager primitives compute on the global value and lay their outputs
out again by the sharding-type rules (``reshard_outputs``, ``sharding_types``).

Differs from JAX: non-elementwise eager operations and ``jit`` on sharded inputs compute
the global program on one device and split the result (values are identical; the work
is not spread).
"""
from __future__ import annotations

import numpy as np

from pyjax._src.avals import ShapedArray
from pyjax._src.runtime import devices as _devices
from pyjax._src.runtime.array import ArrayImpl, Shard, _DeletedBuffer
from pyjax._src.runtime.stream import PendingBuffer


class ShardedArrayImpl(ArrayImpl):
  """An Array split over several devices (see the module docstring)."""
  __slots__ = ("_shards", "_sharding")

  def __init__(self, aval, sharding, shards, global_buf=None):
    ArrayImpl.__init__(self, global_buf, aval, shards[0]._device, True)
    self._shards = list(shards)
    self._sharding = sharding

  # -- data ------------------------------------------------------------------------------
  def _resolve(self):
    b = self._buf
    if type(b) is PendingBuffer:   # (one device: the shard's buffer, still computing)
      b = self._buf = b.result()
      return b
    if type(b) is _DeletedBuffer:
      raise RuntimeError("Array has been deleted with shape="
                         f"{self.aval.str_short(short_dtypes=False)}.")
    if b is None:
      if not self._sharding.is_fully_addressable and not _local_has_all(self):
        raise RuntimeError(NOT_ADDRESSABLE)
      b = _assemble(self.aval, self._sharding, self._shards)
      self._buf = b
    return b

  def __repr__(self):
    if not self._sharding.is_fully_addressable and not self.is_fully_replicated:
      # JAX's form: no values
      wt = ", weak_type=True" if self.aval.weak_type else ""
      return f"Array(shape={self.aval.shape}, dtype={self.aval.dtype.name}{wt})"
    return ArrayImpl.__repr__(self)

  def __str__(self):
    if not self._sharding.is_fully_addressable and not _local_has_all(self):
      return repr(self)
    return ArrayImpl.__str__(self)

  def __jax_array__(self):
    """The global value as a single-device Array (what a computation that does not know
    about shardings -- a jitted program, a higher-order primitive -- consumes).  For an
    array spanning processes every process gathers it (a collective over processes: in
    a multi-process program every process runs the same computations, as in JAX)."""
    return ArrayImpl(self._global_data(), self.aval, self._shards[0]._device, False)

  def _jit_buffer(self):
    """The global value a jitted program reads: on one device the shard's buffer, even
    while it is still being computed (the program waits for it on the stream)."""
    b = self._buf
    if type(b) is PendingBuffer:
      return b
    return self._global_data()

  def _global_data(self):
    """The global value for a computation: for an array spanning processes, gathered
    from every process (each time: reading it stays JAX's error)."""
    if self._buf is None and not self._sharding.is_fully_addressable and (
        not _local_has_all(self)):
      return _gather_processes(self)
    return self._data()

  def block_until_ready(self):
    if type(self._buf) is _DeletedBuffer:
      return ArrayImpl.block_until_ready(self)
    for s in self._shards:
      s.block_until_ready()
    return self

  def is_ready(self):
    return all(s.is_ready() for s in self._shards)

  def delete(self):
    for s in self._shards:
      s.delete()
    self._buf = _DeletedBuffer()

  def _donate(self):
    for s in self._shards:
      s._donate()
    self._buf = _DeletedBuffer()

  # -- placement -------------------------------------------------------------------------
  @property
  def sharding(self):
    return self._sharding

  @property
  def device(self):
    """A sharded Array has no single device: its sharding (as JAX's ``Array.device``)."""
    return self._sharding

  def devices(self):
    return set(s._device for s in self._shards)

  @property
  def committed(self):
    return True

  @property
  def is_fully_addressable(self):
    """False when some shards live on other processes' devices."""
    return self._sharding.is_fully_addressable

  @property
  def is_fully_replicated(self):
    return bool(self._sharding.is_fully_replicated)

  @property
  def addressable_shards(self):
    out = []
    replicas = {}
    indices = self._sharding.devices_indices_map(self.aval.shape)
    for s in self._shards:
      idx = indices[s._device]
      key = _index_key(idx, self.aval.shape)
      r = replicas.get(key, 0)
      replicas[key] = r + 1
      sh = Shard(s._device, s)
      sh.index = idx
      sh.replica_id = r
      out.append(sh)
    return out

  @property
  def global_shards(self):
    return self.addressable_shards

  def addressable_data(self, index):
    return self._shards[index]

  def __iter__(self):
    if not self.aval.shape:
      raise TypeError("iteration over a 0-d array")
    b = self._data()
    aval = ShapedArray(self.aval.shape[1:], self.aval.dtype, self.aval.weak_type)
    dev = _devices.default_device()
    for i in range(self.aval.shape[0]):
      yield ArrayImpl(b[i], aval, dev, False)

  def copy(self):
    return shard_global(np.array(self._data(), copy=True), self.aval, self._sharding)

  def __reduce__(self):
    return (_rebuild, (self._data(), self.aval.weak_type, self._sharding))

  def _typed_aval(self):
    """``jax.typeof(x)``: the aval with the sharding type (Explicit mesh axes printed
    as ``8@x``)."""
    return TypedShapedArray(self.aval.shape, self.aval.dtype, self.aval.weak_type,
                            self._sharding)


ShardedArrayImpl.__module__ = "pyjax"
ShardedArrayImpl.__name__ = ShardedArrayImpl.__qualname__ = "ArrayImpl"


class TypedShapedArray(ShapedArray):
  """A ShapedArray carrying a sharding type (what ``jax.typeof`` of a sharded Array
  returns): mesh axes of type Explicit that split a dimension print after its size
  (``float32[8@x,4@y]``, ``float32[8@(x,y)]``)."""

  def __init__(self, shape, dtype, weak_type, sharding):
    ShapedArray.__init__(self, shape, dtype, weak_type)
    self._typed_sharding = sharding

  @property
  def sharding(self):
    return self._typed_sharding

  def str_short(self, short_dtypes=False):
    base = ShapedArray.str_short(self, short_dtypes)
    sharding = self._typed_sharding
    mesh = getattr(sharding, "mesh", None)
    spec = getattr(sharding, "spec", None)
    if mesh is None or spec is None:
      return base
    from pyjax._src.sharding import AxisType
    explicit = {n for n, t in zip(mesh.axis_names, mesh.axis_types) if t == AxisType.Explicit}
    entries = list(spec) + [None] * (len(self.shape) - len(spec))
    dims = []
    for d, e in zip(self.shape, entries):
      names = [n for n in (e if isinstance(e, tuple) else (e,))
               if isinstance(n, str) and n in explicit]
      if not names:
        dims.append(str(d))
      elif len(names) == 1:
        dims.append(f"{d}@{names[0]}")
      else:
        dims.append(f"{d}@({','.join(names)})")
    return base[:base.index("[")] + "[" + ",".join(dims) + "]"


class IndivisibleError(ValueError):
  """A dimension is not divisible by the number of parts a sharding splits it into
  (JAX's ``jax._src.sharding.IndivisibleError``)."""


NOT_ADDRESSABLE = (
    "Fetching value for `jax.Array` that spans non-addressable (non process local) devices "
    "is not possible. You can use `jax.experimental.multihost_utils.process_allgather` to "
    "print the global array or use `.addressable_shards` method of jax.Array to inspect the "
    "addressable (process local) shards.")


def _gather_processes(x):
  """The global value of ``x`` spanning processes, from every process's shards (MPI)."""
  from pyjax._src.runtime import mpi
  w = mpi.world()
  if w is None:
    raise RuntimeError(NOT_ADDRESSABLE)
  parts = [(s.index, s.data._data()) for s in x.addressable_shards if s.replica_id == 0]
  out = np.empty(x.aval.shape, x.aval.dtype)
  for theirs in w.allgather_objects(parts, "the global value of an array spanning "
                                    "processes"):
    for idx, data in theirs:
      out[idx] = data
  out.flags.writeable = False
  return out


def _local_has_all(x):
  """Whether this process's shards of ``x`` cover the whole array (as JAX reads an array
  over processes: a replicated one, or one split over local devices only)."""
  shape = x.aval.shape
  every = {_index_key(i, shape) for i in x._sharding.devices_indices_map(shape).values()}
  mine = {_index_key(i, shape)
          for i in x._sharding.addressable_devices_indices_map(shape).values()}
  return len(every) == len(mine)


def _index_key(idx, shape):
  out = []
  for s, n in zip(idx, shape):
    out.append(s.indices(n) if isinstance(s, slice) else s)
  return tuple(out)


def _assemble(aval, sharding, shards):
  """The global NumPy value from the shards (each part written once)."""
  out = np.empty(aval.shape, dtype=aval.dtype)
  indices = sharding.devices_indices_map(aval.shape)
  done = set()
  for s in shards:
    idx = indices[s._device]
    key = _index_key(idx, aval.shape)
    if key in done:
      continue
    done.add(key)
    out[idx] = s._data()
  out.flags.writeable = False
  return out


def is_multi_device(sharding):
  """Whether ``sharding`` lays an array out as a ``ShardedArrayImpl``: it spreads the
  array over more than one device, or it is a ``NamedSharding`` over a mesh of one device
  (JAX keeps that sharding -- its ``mesh`` and ``spec`` -- on the array and on what is
  computed from it; a plain ``ArrayImpl`` has a ``SingleDeviceSharding``)."""
  try:
    n = len(sharding.device_set)
  except (ValueError, TypeError, AttributeError):
    return False
  return (n > 1 and hasattr(sharding, "devices_indices_map")) or (
      n == 1 and type(sharding).__name__ == "NamedSharding")


def _check_divisible(shape, sharding):
  from pyjax._src.sharding import NamedSharding
  if not isinstance(sharding, NamedSharding):
    return
  spec = sharding.spec
  if len(spec) > len(shape):
    raise ValueError(f"One of device_put args is incompatible with its sharding annotation "
                     f"{sharding}: Sharding {sharding} is only valid for values of rank at "
                     f"least {len(spec)}, but was applied to a value of rank {len(shape)}.")
  factors = [sharding._dim_factor(e) for e in spec] + [1] * (len(shape) - len(spec))
  for d, (n, f) in enumerate(zip(shape, factors)):
    if n % f:
      raise IndivisibleError(
          f"Sharding {sharding} implies that array axis {d} is partitioned {f} times, but "
          f"the dimension size is {n} (full shape: {tuple(shape)}, per-dimension tiling "
          f"factors: {factors} should evenly divide the shape)")


def shard_global(buf, aval, sharding, committed=True):
  """A ShardedArrayImpl from the global value ``buf`` (a NumPy array or a
  ``PendingBuffer``): each device of ``sharding`` that this process addresses gets a
  copy of its part (with many processes, each holds the same global value)."""
  devs = sharding._device_assignment
  if len(devs) == 1 and devs[0].process_index == _devices.process_index():
    return _one_device(buf, aval, sharding, devs[0])
  _check_divisible(aval.shape, sharding)
  if type(buf) is PendingBuffer:
    buf = buf.result()
  buf = np.asarray(buf, dtype=aval.dtype)
  indices = sharding.devices_indices_map(aval.shape)
  shards = []
  for d in sharding._addressable_device_assignment:
    part = np.array(buf[indices[d]], copy=True)
    shards.append(ArrayImpl(part, ShapedArray(part.shape, aval.dtype, aval.weak_type), d,
                            True))
  g = buf if not buf.flags.writeable and sharding.is_fully_addressable else None
  return ShardedArrayImpl(aval, sharding, shards, g)


def _one_device(buf, aval, sharding, dev):
  """A NamedSharding over one device (``dev``): its one shard is the whole value, shared
  with the global buffer (copied only when writeable, never waited for)."""
  spec = getattr(sharding, "spec", ())
  if len(spec) > len(aval.shape):   # (every dimension divides by 1: only the rank checks)
    _check_divisible(aval.shape, sharding)
  if type(buf) is not PendingBuffer:
    buf = np.asarray(buf, dtype=aval.dtype)
    if buf.flags.writeable:
      buf = np.array(buf, copy=True)
      buf.flags.writeable = False
  shard = ArrayImpl(buf, ShapedArray(aval.shape, aval.dtype, aval.weak_type), dev, True)
  return ShardedArrayImpl(aval, sharding, [shard], buf)


def from_shards(aval, sharding, shard_arrays):
  """A ShardedArrayImpl from one single-device Array per device of ``sharding`` (in its
  device order); their buffers may still be pending."""
  return ShardedArrayImpl(aval, sharding, shard_arrays)


def put_sharded(x, sharding):
  """``device_put(x, sharding)`` for a multi-device sharding: a concrete leaf split."""
  if isinstance(x, ShardedArrayImpl):
    if x._sharding == sharding:
      return x
    return shard_global(x._data(), x.aval, sharding)
  if type(x) is ArrayImpl:
    return shard_global(x._data(), x.aval, sharding)
  from pyjax._src.numpy.array_constructors import asarray
  a = asarray(x)
  return shard_global(a._data(), ShapedArray(a.shape, a.dtype, a.weak_type if not isinstance(
      x, (np.ndarray, np.generic)) else False), sharding)


def _rebuild(buf, weak_type, sharding):
  return shard_global(np.array(buf), ShapedArray(buf.shape, buf.dtype, weak_type), sharding)


# --- the sharding of eager outputs -------------------------------------------------------
def _merge_specs(shardings, ndim):
  """One NamedSharding from several of the same mesh for arrays of one shape: each
  dimension takes the axes any of them splits it over (the first wins on a conflict)."""
  from pyjax._src.sharding import NamedSharding, PartitionSpec
  first = shardings[0]
  if len(shardings) == 1:
    return first
  entries = [None] * ndim
  used = set()
  for s in shardings:
    if not isinstance(s, NamedSharding) or s.mesh != first.mesh:
      return first
    for d, e in enumerate(list(s.spec)[:ndim]):
      if e is None or entries[d] is not None:
        continue
      names = e if isinstance(e, tuple) else (e,)
      if used.intersection(names):
        continue
      entries[d] = e
      used.update(names)
  while entries and entries[-1] is None:
    entries.pop()
  return NamedSharding(first.mesh, PartitionSpec(*entries))


def output_sharding(out_aval, sharded_inputs):
  """The sharding of an eager output computed from ``sharded_inputs``."""
  same = [x._sharding for x in sharded_inputs if x.aval.shape == out_aval.shape]
  if same:
    return _merge_specs(same, len(out_aval.shape))
  s = sharded_inputs[0]._sharding
  from pyjax._src.sharding import NamedSharding, PartitionSpec
  if isinstance(s, NamedSharding):
    return NamedSharding(s.mesh, PartitionSpec())
  return None


def _typed_shardings(prim, params, args, outs, sharded_inputs):
  """The output shardings of one eager primitive application by the sharding-type rules
  (``sharding_types``), or None when the inputs' shardings are not over one mesh."""
  from pyjax._src.sharding import NamedSharding, Mesh
  from pyjax._src import sharding_types
  mesh = getattr(sharded_inputs[0]._sharding, "mesh", None)
  if not isinstance(mesh, Mesh):
    return None
  in_avals, in_specs = [], []
  for x in args:
    aval = getattr(x, "aval", None)
    if aval is None:
      aval = ShapedArray(np.shape(x), np.result_type(x))
    in_avals.append(aval)
    s = x._sharding if isinstance(x, ShardedArrayImpl) else None
    in_specs.append(sharding_types.spec_of(s, len(aval.shape))
                    if isinstance(s, NamedSharding) and s.mesh == mesh else None)
  specs = sharding_types.eager_out_specs(mesh, prim, params, in_avals, in_specs,
                                         [o.aval for o in outs])
  return [NamedSharding(mesh, sharding_types.to_spec(d)) for d in specs]


def reshard_outputs(out, sharded_inputs, prim=None, params=None, args=None):
  """Lay eager outputs (one Array or a list) out: by the sharding-type rules of ``prim``
  when given (``sharding_types``), else by ``output_sharding``."""
  many = isinstance(out, (list, tuple))
  outs = list(out) if many else [out]
  shardings = None
  if prim is not None:
    shardings = _typed_shardings(prim, params, args, outs, sharded_inputs)
  res = []
  for i, o in enumerate(outs):
    if type(o) is not ArrayImpl:
      res.append(o)
      continue
    s = shardings[i] if shardings is not None else output_sharding(o.aval, sharded_inputs)
    res.append(o if s is None else shard_global(o._data(), o.aval, s))
  return type(out)(res) if many else res[0]


# --- eager elementwise operations, one shard per device -----------------------------------
# Primitives computed shard by shard (each output element depends only on the same element
# of the inputs): with every sharded input laid out alike and the others 0-d, each device
# computes its own part on its stream, in parallel, and nothing is assembled.
_PER_SHARD = frozenset("""
add sub mul div rem pow max min neg sign floor ceil round is_finite exp exp2 log log1p expm1
tanh logistic sin cos tan asin acos atan atan2 sinh cosh asinh acosh atanh sqrt rsqrt cbrt
abs square integer_pow convert_element_type select_n clamp and or xor not eq ne lt le gt ge
shift_left shift_right_logical shift_right_arithmetic nextafter erf erfc erf_inv lgamma
digamma real imag conj complex copy population_count clz
""".split())


def _eager_impl(dev, name):
  """The eager implementation of ``name`` on ``dev``'s backend."""
  table = getattr(getattr(dev, "_backend", None), "eager_impls", None)
  if table is None:
    from pyjax._src.runtime import dispatch
    table = getattr(dispatch, "_impls", {})
  return table.get(name)


def per_shard(prim, params, args):
  """The result of an eager elementwise ``prim`` on sharded ``args`` computed shard by
  shard on each device's stream (a sharded Array whose shards may still be pending), or
  None when the operation does not qualify."""
  if prim.multiple_results or prim.name not in _PER_SHARD:
    return None
  from pyjax._src import config as _config
  if _config.debug_special:
    return None
  first = None
  avals = []
  for x in args:
    if isinstance(x, ShardedArrayImpl):
      if first is None:
        first = x
      elif x._sharding != first._sharding or x.aval.shape != first.aval.shape:
        return None
      avals.append(x.aval)
    elif isinstance(x, ArrayImpl):
      if x.aval.shape:
        return None
      avals.append(x.aval)
    else:
      from pyjax._src.runtime.dispatch import _to_numpy
      try:
        b, a = _to_numpy(x)
      except Exception:
        return None
      if a.shape:
        return None
      avals.append(a)
  out_aval = prim._abstract_eval(*avals, **params)
  if out_aval.shape != first.aval.shape:
    return None
  if len(first._shards) == 1:   # one device: the single-device path on its shard
    from pyjax._src.runtime.dispatch import apply_primitive
    o = apply_primitive(prim, [x._shards[0] if isinstance(x, ShardedArrayImpl) else x
                               for x in args], params)
    return ShardedArrayImpl(o.aval, first._sharding, [o], o._buf)
  from pyjax._src.runtime import stream as _stream
  from pyjax._src.runtime.dispatch import _to_numpy
  scalars = [None if isinstance(x, ShardedArrayImpl) else
             (x._data() if isinstance(x, ArrayImpl) else _to_numpy(x)[0]) for x in args]
  dtype = out_aval.dtype
  outs = []
  for k, shard in enumerate(first._shards):
    dev = shard._device
    impl = _eager_impl(dev, prim.name)
    if impl is None:
      return None
    bufs = [x._shards[k]._buf if s is None else s for x, s in zip(args, scalars)]

    def work(*bs, impl=impl):
      o = impl(*bs, **params)
      return [o if type(o) is np.ndarray and o.dtype == dtype else np.asarray(o, dtype=dtype)]
    work.__name__ = f"{prim.name} (one shard)"
    shard_aval = ShapedArray(shard.aval.shape, dtype, out_aval.weak_type)
    if _stream.in_worker():
      res = work(*[b.result() if type(b) is PendingBuffer else b for b in bufs])[0]
    else:
      res = dev.stream.submit(work, bufs, 1)[0]
    outs.append(ArrayImpl(res, shard_aval, dev, True))
  return ShardedArrayImpl(out_aval, first._sharding, outs)
