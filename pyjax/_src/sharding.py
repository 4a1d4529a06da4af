"""Shardings and meshes (``jax.sharding``).

* ``PartitionSpec`` (``P``): complete -- entries are None, an axis name, a tuple of axis
  names or ``P.UNCONSTRAINED``; ``unreduced`` / ``reduced`` sets;
* ``Mesh``: a named array of this process's devices (a context manager, as JAX's);
  ``AbstractMesh``: axis sizes and names only; ``AxisType`` (Auto, Explicit, Manual);
  ``make_mesh`` gives Explicit axes by default, as JAX 0.10;
* ``Sharding`` (the abstract base), ``SingleDeviceSharding`` and ``NamedSharding``, with
  ``shard_shape``, ``devices_indices_map``, ``is_fully_replicated``,
  ``addressable_devices`` computed from the mesh and spec;
* ``get_abstract_mesh`` / ``set_mesh`` / ``use_mesh`` for the context mesh.

Arrays laid out by a NamedSharding over several devices hold one buffer per device
(``runtime/sharded_array.py``); ``reshard``, ``auto_axes``, ``explicit_axes`` and jit's
shardings live in ``jit_sharding.py``, the sharding-type rules in ``sharding_types.py``
(``docs/devices.md``).  Differs from JAX: no ``PositionalSharding``/``GSPMDSharding``;
a mesh may span processes (``jax.distributed``): ``addressable_devices``, ``local_mesh``
and ``is_fully_addressable`` follow each device's ``process_index``.
"""
from __future__ import annotations

import abc
import collections
import contextlib
import enum
import math
import threading

import numpy as np

from pyjax._src.runtime import devices as _devices
from pyjax._src.runtime.array import SingleDeviceSharding


class Sharding(abc.ABC):
  """How an array is laid out across devices (abstract base)."""

  @property
  @abc.abstractmethod
  def device_set(self):
    """The set of devices holding some part of the array."""

  @property
  def is_fully_replicated(self):
    return True

  @property
  def is_fully_addressable(self):
    """Whether every device of the sharding belongs to this process."""
    me = _devices.process_index()
    return all(d.process_index == me for d in self.device_set)

  @property
  def addressable_devices(self):
    """The devices of the sharding that belong to this process."""
    me = _devices.process_index()
    return {d for d in self.device_set if d.process_index == me}

  @property
  def num_devices(self):
    return len(self.device_set)

  @property
  def _device_assignment(self):
    """The sharding's devices in order (by id unless a subclass orders them)."""
    return sorted(self.device_set, key=lambda d: d.id)

  @property
  def _addressable_device_assignment(self):
    """The devices of ``_device_assignment`` this process addresses (all of them)."""
    return [d for d in self._device_assignment if d in self.addressable_devices]

  @property
  def memory_kind(self):
    return "device"

  def shard_shape(self, global_shape):
    """The shape of each device's part of an array of ``global_shape``."""
    return tuple(global_shape)

  def devices_indices_map(self, global_shape):
    """``{device: tuple of slices}``: the part of the array each device holds."""
    return {d: tuple(slice(None) for _ in global_shape) for d in self.device_set}

  def addressable_devices_indices_map(self, global_shape):
    return {d: i for d, i in self.devices_indices_map(global_shape).items()
            if d in self.addressable_devices}

  def is_equivalent_to(self, other, ndim):
    """Whether both place the parts of any ``ndim``-dimensional array alike (compared on
    a shape every sharded dimension divides: the device count along each axis)."""
    if self.device_set != other.device_set or self.memory_kind != other.memory_kind:
      return False
    shape = (len(self.device_set),) * ndim

    def parts(s):   # slices as (start, stop, step): slice(None) and slice(0, n) agree
      return {d: tuple(i.indices(n) if isinstance(i, slice) else i
                       for i, n in zip(idx, shape))
              for d, idx in s.devices_indices_map(shape).items()}
    return parts(self) == parts(other)


Sharding.register(SingleDeviceSharding)


# --- PartitionSpec ------------------------------------------------------------------------
class _UnconstrainedPartitionSingleton:
  def __repr__(self):
    return "UNCONSTRAINED"

  def __reduce__(self):
    return (_get_unconstrained, ())


