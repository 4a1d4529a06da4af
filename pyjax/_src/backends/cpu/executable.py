"""The CPU backend's executables for ``jit``.

``compile_jaxpr(closed_jaxpr, device, name)`` returns a ``CpuExecutable``: ``exe.fn(*bufs)``
takes NumPy arrays of the input avals' dtypes and returns the list of output arrays.

Two tiers run the same program:

- the *NumPy plan*: one straight-line generated Python function calling the eager NumPy
  implementation of each equation (nested ``jit`` inlined, dead equations dropped).  It is
  ready at once;
- the *native executable* from the C compiler (``compiler/``): fused C kernels, BLAS calls
  and NumPy steps for what the code generator does not handle, one native call per
  segment.

Tiered start: a function's first calls run the NumPy plan; the compiler lowers and builds
the native executable on a background thread (started on the second call, or at once for
programs that touch many elements) and ``exe.fn`` switches to it when ready.
``jit(f).lower(x).compile()`` -- or ``exe.wait()`` -- waits for it.  ``PYJAX_COMPILE``
selects the mode: ``async`` (default), ``sync`` (compile before the first call returns;
deterministic, used by tests that check native results), ``0``/``off`` (NumPy only).
``PYJAX_DEBUG=1`` logs every compilation (time, kernels, segments, NumPy steps); higher
levels show the jaxpr, the compiler's IR and the C (``debug.py``).  Without a C compiler
everything runs on the NumPy plan, with one warning.

Asynchronous dispatch: once native, a program that touches at least ``_ASYNC_WORK``
elements and has no effects is enqueued on its device's stream (``runtime/stream.py``) and
``exe.fn`` returns ``PendingBuffer``s at once (unless ``jax_cpu_enable_async_dispatch`` is
off, or the caller is a stream worker).  ``exe.call_pending(bufs)`` takes inputs that are
themselves pending: a native program without effects is then enqueued whatever its size
(the stream waits for them, not the caller); the NumPy tier and programs with effects
(debug/IO callbacks: their output order stays the program order) resolve them and run
synchronously.
"""
from __future__ import annotations

import contextlib
import itertools
import os
import queue
import sys
import threading
import time
import warnings

import numpy as np

from pyjax._src import config as _config
from pyjax._src import compiler as _compiler
from pyjax._src import profiler as _profiler
from pyjax._src.backends.cpu import debug as _dbg
from pyjax._src.backends.cpu import eager as cpu_eager
from pyjax._src.backends.cpu import reciprocal_div
from pyjax._src.backends.cpu.numpy_tier import native as tier_native
from pyjax._src.runtime import dispatch as _dispatch
from pyjax._src.runtime import stream as _stream
from pyjax._src.backends.cpu.compiler.native import outpool as _outpool

_impls = cpu_eager.impls
_counter = itertools.count()

_BIG_PROGRAM = 1 << 16      # elements touched: compile natively from the first call
_ASYNC_WORK = 1 << 16       # elements touched: native calls are enqueued on the stream
_mode_override = None


def set_compile_mode(mode):
  """Override ``PYJAX_COMPILE`` for this process ("async", "sync" or "off"; None: the
  environment decides).  Returns the previous override."""
  global _mode_override
  prev = _mode_override
  _mode_override = mode
  return prev


@contextlib.contextmanager
def compile_mode_override(mode):
  """``set_compile_mode(mode)`` for the duration of a ``with`` block."""
  prev = set_compile_mode(mode)
  try:
    yield
  finally:
    set_compile_mode(prev)


def compile_mode():
  m = _mode_override if _mode_override is not None else os.environ.get("PYJAX_COMPILE", "async")
  m = str(m).strip().lower()
  if m in ("0", "off", "false", "no", "numpy", "none"):
    return "off"
  if m in ("sync", "2", "wait"):
    return "sync"
  return "async"


def _compile_after():
  try:
    return max(int(os.environ.get("PYJAX_COMPILE_AFTER", "2")), 1)
  except ValueError:
    return 2


