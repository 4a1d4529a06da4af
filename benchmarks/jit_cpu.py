"""jit on CPU: pyjax (native compiler) vs JAX (XLA:CPU) vs NumPy, in one run.

    python benchmarks/jit_cpu.py [--rounds N] [--first-reps N] [--only SUBSTR,...] [--threads N]

Every case is timed for each library in turn inside the same round (a busy machine slows
all of them alike), each after ~0.15 s of untimed calls (``_warm``), for ``--rounds``
rounds; the table shows the median time per call (µs), pyjax's ratio to JAX, and the
geometric mean of the ratios (issue 15's targets: <= 0.6, no case above 1.2). Every timed
call waits for its result (``block_until_ready``). pyjax's native executable is built
before timing (``exe.wait()``); the first-call table times a fresh function's first call
instead (trace + the NumPy tier for pyjax, trace + XLA compilation for JAX; the median of
``--first-reps``; target: geometric mean <= 0.3).  pyjax's first calls use what its caches
hold (prebuilt kernels, loops already compiled on this machine: memory and disk, as a
user's second run of a program would); run with an empty ``PYJAX_CACHE_DIR`` to see a
machine's very first run. ``bandwidth``
measures the machine's copy bandwidth, the bound for elementwise kernels.
"""
from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _warm(fn, seconds=0.15):
  """Run ``fn`` untimed for ``seconds`` before timing it.  The previous column's worker
  threads keep spinning after their work (NumPy's OpenBLAS threads for ~0.1 s), and on this
  VM a CPU left idle during a long single-threaded stretch takes tens of milliseconds to run
  a thread at full speed again: without this, both are charged to the library timed next."""
  t0 = time.perf_counter()
  while time.perf_counter() - t0 < seconds:
    fn()


def _timeit(fn, calls):
  t0 = time.perf_counter()
  for _ in range(calls):
    fn()
  return (time.perf_counter() - t0) / calls * 1e6


# --- the programs, written once against a numpy-like module -----------------------------
def softmax(np_, x):
  m = x.max(axis=1, keepdims=True)
  e = np_.exp(x - m)
  return e / e.sum(axis=1, keepdims=True)


def layer_norm(np_, x, g, b):
  mu = x.mean(-1, keepdims=True)
  v = ((x - mu) ** 2).mean(-1, keepdims=True)
  return (x - mu) / np_.sqrt(v + 1e-5) * g + b


def selu(np_, x):
  alpha, scale = 1.6732632423543772, 1.0507009873554805
  return scale * np_.where(x > 0, x, alpha * (np_.exp(x) - 1))


def chain(np_, x):
  return np_.tanh(x * 0.5 + 1.0) * x - np_.exp(-x * x) + 0.25


def gelu(np_, x):
  return 0.5 * x * (1 + np_.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))


def row_normalize(np_, x):
  return x / np_.sqrt((x * x).sum(axis=1, keepdims=True))


def sum_logistic(np_, x):
  return (1.0 / (1.0 + np_.exp(-x))).sum()


def mlp_loss(np_, params, x, y):
  h = x
  for i, (w, b) in enumerate(params):
    h = h @ w + b
    if i < len(params) - 1:
      h = gelu(np_, h)
  m = h.max(axis=1, keepdims=True)
  lp = h - m - np_.log(np_.exp(h - m).sum(axis=1, keepdims=True))
  return -(lp * y).sum(axis=1).mean()


