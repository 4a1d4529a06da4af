"""Sparse products: pyjax vs JAX vs scipy.sparse, in one run (issue 20's cases).

    python benchmarks/sparse.py [--n N] [--nnz NNZ] [--cols K] [--sp-n N2] [--sp-nnz NNZ2]
                                [--rounds R] [--skip-jax]

Cases (defaults are issue 20's sizes for the first three): a BCOO ``n x n`` matrix with
``nnz`` stored elements times a dense vector (as given: unsorted; sorted by row with
``indices_sorted=True``; as a BCSR) and times an ``n x K`` dense matrix (all under
``jit``), ``grad`` of ``sum((A @ v) ** 2)`` with respect to ``A.data`` (``jit``),
and BCOO @ BCOO.T on an ``N2 x N2`` matrix with ``NNZ2`` stored elements (eager; all four
at issue 20's sizes by default).  The
table shows the median (and minimum) wall time (ms) over ``--rounds`` calls after a
warm-up, the libraries called in turn each round, and per
library the peak memory of one call (MB: the larger of ``tracemalloc``'s peak and the
resident memory added, Linux's ``VmHWM`` reset through ``/proc/self/clear_refs`` before
the call, which sees XLA's and C allocations that ``tracemalloc`` does not).  Run with ``PYJAX_COMPILE=sync`` so pyjax's jitted cases use
their native kernels from the first call.
scipy multiplies a CSR matrix built once (its conversion is not timed); pyjax and JAX
start from the COO buffers every call, as a BCOO does.  JAX's BCOO @ BCOO.T forms every
pair of stored elements (``nnz**2`` of them: 10**10 at the default size, far beyond memory),
so it is skipped above ``--jax-max-pairs`` (run ``--sp-n 2000 --sp-nnz 2000`` to compare);
``--skip-jax`` leaves JAX out.
"""
from __future__ import annotations

import argparse
import os
import statistics
import time
import tracemalloc

import numpy as np
import scipy.sparse as ssp


def _timed(fns, rounds):
  """(median, min) wall time (ms) of each callable, the libraries called in turn each round
  (so the machine's load falls on all of them alike); ``None`` entries are skipped."""
  for fn in fns:
    if fn:
      fn()
  ts = [[] for _ in fns]
  for _ in range(rounds):
    for fn, t in zip(fns, ts):
      if fn:
        t0 = time.perf_counter()
        fn()
        t.append(time.perf_counter() - t0)
  return [(statistics.median(t) * 1e3, min(t) * 1e3) if t else None for t in ts]


def _rss_kb(field):
  with open("/proc/self/status") as f:
    for line in f:
      if line.startswith(field + ":"):
        return int(line.split()[1])
  return 0


def _peak_mb(fn):
  """Peak memory of one call (MB): the larger of the peak of Python/NumPy allocations
  (``tracemalloc``: counts buffers even where the allocator reuses freed memory) and the
  peak resident memory added (Linux's ``VmHWM`` after a reset through
  ``/proc/self/clear_refs``: sees XLA's and C allocations)."""
  try:
    with open("/proc/self/clear_refs", "w") as f:
      f.write("5")
    base = _rss_kb("VmRSS")
  except OSError:
    base = None
  tracemalloc.start()
  try:
    fn()
    traced = tracemalloc.get_traced_memory()[1] / 2**20
  finally:
    tracemalloc.stop()
  rss = max(0, _rss_kb("VmHWM") - base) / 1024 if base is not None else 0.0
  return max(traced, rss)


def _problem(n, nnz, seed):
  rng = np.random.default_rng(seed)
  idx = np.stack([rng.integers(0, n, nnz), rng.integers(0, n, nnz)], 1).astype(np.int32)
  return rng.standard_normal(nnz).astype(np.float32), idx


def _sorted(data, idx, n):
  """The same matrix with its elements sorted by (row, column), and its CSR row pointers."""
  order = np.lexsort((idx[:, 1], idx[:, 0]))
  sidx = idx[order]
  return data[order], sidx, np.searchsorted(sidx[:, 0], np.arange(n + 1)).astype(np.int32)


