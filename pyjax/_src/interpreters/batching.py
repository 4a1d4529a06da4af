"""Batching (``vmap``) as an interpreter.

A ``BatchInterpreter`` (stackless, like ``ad.JVPInterpreter``) remembers its parent and its
axis (``AxisData``: size, name, spmd name).  Its tracers (``BatchTracer``) hold a value of
the parent level (``val``) and the position of the batch dimension in it (``batch_dim``,
an int, or ``not_mapped`` = None).  A tracer's aval is the per-example aval: ``val``'s aval
with the batch dimension removed.  Values that are not this interpreter's tracers are
unbatched constants to it.

Binding a primitive with no batched argument goes straight to the parent.  Otherwise the
primitive's batching rule runs with the parent current (so everything it binds is computed
eagerly, staged, or handled by an enclosing transformation) and its outputs are wrapped
again (unbatched outputs are returned as plain parent-level values).

Rule tables (plain dicts keyed by primitive, filled next to each primitive):

* ``primitive_batchers[p](args, dims, **params) -> (out, out_dim)`` — JAX's signature.
  ``args`` are parent-level values, ``dims`` one batch dim per arg (int or
  ``not_mapped``; at least one is mapped).  For ``p.multiple_results`` the rule returns
  ``(outs, out_dims)`` (lists).  The rule may put the output batch dimension anywhere.
* ``axis_primitive_batchers[p](axis_data, args, dims, **params)`` — same, for rules that
  need the axis (its ``size`` to broadcast an unbatched value, its ``name`` for
  collectives): higher-order primitives (``jit``, ``cond``, ``scan``, ``while``, ...).
  When no argument is batched, such a primitive still reaches its rule if a jaxpr in its
  params uses this interpreter's axis name (``axis_names_in_jaxpr``); otherwise it is
  bound on the parent unchanged.
* ``collective_batchers[p](axis_data, args, dims, **params)`` plus
  ``axis_name_getters[p](params) -> names``: collectives (``psum``, ``axis_index``, ...).
  The rule runs whenever the primitive names this interpreter's axis, even if no argument
  is batched; when it names only other axes, ``primitive_batchers[p]`` (passing the batch
  dimension through) handles batched arguments.

Helpers for writing rules: ``moveaxis``, ``bdim_at_front``, ``broadcast``,
``matchaxis``, ``bdim_to``, ``defvectorized`` (unary/elementwise ops that commute with the
batch dim), ``defbroadcasting`` (n-ary elementwise ops with lax's rank-0/size-1
broadcasting), ``shift_axes``.  For higher-order primitives:

* ``batch_jaxpr(closed_jaxpr, axis_data, in_batched, instantiate) -> (closed, out_batched)``
  — batched inputs/outputs carry the batch dimension at 0; ``instantiate`` (bool or one
  bool per output) forces outputs to be batched (broadcasting unbatched ones).
* ``batch_jaxpr_axes(closed_jaxpr, axis_data, in_dims, out_dims=None) -> (closed,
  out_dims)`` — any input dims; outputs keep the dims the rules produced unless
  ``out_dims`` (int or not_mapped per output, or None) says where to put them.

``axis_data`` may be an ``AxisData`` or a plain int size.  Both helpers cache their
result per (jaxpr, axis, dims) so re-batching an unchanged jaxpr is a dict look-up.

Adding a rule for a new primitive ``foo_p`` (next to the primitive)::

    def _foo_batch(args, dims, *, param):
      x, = args; d, = dims
      x = batching.moveaxis(x, d, 0)          # or work with d directly
      return foo_p.bind(x, param=...), 0
    batching.primitive_batchers[foo_p] = _foo_batch
"""
from __future__ import annotations

import contextlib
import threading
import weakref

import numpy as np

from pyjax._src import core
from pyjax._src.avals import ShapedArray

not_mapped = None

primitive_batchers = {}
axis_primitive_batchers = {}
collective_batchers = {}
axis_name_getters = {}
interpreter_batchers = {}   # p -> rule(interp, args, dims, **params): custom_jvp/vjp calls


class AxisData:
  """The axis a BatchInterpreter maps over: ``size``, ``name`` (or None) and
  ``spmd_name`` (accepted, no effect on one device)."""
  __slots__ = ("name", "size", "spmd_name")

  def __init__(self, name, size, spmd_name=None):
    self.name = name
    self.size = size
    self.spmd_name = spmd_name

  def key(self):
    return (self.name, self.size, self.spmd_name)

  def __repr__(self):
    return f"AxisData(name={self.name!r}, size={self.size}, spmd_name={self.spmd_name!r})"


