"""``jit(in_shardings=, out_shardings=)``, ``reshard`` and the layout of jit outputs.

pyjax computes a jitted program globally (bit-identical to the unsharded run) and lays
its outputs out afterwards:

* ``out_shardings`` (a pytree prefix of the outputs: Sharding objects, PartitionSpecs
  under a context mesh, None) says where each output goes;
* otherwise an output's sharding is its sharding type, derived from the inputs'
  shardings by ``sharding_types`` (the rules of JAX's Explicit sharding; over Auto axes
  the same rules stand in for XLA's propagation);
* ``in_shardings`` (a prefix of the positional arguments) lays uncommitted inputs out
  and must agree with the sharding of committed ones (JAX's ValueError otherwise).

``reshard(x, s)`` lays ``x`` out as ``s`` (eagerly a copy, under a trace a
``sharding_constraint`` equation the output layout follows); ``auto_axes`` /
``explicit_axes`` run a function with mesh axes switched to Auto / Explicit.

Differs from JAX: the program is not partitioned (one device computes it), so sharded
jit gives JAX's layouts and values but not its parallel speed; shardings are not part of
the compiled program's cache key (the same executable serves every layout).
"""
from __future__ import annotations

import functools
import weakref

from pyjax._src import core, tree_util
from pyjax._src.runtime.array import ArrayImpl, SingleDeviceSharding
from pyjax._src.runtime import sharded_array as _sharded
from pyjax._src import sharding as _sh
from pyjax._src import sharding_types as _types
from pyjax._src.out_sharding import spec_to_named

__all__ = ["needs_wrapper", "ShardedJit", "layout_jit_outputs", "reshard", "resolve",
           "auto_axes", "explicit_axes"]


def _is_spec(s):
  return isinstance(s, _sh.PartitionSpec)


def _leaves(shardings):
  return tree_util.tree_leaves(shardings, is_leaf=lambda s: s is None or _is_spec(s))


def needs_wrapper(in_shardings, out_shardings):
  """Whether jit's shardings need this module (anything beyond single-device
  placements)."""
  for s in _leaves(in_shardings) + _leaves(out_shardings):
    if _is_spec(s) or isinstance(s, _sh.NamedSharding):
      return True
  return False


def resolve(s, what):
  """A Sharding from a jit/reshard sharding leaf (PartitionSpecs need a context mesh)."""
  if s is None or not _is_spec(s):
    return s
  mesh = _sh.get_mesh()
  if mesh is None or mesh.empty:
    raise RuntimeError(
        f"jit requires a non-empty mesh in context if you are passing `PartitionSpec`s to "
        f"{what}. You can define a context mesh via `jax.set_mesh(mesh)`. Alternatively, "
        f"provide `Sharding`s to {what} and then the mesh context manager is not required.")
  return _sh.NamedSharding(mesh, s)


def _flat_prefix(shardings, tree_value, what, nargs=None):
  """One sharding (or None) per leaf of ``tree_value``."""
  if isinstance(shardings, list):
    shardings = tuple(shardings)
  if nargs is not None and isinstance(shardings, tuple) and len(shardings) != nargs:
    raise ValueError(
        f"pjit {what} specification must be a tree prefix of the positional arguments "
        f"tuple. In particular, pjit {what} must either be a Sharding, a PartitionSpec, or "
        f"a tuple of length equal to the number of positional arguments. But pjit {what} "
        f"is the wrong length: got a tuple or list of length {len(shardings)} for an args "
        f"tuple of length {nargs}.")
  if nargs is not None and not isinstance(shardings, tuple):
    shardings = (shardings,) * nargs
  try:
    flat = tree_util.broadcast_prefix(shardings, tree_value,
                                      is_leaf=lambda s: s is None or _is_spec(s))
  except ValueError as e:
    raise ValueError(f"pjit {what} specification must be a tree prefix of the "
                     f"corresponding value: {e}") from None
  return [resolve(s, what) for s in flat]


def _mesh_of(shardings):
  for s in shardings:
    if isinstance(s, _sh.NamedSharding) and isinstance(s.mesh, _sh.Mesh):
      return s.mesh
  return None


def _lay_out(x, s):
  if s is None or not isinstance(x, ArrayImpl):
    return x
  if isinstance(s, SingleDeviceSharding) or not _sharded.is_multi_device(s):
    return x
  return _sharded.put_sharded(x, s)


