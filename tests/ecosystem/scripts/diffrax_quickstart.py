"""diffrax quick start: solve dy/dt = -k y with Tsit5, and grad through diffeqsolve."""
import json

import diffrax
import jax
import jax.numpy as jnp


def solve(k, y0):
  term = diffrax.ODETerm(lambda t, y, args: -args * y)
  sol = diffrax.diffeqsolve(term, diffrax.Tsit5(), t0=0.0, t1=1.0, dt0=0.1, y0=y0, args=k,
                            saveat=diffrax.SaveAt(ts=jnp.array([0.5, 1.0])),
                            stepsize_controller=diffrax.PIDController(rtol=1e-5, atol=1e-5))
  return sol.ys


y0 = jnp.array([1.0, 2.0])
ys = solve(0.7, y0)
g = jax.grad(lambda k: solve(k, y0)[-1].sum())(0.7)
print("RESULT " + json.dumps({"ys": ys.tolist(), "grad": float(g),
                              "exact": (y0 * jnp.exp(-0.7)).tolist()}))