class CpuExecutable:
  """A compiled jaxpr: ``exe.fn(*buffers)`` returns the list of output buffers.
  ``exe.tier`` is "numpy", "pending" or "native"."""
  __slots__ = ("fn", "source", "in_avals", "out_avals", "device", "name", "_impl",
               "_closed", "_job", "native", "_calls", "_after", "_numpy_fn", "_work", "error",
               "_effects", "_donate", "__weakref__")

  def __init__(self, numpy_fn, source, closed, device, name, donate=()):
    self._donate = tuple(donate)   # (input, output) pairs: donated buffer -> its output
    self._numpy_fn = numpy_fn
    self.source = source
    self._closed = closed
    self.in_avals = list(closed.in_avals)
    self.out_avals = list(closed.out_avals)
    self.device = device
    self.name = name
    self.native = None
    self.error = None
    self._job = None
    self._calls = 0
    self._after = None   # calls before the native build (None: PYJAX_COMPILE_AFTER)
    self._work = _program_work(closed)
    # effects, or a host callback that may raise: such programs run synchronously on
    # every tier, so a callback's error surfaces at the call (as in JAX), never at a read
    self._effects = bool(closed.jaxpr.effects) or _calls_host(closed.jaxpr)
    self._impl = numpy_fn
    cell = self

    def fn(*bufs):
      prof = _profiler.session
      try:
        if prof is None:
          return cell._impl(*bufs)
        return _profiled_call(cell, prof, bufs)
      except MemoryError as e:   # as XLA: RESOURCE_EXHAUSTED
        from pyjax._src import errors
        raise errors.out_of_memory(e) from None
      except RuntimeWarning as w:   # made an error by the program's warnings filter
        if not _dispatch.is_fp_warning(w):
          raise
        return _dispatch.run_quietly(cell._impl, *bufs)
    fn.__name__ = f"jit_{name}"
    self.fn = fn

  def __call__(self, *bufs):
    return self._impl(*bufs)

  def call_uncounted(self, *bufs):
    """Run on the current tier without counting the call towards starting the native
    build: the other devices' share of one multi-device run (``shard_map`` runs one
    shared executable on every device; the run counts as one call)."""
    impl = self._impl
    if impl == self._counting:
      impl = self._numpy_fn
    return impl(*bufs)

  @property
  def tier(self):
    if self.native is not None:
      return "native"
    if self._job is not None and not self._job.done.is_set():
      return "pending"
    return "numpy"

  # -- tiers -------------------------------------------------------------------------------
  def _counting(self, *bufs):
    self._calls += 1
    if self._calls >= (self._after or _compile_after()):
      self._impl = self._numpy_fn
      self.start()
    return self._numpy_fn(*bufs)

  def start(self):
    """Queue the native build (no-op when already queued or done)."""
    if self._job is None and compile_mode() != "off":
      self._job = _Job(self)
      _worker().submit(self._job)

  def wait(self):
    """Build the native executable now if it is not ready (runs the build on this thread
    when it has not started); returns the tier afterwards."""
    if compile_mode() == "off":
      return self.tier
    if self._job is None:
      self._job = _Job(self)
    self._job.run_or_wait()
    return self.tier

  def _install(self, native):
    self.native = native
    if self._work >= _ASYNC_WORK and not self._effects:
      self._impl = _async_native(self, native.fn)
    else:
      self._impl = native.fn

  def _stream(self):
    dev = self.device
    if dev is None:
      from pyjax._src.runtime import devices
      dev = devices.default_device()
    return dev.stream

  def call_pending(self, bufs):
    """Run on ``bufs``, some of which are ``PendingBuffer``s; returns the output buffers
    (pending when the work was enqueued)."""
    native = self.native
    if (native is not None and not self._effects and _config.cpu_async_dispatch
        and not _stream.in_worker()):
      return self._stream().submit(native.fn, bufs, len(self.out_avals))
    pb = _stream.PendingBuffer
    return self.fn(*[b.result() if type(b) is pb else b for b in bufs])

  def call_donating(self, bufs, donated):
    """Run on ``bufs`` (a list this call owns) whose inputs at indices ``donated`` were
    donated -- their Arrays already deleted, so ``bufs`` holds the only references the
    caller knows of.  On the native tier an output whose buffer plan reuses a donated input
    (``NativeProgram.donation``) is written into that input's buffer when nothing else
    holds it: not another Array, a NumPy view or array object, nor queued work (see
    ``_exclusive``).  On the NumPy tier such an output is computed, then copied into the
    donated buffer, which becomes the output (as XLA's aliasing: the output lives in the
    donated memory).  Otherwise outputs are allocated."""
    native = self.native
    if native is None:
      return self._numpy_donating(bufs, donated)
    pairs = native.donation
    cand = [(i, 1 << pairs[i]) for i in donated if pairs and i in pairs]
    pb = _stream.PendingBuffer
    pending = any(type(b) is pb for b in bufs)
    if not cand:
      return self.call_pending(bufs) if pending else self.fn(*bufs)
    fn = native.fn
    # computed inputs are decided now (only ``bufs`` may hold them: nothing can take a new
    # reference later); a pending one when its array exists, if only ``bufs`` holds its
    # PendingBuffer now
    mask, later = 0, []
    for i, bit in cand:
      if not _exclusive(bufs, i):
        continue
      if type(bufs[i]) is pb:
        later.append((i, bit))
      else:
        mask |= bit
    if (not self._effects and _config.cpu_async_dispatch and not _stream.in_worker()
            and (pending or self._work >= _ASYNC_WORK)):
      nb = len(bufs)
      if not later:
        return self._stream().submit(lambda *bs: fn(*bs, mask), bufs, len(self.out_avals))

      def job(*bs):
        # the sentinel (bs[nb]) went through the same hands as a pending input: a donated
        # array referenced exactly as often is referenced by nothing else
        ref = sys.getrefcount(bs[nb])
        m = mask
        for i, bit in later:
          if _owned(bs[i]) and sys.getrefcount(bs[i]) == ref + _outpool.pooled(bs[i]):
            m |= bit
        return fn(*bs[:nb], m)
      bufs.append(_sentinel())
      return self._stream().submit(job, bufs, len(self.out_avals))
    if pending:   # (a stream worker, or asynchronous dispatch off): pending donors copy
      bufs = [b.result() if type(b) is pb else b for b in bufs]
    return fn(*bufs, mask)

  def _numpy_donating(self, bufs, donated):
    """``call_donating`` on the NumPy tier (see there)."""
    pb = _stream.PendingBuffer
    if any(type(b) is pb for b in bufs):
      bufs = [b.result() if type(b) is pb else b for b in bufs]
    pairs = dict(self._donate)
    reuse = [(i, pairs[i]) for i in donated if i in pairs]
    outs = self.fn(*bufs)
    if reuse:
      outs = list(outs)
      for i, j in reuse:
        # checked after the run: an output may be a view of the donated buffer
        if not _exclusive(bufs, i):
          continue
        b, o = bufs[i], outs[j]
        if type(o) is np.ndarray and o is not b and o.shape == b.shape and o.dtype == b.dtype:
          b.flags.writeable = True   # (b owns its memory: ``_exclusive``)
          np.copyto(b, o)
          outs[j] = b
    return outs

  def as_text(self):
    """The generated code: the native program (host Python + C) once compiled, else the
    NumPy plan's Python source."""
    if self._job is not None or compile_mode() == "sync":
      self.wait()
    if self.native is not None:
      return self.native.as_text()
    return self.source

  def kernel_times(self):
    """With ``PYJAX_KERNEL_TIMES=1`` set when the program was compiled: one dict per native
    kernel (``function``, ``index``, ``kernel`` -- a description --, ``calls``, ``total_s``),
    summed over every call so far (``compiler/kernel_times.py``); [] otherwise or on the
    NumPy tier."""
    if self._job is not None or compile_mode() == "sync":
      self.wait()
    return self.native.kernel_times() if self.native is not None else []

  def __repr__(self):
    return f"CpuExecutable({self.name}, {self.tier})"


