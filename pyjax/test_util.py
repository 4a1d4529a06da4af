"""pyjax.test_util (as jax.test_util): gradient checks against finite differences."""
from pyjax._src.public_test_util import (  # noqa: F401
    check_grads as check_grads,
    check_jvp as check_jvp,
    check_vjp as check_vjp,
)
