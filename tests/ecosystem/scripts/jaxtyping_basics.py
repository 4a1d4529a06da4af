"""jaxtyping: array annotations checked with isinstance inside @jaxtyped (shared
dimension sizes), on concrete arrays and on tracers under jit/vmap (plain JAX code;
prints RESULT <json>)."""
import json

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int, PRNGKeyArray, Shaped, jaxtyped

result = {}


@jaxtyped(typechecker=None)
def matmul(a, b):
  ok_a = isinstance(a, Float[Array, "n k"])
  ok_b = isinstance(b, Float[Array, "k m"])
  out = a @ b
  ok_out = isinstance(out, Float[Array, "n m"])
  return out, (ok_a and ok_b and ok_out)


a = jnp.ones((2, 3))
b = jnp.ones((3, 4))
out, ok = matmul(a, b)
result["matmul_ok"] = bool(ok)


@jaxtyped(typechecker=None)
def same_k(a, b):
  return isinstance(a, Float[Array, "n k"]) and isinstance(b, Float[Array, "k m"])


result["k_mismatch"] = bool(same_k(a, jnp.ones((2, 4))))
result["k_match"] = bool(same_k(a, b))
_, ok_jit = jax.jit(matmul)(a, b)
result["matmul_jit"] = bool(ok_jit)
result["vmap"] = bool(jax.vmap(lambda x: jnp.asarray(same_k(x[None], b)))(a).all())

result["isinstance"] = {
    "float32": isinstance(jnp.zeros(3), Float[Array, "3"]),
    "int_as_float": isinstance(jnp.zeros(3, jnp.int32), Float[Array, "3"]),
    "int32": isinstance(jnp.zeros(3, jnp.int32), Int[Array, "_"]),
    "shaped_any": isinstance(jnp.zeros((2, 2)), Shaped[Array, "..."]),
    "wrong_rank": isinstance(jnp.zeros((2, 2)), Float[Array, "n"]),
    "numpy_not_jax": isinstance(np.zeros(3, np.float32), Float[Array, "3"]),
    "key": isinstance(jax.random.key(0), PRNGKeyArray),
    "legacy_key_not_typed": isinstance(jax.random.PRNGKey(0), PRNGKeyArray),
    "tracer": bool(jax.jit(lambda x: jnp.asarray(isinstance(x, Float[Array, "2"])))(
        jnp.ones(2))),
}
print("RESULT " + json.dumps(result))
