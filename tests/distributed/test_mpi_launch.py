"""Many processes over MPI: ``mpiexec -n 2`` (and, marked slow, ``-n 4``) runs
``mpi_program.py``; its global results must equal, bit for bit, the same program run on
one process with as many CPU devices.  ``mpi_failure_program.py`` checks that a failing or
stalled process makes every other process raise instead of hanging.

Skipped when mpi4py (the ``mpi`` extra) or an ``mpiexec`` is missing.  Every launch runs
under a timeout.
"""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("mpi4py")

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAM = os.path.join(HERE, "mpi_program.py")
FAILURE = os.path.join(HERE, "mpi_failure_program.py")
LOCAL = 2     # CPU devices per process (mpi_program.LOCAL)


def _mpiexec():
  exe = shutil.which("mpiexec", path=os.path.dirname(sys.executable) + os.pathsep
                     + os.environ.get("PATH", ""))
  if exe is None:
    pytest.skip("no mpiexec on PATH")
  version = subprocess.run([exe, "--version"], capture_output=True, text=True,
                           timeout=30).stdout
  extra = ["--allow-run-as-root", "--oversubscribe"] if "Open MPI" in version else []
  return [exe] + extra


def _env():
  env = dict(os.environ)
  for k in ("JAX_NUM_CPU_DEVICES", "XLA_FLAGS", "PYTEST_XDIST_WORKER"):
    env.pop(k, None)
  env["PYTHONPATH"] = os.pathsep.join(p for p in (os.getcwd(), env.get("PYTHONPATH")) if p)
  return env


def _run(cmd, timeout=120):
  r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=_env())
  return r


def _results(tmp_path, n):
  multi, single = str(tmp_path / f"multi{n}"), str(tmp_path / f"single{n}")
  r = _run(_mpiexec() + ["-n", str(n), sys.executable, PROGRAM, multi])
  assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
  r = _run([sys.executable, PROGRAM, single, "--single", str(n)])
  assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
  with open(multi + ".json") as f:
    facts = json.load(f)
  return np.load(multi + ".npz"), np.load(single + ".npz"), facts


def _check(m, s, facts, n):
  ndev = n * LOCAL
  # processes and devices, numbered as JAX numbers CPU devices across processes
  assert facts["process_index"] == 0 and facts["process_count"] == n
  assert facts["device_ids"] == [p * 2048 + i for p in range(n) for i in range(LOCAL)]
  assert facts["device_procs"] == [p for p in range(n) for _ in range(LOCAL)]
  assert facts["local_ids"] == [0, 1]
  assert facts["is_initialized"] and not facts["is_initialized_after"]
  # explicit arguments are checked against the MPI world
  assert facts["explicit_errors"] == [
      f"num_processes={n + 1} does not match the MPI world, which has {n} processes "
      f"(mpiexec -n {n})", "process_id=1 does not match this process's MPI rank 0"]
  # a global array: this process holds its part only, reading the whole is JAX's error
  rows = 4 * ndev
  assert facts["a_shape"] == [rows, 3] and facts["a_fully_addressable"] is False
  assert facts["a_shards"] == [[0, 0, 4], [1, 4, 8]]
  assert facts["read_error"][0] == "RuntimeError"
  assert facts["read_error"][1].startswith(
      "Fetching value for `jax.Array` that spans non-addressable (non process local) "
      "devices is not possible.")
  assert facts["repr"] == f"Array(shape=({rows}, 3), dtype=float32)"
  assert facts["h2g_fully_addressable"] is False
  assert facts["pmap_local_shape"] == [LOCAL]
  np.testing.assert_array_equal(m["pmap_axis_index"], np.arange(ndev))
  assert facts["assert_equal_error"].startswith("differs. Expected:")
  # every global result equals the one-process run with as many devices, bit for bit
  assert sorted(s.files) == sorted(set(s.files) & set(m.files))
  for k in s.files:
    assert m[k].dtype == s[k].dtype and m[k].shape == s[k].shape, k
    assert m[k].tobytes() == s[k].tobytes(), k
  # multihost_utils over MPI
  host = [np.arange(3, dtype=np.int32) + 10 * p for p in range(n)]
  np.testing.assert_array_equal(m["allgather_stacked"], np.stack(host))
  np.testing.assert_array_equal(m["allgather_tiled"], np.concatenate(host))
  np.testing.assert_array_equal(m["allgather_tree"], np.arange(n, dtype=np.float32))
  np.testing.assert_array_equal(m["broadcast"], host[0])
  np.testing.assert_array_equal(m["broadcast_from_last"], host[-1])
  np.testing.assert_array_equal(m["host_to_global"], s["a"])
  np.testing.assert_array_equal(m["global_to_host"], s["a"])


def test_mpi_two_processes(tmp_path):
  _check(*_results(tmp_path, 2), 2)


@pytest.mark.slow
def test_mpi_four_processes(tmp_path):
  _check(*_results(tmp_path, 4), 4)


@pytest.mark.slow
def test_mpi_three_processes(tmp_path):
  """An odd process count: make_array_from_process_local_data infers the global shape,
  and all-reduce slices are cut unevenly."""
  _check(*_results(tmp_path, 3), 3)


def test_mpi_failures_end_every_process(tmp_path):
  out = str(tmp_path / "steps")
  r = _run(_mpiexec() + ["-n", "2", sys.executable, FAILURE, out], timeout=120)
  lines = []
  for p in range(2):
    with open(f"{out}.{p}") as f:
      lines += [ln.rstrip("\n").split(" ", 4) for ln in f if ln.startswith("STEP ")]
  steps = {}
  for _, step, err, secs, msg in lines:
    steps.setdefault(int(step), []).append((err, float(secs), msg))
  assert sorted(steps) == [1, 2] and all(len(v) == 2 for v in steps.values()), r.stdout
  # 1: one process raises inside a collective: every process ends the step with an error,
  # at once (not after the 5 s deadline)
  errs = sorted(e for e, _, _ in steps[1])
  assert errs == ["JaxRuntimeError", "RunAborted"], steps[1]
  assert all(t < 4 for _, t, _ in steps[1]), steps[1]
  assert all(msg.endswith("[cause: on purpose]") for _, _, msg in steps[1]), steps[1]
  # 2: one process stalls: the other raises at the deadline (DEADLINE_EXCEEDED, or
  # ABORTED by the deadline its other device hit first); the late one finds the run
  # aborted when it arrives
  waiting, late = sorted(steps[2], key=lambda e: e[1])
  assert 4.9 < waiting[1] < 7.4 and "deadline" in waiting[2].lower(), steps[2]
  assert waiting[0] in ("JaxRuntimeError", "RunAborted"), steps[2]
  assert late[0] == "RunAborted" and "deadline exceeded" in late[2], steps[2]


@pytest.mark.slow
def test_mpi_digits_example_matches_one_process():
  """examples/digits_mlp_mpi.py: 2 processes x 2 devices end with the parameters of one
  process with 4 devices (bit for bit: the printed sha256)."""
  pytest.importorskip("sklearn")
  example = os.path.join(HERE, "..", "..", "examples", "digits_mlp_mpi.py")
  runs = [_mpiexec() + ["-n", "2", sys.executable, example, "--epochs", "1"],
          [sys.executable, example, "--epochs", "1", "--single", "4"]]
  digests = []
  for cmd in runs:
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=_env(),
                       cwd=os.path.dirname(example))
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    digests.append(r.stdout.split("params sha256 ")[1].split()[0])
  assert digests[0] == digests[1]
