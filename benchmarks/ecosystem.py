"""One training step per library: pyjax vs real JAX, same machine, same run.

    python benchmarks/ecosystem.py [--rounds N] [--only SUBSTR] [--steps N]

Each case is a training (or solve) step as the library's quick start would write it:

* ``flax_mlp``: flax.linen MLP 784-512-512-10, batch 128, optax adam, softmax
  cross-entropy;
* ``flax_cnn``: flax.linen CNN on 28x28x1 images, batch 16: Conv(32, 3x3) - BatchNorm -
  relu - avg_pool - Conv(64, 3x3) - BatchNorm - relu - avg_pool - Dense(256) - relu -
  Dropout(0.5) - Dense(10), optax adam, a fresh dropout key per step;
* ``equinox_mlp``: equinox MLP 784-512-512-10 (``eqx.nn.MLP``), batch 128, ``filter_jit``
  step with ``filter_value_and_grad`` and optax adam;
* ``optax_mlp``: a plain jitted MLP (dict of arrays) 784-512-512-10, batch 128, optax adam;
* ``diffrax_grad``: ``grad`` through ``diffeqsolve`` (Tsit5, PID controller, 8-dimensional
  linear ODE, adjoint = the default ``RecursiveCheckpointAdjoint``), jitted;
* ``nnx_mlp``: flax.nnx MLP 784-512-512-10 (``nnx.Linear`` layers), batch 128,
  ``nnx.Optimizer`` (optax adam), an ``nnx.jit`` step with ``nnx.value_and_grad``;
* ``nnx_cnn``: the flax.nnx quick start's CNN (Conv(1, 4, 3x3) - BatchNorm - relu -
  Dropout(0.25) - avg_pool - Linear(64, 3)) on 8 images of 8x8x1, sgd with momentum,
  ``nnx.jit`` step in train mode (dropout keys from the model's ``Rngs``);
* ``lineax_solve``: ``value_and_grad`` through ``lx.linear_solve`` of a 64x64
  ``MatrixLinearOperator`` (the default LU solver), loss ``|x - target|^2``, a gradient
  step on the matrix, jitted;
* ``optimistix_root``: a jitted ``optx.root_find`` with ``optx.Newton`` of the quick
  start's ``tanh(y + a) - b * y`` on 64 elements (5 Newton steps, dense 64x64 Jacobian);
  "loss" = the sum of the root (no state changes between calls);
* ``tfp_step`` / ``distrax_step``: fit a Normal's ``loc`` and ``log_scale`` to 1,024
  points by the negative log-likelihood of ``tfp.substrates.jax``'s ``tfd.Normal`` /
  ``distrax.Normal``, ``value_and_grad`` + optax adam, jitted;
* ``orbax_save_restore``: not a training step: one ``ocp.StandardCheckpointer`` save
  (``force=True``, overwriting the last one; waits until finished) and restore of the
  784-512-512-10 MLP's params and adam state (3 x 669,706 float32: 8 MB) in a temporary
  directory; "loss" = a checksum of the restored values.

``--only`` selects the cases whose name contains SUBSTR (``--only nnx`` runs both nnx
cases).

Every (round, case, side) runs in a fresh interpreter: real JAX as ``python this_file
--worker CASE`` and pyjax as ``python -m pyjax run this_file --worker CASE`` (the same
script, ``import jax`` resolved to pyjax). A worker times the first call (trace + compile;
pyjax: trace + its NumPy tier), runs ``--steps`` training steps from the initial state and
records the last loss (so equal results are visible), warms up (pyjax: until its native
build is in), then times ``--calls`` steps one by one, each waiting for its result, and
prints the median wall time and the median CPU time of the process per step (all its
threads: on a loaded machine the steadier measure of the work done). The driver prints
per-case medians over the rounds and pyjax/JAX.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.abspath(__file__)
ROOT = os.path.dirname(os.path.dirname(HERE))

CASES = ("flax_mlp", "flax_cnn", "equinox_mlp", "optax_mlp", "diffrax_grad", "nnx_mlp",
         "nnx_cnn", "lineax_solve", "optimistix_root", "tfp_step", "distrax_step",
         "orbax_save_restore")


# --- the steps (run inside a worker; ``jax`` is real JAX or pyjax) ------------------------
def _data(jax, batch, shape, classes=10):
  k1, k2 = jax.random.split(jax.random.PRNGKey(0))
  x = jax.random.normal(k1, (batch,) + shape)
  y = jax.random.randint(k2, (batch,), 0, classes)
  return x, y


def case_flax_mlp(jax):
  import flax.linen as nn
  import jax.numpy as jnp
  import optax

  class MLP(nn.Module):
    @nn.compact
    def __call__(self, x):
      x = nn.relu(nn.Dense(512)(x))
      x = nn.relu(nn.Dense(512)(x))
      return nn.Dense(10)(x)

  x, y = _data(jax, 128, (784,))
  model = MLP()
  params = model.init(jax.random.PRNGKey(1), x)
  tx = optax.adam(1e-3)
  opt = tx.init(params)

  @jax.jit
  def step(params, opt):
    def loss_fn(p):
      logits = model.apply(p, x)
      return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()
    loss, g = jax.value_and_grad(loss_fn)(params)
    updates, opt = tx.update(g, opt, params)
    return optax.apply_updates(params, updates), opt, loss

  state = [params, opt]

  def run():
    state[0], state[1], loss = step(state[0], state[1])
    return loss
  return run


def case_flax_cnn(jax):
  import flax.linen as nn
  import optax

  class CNN(nn.Module):
    @nn.compact
    def __call__(self, x, train):
      x = nn.Conv(32, (3, 3))(x)
      x = nn.BatchNorm(use_running_average=not train)(x)
      x = nn.relu(x)
      x = nn.avg_pool(x, (2, 2), strides=(2, 2))
      x = nn.Conv(64, (3, 3))(x)
      x = nn.BatchNorm(use_running_average=not train)(x)
      x = nn.relu(x)
      x = nn.avg_pool(x, (2, 2), strides=(2, 2))
      x = x.reshape((x.shape[0], -1))
      x = nn.relu(nn.Dense(256)(x))
      x = nn.Dropout(0.5, deterministic=not train)(x)
      return nn.Dense(10)(x)

  x, y = _data(jax, 16, (28, 28, 1))
  model = CNN()
  variables = model.init({"params": jax.random.PRNGKey(1)}, x, train=False)
  params, stats = variables["params"], variables["batch_stats"]
  tx = optax.adam(1e-3)
  opt = tx.init(params)

  @jax.jit
  def step(params, stats, opt, key):
    key, dkey = jax.random.split(key)
    def loss_fn(p):
      logits, upd = model.apply({"params": p, "batch_stats": stats}, x, train=True,
                                rngs={"dropout": dkey}, mutable=["batch_stats"])
      loss = optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()
      return loss, upd["batch_stats"]
    (loss, stats), g = jax.value_and_grad(loss_fn, has_aux=True)(params)
    updates, opt = tx.update(g, opt, params)
    return optax.apply_updates(params, updates), stats, opt, key, loss

  state = [params, stats, opt, jax.random.PRNGKey(2)]

  def run():
    *new, loss = step(*state)
    state[:] = new
    return loss
  return run


def case_equinox_mlp(jax):
  import equinox as eqx
  import optax

  x, y = _data(jax, 128, (784,))
  model = eqx.nn.MLP(784, 10, 512, 2, activation=jax.nn.relu, key=jax.random.PRNGKey(1))
  tx = optax.adam(1e-3)
  opt = tx.init(eqx.filter(model, eqx.is_array))

  def loss_fn(model):
    logits = jax.vmap(model)(x)
    return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()

  @eqx.filter_jit
  def step(model, opt):
    loss, g = eqx.filter_value_and_grad(loss_fn)(model)
    updates, opt = tx.update(g, opt, eqx.filter(model, eqx.is_array))
    return eqx.apply_updates(model, updates), opt, loss

  state = [model, opt]

  def run():
    state[0], state[1], loss = step(state[0], state[1])
    return loss
  return run


def case_optax_mlp(jax):
  import jax.numpy as jnp
  import optax

  x, y = _data(jax, 128, (784,))
  sizes = (784, 512, 512, 10)
  keys = jax.random.split(jax.random.PRNGKey(1), len(sizes) - 1)
  params = [{"w": jax.random.normal(k, (m, n)) * (1.0 / math.sqrt(m)), "b": jnp.zeros(n)}
            for k, m, n in zip(keys, sizes[:-1], sizes[1:])]
  tx = optax.adam(1e-3)
  opt = tx.init(params)

  def loss_fn(params):
    h = x
    for layer in params[:-1]:
      h = jax.nn.relu(h @ layer["w"] + layer["b"])
    logits = h @ params[-1]["w"] + params[-1]["b"]
    return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()

  @jax.jit
  def step(params, opt):
    loss, g = jax.value_and_grad(loss_fn)(params)
    updates, opt = tx.update(g, opt, params)
    return optax.apply_updates(params, updates), opt, loss

  state = [params, opt]

  def run():
    state[0], state[1], loss = step(state[0], state[1])
    return loss
  return run


def case_diffrax_grad(jax):
  import diffrax
  import jax.numpy as jnp

  n = 8
  a = -jnp.eye(n) + 0.1 * jax.random.normal(jax.random.PRNGKey(1), (n, n))
  y0 = jnp.linspace(1.0, 2.0, n)
  term = diffrax.ODETerm(lambda t, y, args: args @ y)
  solver = diffrax.Tsit5()
  ctrl = diffrax.PIDController(rtol=1e-5, atol=1e-5)

  def loss_fn(a):
    sol = diffrax.diffeqsolve(term, solver, t0=0.0, t1=1.0, dt0=0.1, y0=y0, args=a,
                              stepsize_controller=ctrl)
    return jnp.sum(sol.ys[-1] ** 2)

  @jax.jit
  def step(a):
    loss, g = jax.value_and_grad(loss_fn)(a)
    return a - 0.01 * g, loss

  state = [a]

  def run():
    state[0], loss = step(state[0])
    return loss
  return run


def case_nnx_mlp(jax):
  import optax
  from flax import nnx

  class MLP(nnx.Module):
    def __init__(self, sizes, *, rngs):
      self.layers = nnx.List([nnx.Linear(m, n, rngs=rngs)
                              for m, n in zip(sizes[:-1], sizes[1:])])

    def __call__(self, x):
      for layer in self.layers[:-1]:
        x = nnx.relu(layer(x))
      return self.layers[-1](x)

  x, y = _data(jax, 128, (784,))
  model = MLP((784, 512, 512, 10), rngs=nnx.Rngs(1))
  optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)

  @nnx.jit
  def step(model, optimizer):
    def loss_fn(model):
      return optax.softmax_cross_entropy_with_integer_labels(model(x), y).mean()
    loss, grads = nnx.value_and_grad(loss_fn)(model)
    optimizer.update(model, grads)
    return loss

  return lambda: step(model, optimizer)


def case_nnx_cnn(jax):
  import jax.numpy as jnp
  import optax
  from flax import nnx

  class CNN(nnx.Module):  # the flax.nnx quick start's CNN (tests/ecosystem/scripts)
    def __init__(self, *, rngs):
      self.conv = nnx.Conv(1, 4, kernel_size=(3, 3), rngs=rngs)
      self.bn = nnx.BatchNorm(4, rngs=rngs)
      self.dropout = nnx.Dropout(0.25, rngs=rngs)
      self.linear = nnx.Linear(4 * 4 * 4, 3, rngs=rngs)

    def __call__(self, x):
      x = nnx.relu(self.bn(self.conv(x)))
      x = self.dropout(x)
      x = nnx.avg_pool(x, (2, 2), strides=(2, 2))
      return self.linear(x.reshape((x.shape[0], -1)))

  imgs = jax.random.normal(jax.random.PRNGKey(0), (8, 8, 8, 1))
  labels = jnp.arange(8) % 3
  model = CNN(rngs=nnx.Rngs(params=1, dropout=2))
  optimizer = nnx.Optimizer(model, optax.sgd(0.05, momentum=0.9), wrt=nnx.Param)
  model.train()

  @nnx.jit
  def step(model, optimizer):
    def loss_fn(model):
      logits = model(imgs)
      return optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()
    loss, grads = nnx.value_and_grad(loss_fn)(model)
    optimizer.update(model, grads)
    return loss

  return lambda: step(model, optimizer)


def case_lineax_solve(jax):
  import jax.numpy as jnp
  import lineax as lx

  n = 64
  k1, k2, k3 = jax.random.split(jax.random.PRNGKey(1), 3)
  a = jax.random.normal(k1, (n, n)) / math.sqrt(n) + 2.0 * jnp.eye(n)
  b = jax.random.normal(k2, (n,))
  target = jax.random.normal(k3, (n,))

  def loss_fn(a):
    x = lx.linear_solve(lx.MatrixLinearOperator(a), b).value  # LU, the default solver
    return jnp.sum((x - target) ** 2)

  @jax.jit
  def step(a):
    loss, g = jax.value_and_grad(loss_fn)(a)
    return a - 0.05 * g, loss

  state = [a]

  def run():
    state[0], loss = step(state[0])
    return loss
  return run


def case_optimistix_root(jax):
  import jax.numpy as jnp
  import optimistix as optx

  n = 64

  def fn(y, args):  # the optimistix quick start's function, one root per element
    a, b = args
    return jnp.tanh(y + a) - b * y

  args = (jnp.linspace(-1.0, 1.0, n), jnp.linspace(1.2, 2.0, n))  # 5 Newton steps from 0.5
  solver = optx.Newton(rtol=1e-6, atol=1e-6)

  @jax.jit
  def step(args):
    sol = optx.root_find(fn, solver, jnp.full((n,), 0.5), args=args)
    return jnp.sum(sol.value)

  return lambda: step(args)


def _fit_data(jax):
  return 3.0 + 0.5 * jax.random.normal(jax.random.PRNGKey(1), (1024,))


def _fit_normal(jax, normal):
  """A jitted step fitting ``normal(loc, scale)`` to 1,024 points by its negative
  log-likelihood with optax adam (the tfp and distrax cases)."""
  import jax.numpy as jnp
  import optax

  data = _fit_data(jax)
  params = {"loc": jnp.array(0.0), "log_scale": jnp.array(0.0)}
  tx = optax.adam(0.1)
  opt = tx.init(params)

  @jax.jit
  def step(params, opt):
    def nll(p):
      return -normal(p["loc"], jnp.exp(p["log_scale"])).log_prob(data).mean()
    loss, g = jax.value_and_grad(nll)(params)
    updates, opt = tx.update(g, opt)
    return optax.apply_updates(params, updates), opt, loss

  state = [params, opt]

  def run():
    state[0], state[1], loss = step(state[0], state[1])
    return loss
  return run


def case_tfp_step(jax):
  from tensorflow_probability.substrates import jax as tfp
  return _fit_normal(jax, tfp.distributions.Normal)


def case_distrax_step(jax):
  import distrax
  return _fit_normal(jax, distrax.Normal)


def case_orbax_save_restore(jax):
  import atexit
  import shutil
  import tempfile

  import jax.numpy as jnp
  import optax
  import orbax.checkpoint as ocp

  sizes = (784, 512, 512, 10)
  keys = jax.random.split(jax.random.PRNGKey(1), len(sizes) - 1)
  params = [{"w": jax.random.normal(k, (m, n)) * (1.0 / math.sqrt(m)), "b": jnp.zeros(n)}
            for k, m, n in zip(keys, sizes[:-1], sizes[1:])]
  tx = optax.adam(1e-3)
  state = {"params": params, "opt_state": tx.init(params)}
  abstract = jax.tree.map(ocp.utils.to_shape_dtype_struct, state)
  root = tempfile.mkdtemp(prefix="ecosystem_orbax_")
  atexit.register(shutil.rmtree, root, True)
  path = os.path.join(root, "state")
  ckptr = ocp.StandardCheckpointer()
  atexit.register(ckptr.close)

  def run():  # one save (overwriting the last one) + one restore; "loss": a checksum
    ckptr.save(path, state, force=True)
    ckptr.wait_until_finished()
    restored = ckptr.restore(path, abstract)
    return jnp.sum(restored["params"][0]["w"][0]) + restored["opt_state"][0].count
  return run


def worker(case, steps, calls, warm_seconds):
  import jax
  pyjax = jax.__name__ == "pyjax"
  run = globals()["case_" + case](jax)
  t0 = time.perf_counter()
  loss = run()
  jax.block_until_ready(loss)
  first = time.perf_counter() - t0
  for _ in range(steps - 1):
    loss = run()
  final_loss = float(loss)
  if pyjax:  # the native tier builds in the background: wait for it before timing
    from pyjax._src.backends.cpu import executable
    for _ in range(3):
      jax.block_until_ready(run())
    executable.drain()
  t0 = time.perf_counter()
  while time.perf_counter() - t0 < warm_seconds:
    jax.block_until_ready(run())
  times, cpu = [], []
  for _ in range(calls):
    t1, c1 = time.perf_counter(), time.process_time()
    jax.block_until_ready(run())
    times.append(time.perf_counter() - t1)
    cpu.append(time.process_time() - c1)
  print("RESULT " + json.dumps({"case": case, "lib": "pyjax" if pyjax else "jax",
                                "median_ms": statistics.median(times) * 1e3,
                                "min_ms": min(times) * 1e3,
                                "cpu_ms": statistics.median(cpu) * 1e3,
                                "first_ms": first * 1e3, "loss": final_loss}))


# --- the driver ---------------------------------------------------------------------------
def _run_worker(case, side, args):
  cmd = [sys.executable]
  if side == "pyjax":
    cmd += ["-m", "pyjax", "run"]
  cmd += [HERE, "--worker", case, "--steps", str(args.steps), "--calls", str(args.calls),
          "--warm", str(args.warm)]
  env = dict(os.environ)
  env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
  out = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
  for line in out.stdout.splitlines():
    if line.startswith("RESULT "):
      return json.loads(line[7:])
  sys.stderr.write(f"{case} on {side} failed:\n{out.stderr[-3000:]}\n")
  return None


def main():
  p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  p.add_argument("--rounds", type=int, default=3)
  p.add_argument("--only", default="")
  p.add_argument("--steps", type=int, default=10, help="training steps before the loss")
  p.add_argument("--calls", type=int, default=50, help="timed steps per worker")
  p.add_argument("--warm", type=float, default=1.0, help="seconds of untimed steps")
  p.add_argument("--worker", default=None, help=argparse.SUPPRESS)
  args = p.parse_args()
  if args.worker:
    worker(args.worker, args.steps, args.calls, args.warm)
    return
  cases = [c for c in CASES if args.only in c]
  results = {(c, s): [] for c in cases for s in ("pyjax", "jax")}
  for r in range(args.rounds):
    for c in cases:
      for s in ("jax", "pyjax") if r % 2 == 0 else ("pyjax", "jax"):
        res = _run_worker(c, s, args)
        if res is not None:
          results[(c, s)].append(res)
          print(f"round {r + 1} {c:18s} {s:6s} median {res['median_ms']:8.3f} ms  "
                f"first {res['first_ms']:8.1f} ms  loss {res['loss']:.6g}", flush=True)
  print()
  print("| case | pyjax ms | JAX ms | pyjax/JAX | pyjax CPU ms | JAX CPU ms | CPU ratio |"
        " first call pyjax ms | JAX ms | loss pyjax | loss JAX |")
  print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
  ratios = []
  for c in cases:
    pj, jx = results[(c, "pyjax")], results[(c, "jax")]
    if not pj or not jx:
      print(f"| {c} | failed | | | | | | | | | |")
      continue
    med = lambda rs, k: statistics.median(r[k] for r in rs)  # noqa: E731
    ratio = med(pj, "median_ms") / med(jx, "median_ms")
    cratio = med(pj, "cpu_ms") / med(jx, "cpu_ms")
    ratios.append(ratio)
    print(f"| {c} | {med(pj, 'median_ms'):.3f} | {med(jx, 'median_ms'):.3f} | {ratio:.2f} | "
          f"{med(pj, 'cpu_ms'):.3f} | {med(jx, 'cpu_ms'):.3f} | {cratio:.2f} | "
          f"{med(pj, 'first_ms'):.0f} | {med(jx, 'first_ms'):.0f} | {pj[-1]['loss']:.6g} | "
          f"{jx[-1]['loss']:.6g} |")
  if ratios:
    geo = math.exp(sum(map(math.log, ratios)) / len(ratios))
    print(f"\ngeometric mean pyjax/JAX {geo:.2f} over {len(ratios)} case(s), "
          f"median of {args.rounds} round(s) each")


if __name__ == "__main__":
  main()
