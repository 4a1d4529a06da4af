"""Compiled-code caches.

In memory: the loaded library of each cache key, shared by every executable built from the
same source (the same function traced again, two jit wrappers of one function).  A library
stays loaded while something uses it: each native entry point (``native.make_entry``)
holds the library's ``Owner``, and when the last one is garbage collected the library is
unloaded (``dlclose``), so a process that compiles many programs and drops them does not
keep every one mapped.  The unload is deferred to a moment when no garbage collection is
running (a collection runs finalizers before it frees the objects of a cycle, and a
segment's capsule destructor lives in the library); a thread running a program holds its
entry point, so nothing running is ever unloaded.

On disk: ``$PYJAX_CACHE_DIR``, else JAX's ``jax_compilation_cache_dir`` config option,
else ``~/.cache/pyjax``; entries live in a ``cpu-<format>`` subdirectory.  The key is the
SHA-256 of the C source, the compiler's identity and flags, the host CPU's features
(code is built with ``-march=native``), the Python ABI and pyjax's version.  Each entry is
``<key>.so`` plus ``<key>.json`` holding the key, the SHA-256 of the library's bytes and
its size.  Anything else -- a corrupt, truncated or foreign library, metadata that is not
such an object (``null``, ``[]``, garbage), a FIFO, directory or other non-regular file --
is a miss: the entry is rebuilt and published again.  Non-regular files are never opened
for reading in blocking mode nor loaded.  A process never maps a shared cache file: it
loads the bytes it verified from a private copy (``_load_copy``), so a cache file
truncated or rewritten in place cannot crash it.  Files are written under temporary names and
renamed into place, so concurrent processes never see partial files (the last writer wins;
all writers write the same bytes).  ``PYJAX_CACHE_DIR=''`` (empty) disables the disk cache.

Size: ``jax_compilation_cache_max_size`` bytes (JAX's option; 0 disables the disk cache).
Differs from JAX: at the option's default, -1 (JAX: no limit), the bound is
``$PYJAX_CACHE_MAX_SIZE`` bytes, default 1 GiB (-1 there: no limit).  The least recently
used entries (a hit refreshes an entry's time) are deleted until the directory fits: a
process scans the directory at its first write, then keeps a running total of what it
adds and scans again when that total passes the bound, after every 64th write (other
processes' entries) and at exit, so a write does not list a large cache each time.  One
process evicts at a time (an advisory lock), and a process that loses an entry it was
about to load just compiles it again.
``jax_persistent_cache_min_entry_size_bytes`` > 0 keeps smaller libraries out of the disk
cache.

An unusable directory (a file in the way, no permission, a read-only file system) makes
this process keep its libraries in ONE private temporary directory, removed at exit, with
a single warning.
"""
from __future__ import annotations

import _ctypes
import atexit
import ctypes
import gc
import hashlib
import json
import os
import shutil
import stat
import sys
import tempfile
import threading
import time
import warnings
import weakref

from pyjax._src import monitoring as _monitoring
from pyjax._src import profiler as _profiler

FORMAT = "1"
DEFAULT_MAX_SIZE = 1 << 30
_mem = {}                 # key -> weakref to the loaded ctypes library
_mem_lock = threading.Lock()
_loading = {}
_META_MAX = 1 << 16       # a metadata file is small; a bigger one is garbage


def _version():
  try:
    from importlib.metadata import version
    return version("pyjax")
  except Exception:  # noqa: BLE001
    return "0"


_VERSION = None


def cache_dir():
  """The on-disk cache directory, or None when disabled."""
  env = os.environ.get("PYJAX_CACHE_DIR")
  if env is not None:
    return os.path.join(env, f"cpu-{FORMAT}") if env else None
  if _max_size() == 0:
    return None
  try:
    from pyjax._src.config import config
    d = config.read("jax_compilation_cache_dir")
  except Exception:  # noqa: BLE001
    d = None
  if d:
    return os.path.join(str(d), "pyjax", f"cpu-{FORMAT}")
  home = os.path.expanduser("~")
  base = os.environ.get("XDG_CACHE_HOME") or os.path.join(home, ".cache")
  return os.path.join(base, "pyjax", f"cpu-{FORMAT}")


def _option(name, default):
  try:
    from pyjax._src.config import config
    v = config.read(name)
  except Exception:  # noqa: BLE001
    return default
  try:
    return int(v)
  except (TypeError, ValueError):
    return default


