"""Array checkpointing with TensorStore (``jax.experimental.array_serialization``).

Each array is written to a TensorStore array (zarr by default) at a path: every shard
this process holds with ``replica_id == replica_id`` is written at its index, and reads
assemble the shards a sharding asks for (zero-filling indices past the stored shape).
``GlobalAsyncCheckpointManager`` writes asynchronously: the copy to TensorStore happens
in ``serialize``, the commit in a background thread, ``wait_until_finished`` joins it and
raises its error, ``on_commit_callback`` runs after the commit.

Requires the ``tensorstore`` package (as JAX's module does).  pyjax runs one process, so
there are no cross-process barriers; a multi-process configuration cannot arise.
"""
from __future__ import annotations

import abc
import asyncio
import itertools
import logging
import math
import os
import re
import threading
import time

import numpy as np
import tensorstore as ts

from pyjax._src import distributed, dtypes
from pyjax._src import tree_util
from pyjax._src.runtime import devices as _devices

logger = logging.getLogger(__name__)

TS_CONTEXT = ts.Context({"file_io_concurrency": {"limit": 128}})
_DEFAULT_DRIVER = "file"
_FILE_SIZE_TARGET = 500 * 1024 ** 2   # bytes per stored chunk, at most ~10% more
_REMOTE_URL_PREFIXES = ("gs://", "s3://")
_REMOTE_DRIVERS = ("gcs", "s3")
_module_unique_count = itertools.count()


class BarrierTimeoutError(Exception):
  """Raised when processes fail to meet at a checkpoint barrier in time."""


def is_remote_storage(tspec):
  """True when a TensorStore spec (or URL) points at cloud storage (gs://, s3://)."""
  if isinstance(tspec, str):
    return tspec.startswith(_REMOTE_URL_PREFIXES)
  for key in ("base", "kvstore"):
    if key in tspec:
      return is_remote_storage(tspec[key])
  return tspec.get("driver") in _REMOTE_DRIVERS


# --- specs ------------------------------------------------------------------------------
def _smallest_factor(n):
  for p in range(2, int(math.isqrt(n)) + 1):
    if n % p == 0:
      return p
  return n


def _chunk_shape(local_shape, dtype, target=_FILE_SIZE_TARGET):
  """A chunk shape dividing ``local_shape`` whose byte size is at most ~1.1 * target:
  repeatedly divide the axis with the smallest remaining prime factor."""
  shape = [int(d) for d in local_shape]
  if not shape or 0 in shape:
    return [max(d, 1) for d in shape]
  size = math.prod(shape) * np.dtype(dtype).itemsize
  while size > 1.1 * target:
    best = None
    for i, d in enumerate(shape):
      if d > 1:
        f = _smallest_factor(d)
        if best is None or f < best[1]:
          best = (i, f)
    if best is None:
      break
    shape[best[0]] //= best[1]
    size //= best[1]
  return shape


def _local_shape(arr):
  sharding = getattr(arr, "sharding", None)
  return tuple(sharding.shard_shape(arr.shape)) if sharding is not None else tuple(arr.shape)


def _get_metadata(arr, driver="zarr", is_remote=False):
  """The TensorStore ``metadata`` for storing ``arr`` (shape, chunks, codec)."""
  shape, dtype = tuple(arr.shape), np.dtype(arr.dtype)
  local = _local_shape(arr)
  if driver == "zarr3":
    return {"codecs": [{"name": "zstd"}] if is_remote else [], "shape": list(shape),
            "data_type": dtype.name,
            "chunk_grid": {"name": "regular",
                           "configuration": {"chunk_shape": _chunk_shape(local, dtype)}}}
  if driver == "zarr":
    return {"compressor": {"id": "zstd"}, "shape": list(shape),
            "chunks": [max(1, int(d)) for d in local]}
  raise ValueError(f"Unsupported driver: {driver}")


