"""flax.nnx quick start: an MLP (adam) and a CNN (Conv-BatchNorm-Dropout, sgd+momentum)
trained with nnx.Optimizer, nnx.jit and nnx.value_and_grad."""
import json

import jax
import jax.numpy as jnp
import optax
from flax import nnx


class MLP(nnx.Module):
  def __init__(self, din, dhidden, dout, *, rngs):
    self.l1 = nnx.Linear(din, dhidden, rngs=rngs)
    self.l2 = nnx.Linear(dhidden, dout, rngs=rngs)

  def __call__(self, x):
    return self.l2(nnx.relu(self.l1(x)))


class CNN(nnx.Module):
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


key = jax.random.PRNGKey(0)
k1, k2 = jax.random.split(key)

# MLP regression with adam
x = jax.random.normal(k1, (32, 4))
y = jnp.sum(jnp.sin(x), axis=1, keepdims=True)
mlp = MLP(4, 16, 1, rngs=nnx.Rngs(0))
opt = nnx.Optimizer(mlp, optax.adam(1e-2), wrt=nnx.Param)


@nnx.jit
def mlp_step(model, optimizer, x, y):
  def loss_fn(model):
    return jnp.mean((model(x) - y) ** 2)
  loss, grads = nnx.value_and_grad(loss_fn)(model)
  optimizer.update(model, grads)
  return loss


mlp_losses = [float(mlp_step(mlp, opt, x, y)) for _ in range(5)]

# CNN classification with sgd+momentum, batch stats and dropout
imgs = jax.random.normal(k2, (8, 8, 8, 1))
labels = jnp.arange(8) % 3
cnn = CNN(rngs=nnx.Rngs(params=1, dropout=2))
copt = nnx.Optimizer(cnn, optax.sgd(0.05, momentum=0.9), wrt=nnx.Param)


@nnx.jit
def cnn_step(model, optimizer, imgs, labels):
  def loss_fn(model):
    logits = model(imgs)
    return optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()
  loss, grads = nnx.value_and_grad(loss_fn)(model)
  optimizer.update(model, grads)
  return loss


cnn.train()
cnn_losses = [float(cnn_step(cnn, copt, imgs, labels)) for _ in range(4)]
cnn.eval()
eval_logits = cnn(imgs)
_, params, rest = nnx.split(cnn, nnx.Param, ...)
print("RESULT " + json.dumps({
    "mlp_losses": mlp_losses, "cnn_losses": cnn_losses,
    "eval_logits_sum": float(jnp.abs(eval_logits).sum()),
    "bn_mean_sum": float(jnp.abs(cnn.bn.mean[...]).sum()),
    "n_params": int(sum(p.size for p in jax.tree.leaves(params))),
    "opt_step": int(copt.step[...])}))
