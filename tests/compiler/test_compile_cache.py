"""The disk cache of compiled programs under bad entries, bad paths, concurrency and size
limits, and the unloading of programs nobody uses (backends/cpu/compiler/native/cache.py).

Every scenario checks that jitted programs still give correct results, that a bad entry is
treated as a miss and repaired, and that no temporary file or directory is left behind.
"""
import gc
import json
import os
import stat
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import pyjax
import pyjax.numpy as jnp
from pyjax._src.backends.cpu import executable
from pyjax._src.backends.cpu.compiler.native import build
from pyjax._src.backends.cpu.compiler.native import cache

pytestmark = pytest.mark.skipif(build.toolchain() is None, reason="no C compiler")
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _run(code, env_extra, timeout=240):
  env = {k: v for k, v in os.environ.items() if k not in ("PYJAX_COMPILE", "PYJAX_CACHE_DIR")}
  env.update(env_extra)
  env.setdefault("PYJAX_COMPILE", "sync")
  return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                        text=True, env=env, timeout=timeout, cwd=_ROOT)


# One program per run; prints its tier, where its library came from and whether the
# runtime's thread pool loaded.
_PROG = """
import sys, warnings, numpy as np, pyjax, pyjax.numpy as jnp
from pyjax._src.backends.cpu.compiler.native import build
from pyjax._src.backends.cpu.compiler.native import runtime
warnings.simplefilter("always")
k = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
x = np.linspace(-2, 2, 64).astype(np.float32)
f = pyjax.jit(lambda x: x * k + 1)
exe = f.lower(x).compile().runtime_executable()
exe.wait()
np.testing.assert_allclose(np.asarray(f(x)), x * k + 1, rtol=1e-6)
print("TIER", exe.tier, exe.native.stats.get("cache") if exe.native else None,
      "POOL", runtime.load(build.toolchain()) is not None)
"""


def _prog(d, *args, extra=None, tmp=None):
  env = {"PYJAX_CACHE_DIR": str(d)}
  if tmp is not None:
    env["TMPDIR"] = str(tmp)
  env.update(extra or {})
  code = "import sys; sys.argv[1:] = " + repr(list(map(str, args))) + "\n" + textwrap.dedent(_PROG)
  r = _run(code, env)
  assert r.returncode == 0, r.stderr[-3000:]
  return r


def _entry_files(d):
  return sorted(p for p in os.listdir(d) if len(p.split(".")[0]) == 64)


def _no_leftovers(d):
  bad = [p for p in os.listdir(d) if p.endswith(".tmp") or p.startswith(".pyjax-build")]
  assert bad == [], bad


def _runtime_key():
  from pyjax._src.backends.cpu.compiler.native import runtime
  return cache.cache_key(runtime.RUNTIME_C, build.toolchain())


_BAD_META = {
    "null": "null", "list": "[]", "garbage": "\x00\x01garbage{", "number": "7",
    "wrong_types": '{"key": 5, "sha256": 6}', "no_digest": None,   # filled in with the key
    "empty": "",
}


class _Hang(Exception):
  pass


def _alarm(seconds):
  """Turn a hang (a blocking open of a FIFO) into a test failure."""
  import signal

  def handler(signum, frame):
    raise _Hang(f"blocked for {seconds} s")
  prev = signal.signal(signal.SIGALRM, handler)
  signal.alarm(seconds)
  return lambda: (signal.alarm(0), signal.signal(signal.SIGALRM, prev))


