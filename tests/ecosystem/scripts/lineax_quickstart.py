"""lineax quick start: linear_solve with the default (LU), a PSD operator with Cholesky,
and a gradient through the solve."""
import json

import jax
import jax.numpy as jnp
import lineax as lx

key = jax.random.PRNGKey(0)
a = jax.random.normal(key, (4, 4)) + 4 * jnp.eye(4)
b = jnp.arange(1.0, 5.0)
sol = lx.linear_solve(lx.MatrixLinearOperator(a), b)
spd = a @ a.T
op = lx.MatrixLinearOperator(spd, lx.positive_semidefinite_tag)
sol2 = lx.linear_solve(op, b, solver=lx.Cholesky())
g = jax.grad(lambda m: lx.linear_solve(lx.MatrixLinearOperator(m), b).value.sum())(a)
print("RESULT " + json.dumps({"x": sol.value.tolist(), "x_chol": sol2.value.tolist(),
                              "grad": g.tolist(), "result": str(sol.result == lx.RESULTS.successful)}))
