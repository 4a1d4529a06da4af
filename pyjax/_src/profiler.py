"""``jax.profiler``: traces of pyjax's own work, and device memory profiles.

Tracing.  ``start_trace(log_dir)`` / ``stop_trace()`` (or ``with trace(log_dir):``) record
*complete* events (Chrome trace-event ``"ph": "X"``, microsecond timestamps from the start
of the trace, the OS thread id of the thread that did the work) for what pyjax does:

=============  ==========================================================================
category       events
=============  ==========================================================================
``trace``      staging a function into a jaxpr (``jit`` on a cache miss, ``make_jaxpr``,
               ``eval_shape``, control-flow bodies)
``compile``    building an executable: the NumPy plan, lowering to C, the C compiler
               process (``cc``), loading the shared object
``execute``    running an executable (``jit_<name>``, with its tier: numpy or native) and
               every task a device stream runs (on the stream's worker thread)
``transfer``   ``device_put`` (host -> device) and ``device_get`` (device -> host)
``wait``       a thread blocking on asynchronously computed values
``user``       ``TraceAnnotation`` / ``StepTraceAnnotation`` / ``annotate_function``
``ffi``        foreign function calls (``jax.ffi``)
=============  ==========================================================================

``stop_trace`` writes ``<log_dir>/plugins/profile/<YYYY_MM_DD_HH_MM_SS>/<host>.trace.json.gz``
(JAX's layout; gzip-compressed Chrome trace-event JSON, which Perfetto and
``chrome://tracing`` open), and with ``create_perfetto_trace`` (or
``create_perfetto_link``) also ``perfetto_trace.json.gz`` next to it (the same events
without the ``metadata`` block, as JAX writes it).

Instrumentation costs one global load and a comparison when no trace runs: instrumented
code reads ``profiler.session`` (None unless a trace is active).

Memory profiles.  ``device_memory_profile()`` returns a gzip-compressed pprof ``Profile``
protocol buffer (hand-encoded, no protobuf dependency) describing the live Arrays: one
sample per (device, dtype, shape) with the values ``allocations/count`` and
``space/bytes``; its location is a function named after the array type (``f32[1000]``),
and the samples carry ``device``, ``kind`` (``buffer``) and ``dtype`` labels.
``pprof`` and ``go tool pprof`` read it.

Differs from JAX: no XLA/XSpace profile (``.xplane.pb``) and no device-side timeline (the
CPU device's work is the ``execute`` events on its stream thread); ``create_perfetto_link``
writes the Perfetto file and prints how to open it, but does not serve it over HTTP and
does not block; ``profiler_options`` is accepted and ignored; memory profiles carry no
Python allocation stacks (pyjax does not record them) and list Arrays only, not
executables.
"""
from __future__ import annotations

import contextlib
import datetime
import functools
import gzip
import json
import os
import socket
import threading
import time

__all__ = ["trace", "start_trace", "stop_trace", "TraceAnnotation", "StepTraceAnnotation",
           "annotate_function", "device_memory_profile", "save_device_memory_profile",
           "ProfileOptions", "start_server", "stop_server"]

# The running trace (a _Session) or None.  Instrumented code tests this one global.
session = None
_lock = threading.Lock()


class _Session:
  """Events of one trace; ``add`` may be called from any thread."""

  def __init__(self, log_dir, perfetto_trace, perfetto_link):
    self.log_dir = str(log_dir)
    self.perfetto_trace = perfetto_trace or perfetto_link
    self.perfetto_link = perfetto_link
    self.t0 = time.perf_counter_ns()
    self.wall0 = time.time()
    self.events = []
    self.threads = {}
    self.pid = os.getpid()

  def now(self):
    return time.perf_counter_ns()

  def add(self, name, cat, start_ns, end_ns=None, args=None):
    """Record a complete event from ``start_ns`` (``perf_counter_ns``) to ``end_ns``
    (default: now) on the calling thread."""
    if end_ns is None:
      end_ns = time.perf_counter_ns()
    tid = threading.get_ident()
    if tid not in self.threads:
      self.threads[tid] = threading.current_thread().name
    ev = {"name": name, "cat": cat, "ph": "X", "pid": self.pid, "tid": tid,
          "ts": (start_ns - self.t0) / 1000.0, "dur": max(end_ns - start_ns, 0) / 1000.0}
    if args:
      ev["args"] = {k: _jsonable(v) for k, v in args.items()}
    self.events.append(ev)   # list.append is atomic under the GIL

  def to_json(self, with_metadata=True):
    events = list(self.events)
    meta = [{"name": "process_name", "ph": "M", "pid": self.pid, "tid": 0,
             "args": {"name": f"pyjax host (pid {self.pid})"}}]
    for tid, tname in list(self.threads.items()):
      meta.append({"name": "thread_name", "ph": "M", "pid": self.pid, "tid": tid,
                   "args": {"name": tname}})
    out = {"displayTimeUnit": "ns", "traceEvents": meta + events}
    if with_metadata:
      from pyjax import __version__
      out["metadata"] = {"pyjax_version": __version__, "hostname": socket.gethostname(),
                         "start_time_unix": self.wall0}
    return out


