"""The collective runtime: where the per-device programs of ``shard_map``/``pmap`` meet.

Each device of a ``shard_map`` runs its program on its own thread (its stream's worker).
A collective (``psum``, ``all_gather``, ``ppermute``, ...) is a *meeting* of the devices
of one group -- those that differ only in their coordinates along the collective's mesh
axes.  Every member hands in its value; once all have, each reads every member's value
in rank order (the row-major index along the named axes) and computes its result from
them.  Sums fold in rank order, so results are deterministic: equal from run to run and
equal to the same collective over a ``vmap`` axis.

Layers:

* ``Transport``: ``exchange(key, rank, size, value, deadline) -> [value of rank 0, ...]``
  -- the one operation the collectives need.  ``ThreadTransport`` implements it for the
  devices of this process (a dictionary of meetings under one condition variable).  A
  multi-process transport (MPI) implements the same method, with ranks spread over
  processes; nothing above it changes.  It may also offer ``reduce`` (fold in parts)
  and ``route`` (pieces sent only where addressed: ``ppermute``, ``all_to_all``);
  ``DeviceContext`` uses them when present and ``exchange`` otherwise.
* ``DeviceContext``: what the program of one device knows -- the run it belongs to, the
  mesh axes, its coordinates, and how many collectives it has entered per group (the
  n-th collective of a device meets the n-th of the other members of its group).  It is
  thread-local (``current()``), set while the device program runs.
* the collective operations (``psum``, ``all_gather``, ...) on NumPy values, used by the
  primitives' eager rules in ``lax/parallel.py``.

Failures never hang: a member that does not arrive within the deadline
(``jax_collectives_timeout`` seconds, also ``PYJAX_COLLECTIVES_TIMEOUT``) makes the
waiting members raise ``JaxRuntimeError('DEADLINE_EXCEEDED: ...')``; a device program that
fails aborts its run, and members waiting in (or later entering) a collective of that run
raise at once.
"""
from __future__ import annotations

import itertools
import os
import threading
import time

import numpy as np

from pyjax._src.errors import JaxRuntimeError

_DEFAULT_TIMEOUT = 60.0


def timeout_seconds():
  """The collective deadline in seconds (``jax_collectives_timeout``, else the
  ``PYJAX_COLLECTIVES_TIMEOUT`` environment variable, else 60)."""
  try:
    from pyjax._src.config import config
    v = config.read("jax_collectives_timeout")
    if v is not None:
      return float(v)
  except (KeyError, AttributeError):
    pass
  env = os.environ.get("PYJAX_COLLECTIVES_TIMEOUT")
  if env:
    return float(env)
  return _DEFAULT_TIMEOUT


class RunAborted(JaxRuntimeError):
  """Raised in the devices of a run after another device's program failed."""


class Transport:
  """How members of a group exchange values (see the module docstring)."""

  def exchange(self, key, rank, size, value, deadline, describe):
    raise NotImplementedError

  def abort(self, run_id, error):
    raise NotImplementedError

  def finish(self, run_id):
    raise NotImplementedError


class _Meeting:
  __slots__ = ("values", "arrived", "left")

  def __init__(self, size):
    self.values = [None] * size
    self.arrived = 0
    self.left = 0


class ThreadTransport(Transport):
  """Meetings of threads of this process."""

  def __init__(self):
    self._cond = threading.Condition(threading.Lock())
    self._meetings = {}
    self._aborted = {}

  def exchange(self, key, rank, size, value, deadline, describe):
    run_id = key[0]
    with self._cond:
      err = self._aborted.get(run_id)
      if err is not None:
        raise RunAborted(f"ABORTED: {describe()} was not completed because another device "
                         f"failed: {type(err).__name__}: {err}")
      m = self._meetings.get(key)
      if m is None:
        m = self._meetings[key] = _Meeting(size)
      m.values[rank] = value
      m.arrived += 1
      if m.arrived == size:
        self._cond.notify_all()
      else:
        while m.arrived < size:
          err = self._aborted.get(run_id)
          if err is not None:
            raise RunAborted(f"ABORTED: {describe()} was not completed because another "
                             f"device failed: {type(err).__name__}: {err}")
          left = deadline - time.monotonic()
          if left <= 0:
            n = m.arrived
            self._aborted.setdefault(run_id, TimeoutError("collective deadline"))
            self._cond.notify_all()
            raise JaxRuntimeError(
                f"DEADLINE_EXCEEDED: {describe()}: only {n} of {size} devices reached it "
                f"within {timeout_seconds():g} s (a collective must be reached by every "
                "device of its group; set jax_collectives_timeout to wait longer)")
          self._cond.wait(left)
      values = list(m.values)
      m.left += 1
      if m.left == size:
        del self._meetings[key]
      return values

  def abort(self, run_id, error):
    with self._cond:
      self._aborted.setdefault(run_id, error)
      self._cond.notify_all()

  def finish(self, run_id):
    with self._cond:
      self._aborted.pop(run_id, None)
      for k in [k for k in self._meetings if k[0] == run_id]:
        del self._meetings[k]


