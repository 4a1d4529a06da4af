"""Refs crossing a ``jit`` boundary (see ``types.py``).

``trace_flat`` traces a jitted function in a ``Frame``.  Ref arguments (avals
``AbstractRef``) enter the trace as local refs holding the input tracers; refs the function
closes over are lifted into the frame the first time they are used, and when there are any
the function is traced again with their values as extra trailing inputs.  The program's
outputs are the function's outputs followed by the final values of the refs it wrote.
``call`` passes the refs' current values in and writes the written ones back.
"""
from __future__ import annotations

from pyjax._src import core, key_reuse, tracer_leaks
from pyjax._src.config import config
from pyjax._src.interpreters import staging
from pyjax._src.state import types
from pyjax._src.state.types import AbstractRef, Frame, Ref


class RefInfo:
  """How a traced program uses refs: which flat arguments are refs, which outer refs it
  closes over (extra trailing inputs), and which of those it writes (extra outputs)."""
  __slots__ = ("arg_pos", "closed", "written_args", "written_closed", "n_out", "key_sinks",
               "debug", "hi_args", "written_hi")

  def __init__(self, arg_pos, closed, written_args, written_closed, n_out, key_sinks=(),
               debug=None, hi_args=(), written_hi=()):
    self.debug = debug
    self.hi_args = hi_args                 # (position, HiArgType) of mutable hi arguments
    self.written_hi = written_hi           # (index into hi_args, its final QDD) written
    self.arg_pos = arg_pos
    self.closed = closed
    self.written_args = written_args       # positions (in arg_pos order) written
    self.written_closed = written_closed   # indices into closed written
    self.n_out = n_out
    self.key_sinks = key_sinks             # PRNG key arguments the program consumes


def trace_flat(flat_fun, avals, debug=None):
  """``staging.trace_flat`` of ``flat_fun`` with refs made explicit: returns
  ``(closed_jaxpr, tracer_consts, RefInfo or None)``."""
  if config.jax_no_tracing:
    src = debug.func_src_info if debug is not None else "fun"
    raise RuntimeError(f"re-tracing function {src} for `{getattr(debug, 'traced_for', 'jit')}`,"
                       " but 'no_tracing' is set")
  leak_mark = tracer_leaks.mark() if tracer_leaks._installed else None
  arg_pos = [i for i, a in enumerate(avals) if type(a) is AbstractRef]
  hi_args = [(i, a) for i, a in enumerate(avals) if getattr(type(a), "is_hi_arg", False)]
  inner = []
  for a in avals:   # a mutable hi argument enters as its lo values
    if type(a) is AbstractRef:
      inner.append(types.shaped(a.inner_aval))
    elif getattr(type(a), "is_hi_arg", False):
      inner.extend(a.lo_avals())
    else:
      inner.append(a)
  n = len(inner)
  closed_refs = []
  while True:
    frame = Frame()
    result = {}

    def traced(*xs, frame=frame, result=result, closed_refs=tuple(closed_refs)):
      frame.interp = core._state.interp
      leaves = _enter_hi_args(avals, xs[:n]) if hi_args else list(xs[:n])
      local = []
      for i in arg_pos:
        r = Ref(leaves[i], frame)
        leaves[i] = r
        local.append(r)
        frame.arg_refs.append((_arg_name(debug, i), r))
      for r, v in zip(closed_refs, xs[n:]):
        frame.lifted[id(r)] = types.Slot(r, v, frame.interp)
      types.push_frame(frame)
      try:
        outs = list(flat_fun(*leaves))
      finally:
        types.pop_frame(frame)
      if key_reuse.enabled():   # which key arguments the program consumed
        result["key_sinks"] = key_reuse.consumed_inputs(leaves)
      wa = [k for k, r in enumerate(local) if r.written]
      wc = [k for k, r in enumerate(closed_refs) if frame.lifted[id(r)].written]
      hi_out, wh = _exit_hi_args(hi_args, avals, leaves, xs[:n])
      result["written"] = (wa, wc, len(outs), wh)
      return (outs + [local[k].value for k in wa]
              + [frame.lifted[id(closed_refs[k])].value for k in wc] + hi_out)

    extra = [types.shaped(core.get_aval(types.slot(r).value)) for r in closed_refs]
    closed, tracer_consts = staging.trace_flat(traced, inner + extra, debug)
    new = [r for r in frame.discovered if all(r is not c for c in closed_refs)]
    if not new:
      break
    closed_refs.extend(new)
  if config.jax_enable_checks:   # type-check the traced program (JaxprTypeError)
    from pyjax._src import extend_core
    extend_core.check_jaxpr(closed)
  info = None
  sinks = result.get("key_sinks", ())
  if arg_pos or closed_refs or sinks or hi_args:
    wa, wc, n_out, wh = result["written"]
    info = RefInfo(tuple(arg_pos), tuple(closed_refs), tuple(wa), tuple(wc), n_out, sinks,
                   debug, tuple(hi_args), tuple(wh))
  if leak_mark is not None:   # jax_check_tracer_leaks: the trace's tracers must be dead
    frame = result = traced = None
    tracer_leaks.check(leak_mark)
  return closed, tracer_consts, info


