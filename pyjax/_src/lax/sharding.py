"""Placement primitives: ``sharding_constraint`` (``with_sharding_constraint``) and
``device_put`` (what ``jax.device_put`` binds under a trace).

pyjax runs each computation on one device, so a sharding constraint is the identity on
the values (placing them on the sharding's device when it names another one), and a
traced ``device_put`` is the identity inside the computation.  Both are linear: their
JVP applies them to the tangent; their transpose applies them to the cotangent (a
transposed ``device_put`` swaps ``devices``/``srcs`` and always copies, as JAX's).
"""
from __future__ import annotations

import enum

from pyjax._src import core
from pyjax._src import tree_util
from pyjax._src.interpreters import ad
from pyjax._src.interpreters import batching
from pyjax._src.runtime import dispatch
from pyjax._src.runtime.array import Array, ArrayImpl, SingleDeviceSharding

__all__ = ["with_sharding_constraint", "sharding_constraint_p", "device_put_p"]


class _EmptyMesh:
  """The (empty) context mesh a sharding constraint records: pyjax has no meshes."""
  __slots__ = ()

  def __repr__(self):
    return "Mesh()"

  def __eq__(self, other):
    return type(other) is _EmptyMesh

  def __hash__(self):
    return hash(_EmptyMesh)


_EMPTY_MESH = _EmptyMesh()


def _place(x, device):
  """``x`` committed to ``device`` (no copy when it is already there)."""
  if device is None or not isinstance(x, ArrayImpl):
    return x
  if x._device is device and x._committed:
    return x
  return dispatch.commit_to(x, device)


# --- sharding_constraint ------------------------------------------------------------------
sharding_constraint_p = core.Primitive("sharding_constraint")
sharding_constraint_p.def_abstract_eval(lambda x, **_: x)


@sharding_constraint_p.def_impl
def _sharding_constraint_impl(x, *, sharding, layout, context_mesh, unconstrained_dims):
  from pyjax._src.runtime import sharded_array
  if sharded_array.is_multi_device(sharding):   # laid out over the sharding's devices
    return sharded_array.put_sharded(x, sharding)
  dev = sharding._device if isinstance(sharding, SingleDeviceSharding) else None
  return _place(x, dev)


ad.deflinear(sharding_constraint_p, lambda ct, **params: [
    sharding_constraint_p.bind(ct, **params)])


def _sharding_constraint_batch(axis_data, args, dims, *, unconstrained_dims, sharding,
                               **params):
  """The constraint of the batched value: its NamedSharding's spec gains an entry at the
  batch dimension -- the vmap's ``spmd_axis_name`` if given, else None (that dimension
  also joins ``unconstrained_dims``), as JAX's rule."""
  x, = args
  d, = dims
  if d is batching.not_mapped or d is None:
    return sharding_constraint_p.bind(x, unconstrained_dims=unconstrained_dims,
                                      sharding=sharding, **params), d
  spmd = getattr(axis_data, "spmd_name", None)
  if isinstance(spmd, str):
    spmd = (spmd,)
  shifted = frozenset(u + 1 if u >= d else u for u in unconstrained_dims)
  if spmd is None:
    shifted |= {d}
  if type(sharding).__name__ == "NamedSharding":
    spec = list(sharding.spec)
    if spmd is not None:
      used = {n for e in spec for n in (e if isinstance(e, tuple) else (e,))}
      if set(spmd) & used:
        raise ValueError(f"vmap spmd_axis_name {spmd} cannot appear in "
                         f"with_sharding_constraint spec, but got spec {sharding.spec}")
    spec += [None] * (len(x.shape) - 1 - len(spec))
    spec.insert(d, None if spmd is None else (spmd[0] if len(spmd) == 1 else tuple(spmd)))
    sharding = sharding.update(spec=sharding.spec.update(partitions=spec))
  return sharding_constraint_p.bind(x, unconstrained_dims=shifted, sharding=sharding,
                                    **params), d


batching.axis_primitive_batchers[sharding_constraint_p] = _sharding_constraint_batch


def _is_sharding(s):
  return isinstance(s, SingleDeviceSharding) or hasattr(s, "device_set")