def as_axis_data(axis_data):
  if isinstance(axis_data, AxisData):
    return axis_data
  return AxisData(None, int(axis_data))


# --- tracers ----------------------------------------------------------------------------
def _unbatched_aval(aval, d):
  if d is not_mapped:
    return aval
  s = aval.shape
  return ShapedArray(s[:d] + s[d + 1:], aval.dtype, aval.weak_type)


def batched_aval(aval, d, size):
  """``aval`` with a batch dimension of ``size`` inserted at ``d`` (unchanged for
  not_mapped)."""
  if d is not_mapped:
    return aval
  s = aval.shape
  return ShapedArray(s[:d] + (size,) + s[d:], aval.dtype, aval.weak_type)


class BatchTracer(core.Tracer):
  """A per-example value: ``val`` (a parent-level value) with its batch dimension at
  ``batch_dim``."""
  __slots__ = ("val", "batch_dim", "_aval")

  def __init__(self, trace, val, batch_dim):
    self._trace = trace
    self.val = val
    self.batch_dim = batch_dim
    self._aval = None

  @property
  def aval(self):
    a = self._aval
    if a is None:
      a = self._aval = _unbatched_aval(core.get_aval(self.val), self.batch_dim)
    return a

  def __repr__(self):
    return (f"VmapTracer(aval={self.aval.str_short(short_dtypes=False)}, "
            f"batched={core.get_aval(self.val).str_short(short_dtypes=False)})")

  def __str__(self):
    return self.__repr__()


# --- the interpreter --------------------------------------------------------------------
def _jaxprs_of_params(params):
  for v in params.values():
    for e in (v if type(v) in (tuple, list) else (v,)):
      if isinstance(e, core.ClosedJaxpr):
        yield e.jaxpr
      elif isinstance(e, core.Jaxpr):
        yield e


_names_cache = weakref.WeakKeyDictionary()


def axis_names_in_jaxpr(jaxpr):
  """The named axes used by collectives anywhere in ``jaxpr`` (a Jaxpr or ClosedJaxpr),
  nested jaxprs included."""
  if isinstance(jaxpr, core.ClosedJaxpr):
    jaxpr = jaxpr.jaxpr
  hit = _names_cache.get(jaxpr)
  if hit is not None:
    return hit
  names = set()
  for eqn in jaxpr.eqns:
    getter = axis_name_getters.get(eqn.primitive)
    if getter is not None:
      names.update(n for n in getter(eqn.params) if not isinstance(n, int))
    for sub in _jaxprs_of_params(eqn.params):
      names.update(axis_names_in_jaxpr(sub))
  names = frozenset(names)
  _names_cache[jaxpr] = names
  return names


class BatchInterpreter(core.Interpreter):
  """Vectorizes every primitive over one axis (``axis_data``)."""
  handles_jit_p = True

  def __init__(self, parent, axis_data):
    self.parent = parent
    self.axis_data = axis_data

  def __repr__(self):
    return "BatchTrace"

  def to_batch_info(self, x):
    if type(x) is BatchTracer and x._trace is self:
      return x.val, x.batch_dim
    return x, not_mapped

  def process_primitive(self, prim, args, params):
    vals, dims = [], []
    mapped = False
    for x in args:
      if type(x) is BatchTracer and x._trace is self:
        vals.append(x.val)
        d = x.batch_dim
        dims.append(d)
        if d is not not_mapped:
          mapped = True
      else:
        if type(x) is BatchTracer and x._trace.finished:
          core.raise_escaped_tracer(x)
        vals.append(x)
        dims.append(not_mapped)
    name = self.axis_data.name
    getter = axis_name_getters.get(prim)
    if getter is not None:
      names = getter(params)
      if name is not None and name in names:
        rule = collective_batchers[prim]
        with core.set_interpreter(self.parent):
          out, out_dim = rule(self.axis_data, vals, dims, **params)
        return self._wrap(prim, out, out_dim)
      check_axis_names(prim.name, names)
    if not mapped:
      special = prim in axis_primitive_batchers or prim in interpreter_batchers
      if not special or name is None or not any(
          name in axis_names_in_jaxpr(j) for j in _jaxprs_of_params(params)):
        with core.set_interpreter(self.parent):
          return prim.bind(*vals, **params)
    irule = interpreter_batchers.get(prim)
    if irule is not None:
      with core.set_interpreter(self.parent):
        out, out_dim = irule(self, vals, dims, **params)
      return self._wrap(prim, out, out_dim)
    arule = axis_primitive_batchers.get(prim)
    with core.set_interpreter(self.parent):
      if arule is not None:
        out, out_dim = arule(self.axis_data, vals, dims, **params)
      else:
        rule = primitive_batchers.get(prim)
        if rule is None:
          raise NotImplementedError(f"Batching rule for '{prim.name}' not implemented")
        out, out_dim = rule(vals, dims, **params)
    return self._wrap(prim, out, out_dim)

  def _wrap(self, prim, out, out_dim):
    if prim.multiple_results:
      return [x if d is not_mapped else BatchTracer(self, x, d) for x, d in zip(out, out_dim)]
    return out if out_dim is not_mapped else BatchTracer(self, out, out_dim)

  def new_tracer(self, val, dim):
    return val if dim is not_mapped else BatchTracer(self, val, dim)