_constraint_mesh = weakref.WeakKeyDictionary()   # ClosedJaxpr -> mesh of a constraint


def _find_constraint_mesh(jaxpr):
  for eqn in jaxpr.eqns:
    if eqn.primitive.name == "sharding_constraint":
      s = eqn.params.get("sharding")
      if _sharded.is_multi_device(s) and isinstance(getattr(s, "mesh", None), _sh.Mesh):
        return s.mesh
    sub = _types._sub_jaxpr(eqn)
    if sub is not None:
      m = _find_constraint_mesh(sub.jaxpr if hasattr(sub, "consts") else sub)
      if m is not None:
        return m
  return None


def _constraint_mesh_of(closed):
  try:
    hit = _constraint_mesh.get(closed, False)
  except TypeError:
    return _find_constraint_mesh(closed.jaxpr)
  if hit is False:
    hit = _constraint_mesh[closed] = _find_constraint_mesh(closed.jaxpr)
  return hit


def lays_out(closed, leaves):
  """Whether the outputs of ``closed`` run on ``leaves`` need laying out: some input is
  sharded or the program holds a multi-device sharding constraint (``reshard``)."""
  for x in leaves:
    if type(x) is not ArrayImpl and isinstance(x, ArrayImpl):
      return True
  return _constraint_mesh_of(closed) is not None


_derived = weakref.WeakKeyDictionary()   # ClosedJaxpr -> {(mesh, in specs): out specs}


def _derived_specs(mesh, closed, specs):
  key = (mesh, tuple(specs))
  try:
    table = _derived.get(closed)
    if table is None:
      table = _derived[closed] = {}
  except TypeError:
    return _types.jaxpr_out_specs(mesh, closed, specs)
  hit = table.get(key)
  if hit is None:
    hit = table[key] = _types.jaxpr_out_specs(mesh, closed, specs)
  return hit


def layout_jit_outputs(closed, leaves, outs, out_shardings=None):
  """Lay the outputs of a jitted program out: ``out_shardings`` (one per output, None
  where not given) first, else the sharding type derived from the sharded inputs."""
  in_sh = [x._sharding if isinstance(x, _sharded.ShardedArrayImpl) else None
           for x in leaves]
  if out_shardings is None:
    out_shardings = [None] * len(outs)
  derived = None
  if any(s is None for s in out_shardings):
    derived = _derived_shardings(closed, leaves, in_sh)
  res = []
  for i, (o, s) in enumerate(zip(outs, out_shardings)):
    if s is None and derived is not None:
      s = derived[i]
    res.append(_lay_out(o, s))
  return res


_derived_by_id = weakref.WeakKeyDictionary()   # ClosedJaxpr -> {ids: (in shardings, outs)}
_interned = {}   # NamedSharding -> the one equal object derived outputs get


def _intern(s):
  hit = _interned.get(s)
  if hit is None:
    if len(_interned) >= 256:
      _interned.clear()
    hit = _interned[s] = s
  return hit


def _derived_shardings(closed, leaves, in_sh):
  """The NamedShardings the outputs of ``closed`` take from the input shardings
  ``in_sh`` (None: no mesh), remembered by the identity of the input sharding objects:
  outputs get the same sharding objects call after call, so a chain of jitted calls
  (a training loop) hits this table without hashing shardings."""
  ids = tuple(map(id, in_sh))
  try:
    table = _derived_by_id.get(closed)
    if table is None:
      table = _derived_by_id[closed] = {}
  except TypeError:
    table = {}
  hit = table.get(ids)
  if hit is not None and all(a is b for a, b in zip(hit[0], in_sh)):
    return hit[1]
  mesh = _mesh_of(in_sh) or _constraint_mesh_of(closed)
  out = None
  if mesh is not None:
    specs = _in_specs(mesh, closed, in_sh, [len(x.aval.shape) if s is not None else 0
                                            for s, x in zip(in_sh, leaves)])
    out = [_intern(_sh.NamedSharding(mesh, _types.to_spec(d)))
           for d in _derived_specs(mesh, closed, specs)]
  if len(table) >= 64:   # (new sharding objects every call: keep the table small)
    table.clear()
  table[ids] = (tuple(in_sh), out)   # (holding the inputs' shardings keeps their ids)
  return out


