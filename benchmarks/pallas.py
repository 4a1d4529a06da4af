"""Pallas on CPU: pyjax's compiled Pallas kernels vs the same math as jitted jnp (pyjax),
and vs JAX's interpret mode (the only way JAX runs Pallas on CPU).

    python benchmarks/pallas.py [--reps 7] [--interp-reps 2]

Kernels: blocked matmul (1024^2, 128x128 blocks), row softmax (4096x1024, 8-row blocks),
flash attention forward (seq 1024, head 64, 128-row query blocks).  Four programs per
kernel, timed in rotation in the same process: pyjax's compiled Pallas kernel, the same
math as pyjax-jitted jnp, the same math as JAX-jitted jnp (XLA), and JAX's interpret mode
(an XLA-compiled loop over the grid).  ``k`` (interpret / jitted jnp, both JAX) decides
whether "50x faster than JAX's interpret mode" is reachable: it needs pyjax's kernel to
take at most ``k / 50`` of XLA's jnp time (column ``need``; ``P/Xj`` is what it takes).
"""
import argparse
import functools
import time

import numpy as np


def _median_times(fns, reps):
  """Median seconds of each ``(f, args, reps_f)`` in ``fns``, timed in rotation (one call of
  each per round, so load changes hit all of them alike) after one warm-up call each."""
  for f, args, _ in fns:
    np.asarray(f(*args))
  times = [[] for _ in fns]
  for r in range(reps):
    for k, (f, args, reps_f) in enumerate(fns):
      if r < reps_f:
        t = time.perf_counter()
        np.asarray(f(*args))
        times[k].append(time.perf_counter() - t)
  return [float(np.median(t)) for t in times]


