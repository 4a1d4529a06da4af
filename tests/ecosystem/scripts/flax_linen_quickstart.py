"""flax.linen quick start: an MLP and a CNN (Conv-BatchNorm-Dropout) trained with optax."""
import json

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax


class MLP(nn.Module):
  @nn.compact
  def __call__(self, x):
    x = nn.relu(nn.Dense(16)(x))
    return nn.Dense(1)(x)


class CNN(nn.Module):
  @nn.compact
  def __call__(self, x, train):
    x = nn.Conv(4, (3, 3))(x)
    x = nn.BatchNorm(use_running_average=not train)(x)
    x = nn.relu(x)
    x = nn.Dropout(0.25, deterministic=not train)(x)
    x = nn.avg_pool(x, (2, 2), strides=(2, 2))
    x = x.reshape((x.shape[0], -1))
    return nn.Dense(3)(x)


key = jax.random.PRNGKey(0)
k1, k2, k3, k4 = jax.random.split(key, 4)

# MLP regression with adam
x = jax.random.normal(k1, (32, 4))
y = jnp.sum(jnp.sin(x), axis=1, keepdims=True)
mlp = MLP()
params = mlp.init(k2, x)
tx = optax.adam(1e-2)
opt = tx.init(params)


@jax.jit
def mlp_step(params, opt):
  def loss_fn(p):
    return jnp.mean((mlp.apply(p, x) - y) ** 2)
  loss, g = jax.value_and_grad(loss_fn)(params)
  updates, opt = tx.update(g, opt, params)
  return optax.apply_updates(params, updates), opt, loss


mlp_losses = []
for _ in range(5):
  params, opt, loss = mlp_step(params, opt)
  mlp_losses.append(float(loss))

# CNN classification with sgd+momentum, batch stats and dropout
imgs = jax.random.normal(k3, (8, 8, 8, 1))
labels = jnp.arange(8) % 3
cnn = CNN()
variables = cnn.init({"params": k4, "dropout": k4}, imgs, train=False)
cparams, stats = variables["params"], variables["batch_stats"]
ctx = optax.sgd(0.05, momentum=0.9)
copt = ctx.init(cparams)


@jax.jit
def cnn_step(cparams, stats, copt, dkey):
  def loss_fn(p):
    logits, upd = cnn.apply({"params": p, "batch_stats": stats}, imgs, train=True,
                            rngs={"dropout": dkey}, mutable=["batch_stats"])
    loss = optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()
    return loss, upd["batch_stats"]
  (loss, stats), g = jax.value_and_grad(loss_fn, has_aux=True)(cparams)
  updates, copt = ctx.update(g, copt, cparams)
  return optax.apply_updates(cparams, updates), stats, copt, loss


cnn_losses = []
dkey = jax.random.PRNGKey(42)
for i in range(4):
  dkey, sub = jax.random.split(dkey)
  cparams, stats, copt, loss = cnn_step(cparams, stats, copt, sub)
  cnn_losses.append(float(loss))
eval_logits = cnn.apply({"params": cparams, "batch_stats": stats}, imgs, train=False)
print("RESULT " + json.dumps({
    "mlp_losses": mlp_losses, "cnn_losses": cnn_losses,
    "eval_logits_sum": float(jnp.abs(eval_logits).sum()),
    "bn_mean_sum": float(jnp.abs(stats["BatchNorm_0"]["mean"]).sum())}))
