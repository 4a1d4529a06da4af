"""PYJAX_KERNEL_TIMES=1: per-kernel call counts and times of the native tier
(``compiler/kernel_times.py``)."""
from __future__ import annotations

import numpy as np
import pytest

import pyjax
import pyjax.numpy as jnp
from pyjax import lax
from pyjax._src.backends.cpu import executable
from pyjax._src.backends.cpu.compiler import kernel_times
from pyjax._src.backends.cpu.compiler.native import build

pytestmark = pytest.mark.skipif(build.toolchain() is None, reason="no C compiler")


@pytest.fixture(autouse=True)
def _no_report_at_exit():
  """The programs these tests instrument print no table when the test process exits."""
  yield
  kernel_times._programs.clear()


def _exe(f, *args):
  with executable.compile_mode_override("sync"):
    jf = pyjax.jit(f)
    exe = jf.lower(*args).compile().runtime_executable()
    return jf, exe


def test_kernel_times_count_every_kernel(monkeypatch):
  monkeypatch.setenv("PYJAX_KERNEL_TIMES", "1")
  a = np.random.default_rng(0).standard_normal((48, 40)).astype(np.float32)
  b = np.random.default_rng(1).standard_normal((40, 24)).astype(np.float32)
  jf, exe = _exe(lambda a, b: jnp.tanh(a @ b + 1).sum(axis=1), a, b)
  with executable.compile_mode_override("sync"):
    for _ in range(3):
      out = jf(a, b)
  np.testing.assert_allclose(np.asarray(out), np.tanh(a @ b + 1).sum(axis=1), rtol=1e-5, atol=1e-5)
  rows = exe.kernel_times()
  assert [r["kernel"] for r in rows] == [
      "dot_general float32[48,40] float32[40,24] -> float32[48,24]",
      "row [48,24]: add tanh reduce_sum"]
  assert all(r["calls"] == 3 and r["total_s"] > 0 and r["function"] == "pyjax_run_0"
             for r in rows)
  table = kernel_times.format_table("f", rows)
  assert table.splitlines()[0] == "pyjax kernel times: f (up to 3 call(s) per kernel)"
  assert len(table.splitlines()) == 4 and "pyjax_run_0#1 row [48,24]" in table


def test_kernel_times_in_native_loop_bodies(monkeypatch):
  """Segments inside a native loop's body count every iteration."""
  monkeypatch.setenv("PYJAX_KERNEL_TIMES", "1")
  x = np.full((8, 8), 0.1, np.float32)
  jf, exe = _exe(lambda x: lax.fori_loop(0, 5, lambda i, c: jnp.sin(c) @ c, x), x)
  with executable.compile_mode_override("sync"):
    jf(x)
    jf(x)
  body = [r for r in exe.kernel_times() if "dot_general" in r["kernel"]]
  assert len(body) == 1 and body[0]["calls"] == 10


def test_kernel_times_off_by_default(monkeypatch):
  monkeypatch.delenv("PYJAX_KERNEL_TIMES", raising=False)
  x = np.ones((4, 4), np.float32)
  jf, exe = _exe(lambda x: x @ x + 2, x)
  assert exe.kernel_times() == []
  assert "pj_kt_now" not in exe.as_text()