def _in_specs(mesh, closed, in_sh, ranks):
  """The input specs of ``closed`` over ``mesh``: None for closed-over tracer constants
  (its first inputs) and for inputs not sharded over ``mesh``."""
  n_extra = len(closed.in_avals) - len(in_sh)
  return [None] * n_extra + [_types.spec_of(s, r)
                             if s is not None and getattr(s, "mesh", None) == mesh else None
                             for s, r in zip(in_sh, ranks)]


def typed_out_shardings(closed, leaves):
  """The sharding types of the outputs of ``closed`` traced on ``leaves`` (Arrays or
  ShapeDtypeStructs) as ``eval_shape`` reports them: one NamedSharding over the abstract
  mesh per output where the inputs' (or a constraint's) mesh has Explicit axes, as JAX's
  avals carry them; else None per output."""
  in_sh = [getattr(x, "sharding", None)
           if isinstance(x, _sharded.ShardedArrayImpl) or type(x).__name__ == "ShapeDtypeStruct"
           else None for x in leaves]
  in_sh = [s if isinstance(s, _sh.NamedSharding) else None for s in in_sh]
  mesh = _mesh_of(in_sh) or _constraint_mesh_of(closed)
  n = len(closed.out_avals)
  if mesh is None or not mesh.abstract_mesh.explicit_axes:
    return [None] * n
  derived = _derived_specs(mesh, closed,
                           _in_specs(mesh, closed, in_sh, [len(x.shape) if s is not None else 0
                                                           for s, x in zip(in_sh, leaves)]))
  am = mesh.abstract_mesh
  return [_sh.NamedSharding(am, _types.to_spec(d)._normalized_spec_for_aval(len(a.shape)))
          for d, a in zip(derived, closed.out_avals)]


def _check_committed(x, s):
  """A committed sharded input must already be laid out as ``in_shardings`` says."""
  if not isinstance(x, _sharded.ShardedArrayImpl) or s is None:
    return
  have = x._sharding
  if have == s:
    return
  nd = len(x.aval.shape)
  if (isinstance(s, _sh.NamedSharding) and isinstance(have, _sh.NamedSharding)
      and s.mesh == have.mesh and _types.spec_of(s, nd) == _types.spec_of(have, nd)):
    return
  raise ValueError(
      f"Sharding passed to jit does not match the sharding on the respective arg. Got jit "
      f"sharding: {s},\narg sharding: {have} for arg type: {x._typed_aval().str_short()}")


class ShardedJit:
  """``jit(f, in_shardings=, out_shardings=)`` with multi-device shardings: the jitted
  function (``inner``) runs globally; inputs and outputs are laid out as the shardings
  say (see the module docstring).  Under a trace the call is the inner jit's."""

  def __init__(self, inner, in_shardings, out_shardings):
    functools.update_wrapper(self, inner._fun, updated=())
    self._inner = inner
    self._in = in_shardings
    self._out = out_shardings

  def __getattr__(self, name):
    return getattr(self._inner, name)

  def __get__(self, obj, objtype=None):
    if obj is None:
      return self
    import types
    return types.MethodType(self, obj)

  def __repr__(self):
    return repr(self._inner)

  def __call__(self, *args, **kwargs):
    if core.current_interpreter() is not core.eval_interpreter:
      return self._inner(*args, **kwargs)
    args = list(args)
    if self._in is not None:
      # in_shardings cover the dynamic positional arguments (static ones are left out)
      n = len(args)
      static = {i + n if i < 0 else i for i in (self._inner._opts.static_argnums or ())}
      dyn_idx = [i for i in range(n) if i not in static]
      dyn = tuple(args[i] for i in dyn_idx)
      flat_in = _flat_prefix(self._in, dyn, "in_shardings", nargs=len(dyn))
      leaves, tree = tree_util.tree_flatten(dyn)
      placed = []
      typed_ctx = _explicit_context()
      for x, s in zip(leaves, flat_in):
        _check_committed(x, s)
        if s is None or isinstance(x, _sharded.ShardedArrayImpl) or (
            typed_ctx and _names_explicit(s)):
          placed.append(x)   # (under an Explicit context mesh an unsharded value's type
          continue           # stays unsharded, as JAX's)
        placed.append(_lay_out(x if isinstance(x, ArrayImpl) else _asarray(x), s))
      for i, v in zip(dyn_idx, tree.unflatten(placed)):
        args[i] = v
    out = self._inner(*args, **kwargs)
    if self._out is None:
      return out
    flat_out = _flat_prefix(self._out, out, "out_shardings")
    leaves, tree = tree_util.tree_flatten(out)
    return tree.unflatten([_lay_out(o, s) for o, s in zip(leaves, flat_out)])