def _profiled_call(exe, prof, bufs):
  """``exe._impl(*bufs)`` recorded as an ``execute`` event (a trace is active)."""
  t = prof.now()
  tier = exe.tier
  outs = None
  try:
    outs = exe._impl(*bufs)
    return outs
  finally:
    enqueued = bool(outs) and type(outs[0]) is _stream.PendingBuffer
    prof.add(f"jit_{exe.name}", "execute", t, None,
             {"tier": tier, "enqueued": enqueued, "inputs": len(bufs)})


def _owned(b):
  """An array owning C-contiguous, aligned memory (not a view)."""
  return (type(b) is np.ndarray and b.base is None and b.flags.owndata
          and b.flags.c_contiguous and b.flags.aligned)


def _exclusive(container, i):
  """Whether ``container[i]`` is referenced by ``container`` only and, for an array, owns
  its memory (no view of it exists: a view references its base)."""
  b = container[i]
  if type(b) is np.ndarray and not _owned(b):
    return False
  # references: the container, ``b`` and getrefcount's argument (and the output pool's)
  return sys.getrefcount(b) == 3 + (_outpool.pooled(b) if type(b) is np.ndarray else 0)


def _sentinel():
  """A PendingBuffer of finished work holding a fresh array (referenced by that work's
  result list only): calibrates the reference count of resolved pending inputs."""
  t = _stream.Task(None, ())
  t.values = [np.empty(0, np.uint8)]
  t.done = True
  t.lock.release()
  return _stream.PendingBuffer(t, 0)