def _max_size():
  """The size bound in bytes (-1: none, 0: no disk cache).  JAX's option when set to a
  size; at its default -1 (JAX: no limit), ``$PYJAX_CACHE_MAX_SIZE`` (default 1 GiB; -1 there
  lifts the bound)."""
  v = _option("jax_compilation_cache_max_size", -1)
  if v >= 0:
    return v
  try:
    return int(os.environ.get("PYJAX_CACHE_MAX_SIZE", DEFAULT_MAX_SIZE))
  except ValueError:
    return DEFAULT_MAX_SIZE


def _min_entry_size():
  return _option("jax_persistent_cache_min_entry_size_bytes", 0)


def cache_key(source, toolchain):
  global _VERSION
  if _VERSION is None:
    _VERSION = _version()
  h = hashlib.sha256()
  for part in (FORMAT, _VERSION, sys.version, sys.implementation.cache_tag or "",
               toolchain.key_material(), source):
    h.update(part.encode())
    h.update(b"\0")
  return h.hexdigest()


# --- reading files safely -------------------------------------------------------------------
def _read_regular(path, limit=None):
  """The bytes of ``path`` when it is a regular file (at most ``limit`` bytes), else None.
  Opened non-blocking, so a FIFO in the way never blocks; never raises."""
  try:
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
  except OSError:
    return None
  try:
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or (limit is not None and st.st_size > limit):
      return None
    chunks = []
    while True:
      b = os.read(fd, 1 << 20)
      if not b:
        break
      chunks.append(b)
    return b"".join(chunks)
  except OSError:
    return None
  finally:
    os.close(fd)


def _is_regular(path):
  try:
    return stat.S_ISREG(os.stat(path).st_mode)
  except OSError:
    return False


def _digest(path):
  data = _read_regular(path)
  return None if data is None else hashlib.sha256(data).hexdigest()


def _read_entry(key, so, meta):
  """The library bytes of the entry ``key`` (``so`` + ``meta``) when it is good, else
  None.  Any malformed entry (wrong JSON type, missing fields, wrong digest, non-regular
  files) is simply not good."""
  raw = _read_regular(meta, _META_MAX)
  if raw is None:
    return None
  try:
    m = json.loads(raw.decode("utf-8"))
  except (ValueError, UnicodeDecodeError):
    return None
  if not isinstance(m, dict) or m.get("key") != key or not isinstance(m.get("sha256"), str):
    return None
  data = _read_regular(so)
  if data is None or hashlib.sha256(data).hexdigest() != m["sha256"]:
    return None
  return data


def _valid(key, so, meta):
  """Whether ``so`` + ``meta`` are a good entry for ``key``."""
  return _read_entry(key, so, meta) is not None


def _load_copy(key, data, shared=None):
  """Load the verified library bytes ``data`` from a private copy: the shared cache file is
  never mapped, so one truncated or rewritten in place (by a user or a foreign tool) cannot
  crash a process that loaded it, and what is loaded is exactly what was verified.  The
  copy is unlinked once loaded (the mapping keeps it).  Without a writable temporary
  directory the ``shared`` file itself is loaded."""
  try:
    path = os.path.join(private_dir(), f"c-{key}.so")
    tmp = f"{path}.{threading.get_ident()}.tmp"
    with open(tmp, "wb") as f:
      f.write(data)
    os.replace(tmp, path)
  except OSError:
    if shared is None:
      raise
    return _load(shared)
  try:
    return _load(path)
  finally:
    try:
      os.unlink(path)
    except OSError:
      pass


# --- loaded libraries and their unloading ----------------------------------------------------
_pending_close = []
_gc_depth = [0]
_counts = {"loaded": 0, "unloaded": 0}


class Owner:
  """Keeps one ``dlopen`` of a library open while referenced: every entry point made from
  the library (``native.make_entry``) and the ctypes library object hold it.  Its
  finalizer queues the ``dlclose``; ``_close_pending`` runs it outside garbage
  collection."""
  __slots__ = ("handle", "path", "__weakref__")

  def __init__(self, handle, path):
    self.handle = handle
    self.path = path

  def __del__(self):
    if self.handle and not sys.is_finalizing():   # at exit: left to the process's end
      _pending_close.append(self.handle)
      self.handle = 0
      if not _gc_depth[0]:
        _close_pending()


def _gc_callback(phase, info):
  if phase == "start":
    _gc_depth[0] += 1
  else:
    _gc_depth[0] = max(_gc_depth[0] - 1, 0)
    if not _gc_depth[0] and _pending_close:
      _close_pending()


gc.callbacks.append(_gc_callback)


def _dlclose(handle):
  _ctypes.dlclose(handle)


