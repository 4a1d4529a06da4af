"""Many processes: the collective runtime's transport over MPI (``mpi4py``).

A process launched by ``mpiexec -n N`` owns its local devices; a mesh may span the
devices of several processes.  The collectives of a ``shard_map`` over such a mesh meet
as in one process (``collectives.py``): the members of a group that live in this process
meet in-process, and once all of them have arrived the first to notice sends their
values -- one message per other process of the group, ``isend`` of ``(key, {rank:
value})`` -- and the group's meeting completes when every other process's message for
the same key is in.  Every member then reads all values in rank order, so reductions fold
in the same order (and give the same bits) as on one process with as many devices.
Large all-reduces go in parts (``reduce``: reduce-scatter then all-gather, each slice
folded in rank order); ``ppermute``/``all_to_all``/``psum_scatter`` send each process
only the pieces addressed to its members (``route``).

Nothing blocks: sends are non-blocking requests, arrivals are found by probing
(``iprobe``/``mprobe``) from the waiting threads, each of which gives up at the
collective deadline (``JaxRuntimeError('DEADLINE_EXCEEDED: ...')``).  A device program
that fails aborts its run here and sends an abort message to every other process; their
members of that run raise at once instead of waiting for the deadline.

Also here: ``world()`` (the communicator once ``jax.distributed.initialize`` ran) and the
host-level operations ``multihost_utils`` builds on (``allgather_objects``,
``barrier``), which use the same non-blocking messages and deadline.
"""
from __future__ import annotations

import itertools
import threading
import time

import numpy as np

from pyjax._src.errors import JaxRuntimeError
from pyjax._src.runtime import collectives as _coll

_TAG_DATA = 0x5a1
_TAG_ABORT = 0x5a2
_TAG_BUF = 0x5a3
_RAW_MIN = 1024                   # arrays of at least this many bytes travel unpickled
_RAW_KINDS = frozenset("biufcV")
_SPIN_SECONDS = 2e-4              # poll without sleeping this long before backing off
_PARTS_MIN = 256 << 10            # all-reduces of smaller values take one round
_SCRATCH_MAX = 256 << 20          # bytes of reduce-scatter receive buffers kept for reuse

_world = None          # the MPITransport once initialized


def world():
  """The MPI transport of this process (None before ``jax.distributed.initialize``)."""
  return _world


class _Meeting:
  __slots__ = ("values", "owners", "local", "remote", "local_left", "sent", "done", "left",
               "reduced", "result")

  def __init__(self, size, owners, me):
    self.values = [None] * size
    self.owners = tuple(owners)
    self.local = [r for r in range(size) if owners[r] == me]
    self.remote = sorted(set(owners) - {me})     # the other processes of the group
    self.local_left = self.left = len(self.local)
    self.sent = False
    self.done = False
    self.reduced = self.result = None


