"""``jax.shard_map``: one program per device, run on every device's stream in parallel.

``shard_map(f, mesh=, in_specs=, out_specs=)(*args)`` splits each argument by its
``PartitionSpec`` over the mesh, traces ``f`` once on the per-device (shard) shapes -- the
mesh axes bound as named axes, so collectives are recorded as equations -- and runs the
traced program on each device's own stream (its worker thread; the native code releases
the GIL, so devices compute in parallel).  Collectives meet in the collective runtime
(``runtime/collectives.py``), which folds in rank order: results are deterministic and
equal to the same collectives over a ``vmap`` axis.  Outputs are sharded Arrays (one
buffer per device, still being computed when returned) laid out by ``out_specs``.
The traced program is compiled once for all devices where the backend allows it
(``_executables``), and eager traces are cached on the function, its specs, the argument
avals and the mesh (``_trace_cache``): a ``shard_map`` made anew for each call traces and
compiles once.

``shard_map`` binds one ``shard_map`` primitive, so it works under ``jit`` (the primitive
runs as a host step of the compiled program).

``check_vma=True`` (the default) checks, after tracing, that no output may vary along a
manual mesh axis its ``out_specs`` leaves out (``shard_map_vma.py``: a static walk of the
body, as pyjax's avals carry no varying-manual-axes types), raising JAX's ValueError;
with ``check_vma=False`` such an output takes each device's own value unchecked.

Differs from JAX: no varying-manual-axes types on values (``jax.typeof`` shows no
``{V:...}``), so the vma is inferred only for the out_specs check (a few bodies JAX's
types reject pass it: see ``shard_map_vma.py``); vmap batches the body (the vmapped axis is
unsharded); grad/vjp transpose the body as JAX did before varying-axis types (see
"differentiation" below); ``axis_names`` naming a subset of the mesh axes runs the other
axes' devices as replicas.
"""
from __future__ import annotations

import functools
import itertools
import math
import threading
import weakref

import numpy as np

from pyjax._src import config as _config
from pyjax._src import core, tree_util
from pyjax._src.avals import ShapedArray
from pyjax._src.interpreters import batching, staging
from pyjax._src.runtime import collectives as _collectives
from pyjax._src.runtime import devices as _devices
from pyjax._src.runtime import stream as _stream
from pyjax._src.runtime.array import ArrayImpl
from pyjax._src.runtime import sharded_array as _sharded
from pyjax._src.runtime.stream import PendingBuffer
from pyjax._src import sharding as _sharding
from pyjax._src.sharding import NamedSharding, PartitionSpec


class _InferType:
  def __repr__(self):
    return "Infer"


Infer = _InferType()


# --- specs ---------------------------------------------------------------------------------
def _spec_names(spec):
  out = []
  for e in spec:
    for n in (e if isinstance(e, tuple) else (e,)):
      if isinstance(n, str):
        out.append(n)
  return out


def _factor(mesh_shape, entry):
  return math.prod(mesh_shape[n] for n in (entry if isinstance(entry, tuple) else (entry,))
                   if isinstance(n, str))


def _shard_aval(aval, spec, mesh_shape, what, i):
  if len(spec) > len(aval.shape):
    raise ValueError(f"shard_map {what}[{i}] has a PartitionSpec {spec} of length "
                     f"{len(spec)}, but the corresponding argument has rank "
                     f"{len(aval.shape)} (shape {aval.shape})")
  shape = list(aval.shape)
  for d, e in enumerate(spec):
    f = _factor(mesh_shape, e)
    if shape[d] % f:
      raise ValueError(f"shard_map applied to the function was given an argument "
                       f"{what}[{i}] of shape {aval.str_short()} with spec {spec}, but "
                       f"dimension {d} of size {shape[d]} is not evenly divisible by the "
                       f"total mesh axis size {f} of {e!r}")
    shape[d] //= f
  return ShapedArray(tuple(shape), aval.dtype, aval.weak_type)


def _global_aval(aval, spec, mesh_shape):
  shape = list(aval.shape)
  for d, e in enumerate(spec):
    shape[d] *= _factor(mesh_shape, e)
  return ShapedArray(tuple(shape), aval.dtype, aval.weak_type)