def call(info, closed, params, leaves, tracer_consts, inline):
  """Run a traced program that uses refs: their current values in, written values back
  (and that consumes PRNG keys: checked and marked, ``key_reuse``)."""
  if info.key_sinks:
    key_reuse.check_call(info.key_sinks, leaves)
  if len(info.arg_pos) > 1:
    _check_distinct_refs(info, leaves)
  vals = list(leaves)
  for i in info.arg_pos:
    r = vals[i]
    if type(r) is not Ref:
      raise TypeError(f"expected a Ref for argument {i} (the function was traced with one), "
                      f"got {type(r)}")
    vals[i] = types.slot(r).value
  if info.hi_args:   # mutable hi arguments: their current lo values in
    hi_pos = dict(info.hi_args)
    vals = [v for i, x in enumerate(vals)
            for v in (hi_pos[i].read(x) if i in hi_pos else (x,))]
  extra = [types.slot(r).value for r in info.closed]
  all_args = list(tracer_consts) + vals + extra
  interp = core._state.interp
  if inline or not (interp is core.eval_interpreter or staging.binds_jit(interp)):
    outs = core.eval_jaxpr(closed.jaxpr, closed.consts, *all_args)
  else:
    outs = staging.jit_p.bind(*all_args, **params)
  outs = list(outs)
  primary, rest = outs[:info.n_out], iter(outs[info.n_out:])
  for k in info.written_args:
    _write_back(leaves[info.arg_pos[k]], next(rest))
  for k in info.written_closed:
    _write_back(info.closed[k], next(rest))
  for k, qdd in info.written_hi:
    i, t = info.hi_args[k]
    t.write(leaves[i], qdd, [next(rest) for _ in t.lo_avals(qdd)])
  return primary


def without_hi_outputs(closed, info):
  """``closed`` without the trailing outputs that write mutable hi arguments back (for an
  abstract trace: ``eval_shape``, ``make_jaxpr``)."""
  j = closed.jaxpr
  n = info.n_out + len(info.written_args) + len(info.written_closed)
  return core.ClosedJaxpr(core.Jaxpr(j.constvars, j.invars, j.outvars[:n], j.eqns, j.effects,
                                     j.debug_info), closed.consts)


def _enter_hi_args(avals, xs):
  """The traced function's arguments: a stand-in made from its lo inputs for each mutable
  hi argument (``hijax.HiArgType``), the inputs themselves for the others."""
  it = iter(xs)
  leaves = []
  for a in avals:
    if getattr(type(a), "is_hi_arg", False):
      leaves.append(a.enter([next(it) for _ in a.lo_avals()]))
    else:
      leaves.append(next(it))
  return leaves


def _exit_hi_args(hi_args, avals, leaves, xs):
  """(extra outputs, [(index, final QDD)]): the lo values of each mutable hi argument whose
  stand-in the function changed."""
  if not hi_args:
    return [], []
  starts, k = [], 0
  for a in avals:
    starts.append(k)
    k += len(a.lo_avals()) if getattr(type(a), "is_hi_arg", False) else 1
  outs, written = [], []
  for j, (i, t) in enumerate(hi_args):
    qdd, lo = t.exit(leaves[i])
    ins = xs[starts[i]:starts[i] + len(t.lo_avals())]
    if qdd != t.qdd or any(v is not x for v, x in zip(lo, ins)):
      outs.extend(lo)
      written.append((j, qdd))
  return outs, written


def _check_distinct_refs(info, leaves):
  """JAX's ValueError for one ref passed as two arguments (their writes would conflict)."""
  seen = {}
  for i in info.arg_pos:
    r = leaves[i]
    j = seen.setdefault(id(r), i)
    if j != i:
      d = info.debug
      src = d.func_src_info if d is not None else "fun"
      raise ValueError(
          "only one reference to a mutable array may be passed as an argument to a function, "
          f"but when tracing {src} for {getattr(d, 'traced_for', 'jit')} the mutable array "
          f"reference of type {r.aval} appeared at both {_arg_name(d, j)} and "
          f"{_arg_name(d, i)}.")


def _write_back(ref, value):
  s = types.slot(ref)
  types.check_write(s, value)
  s.value = value
  s.written = True


def _arg_name(debug, i):
  names = getattr(debug, "arg_names", None)
  return names[i] if names is not None and i < len(names) else f"args[{i}]"


def ref_output_error(x, debug):
  """JAX's ValueError for a traced function returning a ref."""
  src = debug.func_src_info if debug is not None else "fun"
  frames = types.current_frames()
  arg_refs = frames[-1].arg_refs if frames else ()
  for name, r in arg_refs:
    if r is x:
      where = f"The returned mutable array was passed in as the argument {name}."
      break
  else:
    where = "The returned mutable array was created inside the function."
  return ValueError(f"function {src} traced for {getattr(debug, 'traced_for', 'jit')} returned "
                    f"a mutable array reference of type {x.aval}, but mutable array references "
                    f"cannot be returned.\n\n{where}")