def _close_pending():
  while _pending_close and not _gc_depth[0]:
    try:
      h = _pending_close.pop()
    except IndexError:
      break
    try:
      _dlclose(h)
      _counts["unloaded"] += 1
    except OSError:
      pass


def stats():
  """{'loaded': libraries loaded by this process, 'unloaded': those unloaded since,
  'live': loaded in memory now} (for tests and diagnostics)."""
  with _mem_lock:
    live = sum(1 for r in _mem.values() if r() is not None)
  return dict(_counts, live=live)


def _load(path):
  with _profiler.span(f"load {os.path.basename(path)}", "compile"):
    lib = ctypes.PyDLL(path)
  lib._pyjax_owner = Owner(lib._handle, path)
  _counts["loaded"] += 1
  return lib


def owner(lib):
  """The ``Owner`` an entry point made from ``lib`` must hold (None for foreign libs)."""
  return getattr(lib, "_pyjax_owner", None)


# --- the private fallback directory -----------------------------------------------------------
_private = {"pid": None, "dir": None}
_warned = set()


def _remove_private(pid, d):
  if os.getpid() == pid:
    shutil.rmtree(d, ignore_errors=True)


def _remove_orphans():
  """Remove private directories left by processes of this user that died without running
  their exit hooks (killed)."""
  base = tempfile.gettempdir()
  try:
    names = os.listdir(base)
  except OSError:
    return
  uid = os.getuid() if hasattr(os, "getuid") else None
  for name in names:
    parts = name.split("-")
    if len(parts) < 3 or parts[0] != "pyjax" or not parts[1].isdigit():
      continue
    p = os.path.join(base, name)
    try:
      st = os.lstat(p)
      if not stat.S_ISDIR(st.st_mode) or (uid is not None and st.st_uid != uid):
        continue
      os.kill(int(parts[1]), 0)
    except ProcessLookupError:
      shutil.rmtree(p, ignore_errors=True)
    except (OSError, ValueError, OverflowError):
      continue


def private_dir():
  """This process's private directory for libraries that cannot go to the disk cache
  (created on first use, removed at exit; a forked child makes its own)."""
  pid = os.getpid()
  if _private["pid"] != pid or not os.path.isdir(_private["dir"] or ""):
    _remove_orphans()
    d = tempfile.mkdtemp(prefix=f"pyjax-{pid}-")
    _private["pid"], _private["dir"] = pid, d
    atexit.register(_remove_private, pid, d)
  return _private["dir"]


def _warn_unusable(d, err):
  if d in _warned:
    return
  _warned.add(d)
  warnings.warn(f"pyjax: the compilation cache directory {d} is unusable ({err}); compiled "
                "programs are kept in a private temporary directory removed at exit",
                RuntimeWarning, stacklevel=4)


# --- the cache ------------------------------------------------------------------------------
def get_library(source, toolchain, stats=None):
  """The loaded library for ``source``: from memory, from disk, or compiled now."""
  if _pending_close and not _gc_depth[0]:
    _close_pending()
  key = cache_key(source, toolchain)
  with _mem_lock:
    ref = _mem.get(key)
    lib = ref() if ref is not None else None
    if lib is not None:
      if stats is not None:
        stats["cache"] = "memory"
      return lib
    ev = _loading.get(key)
    if ev is None:
      ev = _loading[key] = threading.Event()
      owner_ = True
    else:
      owner_ = False
  if not owner_:
    ev.wait()
    with _mem_lock:
      ref = _mem.get(key)
      lib = ref() if ref is not None else None
    if lib is not None:
      if stats is not None:
        stats["cache"] = "memory"
      return lib
    return get_library(source, toolchain, stats)
  try:
    lib = _get_uncached(key, source, toolchain, stats)
    with _mem_lock:
      _mem[key] = weakref.ref(lib, lambda r, k=key: _forget(k, r))
    return lib
  finally:
    with _mem_lock:
      _loading.pop(key, None)
    ev.set()


def is_cached(source, toolchain):
  """Whether ``get_library(source, toolchain)`` would find the library in memory or on
  disk (no C compiler run).  Callers use it to choose between a native build now and a
  slower route that needs none."""
  key = cache_key(source, toolchain)
  ref = _mem.get(key)
  if ref is not None and ref() is not None:
    return True
  d = cache_dir()
  if d is not None and _is_regular(os.path.join(d, f"{key}.json")) and _is_regular(
      os.path.join(d, f"{key}.so")):
    return True
  if _private["pid"] == os.getpid() and _private["dir"]:   # built earlier by this process
    p = os.path.join(_private["dir"], f"{key}.so")
    return _is_regular(p) and os.path.getsize(p) > 0
  return False


