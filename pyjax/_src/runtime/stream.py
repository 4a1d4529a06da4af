"""Per-device streams: asynchronous, in-order execution of enqueued work.

Each device owns one ``Stream`` (a daemon worker thread, started on first use) that runs
the work enqueued on it in order.  ``Stream.submit(fn, bufs, nout)`` returns at once with
``nout`` ``PendingBuffer`` slots; the worker resolves pending inputs (work enqueued earlier,
so on the same stream they are already done), calls ``fn(*bufs)`` and fills the slots.
``PendingBuffer.result()`` waits for its task and returns its value, or raises the
exception the work raised (at every read, as JAX does).  The heavy native code called by
the worker releases the GIL, so the Python thread that enqueued the work keeps running.

Work submitted from a worker thread itself (a host callback inside asynchronous work that
calls a jitted function) is never enqueued: the caller runs it synchronously, so a stream
never waits for itself.  At interpreter exit every stream is drained first.

A thread that waits for a task nobody has started yet, whose predecessor on the stream has
finished, runs it itself ("help first"): the common ``f(x).block_until_ready()`` then costs
no thread hand-off in either direction -- on a virtual machine, waking a sleeping thread
takes tens of microseconds each way.  Each task is claimed once (by the worker or by a
waiter), and a task runs only after its predecessor has finished, so work still runs in
enqueue order.
"""
from __future__ import annotations

import atexit
import os
import queue
import threading
import weakref

from pyjax._src import profiler as _profiler

_allocate_lock = threading.Lock


class Task:
  """One piece of enqueued work; ``lock`` is held until it is done, ``claim`` by whoever
  runs it; ``prev`` is a weak reference to the task enqueued before it (or None); ``slot``
  the one-item list the queue holds it in (emptied when it is taken, so a task a waiter
  ran is not kept alive -- with its outputs -- until the worker gets to its slot)."""
  __slots__ = ("fn", "args", "lock", "claim", "prev", "slot", "done", "values", "error",
               "tb", "__weakref__")

  def __init__(self, fn, args):
    self.fn = fn
    self.args = args
    self.lock = _allocate_lock()
    self.lock.acquire()
    self.claim = _allocate_lock()
    self.prev = None
    self.slot = None
    self.done = False
    self.values = None
    self.error = None
    self.tb = None

  def wait(self):
    """Wait until the work has run (no exception here; see ``result``); runs it here when
    it is next in line and nobody has started it."""
    if not self.done:
      if self._prev_done() and self.claim.acquire(False):
        self._run_here()
        return
      lock = self.lock
      prof = _profiler.session
      if prof is None:
        lock.acquire()
      else:
        t_prof = prof.now()
        lock.acquire()
        prof.add("wait for async result", "wait", t_prof)
      lock.release()

  def _prev_done(self):
    p = self.prev
    p = p and p()
    return p is None or p.done

  def _run_here(self):
    slot, self.slot = self.slot, None
    if slot is not None:
      slot[0] = None
    # as on a worker: work this task submits runs synchronously (see in_worker)
    was = getattr(_tls, "worker", False)
    _tls.worker = True
    try:
      self.run()
    finally:
      _tls.worker = was

  def run(self):
    prof = _profiler.session
    if prof is not None:
      t_prof = prof.now()
      name = getattr(self.fn, "__name__", "task")
    try:
      args = self.args
      for b in args:
        if type(b) is PendingBuffer:
          args = [a.result() if type(a) is PendingBuffer else a for a in args]
          break
      self.values = self.fn(*args)
    except BaseException as e:  # noqa: BLE001  -- stored, raised at the first wait
      if isinstance(e, MemoryError):   # as XLA: RESOURCE_EXHAUSTED
        from pyjax._src import errors
        e = errors.out_of_memory(e)
      self.error = e
      self.tb = e.__traceback__
    finally:
      self.fn = self.args = self.prev = None     # drop the inputs once the work has run
      if prof is not None:
        prof.add(f"stream task {name}", "execute", t_prof, None,
                 {"error": type(self.error).__name__} if self.error is not None else None)
      self.done = True
      self.lock.release()


class PendingBuffer:
  """Output ``index`` of an enqueued ``Task``: a future-like buffer slot."""
  __slots__ = ("_task", "_index")

  def __init__(self, task, index):
    self._task = task
    self._index = index

  def done(self):
    return self._task.done

  def result(self):
    """The NumPy buffer, waiting for the work; re-raises the work's exception."""
    t = self._task
    if not t.done:
      t.wait()
    e = t.error
    if e is not None:
      raise e.with_traceback(t.tb)   # the same exception at every read, its traceback reset
    return t.values[self._index]

  def wait(self):
    """Wait without raising."""
    self._task.wait()


_tls = threading.local()
_streams = []
_streams_lock = threading.Lock()


def in_worker():
  """True on a stream's worker thread."""
  return getattr(_tls, "worker", False)


class Stream:
  """An in-order queue of work for one device, run by one daemon thread."""

  def __init__(self, name):
    self.name = name
    self._q = queue.SimpleQueue()
    self._thread = None
    self._last = None
    self._start_lock = threading.Lock()
    self._submit_lock = threading.Lock()
    with _streams_lock:
      _streams.append(self)

  def _start(self):
    with self._start_lock:
      if self._thread is None:
        t = threading.Thread(target=self._loop, name=f"pyjax-stream-{self.name}",
                             daemon=True)
        t.start()
        self._thread = t

  def submit(self, fn, bufs, nout):
    """Enqueue ``fn(*bufs)`` (``bufs`` may hold PendingBuffers); returns ``nout``
    PendingBuffers for its outputs."""
    task = Task(fn, bufs)
    if self._thread is None:
      self._start()
    with self._submit_lock:
      # weak references: the stream must not keep a finished task's outputs alive (a dead
      # task has run: the queue, the worker or a waiter running it hold it until then)
      task.prev = self._last
      task.slot = slot = [task]
      self._q.put(slot)
      self._last = weakref.ref(task)
    return [PendingBuffer(task, i) for i in range(nout)]

  def idle(self):
    t = self._last and self._last()
    return t is None or t.done

  def synchronize(self):
    """Wait until every piece of work enqueued so far has run."""
    t = self._last and self._last()
    if t is not None:
      t.wait()

  def _loop(self):
    _tls.worker = True
    get = self._q.get
    while True:
      slot = get()
      task, slot[0] = slot[0], None
      del slot
      if task is None:                  # a waiter ran it
        continue
      task.slot = None
      if task.claim.acquire(False):     # else a waiter runs it
        p = task.prev
        p = p and p()
        if p is not None:               # (run by a waiter, perhaps still running)
          p.wait()
          del p
        task.run()
      del task


def synchronize_all():
  """Wait for the work of every stream (errors stay with their arrays)."""
  with _streams_lock:
    streams = list(_streams)
  for s in streams:
    if not in_worker():
      s.synchronize()


atexit.register(synchronize_all)


def _after_fork_in_child():
  # worker threads do not survive fork: start fresh ones on demand
  global _streams_lock
  _streams_lock = threading.Lock()
  for s in _streams:
    s._q = queue.SimpleQueue()
    s._thread = None
    s._last = None
    s._start_lock = threading.Lock()
    s._submit_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
  os.register_at_fork(after_in_child=_after_fork_in_child)