def with_sharding_constraint(x, shardings):
  """Constrain how the leaves of ``x`` are placed: ``shardings`` (a tree prefix of ``x``)
  holds ``Sharding`` objects (or PartitionSpecs under a context mesh); a NamedSharding may
  name only Auto axes (JAX's ValueError).  Values are unchanged; eagerly the result is
  laid out as the sharding says, under ``jit`` the jit's output takes the sharding."""
  leaves, tree = tree_util.tree_flatten(x)
  try:
    specs = tree_util.broadcast_prefix(shardings, x, is_leaf=lambda s: s is None)
  except ValueError:
    from pyjax._src.tree_util.errors import prefix_errors
    errs = [str(e("with_sharding_constraint shardings"))
            for e in prefix_errors(shardings, x, is_leaf=lambda s: s is None)]
    raise ValueError("with_sharding_constraint shardings specification must be a tree "
                     f"prefix of the corresponding value; \n  Mismatch details "
                     f"({len(errs)} found):\n  " + "\n  ".join(errs)) from None
  outs = []
  for leaf, s in zip(leaves, specs):
    if type(s).__name__ == "Format":   # a layout with a sharding: the sharding lays it out
      if s.layout is not None and s.sharding is None:
        raise ValueError(f"Sharding has to be concrete when layout is of type "
                         f"{type(s.layout)}. Please pass a `jax.sharding.NamedSharding` or "
                         "`jax.sharding.SingleDeviceSharding` to the sharding argument. Got "
                         "sharding None")
      s = s.sharding
    if s is None:
      raise ValueError("One of with_sharding_constraint arguments got sharding None which is "
                       "not allowed. Please only pass `jax.sharding.Sharding` instances.")
    if type(s).__name__ == "PartitionSpec" and _context_mesh() is not None:
      s = _named(_context_mesh(), s)
    if type(s).__name__ == "NamedSharding":
      s = _on_context_mesh(s)
      _check_auto_axes(s)
    if type(s).__name__ == "PartitionSpec":
      raise RuntimeError(
          "with_sharding_constraint requires a non-empty mesh in context if you are passing "
          "`PartitionSpec`s to shardings. You can define a context mesh via "
          "`jax.set_mesh(mesh)`. Alternatively, provide `Sharding`s to shardings and then the "
          "mesh context manager is not required.")
    if not _is_sharding(s):
      raise TypeError("shardings leaf specifications are expected to be PartitionSpec "
                      f"instances or None, but got {s}")
    if not isinstance(leaf, (Array, core.Tracer)):
      from pyjax._src.lax import shapes
      leaf = shapes._asarray(leaf)
    outs.append(sharding_constraint_p.bind(leaf, sharding=s, layout=None,
                                           context_mesh=_EMPTY_MESH,
                                           unconstrained_dims=frozenset()))
  return tree_util.tree_unflatten(tree, outs)


def _context_mesh():
  from pyjax._src import sharding as _sh
  m = _sh.get_mesh()
  return None if m is None or m.empty else m


def _on_context_mesh(s):
  """A NamedSharding over an AbstractMesh laid out on the context mesh of that abstract
  mesh (``jax.set_mesh``), as JAX resolves it; any other sharding unchanged."""
  from pyjax._src import sharding as _sh
  cm = _context_mesh()
  if isinstance(s.mesh, _sh.AbstractMesh) and cm is not None and cm.abstract_mesh == s.mesh:
    return _sh.NamedSharding(cm, s.spec, memory_kind=s.memory_kind)
  return s


def _named(mesh, spec):
  from pyjax._src import sharding as _sh
  return _sh.NamedSharding(mesh, spec)


def _abstract_repr(mesh):
  """The abstract mesh as JAX prints it (with the devices' kind and platform)."""
  r = repr(mesh.abstract_mesh)
  devs = getattr(mesh, "devices", None)
  if devs is None or not devs.size:
    return r
  d = devs.flat[0]
  return (f"{r[:-1]}, device_kind={getattr(d, 'device_kind', d.platform)}, num_cores=None, "
          f"platform={d.platform})")