def test_bad_entries_in_process(tmp_path, monkeypatch):
  """Every kind of bad entry is a miss, gives a working library and is repaired."""
  monkeypatch.setenv("PYJAX_CACHE_DIR", str(tmp_path))
  sub = tmp_path / f"cpu-{cache.FORMAT}"
  tc = build.toolchain()
  src = _tiny_source(7)
  key = cache.cache_key(src, tc)
  so, meta = sub / f"{key}.so", sub / f"{key}.json"
  st = {}
  assert cache.get_library(src, tc, st).pyjax_tiny_7(1) == 8 and st["cache"] == "miss"
  good_so = so.read_bytes()
  corruptions = {
      **{f"meta_{k}": (lambda t=t: meta.write_text(t if t is not None else
                                                     json.dumps({"key": key})))
         for k, t in _BAD_META.items()},
      "truncated_so": lambda: so.write_bytes(good_so[:len(good_so) // 2]),
      "empty_so": lambda: so.write_bytes(b""),
      "dir_so": lambda: (so.unlink(), so.mkdir()),
      "fifo_so": lambda: (so.unlink(), os.mkfifo(so)),
      "fifo_meta": lambda: (meta.unlink(), os.mkfifo(meta)),
      "dir_meta": lambda: (meta.unlink(), meta.mkdir()),
      "missing_meta": lambda: meta.unlink(),
  }
  for name, corrupt in corruptions.items():
    corrupt()
    cache.clear_memory()
    gc.collect()
    done = _alarm(60)
    try:
      st = {}
      lib = cache.get_library(src, tc, st)
    finally:
      done()
    assert st["cache"] == "miss", name
    assert lib.pyjax_tiny_7(2) == 9, name
    assert cache._valid(key, str(so), str(meta)), name   # repaired, atomically published
    del lib
  _no_leftovers(sub)


@pytest.mark.slow
def test_bad_entries_are_misses_and_get_repaired(tmp_path):
  d = tmp_path / "c"
  sub = d / f"cpu-{cache.FORMAT}"
  assert "TIER native miss POOL True" in _prog(d).stdout
  before = set(_entry_files(sub))
  assert "TIER native disk POOL True" in _prog(d).stdout
  rkey = _runtime_key()
  prog_keys = sorted({p.split(".")[0] for p in before} - {rkey})
  assert len(prog_keys) == 1
  key = prog_keys[0]
  so, meta = sub / f"{key}.so", sub / f"{key}.json"
  good_so, good_meta = so.read_bytes(), meta.read_text()

  def restore():
    for p in (so, meta):
      if p.is_dir():
        os.rmdir(p)
      elif p.exists() or p.is_symlink():
        p.unlink()
    so.write_bytes(good_so)
    meta.write_text(good_meta)

  cases = dict(_BAD_META, no_digest=json.dumps({"key": key}))   # noqa: F841 (all of them)
  for name, text in cases.items():
    meta.write_text(text)
    assert "TIER native miss" in _prog(d).stdout, name
    assert "TIER native disk" in _prog(d).stdout, name   # repaired
  # a truncated library, an empty one, a directory, a FIFO (must never be opened blocking)
  for name in ("truncated", "empty_so", "dir_so", "fifo_so", "fifo_meta"):
    restore()
    if name == "truncated":
      so.write_bytes(good_so[:len(good_so) // 2])
    elif name == "empty_so":
      so.write_bytes(b"")
    elif name == "dir_so":
      so.unlink()
      so.mkdir()
    elif name == "fifo_so":
      so.unlink()
      os.mkfifo(so)
    else:
      meta.unlink()
      os.mkfifo(meta)
    assert "TIER native miss" in _prog(d).stdout, name
    assert stat.S_ISREG(os.stat(so).st_mode) and stat.S_ISREG(os.stat(meta).st_mode), name
    assert "TIER native disk" in _prog(d).stdout, name
  # the runtime library's entry: a bad one must not silently disable the thread pool
  rmeta = sub / f"{rkey}.json"
  for text in ("null", "[]", "garbage"):
    rmeta.write_text(text)
    assert "POOL True" in _prog(d).stdout, text
    json.loads(rmeta.read_text())   # rebuilt
  _no_leftovers(sub)


def test_bad_runtime_library_entry_keeps_the_thread_pool(tmp_path):
  d = tmp_path / "c"
  sub = d / f"cpu-{cache.FORMAT}"
  _prog(d)
  rmeta = sub / f"{_runtime_key()}.json"
  rmeta.write_text("null")
  assert "POOL True" in _prog(d).stdout
  json.loads(rmeta.read_text())["sha256"]   # rebuilt


@pytest.mark.slow
def test_bad_remembered_toolchain_probe_is_probed_again(tmp_path):
  d = tmp_path / "c"
  sub = d / f"cpu-{cache.FORMAT}"
  _prog(d)
  probes = list(sub.glob("toolchain-*.json"))
  assert len(probes) == 1
  p = probes[0]
  for kind in ("null", "list", "wrong_types", "fifo", "dir"):
    p.unlink() if not p.is_dir() else os.rmdir(p)
    if kind == "fifo":
      os.mkfifo(p)
    elif kind == "dir":
      p.mkdir()
    else:
      p.write_text({"null": "null", "list": "[]",
                    "wrong_types": '{"identity": 1, "openmp": "yes"}'}[kind])
    assert "TIER native" in _prog(d).stdout, kind   # no hang, no crash
    assert stat.S_ISREG(os.stat(p).st_mode), kind     # rewritten
  _no_leftovers(sub)


def _private_dirs(tmp):
  return [p for p in os.listdir(tmp) if p.startswith("pyjax-")]


@pytest.mark.parametrize("kind", ["file_in_the_way",
                                  pytest.param("unwritable", marks=pytest.mark.slow)])
def test_unusable_cache_path_one_private_dir_removed_at_exit(tmp_path, kind):
  tmp = tmp_path / "tmp"
  tmp.mkdir()
  if kind == "file_in_the_way":
    d = tmp_path / "afile"
    d.write_text("not a directory")
  else:   # /proc refuses new directories even to root (a read-only place)
    d = "/proc/pyjax-no-such-cache"
  code = textwrap.dedent("""
      import os, warnings, numpy as np, pyjax, pyjax.numpy as jnp
      from pyjax._src.backends.cpu.compiler.native import cache
      with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        x = np.arange(8, dtype=np.float32)
        for k in range(3):
          f = pyjax.jit(lambda x, k=k: x * (k + 2) - 1)
          exe = f.lower(x).compile().runtime_executable(); exe.wait()
          assert exe.tier == "native"
          np.testing.assert_array_equal(np.asarray(f(x)), x * (k + 2) - 1)
      msgs = [str(m.message) for m in w if "unusable" in str(m.message)]
      print("WARNINGS", len(msgs))
      print("PRIVATE", len([p for p in os.listdir(os.environ["TMPDIR"]) if p.startswith("pyjax-")]))
  """)
  r = _run(code, {"PYJAX_CACHE_DIR": str(d), "TMPDIR": str(tmp)})
  assert r.returncode == 0, r.stderr[-3000:]
  assert "WARNINGS 1" in r.stdout, r.stdout
  assert "PRIVATE 1" in r.stdout, r.stdout   # one private directory for the process
  assert _private_dirs(tmp) == []             # removed at exit
  if kind == "file_in_the_way":
    assert open(d).read() == "not a directory"


def test_read_only_cache_still_serves_hits(tmp_path):
  if os.geteuid() == 0:
    pytest.skip("root writes through read-only permissions")
  d = tmp_path / "c"
  _prog(d)
  sub = d / f"cpu-{cache.FORMAT}"
  os.chmod(sub, 0o555)
  try:
    assert "TIER native disk" in _prog(d).stdout
    r = _prog(d, 5.0, tmp=tmp_path)   # a new program: compiled privately, one warning
    assert "TIER native miss" in r.stdout and "unusable" in r.stderr
    assert _private_dirs(tmp_path) == [] or all(
        not p.startswith("pyjax-") for p in os.listdir(tmp_path))
  finally:
    os.chmod(sub, 0o755)


@pytest.mark.slow
def test_concurrent_writers_with_a_small_size_limit(tmp_path):
  d = tmp_path / "c"
  sub = d / f"cpu-{cache.FORMAT}"
  code = textwrap.dedent("""
      import sys, numpy as np, pyjax
      x = np.linspace(-1, 1, 32).astype(np.float32)
      for k in (1.0, 2.0, float(sys.argv[1])):
        f = pyjax.jit(lambda x, k=k: x * k + 0.5)
        exe = f.lower(x).compile().runtime_executable(); exe.wait()
        np.testing.assert_allclose(np.asarray(f(x)), x * k + 0.5, rtol=1e-6)
      print("OK", exe.tier)
  """)
  env = {k: v for k, v in os.environ.items() if k not in ("PYJAX_COMPILE",)}
  env.update(PYJAX_CACHE_DIR=str(d), PYJAX_COMPILE="sync", PYJAX_CACHE_MAX_SIZE="60000")
  procs = [subprocess.Popen([sys.executable, "-c", code, str(10.0 + i)], env=env, cwd=_ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
           for i in range(4)]
  for p in procs:
    o, e = p.communicate(timeout=300)
    assert p.returncode == 0, e[-3000:]
    assert "OK native" in o
  _no_leftovers(sub)
  total = sum(os.path.getsize(sub / p) for p in _entry_files(sub))
  assert total <= 60000
  # every surviving entry is complete and valid
  for p in _entry_files(sub):
    if p.endswith(".json"):
      m = json.loads((sub / p).read_text())
      assert cache._valid(m["key"], str(sub / (m["key"] + ".so")), str(sub / p))


def _tiny_source(i):
  return f"int pyjax_tiny_{i}(int x) {{ return x + {i}; }}\n"


def test_lru_eviction_keeps_recently_used_entries(tmp_path, monkeypatch):
  monkeypatch.setenv("PYJAX_CACHE_DIR", str(tmp_path))
  sub = tmp_path / f"cpu-{cache.FORMAT}"
  tc = build.toolchain()
  keys = []
  for i in range(3):
    lib = cache.get_library(_tiny_source(i), tc)
    assert getattr(lib, f"pyjax_tiny_{i}")(1) == 1 + i
    keys.append(cache.cache_key(_tiny_source(i), tc))
  size = sum(os.path.getsize(sub / f) for f in _entry_files(sub)) // 3
  for n, k in enumerate(keys):   # 0 oldest ... 2 newest
    for ext in (".so", ".json"):
      os.utime(sub / (k + ext), (1000 + n, 1000 + n))
  # entry 0 is used again (a disk hit refreshes it)
  cache.clear_memory()
  gc.collect()
  st = {}
  lib = cache.get_library(_tiny_source(0), tc, st)
  assert st["cache"] in ("disk", "memory")
  if st["cache"] == "memory":   # still loaded here: refresh as a disk hit would
    os.utime(sub / (keys[0] + ".json"))
  prev = pyjax.config.jax_compilation_cache_max_size
  pyjax.config.update("jax_compilation_cache_max_size", int(size * 3.5))
  try:
    cache.get_library(_tiny_source(3), tc)
  finally:
    pyjax.config.update("jax_compilation_cache_max_size", prev)
  left = {f.split(".")[0] for f in _entry_files(sub)}
  assert keys[0] in left and keys[2] in left and keys[1] not in left, (left, keys)
  _no_leftovers(sub)


def test_a_stalled_lock_holder_stops_nobody(tmp_path, monkeypatch):
  """Another process holding the cache directory's lock (here: this test, through its own
  open file description) and never letting go: publishing gives up after its deadline and
  the library still loads (from the private directory), eviction skips, nothing hangs."""
  import fcntl
  import time
  monkeypatch.setenv("PYJAX_CACHE_DIR", str(tmp_path))
  monkeypatch.setattr(cache, "_PUBLISH_LOCK_TIMEOUT", 0.2)
  sub = tmp_path / f"cpu-{cache.FORMAT}"
  sub.mkdir()
  fd = os.open(sub / ".evict.lock", os.O_RDWR | os.O_CREAT)
  try:
    fcntl.flock(fd, fcntl.LOCK_EX)
    t0 = time.monotonic()
    lib = cache.get_library(_tiny_source(77), build.toolchain())
    assert lib.pyjax_tiny_77(1) == 78
    assert cache.evict(str(sub), 0) == -1
    assert time.monotonic() - t0 < 60
    assert not _entry_files(sub)   # not published while the lock was held
  finally:
    os.close(fd)
  assert cache.evict(str(sub), 1 << 40) >= 0   # free again
  _no_leftovers(sub)


def test_min_entry_size_keeps_small_programs_off_disk(tmp_path, monkeypatch):
  monkeypatch.setenv("PYJAX_CACHE_DIR", str(tmp_path))
  prev = pyjax.config.jax_persistent_cache_min_entry_size_bytes
  pyjax.config.update("jax_persistent_cache_min_entry_size_bytes", 1 << 30)
  try:
    lib = cache.get_library(_tiny_source(42), build.toolchain())
    assert lib.pyjax_tiny_42(0) == 42
  finally:
    pyjax.config.update("jax_persistent_cache_min_entry_size_bytes", prev)
  sub = tmp_path / f"cpu-{cache.FORMAT}"
  key = cache.cache_key(_tiny_source(42), build.toolchain())
  assert not (sub / f"{key}.so").exists()


def _mapped_programs(d):
  """Distinct libraries mapped from the cache ``d`` or this process's private directory
  (where verified copies are loaded from; unlinked once loaded: "(deleted)")."""
  where = (str(d), cache.private_dir())
  names = set()
  with open("/proc/self/maps") as f:
    for ln in f:
      parts = ln.split(None, 5)
      if len(parts) < 6:
        continue
      path = parts[5].strip()
      if path.endswith(" (deleted)"):
        path = path[:-len(" (deleted)")]
      if path.endswith(".so") and any(w in path for w in where):
        names.add(path)
  return len(names)


@pytest.mark.parametrize("n", [12, pytest.param(300, marks=pytest.mark.slow)])
def test_dropped_programs_are_unloaded(tmp_path, monkeypatch, n):
  if not os.path.exists("/proc/self/maps"):
    pytest.skip("needs /proc/self/maps")
  monkeypatch.setenv("PYJAX_CACHE_DIR", str(tmp_path))
  x = np.arange(16, dtype=np.float32)
  gc.collect()
  base = _mapped_programs(tmp_path)   # what earlier tests of this process still hold
  peak = 0
  with executable.compile_mode_override("sync"):
    for k in range(n):
      # no transcendental: those load a shared kernel library of their own (tier_native)
      f = pyjax.jit(lambda x, k=k: jnp.abs(x) * (k + 1.25) + k)
      np.testing.assert_allclose(np.asarray(f(x)), np.abs(x) * (k + 1.25) + k, rtol=1e-5,
                                 atol=1e-4)
      del f
      if k % 4 == 3:
        gc.collect()
        peak = max(peak, _mapped_programs(tmp_path) - base)
  gc.collect()
  assert peak <= 6, peak                       # without unloading: one more per program
  assert _mapped_programs(tmp_path) - base <= 2   # the runtime library (and one more)
  st = cache.stats()
  assert st["unloaded"] >= n - 4, st


def test_program_in_use_stays_loaded(tmp_path, monkeypatch):
  monkeypatch.setenv("PYJAX_CACHE_DIR", str(tmp_path))
  x = np.arange(16, dtype=np.float32)
  with executable.compile_mode_override("sync"):
    keep = pyjax.jit(lambda x: jnp.cos(x) * 7.5)
    keep(x)
    for k in range(6):
      f = pyjax.jit(lambda x, k=k: jnp.cos(x) * (k + 0.5))
      f(x)
      del f
      gc.collect()
    cache.clear_memory()
    gc.collect()
    np.testing.assert_allclose(np.asarray(keep(x)), np.cos(x) * 7.5, rtol=1e-6)


def test_private_dirs_of_killed_processes_are_removed(tmp_path, monkeypatch):
  import tempfile
  monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
  dead = subprocess.Popen([sys.executable, "-c", "pass"])
  dead.wait()
  orphan = tmp_path / f"pyjax-{dead.pid}-x1"
  orphan.mkdir()
  (orphan / "c-key.so").write_bytes(b"x")
  alive = tmp_path / f"pyjax-{os.getpid()}-x2"
  alive.mkdir()
  other = tmp_path / "pyjax-probe-x3"
  other.mkdir()
  cache._remove_orphans()
  assert not orphan.exists() and alive.exists() and other.exists()
