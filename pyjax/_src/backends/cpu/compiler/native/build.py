"""Building and loading native code: the system C compiler (``cc``, or ``$PYJAX_CC``),
one translation unit per executable, loaded once with ctypes.

``toolchain()`` finds the compiler and probes, once per process (and remembered on disk per
compiler), what it supports: OpenMP, ``_Float16``, glibc's libmvec, ``-march=native``.
``PYJAX_CFLAGS`` appends flags (e.g. ``-fsanitize=address,undefined`` for the sanitizer
test build).  Code is compiled with ``-O2`` and IEEE semantics intact.  Every flag was
audited for rewrites that change values:

- no ``-ffast-math`` or any of its parts (``-fno-signed-zeros``, ``-ffinite-math-only``,
  ``-funsafe-math-optimizations``, ``-freciprocal-math``, ``-fassociative-math``,
  ``-fcx-limited-range``);
- ``-fno-math-errno`` only drops ``errno`` bookkeeping of libm calls (same values);
- ``-fno-trapping-math`` is NOT used: with it (and ``-march=native``'s SSE4.1) GCC rewrites
  ``(float)(int)x`` into ``trunc(x)``, which keeps the sign of zero, so a float -> signed
  int -> float round trip of a value in (-1, 0] gave -0.0 (``1 / that`` was ``-inf``).
  Leaving FP traps honoured costs no vectorization in the generated kernels (their
  object code differs only in scheduling);
- ``-march=native`` makes FMA instructions available; ``-ffp-contract=off`` keeps GNU C
  from fusing ``a * b + c`` into one rounding (its default in GNU dialects, and what
  XLA:CPU does), so native code rounds twice as the NumPy tier does and the tiers give
  the same bits (measured: no cost on memory-bound chains; kernels/vmath.py's explicit ``fma``
  calls are unaffected);
- glibc's libmvec only with ``PYJAX_LIBMVEC=1``: its vector functions and libm's scalar
  ones differ in the last ulps (see ``docs/compiler.md``);
- ``-fopenmp-simd`` lets ``omp simd reduction`` loops reassociate sums, as XLA's
  reductions do (the order of a float sum is not specified by JAX either).
"""
from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import subprocess
import tempfile
import threading

from pyjax._src import profiler as _profiler

_lock = threading.Lock()
_toolchain = None
_NO = object()


class Toolchain:
  """A usable C compiler and the flags pyjax builds with."""

  def __init__(self, cc, identity, openmp, float16, mvec, native):
    """``openmp``: the compiler accepts ``-fopenmp-simd`` (SIMD directives only)."""
    self.cc = cc
    self.identity = identity
    self.openmp = openmp
    self.float16 = float16
    # libmvec only on request (PYJAX_LIBMVEC=1): its vector functions and libm's scalar
    # ones (a loop's remainder, the NumPy tier's kernels) differ in the last ulps, which
    # would make results depend on an element's position and on the tier
    self.mvec = mvec and os.environ.get("PYJAX_LIBMVEC", "").strip().lower() in (
        "1", "on", "true", "yes")
    self.native = native
    extra = shlex.split(os.environ.get("PYJAX_CFLAGS", ""))
    # no -fno-trapping-math: it lets GCC turn (float)(int)x into trunc(x) (-0.0 for
    # x in (-1, 0]); see the module docstring for the audit of every flag
    # -ffp-contract=off: no fused multiply-add the source does not ask for, so a kernel
    # rounds each ``*`` and ``+`` as the NumPy tier does (tiers bit-identical)
    self.cflags = ["-O2", "-std=gnu11", "-fPIC", "-shared", "-fno-math-errno",
                   "-fno-strict-aliasing", "-ffp-contract=off"]
    if native:
      self.cflags.append("-march=native")
    # OpenMP only for its SIMD directives (``omp simd``, ``declare simd``): threads come
    # from pyjax's own pool (native/runtime.py), so no OpenMP runtime is loaded
    if openmp:
      self.cflags.append("-fopenmp-simd")
    self.cflags += extra
    self.libs = (["-lmvec"] if self.mvec else []) + ["-lm", "-pthread"]

  def key_material(self):
    return json.dumps([self.identity, self.cflags, self.libs, cpu_features() if self.native else ""])

  def compile(self, source, out_path):
    """Compile ``source`` into the shared object ``out_path`` (written atomically).  The
    source is always compiled as ``pyjax.c`` so identical sources give identical bytes."""
    d = os.path.dirname(out_path) or "."
    os.makedirs(d, exist_ok=True)
    work = tempfile.mkdtemp(prefix=".pyjax-build-", dir=d)
    c_path = os.path.join(work, "pyjax.c")
    tmp_so = os.path.join(work, "pyjax.so")
    try:
      with open(c_path, "w") as f:
        f.write(source)
      cmd = [self.cc, *self.cflags, "pyjax.c", "-o", "pyjax.so", *self.libs]
      with _profiler.span(f"cc {os.path.basename(out_path)}", "compile",
                          compiler=self.cc, source_bytes=len(source)):
        r = subprocess.run(cmd, capture_output=True, text=True, cwd=work)
      if r.returncode != 0:
        raise CompileError(f"C compiler failed ({' '.join(cmd)}):\n{r.stderr[-4000:]}")
      os.replace(tmp_so, out_path)
    finally:
      shutil.rmtree(work, ignore_errors=True)


