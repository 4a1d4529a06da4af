#!/usr/bin/env python
"""Run a JAX library's own test suite, unmodified, with ``jax`` resolved to pyjax.

    python tools/run_library_suite.py optax==0.2.8 [--dest /tmp/srcs] [--jax] [-k EXPR]
        [--files optax/_src/alias_test.py ...] [--timeout 900] [--log DIR] [--runner CMD]

Downloads the library's sdist (``pip download --no-deps --no-binary :all:``; the test
files are not in the wheels) into ``--dest``, unpacks it, and runs pytest on each of its
``*_test.py`` / ``test_*.py`` files in turn, one process per file and one core (``python
-m pyjax run -m pytest FILE``), so a crash or hang costs one file.  Prints one line per
file and the total of passed / failed / errors / skipped.  ``--jax`` runs the same files
on real JAX instead (the baseline).  The library itself must be installed (same version)
in the environment, with its test dependencies.  ``--log DIR`` keeps each file's pytest
output (``-rfE`` summary lines name every failure).
"""
from __future__ import annotations

import argparse
import glob
import os
import re
import subprocess
import sys
import tarfile
import time

_COUNT = re.compile(r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed|deselected)")


def fetch_sdist(spec, dest):
  """Download and unpack the sdist of ``spec`` (``name==version``) under ``dest``; returns
  the unpacked directory."""
  name, _, version = spec.partition("==")
  os.makedirs(dest, exist_ok=True)
  unpacked = os.path.join(dest, f"{name}-{version}") if version else None
  if unpacked and os.path.isdir(unpacked):
    return unpacked
  subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary",
                  ":all:", spec, "-d", dest], check=True)
  archives = sorted(glob.glob(os.path.join(dest, f"{name}-{version or '*'}.tar.gz")),
                    key=os.path.getmtime)
  if not archives:
    raise SystemExit(f"no sdist of {spec} was downloaded into {dest}")
  with tarfile.open(archives[-1]) as tf:
    top = tf.getnames()[0].split("/")[0]
    tf.extractall(dest, filter="data")
  return os.path.join(dest, top)


def test_files(root, package):
  pats = [f"{package}/**/*_test.py", f"{package}/**/test_*.py"]
  found = set()
  for p in pats:
    found.update(os.path.relpath(f, root) for f in glob.glob(os.path.join(root, p),
                                                             recursive=True))
  return sorted(found)


def parse_counts(text):
  counts = {}
  tail = text.strip().splitlines()[-1:] if text.strip() else []
  for line in tail:
    for n, what in _COUNT.findall(line):
      what = "errors" if what.startswith("error") else what
      counts[what] = counts.get(what, 0) + int(n)
  return counts


def run_file(root, path, use_jax, timeout, extra, runner=None):
  if runner is None:
    runner = [sys.executable] if use_jax else [sys.executable, "-m", "pyjax", "run"]
  cmd = runner + ["-m", "pytest", "-q", "-p", "no:cacheprovider", "-rfE", path] + extra
  env = dict(os.environ, JAX_PLATFORMS="cpu", PYTHONPATH=root + os.pathsep +
             os.environ.get("PYTHONPATH", ""))
  t0 = time.time()
  try:
    p = subprocess.run(cmd, cwd=root, capture_output=True, text=True, timeout=timeout,
                       env=env)
    out = p.stdout + p.stderr
  except subprocess.TimeoutExpired as e:
    out = ((e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes)
           else (e.stdout or "")) + f"\nTIMEOUT after {timeout}s\n"
  return out, time.time() - t0


def main(argv=None):
  ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  ap.add_argument("spec", help="name==version, e.g. optax==0.2.8")
  ap.add_argument("--dest", default=os.path.join(os.path.expanduser("~"), ".cache",
                                                 "pyjax-library-suites"))
  ap.add_argument("--jax", action="store_true", help="run on real JAX (the baseline)")
  ap.add_argument("--files", nargs="*", help="test files (relative to the sdist root)")
  ap.add_argument("--timeout", type=float, default=900, help="seconds per file")
  ap.add_argument("--log", help="directory for each file's pytest output")
  ap.add_argument("-k", dest="kexpr", help="pytest -k expression")
  ap.add_argument("--runner", help="command prefix that runs `-m pytest ...` (default: "
                  "`python -m pyjax run`, or `python` with --jax)")
  args = ap.parse_args(argv)
  root = fetch_sdist(args.spec, args.dest)
  package = args.spec.partition("==")[0].replace("-", "_")
  files = args.files or test_files(root, package)
  extra = ["-k", args.kexpr] if args.kexpr else []
  total = {}
  for f in files:
    out, secs = run_file(root, f, args.jax, args.timeout, extra,
                         args.runner.split() if args.runner else None)
    c = parse_counts(out)
    if not c and "no tests ran" not in out:
      c = {"errors": 1}  # a crash, a collection failure or a timeout
    for k, v in c.items():
      total[k] = total.get(k, 0) + v
    print(f"{f}: " + ", ".join(f"{v} {k}" for k, v in sorted(c.items()))
          + f"  ({secs:.0f}s)", flush=True)
    if args.log:
      path = os.path.join(args.log, f.replace("/", "__") + ".txt")
      os.makedirs(args.log, exist_ok=True)
      with open(path, "w") as fh:
        fh.write(out)
  print("TOTAL (" + ("jax" if args.jax else "pyjax") + "): "
        + ", ".join(f"{v} {k}" for k, v in sorted(total.items())))
  return 0


if __name__ == "__main__":
  sys.exit(main())