def _kvstore_for_url(path):
  m = re.fullmatch(r"^(gs|s3)://([^/]*)/(.*)$", path, re.DOTALL)
  if m is None:
    raise ValueError("The ckpt_path should contain the bucket name and the file path "
                     f"inside the bucket. Got: {path}")
  return {"driver": "gcs" if m.group(1) == "gs" else "s3", "bucket": m.group(2),
          "path": m.group(3)}


def get_tensorstore_spec(ckpt_path, ocdbt=False, process_idx=None, arr=None,
                         driver="zarr"):
  """The TensorStore spec for an array stored at ``ckpt_path`` (a local path or a gs:// /
  s3:// URL); with ``ocdbt`` the arrays of a directory share one OCDBT key-value store
  (the last path component is the key); with ``arr`` the spec carries its metadata."""
  path = re.sub(r"^(gs|s3):/", r"\1://", os.path.normpath(str(ckpt_path)))
  if process_idx is not None:
    parent, name = os.path.split(path)
    path = os.path.join(parent, f"ocdbt.process_{process_idx}", name)
  remote = path.startswith(_REMOTE_URL_PREFIXES)
  spec = {"driver": driver, "kvstore": {}}
  if ocdbt:
    path, key = os.path.split(path)
    if not remote and not os.path.isabs(path):
      raise ValueError(f"Checkpoint path should be absolute. Got {path}")
  base = _kvstore_for_url(path) if remote else {"driver": _DEFAULT_DRIVER, "path": path}
  spec["kvstore"] = {"driver": "ocdbt", "base": base, "path": key} if ocdbt else base
  if arr is not None:
    spec["metadata"] = _get_metadata(arr, driver)
  return spec


def _has_metadata(tree):
  return isinstance(tree, dict) and ("metadata" in tree or any(
      _has_metadata(v) for v in tree.values()))


# --- writing ----------------------------------------------------------------------------
async def async_serialize(arr_inp, tensorstore_spec, commit_future=None, context=TS_CONTEXT,
                          primary_host=None, replica_id=0, transaction=None):
  """Write ``arr_inp`` (a jax.Array or NumPy array) to ``tensorstore_spec``.  With a
  ``commit_future`` list the commit futures are appended to it (awaited later, e.g. by a
  background thread); otherwise this waits for the commit."""
  spec = tensorstore_spec
  if not _has_metadata(spec):
    spec["metadata"] = _get_metadata(arr_inp, driver=spec["driver"])
  if spec["driver"] == "zarr" and "dtype" not in spec:
    spec["dtype"] = np.dtype(arr_inp.dtype).name
  if primary_host is None or _devices.process_index() == primary_host:
    opened = ts.open(ts.Spec(spec), create=True, open=True, context=context,
                     transaction=transaction)
    if commit_future is not None:
      commit_future.append(opened)
    else:
      await opened
  t = await ts.open(ts.Spec(spec), open=True, assume_metadata=True, context=context,
                    transaction=transaction)
  shards = getattr(arr_inp, "addressable_shards", None)
  if shards is None:   # a NumPy array: one shard, the whole array
    pieces = [(tuple(slice(None) for _ in np.shape(arr_inp)), np.asarray(arr_inp), 0)]
  else:
    pieces = [(s.index, s.data, s.replica_id) for s in shards]

  async def write(index, data, rid):
    if rid != replica_id:
      return
    w = t[index].write(np.asarray(data))
    if commit_future is not None:
      commit_future.append(w.commit)
      await w.copy
    else:
      await w.commit

  return await asyncio.gather(*(write(*p) for p in pieces))


def run_serialization(arrays, tensorstore_specs):
  """Write each array to its spec and wait for the commits."""
  async def go():
    return await asyncio.gather(*(async_serialize(a, s)
                                  for a, s in zip(arrays, tensorstore_specs)))
  asyncio.run(go())


# --- reading ----------------------------------------------------------------------------
class _LimitInFlightBytes:
  """Bounds the bytes being read at once (reads wait for earlier ones to release)."""

  def __init__(self, num_bytes):
    self._max = num_bytes
    self._available = num_bytes
    self._cv = asyncio.Condition()

  async def wait_for_bytes(self, n):
    if n > self._max:
      raise ValueError(f"Requested more bytes than we reserved space for: {n} > "
                       f"{self._max}")
    async with self._cv:
      await self._cv.wait_for(lambda: self._available >= n)
      self._available -= n

  async def release_bytes(self, n):
    async with self._cv:
      self._available += n
      self._cv.notify_all()