def _as_spec(s):
  if isinstance(s, PartitionSpec):
    return s
  if s is None:
    return PartitionSpec()
  raise TypeError(f"shard_map specs must be PartitionSpecs (or None), got {s!r}")


def _is_spec_leaf(x):
  return x is None or isinstance(x, PartitionSpec)


def _check_spec_axes(spec, mesh, what):
  for n in _spec_names(spec):
    if n not in mesh.axis_names:
      raise ValueError(f"shard_map {what} refers to the axis name {n!r}, which is not in "
                       f"the mesh (axis names {tuple(mesh.axis_names)})")


def _explicit_entries(spec, explicit, ndim):
  out = []
  for e in tuple(spec) + (None,) * (ndim - len(spec)):
    names = tuple(n for n in (e if isinstance(e, tuple) else (e,))
                  if isinstance(n, str) and n in explicit)
    out.append(names)
  return out


def _check_explicit_inputs(mesh, leaves, avals, specs):
  """With Explicit mesh axes, an argument's sharding type must be what ``in_specs``
  says (JAX's ValueError); traced arguments carry no sharding type in pyjax."""
  explicit = {n for n, t in zip(mesh.axis_names, mesh.axis_types) if t == _sharding.AxisType.Explicit}
  if not explicit:
    return
  for x, a, s in zip(leaves, avals, specs):
    if isinstance(x, core.Tracer):
      continue
    sh = getattr(x, "sharding", None) if isinstance(x, ArrayImpl) else None
    have = (sh.spec if isinstance(sh, NamedSharding) and sh.mesh == mesh
            else PartitionSpec(*(None,) * len(a.shape)))
    nd = len(a.shape)
    if _explicit_entries(have, explicit, nd) != _explicit_entries(s, explicit, nd):
      raise ValueError(
          f"in_specs passed to shard_map: {s} does not match the specs of the input: "
          f"{have} for arg: {a.str_short()}. `in_specs` is an optional argument so you can "
          "omit specifying it and shard_map will infer the in_specs from the arguments. If "
          "you want to reshard your inputs, you can use `jax.reshard` on the arguments and "
          "then pass those args to shard_map.")


# --- the primitive -------------------------------------------------------------------------
shard_map_p = core.Primitive("shard_map")
shard_map_p.multiple_results = True


@shard_map_p.def_abstract_eval
def _shard_map_abstract(*avals, jaxpr, mesh, in_specs, out_specs, manual_axes, check_vma):
  shape = dict(mesh.shape)
  return [_global_aval(a, s, shape) for a, s in zip(jaxpr.out_avals, out_specs)]


_exe_cache = weakref.WeakKeyDictionary()   # ClosedJaxpr -> {device or backend: executable}
_exe_lock = threading.Lock()


def _executables(jaxpr, devices):
  """The per-device programs of ``jaxpr`` for ``devices`` (in order), as functions of
  the input buffers.  A backend whose
  executables run on any of its devices, concurrently (``supports("shared_executables")``:
  the CPU's; each concurrent native call takes its own scratch arena), compiles the program
  once and every device runs that one executable -- only placement differs.  Otherwise one
  executable is compiled per device."""
  backend = getattr(devices[0], "_backend", None)
  if backend is None:
    backend = _devices.get_backend(devices[0].platform)
  if backend.supports("shared_executables"):
    exe = _executable(jaxpr, backend, devices[0])
    # the run counts as one call of the executable (its tiering), not one per device
    rest = getattr(exe, "call_uncounted", exe.fn)
    return [exe.fn] + [rest] * (len(devices) - 1)
  return [_executable(jaxpr, d, d).fn for d in devices]


def _executable(jaxpr, key, device):
  """``jaxpr`` compiled for ``device``, cached under ``(jaxpr, key)``."""
  with _exe_lock:
    per = _exe_cache.get(jaxpr)
    if per is None:
      per = _exe_cache[jaxpr] = {}
    exe = per.get(key)
  if exe is None:
    from pyjax._src.compiler import compile_for_device
    exe = compile_for_device(jaxpr, device, "shmap_body")
    with _exe_lock:
      exe = per.setdefault(key, exe)
  return exe


