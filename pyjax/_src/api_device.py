"""Moving data between host and devices: device_put, device_get, block_until_ready.

``device_put`` of traced values binds ``device_put_p`` (one equation for all the leaves, as
in JAX's jaxprs): the identity on values; its JVP puts the tangents, its transpose puts the
cotangents back (always copying), batching keeps the batch dims.  Concrete values move
without tracing."""
from __future__ import annotations

import enum

import numpy as np

from pyjax._src import core, dtypes
from pyjax._src import tree_util
from pyjax._src.avals import ShapedArray
from pyjax._src.runtime import devices as _devices
from pyjax._src.runtime.array import ArrayImpl, SingleDeviceSharding


def _resolve_device(device):
  if device is None:
    return None
  if isinstance(device, _devices.Device):
    return device
  if isinstance(device, SingleDeviceSharding):
    return device._device
  if isinstance(device, str):
    return _devices.get_backend(device).devices[0]
  ds = getattr(device, "device_set", None)
  if ds is not None and len(ds) == 1:
    return next(iter(ds))
  raise TypeError(f"device_put: unsupported device or sharding {device!r}")


def _put_one(x, device, may_alias=None, donate=False):
  if isinstance(x, core.Tracer):
    return x
  if type(x) is ArrayImpl:
    if device is None:
      return x
    if x._device is device and x._committed:
      return x
    buf = x._data() if (may_alias is not False) else x._data().copy()
    return ArrayImpl(buf, x.aval, device, True)
  from pyjax._src.numpy.array_constructors import asarray
  if isinstance(x, (np.ndarray, np.generic)) or type(x) in dtypes.python_scalar_types or hasattr(x, "__jax_array__") \
      or isinstance(x, (bool, int, float, complex)):
    a = asarray(x)
    if isinstance(x, (np.ndarray, np.generic)):
      a = ArrayImpl(np.array(a._data(), copy=True), ShapedArray(a.shape, a.dtype, False), a._device, False)
    if device is None:
      return a
    return ArrayImpl(a._data(), a.aval, device, True)
  raise TypeError(f"device_put: argument of type {type(x)} is not a valid JAX type")


class ArrayCopySemantics(enum.Enum):
  """How ``device_put`` treats its input buffer (a ``device_put_p`` parameter)."""
  ALWAYS_COPY = 0
  REUSE_INPUT = 1
  DONATE_INPUT = 2

  def __repr__(self):
    return f"ArrayCopySemantics.{self.name}"


device_put_p = core.Primitive("device_put")
device_put_p.multiple_results = True
device_put_p.def_abstract_eval(lambda *avals, devices, srcs, copy_semantics: list(avals))


def _device_put_jvp(primals, tangents, **params):
  from pyjax._src.interpreters import ad
  ts = [ad.instantiate_zeros(t) for t in tangents]
  return device_put_p.bind(*primals, **params), device_put_p.bind(*ts, **params)


def _device_put_transpose(cts, *args, devices, srcs, copy_semantics):
  from pyjax._src.interpreters import ad
  keep = [i for i, a in enumerate(args) if ad.is_undefined_primal(a)]
  cts = [ad.instantiate_zeros(cts[i]) for i in keep]
  outs = device_put_p.bind(*cts, devices=tuple(srcs[i] for i in keep),
                           srcs=tuple(devices[i] for i in keep),
                           copy_semantics=(ArrayCopySemantics.ALWAYS_COPY,) * len(keep))
  res = [None] * len(args)
  for i, o in zip(keep, outs):
    res[i] = o
  return res


def _device_put_batch(args, dims, **params):
  return device_put_p.bind(*args, **params), list(dims)


def _register_device_put_rules():
  from pyjax._src.interpreters import ad, batching
  ad.primitive_jvps[device_put_p] = _device_put_jvp
  ad.primitive_transposes[device_put_p] = _device_put_transpose
  batching.primitive_batchers[device_put_p] = _device_put_batch


def _put_traced(x, device, src, donate, may_alias):
  """``device_put`` when a leaf is traced: one ``device_put_p`` equation for all leaves."""
  leaves, tree = tree_util.tree_flatten(x)
  n = len(leaves)
  devs, srcs = (_prefix_leaves(d, x, n) for d in (device, src))
  if donate:
    cs = ArrayCopySemantics.DONATE_INPUT
  elif may_alias is False:
    cs = ArrayCopySemantics.ALWAYS_COPY
  else:
    cs = ArrayCopySemantics.REUSE_INPUT
  outs = device_put_p.bind(*leaves, devices=tuple(_resolve_device(d) for d in devs),
                           srcs=tuple(_resolve_device(d) for d in srcs),
                           copy_semantics=(cs,) * n)
  return tree_util.tree_unflatten(tree, outs)


def _prefix_leaves(d, x, n):
  if d is None or isinstance(d, (_devices.Device, SingleDeviceSharding, str)):
    return [d] * n
  return tree_util.tree_leaves(tree_util.tree_map(lambda _, dd: dd, x, d,
                                                  is_leaf=lambda v: v is None))


def device_put(x, device=None, *, src=None, donate=False, may_alias=None):
  """Put every leaf of ``x`` on ``device`` (committing it there), or on the default device
  uncommitted when ``device`` is None.  ``device`` may be a Device, a SingleDeviceSharding,
  a platform name, or a pytree prefix of those.  Under a trace it records a ``device_put``
  equation, as JAX does."""
  if any(isinstance(leaf, core.Tracer) for leaf in tree_util.tree_leaves(x)):
    return _put_traced(x, device, src, donate, may_alias)
  if device is None or isinstance(device, (_devices.Device, SingleDeviceSharding, str)):
    d = _resolve_device(device)
    return tree_util.tree_map(lambda leaf: _put_one(leaf, d, may_alias, donate), x)
  return tree_util.tree_map(lambda leaf, dev: _put_one(leaf, _resolve_device(dev), may_alias, donate),
                            x, device)


def device_put_replicated(x, devices):
  return tree_util.tree_map(
      lambda leaf: ArrayImpl(np.stack([np.asarray(leaf)] * len(devices)),
                             ShapedArray((len(devices),) + np.shape(leaf),
                                         dtypes.canonicalize_dtype(np.asarray(leaf).dtype)),
                             devices[0], True), x)


def device_get(x):
  """Fetch every Array leaf of ``x`` to the host as a NumPy array (other leaves unchanged)."""
  def get(leaf):
    if type(leaf) is ArrayImpl:
      return np.asarray(leaf)
    if isinstance(leaf, core.Tracer):
      return np.asarray(leaf)  # raises TracerArrayConversionError
    return leaf
  return tree_util.tree_map(get, x)


def block_until_ready(x):
  """Wait until every Array leaf of ``x`` is computed; returns ``x``."""
  for leaf in tree_util.tree_leaves(x):
    f = getattr(leaf, "block_until_ready", None)
    if f is not None:
      f()
  return x


def effects_barrier():
  """Wait until all work already dispatched to any device's stream has run (so its side
  effects, e.g. callbacks, have happened).  Errors stay with their arrays."""
  from pyjax._src.runtime import stream
  stream.synchronize_all()


_register_device_put_rules()
