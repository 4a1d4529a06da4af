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
