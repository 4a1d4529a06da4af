"""Abstract values (leaf module): what is known about an array without its data.

``ShapedArray`` is shared by the runtime (every Array carries one) and the core (tracers
and jaxpr variables carry one), so it lives below both.
"""
from __future__ import annotations

import math

from pyjax._src import dtypes


class ShapedArray:
  """shape + dtype + weak_type.  Immutable and hashable (it is part of jit's cache key).

  Differs from JAX: ``sharding=``, ``manual_axis_type=`` and ``memory_space=`` are
  accepted (libraries rebuild avals from ``x.aval.sharding``, flax's scan) but not
  stored: a plain aval's ``sharding`` is always the one of an unsharded value (sharding
  types live on ``jax.typeof`` of sharded Arrays)."""
  __slots__ = ("shape", "dtype", "weak_type", "_hash")
  array_abstraction_level = 1

  def __init__(self, shape, dtype, weak_type=False, *, sharding=None, manual_axis_type=None,
               memory_space=None):
    self.shape = shape if type(shape) is tuple else tuple(shape)
    if isinstance(dtype, (type, str)):   # jnp.float32, np.int8, "bfloat16": as JAX, a dtype
      dtype = dtypes.dtype(dtype)
    self.dtype = dtype
    self.weak_type = weak_type
    self._hash = None

  @property
  def ndim(self):
    return len(self.shape)

  @property
  def size(self):
    return math.prod(self.shape)

  def update(self, shape=None, dtype=None, weak_type=None):
    return ShapedArray(self.shape if shape is None else shape,
                       self.dtype if dtype is None else dtype,
                       self.weak_type if weak_type is None else weak_type)

  def strip_weak_type(self):
    return ShapedArray(self.shape, self.dtype, False) if self.weak_type else self

  def update_weak_type(self, weak_type):
    return self if weak_type == self.weak_type else ShapedArray(self.shape, self.dtype, weak_type)

  # JAX's hijax interface of a lo type (hi types lower to lists of these)
  def normalize(self):
    return self.strip_weak_type()

  def lo_ty(self):
    return [self]

  def lower_val(self, val):
    return [val]

  def raise_val(self, val):
    return val

  def to_tangent_aval(self):
    """The aval of this value's tangents: ``float0`` for integer and boolean dtypes, the
    same dtype otherwise; shape and weak type kept (as JAX's ``to_tangent_aval``)."""
    d = self.dtype
    if d == dtypes.bool_ or dtypes.is_int(d) or d == dtypes.float0:
      d = dtypes.float0
    return ShapedArray(self.shape, d, self.weak_type)

  to_ct_aval = to_tangent_aval

  @property
  def sharding(self):
    """The sharding type: as in JAX outside a mesh, a ``NamedSharding`` over the empty
    abstract mesh whose spec has one ``None`` per dimension (needs ``pyjax.sharding``)."""
    return _sharding_of_aval(self)

  def __eq__(self, other):
    return (type(other) is ShapedArray and self.shape == other.shape
            and self.dtype == other.dtype and self.weak_type == other.weak_type)

  def __ne__(self, other):
    return not self == other

  def __hash__(self):
    h = self._hash
    if h is None:
      h = self._hash = hash((self.shape, self.dtype, self.weak_type))
    return h

  def str_short(self, short_dtypes=False):
    """``float32[2,3]`` (``f32[2,3]`` with ``short_dtypes``, as in jaxprs)."""
    if self.dtype == dtypes.float0:
      dt = "float0"
    else:
      dt = dtypes.short_dtype_name(self.dtype) if short_dtypes else self.dtype.name
    return f"{dt}[{','.join(str(d) for d in self.shape)}]"

  def __repr__(self):
    w = ", weak_type=True" if self.weak_type else ""
    return f"ShapedArray({self.str_short()}{w})"

  def __str__(self):
    """JAX's ``str(aval)``: ``~float32[]`` for a weakly typed float32 scalar."""
    return ("~" if self.weak_type else "") + self.str_short()


def _sharding_of_aval(aval):
  # The sharding module sits above the leaves; it is imported on first use.
  try:
    from pyjax._src import sharding as _sharding
  except ImportError:
    raise AttributeError("'ShapedArray' object has no attribute 'sharding' (no "
                         "pyjax._src.sharding)") from None
  make = getattr(_sharding, "unsharded_sharding", None)
  if make is not None:
    return make(aval.ndim)
  return _sharding.NamedSharding(_sharding.AbstractMesh((), ()),
                                 _sharding.PartitionSpec(*(None,) * aval.ndim))


def aval_of_numpy(x, weak_type=False):
  return ShapedArray(x.shape, x.dtype, weak_type)


def scalar_aval(x):
  """Aval of a Python scalar: canonical dtype, weakly typed (bool is never weak)."""
  t = type(x)
  d = dtypes.python_scalar_dtype(t)
  return ShapedArray((), d, t is not bool)


float0 = dtypes.float0