def _async_native(exe, native_fn):
  """``exe``'s native tier behind asynchronous dispatch (see the module docstring)."""
  nout = len(exe.out_avals)
  in_worker = _stream.in_worker
  stream = None

  def call(*bufs):
    nonlocal stream
    if _config.cpu_async_dispatch and not in_worker():
      if stream is None:
        stream = exe._stream()
      return stream.submit(native_fn, bufs, nout)
    return native_fn(*bufs)
  call.__name__ = f"async_{getattr(native_fn, '__name__', 'native')}"
  return call


class _Job:
  def __init__(self, exe):
    self.exe = exe
    self.lock = threading.Lock()
    self.started = False
    self.done = threading.Event()

  def claim(self):
    with self.lock:
      if self.started:
        return False
      self.started = True
      return True

  def run_or_wait(self):
    if self.claim():
      self.run()
    self.done.wait()

  def run(self):
    exe = self.exe
    try:
      exe._install(_build_native(exe._closed, exe.name, exe._donate))
    except _NoNative:
      pass
    except Exception as e:  # noqa: BLE001  -- a compiler bug must not break the program
      exe.error = e
      if _debug():
        import traceback
        traceback.print_exc()
      warnings.warn(f"pyjax: native compilation of {exe.name} failed; running on NumPy "
                    f"({type(e).__name__}: {e})", RuntimeWarning, stacklevel=2)
    finally:
      self.done.set()


class _NoNative(Exception):
  pass


class _Worker:
  """One background thread building native executables in order."""

  def __init__(self):
    self.q = queue.Queue()
    self.thread = threading.Thread(target=self._loop, name="pyjax-compiler", daemon=True)
    self.thread.start()

  def submit(self, job):
    self.q.put(job)

  def _loop(self):
    while True:
      job = self.q.get()
      try:
        if job.claim():
          job.run()
      except Exception:  # noqa: BLE001  -- the thread outlives a failed job (its failure
        pass             # notice raised: warnings made errors by the program's filter)
      finally:
        self.q.task_done()


class _CallJob:
  """A job for the worker that calls ``fn()`` (once)."""

  def __init__(self, fn):
    self.fn = fn
    self.claimed = False

  def claim(self):
    if self.claimed:
      return False
    self.claimed = True
    return True

  def run(self):
    try:
      self.fn()
    except Exception:  # noqa: BLE001  -- the worker thread must survive a failed job
      if _debug():
        import traceback
        traceback.print_exc()


def submit(fn):
  """Call ``fn()`` on the compiler's background thread, after the builds queued before it
  (``drain`` waits for it too)."""
  _worker().submit(_CallJob(fn))


def drain():
  """Wait until every queued background build has finished (benchmarks and tests use it
  so that compilation does not compete with what they measure)."""
  w = _worker_obj
  if w is not None:
    w.q.join()


_worker_obj = None
_worker_lock = threading.Lock()


def _worker():
  global _worker_obj
  with _worker_lock:
    if _worker_obj is None:
      _worker_obj = _Worker()
    return _worker_obj


def _debug():
  return _dbg.level() >= 1


_warned_no_cc = [False]


