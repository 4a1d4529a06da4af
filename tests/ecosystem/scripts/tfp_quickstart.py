"""tfp.substrates.jax quick start: log_prob / sample / entropy / KL of common
distributions, a bijector, and grad + jit + vmap through log_prob."""
import json

import jax
import jax.numpy as jnp
from tensorflow_probability.substrates import jax as tfp

tfd, tfb = tfp.distributions, tfp.bijectors
key = jax.random.PRNGKey(0)
x = jnp.array([0.3, -1.2, 2.0])
res = {}

dists = {
    "normal": tfd.Normal(loc=0.5, scale=2.0),
    "gamma": tfd.Gamma(concentration=2.0, rate=1.5),
    "beta": tfd.Beta(2.0, 3.0),
    "student_t": tfd.StudentT(df=4.0, loc=0.0, scale=1.0),
    "mvn": tfd.MultivariateNormalDiag(loc=jnp.zeros(3), scale_diag=jnp.array([1.0, 2.0, 0.5])),
    "categorical": tfd.Categorical(logits=jnp.array([0.1, 0.5, -0.3])),
}
pts = {"normal": x, "gamma": jnp.abs(x) + 0.1, "beta": jnp.array([0.2, 0.5, 0.9]),
       "student_t": x, "mvn": x, "categorical": jnp.array([0, 2, 1])}
for name, d in dists.items():
  res[name + "_log_prob"] = jnp.asarray(d.log_prob(pts[name])).tolist()
  if name in ("normal", "gamma", "mvn", "categorical"):
    s = d.sample(seed=key, sample_shape=(1000,))
    res[name + "_sample_mean"] = jnp.mean(s.astype(jnp.float32), axis=0).tolist()
    res[name + "_sample_shape"] = list(s.shape)
res["normal_entropy"] = float(dists["normal"].entropy())
res["kl_normal"] = float(tfd.kl_divergence(tfd.Normal(0.0, 1.0), tfd.Normal(1.0, 2.0)))
res["mixture_log_prob"] = tfd.MixtureSameFamily(
    tfd.Categorical(probs=jnp.array([0.3, 0.7])),
    tfd.Normal(jnp.array([-1.0, 1.0]), jnp.array([0.5, 0.8]))).log_prob(x).tolist()

lognormal = tfd.TransformedDistribution(tfd.Normal(0.0, 1.0), tfb.Exp())
res["lognormal_log_prob"] = lognormal.log_prob(jnp.array([0.5, 1.0, 3.0])).tolist()
res["softplus_inverse"] = tfb.Softplus().inverse(jnp.array([0.5, 2.0])).tolist()


def nll(loc, scale):
  return -jnp.sum(tfd.Normal(loc, scale).log_prob(x))


g = jax.jit(jax.grad(nll, argnums=(0, 1)))(0.1, 1.5)
res["grad_nll"] = [float(g[0]), float(g[1])]
res["vmap_log_prob"] = jax.vmap(lambda m: tfd.Normal(m, 1.0).log_prob(0.0))(x).tolist()
print("RESULT " + json.dumps(res))