_axis_env = threading.local()   # .frames: [(name, size)] from make_jaxpr(axis_env=...)


@contextlib.contextmanager
def extend_axis_env(pairs):
  """Bind axis names to sizes for tracing without a vmap (``make_jaxpr(axis_env=...)``):
  collectives over them are recorded as equations."""
  frames = getattr(_axis_env, "frames", [])
  _axis_env.frames = frames + [(n, int(sz)) for n, sz in pairs]
  try:
    yield
  finally:
    _axis_env.frames = frames


def bound_axis_sizes():
  """{axis name: size} of the vmaps enclosing the current interpreter (innermost first
  wins), then of the names bound by ``extend_axis_env``."""
  out = {}
  interp = core.current_interpreter()
  while interp is not None:
    if isinstance(interp, BatchInterpreter) and interp.axis_data.name is not None:
      out.setdefault(interp.axis_data.name, interp.axis_data.size)
    interp = interp.parent
  for n, sz in reversed(getattr(_axis_env, "frames", ())):
    out.setdefault(n, sz)
  return out


def axis_size(name):
  """The size of the named axis bound by an enclosing vmap (or ``extend_axis_env``), or
  NameError."""
  interp = core.current_interpreter()
  while interp is not None:
    if isinstance(interp, BatchInterpreter) and interp.axis_data.name == name:
      return interp.axis_data.size
    interp = interp.parent
  for n, sz in reversed(getattr(_axis_env, "frames", ())):
    if n == name:
      return sz
  raise NameError(f"unbound axis name: {name}")


def check_axis_names(prim_name, names):
  """JAX's NameError for a collective naming an axis no enclosing vmap binds."""
  bound = None
  for n in names:
    if isinstance(n, int):
      continue
    if bound is None:
      bound = bound_axis_sizes()
    if n not in bound:
      raise NameError(f"Found an unbound axis name: {n}. To fix this, please call "
                      f"{prim_name} under `jax.shard_map`.")


# --- running a function batched ---------------------------------------------------------
def batch_flat(fun, args, in_dims, axis_data, out_dims_fn):
  """Run ``fun`` (flat list -> flat list) on ``args`` with batch dims ``in_dims``.
  ``out_dims_fn(out_dims) -> wanted dims`` (one int or not_mapped per output, or None to
  keep) is called with the dims the outputs came out with; returns (outs, out_dims)."""
  parent = core.current_interpreter()
  interp = BatchInterpreter(parent, axis_data)
  ins = [BatchTracer(interp, x, d) if d is not not_mapped else x for x, d in zip(args, in_dims)]
  try:
    with core.set_interpreter(interp):
      outs = fun(*ins)
    vals, dims = [], []
    for o in outs:
      v, d = interp.to_batch_info(o)
      vals.append(v)
      dims.append(d)
  finally:
    interp.finished = True
  want = out_dims_fn(dims)
  if want is None:
    return vals, dims
  vals = [matchaxis(axis_data.name, axis_data.size, d, w, v) for v, d, w in zip(vals, dims, want)]
  return vals, list(want)


def _trace_state():
  from pyjax._src.config import config
  return config.trace_state()


_jaxpr_cache = weakref.WeakKeyDictionary()


def _cached(closed, key, make):
  try:
    per = _jaxpr_cache.get(closed)
  except TypeError:
    return make()
  if per is None:
    per = {}
    try:
      _jaxpr_cache[closed] = per
    except TypeError:
      return make()
  key = key + (_trace_state(),)
  hit = per.get(key)
  if hit is None:
    hit = per[key] = make()
  return hit


