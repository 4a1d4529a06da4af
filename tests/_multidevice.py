"""Helpers for the multi-device tests (8 CPU devices).

pyjax reads ``jax_num_cpu_devices`` when its devices are first used: these modules ask for
8 at import (collection happens before any test runs).  When another module of the same
run used devices first, the tests skip (run the file on its own).  Real JAX, the oracle,
runs in a subprocess with ``JAX_NUM_CPU_DEVICES=8`` (a script printing a pickle)."""
import hashlib
import os
import pickle
import subprocess
import sys
import tempfile

import pytest

import pyjax
from pyjax._src.runtime import devices as _devices

if _devices._backends is None:
  pyjax.config.update("jax_num_cpu_devices", 8)

needs8 = pytest.mark.skipif(len(pyjax.devices()) < 8,
                            reason="needs 8 CPU devices (run this file on its own)")


def _jax_version():
  """The installed JAX's version (without importing it), or None when JAX is absent."""
  import importlib.metadata
  import importlib.util
  if importlib.util.find_spec("jax") is None:
    return None
  try:
    return importlib.metadata.version("jax")
  except importlib.metadata.PackageNotFoundError:
    return "unknown"


def jax_oracle(script):
  """Run ``script`` under real JAX with 8 CPU devices; it assigns ``out`` (a picklable
  dict), which is returned.  Skips when JAX is not installed.  The result is kept in a
  file keyed by the script and JAX's version, so CI's later passes over the same tests
  (``-m slow``, the compiled pass) do not run JAX again."""
  version = _jax_version()
  if version is None:
    pytest.skip("could not import 'jax'")
  key = hashlib.sha256(f"{version}\n{sys.version}\n{script}".encode()).hexdigest()[:32]
  cache = os.path.join(tempfile.gettempdir(), f"pyjax-jax-oracle-{os.getuid()}", key)
  try:
    with open(cache, "rb") as f:
      return pickle.load(f)
  except (OSError, EOFError, pickle.UnpicklingError):
    pass
  code = ("import os, pickle, sys\nos.environ['JAX_NUM_CPU_DEVICES'] = '8'\n"
          "import numpy as np\nimport jax, jax.numpy as jnp\nfrom jax import lax\n"
          "from jax.sharding import NamedSharding, PartitionSpec as P, Mesh, AxisType\n"
          "out = {}\n" + script + "\nsys.stdout.buffer.write(pickle.dumps(out))\n")
  env = dict(os.environ, JAX_NUM_CPU_DEVICES="8", JAX_PLATFORMS="cpu")
  env.pop("PYJAX_AS_JAX", None)
  r = subprocess.run([sys.executable, "-c", code], capture_output=True, env=env, timeout=300)
  if r.returncode:
    raise RuntimeError(r.stderr.decode()[-3000:])
  out = pickle.loads(r.stdout)
  try:   # atomically: a concurrent reader sees the whole file or none
    os.makedirs(os.path.dirname(cache), exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(cache))
    with os.fdopen(fd, "wb") as f:
      f.write(r.stdout)
    os.replace(tmp, cache)
  except OSError:
    pass
  return out
