"""Compiling CUDA C with NVRTC through ``cuda-bindings`` (``cuda.bindings.nvrtc``).

NVRTC is a library: it compiles CUDA C++ to PTX (or a cubin for a named ``sm_XX``)
without a GPU or a driver, so CPU-only machines check every kernel the emitter produces.
The packages: ``cuda-bindings`` and ``nvidia-cuda-nvrtc`` (the ``nvrtc`` extra), or
CuPy's own NVRTC wrapper (``backend="cupy"``, which the GPU launcher uses: its NVRTC is
the CUDA version CuPy was built for, so the PTX suits the driver CuPy runs on).
``cupy.RawModule(code=...)`` is not used: it adds options of its own (``-ftz=true``).
"""
from __future__ import annotations

import importlib.util

# what the kernels are compiled with: no contraction of a * b + c into an FMA that the
# source does not write (the CPU compiler's -ffp-contract=off), IEEE division and sqrt
OPTIONS = ("-default-device", "--std=c++20", "--fmad=false", "--prec-div=true",
           "--prec-sqrt=true", "--ftz=false",
           "--diag-suppress=177")   # (the prelude's helpers a kernel does not use)
DEFAULT_ARCH = "compute_80"


class NvrtcError(RuntimeError):
  """NVRTC rejected a program: the message holds NVRTC's log."""


def available(backend="cuda-bindings"):
  """Whether NVRTC can be used through ``backend``: "cuda-bindings"
  (``cuda.bindings.nvrtc``) or "cupy" (CuPy's own NVRTC wrapper, whose library matches
  CuPy's CUDA version; it too works without a GPU)."""
  try:
    version(backend)
    return True
  except Exception:   # not installed, the library missing (pathfinder's error), ...
    return False


def version(backend="cuda-bindings"):
  """NVRTC's (major, minor) through ``backend``."""
  if backend == "cupy":
    from cupy_backends.cuda.libs import nvrtc as cupy_nvrtc
    major, minor = cupy_nvrtc.getVersion()
    return int(major), int(minor)
  if importlib.util.find_spec("cuda") is None or importlib.util.find_spec("cuda.bindings") is None:
    raise ImportError("cuda-bindings is not installed")
  from cuda.bindings import nvrtc
  err, major, minor = nvrtc.nvrtcVersion()
  if int(err):
    raise NvrtcError(f"nvrtcVersion failed: {err}")
  return int(major), int(minor)


def _check(result, prog=None, what=""):
  from cuda.bindings import nvrtc
  err = result[0] if isinstance(result, tuple) else result
  if int(err) == 0:
    return result[1:] if isinstance(result, tuple) else ()
  log = _log(prog) if prog is not None else ""
  _, msg = nvrtc.nvrtcGetErrorString(err)
  raise NvrtcError(f"NVRTC {what} failed: {msg.decode()}\n{log}")


def _log(prog):
  from cuda.bindings import nvrtc
  _, n = nvrtc.nvrtcGetProgramLogSize(prog)
  buf = b" " * n
  nvrtc.nvrtcGetProgramLog(prog, buf)
  return buf.split(b"\x00")[0].strip().decode(errors="replace")


def compile_ptx(source, name="pyjax.cu", arch=DEFAULT_ARCH, options=OPTIONS,
                backend="cuda-bindings"):
  """PTX text of ``source`` compiled for ``arch`` (``compute_XX``) with exactly
  ``options`` through ``backend`` ("cuda-bindings" or "cupy").  Raises ``NvrtcError``
  with NVRTC's log when the source does not compile; returns ``(ptx, log)`` (the log
  holds any warnings)."""
  opts = list(options) + [f"--gpu-architecture={arch}"]
  if backend == "cupy":
    return _compile_cupy(source, name, opts)
  from cuda.bindings import nvrtc
  prog, = _check(nvrtc.nvrtcCreateProgram(source.encode(), name.encode(), 0, [], []),
                 what="create")
  try:
    opts = [o.encode() for o in opts]
    _check(nvrtc.nvrtcCompileProgram(prog, len(opts), opts), prog, "compile")
    n, = _check(nvrtc.nvrtcGetPTXSize(prog), prog, "PTX size")
    buf = b" " * n
    _check(nvrtc.nvrtcGetPTX(prog, buf), prog, "PTX")
    return buf.rstrip(b"\x00").decode(), _log(prog)
  finally:
    nvrtc.nvrtcDestroyProgram(prog)


def _compile_cupy(source, name, opts):
  """``compile_ptx`` through CuPy's NVRTC wrapper (no option of CuPy's own added, unlike
  ``cupy.RawModule(code=...)``, which adds ``-ftz=true`` and a second
  ``-default-device``)."""
  from cupy_backends.cuda.libs import nvrtc as cupy_nvrtc
  prog = cupy_nvrtc.createProgram(source, name, (), ())
  try:
    try:
      cupy_nvrtc.compileProgram(prog, opts)
    except cupy_nvrtc.NVRTCError as e:
      raise NvrtcError(f"NVRTC compile failed: {e}\n{cupy_nvrtc.getProgramLog(prog)}") from None
    ptx = cupy_nvrtc.getPTX(prog)
    ptx = ptx.decode() if isinstance(ptx, bytes) else ptx
    return ptx.rstrip("\x00"), cupy_nvrtc.getProgramLog(prog).strip("\x00 \n")
  finally:
    cupy_nvrtc.destroyProgram(prog)
