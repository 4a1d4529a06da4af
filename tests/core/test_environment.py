"""live_arrays, clear_caches, print_environment_info, experimental.compilation_cache."""
import gc

import numpy as np
import pytest

import pyjax
import pyjax.numpy as jnp


def test_live_arrays_tracks_creation_and_deletion():
  gc.collect()
  before = {id(a) for a in pyjax.live_arrays()}
  x = jnp.arange(5.0)
  y = x * 2
  live = pyjax.live_arrays()
  assert any(a is x for a in live) and any(a is y for a in live)
  x.delete()
  assert not any(a is x for a in pyjax.live_arrays())
  import weakref
  wy = weakref.ref(y)
  del y, live
  gc.collect()
  assert wy() is None
  assert not any(a is x for a in pyjax.live_arrays())
  del before
  assert all(a.platform() == "cpu" if callable(getattr(a, "platform", None)) else True
             for a in pyjax.live_arrays("cpu"))
  with pytest.raises(RuntimeError):
    pyjax.live_arrays("tpu")


def test_clear_caches_forces_retrace():
  traces = []

  @pyjax.jit
  def f(x):
    traces.append(1)
    return x + 1
  f(1.0)
  f(2.0)
  assert len(traces) == 1 and f._cache_size() == 1
  pyjax.clear_caches()
  assert f._cache_size() == 0
  assert float(f(3.0)) == 4.0
  assert len(traces) == 2
  # control-flow bodies are traced again too
  body_traces = []

  def body(i, c):
    body_traces.append(1)
    return c + i
  pyjax.lax.fori_loop(0, 3, body, 0)
  pyjax.lax.fori_loop(0, 3, body, 0)
  n = len(body_traces)
  pyjax.clear_caches()
  assert int(pyjax.lax.fori_loop(0, 3, body, 0)) == 3
  assert len(body_traces) > n


def test_print_environment_info(capsys):
  s = pyjax.print_environment_info(return_string=True)
  lines = s.splitlines()
  assert lines[0] == f"pyjax:  {pyjax.__version__}"
  assert lines[1] == f"numpy:  {np.__version__}"
  assert any(line.startswith("python: 3.") for line in lines)
  assert any(line.startswith("device info: cpu-") for line in lines)
  assert any(line.startswith("compiler: ") for line in lines)
  assert pyjax.print_environment_info() is None
  assert capsys.readouterr().out.strip() == s.strip()


def test_compilation_cache_module(tmp_path, monkeypatch):
  from pyjax.experimental.compilation_cache import compilation_cache as cc
  from pyjax._src.backends.cpu.compiler.native import cache
  monkeypatch.delenv("PYJAX_CACHE_DIR", raising=False)
  prev = pyjax.config.jax_compilation_cache_dir
  try:
    cc.set_cache_dir(str(tmp_path))
    assert pyjax.config.jax_compilation_cache_dir == str(tmp_path)
    assert cache.cache_dir().startswith(str(tmp_path))
    cc.reset_cache()
  finally:
    pyjax.config.update("jax_compilation_cache_dir", prev)
  jax = pytest.importorskip("jax")
  from jax.experimental.compilation_cache import compilation_cache as jcc
  assert {n for n in dir(jcc) if not n.startswith("_")} <= set(dir(cc))