def _check_auto_axes(s):
  """with_sharding_constraint may name only Auto mesh axes (JAX's ValueError)."""
  from pyjax._src.sharding import AxisType
  mesh = s.mesh
  types = dict(zip(mesh.axis_names, mesh.axis_types))
  for e in s.spec:
    for n in (e if isinstance(e, tuple) else (e,)):
      if isinstance(n, str) and types.get(n) != AxisType.Auto:
        raise ValueError(
            "The spec of NamedSharding passed to with_sharding_constraint can only refer to "
            f"Auto axes of the mesh. Got spec={s.spec} and mesh={_abstract_repr(mesh)}. You "
            "probably meant to use `reshard` API?")


# --- device_put -----------------------------------------------------------------------------
class ArrayCopySemantics(enum.Enum):
  """How a ``device_put`` treats its input buffer."""
  ALWAYS_COPY = 0
  REUSE_INPUT = 1
  DONATE_INPUT = 2

  def __repr__(self):
    return f"ArrayCopySemantics.{self.name}"

  __str__ = __repr__


device_put_p = core.Primitive("device_put")
device_put_p.multiple_results = True
device_put_p.def_abstract_eval(lambda *avals, **_: list(avals))


def _device_of(d):
  if d is None:
    return None
  if isinstance(d, SingleDeviceSharding):
    return d._device
  ds = getattr(d, "device_set", None)
  if ds is not None and len(ds) == 1:
    return next(iter(ds))
  return d


@device_put_p.def_impl
def _device_put_impl(*xs, devices, srcs, copy_semantics):
  outs = []
  for x, d, cs in zip(xs, devices, copy_semantics):
    if not isinstance(x, ArrayImpl):
      from pyjax._src.lax import shapes
      x = shapes._asarray(x)
    dev = _device_of(d)
    if cs is ArrayCopySemantics.ALWAYS_COPY:
      x = ArrayImpl(x._data().copy(), x.aval, x._device, x._committed)
    outs.append(_place(x, dev))
  return outs


def _device_put_transpose(cts, *args, devices, srcs, copy_semantics):
  out = [None] * len(args)
  picked = [(i, ct, d, s, cs) for i, (ct, a, d, s, cs)
            in enumerate(zip(cts, args, devices, srcs, copy_semantics))
            if ad.is_undefined_primal(a) and type(ct) is not ad.Zero]
  if not picked:
    return out
  for _, _, _, _, cs in picked:
    if cs is ArrayCopySemantics.DONATE_INPUT:
      raise ValueError("donate=True is not allowed during tranposition of device_put. Please "
                       "file an issue if you want this to be supported.")
  idx, cts_, devs, srcs_, _ = zip(*picked)
  ys = device_put_p.bind(*cts_, devices=tuple(srcs_), srcs=tuple(devs),
                         copy_semantics=(ArrayCopySemantics.ALWAYS_COPY,) * len(cts_))
  for i, y in zip(idx, ys):
    out[i] = y
  return out


def _device_put_jvp(primals, tangents, **params):
  outs = device_put_p.bind(*primals, **params)
  nz = [i for i, t in enumerate(tangents) if type(t) is not ad.Zero]
  t_out = [ad.Zero.from_primal_value(o) for o in outs]
  if nz:
    sub = {k: tuple(v[i] for i in nz) for k, v in params.items()}
    ts = device_put_p.bind(*[tangents[i] for i in nz], **sub)
    for i, t in zip(nz, ts):
      t_out[i] = t
  return outs, t_out


ad.primitive_jvps[device_put_p] = _device_put_jvp
ad.primitive_transposes[device_put_p] = _device_put_transpose
batching.primitive_batchers[device_put_p] = (
    lambda args, dims, **params: (device_put_p.bind(*args, **params), list(dims)))


def bind_device_put(xs, devices, srcs, copy_semantics):
  """Bind ``device_put`` on traced values (for ``jax.device_put`` under a trace)."""
  return device_put_p.bind(*xs, devices=tuple(devices), srcs=tuple(srcs),
                           copy_semantics=tuple(copy_semantics))