_UNCONSTRAINED = _UnconstrainedPartitionSingleton()


def _get_unconstrained():
  return _UNCONSTRAINED


def _canonical_entry(e):
  if isinstance(e, list):
    e = tuple(e)
  if isinstance(e, tuple):
    if len(e) == 0:
      return None
    if len(e) == 1:
      return e[0]
  return e


class PartitionSpec:
  """How each dimension of an array is split over mesh axes: one entry per leading
  dimension -- None (not split), an axis name, a tuple of axis names (split over their
  product), or ``PartitionSpec.UNCONSTRAINED``; missing trailing entries are None."""
  __slots__ = ("_partitions", "unreduced", "reduced")
  UNCONSTRAINED = _UNCONSTRAINED

  def __init__(self, *partitions, unreduced=frozenset(), reduced=frozenset()):
    self._partitions = tuple(_canonical_entry(p) for p in partitions)
    self.unreduced = frozenset(unreduced)
    self.reduced = frozenset(reduced)
    for p in self._partitions:
      names = p if isinstance(p, tuple) else (p,)
      for n in names:
        if n is not None and n is not _UNCONSTRAINED and not isinstance(n, str):
          raise TypeError(f"PartitionSpec entries must be None, axis names (str) or tuples "
                          f"of them; got {n!r} in {self!r}")
    used = [n for p in self._partitions for n in (p if isinstance(p, tuple) else (p,))
            if isinstance(n, str)]
    if len(used) != len(set(used)):
      raise ValueError(f"A mesh axis name may appear once in a PartitionSpec: {self!r}")
    if self.unreduced & set(used):
      raise ValueError(f"unreduced axes {sorted(self.unreduced & set(used))} also shard a "
                       f"dimension in {self!r}")

  def __repr__(self):
    if not self.unreduced and not self.reduced:
      return f"P{self._partitions!r}"
    parts = ", ".join(repr(p) for p in self._partitions)
    extra = ""
    if self.unreduced:
      extra += f", unreduced={set(self.unreduced)!r}"
    if self.reduced:
      extra += f", reduced={set(self.reduced)!r}"
    return f"P({parts}{extra})"

  def __len__(self):
    return len(self._partitions)

  def __iter__(self):
    return iter(self._partitions)

  def __getitem__(self, i):
    if isinstance(i, slice):
      return PartitionSpec(*self._partitions[i], unreduced=self.unreduced,
                           reduced=self.reduced)
    return self._partitions[i]

  def __eq__(self, other):
    if isinstance(other, PartitionSpec):
      return (self._partitions == other._partitions and self.unreduced == other.unreduced
              and self.reduced == other.reduced)
    if isinstance(other, tuple):
      return not self.unreduced and not self.reduced and self._partitions == tuple(
          _canonical_entry(p) for p in other)
    return NotImplemented

  def __hash__(self):
    return hash((self._partitions, self.unreduced, self.reduced))

  def __add__(self, other):
    other = other._partitions if isinstance(other, PartitionSpec) else tuple(other)
    return PartitionSpec(*self._partitions, *other, unreduced=self.unreduced,
                         reduced=self.reduced)

  def __reduce__(self):
    return (_make_pspec, (self._partitions, self.unreduced, self.reduced))

  def index(self, value):
    return self._partitions.index(value)

  def count(self, value):
    return self._partitions.count(value)

  def update(self, **kw):
    """A copy with ``partitions``, ``unreduced`` or ``reduced`` replaced."""
    return PartitionSpec(*kw.get("partitions", self._partitions),
                         unreduced=kw.get("unreduced", self.unreduced),
                         reduced=kw.get("reduced", self.reduced))

  def _normalized_spec_for_aval(self, ndim):
    """One entry per dimension (padded with None)."""
    if len(self._partitions) > ndim:
      raise ValueError(f"PartitionSpec {self!r} has more entries than the array's rank "
                       f"{ndim}")
    return self.update(partitions=self._partitions + (None,) * (ndim - len(self._partitions)))


def _make_pspec(partitions, unreduced, reduced):
  return PartitionSpec(*partitions, unreduced=unreduced, reduced=reduced)