def batch_jaxpr_axes(closed_jaxpr, axis_data, in_dims, out_dims=None):
  """Batch ``closed_jaxpr``: input ``i`` gets a batch dimension at ``in_dims[i]`` (or none
  for not_mapped).  Returns (ClosedJaxpr, out_dims): the outputs' batch dims as the rules
  produced them, or moved/broadcast to ``out_dims`` when given (an int or not_mapped per
  output; not_mapped requires the output to be unbatched)."""
  axis_data = as_axis_data(axis_data)
  in_dims = tuple(in_dims)
  want = None if out_dims is None else tuple(out_dims)
  key = ("axes", axis_data.key(), in_dims, want)
  return _cached(closed_jaxpr, key,
                 lambda: _batch_jaxpr(closed_jaxpr, axis_data, in_dims,
                                      (lambda dims: want) if want is not None else (lambda dims: None)))


def batch_jaxpr(closed_jaxpr, axis_data, in_batched, instantiate):
  """JAX's classic form: batched inputs and outputs carry the batch dimension at 0.
  ``instantiate`` (a bool, or one per output) forces an output to be batched.  Returns
  (ClosedJaxpr, out_batched)."""
  axis_data = as_axis_data(axis_data)
  in_batched = tuple(bool(b) for b in in_batched)
  n_out = len(closed_jaxpr.jaxpr.outvars)
  inst = (bool(instantiate),) * n_out if isinstance(instantiate, bool) else tuple(
      bool(b) for b in instantiate)
  key = ("front", axis_data.key(), in_batched, inst)

  def make():
    in_dims = tuple(0 if b else not_mapped for b in in_batched)
    new, dims = _batch_jaxpr(closed_jaxpr, axis_data, in_dims,
                             lambda dims: [0 if (d is not not_mapped or i) else not_mapped
                                           for d, i in zip(dims, inst)])
    return new, [d is not not_mapped for d in dims]
  new, out_batched = _cached(closed_jaxpr, key, make)
  return new, list(out_batched)


def _batch_jaxpr(closed, axis_data, in_dims, out_dims_fn):
  from pyjax._src.interpreters import staging
  in_avals = [batched_aval(a, d, axis_data.size) for a, d in zip(closed.in_avals, in_dims)]
  cell = []

  def fun(*args):
    outs, dims = batch_flat(lambda *xs: core.eval_jaxpr(closed.jaxpr, closed.consts, *xs),
                            list(args), in_dims, axis_data, out_dims_fn)
    cell.append(dims)
    return outs

  new, tracer_consts = staging.trace_flat(fun, in_avals)
  if tracer_consts:  # a jaxpr closed over tracers: keep them as constants
    raise ValueError("batch_jaxpr: the jaxpr closes over tracers of an enclosing "
                     "transformation; pass them as arguments instead")
  return new, tuple(cell[-1])


# --- helpers for rules ------------------------------------------------------------------
def _ndim(x):
  return len(core.get_aval(x).shape)


def moveaxis(x, src, dst):
  """``x`` with its axis ``src`` moved to position ``dst`` (a transpose)."""
  if src == dst:
    return x
  nd = _ndim(x)
  if src < 0:
    src += nd
  if dst < 0:
    dst += nd
  if src == dst:
    return x
  perm = [i for i in range(nd) if i != src]
  perm.insert(dst, src)
  from pyjax._src.lax import shapes
  return shapes.transpose_p.bind(x, permutation=tuple(perm))


def broadcast(x, size, axis):
  """``x`` with a new axis of ``size`` inserted at ``axis`` (broadcast_in_dim)."""
  aval = core.get_aval(x)
  shape = list(aval.shape)
  shape.insert(axis, size)
  dims = tuple(np.delete(np.arange(len(shape)), axis))
  from pyjax._src.lax import shapes
  return shapes.broadcast_in_dim_p.bind(x, shape=tuple(shape), broadcast_dimensions=dims,
                                        sharding=None)


def bdim_at_front(x, d, size):
  """``x`` with its batch dimension first (broadcast to ``size`` if not mapped)."""
  if d is not_mapped:
    return broadcast(x, size, 0)
  return moveaxis(x, d, 0)


def bdim_to(x, d, dst, size):
  """``x`` with its batch dimension at ``dst`` (broadcast to ``size`` if not mapped)."""
  if d is not_mapped:
    return broadcast(x, size, dst)
  return moveaxis(x, d, dst)


