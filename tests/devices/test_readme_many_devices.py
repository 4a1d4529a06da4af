"""The README's "Many devices" example runs (in a fresh interpreter: it asks for 8 CPU
devices) and prints what real JAX 0.10.2 prints for it (checked when it was written)."""
import os
import pathlib
import subprocess
import sys

_ROOT = pathlib.Path(__file__).resolve().parents[2]
_JAX_OUTPUT = ["float32[8@x,4@y] float32[4@y]", "23.715343 (4, 3)",
               "[17.5 17.5 17.5 17.5 17.5 17.5 17.5 17.5]"]


def _example():
  text = (_ROOT / "README.md").read_text()
  section = text.split("## Many devices", 1)[1]
  return section.split("```python", 1)[1].split("```", 1)[0]


def test_readme_many_devices_example_runs_and_matches_jax():
  env = dict(os.environ, PYTHONPATH=str(_ROOT))
  env.pop("PYJAX_AS_JAX", None)
  env.pop("JAX_NUM_CPU_DEVICES", None)
  r = subprocess.run([sys.executable, "-c", _example()], capture_output=True, text=True,
                     env=env, timeout=300, cwd=str(_ROOT))
  assert r.returncode == 0, r.stderr[-3000:]
  assert r.stdout.strip().splitlines() == _JAX_OUTPUT