def _forget(key, ref):
  # a weakref callback may run inside a collection triggered while _mem_lock is held:
  # no lock here (single dict operations are atomic)
  if _mem.get(key) is ref:
    _mem.pop(key, None)


def _touch(path):
  try:
    os.utime(path)
  except OSError:
    pass


def _get_uncached(key, source, toolchain, stats):
  d = cache_dir()
  if d is not None:
    # JAX's persistent-cache events (jax.monitoring), recorded for the disk cache
    _monitoring.record_event("/jax/compilation_cache/compile_requests_use_cache")
    so = os.path.join(d, f"{key}.so")
    meta = os.path.join(d, f"{key}.json")
    t0 = time.monotonic()
    data = _read_entry(key, so, meta)
    if data is not None:
      try:
        lib = _load_copy(key, data, so)
        _touch(meta)
        if stats is not None:
          stats["cache"] = "disk"
        _monitoring.record_event("/jax/compilation_cache/cache_hits")
        _monitoring.record_event_duration_secs(
            "/jax/compilation_cache/cache_retrieval_time_sec", time.monotonic() - t0)
        return lib
      except OSError:
        pass
    _monitoring.record_event("/jax/compilation_cache/cache_misses")
    try:
      lib = _publish(d, key, so, meta, source, toolchain)
      if stats is not None:
        stats["cache"] = "miss"
      return lib
    except OSError as e:
      _warn_unusable(d, e)   # unusable cache directory: this process's private one
  path = os.path.join(private_dir(), f"{key}.so")
  if not (_is_regular(path) and os.path.getsize(path) > 0):   # built earlier by this process
    toolchain.compile(source, path)
  if stats is not None:
    stats["cache"] = "miss"
  return _load(path)


def _publish(d, key, so, meta, source, toolchain):
  """Compile ``source`` and publish it as the entry ``key`` of ``d`` (atomically), then
  evict least recently used entries beyond the size limit.  Raises OSError when ``d``
  cannot be written."""
  os.makedirs(d, exist_ok=True)
  tag = f"{os.getpid()}.{threading.get_ident()}"
  tmp_final = os.path.join(d, f".{key}.{tag}.so.tmp")
  tmp_meta = os.path.join(d, f".{key}.{tag}.json.tmp")
  try:
    toolchain.compile(source, tmp_final)
    data = _read_regular(tmp_final)
    if data is None:
      raise OSError(f"cannot read back {tmp_final}")
    size = len(data)
    min_size = _min_entry_size()
    if min_size > 0 and size < min_size:   # too small for the disk cache
      private = os.path.join(private_dir(), f"{key}.so")
      shutil.move(tmp_final, private)
      return _load(private)
    with open(tmp_meta, "w") as f:
      json.dump({"key": key, "sha256": hashlib.sha256(data).hexdigest(), "size": size}, f)
    with _DirLock(d, exclusive=False, timeout=_PUBLISH_LOCK_TIMEOUT) as lock:
      if lock.acquired:
        _replace(tmp_final, so)
        _replace(tmp_meta, meta)
    if not lock.acquired:   # an evictor holds the directory: keep the library private
      private = os.path.join(private_dir(), f"{key}.so")
      shutil.move(tmp_final, private)
      return _load(private)
  finally:
    for p in (tmp_final, tmp_meta):
      try:
        os.unlink(p)
      except OSError:
        pass
  lib = _load_copy(key, data, so)
  _evict_after_write(d, size)
  return lib


# per directory: [bytes it held at the last scan plus what this process added since,
# writes since, the bound then]; a scan (evict) at the first write, when the running
# total passes the bound, every _RESCAN_EVERY writes (other processes add entries too)
# and at exit
_written = {}
_RESCAN_EVERY = 64


def _evict_after_write(d, added):
  max_size = _max_size()
  if max_size is None or max_size < 0:
    return
  st = _written.get(d)
  if st is not None and st[2] == max_size:
    st[0] += added
    st[1] += 1
    if st[0] <= max_size and st[1] < _RESCAN_EVERY:
      return
  left = evict(d, max_size)
  # skipped (the lock was busy): over the bound, so the next write tries again
  _written[d] = [left if left >= 0 else max_size + 1, 0, max_size]


@atexit.register
def _evict_at_exit():
  for d, st in list(_written.items()):
    if st[1] or st[0] > st[2]:   # writes since the last scan, or a scan skipped
      try:
        evict(d, st[2])
      except Exception:  # noqa: BLE001  -- interpreter shutdown
        pass