class MPITransport(_coll.Transport):
  """The collective transport for runs whose devices span processes (see the module
  docstring).  ``comm`` is an ``mpi4py`` communicator; every MPI call is made under one
  lock and never blocks."""

  def __init__(self, comm, mpi):
    self.comm = comm
    self.MPI = mpi
    self.rank = comm.Get_rank()
    self.size = comm.Get_size()
    self._cond = threading.Condition(threading.Lock())
    self._meetings = {}
    self._mail = {}               # (key, source process) -> {rank: value}
    self._aborted = {}            # run id -> error description
    self._sends = []              # (pending send request, its buffer) until complete
    self._incoming = []           # ((key, source), values, receive requests) in flight
    self._poller = False          # whether a waiting thread is polling MPI
    self._runs = itertools.count()
    self._host_seq = itertools.count()
    self._events = 0              # messages taken, receives and sends completed
    self._expect = {}             # (key, source process) -> {rank: where its bytes land}
    self._scratch = {}            # nbytes -> free receive buffers (reduce-scatter parts)
    self._scratch_bytes = 0

  def new_run_id(self):
    """Run ids of multi-process runs: every process counts them in the same order."""
    return ("mpi", next(self._runs))

  # -- messages (callers hold self._cond) ----------------------------------------------
  # A data message is a pickled header ``(key, {rank: entry})``; NumPy arrays of at least
  # _RAW_MIN bytes are entries ``("buf", dtype, shape)`` whose bytes follow as raw
  # messages (tag _TAG_BUF, in header order: MPI keeps the order of messages between two
  # processes on one tag), so large arrays are never pickled or copied into a pickle.
  def _send(self, obj, dest, tag):
    self._sends.append((self.comm.isend(obj, dest=dest, tag=tag), None))

  def _send_values(self, key, values, dest):
    header, raw = {}, []
    for r, v in values.items():
      if type(v) is np.ndarray and v.dtype.kind in _RAW_KINDS and v.nbytes >= _RAW_MIN:
        a = np.ascontiguousarray(v)
        header[r] = ("buf", a.dtype, a.shape)
        raw.append(a)
      else:
        header[r] = ("obj", v)
    self._send((key, header), dest, _TAG_DATA)
    for a in raw:
      req = self.comm.Isend([a.reshape(-1).view(np.uint8), self.MPI.BYTE], dest=dest,
                            tag=_TAG_BUF)
      self._sends.append((req, a))

  def _progress(self):
    """Take every message that has arrived; complete finished sends and receives."""
    MPI = self.MPI
    status = MPI.Status()
    for tag in (_TAG_ABORT, _TAG_DATA):
      while True:
        msg = self.comm.improbe(source=MPI.ANY_SOURCE, tag=tag, status=status)
        if msg is None:
          break
        src = status.Get_source()
        obj = msg.recv()
        self._events += 1
        if tag == _TAG_ABORT:
          run_id, text = obj
          self._aborted.setdefault(run_id, f"process {src} failed: {text}")
          self._cond.notify_all()
          continue
        key, header = obj
        values, reqs = {}, []
        into = self._expect.pop((key, src), None) or {}
        for r, h in header.items():
          if h[0] == "buf":
            a = into.get(r)
            if a is None or a.dtype != h[1] or a.shape != h[2]:
              a = (self._take(h[1], h[2]) if key[-1] == "rs" else np.empty(h[2], h[1]))
            reqs.append(self.comm.Irecv([a.reshape(-1).view(np.uint8), MPI.BYTE],
                                        source=src, tag=_TAG_BUF))
            values[r] = a
          else:
            values[r] = h[1]
        if reqs:
          self._incoming.append(((key, src), values, reqs))
        else:
          self._mail[(key, src)] = values
          self._cond.notify_all()
    if self._incoming:
      still = []
      for k, values, reqs in self._incoming:
        if MPI.Request.Testall(reqs):
          self._mail[k] = values
          self._events += 1
          self._cond.notify_all()
        else:
          still.append((k, values, reqs))
      self._incoming = still
    if self._sends:
      n = len(self._sends)
      self._sends = [(r, a) for r, a in self._sends if not r.Test()]
      if len(self._sends) != n:
        self._events += 1

  def _wait(self, ready, deadline, on_deadline, run_id=None, describe=None):
    """Poll messages until ``ready()`` (under the lock), the run is aborted or the
    deadline passes (``on_deadline()`` raises).  One waiting thread at a time polls MPI
    (the others sleep until it takes a message or leaves), so waiting threads do not take
    the interpreter from the device programs still computing.  The poller spins while a
    receive is in flight or for _SPIN_SECONDS after the last message or completion, then
    sleeps between polls (50 us doubling to 1 ms)."""
    pause = 0.0
    spin_until = time.monotonic() + _SPIN_SECONDS
    polling = False
    try:
      while True:
        if not self._poller:
          self._poller = polling = True
        if polling:
          seen = self._events
          self._progress()
          if self._events != seen:
            spin_until = time.monotonic() + _SPIN_SECONDS
            pause = 0.0
        if run_id is not None:   # an aborted run fails even where its data came in
          self._check_abort(run_id, describe)
        if ready():
          return
        now = time.monotonic()
        if now >= deadline:
          on_deadline()
        if not polling:
          self._cond.wait(min(5e-3, max(deadline - now, 0)))
        elif self._incoming or now < spin_until:
          # data coming in moves only while MPI is called (no progress thread), and the
          # other processes usually come soon after the last message: keep polling.
          # Sends waiting for a late receiver do not count: spinning for them would take
          # the CPU from that receiver when processes outnumber cores; back off instead
          self._cond.wait(0)
        else:
          self._cond.wait(pause)
          pause = min(max(pause * 2, 5e-5), 1e-3)
    finally:
      if polling:
        self._poller = False
        self._cond.notify_all()

  def _check_abort(self, run_id, describe):
    err = self._aborted.get(run_id)
    if err is not None:
      raise _coll.RunAborted(f"ABORTED: {describe()} was not completed because another "
                             f"device failed: {err}")

  # -- the Transport interface -------------------------------------------------------------
  def exchange(self, key, rank, size, value, deadline, describe, owners=None):
    """Every member's value in rank order; ``owners[r]`` is the process of rank ``r``."""
    def start(m):
      mine = {r: m.values[r] for r in m.local}
      for p in m.remote:
        self._send_values(key, mine, p)

    def step(m):
      if any((key, p) not in self._mail for p in m.remote):
        return False
      for p in m.remote:
        for r, v in self._mail.pop((key, p)).items():
          m.values[r] = v
      return True
    return self._collective(key, rank, size, value, deadline, describe, owners, start,
                            step, lambda m, last: list(m.values))

  def route(self, key, rank, size, pieces, deadline, describe, owners):
    """Each member's ``pieces`` (``{destination rank: value}``) delivered: every process
    of the group sends each other one message holding the pieces addressed to that
    process's members (possibly none), so only what a process needs travels to it.
    Returns ``{source rank: the piece it addressed to rank}``."""
    def start(m):
      for p in m.remote:
        self._send_values(key, {(s, d): v for s in m.local for d, v in m.values[s].items()
                                if m.owners[d] == p}, p)

    def step(m):
      if any((key, p) not in self._mail for p in m.remote):
        return False
      m.result = {}
      for p in m.remote:
        m.result.update(self._mail.pop((key, p)))
      return True

    def result(m, last):
      got = {s: m.values[s][rank] for s in m.local if rank in m.values[s]}
      got.update((s, v) for (s, d), v in m.result.items() if d == rank)
      return got
    return self._collective(key, rank, size, pieces, deadline, describe, owners, start,
                            step, result)

  def reduce(self, key, rank, size, value, deadline, describe, owners, fold):
    """``fold`` (rank order) of every member's value, reduced in parts: the flattened
    value is cut into one slice per process of the group; each process receives its
    slice of every remote member's value, folds all members' slices in rank order, and
    sends the folded slice to the others (a reduce-scatter then an all-gather: each
    element is folded in the same order as by a fold of whole values).  ``fold(values,
    out)`` writes into ``out``.  The slices of remote members land in reused scratch
    buffers, the folded slices (this process's and the others') straight in the
    result: no copies, no fresh pages but the result's.  Values of less than
    _PARTS_MIN bytes skip the two rounds: every member's whole value is exchanged (one
    round) and folded here, in the same order."""
    if value.nbytes < _PARTS_MIN:
      values = self.exchange(key, rank, size, value, deadline, describe, owners)
      return fold(values, np.empty(value.shape, value.dtype))
    rs, ag = key + ("rs",), key + ("ag",)

    def cut(m):
      procs = sorted(set(m.owners))
      n = m.values[m.local[0]].size
      bounds = [n * k // len(procs) for k in range(len(procs) + 1)]
      return procs, bounds

    def start(m):
      procs, bounds = cut(m)
      first = m.values[m.local[0]]
      m.result = np.empty(first.size, first.dtype)
      flat = {r: m.values[r].reshape(-1) for r in m.local}
      for k, p in enumerate(procs):
        if p != self.rank:
          lo, hi = bounds[k], bounds[k + 1]
          self._expect[(ag, p)] = {p: m.result[lo:hi]}
          self._send_values(rs, {r: f[lo:hi] for r, f in flat.items()}, p)

    def step(m):
      procs, bounds = cut(m)
      me = procs.index(self.rank)
      lo, hi = bounds[me], bounds[me + 1]
      out = m.result
      if m.reduced is None:
        if any((rs, p) not in self._mail for p in m.remote):
          return False
        parts = {r: m.values[r].reshape(-1)[lo:hi] for r in m.local}
        got = [self._mail.pop((rs, p)) for p in m.remote]
        for g in got:
          parts.update(g)
        m.reduced = out[lo:hi]
        fold([parts[r] for r in range(size)], m.reduced)
        for g in got:
          for a in g.values():
            self._give(a)
        for p in m.remote:
          self._send_values(ag, {self.rank: m.reduced}, p)
      if any((ag, p) not in self._mail for p in m.remote):
        return False
      for p in m.remote:
        k = procs.index(p)
        got = self._mail.pop((ag, p))[p]
        dest = out[bounds[k]:bounds[k + 1]]
        if not np.shares_memory(got, dest):   # arrived before this meeting began
          dest[...] = got
      m.result = out.reshape(m.values[m.local[0]].shape)
      return True
    return self._collective(key, rank, size, value, deadline, describe, owners, start,
                            step, lambda m, last: m.result if last else m.result.copy())

  def _take(self, dtype, shape):
    """A receive buffer for a reduce-scatter part (from the scratch pool)."""
    dtype = np.dtype(dtype)
    nbytes = dtype.itemsize * int(np.prod(shape))
    free = self._scratch.get(nbytes)
    if free:
      self._scratch_bytes -= nbytes
      return free.pop().reshape(-1).view(np.uint8).view(dtype).reshape(shape)
    return np.empty(shape, dtype)

  def _give(self, a):
    """Return a buffer from ``_take`` to the pool (kept up to _SCRATCH_MAX bytes)."""
    root = a
    while isinstance(root, np.ndarray) and isinstance(root.base, np.ndarray):
      root = root.base
    if (not isinstance(root, np.ndarray) or root.base is not None or root.nbytes < _RAW_MIN
        or root.nbytes != a.nbytes or not root.flags.writeable):
      return
    if self._scratch_bytes + root.nbytes <= _SCRATCH_MAX:
      self._scratch.setdefault(root.nbytes, []).append(root)
      self._scratch_bytes += root.nbytes

  def _collective(self, key, rank, size, value, deadline, describe, owners, start, step,
                  result):
    """One meeting: local members arrive; the last calls ``start`` (its sends); waiting
    members poll messages and call ``step`` until it says the meeting is complete; each
    member leaves with ``result(meeting, is_last_to_leave)``."""
    run_id = key[0]
    with self._cond:
      self._progress()
      self._check_abort(run_id, describe)
      m = self._meetings.get(key)
      if m is None:
        if owners is None:
          owners = (self.rank,) * size
        m = self._meetings[key] = _Meeting(size, owners, self.rank)
      m.values[rank] = value
      m.local_left -= 1
      if m.local_left == 0:
        start(m)
        m.sent = True
        self._cond.notify_all()

      def ready():
        if not m.done and m.sent and step(m):
          m.done = True
          self._cond.notify_all()
        return m.done

      def on_deadline():
        self._abort_locked(run_id, "collective deadline exceeded")
        seen = len(m.local) - m.local_left
        raise JaxRuntimeError(
            f"DEADLINE_EXCEEDED: {describe()}: not every device of its group (processes "
            f"{sorted(set(m.owners))}) reached it within {_coll.timeout_seconds():g} s "
            f"({seen} of this process's {len(m.local)} members arrived; a stalled or "
            "failed process, or a collective not reached by every device; set "
            "jax_collectives_timeout to wait longer)")
      self._wait(ready, deadline, on_deadline, run_id, describe)
      m.left -= 1
      if m.left == 0:
        self._meetings.pop(key, None)
      return result(m, m.left == 0)

  def _abort_locked(self, run_id, text):
    if run_id in self._aborted:
      return
    self._aborted[run_id] = text
    for p in range(self.size):
      if p != self.rank:
        self._send((run_id, text), p, _TAG_ABORT)
    self._cond.notify_all()

  def abort(self, run_id, error):
    with self._cond:
      if not isinstance(error, _coll.RunAborted):
        self._abort_locked(run_id, f"{type(error).__name__}: {error}")
      else:
        self._aborted.setdefault(run_id, str(error))
        self._cond.notify_all()

  def finish(self, run_id):
    with self._cond:
      for k in [k for k in self._meetings if k[0] == run_id]:
        del self._meetings[k]
      for k in [k for k in self._expect if k[0][0] == run_id]:   # an aborted run's
        del self._expect[k]

  # -- host-level operations (multihost_utils) ---------------------------------------------
  def allgather_objects(self, obj, what="process_allgather"):
    """Every process's ``obj`` in process order (non-blocking messages, the collective
    deadline)."""
    key = ("host", next(self._host_seq))
    if self.size == 1:
      return [obj]
    deadline = time.monotonic() + _coll.timeout_seconds()
    others = [p for p in range(self.size) if p != self.rank]
    with self._cond:
      for p in others:
        self._send_values(key, {self.rank: obj}, p)

      def ready():
        return all((key, p) in self._mail for p in others)

      def on_deadline():
        missing = [p for p in others if (key, p) not in self._mail]
        raise JaxRuntimeError(
            f"DEADLINE_EXCEEDED: {what}: processes {missing} did not take part within "
            f"{_coll.timeout_seconds():g} s (every process must call it; set "
            "jax_collectives_timeout to wait longer)")
      self._wait(ready, deadline, on_deadline)
      out = [None] * self.size
      out[self.rank] = obj
      for p in others:
        out[p] = self._mail.pop((key, p))[p]
      return out

  def flush(self, timeout=5.0):
    """Wait (up to ``timeout`` s) for this process's sends to complete."""
    end = time.monotonic() + timeout
    with self._cond:
      while self._sends and time.monotonic() < end:
        self._progress()
        if self._sends:
          self._cond.wait(1e-3)


def start(comm, mpi):
  """Install the MPI transport for ``comm`` (``jax.distributed.initialize``)."""
  global _world
  _world = MPITransport(comm, mpi)
  _coll.set_process_transport(_world)
  return _world


def stop():
  """Remove the MPI transport (``jax.distributed.shutdown``)."""
  global _world
  if _world is not None:
    _world.flush()
  _world = None
  _coll.set_process_transport(None)
