"""optimistix quick start: Newton root find of tanh(y + 1) - y, and a minimisation."""
import json

import jax.numpy as jnp
import optimistix as optx


def fn(y, args):
  a, b = args
  return jnp.tanh(y + a) - b * y


sol = optx.root_find(fn, optx.Newton(rtol=1e-8, atol=1e-8), jnp.array([0.5, 1.0]),
                     args=(1.0, 1.0))
rosen = lambda y, args: (1 - y[0]) ** 2 + 100 * (y[1] - y[0] ** 2) ** 2
sol2 = optx.minimise(rosen, optx.BFGS(rtol=1e-6, atol=1e-6), jnp.array([-1.0, 1.0]))
print("RESULT " + json.dumps({"root": sol.value.tolist(), "residual": fn(sol.value, (1.0, 1.0)).tolist(),
                              "min": sol2.value.tolist()}))