def build_cases(lib, rng):
  """{name: (function to jit (or None), args, numpy equivalent or None)} for pyjax or jax."""
  if lib == "pyjax":
    import pyjax as jx
    import pyjax.numpy as jnp
  else:
    import jax as jx
    import jax.numpy as jnp
  f32 = np.float32
  x2 = rng.standard_normal((1000, 1000)).astype(f32)
  g = rng.standard_normal(1000).astype(f32)
  b = rng.standard_normal(1000).astype(f32)
  v1m = rng.standard_normal(1_000_000).astype(f32)
  v16m = rng.standard_normal(16_000_000).astype(f32)
  w16m = rng.standard_normal(16_000_000).astype(f32)
  v1k = rng.standard_normal(1000).astype(f32)
  sizes = (784, 512, 512, 10)
  params = [(rng.standard_normal((a, c)).astype(f32) * 0.05, np.zeros(c, f32))
            for a, c in zip(sizes[:-1], sizes[1:])]
  xb = rng.standard_normal((128, 784)).astype(f32)
  yb = np.eye(10, dtype=f32)[rng.integers(0, 10, 128)]
  m1 = rng.standard_normal((1000, 1000)).astype(f32)
  m2 = rng.standard_normal((1000, 1000)).astype(f32)
  vm = rng.standard_normal((100, 256)).astype(f32)
  mat = rng.standard_normal((256, 256)).astype(f32)

  def mlp_step(params, x, y):
    loss, grads = jx.value_and_grad(lambda p: mlp_loss(jnp, p, x, y))(params)
    return loss, [(w - 0.01 * gw, c - 0.01 * gc) for (w, c), (gw, gc) in zip(params, grads)]

  def linreg_1000(w, x, y):
    def step(w, _):
      grad = jx.grad(lambda w: ((x @ w - y) ** 2).mean())(w)
      return w - 0.1 * grad, None
    return jx.lax.scan(step, w, None, length=1000)[0]

  def scan_10k(c):
    def step(c, _):
      return c * 0.99 + jnp.sin(c) * 0.01, None
    return jx.lax.scan(step, c, None, length=10_000)[0]

  def fori_10k(c):
    return jx.lax.fori_loop(0, 10_000, lambda i, c: c * 0.999 + jnp.cos(c) * 0.001, c)

  def conv_nchw(x, w):
    return jx.lax.conv_general_dilated(x, w, (1, 1), "SAME")

  if lib == "pyjax":
    import pyjax.scipy.signal as jsig
  else:
    import jax.scipy.signal as jsig
  ax = np.arange(5, dtype=f32) - 2
  gk = np.exp(-(ax[:, None] ** 2 + ax[None, :] ** 2) / 2).astype(f32)
  gk /= gk.sum()

  def blur(img):
    return jnp.stack([jsig.convolve2d(img[:, :, ch], gk, mode="same") for ch in range(3)],
                     axis=-1)

  c16 = rng.standard_normal(16).astype(f32)
  c4 = rng.standard_normal(4).astype(f32)
  cx = rng.standard_normal((8, 3, 64, 64)).astype(f32)
  cw = rng.standard_normal((16, 3, 3, 3)).astype(f32)
  img = rng.random((667, 500, 3)).astype(f32)
  lx = rng.standard_normal((64, 4)).astype(f32)
  ly = rng.standard_normal(64).astype(f32)
  key = jx.random.key(0)
  cases = {
      "softmax 1000x1000": (lambda x: softmax(jnp, x), (x2,), lambda x: softmax(np, x)),
      "layer_norm 1000x1000": (lambda x, g, b: layer_norm(jnp, x, g, b), (x2, g, b),
                               lambda x, g, b: layer_norm(np, x, g, b)),
      "x * 2 + 1 1M": (lambda x: x * 2 + 1, (v1m,), lambda x: x * 2 + 1),
      "x * 2 + 1 16M": (lambda x: x * 2 + 1, (v16m,), lambda x: x * 2 + 1),
      "a * x + y 16M": (lambda a, x, y: a * x + y, (np.float32(3), v16m, w16m),
                        lambda a, x, y: a * x + y),
      "selu 1M": (lambda x: selu(jnp, x), (v1m,), lambda x: selu(np, x)),
      "chain 1M": (lambda x: chain(jnp, x), (v1m,), lambda x: chain(np, x)),
      "chain 1K": (lambda x: chain(jnp, x), (v1k,), lambda x: chain(np, x)),
      "gelu 1M": (lambda x: gelu(jnp, x), (v1m,), lambda x: gelu(np, x)),
      "row sum 1000x1000": (lambda x: x.sum(axis=1), (x2,), lambda x: x.sum(axis=1)),
      "col sum 1000x1000": (lambda x: x.sum(axis=0), (x2,), lambda x: x.sum(axis=0)),
      "sum 1M": (lambda x: x.sum(), (v1m,), lambda x: x.sum()),
      "max 1000x1000 rows": (lambda x: x.max(axis=1), (x2,), lambda x: x.max(axis=1)),
      "row normalize 1000x1000": (lambda x: row_normalize(jnp, x), (x2,),
                                  lambda x: row_normalize(np, x)),
      "grad sum_logistic 1M": (jx.grad(lambda x: sum_logistic(jnp, x)), (v1m,), None),
      "dot 1000x1000": (lambda a, c: jnp.dot(a, c), (m1, m2), lambda a, c: np.dot(a, c)),
      "vmap matvec 100x256": (jx.vmap(lambda v: mat @ v), (vm,), lambda v: v @ mat.T),
      "mlp step 784-512-512-10": (mlp_step, (params, xb, yb), None),
      "linreg 1000 steps (scan)": (linreg_1000, (np.zeros(4, f32), lx, ly), None),
      "scan 10k steps, 16-wide carry": (scan_10k, (c16,), None),
      "fori_loop 10k on 4 floats": (fori_10k, (c4,), None),
      "conv NCHW 8x3x64x64 * 16x3x3x3": (conv_nchw, (cx, cw), None),
      "blur 667x500x3 convolve2d": (blur, (img,), None),
      "random.normal 1M": (lambda k: jx.random.normal(k, (1_000_000,)), (key,), None),
      "tiny x + 1": (lambda x: x + 1, (np.array(1.0, f32),), lambda x: x + 1),
  }
  return jx, cases