def _device_buffers(x, sharding, devices):
  """The per-device input buffers of ``x`` laid out by ``sharding`` (in ``devices``
  order): a sharded Array already laid out so gives its shards' buffers (perhaps still
  pending), anything else is split."""
  if isinstance(x, _sharded.ShardedArrayImpl) and x._sharding == sharding and (
      [s._device for s in x._shards] == devices):
    return [s._buf for s in x._shards]
  if type(x) is ArrayImpl:
    b = x._buf if type(x._buf) is np.ndarray else x._data()
  elif isinstance(x, ArrayImpl):
    b = x._data()
  else:
    b = np.asarray(x)
  idx = sharding.devices_indices_map(b.shape)
  return [b[idx[d]] for d in devices]


class _Run:
  """Bookkeeping of one execution: when every device program has ended, the run's
  meetings are cleared from the transport."""

  def __init__(self, n, transport=None):
    self.transport = transport or _collectives.transport()
    new_id = getattr(self.transport, "new_run_id", _collectives.new_run_id)
    self.id = new_id()
    self.left = n
    self.lock = threading.Lock()

  def ended(self):
    with self.lock:
      self.left -= 1
      last = self.left == 0
    if last:
      self.transport.finish(self.id)


def _device_work(fn, run, ctx, device, axis_pairs, out_avals):
  def work(*bufs):
    try:
      with _collectives.device_context(ctx), _devices.default_device_ctx(device), \
          batching.extend_axis_env(axis_pairs):
        outs = fn(*bufs)
        res = []
        for o, a in zip(outs, out_avals):
          if type(o) is PendingBuffer:
            o = o.result()
          if type(o) is not np.ndarray or o.dtype != a.dtype:
            o = np.asarray(o, dtype=a.dtype)
          res.append(o)
        return res
    except BaseException as e:
      run.transport.abort(run.id, e)
      raise
    finally:
      run.ended()
  work.__name__ = "shard_map_device_program"
  return work


def _run_threads(works, per_device_bufs, nout):
  """Run each device's work on a thread of its own (used when the caller is itself a
  stream worker, whose streams run submitted work synchronously); returns, per device,
  the outputs as completed PendingBuffers."""
  tasks = []
  for w, bufs in zip(works, per_device_bufs):
    tasks.append(_stream.Task(w, bufs))
  for t in tasks:
    t.claim.acquire()

  def run(t):
    _stream._tls.worker = True
    t.run()
  threads = [threading.Thread(target=run, args=(t,), daemon=True) for t in tasks]
  for th in threads:
    th.start()
  for th in threads:
    th.join()
  return [[PendingBuffer(t, i) for i in range(nout)] for t in tasks]


def _shard_map_impl(*args, jaxpr, mesh, in_specs, out_specs, manual_axes, check_vma):
  devices = list(mesh.devices.flat)
  coords = list(np.ndindex(*mesh.devices.shape))
  names = tuple(mesh.axis_names)
  sizes = tuple(mesh.devices.shape)
  axis_pairs = [(n, s) for n, s in zip(names, sizes) if n in manual_axes]
  transport = _collectives.transport_for(devices)
  procs = None
  if transport is not _collectives.transport():
    # a mesh over several processes: this process runs its own devices' programs; the
    # collectives' members on other processes are reached through the transport (MPI)
    procs = np.vectorize(lambda d: d.process_index, otypes=[int])(mesh.devices)
    me = _devices.process_index()
    local = [k for k, d in enumerate(devices) if d.process_index == me]
    devices = [devices[k] for k in local]
    coords = [coords[k] for k in local]
  in_bufs = []
  for x, spec in zip(args, in_specs):
    in_bufs.append(_device_buffers(x, NamedSharding(mesh, spec), devices))
  per_device = [[bufs[k] for bufs in in_bufs] for k in range(len(devices))]
  run = _Run(len(devices), transport)
  out_avals = list(jaxpr.out_avals)
  works = []
  fns = _executables(jaxpr, devices)
  for fn, dev, c in zip(fns, devices, coords):
    ctx = _collectives.DeviceContext(run.id, names, sizes, c, dev, run.transport, procs)
    works.append(_device_work(fn, run, ctx, dev, axis_pairs, out_avals))
  nout = len(out_avals)
  if _stream.in_worker():
    pending = _run_threads(works, per_device, nout)
  else:
    pending = [dev.stream.submit(w, bufs, nout)
               for dev, w, bufs in zip(devices, works, per_device)]
  mesh_shape = dict(mesh.shape)
  outs = []
  for i, (a, spec) in enumerate(zip(out_avals, out_specs)):
    sharding = NamedSharding(mesh, spec)
    shard_aval = ShapedArray(a.shape, a.dtype, a.weak_type)
    shards = [ArrayImpl(pending[k][i], shard_aval, dev, True) for k, dev in enumerate(devices)]
    outs.append(_sharded.from_shards(_global_aval(a, spec, mesh_shape), sharding, shards))
  return outs