def _replace(src, dst):
  """``os.replace`` that also clears a directory in the way (a bad entry)."""
  try:
    os.replace(src, dst)
  except IsADirectoryError:
    shutil.rmtree(dst, ignore_errors=True)
    os.replace(src, dst)


def _entries(d):
  """{key: (last use, total bytes, [paths])} of the complete and partial entries in ``d``,
  plus stale temporary files (older than an hour) under key None."""
  out = {}
  stale = []
  now = time.time()
  try:
    names = os.listdir(d)
  except OSError:
    return out, stale
  for name in names:
    p = os.path.join(d, name)
    if name.endswith(".tmp") or name.startswith(".pyjax-build-"):
      try:
        if now - os.lstat(p).st_mtime > 3600:
          stale.append(p)
      except OSError:
        pass
      continue
    base, ext = os.path.splitext(name)
    if ext not in (".so", ".json") or len(base) != 64:
      continue
    try:
      st = os.lstat(p)
    except OSError:
      continue
    t, n, paths = out.get(base, (0.0, 0, []))
    out[base] = (max(t, st.st_mtime), n + st.st_size, paths + [p])
  return out, stale


class _DirLock:
  """An advisory lock on ``<d>/.evict.lock`` (a no-op where ``fcntl`` or the file is not
  available): publishers hold it shared while they rename an entry's two files into
  place, an evictor exclusively, so eviction never splits an entry being published.

  The lock is shared by every pyjax process of the machine, so nobody waits for it
  without a deadline: a process that stalls while holding it (a thread starved of the
  GIL by a blocking C call, a stopped process) must not stop the others.  ``timeout``
  seconds at most (0: one try); ``acquired`` says whether the lock was taken."""

  def __init__(self, d, exclusive, timeout):
    self.path = os.path.join(d, ".evict.lock")
    self.exclusive = exclusive
    self.timeout = timeout
    self.fd = None
    self.acquired = False

  def __enter__(self):
    try:
      import fcntl
      self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
      mode = (fcntl.LOCK_EX if self.exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB
      deadline = time.monotonic() + self.timeout
      pause = 0.001
      while True:
        try:
          fcntl.flock(self.fd, mode)
          self.acquired = True
          break
        except BlockingIOError:
          if time.monotonic() >= deadline:
            break
          time.sleep(pause)
          pause = min(pause * 2, 0.05)
    except (ImportError, OSError):
      pass
    if not self.acquired and self.fd is not None:
      os.close(self.fd)
      self.fd = None
    return self

  def __exit__(self, *exc):
    if self.fd is not None:
      os.close(self.fd)   # (releases the lock)
      self.fd = None


# Publishing waits this long for evictors to finish; after it the entry is not published
# (the library loads from the process's private directory, as entries too small for the
# cache do).  Evictors never wait: when the lock is busy they leave eviction to a later
# write or to the process's exit.
_PUBLISH_LOCK_TIMEOUT = 5.0


def evict(d, max_size=None):
  """Delete the least recently used entries of ``d`` until it holds at most ``max_size``
  bytes (default: ``jax_compilation_cache_max_size``; -1: no limit); returns the bytes
  left, or -1 when another process holds the directory's lock (then nothing is deleted).
  Safe to run in several processes at once (an evictor skips while another works;
  publishers wait a few seconds for the evictor)."""
  if max_size is None:
    max_size = _max_size()
  if max_size is None or max_size < 0:
    return 0
  with _DirLock(d, exclusive=True, timeout=0) as lock:
    if lock.acquired:
      return _evict_locked(d, max_size)
  return -1


def _evict_locked(d, max_size):
  """Evict down to ``max_size``; the bytes left (0 when the directory cannot be read)."""
  total = 0
  try:
    entries, stale = _entries(d)
    for p in stale:
      _remove(p)
    total = sum(n for _, n, _ in entries.values())
    for k, (t, n, paths) in sorted(entries.items(), key=lambda kv: kv[1][0]):
      if total <= max_size:
        break
      for p in sorted(paths, key=lambda q: not q.endswith(".json")):   # metadata first
        _remove(p)
      total -= n
  except OSError:
    pass
  return total


def _remove(p):
  try:
    if os.path.isdir(p) and not os.path.islink(p):
      shutil.rmtree(p, ignore_errors=True)
    else:
      os.unlink(p)
  except OSError:
    pass


def clear_memory():
  """Forget the in-memory libraries (tests); libraries still in use stay loaded."""
  with _mem_lock:
    _mem.clear()