def ready(x):
  if hasattr(x, "block_until_ready"):
    x.block_until_ready()
    return x
  import jax
  for leaf in jax.tree_util.tree_leaves(x):
    if hasattr(leaf, "block_until_ready"):
      leaf.block_until_ready()
  return x


def main():
  ap = argparse.ArgumentParser()
  ap.add_argument("--rounds", type=int, default=15)
  ap.add_argument("--only", default="", help="cases whose name contains one of these "
                  "comma-separated substrings")
  ap.add_argument("--first-reps", type=int, default=3,
                  help="first calls timed per case (fresh functions; the median)")
  ap.add_argument("--threads", type=int, default=0, help="PYJAX_NUM_THREADS (0: default)")
  args = ap.parse_args()
  if args.threads:
    os.environ["PYJAX_NUM_THREADS"] = str(args.threads)
  os.environ.setdefault("JAX_PLATFORMS", "cpu")
  import jax
  import pyjax

  rng = np.random.default_rng(0)
  pj, pcases = build_cases("pyjax", rng)
  rng = np.random.default_rng(0)
  jx, jcases = build_cases("jax", rng)
  wanted = args.only.split(",")
  names = [n for n in pcases if any(w in n for w in wanted)]

  # first calls: a fresh function object each time (traced and compiled again by both
  # libraries), ``--first-reps`` times round-robin; the median of each
  fp = {n: [] for n in names}
  fj = {n: [] for n in names}
  for _ in range(args.first_reps):
    for n in names:
      pf, pargs, _ = pcases[n]
      jf, jargs, _ = jcases[n]
      fresh_p = pj.jit(lambda *a, _f=pf: _f(*a))
      fresh_j = jx.jit(lambda *a, _f=jf: _f(*a))
      t0 = time.perf_counter()
      ready(fresh_p(*pargs))
      fp[n].append(time.perf_counter() - t0)
      t0 = time.perf_counter()
      ready(fresh_j(*jargs))
      fj[n].append(time.perf_counter() - t0)
  first = {n: (statistics.median(fp[n]) * 1e3, statistics.median(fj[n]) * 1e3) for n in names}

  # steady state: native executables built first, no background build left running
  from pyjax._src.backends.cpu import executable
  executable.drain()
  runs = {}
  for n in names:
    pf, pargs, npf = pcases[n]
    jf, jargs, _ = jcases[n]
    pjit = pj.jit(pf)
    exe = pjit.lower(*pargs).compile().runtime_executable()
    tier = exe.wait() if hasattr(exe, "wait") else "?"
    jjit = jx.jit(jf)
    jdev = jax.tree_util.tree_map(lambda a: jax.device_put(a) if isinstance(a, np.ndarray) else a, jargs)
    pdev = pj.tree_util.tree_map(lambda a: pj.device_put(a) if isinstance(a, np.ndarray) else a, pargs)
    ready(pjit(*pdev))
    ready(jjit(*jdev))
    runs[n] = (lambda f=pjit, a=pdev: ready(f(*a)), lambda f=jjit, a=jdev: ready(f(*a)),
               (lambda f=npf, a=pargs: f(*a)) if npf is not None else None, tier)

  times = {n: ([], [], []) for n in names}
  for _ in range(args.rounds):
    for n in names:
      p, j, q, _ = runs[n]
      t = _timeit(p, 1)
      calls = max(1, min(2000, int(20000 / max(t, 1))))
      _warm(p)
      times[n][0].append(_timeit(p, calls))
      _warm(j)
      times[n][1].append(_timeit(j, calls))
      if q is not None:
        _warm(q)
        times[n][2].append(_timeit(q, calls))

  print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; "
        f"pyjax {getattr(pyjax, '__version__', '?')}, jax {jax.__version__}, "
        f"numpy {np.__version__}; {args.rounds} rounds, medians")
  print(f"{'case':28s} {'pyjax µs':>10s} {'JAX µs':>10s} {'NumPy µs':>10s} {'pyjax/JAX':>9s}  tier")
  ratios = []
  for n in names:
    tp, tj, tq = (statistics.median(v) if v else float("nan") for v in times[n])
    r = tp / tj
    ratios.append(r)
    print(f"{n:28s} {tp:10.1f} {tj:10.1f} {tq:10.1f} {r:9.2f}  {runs[n][3]}")
  gm = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
  print(f"{'geometric mean':28s} {'':10s} {'':10s} {'':10s} {gm:9.2f}   (target <= 0.6, "
        f"max {max(ratios):.2f}, target <= 1.2)")
  print()
  print(f"{'first call':28s} {'pyjax ms':>10s} {'JAX ms':>10s} {'pyjax/JAX':>9s}")
  fr = []
  for n in names:
    tp, tj = first[n]
    fr.append(tp / tj)
    print(f"{n:28s} {tp:10.1f} {tj:10.1f} {tp / tj:9.2f}")
  print(f"{'geometric mean':28s} {'':10s} {'':10s} "
        f"{math.exp(sum(math.log(r) for r in fr) / len(fr)):9.2f}   (target <= 0.3)")
  # the memory-bandwidth bound for elementwise kernels: the bytes each case reads and
  # writes at the machine's copy bandwidth -- a 64 MB copy (DRAM, not cache) by NumPy on
  # every CPU at once (one thread per CPU copying its share; NumPy releases the GIL)
  import threading
  a = np.ones(16_000_000, np.float32)
  o = np.empty_like(a)
  ncpu = os.cpu_count() or 1
  cuts = [k * len(a) // ncpu for k in range(ncpu + 1)]
  parts = [(a[lo:hi], o[lo:hi]) for lo, hi in zip(cuts, cuts[1:])]
  bw = []
  for _ in range(7):
    ts = [threading.Thread(target=np.copyto, args=(d, src)) for src, d in parts]
    t0 = time.perf_counter()
    for t in ts:
      t.start()
    for t in ts:
      t.join()
    bw.append(2 * a.nbytes / (time.perf_counter() - t0) / 1e9)
  best = max(bw)
  print()
  print(f"copy bandwidth (NumPy, 64 MB, {ncpu} threads): {best:.1f} GB/s")
  print(f"{'elementwise case':28s} {'MB moved':>9s} {'bound µs':>9s} {'pyjax/bound':>11s} "
        f"{'JAX/bound':>10s}")
  for n in names:
    if n in _ELEMENTWISE_MB:
      mb = _ELEMENTWISE_MB[n]
      bound = mb * 1e6 / best / 1e3
      tp, tj = (statistics.median(v) for v in times[n][:2])
      print(f"{n:28s} {mb:9d} {bound:9.0f} {tp / bound:11.2f} {tj / bound:10.2f}")
  print("(1M-float cases fit in the last-level cache, so they can beat the DRAM bound; the "
        "transcendental ones are compute-bound)")


# elementwise cases: MB read + written
_ELEMENTWISE_MB = {"x * 2 + 1 1M": 8, "selu 1M": 8, "gelu 1M": 8, "chain 1M": 8,
                   "x * 2 + 1 16M": 128, "a * x + y 16M": 192}


if __name__ == "__main__":
  main()