def _jsonable(v):
  if isinstance(v, (str, int, float, bool)) or v is None:
    return v
  return str(v)


class span:
  """``with span(name, cat, **args):`` records one event when a trace is active (for cold
  paths; hot paths test ``session`` themselves)."""
  __slots__ = ("name", "cat", "args", "s", "t")

  def __init__(self, name, cat, **args):
    self.name = name
    self.cat = cat
    self.args = args

  def __enter__(self):
    s = self.s = session
    if s is not None:
      self.t = time.perf_counter_ns()
    return self

  def __exit__(self, *exc):
    s = self.s
    if s is not None:
      s.add(self.name, self.cat, self.t, None, self.args)
    return False


class ProfileOptions:
  """Accepted for compatibility with JAX's ``ProfileOptions``; pyjax's tracer has no
  options (every field is ignored)."""

  def __init__(self):
    self.host_tracer_level = 2
    self.python_tracer_level = 0
    self.enable_hlo_proto = False
    self.start_timestamp_ns = 0
    self.duration_ms = 0
    self.repository_path = ""
    self.advanced_configuration = {}


def start_trace(log_dir, create_perfetto_link=False, create_perfetto_trace=False,
                profiler_options=None):
  """Start recording pyjax's events (see the module docstring); ``stop_trace`` writes them
  under ``log_dir``.  Only one trace may run at a time: starting a second raises
  ``RuntimeError`` as in JAX.  Differs from JAX: ``profiler_options`` is ignored."""
  global session
  del profiler_options
  with _lock:
    if session is not None:
      raise RuntimeError("Profile has already been started. "
                         "Only one profile may be run at a time.")
    session = _Session(os.fspath(log_dir), bool(create_perfetto_trace),
                       bool(create_perfetto_link))


def stop_trace():
  """Stop the running trace and write it to the ``log_dir`` given to ``start_trace``
  (``RuntimeError("No profile started")`` when none runs).  Returns None, as JAX."""
  global session
  with _lock:
    s = session
    if s is None:
      raise RuntimeError("No profile started")
    session = None
  _write(s)


def _run_dir(log_dir, wall):
  stamp = datetime.datetime.fromtimestamp(wall).strftime("%Y_%m_%d_%H_%M_%S")
  base = os.path.join(log_dir, "plugins", "profile")
  d = os.path.join(base, stamp)
  n = 1
  while os.path.exists(d):   # two traces in one second: keep both
    n += 1
    d = os.path.join(base, f"{stamp}_{n}")
  os.makedirs(d)
  return d


def _write(s):
  d = _run_dir(s.log_dir, time.time())
  host = socket.gethostname() or "localhost"
  path = os.path.join(d, f"{host}.trace.json.gz")
  with gzip.open(path, "wt", encoding="utf-8") as f:
    json.dump(s.to_json(True), f)
  if s.perfetto_trace:
    perfetto = os.path.join(d, "perfetto_trace.json.gz")
    with gzip.open(perfetto, "wt", encoding="utf-8") as f:
      json.dump(s.to_json(False), f)
    if s.perfetto_link:
      print(f"Perfetto trace written to {os.path.abspath(perfetto)}; open "
            "https://ui.perfetto.dev and choose 'Open trace file' to view it.")
  return path


@contextlib.contextmanager
def trace(log_dir, create_perfetto_link=False, create_perfetto_trace=False,
          profiler_options=None):
  """``start_trace`` on entry, ``stop_trace`` on exit (also when the block raises)."""
  start_trace(log_dir, create_perfetto_link, create_perfetto_trace, profiler_options)
  try:
    yield
  finally:
    stop_trace()


class TraceAnnotation:
  """``with TraceAnnotation(name, **kwargs):`` records an event spanning the block (the
  keyword arguments become the event's ``args``) while a trace is active; otherwise does
  nothing.  Also usable as a decorator-free object with ``__enter__``/``__exit__``."""

  _cat = "user"

  def __init__(self, name, **kwargs):
    self.name = name
    self.kwargs = kwargs
    self._s = None
    self._t = 0

  def __enter__(self):
    s = self._s = session
    if s is not None:
      self._t = time.perf_counter_ns()
    return self

  def __exit__(self, *exc):
    s, self._s = self._s, None
    if s is not None:
      s.add(self.name, self._cat, self._t, None, self.kwargs)
    return False


class StepTraceAnnotation(TraceAnnotation):
  """A ``TraceAnnotation`` marking one step of a loop (pass ``step_num=``); recorded with
  category ``step`` and the step number in its ``args``."""

  _cat = "step"


def annotate_function(func, name=None, **decorator_kwargs):
  """Decorator: every call of ``func`` is recorded as an event named ``name`` (default:
  the function's qualified name) while a trace is active."""
  name = name or getattr(func, "__qualname__", None) or func.__name__

  @functools.wraps(func)
  def wrapper(*args, **kwargs):
    with TraceAnnotation(name, **decorator_kwargs):
      return func(*args, **kwargs)
  return wrapper