def _explicit_context():
  m = _sh.get_mesh()
  return m is not None and not m.empty and bool(m.abstract_mesh.explicit_axes)


def _names_explicit(s):
  mesh = getattr(s, "mesh", None)
  if mesh is None:
    return False
  explicit = set(mesh.abstract_mesh.explicit_axes)
  return any(n in explicit for d in _types.spec_of(s, len(s.spec)) for n in d)


def _asarray(x):
  from pyjax._src.numpy.array_constructors import asarray
  return asarray(x)


def reshard(xs, out_shardings):
  """Lay ``xs`` (a pytree) out as ``out_shardings`` (a prefix of it: NamedShardings, or
  PartitionSpecs under a context mesh).  Eagerly the result is a new sharded Array;
  under a trace the value passes through a ``sharding_constraint`` equation, whose
  sharding the outputs of the enclosing jit take.

  Differs from JAX: the equation is ``sharding_constraint``, not ``reshard``."""
  leaves, tree = tree_util.tree_flatten(xs)
  try:
    flat = tree_util.broadcast_prefix(out_shardings, xs,
                                      is_leaf=lambda s: s is None or _is_spec(s))
  except ValueError as e:
    raise ValueError(f"reshard out_shardings must be a tree prefix of the value: {e}") from None
  outs = []
  for x, s in zip(leaves, flat):
    if _is_spec(s):
      s = spec_to_named(s)
    if not isinstance(s, (_sh.NamedSharding, SingleDeviceSharding)):
      raise TypeError(f"reshard out_shardings leaves must be NamedSharding or PartitionSpec, "
                      f"got {s!r}")
    if isinstance(s, _sh.NamedSharding):
      from pyjax._src.lax.sharding import _on_context_mesh
      s = _on_context_mesh(s)   # (over the context's AbstractMesh: on its mesh)
    if isinstance(x, core.Tracer):
      from pyjax._src.lax.sharding import sharding_constraint_p, _EMPTY_MESH
      outs.append(sharding_constraint_p.bind(x, sharding=s, layout=None,
                                             context_mesh=_EMPTY_MESH,
                                             unconstrained_dims=frozenset()))
    else:
      x = x if isinstance(x, ArrayImpl) else _asarray(x)
      outs.append(_sharded.put_sharded(x, s) if _sharded.is_multi_device(s)
                  else _lay_single(x, s))
  return tree.unflatten(outs)


def _lay_single(x, s):
  from pyjax._src.api_device import device_put
  return device_put(x, s)


# --- auto_axes / explicit_axes ---------------------------------------------------------------
def _switch_mesh(axes, axis_type, shardings=()):
  """(current mesh, the mesh with ``axes`` turned ``axis_type``, axes) or None without a
  context mesh or a sharding's mesh."""
  cur = _sh.get_mesh()
  if cur is None or cur.empty:
    cur = next((s.mesh for s in _leaves(shardings)
                if isinstance(s, _sh.NamedSharding) and isinstance(s.mesh, _sh.Mesh)), None)
    if cur is None:
      return None
  axes = tuple(cur.axis_names) if axes is None else (axes if isinstance(axes, tuple)
                                                      else (axes,))
  for a in axes:
    if dict(zip(cur.axis_names, cur.axis_types)).get(a) == _sh.AxisType.Manual:
      raise NotImplementedError("Going from `Manual` AxisType to `Auto` or `Explicit` "
                                "AxisType is not allowed.")
  types = tuple(axis_type if n in axes else t for n, t in zip(cur.axis_names, cur.axis_types))
  return cur, _sh.Mesh(cur.devices, cur.axis_names, types), axes


def _to_mesh(x, mesh):
  """``x`` (a sharded Array over a mesh of the same devices) typed over ``mesh``: the same
  buffers, the sharding's mesh swapped."""
  if not isinstance(x, _sharded.ShardedArrayImpl):
    return x
  s = x._sharding
  if not isinstance(s, _sh.NamedSharding) or s.mesh == mesh or (
      s.mesh.devices.shape != mesh.devices.shape):
    return x
  return _sharded.from_shards(x.aval, _sh.NamedSharding(mesh, s.spec), x._shards)