async def async_deserialize(in_type, tensorstore_spec, global_shape=None, dtype=None,
                            byte_limiter=None, context=TS_CONTEXT, assume_metadata=False):
  """Read the array at ``tensorstore_spec`` laid out by ``in_type`` (a Sharding, or a
  ShapeDtypeStruct with one).  ``global_shape`` larger than the stored shape zero-fills
  the rest; ``dtype`` casts on the host."""
  from pyjax._src.array_construction import make_array_from_callback
  from pyjax._src.sharding import Sharding
  from pyjax._src.runtime.array import SingleDeviceSharding
  sharding = getattr(in_type, "sharding", in_type)
  if hasattr(in_type, "dtype") and hasattr(in_type, "shape") and dtype is None:
    dtype = in_type.dtype
  if not isinstance(sharding, (Sharding, SingleDeviceSharding)):
    raise TypeError("sharding passed to deserialization should be specified, concrete and "
                    f"an instance of `jax.sharding.Sharding`. Got {in_type}")
  t = await ts.open(tensorstore_spec, open=True, assume_metadata=assume_metadata,
                    context=context)
  shape = tuple(t.shape if global_shape is None else global_shape)
  stored = np.dtype(t.dtype.numpy_dtype)
  out_dtype = np.dtype(dtype) if dtype is not None else stored
  itemsize = stored.itemsize
  reads = {}

  async def read(index):
    out = np.zeros(np.zeros(shape, dtype=bool)[index].shape, dtype=stored)
    want = ts.IndexTransform(input_shape=shape)[index].domain
    have = t.domain.intersect(want)
    nbytes = have.size * itemsize
    if byte_limiter is not None:
      await byte_limiter.wait_for_bytes(nbytes)
    if have.size:
      origin = [a - b for a, b in zip(have.origin, want.origin)]
      target = tuple(slice(o, o + n) for o, n in zip(origin, have.shape))
      out[target] = await t[have].read()
    if byte_limiter is not None:
      await byte_limiter.release_bytes(nbytes)
    return out.astype(out_dtype, copy=False)

  indices = sharding.addressable_devices_indices_map(shape)
  for idx in indices.values():
    idx = tuple(slice(None) for _ in shape) if idx is None else idx
    reads[_index_key(idx)] = await read(idx)
  return make_array_from_callback(shape, sharding, lambda i: reads[_index_key(i)],
                                  dtype=dtypes.canonicalize_dtype(out_dtype))


def _index_key(index):
  return tuple((s.start, s.stop, s.step) if isinstance(s, slice) else s for s in index)


def run_deserialization(shardings, tensorstore_specs, global_shapes=None, dtypes=None,
                        concurrent_gb=32):
  """Read each spec with its sharding (optionally its global shape and dtype)."""
  n = len(tensorstore_specs)
  global_shapes = [None] * n if global_shapes is None else list(global_shapes)
  dtypes_ = [None] * n if dtypes is None else list(dtypes)

  async def go():
    limiter = _LimitInFlightBytes(concurrent_gb * 10 ** 9)
    return await asyncio.gather(*(
        async_deserialize(s, spec, g, d, byte_limiter=limiter)
        for s, spec, g, d in zip(shardings, tensorstore_specs, global_shapes, dtypes_)))
  return list(asyncio.run(go()))


# --- asynchronous checkpoint managers ---------------------------------------------------
class GlobalAsyncCheckpointManagerBase(abc.ABC):
  """Interface of managers that write checkpoints of arrays asynchronously: one
  checkpoint at a time (a new ``serialize`` waits for the previous commit)."""

  @abc.abstractmethod
  def check_for_errors(self):
    """Raise the background commit's error, if any (non-blocking)."""

  @abc.abstractmethod
  def wait_until_finished(self):
    """Block until the background commit has finished (and raise its error)."""

  @abc.abstractmethod
  def serialize(self, arrays, tensorstore_specs, *, on_commit_callback):
    """Write ``arrays`` to ``tensorstore_specs`` asynchronously."""

  @abc.abstractmethod
  def deserialize(self, shardings, tensorstore_specs, global_shapes=None, dtypes=None):
    """Read arrays back with the given shardings."""