_server = [None]


def start_server(port):
  """JAX starts a gRPC profiler server for TensorBoard to connect to; pyjax has no such
  server, so this only records that one was requested (``stop_server`` undoes it) and
  raises ``ValueError`` for a second one, as JAX.  Use ``start_trace``/``trace``."""
  if _server[0] is not None:
    raise ValueError("Only one profiler server can be active at a time.")
  _server[0] = int(port)
  return None


def stop_server():
  """Forget the server recorded by ``start_server`` (``ValueError`` when none is)."""
  if _server[0] is None:
    raise ValueError("No active profiler server.")
  _server[0] = None


# --- device memory profiles (pprof) -------------------------------------------------------
def _live_arrays(platform=None):
  """Every live, not deleted ``ArrayImpl`` (found through the garbage collector's object
  list, so creating Arrays costs nothing extra)."""
  import gc
  from pyjax._src.runtime.array import ArrayImpl
  out = []
  for o in gc.get_objects():
    if isinstance(o, ArrayImpl) and not o.is_deleted():
      if platform is None or o._dev().platform == platform:
        out.append(o)
  return out


def _varint(n):
  out = bytearray()
  n &= (1 << 64) - 1
  while True:
    b = n & 0x7F
    n >>= 7
    if n:
      out.append(b | 0x80)
    else:
      out.append(b)
      return bytes(out)


def _field_varint(field, n):
  return _varint(field << 3) + _varint(n)


def _field_bytes(field, data):
  return _varint((field << 3) | 2) + _varint(len(data)) + data


def _packed(field, values):
  return _field_bytes(field, b"".join(_varint(v) for v in values))


def _pprof(samples, period_note):
  """Encode a pprof ``Profile``: ``samples`` is a list of (type name, count, bytes,
  labels dict)."""
  strings = {"": 0}

  def s(x):
    if x not in strings:
      strings[x] = len(strings)
    return strings[x]

  body = bytearray()
  for typ, unit in (("allocations", "count"), ("space", "bytes")):
    body += _field_bytes(1, _field_varint(1, s(typ)) + _field_varint(2, s(unit)))
  funcs, locs = {}, []
  for name, count, nbytes, labels in samples:
    fid = funcs.get(name)
    if fid is None:
      fid = funcs[name] = len(funcs) + 1
      locs.append((fid, fid))
    msg = _packed(1, [fid]) + _packed(2, [count, nbytes])
    for k, v in labels.items():
      if isinstance(v, int):
        lab = _field_varint(1, s(k)) + _field_varint(3, v)
        if k == "bytes":
          lab += _field_varint(4, s("bytes"))
      else:
        lab = _field_varint(1, s(k)) + _field_varint(2, s(str(v)))
      msg += _field_bytes(3, lab)
    body += _field_bytes(2, msg)
  for lid, fid in locs:   # Location {id, line {function_id}}
    body += _field_bytes(4, _field_varint(1, lid) + _field_bytes(4, _field_varint(1, fid)))
  for name, fid in funcs.items():   # Function {id, name, system_name}
    body += _field_bytes(5, _field_varint(1, fid) + _field_varint(2, s(name))
                         + _field_varint(3, s(name)))
  note = s(period_note)
  for text in strings:   # string_table, in index order (dicts keep insertion order)
    body += _field_bytes(6, text.encode("utf-8"))
  body += _field_varint(9, time.time_ns())        # time_nanos
  body += _field_bytes(11, _field_varint(1, s("space")) + _field_varint(2, s("bytes")))
  body += _field_varint(13, note)                 # comment
  return bytes(body)


def device_memory_profile(backend=None):
  """A gzip-compressed pprof protocol buffer describing the live Arrays' memory (see the
  module docstring for its contents).  ``backend``: a platform name (default: all).
  Differs from JAX: samples are grouped by device, dtype and shape, not by Python
  allocation stack."""
  from pyjax._src.runtime import devices as _devices
  if backend is not None:
    _devices.get_backend(backend)   # raises for an unknown platform
  groups = {}
  seen = set()
  for a in _live_arrays(backend):
    b = a._buf
    key_buf = id(b)
    if key_buf in seen:   # two Arrays sharing one buffer hold it once
      continue
    seen.add(key_buf)
    aval = a.aval
    dev = a._dev()
    k = (str(dev), aval.str_short(short_dtypes=True), str(aval.dtype))
    cnt, nb = groups.get(k, (0, 0))
    groups[k] = (cnt + 1, nb + int(a.nbytes))
  samples = [(typ, cnt, nb, {"device": dev, "kind": "buffer", "dtype": dt, "bytes": nb})
             for (dev, typ, dt), (cnt, nb) in sorted(groups.items())]
  return gzip.compress(_pprof(samples, "pyjax device memory profile: live Arrays"))


def save_device_memory_profile(filename, backend=None):
  """Write ``device_memory_profile(backend)`` to ``filename``."""
  data = device_memory_profile(backend)
  with open(filename, "wb") as f:
    f.write(data)