def _library_cases(mod, sparse, data, idx, n, v, V, sdata, sidx, n2):
  """name -> zero-argument callable returning a ready NumPy result."""
  jnp = mod.numpy
  A = sparse.BCOO((data, idx), shape=(n, n))
  od, oidx, ptr = _sorted(data, idx, n)
  As = sparse.BCOO((od, oidx), shape=(n, n), indices_sorted=True)
  Ar = sparse.BCSR((od, oidx[:, 1].copy(), ptr), shape=(n, n))
  S = sparse.BCOO((sdata, sidx), shape=(n2, n2))
  mv = mod.jit(lambda a, x: a @ x)
  loss = mod.jit(mod.grad(lambda d, i, x: jnp.sum((sparse.BCOO((d, i), shape=(n, n)) @ x) ** 2)))
  return {
      "matvec (jit)": lambda: np.asarray(mv(A, v)),
      "matvec sorted BCOO (jit)": lambda: np.asarray(mv(As, v)),
      "matvec BCSR (jit)": lambda: np.asarray(mv(Ar, v)),
      f"matmat x{V.shape[1]} (jit)": lambda: np.asarray(mv(A, V)),
      "grad wrt data (jit)": lambda: np.asarray(loss(A.data, A.indices, v)),
      "bcoo @ bcoo.T (eager)": lambda: np.asarray((S @ S.T).data),
  }


def main():
  ap = argparse.ArgumentParser()
  ap.add_argument("--n", type=int, default=100_000)
  ap.add_argument("--nnz", type=int, default=1_000_000)
  ap.add_argument("--cols", type=int, default=64)
  ap.add_argument("--sp-n", type=int, default=10_000)
  ap.add_argument("--sp-nnz", type=int, default=100_000)
  ap.add_argument("--jax-max-pairs", type=float, default=2e8,
                  help="skip JAX's sparse @ sparse when nnz**2 (the pairs it forms) exceeds this")
  ap.add_argument("--rounds", type=int, default=5)
  ap.add_argument("--skip-jax", action="store_true")
  args = ap.parse_args()
  data, idx = _problem(args.n, args.nnz, 0)
  sdata, sidx = _problem(args.sp_n, args.sp_nnz, 1)
  rng = np.random.default_rng(2)
  v = rng.standard_normal(args.n).astype(np.float32)
  V = rng.standard_normal((args.n, args.cols)).astype(np.float32)

  import pyjax
  from pyjax.experimental import sparse as psparse
  libs = {"pyjax": _library_cases(pyjax, psparse, data, idx, args.n, v, V, sdata, sidx,
                                  args.sp_n)}
  if not args.skip_jax:
    import jax
    from jax.experimental import sparse as jsparse
    libs["jax"] = _library_cases(jax, jsparse, data, idx, args.n, v, V, sdata, sidx,
                                 args.sp_n)
    if args.sp_nnz ** 2 > args.jax_max_pairs:   # JAX would form nnz**2 pairs: out of memory
      libs["jax"]["bcoo @ bcoo.T (eager)"] = None
  csr = ssp.csr_matrix((data, (idx[:, 0], idx[:, 1])), shape=(args.n, args.n))
  scsr = ssp.csr_matrix((sdata, (sidx[:, 0], sidx[:, 1])), shape=(args.sp_n, args.sp_n))
  libs["scipy"] = {
      "matvec (jit)": lambda: csr @ v,
      "matvec sorted BCOO (jit)": lambda: csr @ v,
      "matvec BCSR (jit)": lambda: csr @ v,
      f"matmat x{args.cols} (jit)": lambda: csr @ V,
      "grad wrt data (jit)": lambda: 2 * (csr @ v)[idx[:, 0]] * v[idx[:, 1]],
      "bcoo @ bcoo.T (eager)": lambda: (scsr @ scsr.T).data,
  }
  names = list(libs["pyjax"])
  print(f"n={args.n} nnz={args.nnz} cols={args.cols}; sparse@sparse n={args.sp_n} "
        f"nnz={args.sp_nnz}; median of {args.rounds} (ms, libraries alternating), peak "
        f"memory of one call (MB); load average {os.getloadavg()[0]:.1f}")
  head = (f"{'case':28s}" + "".join(f"{k + ' ms (min)':>16s}" for k in libs)
          + "".join(f"{k + ' MB':>12s}" for k in libs))
  print(head)
  for name in names:
    row = f"{name:28s}"
    for ms in _timed([lib[name] for lib in libs.values()], args.rounds):
      row += f"{f'{ms[0]:.1f} ({ms[1]:.1f})':>16s}" if ms is not None else f"{'skipped':>16s}"
    for lib in libs.values():
      mb = _peak_mb(lib[name]) if lib[name] else None
      row += f"{mb:12.1f}" if mb is not None else f"{'?':>12s}"
    print(row, flush=True)


if __name__ == "__main__":
  main()
