"""The launching layer (backends/gpu/launch.py, memory.py).

The memory settings are checked everywhere; the tests marked ``gpu`` need CuPy and an
NVIDIA GPU (they skip without one; ``.ci/gpu_check.sh`` runs them): every test program
of test_compiler_cuda.py runs as CUDA kernels on the GPU and is compared with pyjax's
CPU results, as the CPU emulation of the same kernels is.
"""
import numpy as np
import pytest

from pyjax._src.backends.gpu import memory
from pyjax._src.backends.gpu import platform as gpu_platform

HAVE_GPU = gpu_platform.device_count() > 0


def test_memory_settings_default_to_on_demand():
  assert memory.settings({}) == memory.MemorySettings(None, False, True)
  assert memory.settings({"XLA_PYTHON_CLIENT_MEM_FRACTION": ".5"}) == (0.5, False, True)
  # preallocation as JAX: 75% unless a fraction is given
  assert memory.settings({"XLA_PYTHON_CLIENT_PREALLOCATE": "true"}) == (0.75, True, True)
  assert memory.settings({"XLA_PYTHON_CLIENT_PREALLOCATE": "1",
                          "XLA_PYTHON_CLIENT_MEM_FRACTION": "0.3"}) == (0.3, True, True)
  assert memory.settings({"XLA_PYTHON_CLIENT_ALLOCATOR": "platform"}).pooled is False


@pytest.mark.parametrize("env, match", [
    ({"XLA_PYTHON_CLIENT_MEM_FRACTION": "1.5"}, "MEM_FRACTION must be a number in"),
    ({"XLA_PYTHON_CLIENT_MEM_FRACTION": "half"}, "MEM_FRACTION must be a number in"),
    ({"XLA_PYTHON_CLIENT_PREALLOCATE": "maybe"}, "PREALLOCATE must be true or false")])
def test_memory_settings_reject_bad_values(env, match):
  with pytest.raises(ValueError, match=match):
    memory.settings(env)


@pytest.fixture(scope="module")
def device():
  from pyjax._src.backends.gpu import launch
  return launch.GpuDevice(0, memory.MemorySettings(0.5, False, True))


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="needs CuPy and an NVIDIA GPU")
@pytest.mark.parametrize("dtype", ["float32", "float64", "int8", "uint64", "bool"])
def test_transfers_both_ways(dtype, device):
  dev = device
  x = (np.arange(1000) % 7).astype(dtype).reshape(10, 100)
  buf = dev.to_device(x)
  assert buf.shape == x.shape and buf.dtype == x.dtype
  back = dev.to_host(buf)
  assert back.dtype == x.dtype
  np.testing.assert_array_equal(back, x)


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="needs CuPy and an NVIDIA GPU")
def test_pool_limit_follows_the_fraction(device):
  import cupy
  with cupy.cuda.Device(0):
    _, total = cupy.cuda.runtime.memGetInfo()
  assert device.pool.get_limit() == pytest.approx(0.5 * total, rel=0.01)
  assert device.stream.is_non_blocking


def _programs():
  import test_compiler_cuda
  return test_compiler_cuda


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="needs CuPy and an NVIDIA GPU")
@pytest.mark.parametrize("name", sorted(_programs().PROGRAMS))
def test_kernels_on_the_gpu_match_cpu(name, device):
  from pyjax._src.backends.gpu import launch
  t = _programs()
  _, closed, args, ref = t._lower(name)
  outs = [device.to_host(b) for b in launch.GpuProgram(closed, device, name)(*args)]
  t.assert_matches(outs, ref, t.PROGRAMS[name][3])


# --- launch.py's bookkeeping on the CPU: a stand-in for CuPy whose kernels run emulated ---
class _EmuArray(np.ndarray):
  """A "device" buffer: host memory with CuPy's ``set``/``get``."""

  def set(self, host, stream=None):
    self[...] = host

  def get(self, stream=None):
    return np.array(self)


class _Ctx:
  def __init__(self, *a, **k):
    self.non_blocking = k.get("non_blocking", False)

  def __enter__(self):
    return self

  def __exit__(self, *exc):
    return False

  def synchronize(self):
    pass

  @property
  def is_non_blocking(self):
    return self.non_blocking