class CompileError(RuntimeError):
  """The C compiler rejected generated code (a pyjax bug) or is unusable."""


def cpu_features():
  """The host CPU's identity and instruction-set features (part of the cache key when
  building with ``-march=native``)."""
  try:
    with open("/proc/cpuinfo") as f:
      text = f.read()
    model = flags = ""
    for line in text.splitlines():
      if not model and line.startswith("model name"):
        model = line.split(":", 1)[1].strip()
      if not flags and (line.startswith("flags") or line.startswith("Features")):
        flags = line.split(":", 1)[1].strip()
      if model and flags:
        break
    return hashlib.sha256(f"{model}|{flags}".encode()).hexdigest()[:16]
  except OSError:
    import platform
    return platform.machine() + platform.processor()


def _run(cmd, **kw):
  return subprocess.run(cmd, capture_output=True, text=True, timeout=120, **kw)


def _try(cc, flags, src, libs=()):
  with tempfile.TemporaryDirectory(prefix="pyjax-probe-") as d:
    c = os.path.join(d, "p.c")
    with open(c, "w") as f:
      f.write(src)
    r = _run([cc, *flags, c, "-o", os.path.join(d, "p.so"), *libs])
    return r.returncode == 0


_PROBE_MVEC = r"""
#include <math.h>
#include <stdint.h>
#pragma omp declare simd notinbranch
extern float expf(float);
#pragma omp declare simd notinbranch
extern double tanh(double);
#pragma omp declare simd notinbranch
extern float erff(float);
void f(const float *restrict a, float *restrict b, const double *restrict c, double *restrict d, int64_t n) {
  #pragma omp simd
  for (int64_t i = 0; i < n; i++) b[i] = expf(a[i]) + erff(a[i]);
  #pragma omp simd
  for (int64_t i = 0; i < n; i++) d[i] = tanh(c[i]);
}
"""


def _probe(cc):
  r = _run([cc, "--version"])
  if r.returncode != 0:
    return None
  ident = f"{shutil.which(cc) or cc}|{r.stdout.splitlines()[0] if r.stdout else ''}"
  cache = _probe_cache_path(ident)
  if cache is not None:
    # a bad remembered probe (garbage, null, wrong types, a FIFO: never opened blocking)
    # is ignored and probed again
    from pyjax._src.backends.cpu.compiler.native import cache as cache_mod
    raw = cache_mod._read_regular(cache, 1 << 16)
    try:
      d = json.loads(raw.decode("utf-8")) if raw is not None else None
    except (ValueError, UnicodeDecodeError):
      d = None
    keys = ("openmp", "float16", "mvec", "native")
    if (isinstance(d, dict) and d.get("identity") == ident
        and all(isinstance(d.get(k), bool) for k in keys)):
      return Toolchain(cc, ident, *(d[k] for k in keys))
  base = ["-O2", "-fPIC", "-shared", "-std=gnu11"]
  if not _try(cc, base, "int f(void) { return 0; }\n"):
    return None
  native = _try(cc, base + ["-march=native"], "int f(void) { return 0; }\n")
  flags = base + (["-march=native"] if native else [])
  openmp = _try(cc, flags + ["-fopenmp-simd"], "int f(int *a) {\n#pragma omp simd\n"
                "for (int i = 0; i < 8; i++) a[i] = i;\nreturn 0; }\n")
  float16 = _try(cc, flags, "#include <string.h>\nunsigned short f(float x) { _Float16 h = (_Float16)x; "
                 "unsigned short u; memcpy(&u, &h, 2); return u; }\n")
  mvec = openmp and _try(cc, flags + ["-fopenmp-simd", "-O3", "-fno-math-errno", "-Wl,--no-undefined"], _PROBE_MVEC,
              ["-lmvec", "-lm"])
  tc = Toolchain(cc, ident, openmp, float16, mvec, native)
  if cache is not None:
    tmp = f"{cache}.{os.getpid()}.tmp"
    try:
      os.makedirs(os.path.dirname(cache), exist_ok=True)
      with open(tmp, "w") as f:
        json.dump({"identity": ident, "openmp": openmp, "float16": float16, "mvec": mvec,
                   "native": native}, f)
      if os.path.isdir(cache) and not os.path.islink(cache):
        shutil.rmtree(cache, ignore_errors=True)
      os.replace(tmp, cache)
    except OSError:
      try:
        os.unlink(tmp)
      except OSError:
        pass
  return tc


def _probe_cache_path(ident):
  from pyjax._src.backends.cpu.compiler.native import cache
  d = cache.cache_dir()
  if d is None:
    return None
  h = hashlib.sha256(ident.encode()).hexdigest()[:16]
  return os.path.join(d, f"toolchain-{h}.json")


def toolchain():
  """The process's Toolchain, or None when no working C compiler exists."""
  global _toolchain
  with _lock:
    if _toolchain is None:
      cc = os.environ.get("PYJAX_CC") or "cc"
      try:
        tc = _probe(cc)
      except (OSError, subprocess.SubprocessError):
        tc = None
      _toolchain = tc if tc is not None else _NO
    return None if _toolchain is _NO else _toolchain


def reset_toolchain():
  """Forget the probed toolchain (tests change ``PYJAX_CC``)."""
  global _toolchain
  with _lock:
    _toolchain = None