# --- meshes -------------------------------------------------------------------------------
class AxisType(enum.Enum):
  """How a mesh axis is treated by sharding-in-types: ``Auto`` (the compiler decides),
  ``Explicit`` (part of the type), ``Manual`` (inside shard_map)."""
  Auto = enum.auto()
  Explicit = enum.auto()
  Manual = enum.auto()

  def __repr__(self):
    return self.name


def _axis_types(axis_types, n):
  if axis_types is None:
    return (AxisType.Auto,) * n
  if isinstance(axis_types, AxisType):
    return (axis_types,) * n
  axis_types = tuple(axis_types)
  if len(axis_types) != n:
    raise ValueError(f"Number of axis_types ({len(axis_types)}) must match the number of "
                     f"axis names ({n})")
  return axis_types


class AbstractMesh:
  """A mesh's axis names, sizes and types, without devices."""

  def __init__(self, axis_sizes, axis_names, axis_types=None):
    self.axis_sizes = tuple(int(s) for s in axis_sizes)
    self.axis_names = tuple(axis_names)
    if len(self.axis_sizes) != len(self.axis_names):
      raise ValueError(f"axis_sizes {self.axis_sizes} and axis_names {self.axis_names} "
                       "must have the same length")
    self.axis_types = _axis_types(axis_types, len(self.axis_names))

  @property
  def shape(self):
    return collections.OrderedDict(zip(self.axis_names, self.axis_sizes))

  @property
  def shape_tuple(self):
    return tuple(zip(self.axis_names, self.axis_sizes))

  @property
  def size(self):
    return math.prod(self.axis_sizes)

  @property
  def empty(self):
    return not self.axis_names

  @property
  def abstract_mesh(self):
    return self

  def _axes_of_type(self, t):
    return tuple(n for n, a in zip(self.axis_names, self.axis_types) if a == t)

  @property
  def auto_axes(self):
    return self._axes_of_type(AxisType.Auto)

  @property
  def explicit_axes(self):
    return self._axes_of_type(AxisType.Explicit)

  @property
  def manual_axes(self):
    return self._axes_of_type(AxisType.Manual)

  @property
  def are_all_axes_auto(self):
    return bool(self.axis_types) and all(t == AxisType.Auto for t in self.axis_types)

  @property
  def are_all_axes_explicit(self):
    return bool(self.axis_types) and all(t == AxisType.Explicit for t in self.axis_types)

  @property
  def are_all_axes_manual(self):
    return bool(self.axis_types) and all(t == AxisType.Manual for t in self.axis_types)

  def __eq__(self, other):
    return (type(other) is type(self) and self.axis_sizes == other.axis_sizes
            and self.axis_names == other.axis_names and self.axis_types == other.axis_types)

  def __hash__(self):
    return hash((self.axis_sizes, self.axis_names, self.axis_types))

  def __repr__(self):
    axes = ", ".join(f"'{n}': {s}" for n, s in zip(self.axis_names, self.axis_sizes))
    return f"AbstractMesh({axes}, axis_types={self.axis_types})"


