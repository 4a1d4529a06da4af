"""optax: a few optimizers, a schedule, gradient transformations and losses on a small
least-squares / logistic problem (plain JAX code; prints RESULT <json>)."""
import json

import jax
import jax.numpy as jnp
import numpy as np
import optax

rng = np.random.RandomState(0)
X = jnp.asarray(rng.randn(32, 4).astype(np.float32))
w_true = jnp.asarray(np.array([1.0, -2.0, 0.5, 3.0], np.float32))
Y = X @ w_true + 0.1
LABELS = jnp.asarray((rng.rand(32) > 0.5).astype(np.int32))


def loss_fn(params):
  pred = X @ params["w"] + params["b"]
  return jnp.mean((pred - Y) ** 2)


def run(opt, steps=25):
  params = {"w": jnp.zeros(4), "b": jnp.zeros(())}
  state = opt.init(params)

  @jax.jit
  def step(params, state):
    loss, grads = jax.value_and_grad(loss_fn)(params)
    updates, state = opt.update(grads, state, params)
    return optax.apply_updates(params, updates), state, loss

  losses = []
  for _ in range(steps):
    params, state, loss = step(params, state)
    losses.append(float(loss))
  return {"loss_first": losses[0], "loss_last": losses[-1],
          "w": np.asarray(params["w"]).tolist(), "b": float(params["b"])}


schedule = optax.warmup_cosine_decay_schedule(0.0, 0.1, 5, 25, 0.01)
optimizers = {
    "sgd_momentum": optax.sgd(0.05, momentum=0.9),
    "adam": optax.adam(0.1),
    "adamw": optax.adamw(0.1, weight_decay=1e-2),
    "rmsprop": optax.rmsprop(0.05),
    "lion": optax.lion(0.01),
    "adafactor": optax.adafactor(0.1),
    "chain_clip_adam_schedule": optax.chain(optax.clip_by_global_norm(1.0),
                                            optax.scale_by_adam(),
                                            optax.scale_by_schedule(schedule),
                                            optax.scale(-1.0)),
}
result = {name: run(opt) for name, opt in optimizers.items()}

# L-BFGS with its zoom line search (value_and_grad_from_state)
lbfgs = optax.lbfgs()
params = {"w": jnp.zeros(4), "b": jnp.zeros(())}
state = lbfgs.init(params)
vg = optax.value_and_grad_from_state(loss_fn)


@jax.jit
def lbfgs_step(params, state):
  value, grad = vg(params, state=state)
  updates, state = lbfgs.update(grad, state, params, value=value, grad=grad,
                                value_fn=loss_fn)
  return optax.apply_updates(params, updates), state


for _ in range(10):
  params, state = lbfgs_step(params, state)
result["lbfgs"] = {"loss": float(loss_fn(params)), "w": np.asarray(params["w"]).tolist()}

# losses and schedules
logits = X[:, :2]
result["softmax_xent"] = float(jnp.mean(
    optax.softmax_cross_entropy_with_integer_labels(logits, LABELS)))
result["sigmoid_bce"] = float(jnp.mean(optax.sigmoid_binary_cross_entropy(X[:, 0],
                                                                          LABELS)))
result["huber"] = float(jnp.mean(optax.losses.huber_loss(X[:, 0], X[:, 1])))
result["schedule"] = [float(schedule(i)) for i in (0, 3, 5, 10, 24)]
result["global_norm"] = float(optax.global_norm({"a": X, "b": w_true}))
print("RESULT " + json.dumps(result))
