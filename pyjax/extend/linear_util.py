"""``jax.extend.linear_util``: wrapped functions and their transformations."""
from pyjax._src.linear_util import (  # noqa: F401
    StoreException, WrappedFun, cache, merge_linear_aux, transformation,
    transformation2, transformation_with_aux, transformation_with_aux2, wrap_init)