def _required(kwargs, given, name):
  if given is not None:
    return given
  if name in kwargs:
    return kwargs.pop(name)
  raise TypeError(f"Missing required keyword argument: '{name}'")


def auto_axes(f=None, /, *, axes=None, out_sharding=None):
  """Run ``f`` with the context mesh's ``axes`` (all by default) turned ``Auto`` (their
  shardings leave the types); its outputs are laid out as ``out_sharding`` (given here or
  as a keyword of the call) on the original mesh."""
  if f is None:
    return lambda g: auto_axes(g, axes=axes, out_sharding=out_sharding)

  @functools.wraps(f)
  def wrapped(*args, **kwargs):
    out_s = _required(kwargs, out_sharding, "out_sharding")
    info = _switch_mesh(axes, _sh.AxisType.Auto, out_s)
    if info is None or set(info[0].abstract_mesh.auto_axes) == set(info[2]):
      return f(*args, **kwargs)
    cur, new, _ = info
    with _sh.use_mesh(new):
      out = f(*tree_util.tree_map(lambda a: _to_mesh(a, new), args), **kwargs)
    with _sh.use_mesh(cur):
      return reshard(tree_util.tree_map(lambda o: _to_mesh(o, cur), out), out_s)
  return wrapped


def explicit_axes(f=None, /, *, axes=None, in_sharding=None):
  """Run ``f`` with the context mesh's ``axes`` (all by default) turned ``Explicit``, its
  arguments laid out as ``in_sharding`` (given here or as a keyword of the call); outputs
  keep their layouts on the original mesh."""
  if f is None:
    return lambda g: explicit_axes(g, axes=axes, in_sharding=in_sharding)

  @functools.wraps(f)
  def wrapped(*args, **kwargs):
    in_s = _required(kwargs, in_sharding, "in_sharding")
    info = _switch_mesh(axes, _sh.AxisType.Explicit)
    if info is None:
      raise ValueError("Context mesh cannot be empty. Please use `jax.set_mesh` API to enter "
                       "into a mesh context when using `explicit_axes` API.")
    cur, new, _ = info
    with _sh.use_mesh(new):
      out = f(*reshard(args, in_s), **kwargs)
    return tree_util.tree_map(lambda o: _to_mesh(o, cur), out)
  return wrapped


# --- jax.typeof inside jit ---------------------------------------------------------------
_typed_traces = weakref.WeakKeyDictionary()   # StagingInterpreter -> (mesh, {var: spec})


def note_trace(values, tracers):
  """At the start of a jit trace: remember the sharding types of the arguments that are
  sharded Arrays (``values``, one per argument tracer in ``tracers``)."""
  sharded = [(v, t) for v, t in zip(values, tracers)
             if isinstance(v, _sharded.ShardedArrayImpl)]
  if not sharded:
    return
  mesh = _mesh_of([v._sharding for v, _ in sharded])
  if mesh is None:
    return
  interp = core.current_interpreter()
  env = {t._var: _types.spec_of(v._sharding, len(v.aval.shape)) for v, t in sharded
         if getattr(v._sharding, "mesh", None) == mesh and getattr(t, "_trace", None) is interp}
  try:
    _typed_traces[interp] = (mesh, env)
  except TypeError:
    pass


def check_trace():
  """At the end of a jit trace of sharded arguments: derive every equation's sharding
  type, raising ``ShardingTypeError`` where JAX does (before anything runs)."""
  interp = core.current_interpreter()
  try:
    hit = _typed_traces.get(interp)
  except TypeError:
    return
  if hit is not None:
    mesh, env = hit
    _types.walk_eqns(_types._Ctx(mesh), interp.eqns, dict(env))


def typeof_tracer(x):
  """``jax.typeof`` of a jit tracer whose trace started from sharded arguments: its aval
  with the sharding type the rules derive from the equations recorded so far (None when
  the trace has no sharded arguments)."""
  interp = getattr(x, "_trace", None)
  try:
    hit = _typed_traces.get(interp)
  except TypeError:
    return None
  var = getattr(x, "_var", None)
  if hit is None or var is None:
    return None
  mesh, env = hit
  read = _types.walk_eqns(_types._Ctx(mesh), interp.eqns, dict(env))
  a = x.aval
  return _sharded.TypedShapedArray(a.shape, a.dtype, a.weak_type,
                                   _sh.NamedSharding(mesh, _types.to_spec(read(var))))