def _build_native(closed, name, donate=()):
  from pyjax._src.backends.cpu.compiler import driver
  t0 = time.perf_counter()
  try:
    with _profiler.span(f"lower {name} to C", "compile"):
      prog = driver.lower(closed, name, donate)
  except driver.Unsupported as e:
    if str(e) == "no C compiler" and not _warned_no_cc[0]:
      _warned_no_cc[0] = True
      warnings.warn("pyjax: no working C compiler found (set PYJAX_CC); jit runs on the "
                    "NumPy backend", RuntimeWarning, stacklevel=3)
    if _debug():
      print(f"pyjax: jit({name}) stays on NumPy: {e}", file=sys.stderr)
    raise _NoNative() from None
  t1 = time.perf_counter()
  with _profiler.span(f"build {name}", "compile"):
    prog.build()
  t2 = time.perf_counter()
  if _debug():
    host = sorted({s.node.prim for s in prog.host_steps})
    where = ("1 native call (whole program)" if prog.whole is not None
             else f"{len(prog.segments)} native segment(s)")
    loops, conds = prog.native_loops, prog.native_conds
    print(f"pyjax: compiled jit({name}): {prog.n_kernels} kernel(s) in {where}"
          f"{f', {loops} loop(s) in C' if loops else ''}"
          f"{f', {conds} cond(s) in C' if conds else ''}, {len(prog.host_steps)} NumPy step(s)"
          f"{' (' + ', '.join(host) + ')' if host else ''}; lowering {t1 - t0:.3f} s, "
          f"build {t2 - t1:.3f} s [cache: {prog.stats.get('cache', '?')}]", file=sys.stderr)
  return prog


_HOST_CALLBACKS = frozenset({"pure_callback", "io_callback", "debug_callback", "debug_print"})


def _calls_host(jaxpr, _seen=None):
  """Whether ``jaxpr`` (or a jaxpr in its equations' params) calls back into Python."""
  seen = set() if _seen is None else _seen
  if id(jaxpr) in seen:
    return False
  seen.add(id(jaxpr))
  for eqn in jaxpr.eqns:
    if eqn.primitive.name in _HOST_CALLBACKS:
      return True
    for v in eqn.params.values():
      for u in (v if isinstance(v, (list, tuple)) else (v,)):
        inner = getattr(u, "jaxpr", None) if _is_closed(u) else (
            u if type(u).__name__ == "Jaxpr" else None)
        if inner is not None and _calls_host(inner, seen):
          return True
  return False


def _program_work(closed):
  n = 0
  for eqn in closed.jaxpr.eqns:
    for v in eqn.outvars:
      shape = getattr(v.aval, "shape", ())
      k = 1
      for d in shape:
        k *= d
      n += k
  return n


def _is_literal(v):
  return type(v).__name__ == "Literal"


def _is_closed(v):
  return type(v).__name__ == "ClosedJaxpr"


class _Codegen:
  def __init__(self):
    self.lines = []
    self.globals = {"_asarray": np.asarray, "_nd": np.ndarray}
    self._names = itertools.count()
    self._glob_ids = {}

  def fresh(self, prefix="v"):
    return f"{prefix}{next(self._names)}"

  def glob(self, value, prefix="g"):
    key = id(value)
    hit = self._glob_ids.get(key)
    if hit is not None and hit[1] is value:
      return hit[0]
    name = self.fresh(prefix)
    self.globals[name] = value
    self._glob_ids[key] = (name, value)
    return name

  def const(self, value, aval):
    """A global holding ``value`` as a NumPy array of ``aval``'s dtype."""
    data = value._data() if hasattr(value, "_data") else value
    arr = np.asarray(data, dtype=aval.dtype)
    if arr.shape != tuple(aval.shape):
      arr = np.broadcast_to(arr, aval.shape)
    name = self.fresh("c")
    self.globals[name] = arr
    return name


def _used_vars(jaxpr):
  """Equations to keep (reverse liveness): those with a used output or with effects."""
  live = {v for v in jaxpr.outvars if not _is_literal(v)}
  keep = []
  for eqn in reversed(jaxpr.eqns):
    if eqn.effects or any(v in live for v in eqn.outvars):
      keep.append(eqn)
      live.update(v for v in eqn.invars if not _is_literal(v))
  keep.reverse()
  return keep


