"""Run a library quick start on real JAX and on pyjax, each in a fresh interpreter.

A quick-start script (``scripts/<name>.py``) is plain JAX code; it prints one line
``RESULT <json>`` with the numbers to compare.  ``run_both`` runs it with ``python`` (real
JAX) and with ``python -m pyjax run`` (``jax`` aliased to pyjax) and returns both results.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

SCRIPTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scripts")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _run(argv, timeout):
  env = dict(os.environ)
  env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
  env.setdefault("JAX_PLATFORMS", "cpu")
  env.pop("PYJAX_AS_JAX", None)
  proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env,
                        cwd=SCRIPTS)
  for line in proc.stdout.splitlines():
    if line.startswith("RESULT "):
      return json.loads(line[len("RESULT "):])
  raise AssertionError(f"{' '.join(argv)} printed no RESULT (exit {proc.returncode}):\n"
                       f"{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}")


def run_pyjax(script, timeout=120):
  """The RESULT of ``script`` with ``jax`` aliased to pyjax."""
  return _run([sys.executable, "-m", "pyjax", "run", os.path.join(SCRIPTS, script)], timeout)


def run_jax(script, timeout=120):
  """The RESULT of ``script`` on real JAX (skips when JAX is not installed)."""
  pytest.importorskip("jax")
  return _run([sys.executable, os.path.join(SCRIPTS, script)], timeout)


def assert_close(got, want, rtol=1e-4, atol=1e-5, path="result"):
  """Compare two JSON results (dicts / lists / numbers) numerically."""
  if isinstance(want, dict):
    assert isinstance(got, dict) and set(got) == set(want), f"{path}: keys {got} vs {want}"
    for k in want:
      assert_close(got[k], want[k], rtol, atol, f"{path}.{k}")
  elif isinstance(want, str):
    assert got == want, f"{path}: {got!r} != {want!r}"
  else:
    np.testing.assert_allclose(np.asarray(got, dtype=np.float64),
                               np.asarray(want, dtype=np.float64), rtol=rtol, atol=atol,
                               err_msg=path)