def matchaxis(axis_name, size, src, dst, x, sum_match=False):
  """Move the batch dimension of ``x`` from ``src`` to ``dst`` (either may be not_mapped:
  broadcast an unbatched value; ``dst`` not_mapped requires ``src`` not_mapped unless
  ``sum_match``, which sums the batch dimension away)."""
  if dst is not_mapped:
    if src is not_mapped:
      return x
    if sum_match:
      from pyjax._src.lax import reductions
      return reductions.reduce_sum_p.bind(x, axes=(src,), out_sharding=None)
    if axis_name is not None:
      raise ValueError(f"vmap has mapped output (axis_name={axis_name}) but out_axes is None")
    raise ValueError(f"vmap has mapped output but out_axes is None")
  if src is not_mapped:
    return broadcast(x, size, dst)
  return moveaxis(x, src, dst)


def shift_axes(axes, d):
  """Per-example axes -> axes of the batched value with its batch dim at ``d``."""
  return tuple(int(a) + 1 if int(a) >= d else int(a) for a in axes)


def vectorized_batcher(prim, args, dims, **params):
  """Rule of an operation applied independently along every axis (unary elementwise)."""
  assert all(d == dims[0] for d in dims if d is not not_mapped)
  out = prim.bind(*args, **params)
  d = next(d for d in dims if d is not not_mapped)
  if prim.multiple_results:
    return out, [d] * len(out)
  return out, d


def defvectorized(prim):
  primitive_batchers[prim] = lambda args, dims, **params: vectorized_batcher(
      prim, args, dims, **params)


def broadcast_batcher(prim, args, dims, **params):
  """Rule of an n-ary elementwise operation with lax's broadcasting (rank-0 operands, equal
  ranks otherwise).  Equal shapes and equal batch dims (or rank-0 unbatched operands) bind
  as they are; otherwise batch dims move to the front and unbatched operands get a size-1
  axis there (the primitive broadcasts it)."""
  shape, dim = next((core.get_aval(x).shape, d) for x, d in zip(args, dims)
                    if d is not not_mapped)
  if all(core.get_aval(x).shape == shape and d == dim
         for x, d in zip(args, dims) if _ndim(x)):
    out = prim.bind(*args, **params)
    if prim.multiple_results:
      return out, [dim] * len(out)
    return out, dim
  args = [bdim_at_front(x, d, 1) if _ndim(x) else x for x, d in zip(args, dims)]
  nd = max(_ndim(x) for x in args)
  args = [_expand_trailing(x, nd) if d is not not_mapped and _ndim(x) != nd else x
          for x, d in zip(args, dims)]
  out = prim.bind(*args, **params)
  if prim.multiple_results:
    return out, [0] * len(out)
  return out, 0


def _expand_trailing(x, nd):
  """A batched rank-0-per-example value (shape (B,)) against higher-rank operands: add
  trailing size-1 axes so it broadcasts."""
  aval = core.get_aval(x)
  k = len(aval.shape)
  from pyjax._src.lax import shapes
  return shapes.broadcast_in_dim_p.bind(
      x, shape=tuple(aval.shape) + (1,) * (nd - k), broadcast_dimensions=tuple(range(k)),
      sharding=None)


def defbroadcasting(prim):
  primitive_batchers[prim] = lambda args, dims, **params: broadcast_batcher(
      prim, args, dims, **params)


def has_rule(prim):
  """Whether ``prim`` has a batching rule of any kind."""
  return (prim in primitive_batchers or prim in axis_primitive_batchers
          or prim in collective_batchers or prim in interpreter_batchers)


# --- rules for primitives of the interpreters -------------------------------------------
def _register_builtin_rules():
  from pyjax._src.interpreters import ad, staging
  defvectorized(ad.stop_gradient_p)
  defbroadcasting(ad.add_any_p)
  axis_primitive_batchers[staging.jit_p] = _jit_batch


def _jit_batch(axis_data, args, dims, *, jaxpr, **params):
  from pyjax._src.interpreters import staging
  new, out_dims = batch_jaxpr_axes(jaxpr, axis_data, dims)
  p = dict(params)
  n_in, n_out = len(new.jaxpr.invars), len(new.jaxpr.outvars)
  in_sh = p.get("in_shardings") or ()
  out_sh = p.get("out_shardings") or ()
  p["in_shardings"] = tuple(in_sh) if len(in_sh) == n_in else (staging.UNSPECIFIED,) * n_in
  p["out_shardings"] = tuple(out_sh) if len(out_sh) == n_out else (staging.UNSPECIFIED,) * n_out
  p["in_layouts"] = (None,) * n_in
  p["out_layouts"] = (None,) * n_out
  don = p.get("donated_invars") or ()
  p["donated_invars"] = tuple(don) if len(don) == n_in else (False,) * n_in
  outs = staging.jit_p.bind(*args, jaxpr=new, **p)
  return outs, list(out_dims)


_register_builtin_rules()