class _EmuModule:
  """``cupy.RawModule``: the CUDA source compiled for the CPU (emulate.py), a kernel's
  launch entry made from its arguments' dtypes at its first call."""

  def __init__(self, code):
    self.code = code

  def get_function(self, name):
    from pyjax._src.backends.gpu import emulate

    def run(grid, block, args):
      lib = emulate.build_source(emulate.shim(block[0]) + self.code + "\n"
                                 + emulate.launcher(name, [a.dtype for a in args]))
      ptrs = (emulate.ctypes.c_void_p * len(args))(*[a.ctypes.data for a in args])
      rc = getattr(lib, f"pj_launch_{name}")(ptrs, emulate.ctypes.c_long(min(grid[0], 8)),
                                             emulate.ctypes.c_int(block[0]))
      assert rc == 0
    return run


@pytest.fixture
def emulated_cupy(monkeypatch):
  import contextlib
  import sys
  import types
  from pyjax._src.backends.gpu import emulate
  if emulate.compiler() is None:
    pytest.skip("no C++ compiler")
  import pyjax
  pyjax.devices()   # the process's backends started before the stand-in exists
  runtime = types.SimpleNamespace(
      getDeviceProperties=lambda i: {"name": b"emulated", "major": 8, "minor": 0},
      memGetInfo=lambda: (1 << 30, 1 << 30))
  pool = types.SimpleNamespace(set_limit=lambda **k: None, malloc=lambda n: None)
  mod = types.ModuleType("cupy")
  mod.ndarray = _EmuArray
  mod.empty = lambda shape, dtype: np.empty(shape, dtype).view(_EmuArray)
  mod.cuda = types.SimpleNamespace(Device=_Ctx, Stream=_Ctx, runtime=runtime,
                                   MemoryPool=lambda: pool,
                                   using_allocator=lambda f: contextlib.nullcontext())
  monkeypatch.setitem(sys.modules, "cupy", mod)
  from pyjax._src.backends.gpu import launch   # the module: emulated instead of PTX
  monkeypatch.setattr(launch, "load_module", lambda device, source: _EmuModule(source))
  return mod


@pytest.mark.parametrize("name", ["softmax", "vec_offsets", "broadcast_slice_iota"])
def test_gpu_program_bookkeeping_with_emulated_cupy(name, emulated_cupy):
  """GpuProgram's buffers, constants, parameter order, launch configuration and output
  shapes, with the kernels emulated on the CPU (what the GPU run adds is CuPy itself)."""
  from pyjax._src.backends.gpu import launch
  t = _programs()
  _, closed, args, ref = t._lower(name)
  dev = launch.GpuDevice(0, memory.MemorySettings(None, False, True))
  assert dev.name == "emulated" and dev.arch == "80" and dev.stream.is_non_blocking
  prog = launch.GpuProgram(closed, dev, name)
  outs = [dev.to_host(b) for b in prog(*args)]
  t.assert_matches(outs, ref, t.PROGRAMS[name][3])


def test_gpu_program_runs_dot_and_host_steps_between_kernels(emulated_cupy):
  """A dense layer (a dot group), digamma (a host group) and fused kernels around them."""
  import pyjax
  import pyjax.numpy as jnp
  from pyjax._src.backends.gpu import launch

  def f(x, w, b):
    h = jnp.tanh(x @ w + b)
    return pyjax.nn.softmax(h, axis=-1), pyjax.lax.digamma(h + 2) * 2
  rng = np.random.default_rng(0)
  args = (rng.standard_normal((8, 16), np.float32), rng.standard_normal((16, 32), np.float32),
          rng.standard_normal(32, np.float32))
  closed = pyjax.make_jaxpr(f)(*args)
  ref = [np.asarray(r) for r in pyjax.jit(f)(*args)]
  dev = launch.GpuDevice(0, memory.MemorySettings(None, False, True))
  prog = launch.GpuProgram(closed, dev, "layer")
  assert {g.kind for g, k in prog.prog.steps if k is None} == {"dot", "host"}
  outs = [dev.to_host(b) for b in prog(*args)]
  _programs().assert_matches(outs, ref, 1e-6)