shard_map_p.def_impl(_shard_map_impl)


def _shard_map_batch(axis_data, args, dims, *, jaxpr, mesh, in_specs, out_specs, manual_axes,
                     check_vma):
  """vmap of shard_map: the vmapped axis is not sharded, so it enters every device's
  program whole, in front (specs gain a leading None), and the body is vmapped."""
  nm = batching.not_mapped
  args = [x if d is nm else batching.bdim_at_front(x, d, axis_data.size)
          for x, d in zip(args, dims)]
  in_dims = [nm if d is nm else 0 for d in dims]
  pairs = [(n, s) for n, s in zip(mesh.axis_names, mesh.devices.shape) if n in manual_axes]
  with batching.extend_axis_env(pairs):
    new, _ = batching.batch_jaxpr_axes(jaxpr, axis_data, in_dims,
                                       out_dims=[0] * len(jaxpr.out_avals))
  new_in = tuple(s if d is nm else PartitionSpec(None, *s) for s, d in zip(in_specs, in_dims))
  new_out = tuple(PartitionSpec(None, *s) for s in out_specs)
  outs = shard_map_p.bind(*args, jaxpr=new, mesh=mesh, in_specs=new_in, out_specs=new_out,
                          manual_axes=manual_axes, check_vma=check_vma)
  return outs, [0] * len(outs)


batching.axis_primitive_batchers[shard_map_p] = _shard_map_batch


# --- differentiation -----------------------------------------------------------------------
# JVP: one shard_map of the body's JVP (tangents split as their primals).  Under linearize
# (grad) the primal shard_map runs now and the JVP shard_map -- primals as residuals -- is
# the tangent equation; its transpose is a shard_map of the body's backward pass.  As in
# JAX before varying-axis types, an output cotangent is divided by the size of the mesh
# axes its out_spec leaves out (the value is replicated there), collectives transpose as
# their rules say (psum to psum, all_gather to psum_scatter, ppermute to its inverse),
# and an input cotangent is summed (psum) over the axes its in_spec leaves out.
def _manual_pairs(mesh, manual_axes):
  return [(n, s) for n, s in zip(mesh.axis_names, mesh.devices.shape) if n in manual_axes]


