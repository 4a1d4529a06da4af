"""Running emitted CUDA kernels on a GPU with CuPy: transfers, a per-device stream, launches.

``GpuDevice(device_id)`` holds what pyjax keeps per GPU: its memory pool
(``memory.pool``: on demand, ``XLA_PYTHON_CLIENT_*`` accepted) and one non-blocking CUDA
stream on which every copy and kernel runs in order.  ``to_device`` / ``to_host`` move
NumPy arrays in and out (a read waits for the stream, so errors of earlier launches
surface there).  ``GpuProgram(closed, device)`` lowers a jaxpr with ``codegen_cuda``,
compiles the translation unit to PTX once with CuPy's NVRTC and pyjax's options
(``load_module``: cached on disk; ``RawModule(code=...)`` would add ``-ftz=true``),
loads it as a ``RawModule``, uploads the program's constants once, and each call
launches the kernels in order on the stream (intermediates and outputs from the pool).

This is the launching layer only: pyjax's Arrays and eager dispatch do not hold device
buffers yet, so the ``gpu`` platform does not start (docs/gpu.md).  UNVERIFIED on a GPU:
written against CuPy 14's API and imported here, but no GPU session has run it yet
(``tests/gpu/test_gpu_launch.py``, ``pytest -m gpu``; ``.ci/gpu_check.sh``).
"""
from __future__ import annotations

import hashlib
import os
import tempfile

import numpy as np

from pyjax._src.backends.cpu.compiler import plan
from pyjax._src.backends.cpu.compiler.ir import CONST, INPUT, Lit
from pyjax._src.backends.gpu import codegen_cuda, host_steps, memory, nvrtc


class GpuDevice:
  """One CUDA device as the launching layer uses it: ``id``, ``pool`` (a CuPy memory
  pool, or None for the platform allocator) and ``stream`` (non-blocking)."""

  def __init__(self, device_id=0, settings=None):
    import cupy
    self.cupy = cupy
    self.id = int(device_id)
    self.device = cupy.cuda.Device(self.id)
    self.pool = memory.pool(self.id, settings)
    with self.device:
      self.stream = cupy.cuda.Stream(non_blocking=True)
      props = cupy.cuda.runtime.getDeviceProperties(self.id)
    name = props["name"]
    self.name = name.decode() if isinstance(name, bytes) else str(name)
    self.arch = f"{props['major']}{props['minor']}"

  def context(self):
    """A context manager: this device current, its stream current, its pool allocating."""
    import contextlib
    stack = contextlib.ExitStack()
    stack.enter_context(self.device)
    stack.enter_context(self.stream)
    if self.pool is not None:
      stack.enter_context(self.cupy.cuda.using_allocator(self.pool.malloc))
    return stack

  def to_device(self, host):
    """A device copy of the NumPy array ``host`` (enqueued on the stream)."""
    host = np.ascontiguousarray(host)
    with self.context():
      buf = self.cupy.empty(host.shape, host.dtype)
      buf.set(host, stream=self.stream)
    return buf

  def to_host(self, buf):
    """The NumPy value of device buffer ``buf`` (waits for the stream)."""
    with self.device:
      out = buf.get(stream=self.stream)
      self.stream.synchronize()
    return out

  def synchronize(self):
    self.stream.synchronize()


def ptx_cache_dir():
  """Where compiled PTX is kept: ``cuda/`` beside the CPU compiler's disk cache (None
  when that cache is disabled)."""
  from pyjax._src.backends.cpu.compiler.native import cache
  d = cache.cache_dir()
  return None if d is None else os.path.join(os.path.dirname(d), "cuda")


def load_module(device, source):
  """``source`` compiled to PTX for ``device``'s architecture with CuPy's NVRTC and
  exactly ``nvrtc.OPTIONS`` (cached on disk by a hash of source, options, architecture
  and NVRTC version; written atomically), loaded as a ``cupy.RawModule``."""
  arch = f"compute_{device.arch}"
  ver = nvrtc.version("cupy")
  key = hashlib.sha256(repr((source, nvrtc.OPTIONS, arch, ver)).encode()).hexdigest()[:32]
  d = ptx_cache_dir()
  if d is None:
    d = tempfile.mkdtemp(prefix="pyjax_ptx_")
  path = os.path.join(d, f"{key}.ptx")
  if not os.path.exists(path):
    ptx, _ = nvrtc.compile_ptx(source, "pyjax.cu", arch, backend="cupy")
    os.makedirs(d, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=d, suffix=".tmp")
    with os.fdopen(fd, "w") as f:
      f.write(ptx)
    os.replace(tmp, path)
  return device.cupy.RawModule(path=path)


class GpuProgram:
  """A ClosedJaxpr's CUDA kernels compiled for one ``GpuDevice``; ``program(*arrays)``
  (NumPy arrays or device buffers) returns device buffers for the outputs, without
  waiting unless the program has dot or host groups: those run on the host
  (``host_steps``; cuBLAS and CuPy steps are not built yet), their operands copied out
  and their results back."""

  def __init__(self, closed, device, name="jaxpr"):
    self.device = device
    self.prog = codegen_cuda.lower(closed, name)
    self.source = codegen_cuda.module_source(self.prog.kernels)
    with device.device:
      self.module = load_module(device, self.source)
      self.functions = [self.module.get_function(k.name) for k in self.prog.kernels]
    self.consts = {}
    fu = self.prog.fu
    for g, k in self.prog.steps:
      vals = [v for v, _ in k.params] if k is not None else [
          x for x in g.node.ins if type(x) is not Lit]
      for v in vals:
        rv = plan.root(fu, v)
        if rv.kind == CONST and rv not in self.consts:
          self.consts[rv] = device.to_device(np.asarray(rv.const, rv.dtype))

  def __call__(self, *args):
    dev = self.device
    cupy = dev.cupy
    fu = self.prog.fu
    bufs = dict(self.consts)
    with dev.context():
      def buf(v):
        rv = plan.root(fu, v)
        b = bufs.get(rv)
        if b is None:
          if rv.kind == INPUT:
            a = args[rv.index]
            if isinstance(a, cupy.ndarray):   # (vector loads: 16-byte aligned, contiguous)
              b = a if a.flags.c_contiguous and a.data.ptr % 16 == 0 else a.copy()
            else:
              b = dev.to_device(np.asarray(a, rv.dtype))
          else:
            b = cupy.empty(rv.shape, rv.dtype)
          bufs[rv] = b
        return b
      fns = iter(self.functions)
      for g, k in self.prog.steps:
        if k is None:   # a dot/host group: on the host for now (waits for the stream)
          node = g.node
          ins = [dev.to_host(buf(x)) for x in node.ins if type(x) is not Lit]
          for o, v in zip(host_steps.run(node, ins), node.outs):
            bufs[plan.root(fu, v)] = dev.to_device(o)
          continue
        grid, block = codegen_cuda.launch_config(k)
        next(fns)((grid,), (block,), tuple(buf(v) for v, _ in k.params))
      outs = []
      for v in self.prog.program.outputs:
        if type(v) is Lit:
          outs.append(dev.to_device(np.asarray(v.value, v.dtype)))
        else:
          outs.append(buf(v).reshape(v.shape))
    return outs