class Mesh:
  """A named n-d array of devices: ``Mesh(devices, axis_names, axis_types=None)``.
  Used as a context manager it is the context mesh (``get_abstract_mesh``)."""

  def __init__(self, devices, axis_names, axis_types=None):
    devs = np.asarray(devices, dtype=object) if not isinstance(devices, np.ndarray) else devices
    if isinstance(axis_names, str):
      axis_names = (axis_names,)
    axis_names = tuple(axis_names)
    if devs.ndim != len(axis_names):
      raise ValueError(f"Mesh requires the ndim of its first argument (`devices`) to equal "
                       f"the length of its second argument (`axis_names`), but got "
                       f"devices.ndim == {devs.ndim} and len(axis_names) == "
                       f"{len(axis_names)}.")
    if len(set(axis_names)) != len(axis_names):
      raise ValueError(f"Mesh axis names must be unique, got {axis_names}")
    self.devices = devs
    self.axis_names = axis_names
    self.axis_types = _axis_types(axis_types, len(axis_names))

  @property
  def shape(self):
    return collections.OrderedDict(zip(self.axis_names, self.devices.shape))

  @property
  def shape_tuple(self):
    return tuple(zip(self.axis_names, self.devices.shape))

  @property
  def axis_sizes(self):
    return tuple(self.devices.shape)

  @property
  def size(self):
    return self.devices.size

  @property
  def empty(self):
    return self.devices.ndim == 0 or not self.axis_names

  @property
  def device_ids(self):
    return np.vectorize(lambda d: d.id, otypes=[int])(self.devices)

  @property
  def local_devices(self):
    """The mesh's devices that belong to this process."""
    me = _devices.process_index()
    return [d for d in self.devices.flat if d.process_index == me]

  @property
  def local_mesh(self):
    """The sub-mesh of this process's devices (the box of mesh positions they occupy)."""
    if not self.is_multi_process:
      return self
    me = _devices.process_index()
    mine = np.vectorize(lambda d: d.process_index == me, otypes=[bool])(self.devices)
    pos = np.nonzero(mine)
    box = np.ix_(*[np.unique(p) for p in pos])
    return Mesh(self.devices[box], self.axis_names, self.axis_types)

  @property
  def is_multi_process(self):
    """Whether the mesh's devices belong to more than one process."""
    return len({d.process_index for d in self.devices.flat}) > 1

  @property
  def abstract_mesh(self):
    return AbstractMesh(self.axis_sizes, self.axis_names, self.axis_types)

  are_all_axes_auto = AbstractMesh.are_all_axes_auto
  are_all_axes_explicit = AbstractMesh.are_all_axes_explicit
  are_all_axes_manual = AbstractMesh.are_all_axes_manual

  @property
  def _flat_devices_tuple(self):
    return tuple(self.devices.flat)

  def __eq__(self, other):
    return (isinstance(other, Mesh) and self.axis_names == other.axis_names
            and self.axis_types == other.axis_types
            and self.devices.shape == other.devices.shape
            and self._flat_devices_tuple == other._flat_devices_tuple)

  def __hash__(self):
    return hash((self.axis_names, self.axis_types, self.devices.shape,
                 self._flat_devices_tuple))

  def __repr__(self):
    axes = ", ".join(f"'{n}': {s}" for n, s in zip(self.axis_names, self.devices.shape))
    return f"Mesh({axes}, axis_types={self.axis_types})"

  def __enter__(self):
    _mesh_ctx.stack.append(self)
    return self

  def __exit__(self, *exc):
    _mesh_ctx.stack.pop()
    return False


class _MeshContext(threading.local):
  def __init__(self):
    self.stack = []


_mesh_ctx = _MeshContext()
_EMPTY_ABSTRACT_MESH = AbstractMesh((), ())


def get_abstract_mesh():
  """The abstract mesh of the context mesh (an empty one outside any)."""
  return _mesh_ctx.stack[-1].abstract_mesh if _mesh_ctx.stack else _EMPTY_ABSTRACT_MESH


def get_mesh():
  """The context (concrete) mesh, or None."""
  return _mesh_ctx.stack[-1] if _mesh_ctx.stack else None


@contextlib.contextmanager
def use_mesh(mesh):
  """Context manager making ``mesh`` the context mesh."""
  _mesh_ctx.stack.append(mesh)
  try:
    yield mesh
  finally:
    _mesh_ctx.stack.pop()


def set_mesh(mesh):
  """Make ``mesh`` the context mesh; usable as a context manager (restored on exit) or
  as a plain call (kept)."""
  _mesh_ctx.stack.append(mesh)

  class _Restore:
    def __enter__(self):
      return mesh

    def __exit__(self, *exc):
      if _mesh_ctx.stack and _mesh_ctx.stack[-1] is mesh:
        _mesh_ctx.stack.pop()
      return False
  return _Restore()