def _shard_map_jvp(interp, primals, tangents, *, jaxpr, mesh, in_specs, out_specs,
                   manual_axes, check_vma):
  from pyjax._src.interpreters import ad
  nz = [type(t) is not ad.Zero for t in tangents]
  nz_ts = [ad.instantiate_zeros(t) for t, m in zip(tangents, nz) if m]
  n = len(primals)
  t_avals = [ad.tangent_aval(a) for a, m in zip(jaxpr.in_avals, nz) if m]
  mask_cell = []

  def jvp_body(*args):
    ps = args[:n]
    it = iter(args[n:])
    ts = [next(it) if m else ad.Zero(ad.tangent_aval(a))
          for a, m in zip(jaxpr.in_avals, nz)]
    out_p, out_t = ad.jvp_flat(lambda *xs: core.eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *xs),
                               list(ps), ts)
    mask = [type(t) is not ad.Zero for t in out_t]
    mask_cell.append(mask)
    return list(out_p) + [t for t, m in zip(out_t, mask) if m]

  def build():
    with core.set_interpreter(interp.parent), batching.extend_axis_env(
        _manual_pairs(mesh, manual_axes)):
      closed, tconsts = staging.trace_flat(jvp_body, list(jaxpr.in_avals) + t_avals)
    return (closed, tconsts, mask_cell[-1]), not tconsts

  # the same derived jaxpr object for the same shard_map: its per-device executables
  # are compiled once (eager grad in a loop)
  closed, tconsts, mask = ad.memo(jaxpr, ("shard_map_jvp", tuple(nz), mesh, manual_axes),
                                  build)
  params = dict(jaxpr=closed, mesh=mesh, manual_axes=manual_axes, check_vma=check_vma,
                in_specs=(PartitionSpec(),) * len(tconsts) + tuple(in_specs)
                + tuple(s for s, m in zip(in_specs, nz) if m),
                out_specs=tuple(out_specs) + tuple(s for s, m in zip(out_specs, mask) if m))
  n_out = len(jaxpr.out_avals)
  if interp.tangent_interp is None:
    with core.set_interpreter(interp.parent):
      outs = shard_map_p.bind(*tconsts, *primals, *nz_ts, **params)
    out_p = outs[:n_out]
  else:
    with core.set_interpreter(interp.parent):
      out_p = shard_map_p.bind(*primals, jaxpr=jaxpr, mesh=mesh, in_specs=in_specs,
                               out_specs=out_specs, manual_axes=manual_axes,
                               check_vma=check_vma)
    with core.set_interpreter(interp.rule_interp):
      outs = shard_map_p.bind(*tconsts, *primals, *nz_ts, **params)
  it = iter(outs[n_out:])
  out_t = [next(it) if m else ad.Zero(ad.tangent_aval(core.get_aval(p)))
           for m, p in zip(mask, out_p)]
  return list(out_p), out_t


def _unmentioned(mesh, manual_axes, spec):
  named = set(_spec_names(spec))
  return tuple(n for n in mesh.axis_names if n in manual_axes and n not in named)


def _shard_map_transpose(cts, *args, jaxpr, mesh, in_specs, out_specs, manual_axes,
                         check_vma):
  from pyjax._src.interpreters import ad
  from pyjax._src.lax.parallel import psum
  sizes = dict(mesh.shape)
  lin = [ad.is_undefined_primal(a) for a in args]
  res = [a for a in args if not ad.is_undefined_primal(a)]
  ct_nz = [type(c) is not ad.Zero for c in cts]
  nz_cts = []
  for c, spec in zip(cts, out_specs):
    if type(c) is ad.Zero:
      continue
    k = math.prod(sizes[n] for n in _unmentioned(mesh, manual_axes, spec))
    nz_cts.append(c / np.asarray(k, c.dtype) if k > 1 else c)

  def bwd(*xs):
    r = iter(xs[:len(res)])
    c = iter(xs[len(res):])
    full_cts = [next(c) if m else ad.Zero(ad.tangent_aval(a))
                for m, a in zip(ct_nz, jaxpr.out_avals)]
    full_args = [ad.UndefinedPrimal(a) if m else next(r)
                 for a, m in zip(jaxpr.in_avals, lin)]
    cts_in = ad.backward_pass(jaxpr.jaxpr, jaxpr.consts, full_cts, full_args)
    outs = []
    for ct, spec, m in zip(cts_in, in_specs, lin):
      if not m:
        continue
      ct = ad.instantiate_zeros(ct)
      axes = _unmentioned(mesh, manual_axes, spec)
      outs.append(psum(ct, axes) if axes else ct)
    return outs

  in_avals = ([a for a, m in zip(jaxpr.in_avals, lin) if not m]
              + [a for a, m in zip(jaxpr.out_avals, ct_nz) if m])

  def build():
    with batching.extend_axis_env(_manual_pairs(mesh, manual_axes)):
      closed, tconsts = staging.trace_flat(bwd, in_avals)
    return (closed, tconsts), not tconsts

  closed, tconsts = ad.memo(jaxpr, ("shard_map_transpose", tuple(lin), tuple(ct_nz), mesh,
                                    manual_axes, tuple(in_specs), tuple(out_specs)), build)
  outs = shard_map_p.bind(
      *tconsts, *res, *nz_cts, jaxpr=closed, mesh=mesh, manual_axes=manual_axes,
      check_vma=check_vma,
      in_specs=(PartitionSpec(),) * len(tconsts)
      + tuple(s for s, m in zip(in_specs, lin) if not m)
      + tuple(s for s, m in zip(out_specs, ct_nz) if m),
      out_specs=tuple(s for s, m in zip(in_specs, lin) if m))
  it = iter(outs)
  return [next(it) if m else None for m in lin]


