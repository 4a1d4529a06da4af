"""Running part of the test suite with the generated C built under AddressSanitizer and
UndefinedBehaviorSanitizer (the slow ``test_sanitizers_*`` tests use it)."""
import os
import subprocess
import sys

import pytest


def run(tmp_path, argv, env_extra=None, timeout=3000):
  """Run ``python argv...`` in a subprocess whose native code is built with the sanitizers
  (ASan preloaded, real JAX hidden: jaxlib does not run under a preloaded ASan); skips
  when the C compiler has no libasan.  Returns the CompletedProcess (text output)."""
  cc = os.environ.get("PYJAX_CC", "cc")
  r = subprocess.run([cc, "-print-file-name=libasan.so"], capture_output=True, text=True)
  asan = r.stdout.strip()
  if r.returncode != 0 or not os.path.isabs(asan):
    pytest.skip("no libasan")
  nojax = tmp_path / "nojax" / "jax"
  nojax.mkdir(parents=True)
  (nojax / "__init__.py").write_text("raise ModuleNotFoundError('jax is hidden under the sanitizers')\n")
  env = dict(os.environ, PYJAX_CACHE_DIR=str(tmp_path / "cache"),
             PYTHONPATH=os.pathsep.join([str(tmp_path / "nojax"), os.environ.get("PYTHONPATH", "")]),
             PYJAX_CFLAGS="-fsanitize=address,undefined -fno-sanitize-recover=all "
                          "-fno-omit-frame-pointer",
             LD_PRELOAD=asan, ASAN_OPTIONS="detect_leaks=0:abort_on_error=1")
  env.update(env_extra or {})
  return subprocess.run([sys.executable, *argv], capture_output=True, text=True, env=env,
                        timeout=timeout)


def run_pytest(tmp_path, test_file, args=(), env_extra=None):
  """``run`` of ``pytest -q -x test_file *args``; asserts it passed and returns it."""
  r = run(tmp_path, ["-m", "pytest", "-q", "-p", "no:cacheprovider", "-x",
                     os.path.abspath(test_file), *args], env_extra)
  assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
  assert "passed" in r.stdout
  return r