# --- NamedSharding ------------------------------------------------------------------------
class NamedSharding(Sharding):
  """An array split over ``mesh`` as ``spec`` says."""

  def __init__(self, mesh, spec=None, *, memory_kind=None):
    if spec is None:
      spec = PartitionSpec()
    if not isinstance(spec, PartitionSpec):
      if isinstance(spec, (tuple, list)):
        spec = PartitionSpec(*spec)
      else:
        raise TypeError(f"NamedSharding spec must be a PartitionSpec, got {spec!r}")
    if not isinstance(mesh, (Mesh, AbstractMesh)):
      raise TypeError(f"NamedSharding mesh must be a Mesh or AbstractMesh, got {mesh!r}")
    for p in spec:
      for n in (p if isinstance(p, tuple) else (p,)):
        if isinstance(n, str) and n not in mesh.axis_names:
          raise ValueError(f"Resource axis: {n} of {spec} is not found in mesh: "
                           f"{tuple(mesh.axis_names)}.")
    self.mesh = mesh
    self.spec = spec
    self._memory_kind = memory_kind

  @property
  def memory_kind(self):
    return self._memory_kind or "device"

  def with_memory_kind(self, kind):
    return NamedSharding(self.mesh, self.spec, memory_kind=kind)

  def with_spec(self, spec):
    return NamedSharding(self.mesh, spec, memory_kind=self._memory_kind)

  def update(self, **kw):
    return NamedSharding(kw.get("mesh", self.mesh), kw.get("spec", self.spec),
                         memory_kind=kw.get("memory_kind", self._memory_kind))

  @property
  def device_set(self):
    if isinstance(self.mesh, AbstractMesh):
      raise ValueError("device_set is not available for a NamedSharding over an "
                       "AbstractMesh")
    return set(self.mesh.devices.flat)

  @property
  def _device_assignment(self):
    return list(self.mesh.devices.flat)

  @property
  def num_devices(self):
    return self.mesh.size

  def _dim_factor(self, entry):
    sizes = self.mesh.shape
    names = entry if isinstance(entry, tuple) else (entry,)
    return math.prod(sizes[n] for n in names if isinstance(n, str))

  @property
  def is_fully_replicated(self):
    return all(self._dim_factor(p) == 1 for p in self.spec)

  def shard_shape(self, global_shape):
    spec = self.spec._normalized_spec_for_aval(len(global_shape))
    out = []
    for dim, entry in zip(global_shape, spec):
      f = self._dim_factor(entry)
      if dim % f:
        raise ValueError(f"One of the dimensions of shape {tuple(global_shape)} ({dim}) is "
                         f"not divisible by the mesh axes {entry!r} it is sharded over "
                         f"(total size {f}).")
      out.append(dim // f)
    return tuple(out)

  def devices_indices_map(self, global_shape):
    shard = self.shard_shape(global_shape)
    spec = self.spec._normalized_spec_for_aval(len(global_shape))
    names = self.mesh.axis_names
    sizes = self.mesh.shape
    out = {}
    for coords in np.ndindex(*self.mesh.devices.shape):
      pos = dict(zip(names, coords))
      idx = []
      for d, entry in enumerate(spec):
        axes = [n for n in (entry if isinstance(entry, tuple) else (entry,))
                if isinstance(n, str)]
        if not axes:
          idx.append(slice(None))
          continue
        k = 0
        for n in axes:   # row-major over the named axes
          k = k * sizes[n] + pos[n]
        idx.append(slice(k * shard[d], (k + 1) * shard[d]))
      out[self.mesh.devices[coords]] = tuple(idx)
    return out

  def _key(self):
    parts = list(self.spec)
    while parts and parts[-1] is None:
      parts.pop()
    return (self.mesh, tuple(parts), self.spec.unreduced, self.spec.reduced, self.memory_kind)

  def __eq__(self, other):
    return isinstance(other, NamedSharding) and self._key() == other._key()

  def __hash__(self):
    return hash(self._key())

  def __repr__(self):
    return f"NamedSharding(mesh={self.mesh!r}, spec={self.spec!r}, memory_kind={self.memory_kind})"


def make_mesh(axis_shapes, axis_names, axis_types=None, *, devices=None):
  """A ``Mesh`` of shape ``axis_shapes`` over the first ``prod(axis_shapes)`` devices;
  its axes are ``AxisType.Explicit`` unless ``axis_types`` says otherwise (as in JAX
  0.10)."""
  if axis_types is None:
    axis_types = (AxisType.Explicit,) * len(tuple(axis_names))
  devs = list(devices) if devices is not None else _devices.devices()
  n = math.prod(axis_shapes)
  if n > len(devs):
    raise ValueError(f"Number of devices {len(devs)} must be >= the product of mesh_shape "
                     f"{tuple(axis_shapes)}")
  arr = np.empty(n, dtype=object)
  arr[:] = devs[:n]
  return Mesh(arr.reshape(tuple(axis_shapes)), axis_names, axis_types)
