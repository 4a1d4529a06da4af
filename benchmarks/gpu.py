"""pyjax's emitted CUDA kernels vs JAX on the same GPU, in one run (needs a GPU).

    python benchmarks/gpu.py [--rounds N] [--only SUBSTR]

For each case the jaxpr is lowered by pyjax's pipeline to CUDA kernels
(``backends/gpu/codegen_cuda.py``) and run with ``backends/gpu/launch.py`` (CuPy's
``RawModule``, pyjax's non-blocking stream); JAX runs ``jax.jit`` of the same function on
its GPU.  Each timed call waits for the device (pyjax: the stream; JAX:
``block_until_ready``); the table shows the median ms per call of each, their ratio,
and the first call of each (pyjax: lowering + NVRTC compile + first launch; JAX: trace +
XLA compile + first run) in a fresh cache.  Inputs are on the device for both.  The cases
are the fused kernels the launching layer runs today (no dot/cuBLAS steps yet): the
issue's selu on 16M floats and softmax 4096x4096, and a layer norm 4096x4096.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np


def _selu(jnp):
  def selu(x):
    return 1.0507 * jnp.where(x > 0, x, 1.6733 * jnp.exp(x) - 1.6733)
  return selu


def _softmax(jnp):
  def softmax(x):
    m = jnp.max(x, axis=-1, keepdims=True)
    e = jnp.exp(x - m)
    return e / jnp.sum(e, axis=-1, keepdims=True)
  return softmax


def _layer_norm(jnp):
  def layer_norm(x):
    m = jnp.mean(x, -1, keepdims=True)
    v = jnp.mean((x - m) ** 2, -1, keepdims=True)
    return (x - m) / jnp.sqrt(v + 1e-5)
  return layer_norm


CASES = [("selu 16M f32", _selu, (1 << 24,)), ("softmax 4096x4096 f32", _softmax, (4096, 4096)),
         ("layer norm 4096x4096 f32", _layer_norm, (4096, 4096))]


def main(argv=None):
  ap = argparse.ArgumentParser()
  ap.add_argument("--rounds", type=int, default=20)
  ap.add_argument("--only", default="")
  a = ap.parse_args(argv)
  import jax
  import jax.numpy as jnp
  import pyjax
  import pyjax.numpy as pjnp
  from pyjax._src.backends.gpu import launch
  dev = launch.GpuDevice(0)
  print(f"device: {dev.name} (sm_{dev.arch}); JAX {jax.__version__} on {jax.devices()[0]}")
  print(f"{'case':28s} {'pyjax ms':>9s} {'JAX ms':>9s} {'ratio':>6s} {'pyjax 1st':>10s} "
        f"{'JAX 1st':>9s}")
  rng = np.random.default_rng(0)
  for name, make, shape in CASES:
    if a.only not in name:
      continue
    x = rng.standard_normal(shape).astype(np.float32)
    t0 = time.perf_counter()
    closed = pyjax.make_jaxpr(make(pjnp))(x)
    prog = launch.GpuProgram(closed, dev, name.split()[0].replace(" ", "_"))
    xd = dev.to_device(x)
    dev.synchronize()
    out = prog(xd)
    dev.synchronize()
    p_first = time.perf_counter() - t0
    jf = jax.jit(make(jnp))
    xj = jax.device_put(x)
    xj.block_until_ready()
    t0 = time.perf_counter()
    ref = jf(xj).block_until_ready()
    j_first = time.perf_counter() - t0
    np.testing.assert_allclose(dev.to_host(out[0]), np.asarray(ref), rtol=2e-5, atol=2e-6)
    pt, jt = [], []
    for _ in range(a.rounds):   # alternating, so a busy device slows both alike
      t0 = time.perf_counter()
      prog(xd)
      dev.synchronize()
      pt.append(time.perf_counter() - t0)
      t0 = time.perf_counter()
      jf(xj).block_until_ready()
      jt.append(time.perf_counter() - t0)
    p, j = statistics.median(pt) * 1e3, statistics.median(jt) * 1e3
    print(f"{name:28s} {p:9.3f} {j:9.3f} {p / j:6.2f} {p_first * 1e3:9.1f}ms {j_first * 1e3:7.1f}ms")
  return 0


if __name__ == "__main__":
  sys.exit(main())