def _register_ad():
  from pyjax._src.interpreters import ad
  ad.interpreter_jvps[shard_map_p] = _shard_map_jvp
  ad.primitive_transposes[shard_map_p] = _shard_map_transpose


_register_ad()


# --- the public function -------------------------------------------------------------------
# traces of eager shard_maps: function -> {(out_specs, check_vma): {(argument structure,
# avals, in_specs, mesh, manual axes, config): (jaxpr, out_tree, flat out_specs)}}; the
# same jaxpr object then finds its compiled executables in ``_exe_cache``
_trace_cache = weakref.WeakKeyDictionary()

def _context_mesh():
  m = _sharding.get_mesh()
  if m is None or m.empty:
    raise ValueError("The context mesh cannot be empty. Use `jax.set_mesh(mesh)` to enter "
                     "into a mesh context")
  return m


def shard_map(f=None, /, *, out_specs, in_specs=Infer, mesh=None, axis_names=frozenset(),
              check_vma=True):
  """Map ``f`` over shards of its arguments, one per device of ``mesh`` (the context mesh
  when None), running the per-device programs in parallel; see the module docstring for
  how pyjax runs it and what differs from JAX.  ``in_specs``/``out_specs`` are pytree
  prefixes of the arguments/outputs of PartitionSpecs; ``in_specs`` left out (``Infer``)
  takes each argument's own ``NamedSharding`` spec (replicated for other values)."""
  if f is None:
    return functools.partial(shard_map, out_specs=out_specs, in_specs=in_specs, mesh=mesh,
                             axis_names=axis_names, check_vma=check_vma)
  if not callable(f):
    raise TypeError(f"shard_map requires a callable for its first argument, but got {f} of "
                    f"type {type(f)}.")

  own_cache = {}
  try:
    out_specs_key = tree_util.tree_flatten(out_specs, is_leaf=_is_spec_leaf)
    out_specs_key = (tuple(out_specs_key[0]), out_specs_key[1])
    hash(out_specs_key)
  except TypeError:
    out_specs_key = None

  def cache_for():
    """The traces of ``f`` under these specs: shared by every ``shard_map`` of the same
    function and specs (one built in a function called repeatedly traces once), else
    this object's own."""
    if out_specs_key is None:
      return own_cache
    try:
      per_f = _trace_cache.get(f)
      if per_f is None:
        per_f = _trace_cache[f] = {}
    except TypeError:   # not weakly referenceable
      return own_cache
    return per_f.setdefault((out_specs_key, bool(check_vma)), {})

  @functools.wraps(f)
  def wrapped(*args):
    m = mesh if mesh is not None else _context_mesh()
    if isinstance(m, _sharding.AbstractMesh):
      raise ValueError("shard_map needs a concrete Mesh (with devices) to run; got an "
                       f"AbstractMesh {m}")
    manual = frozenset(axis_names) if axis_names else frozenset(m.axis_names)
    for n in manual:
      if n not in m.axis_names:
        raise ValueError(f"shard_map axis_names {sorted(manual)} must be a subset of the "
                         f"mesh axis names {tuple(m.axis_names)}")
    leaves, in_tree = tree_util.tree_flatten(args)
    if in_specs is Infer:
      flat_in = []
      for x in leaves:
        s = getattr(x, "sharding", None) if isinstance(x, ArrayImpl) else None
        flat_in.append(s.spec if isinstance(s, NamedSharding) and s.mesh == m
                       else PartitionSpec())
    else:
      specs = in_specs
      if isinstance(specs, PartitionSpec) or specs is None:
        specs = (specs,) * len(args)
      elif isinstance(specs, list):
        specs = tuple(specs)
      try:
        flat_in = tree_util.broadcast_prefix(specs, args, is_leaf=_is_spec_leaf)
      except ValueError as e:
        raise ValueError(f"shard_map in_specs {in_specs} is not a pytree prefix of the "
                         f"arguments: {e}") from None
      flat_in = [_as_spec(s) for s in flat_in]
    for s in flat_in:
      _check_spec_axes(s, m, "in_specs")
    mesh_shape = dict(m.shape)
    in_avals = [core.get_aval(x) for x in leaves]
    _check_explicit_inputs(m, leaves, in_avals, flat_in)
    key = cache = None
    if core.current_interpreter() is core.eval_interpreter and not any(
        isinstance(x, core.Tracer) for x in leaves):
      cache = cache_for()
      key = (in_tree, tuple(in_avals), tuple(flat_in), m, manual,
             _config.config.trace_state())
      hit = cache.get(key)
      if hit is not None:
        closed, out_tree, flat_out = hit
        outs = shard_map_p.bind(*leaves, jaxpr=closed, mesh=m, in_specs=tuple(flat_in),
                                out_specs=flat_out, manual_axes=manual,
                                check_vma=bool(check_vma))
        return tree_util.tree_unflatten(out_tree, outs)
    shard_avals = [_shard_aval(a, s, mesh_shape, "args", i)
                   for i, (a, s) in enumerate(zip(in_avals, flat_in))]
    out_tree_box = []

    def flat_fun(*xs):
      out = f(*tree_util.tree_unflatten(in_tree, list(xs)))
      out_leaves, out_tree = tree_util.tree_flatten(out)
      out_tree_box.append((out, out_tree))
      return out_leaves
    pairs = [(n, s) for n, s in zip(m.axis_names, m.devices.shape) if n in manual]
    with batching.extend_axis_env(pairs):
      closed, tracer_consts = staging.trace_flat(flat_fun, shard_avals)
    out, out_tree = out_tree_box[-1]
    specs = out_specs
    if isinstance(specs, list):
      specs = tuple(specs)
    try:
      flat_out = tree_util.broadcast_prefix(specs, out, is_leaf=_is_spec_leaf)
    except ValueError as e:
      raise ValueError(f"shard_map out_specs {out_specs} is not a pytree prefix of the "
                       f"outputs: {e}") from None
    flat_out = [_as_spec(s) for s in flat_out]
    for i, (s, a) in enumerate(zip(flat_out, closed.out_avals)):
      _check_spec_axes(s, m, "out_specs")
      if len(s) > len(a.shape):
        raise ValueError(f"shard_map out_specs[{i}] {s} has more entries than the rank "
                         f"{len(a.shape)} of the output (shape {a.shape})")
    all_in = (PartitionSpec(),) * len(tracer_consts) + tuple(flat_in)
    if check_vma:
      from pyjax._src.shard_map_vma import check_out_vma
      # JAX 0.10 names the function when staged (under jit), and its internal wrapper
      # ('_rem_singleton') when called eagerly
      staged = key is None
      check_out_vma(closed, m, manual, all_in, flat_out,
                    getattr(f, "__name__", str(f)) if staged else "_rem_singleton")
    if key is not None and not tracer_consts:
      cache[key] = (closed, out_tree, tuple(flat_out))
    outs = shard_map_p.bind(*tracer_consts, *leaves, jaxpr=closed, mesh=m, in_specs=all_in,
                            out_specs=tuple(flat_out), manual_axes=manual,
                            check_vma=bool(check_vma))
    return tree_util.tree_unflatten(out_tree, outs)

  return wrapped