def _emit_jaxpr(gen, jaxpr, env, indent="  "):
  """Emit code for ``jaxpr`` with ``env`` mapping its constvars and invars to
  expressions; returns the expressions of its outputs."""
  def read(v):
    if _is_literal(v):
      return gen.const(v.val, v.aval)
    return env[v]

  pred_of = {}   # XLA's select for a product with a converted boolean (pred_mul.py)
  recip_of = {}  # XLA: a / broadcast(b) and a / sqrt(b) as products (reciprocal_div.py)
  for eqn in _used_vars(jaxpr):
    prim = eqn.primitive
    rw = reciprocal_div.rewrite(eqn, pred_of, recip_of)
    if rw is not None:
      fn, operands, prm = rw
      o, = eqn.outvars
      name = gen.fresh()
      gen.lines.append(f"{indent}{name} = {gen.glob(fn, 'f')}({', '.join(read(v) for v in operands)}"
                       f", **{gen.glob(prm, 'p')})  # {prim.name}")
      env[o] = name
      continue
    ins = [read(v) for v in eqn.invars]
    jaxpr_param = eqn.params.get("jaxpr")
    if prim.name == "jit" and _is_closed(jaxpr_param):
      inner = jaxpr_param.jaxpr
      sub = {}
      for v, c in zip(inner.constvars, jaxpr_param.consts):
        sub[v] = gen.const(c, v.aval)
      for v, e in zip(inner.invars, ins):
        sub[v] = e
      outs = _emit_jaxpr(gen, inner, sub, indent)
      for v, e in zip(eqn.outvars, outs):
        env[v] = e
      continue
    # transcendental functions on the compiler's own math: bits equal to the native tier's
    impl = tier_native.impl(prim.name, _impls.get(prim.name))
    outnames = [gen.fresh() for _ in eqn.outvars]
    # convolutions: the native tier's kernel; long loops: in C (numpy_tier/loops.py)
    opaque = tier_native.eqn_impl(eqn, impl)
    if opaque is not None and prim.multiple_results:
      tmp = gen.fresh("r")
      gen.lines.append(f"{indent}{tmp} = {gen.glob(opaque, 'f')}({', '.join(ins)})  # {prim.name}")
      for i, name in enumerate(outnames):
        gen.lines.append(f"{indent}{name} = {tmp}[{i}]")
    elif opaque is not None:
      fn = gen.glob(opaque, "f")
      gen.lines.append(f"{indent}{outnames[0]} = {fn}({', '.join(ins)})  # {prim.name}")
    elif impl is not None:
      fn = gen.glob(impl, "f")
      call = f"{fn}({', '.join(ins)}"
      if eqn.params:
        call += (", " if ins else "") + f"**{gen.glob(dict(eqn.params), 'p')}"
      call += ")"
      if prim.multiple_results:
        tmp = gen.fresh("r")
        gen.lines.append(f"{indent}{tmp} = {call}  # {prim.name}")
        for i, (name, v) in enumerate(zip(outnames, eqn.outvars)):
          gen.lines.append(f"{indent}{name} = {tmp}[{i}]")
      else:
        gen.lines.append(f"{indent}{outnames[0]} = {call}  # {prim.name}")
      for name, v in zip(outnames, eqn.outvars):
        d = gen.glob(v.aval.dtype, "d")
        gen.lines.append(f"{indent}if {name}.__class__ is not _nd or {name}.dtype != {d}: "
                         f"{name} = _asarray({name}, {d})")
    elif prim.impl is not None:
      runner = gen.glob(_python_impl_runner(prim, eqn), "h")
      gen.lines.append(f"{indent}{', '.join(outnames)}, = {runner}({', '.join(ins)})  # {prim.name}")
    else:
      raise NotImplementedError(f"The cpu backend has no implementation of {prim.name}")
    for name, v in zip(outnames, eqn.outvars):
      env[v] = name
  return [read(v) for v in jaxpr.outvars]