def matmul(pl, jnp, jx, n, bs):
  def kernel(x_ref, y_ref, o_ref):
    o_ref[...] = jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)

  def f(x, y, interpret):
    return pl.pallas_call(kernel, out_shape=jx.ShapeDtypeStruct((n, n), jnp.float32),
                          grid=(n // bs, n // bs),
                          in_specs=[pl.BlockSpec((bs, n), lambda i, j: (i, 0)),
                                    pl.BlockSpec((n, bs), lambda i, j: (0, j))],
                          out_specs=pl.BlockSpec((bs, bs), lambda i, j: (i, j)),
                          interpret=interpret)(x, y)
  return f, lambda x, y: jnp.dot(x, y)


def softmax(pl, jnp, jx, rows, cols, br=8):
  def sm(x):
    m = jnp.max(x, axis=-1, keepdims=True)
    e = jnp.exp(x - m)
    return e / jnp.sum(e, axis=-1, keepdims=True)

  def kernel(x_ref, o_ref):
    o_ref[...] = sm(x_ref[...])

  def f(x, interpret):
    return pl.pallas_call(kernel, out_shape=jx.ShapeDtypeStruct((rows, cols), jnp.float32),
                          grid=(rows // br,), in_specs=[pl.BlockSpec((br, cols), lambda i: (i, 0))],
                          out_specs=pl.BlockSpec((br, cols), lambda i: (i, 0)),
                          interpret=interpret)(x)
  return f, sm


def flash(pl, jnp, jx, lax, seq, d, bq=128, bk=128):
  def kernel(q_ref, k_ref, v_ref, o_ref):
    q = q_ref[...]

    def body(i, carry):
      acc, m, l = carry
      k = k_ref[pl.ds(i * bk, bk), :]
      v = v_ref[pl.ds(i * bk, bk), :]
      s = q @ k.T
      m_new = jnp.maximum(m, jnp.max(s, axis=-1))
      p = jnp.exp(s - m_new[:, None])
      alpha = jnp.exp(m - m_new)
      return acc * alpha[:, None] + p @ v, m_new, alpha * l + jnp.sum(p, axis=-1)
    init = (jnp.zeros((bq, d), jnp.float32), jnp.full((bq,), -jnp.inf, jnp.float32),
            jnp.zeros((bq,), jnp.float32))
    acc, m, l = lax.fori_loop(0, seq // bk, body, init)
    o_ref[...] = acc / l[:, None]

  def f(q, k, v, interpret):
    return pl.pallas_call(kernel, out_shape=jx.ShapeDtypeStruct((seq, d), jnp.float32),
                          grid=(seq // bq,),
                          in_specs=[pl.BlockSpec((bq, d), lambda i: (i, 0)),
                                    pl.BlockSpec((seq, d), lambda i: (0, 0)),
                                    pl.BlockSpec((seq, d), lambda i: (0, 0))],
                          out_specs=pl.BlockSpec((bq, d), lambda i: (i, 0)),
                          interpret=interpret)(q, k, v)

  def ref(q, k, v):
    s = q @ k.T
    p = jnp.exp(s - jnp.max(s, axis=-1, keepdims=True))
    return (p / jnp.sum(p, axis=-1, keepdims=True)) @ v
  return f, ref


def main():
  ap = argparse.ArgumentParser()
  ap.add_argument("--reps", type=int, default=7, help="timed rounds (medians)")
  ap.add_argument("--interp-reps", type=int, default=2,
                  help="timed calls of JAX's interpret mode (slow) within those rounds")
  a = ap.parse_args()
  import pyjax
  import pyjax.numpy as pjnp
  from pyjax import lax as plax
  from pyjax.experimental import pallas as ppl
  rng = np.random.default_rng(0)
  cases = [
      ("matmul 1024^2 (128 blocks)", lambda pl, jnp, jx, lax: matmul(pl, jnp, jx, 1024, 128),
       lambda: [rng.standard_normal((1024, 1024), np.float32) for _ in range(2)]),
      ("row softmax 4096x1024", lambda pl, jnp, jx, lax: softmax(pl, jnp, jx, 4096, 1024),
       lambda: [rng.standard_normal((4096, 1024), np.float32)]),
      ("flash attention seq 1024 head 64", lambda pl, jnp, jx, lax: flash(pl, jnp, jx, lax, 1024, 64),
       lambda: [rng.standard_normal((1024, 64), np.float32) for _ in range(3)]),
  ]
  try:
    import jax
    import jax.numpy as jjnp
    from jax import lax as jlax
    from jax.experimental import pallas as jpl
  except ImportError:
    jax = None
  ap_reps = a.reps
  print("columns: pyjax compiled Pallas (P), pyjax jitted jnp (Pj), JAX jitted jnp (Xj), JAX "
        "interpret mode (Xi), medians of the same rounds; k = Xi / Xj; 50x over Xi needs "
        "P <= Xj * k / 50")
  print(f"{'kernel':34s} {'P':>9s} {'Pj':>9s} {'P/Pj':>5s} {'Xj':>9s} {'Xi':>10s} "
        f"{'Xi/P':>7s} {'k':>6s} {'P/Xj':>5s} {'need':>6s}")
  for name, make, data in cases:
    args = data()
    f, ref = make(ppl, pjnp, pyjax, plax)
    xs = [pjnp.asarray(x) for x in args]
    fns = [(pyjax.jit(functools.partial(f, interpret=False)).lower(*xs).compile(), xs, ap_reps),
           (pyjax.jit(ref).lower(*xs).compile(), xs, ap_reps)]
    if jax is not None:
      fj, refj = make(jpl, jjnp, jax, jlax)
      jargs = [jjnp.asarray(x) for x in args]
      fns += [(jax.jit(refj), jargs, ap_reps),
              (jax.jit(functools.partial(fj, interpret=True)), jargs, a.interp_reps)]
    ts = _median_times(fns, ap_reps) + [float("nan")] * 2
    t_pl, t_jnp, t_xj, t_xi = ts[:4]
    k = t_xi / t_xj
    print(f"{name:34s} {t_pl * 1e3:7.2f}ms {t_jnp * 1e3:7.2f}ms {t_pl / t_jnp:5.2f} "
          f"{t_xj * 1e3:7.2f}ms {t_xi * 1e3:8.1f}ms {t_xi / t_pl:6.1f}x {k:6.1f} "
          f"{t_pl / t_xj:5.2f} {k / 50:6.3f}", flush=True)


if __name__ == "__main__":
  main()
