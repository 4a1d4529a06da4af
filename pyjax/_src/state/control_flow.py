"""Refs used inside ``lax`` control flow (``while_loop``, ``fori_loop``, ``scan``, ``cond``,
``switch``) that were created outside the loop body or branch.

While any ref is alive, a loop/branch function is first traced once to find the outer refs
it touches (a discovery ``Frame``).  When there are some, the loop carries their values: the
body runs in a frame preloaded with the carried values, and returns their new values next
to its own outputs; after the loop the final values are written back into the refs.  A
``cond``/``switch`` passes the values as extra operands and every branch returns them.
So an outer ref read in a body sees the current iteration's value and writes persist, as
in JAX (which discharges refs in loops and conditionals the same way).
"""
from __future__ import annotations

import functools
import weakref

from pyjax._src import core, tree_util
from pyjax._src.avals import ShapedArray
from pyjax._src.interpreters import staging
from pyjax._src.state import types
from pyjax._src.state.types import Frame

NO_REFS = object()


_hi_values = [False]   # a mutable hijax value was made (its lo values are refs: hijax.py)


def note_mutable_hi_value():
  """From now on loop bodies and branches that close over a mutable hijax value are
  searched for outer refs even while no ref is alive (its lo values are threaded as refs)."""
  _hi_values[0] = True


def live(*fns):
  """Whether the control-flow functions ``fns`` must be searched for outer refs: some ref
  is alive, or one of them closes over a mutable hijax value (looked for in closure cells,
  partials, ``__wrapped__`` and the functions these hold, three levels deep).  Differs
  from JAX, which finds them while tracing: one reached only through an object's
  attributes is not found (using it in the body raises TypeError)."""
  return types.live_refs() > 0 or (_hi_values[0] and any(_closes_over_hi(f, 3) for f in fns))


def _closes_over_hi(fn, depth):
  from pyjax._src import hijax
  if depth == 0:
    return False
  if isinstance(fn, functools.partial):
    vals = [fn.func, *fn.args, *fn.keywords.values()]
  else:
    vals = []
    for c in getattr(fn, "__closure__", None) or ():
      try:
        vals.append(c.cell_contents)
      except ValueError:   # an empty cell
        pass
  wrapped = getattr(fn, "__wrapped__", None)
  if wrapped is not None:
    vals.append(wrapped)
  for v in vals:
    if isinstance(v, weakref.ref):   # pyjax's own loop wrappers hold the body weakly
      v = v()
    if hijax._is_hi_value(v) and getattr(core.get_aval(v), "has_qdd", False):
      return True
    if callable(v) and not isinstance(v, type) and _closes_over_hi(v, depth - 1):
      return True
  return False


def _aval_of(x):
  if isinstance(x, core.Tracer) or hasattr(x, "_buf"):
    return types.shaped(x.aval)
  return types.shaped(core.get_aval(x))


def discover(fn, arg_avals_tree):
  """The outer refs ``fn`` reads or writes when called on values of ``arg_avals_tree`` (a
  tuple of positional arguments whose leaves are avals)."""
  if getattr(fn, "_pyjax_ref_wrapped", False):
    return []
  leaves, tree = tree_util.tree_flatten(arg_avals_tree)
  frame = Frame()

  def flat(*xs):
    frame.interp = core._state.interp
    types.push_frame(frame)
    try:
      fn(*tree_util.tree_unflatten(tree, list(xs)))
    finally:
      types.pop_frame(frame)
    return []
  try:
    staging.trace_flat(flat, leaves)
  except Exception:  # noqa: BLE001  (the real trace reports the error)
    return []
  return list(frame.discovered)


def _union(*lists):
  out = []
  for lst in lists:
    for r in lst:
      if all(r is not o for o in out):
        out.append(r)
  return out


class _InFrame:
  """Run a function in a frame where ``refs`` hold ``vals``."""

  def __init__(self, refs, vals):
    self.frame = Frame()
    self.refs, self.vals = refs, vals

  def __enter__(self):
    fr = self.frame
    fr.interp = core._state.interp
    for r, v in zip(self.refs, self.vals):
      fr.lifted[id(r)] = types.Slot(r, v, fr.interp)
    types.push_frame(fr)
    return self

  def __exit__(self, *exc):
    types.pop_frame(self.frame)
    if exc[0] is None and self.frame.discovered:
      raise ValueError("a loop body or branch used a Ref that its first trace did not use; "
                       "pyjax cannot carry it through the loop")

  def values(self):
    return [self.frame.lifted[id(r)].value for r in self.refs]


def _wrapped(fn):
  fn._pyjax_ref_wrapped = True
  return fn


def _write_back(refs, vals):
  for r, v in zip(refs, vals):
    s = types.slot(r)
    types.check_write(s, v)
    s.value = v
    s.written = True


def _current(refs):
  return [types.slot(r).value for r in refs]


def while_loop(loop, cond_fun, body_fun, init_val):
  """``loop(cond_fun, body_fun, init_val)`` carrying the outer refs they use."""
  avals = (tree_util.tree_map(_aval_of, init_val),)
  refs = _union(discover(cond_fun, avals), discover(body_fun, avals))
  if not refs:
    return NO_REFS

  @_wrapped
  def cond2(c):
    val, rv = c
    with _InFrame(refs, rv):
      return cond_fun(val)

  @_wrapped
  def body2(c):
    val, rv = c
    with _InFrame(refs, rv) as ctx:
      out = body_fun(val)
    return out, ctx.values()
  out, vals = loop(cond2, body2, (init_val, _current(refs)))
  _write_back(refs, vals)
  return out


def scan(loop, f, init, xs, **kwargs):
  """``loop(f, init, xs, **kwargs)`` (``lax.scan``) carrying the outer refs ``f`` uses."""
  def slice_aval(x):
    a = _aval_of(x)
    return ShapedArray(a.shape[1:], a.dtype, a.weak_type)
  avals = (tree_util.tree_map(_aval_of, init), tree_util.tree_map(slice_aval, xs))
  refs = discover(f, avals)
  if not refs:
    return NO_REFS

  @_wrapped
  @functools.wraps(f)
  def f2(c, x):
    carry, rv = c
    with _InFrame(refs, rv) as ctx:
      carry, y = f(carry, x)
    return (carry, ctx.values()), y
  (carry, vals), ys = loop(f2, (init, _current(refs)), xs, **kwargs)
  _write_back(refs, vals)
  return carry, ys


def switch(select, index, branches, operands):
  """``select(index, branches, *operands)`` (``lax.switch``/``cond``) with the outer refs
  any branch uses as extra operands and outputs."""
  avals = tuple(tree_util.tree_map(_aval_of, operands))
  refs = _union(*[discover(b, avals) for b in branches])
  if not refs:
    return NO_REFS

  def wrap(b):
    @_wrapped
    def b2(ops, rv):
      with _InFrame(refs, rv) as ctx:
        out = b(*ops)
      return out, ctx.values()
    return b2
  out, vals = select(index, [wrap(b) for b in branches], tuple(operands), _current(refs))
  _write_back(refs, vals)
  return out