_transport = ThreadTransport()
_run_ids = itertools.count()


def transport():
  return _transport


def set_transport(t):
  """Install another transport (a multi-process one); returns the previous one."""
  global _transport
  prev, _transport = _transport, t
  return prev


def new_run_id():
  return next(_run_ids)


_process_transport = None    # the MPI transport after jax.distributed.initialize


def set_process_transport(t):
  """Install (or, with None, remove) the transport of runs spanning processes."""
  global _process_transport
  _process_transport = t


def transport_for(devices):
  """The transport of a run over ``devices``: the multi-process one (MPI) when some of
  them belong to other processes, else this process's."""
  t = _process_transport
  if t is not None and any(d.process_index != t.rank for d in devices):
    return t
  return _transport


# --- the per-device context ------------------------------------------------------------------
class DeviceContext:
  """The program of one device in one run: mesh axis names and sizes (the manual axes),
  this device's coordinates along them, and per-group collective counters."""
  __slots__ = ("run_id", "axis_names", "axis_sizes", "coords", "counters", "device",
               "transport", "procs")

  def __init__(self, run_id, axis_names, axis_sizes, coords, device, transport=None,
               procs=None):
    self.run_id = run_id
    self.axis_names = tuple(axis_names)
    self.axis_sizes = dict(zip(axis_names, axis_sizes))
    self.coords = dict(zip(axis_names, coords))
    self.counters = {}
    self.device = device
    self.transport = transport
    self.procs = procs     # process index of each mesh position (runs over processes)

  def binds(self, names):
    return all(n in self.axis_sizes for n in names)

  def group(self, names):
    """(group key, rank, size) of this device for a collective over ``names``."""
    rank, size = 0, 1
    for n in names:
      rank = rank * self.axis_sizes[n] + self.coords[n]
      size *= self.axis_sizes[n]
    others = tuple((n, self.coords[n]) for n in self.axis_names if n not in names)
    return (tuple(names), others), rank, size

  def _next(self, what, names):
    gkey, rank, size = self.group(names)
    seq = self.counters.get(gkey, 0)
    self.counters[gkey] = seq + 1
    deadline = time.monotonic() + timeout_seconds()

    def describe():
      return (f"collective {what} over mesh axes {tuple(names)} (call #{seq} of device "
              f"{self.device})")
    return (self.run_id, gkey, seq), rank, size, deadline, describe

  def exchange(self, what, names, value):
    """Every member's ``value`` (rank order) for the next collective over ``names``."""
    if self.group(names)[2] == 1:
      return [value], 0
    key, rank, size, deadline, describe = self._next(what, names)
    t = self.transport or _transport
    if self.procs is None:
      return t.exchange(key, rank, size, value, deadline, describe), rank
    return t.exchange(key, rank, size, value, deadline, describe,
                      self._owners(names)), rank

  def reduce(self, what, names, value, op):
    """Every member's ``value`` folded with ``op`` in rank order (the next collective
    over ``names``).  A transport spanning processes may reduce in parts (``reduce``:
    each process folds one slice of every member's value, in rank order -- the same
    bits); otherwise all values are exchanged and folded here."""
    t = self.transport or _transport
    if self.procs is None or not hasattr(t, "reduce") or self.group(names)[2] == 1:
      values, _ = self.exchange(what, names, value)
      return _fold(op, values)
    key, rank, size, deadline, describe = self._next(what, names)
    return t.reduce(key, rank, size, value, deadline, describe, self._owners(names),
                    lambda vs, out: _fold(op, vs, out))

  def route(self, what, names, pieces):
    """The next collective over ``names`` that delivers pieces: ``pieces`` maps member
    ranks to the value this device sends each; returns ``({source rank: the piece it
    addressed to this device}, rank)``.  A transport spanning processes sends each
    process only the pieces addressed to its members (``route``); otherwise every
    member's pieces are exchanged."""
    t = self.transport or _transport
    if self.procs is not None and hasattr(t, "route") and self.group(names)[2] > 1:
      key, rank, size, deadline, describe = self._next(what, names)
      return t.route(key, rank, size, pieces, deadline, describe,
                     self._owners(names)), rank
    values, rank = self.exchange(what, names, pieces)
    return {s: v[rank] for s, v in enumerate(values) if rank in v}, rank

  def _owners(self, names):
    """The process of each member (rank order) of this device's group over ``names``."""
    idx = [self.coords[n] if n not in names else slice(None) for n in self.axis_names]
    sub = self.procs[tuple(idx)]
    order = [n for n in self.axis_names if n in names]
    sub = np.transpose(sub, [order.index(n) for n in names]) if len(names) > 1 else sub
    return tuple(int(p) for p in np.ravel(sub))

  def index(self, names):
    return self.group(names)[1]


