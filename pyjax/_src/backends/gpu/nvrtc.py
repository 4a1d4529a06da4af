"""Compiling CUDA C with NVRTC through ``cuda-bindings`` (``cuda.bindings.nvrtc``).

NVRTC is a library: it compiles CUDA C++ to PTX (or a cubin for a named ``sm_XX``)
without a GPU or a driver, so CPU-only machines check every kernel the emitter produces.
The packages: ``cuda-bindings`` and ``nvidia-cuda-nvrtc`` (the ``nvrtc`` extra).
CuPy's own compile path needs a driver and is not used for the check.
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


def available():
  """Whether ``cuda.bindings.nvrtc`` imports and finds the NVRTC library."""
  if importlib.util.find_spec("cuda") is None or importlib.util.find_spec("cuda.bindings") is None:
    return False
  try:
    from cuda.bindings import nvrtc
    err, _, _ = nvrtc.nvrtcVersion()
    return int(err) == 0
  except Exception:   # the library missing (pathfinder's DynamicLibNotFoundError), ...
    return False


def version():
  """NVRTC's (major, minor)."""
  from cuda.bindings import nvrtc
  _, major, minor = nvrtc.nvrtcVersion()
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


def compile_ptx(source, name="pyjax.cu", arch=DEFAULT_ARCH, options=OPTIONS):
  """PTX text of ``source`` compiled for ``arch`` (``compute_XX`` gives PTX, ``sm_XX``
  too).  Raises ``NvrtcError`` with NVRTC's log when the source does not compile;
  warnings are returned in the second result: ``(ptx, log)``."""
  from cuda.bindings import nvrtc
  prog, = _check(nvrtc.nvrtcCreateProgram(source.encode(), name.encode(), 0, [], []),
                 what="create")
  try:
    opts = [o.encode() for o in options] + [f"--gpu-architecture={arch}".encode()]
    _check(nvrtc.nvrtcCompileProgram(prog, len(opts), opts), prog, "compile")
    n, = _check(nvrtc.nvrtcGetPTXSize(prog), prog, "PTX size")
    buf = b" " * n
    _check(nvrtc.nvrtcGetPTX(prog, buf), prog, "PTX")
    return buf.rstrip(b"\x00").decode(), _log(prog)
  finally:
    nvrtc.nvrtcDestroyProgram(prog)
