"""jax.experimental.sparse.ad: sparse-aware differentiation (re-exports)."""
from pyjax._src.sparse.ad import grad, jacfwd, jacobian, jacrev, value_and_grad  # noqa: F401