def _python_impl_runner(prim, eqn):
  """Call a higher-order primitive's Python ``impl`` on Arrays built from buffers."""
  from pyjax._src import core
  from pyjax._src.runtime.array import ArrayImpl
  in_avals = [v.aval for v in eqn.invars]
  out_avals = [v.aval for v in eqn.outvars]
  params = dict(eqn.params)
  multiple = prim.multiple_results

  def run(*bufs):
    args = [ArrayImpl(b, a) for b, a in zip(bufs, in_avals)]
    with core.set_interpreter(core.eval_interpreter):
      out = prim.impl(*args, **params)
    outs = out if multiple else [out]
    res = []
    for o, a in zip(outs, out_avals):
      if type(o) is ArrayImpl:
        b = o._data()
      elif isinstance(o, ArrayImpl):   # sharded (perhaps over processes): its global value
        b = o.__jax_array__()._data()
      else:
        b = np.asarray(o)
      if b.dtype != a.dtype:
        b = np.asarray(b, a.dtype)
      res.append(b)
    return res
  return run



def compile_jaxpr(closed_jaxpr, device=None, name="jaxpr", donate=()):
  """Compile ``closed_jaxpr`` for ``device``: returns a ``CpuExecutable`` (see the module
  docstring for the tiers).  ``donate``: (input index, output index) pairs of donated
  inputs and the outputs that may take their buffers (``CpuExecutable.call_donating``)."""
  if _dbg.level() >= 2:
    _dbg.log(2, f"pyjax: jaxpr of jit({name}):\n{closed_jaxpr}")
  _dispatch.keep_quiet_filters()   # NumPy's floating-point warnings stay silenced
  with _profiler.span(f"numpy plan {name}", "compile"):
    fn, src = _numpy_plan(closed_jaxpr, name)
  exe = CpuExecutable(_quietly(fn), src, closed_jaxpr, device, name, donate)
  mode = compile_mode()
  if mode != "off" and _compiler.library_compile():
    exe._after = _compiler.LIBRARY_COMPILE_AFTER
    exe._impl = exe._counting
  elif mode == "sync":
    exe.wait()
  elif mode == "async":
    if exe._work >= _BIG_PROGRAM or _compile_after() <= 1:
      exe.start()
    else:
      exe._impl = exe._counting
  return exe


def _quietly(plan):
  """The NumPy plan run with NumPy's floating-point warnings off (XLA never warns on
  inf/nan arithmetic).  The warnings filter that silences them (``quiet_warnings``) is
  not enough here: a jitted call's hit path does not check the filters, so inside a
  ``catch_warnings`` block with ``simplefilter("always")`` (pytest.warns, pytest's
  per-test block under ``-W always``) the plan's ``divide``/``log``/``subtract`` warned
  from ``<pyjax jit ...>``.  ``np.errstate`` is per thread: the stream workers that run
  plans asynchronously enter it themselves (~1 us a call)."""
  errstate = np.errstate

  def run(*bufs):
    with errstate(all="ignore"):
      return plan(*bufs)
  run.__name__ = getattr(plan, "__name__", "plan")
  return run


def _numpy_plan(closed_jaxpr, name):
  """The NumPy plan: (function, Python source)."""
  jaxpr = closed_jaxpr.jaxpr
  gen = _Codegen()
  env = {}
  for v, c in zip(jaxpr.constvars, closed_jaxpr.consts):
    env[v] = gen.const(c, v.aval)
  params = []
  for v in jaxpr.invars:
    p = gen.fresh("a")
    params.append(p)
    env[v] = p
  outs = _emit_jaxpr(gen, jaxpr, env)
  fn_name = f"jit_{''.join(ch if ch.isalnum() else '_' for ch in name)}"
  src = "\n".join([f"def {fn_name}({', '.join(params)}):", *gen.lines,
                   f"  return [{', '.join(outs)}]", ""])
  filename = f"<pyjax jit {name} #{next(_counter)}>"
  code = compile(src, filename, "exec")
  namespace = dict(gen.globals)
  # a backend module name: eager/registry.py's filter silences NumPy's floating-point warnings
  # for the inlined NumPy operations too (XLA never warns)
  namespace["__name__"] = "pyjax._src.backends.cpu.generated"
  exec(code, namespace)  # noqa: S102  -- our own generated source
  return namespace[fn_name], src