_tls = threading.local()


def current():
  """The DeviceContext of the device program running on this thread, or None."""
  return getattr(_tls, "ctx", None)


class device_context:
  """``with device_context(ctx):`` -- run a device program's code with ``ctx``."""

  def __init__(self, ctx):
    self.ctx = ctx

  def __enter__(self):
    self.prev = getattr(_tls, "ctx", None)
    _tls.ctx = self.ctx
    return self.ctx

  def __exit__(self, *exc):
    _tls.ctx = self.prev
    return False


# --- the collectives on NumPy values -----------------------------------------------------
def _fold(op, values, out=None):
  """``op`` folded over ``values`` left to right (rank order); after the first step the
  accumulator is updated in place (the same bits, no temporary per member).  With
  ``out`` (an array of the values' shape and dtype) the fold is written there."""
  if len(values) == 1:
    if out is None:
      return values[0]
    out[...] = values[0]
    return out
  acc = op(values[0], values[1]) if out is None else op(values[0], values[1], out=out)
  for v in values[2:]:
    if type(acc) is np.ndarray and acc.shape == np.shape(v) and acc.dtype == v.dtype:
      op(acc, v, out=acc)
    else:
      acc = op(acc, v)
  return acc


def _np(x):
  return np.asarray(x)


def reduce(ctx, kind, x, names):
  """``psum``/``pmax``/``pmin`` of ``x`` over ``names``: every member's values folded in
  rank order."""
  x = _np(x)
  if kind == "psum":
    op = np.logical_or if x.dtype == np.bool_ else np.add
  elif kind == "pmax":
    op = np.maximum
  else:
    op = np.minimum
  return np.asarray(ctx.reduce(kind, names, x, op), dtype=x.dtype)


def reduce_many(ctx, kind, xs, names):
  """``reduce`` of several operands in one collective per dtype: the operands of a
  dtype travel as one flat value (elementwise folds: the same bits as one by one)."""
  xs = [_np(x) for x in xs]
  if len(xs) == 1:
    return [reduce(ctx, kind, xs[0], names)]
  out = [None] * len(xs)
  by_dtype = {}
  for i, x in enumerate(xs):
    by_dtype.setdefault(x.dtype, []).append(i)
  for idx in by_dtype.values():
    flat = np.concatenate([xs[i].reshape(-1) for i in idx]) if len(idx) > 1 else xs[idx[0]]
    red = reduce(ctx, kind, flat, names)
    if len(idx) == 1:
      out[idx[0]] = red
      continue
    red = red.reshape(-1)
    off = 0
    for i in idx:
      n = xs[i].size
      out[i] = red[off:off + n].reshape(xs[i].shape)
      off += n
  return out


def all_gather(ctx, x, names, axis, tiled):
  x = _np(x)
  values, _ = ctx.exchange("all_gather", names, x)
  if tiled:
    return np.concatenate(values, axis=axis)
  return np.stack(values, axis=axis)


def reduce_scatter(ctx, x, names, dim, tiled):
  """``psum_scatter``: member ``j`` gets the rank-order sum of block ``j`` (along
  ``dim``) of every member's value.  Each member sends each other member only that
  member's block (``route``) and folds the blocks it receives: the same bits as
  slicing the whole sum, with 1/n of the traffic and of the additions."""
  x = _np(x)
  n = ctx.group(names)[2]
  blocks = np.split(x, n, axis=dim)
  if not tiled:
    blocks = [b.squeeze(dim) for b in blocks]
  got, _ = ctx.route("psum_scatter", names, dict(enumerate(blocks)))
  total = _fold(np.add, [got[s] for s in range(n)])
  if n == 1:
    return np.array(total, dtype=x.dtype, copy=True)
  return np.ascontiguousarray(total, dtype=x.dtype)


def ppermute(ctx, x, names, perm):
  x = _np(x)
  me = ctx.index(names)
  got, rank = ctx.route("ppermute", names, {t: x for s, t in perm if s == me})
  for s, t in perm:
    if t == rank:
      return np.array(got[s], copy=True)
  return np.zeros_like(x)


def all_to_all(ctx, x, names, split_axis, concat_axis):
  """Member ``j`` gets the ``j``-th chunk along ``split_axis`` of every member's value,
  concatenated along ``concat_axis`` in member order."""
  x = _np(x)
  n = ctx.group(names)[2]
  got, _ = ctx.route("all_to_all", names, dict(enumerate(np.split(x, n, axis=split_axis))))
  return np.concatenate([got[s] for s in range(n)], axis=concat_axis)


def axis_index(ctx, name):
  return np.int32(ctx.coords[name])
