"""Many processes: the collective runtime's transport over MPI (``mpi4py``).

A process launched by ``mpiexec -n N`` owns its local devices; a mesh may span the
devices of several processes.  The collectives of a ``shard_map`` over such a mesh meet
as in one process (``collectives.py``): the members of a group that live in this process
meet in-process, and once all of them have arrived the first to notice sends their
values -- one message per other process of the group, ``isend`` of ``(key, {rank:
value})`` -- and the group's meeting completes when every other process's message for
the same key is in.  Every member then reads all values in rank order, so reductions fold
in the same order (and give the same bits) as on one process with as many devices.

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

from pyjax._src.errors import JaxRuntimeError
from pyjax._src.runtime import collectives as _coll

_TAG_DATA = 0x5a1
_TAG_ABORT = 0x5a2

_world = None          # the MPITransport once initialized


def world():
  """The MPI transport of this process (None before ``jax.distributed.initialize``)."""
  return _world


class _Meeting:
  __slots__ = ("values", "local_left", "remote", "sent", "done", "left")

  def __init__(self, size, n_local, remote):
    self.values = [None] * size
    self.local_left = n_local
    self.remote = remote          # the other processes of the group
    self.sent = False
    self.done = False
    self.left = n_local


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
    self._sends = []              # pending isend requests (kept alive until complete)
    self._runs = itertools.count()
    self._host_seq = itertools.count()

  def new_run_id(self):
    """Run ids of multi-process runs: every process counts them in the same order."""
    return ("mpi", next(self._runs))

  # -- messages (callers hold self._cond) ----------------------------------------------
  def _send(self, obj, dest, tag):
    self._sends.append(self.comm.isend(obj, dest=dest, tag=tag))

  def _progress(self):
    """Take every message that has arrived; complete finished sends."""
    MPI = self.MPI
    status = MPI.Status()
    while True:
      msg = self.comm.improbe(source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG, status=status)
      if msg is None:
        break
      src, tag = status.Get_source(), status.Get_tag()
      obj = msg.recv()
      if tag == _TAG_ABORT:
        run_id, text = obj
        self._aborted.setdefault(run_id, f"process {src} failed: {text}")
        self._cond.notify_all()
      else:
        key, values = obj
        self._mail[(key, src)] = values
        self._cond.notify_all()
    if self._sends:
      self._sends = [r for r in self._sends if not r.Test()]

  def _wait(self, ready, deadline, on_deadline, run_id=None, describe=None):
    """Poll messages until ``ready()`` (under the lock), the run is aborted or the
    deadline passes (``on_deadline()`` raises)."""
    pause = 2e-5
    while True:
      self._progress()
      if run_id is not None:   # an aborted run fails even where its data came in
        self._check_abort(run_id, describe)
      if ready():
        return
      if time.monotonic() >= deadline:
        on_deadline()
      self._cond.wait(pause)
      pause = min(pause * 2, 2e-3)

  def _check_abort(self, run_id, describe):
    err = self._aborted.get(run_id)
    if err is not None:
      raise _coll.RunAborted(f"ABORTED: {describe()} was not completed because another "
                             f"device failed: {err}")

  # -- the Transport interface -------------------------------------------------------------
  def exchange(self, key, rank, size, value, deadline, describe, owners=None):
    """Every member's value in rank order; ``owners[r]`` is the process of rank ``r``."""
    run_id = key[0]
    with self._cond:
      self._progress()
      self._check_abort(run_id, describe)
      m = self._meetings.get(key)
      if m is None:
        if owners is None:
          owners = (self.rank,) * size
        mine = [r for r in range(size) if owners[r] == self.rank]
        remote = sorted(set(owners) - {self.rank})
        m = self._meetings[key] = _Meeting(size, len(mine), remote)
      m.values[rank] = value
      m.local_left -= 1
      if m.local_left == 0:
        mine = {r: v for r, v in enumerate(m.values) if v is not None}
        for p in m.remote:
          self._send((key, mine), p, _TAG_DATA)
        m.sent = True
        self._cond.notify_all()

      def ready():
        if m.done:
          return True
        if not m.sent or any((key, p) not in self._mail for p in m.remote):
          return False
        for p in m.remote:
          for r, v in self._mail.pop((key, p)).items():
            m.values[r] = v
        m.done = True
        self._cond.notify_all()
        return True

      def on_deadline():
        arrived = size - m.local_left if not m.sent else size - sum(
            1 for p in m.remote if (key, p) not in self._mail)
        self._abort_locked(run_id, "collective deadline exceeded")
        raise JaxRuntimeError(
            f"DEADLINE_EXCEEDED: {describe()}: not every device of its group (processes "
            f"{sorted(set(m.remote) | {self.rank})}) reached it within "
            f"{_coll.timeout_seconds():g} s ({arrived} of {size} members seen; a stalled "
            "or failed process, or a collective not reached by every device; set "
            "jax_collectives_timeout to wait longer)")
      self._wait(ready, deadline, on_deadline, run_id, describe)
      values = list(m.values)
      m.left -= 1
      if m.left == 0:
        self._meetings.pop(key, None)
      return values

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
        self._send((key, {self.rank: obj}), p, _TAG_DATA)

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
