"""Compiled-code caches.

In memory: one loaded library per cache key for the life of the process (identical
programs -- the same function traced again, two jit wrappers of one function -- share it).

On disk: ``$PYJAX_CACHE_DIR``, else JAX's ``jax_compilation_cache_dir`` config option,
else ``~/.cache/pyjax``; entries live in a ``cpu-<format>`` subdirectory.  The key is the
SHA-256 of the C source, the compiler's identity and flags, the host CPU's features
(code is built with ``-march=native``), the Python ABI and pyjax's version.  Each entry is
``<key>.so`` plus ``<key>.json`` holding the key and the SHA-256 of the library's bytes:
an entry whose digest or key does not match (corrupt, truncated, foreign) is ignored and
rebuilt.  Files are written to temporary names and renamed into place, so concurrent
processes never see partial files (the last writer wins; all writers write the same).
``PYJAX_CACHE_DIR=''`` (empty) disables the disk cache.
"""
from __future__ import annotations

import ctypes
import hashlib
import json
import os
import sys
import threading

from pyjax._src import profiler as _profiler

FORMAT = "1"
_mem = {}
_mem_lock = threading.Lock()
_loading = {}


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


def _digest(path):
  with open(path, "rb") as f:
    return hashlib.sha256(f.read()).hexdigest()


def _valid(key, so, meta):
  try:
    with open(meta) as f:
      m = json.load(f)
    return m.get("key") == key and m.get("sha256") == _digest(so)
  except (OSError, ValueError):
    return False


def _load(path):
  with _profiler.span(f"load {os.path.basename(path)}", "compile"):
    lib = ctypes.PyDLL(path)
  return lib


def get_library(source, toolchain, stats=None):
  """The loaded library for ``source``: from memory, from disk, or compiled now."""
  key = cache_key(source, toolchain)
  with _mem_lock:
    lib = _mem.get(key)
    if lib is not None:
      if stats is not None:
        stats["cache"] = "memory"
      return lib
    ev = _loading.get(key)
    if ev is None:
      ev = _loading[key] = threading.Event()
      owner = True
    else:
      owner = False
  if not owner:
    ev.wait()
    with _mem_lock:
      lib = _mem.get(key)
    if lib is not None:
      if stats is not None:
        stats["cache"] = "memory"
      return lib
    return get_library(source, toolchain, stats)
  try:
    lib = _get_uncached(key, source, toolchain, stats)
    with _mem_lock:
      _mem[key] = lib
    return lib
  finally:
    with _mem_lock:
      _loading.pop(key, None)
    ev.set()


def _get_uncached(key, source, toolchain, stats):
  d = cache_dir()
  if d is not None:
    so = os.path.join(d, f"{key}.so")
    meta = os.path.join(d, f"{key}.json")
    if os.path.exists(so) and _valid(key, so, meta):
      try:
        lib = _load(so)
        if stats is not None:
          stats["cache"] = "disk"
        return lib
      except OSError:
        pass
    try:
      os.makedirs(d, exist_ok=True)
      # compile under a unique name, then publish the library and its digest atomically
      tmp_final = os.path.join(d, f"{key}.{os.getpid()}.{threading.get_ident()}.so")
      toolchain.compile(source, tmp_final)
      digest = _digest(tmp_final)
      os.replace(tmp_final, so)
      tmp_meta = f"{meta}.{os.getpid()}.{threading.get_ident()}.tmp"
      with open(tmp_meta, "w") as f:
        json.dump({"key": key, "sha256": digest}, f)
      os.replace(tmp_meta, meta)
      if stats is not None:
        stats["cache"] = "miss"
      # load the published file (its digest is known to match what we compiled)
      return _load(so)
    except OSError:
      pass  # unwritable cache directory: compile privately
  import tempfile
  tmpdir = tempfile.mkdtemp(prefix="pyjax-")
  path = os.path.join(tmpdir, f"{key}.so")
  toolchain.compile(source, path)
  if stats is not None:
    stats["cache"] = "miss"
  return _load(path)


def clear_memory():
  """Forget the in-memory libraries (tests)."""
  with _mem_lock:
    _mem.clear()
