"""equinox quick start: an MLP trained with filter_jit / filter_value_and_grad."""
import json

import equinox as eqx
import jax
import jax.numpy as jnp


class MLP(eqx.Module):
  layers: list

  def __init__(self, key):
    k1, k2 = jax.random.split(key)
    self.layers = [eqx.nn.Linear(3, 8, key=k1), eqx.nn.Linear(8, 1, key=k2)]

  def __call__(self, x):
    x = jax.nn.relu(self.layers[0](x))
    return self.layers[1](x)[0]


@eqx.filter_jit
def loss(model, x, y):
  pred = jax.vmap(model)(x)
  return jnp.mean((pred - y) ** 2)


@eqx.filter_jit
def step(model, x, y):
  l, grads = eqx.filter_value_and_grad(loss)(model, x, y)
  model = jax.tree_util.tree_map(lambda p, g: p - 0.1 * g, model, grads)
  return model, l


key = jax.random.PRNGKey(0)
mkey, xkey = jax.random.split(key)
model = MLP(mkey)
x = jax.random.normal(xkey, (16, 3))
y = jnp.sin(x).sum(axis=1)
losses = []
for _ in range(5):
  model, l = step(model, x, y)
  losses.append(float(l))
params, _ = eqx.partition(model, eqx.is_array)
print("RESULT " + json.dumps({"losses": losses, "final": float(loss(model, x, y)),
                              "n_params": sum(p.size for p in jax.tree_util.tree_leaves(params))}))
