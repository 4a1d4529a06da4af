"""Platform "gpu" (alias "cuda") on machines without a GPU: detection, JAX's errors, and
that nothing GPU-related is imported."""
import os
import subprocess
import sys
import types

import pytest

import pyjax
from pyjax._src.backends.cpu.backend import CpuBackend
from pyjax._src.backends.gpu import platform as gpu_platform
from pyjax._src.runtime import backend as backend_mod
from pyjax._src.runtime import devices as devices_mod

NO_GPU = gpu_platform.device_count() == 0
_GPU_MODULES = ("cupy", "cupy_backends", "cuda", "nvidia", "triton")


def _run(code, **env):
  e = dict(os.environ, **env)
  r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=e,
                     timeout=120)
  assert r.returncode == 0, r.stderr
  return r.stdout.strip().splitlines()


@pytest.fixture
def fresh_backends(monkeypatch):
  """Backends initialized anew inside the test (the process's own restored after)."""
  monkeypatch.setattr(devices_mod, "_backends", None)
  monkeypatch.setattr(devices_mod, "_default_device_cache", None)
  prev = pyjax.config.jax_platforms
  yield
  pyjax.config.update("jax_platforms", prev)


def test_gpu_platform_is_registered_with_its_alias():
  plat = backend_mod.platforms()["gpu"]
  assert plat.aliases == ("cuda",) and plat.default
  assert plat.priority > backend_mod.platforms()["cpu"].priority
  assert backend_mod.canonical_platform("CUDA") == "gpu"


@pytest.mark.skipif(gpu_platform.cupy_installed(), reason="CuPy installed: devices() imports it")
def test_importing_pyjax_imports_nothing_gpu_related():
  code = ("import sys, pyjax, pyjax.numpy as jnp\n"
          "(jnp.ones(3) + 1).block_until_ready(); pyjax.jit(lambda x: x * 2)(1.0); pyjax.devices()\n"
          f"print(sorted(m for m in sys.modules if m.split('.')[0] in {_GPU_MODULES!r}))")
  assert _run(code, JAX_PLATFORMS="") == ["[]"]


@pytest.mark.skipif(not NO_GPU, reason="a GPU (or CuPy) is present")
def test_devices_gpu_without_a_gpu_matches_jax():
  msgs = {}
  for p in ("gpu", "cuda", "GPU"):
    with pytest.raises(RuntimeError) as e:
      pyjax.devices(p)
    msgs[p] = str(e.value)
  assert msgs["gpu"] == ("Unknown backend: 'gpu' requested, but no platforms that are instances "
                         "of gpu are present. Platforms present are: cpu")
  assert msgs["cuda"] == "Unknown backend cuda. Available backends are ['cpu']"
  assert pyjax.default_backend() == "cpu"
  jax = pytest.importorskip("jax")
  if jax.default_backend() != "cpu":
    pytest.skip("JAX has a GPU here")
  for p in ("gpu", "cuda"):
    with pytest.raises(RuntimeError) as e:
      jax.devices(p)
    assert str(e.value) == msgs[p]


@pytest.mark.skipif(gpu_platform.cupy_installed(), reason="CuPy installed")
def test_jax_platforms_naming_an_absent_platform(fresh_backends):
  for p in ("gpu", "cuda", "cpu,gpu"):
    devices_mod._backends = None
    pyjax.config.update("jax_platforms", p)
    name = p.split(",")[-1]
    with pytest.raises(RuntimeError) as e:
      devices_mod.backends()
    # JAX's text for a platform whose plugin is not installed (JAX lists its own known
    # backends, e.g. ['cpu', 'tpu'])
    assert str(e.value) == (f"Unable to initialize backend '{name}': Backend '{name}' is not in "
                            "the list of known backends: ['cpu']. (set JAX_PLATFORMS='' to "
                            "automatically choose an available backend)")


def _fake_cupy(monkeypatch, count):
  """A ``cupy`` module whose runtime reports ``count`` devices (an int) or raises it."""
  def get_count():
    if isinstance(count, Exception):
      raise count
    return count
  runtime = types.SimpleNamespace(getDeviceCount=get_count)
  mod = types.ModuleType("cupy")
  mod.cuda = types.SimpleNamespace(runtime=runtime)
  monkeypatch.setitem(sys.modules, "cupy", mod)
  monkeypatch.setattr(gpu_platform, "cupy_installed", lambda: True)


def test_cupy_without_a_device_is_skipped_or_named(monkeypatch, fresh_backends):
  _fake_cupy(monkeypatch, RuntimeError("cudaErrorNoDevice: no CUDA-capable device is detected"))
  with pytest.raises(backend_mod.PlatformUnavailable) as e:
    gpu_platform.make_backend()
  assert e.value.installed
  pyjax.config.update("jax_platforms", None)   # default platforms: the GPU is skipped
  assert list(devices_mod.backends()) == ["cpu"]
  devices_mod._backends = None
  pyjax.config.update("jax_platforms", "cuda")
  with pytest.raises(RuntimeError) as e:
    devices_mod.backends()
  assert str(e.value) == (
      "Unable to initialize backend 'cuda': no CUDA device: RuntimeError: cudaErrorNoDevice: no "
      "CUDA-capable device is detected (you may need to uninstall the failing plugin package, "
      "or set JAX_PLATFORMS=cpu to skip this backend.)")
  _fake_cupy(monkeypatch, 0)
  with pytest.raises(backend_mod.PlatformUnavailable, match="found 0 devices"):
    gpu_platform.make_backend()
  # devices, but no device Arrays yet: the platform stays off and says why (docs/gpu.md)
  _fake_cupy(monkeypatch, 2)
  with pytest.raises(backend_mod.PlatformUnavailable, match=r"found 2 CUDA device\(s\), but "
                     "pyjax's GPU runtime"):
    gpu_platform.make_backend()


def test_a_gpu_platform_is_the_default_backend(monkeypatch, fresh_backends):
  # a stand-in GPU platform (the CPU implementation under the name "gpu"): started first
  monkeypatch.setitem(backend_mod._platforms, "gpu", backend_mod.Platform(
      "gpu", lambda: CpuBackend("gpu", 1), ("cuda",), default=True, priority=100))
  pyjax.config.update("jax_platforms", None)
  bs = devices_mod.backends()
  assert list(bs) == ["gpu", "cpu"]
  assert devices_mod.default_backend() == "gpu"
  assert str(devices_mod.default_device()) == "gpu:0"
  assert devices_mod.devices("cuda") == devices_mod.devices("gpu")