class AsyncManager:
  """Runs a checkpoint's commit in a background thread (see the module docstring)."""

  def __init__(self, timeout_secs=300):
    self._timeout_secs = timeout_secs
    self._commit_futures = None
    self._thread = None
    self._exception = None
    self._on_commit_callback = None
    self._client = distributed.global_state.client
    self._count = None

  def __del__(self):
    if self._thread is not None and self._thread.is_alive():
      logger.warning("Please add `.wait_until_finished()` in the main thread before your "
                     "program finishes: errors of a checkpoint still being written are "
                     "lost when its manager is deleted.")

  def _thread_func(self):
    try:
      start = time.time()
      for f in self._commit_futures or ():
        f.result()
      if _devices.process_index() == 0 and self._on_commit_callback is not None:
        self._on_commit_callback()
      from pyjax._src import monitoring
      monitoring.record_event_duration_secs(
          "/jax/checkpoint/write/async/thread_duration_sec", time.time() - start)
    except Exception as e:  # surfaced by check_for_errors / wait_until_finished
      self._exception = e

  def _add_futures(self, futures):
    self._commit_futures = futures

  def _start_async_commit(self, on_commit_callback):
    self._count = next(_module_unique_count)
    self._on_commit_callback = on_commit_callback
    self._thread = threading.Thread(target=self._thread_func, daemon=True)
    self._thread.start()

  def check_for_errors(self):
    """Raise (once) the error of the last background commit, if it failed."""
    if self._exception is not None:
      e, self._exception = self._exception, None
      raise e

  def wait_until_finished(self):
    """Join the background commit and raise its error, if any."""
    if self._thread is not None:
      self._thread.join()
      self._thread = None
    self.check_for_errors()


class GlobalAsyncCheckpointManager(AsyncManager, GlobalAsyncCheckpointManagerBase):
  """Writes and reads arrays with TensorStore; writes commit in the background."""

  def serialize(self, arrays, tensorstore_specs, *, on_commit_callback=None,
                transaction=None):
    """Copy ``arrays`` into TensorStore now and commit in the background;
    ``on_commit_callback`` runs once the commit is done."""
    self.wait_until_finished()
    commit_futures = []

    async def go():
      return await asyncio.gather(*(
          async_serialize(a, s, commit_future=commit_futures, transaction=transaction)
          for a, s in zip(tree_util.tree_leaves(arrays),
                          tree_util.tree_leaves(tensorstore_specs,
                                                is_leaf=lambda x: isinstance(x, dict)))))
    asyncio.run(go())
    self._add_futures(commit_futures)
    self._start_async_commit(on_commit_callback)

  def serialize_with_paths(self, arrays, paths, *, on_commit_callback=None,
                           transaction=None):
    """``serialize`` to the zarr specs of ``paths``."""
    specs = [get_tensorstore_spec(p) for p in paths]
    return self.serialize(arrays, specs, on_commit_callback=on_commit_callback,
                          transaction=transaction)

  def deserialize(self, shardings, tensorstore_specs, global_shapes=None, dtypes=None,
                  concurrent_gb=32):
    """Wait for a pending write, then read the arrays."""
    self.wait_until_finished()
    return run_deserialization(shardings, tensorstore_specs, global_shapes, dtypes,
                               concurrent_gb)

  def deserialize_with_paths(self, shardings, paths, global_shapes=None, dtypes=None,
                             concurrent_gb=32):
    """``deserialize`` from the zarr specs of ``paths``."""
    specs = [get_tensorstore_spec(p) for p in paths]
    return self.deserialize(shardings, specs, global_shapes, dtypes, concurrent_gb)
