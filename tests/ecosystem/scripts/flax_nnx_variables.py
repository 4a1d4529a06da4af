"""flax.nnx Variables backed by refs (``ref=True``: jax.new_ref) and by hijax types
(``hijax=True``): eager use, in-place updates, reads and writes under jit, grad."""
import json

import jax
import jax.numpy as jnp
from flax import nnx

x = jnp.ones((4, 3))
res = {}
for mode in ("ref", "hijax"):
  with nnx.var_defaults(**{mode: True}):
    lin = nnx.Linear(3, 2, rngs=nnx.Rngs(0))
    v = nnx.Param(jnp.arange(3.0))
  res[mode + "_type"] = type(lin.kernel).__name__
  res[mode + "_eager"] = float(lin(x).sum())
  v[...] = v[...] * 2 + 1
  res[mode + "_updated"] = v[...].tolist()
  res[mode + "_jit"] = float(jax.jit(lambda x: lin(x).sum())(x))

  @jax.jit
  def bump(d):   # writes a Variable created outside jit
    v[...] = v[...] + d
    return v[...].sum()
  res[mode + "_bump"] = [float(bump(jnp.ones(3))), float(bump(jnp.ones(3)))]
  res[mode + "_after_bump"] = v[...].tolist()
  res[mode + "_grad"] = jax.grad(lambda w: jnp.tanh(x @ w).sum())(lin.kernel[...]).tolist()
print("RESULT " + json.dumps(res))
