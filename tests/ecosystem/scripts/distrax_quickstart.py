"""distrax quick start: distributions, a bijector chain, a transformed distribution, and
fitting a Normal by gradient descent with optax under jit."""
import json

import distrax
import jax
import jax.numpy as jnp
import optax

key = jax.random.PRNGKey(0)
k1, k2 = jax.random.split(key)
x = jnp.array([0.3, -1.2, 2.0])
res = {}

normal = distrax.Normal(loc=0.5, scale=2.0)
res["normal_log_prob"] = normal.log_prob(x).tolist()
s, lp = normal.sample_and_log_prob(seed=k1, sample_shape=(500,))
res["normal_sample_mean"] = float(s.mean())
res["normal_sample_lp_mean"] = float(lp.mean())
res["normal_entropy"] = float(normal.entropy())
res["kl"] = float(normal.kl_divergence(distrax.Normal(0.0, 1.0)))
res["categorical_log_prob"] = distrax.Categorical(
    logits=jnp.array([0.1, 0.5, -0.3])).log_prob(jnp.array([0, 2, 1])).tolist()
mvn = distrax.MultivariateNormalDiag(loc=jnp.zeros(3), scale_diag=jnp.array([1.0, 2.0, 0.5]))
res["mvn_log_prob"] = float(mvn.log_prob(x))
res["mvn_sample_mean"] = mvn.sample(seed=k2, sample_shape=(400,)).mean(axis=0).tolist()

chain = distrax.Chain([distrax.ScalarAffine(shift=1.0, scale=2.0), distrax.Tanh()])
y, ldj = chain.forward_and_log_det(x)
res["chain_forward"] = y.tolist()
res["chain_ldj"] = ldj.tolist()
res["chain_inverse"] = chain.inverse(y).tolist()
td = distrax.Transformed(distrax.Normal(0.0, 1.0), distrax.Lambda(jnp.exp))
res["lognormal_log_prob"] = td.log_prob(jnp.array([0.5, 1.0, 3.0])).tolist()

data = 3.0 + 0.5 * jax.random.normal(k1, (64,))
params = {"loc": jnp.array(0.0), "log_scale": jnp.array(0.0)}
tx = optax.adam(0.1)
opt = tx.init(params)


@jax.jit
def step(params, opt):
  def nll(p):
    return -distrax.Normal(p["loc"], jnp.exp(p["log_scale"])).log_prob(data).mean()
  loss, g = jax.value_and_grad(nll)(params)
  updates, opt = tx.update(g, opt)
  return optax.apply_updates(params, updates), opt, loss


losses = []
for _ in range(20):
  params, opt, loss = step(params, opt)
  losses.append(float(loss))
res["fit_losses"] = losses[::4]
res["fit_loc"] = float(params["loc"])
print("RESULT " + json.dumps(res))
