"""pyjax.dtypes (as jax.dtypes): dtype utilities and extended dtypes."""
from pyjax._src.dtypes import (  # noqa: F401
    canonicalize_dtype, issubdtype, result_type, float0, TypePromotionError,
    finfo, iinfo, promote_types, extended, prng_key, itemsize_bits, scalar_type_of)
from pyjax._src.dtypes import bfloat16_type as bfloat16  # noqa: F401  (the scalar type, as JAX's)


def is_weakly_typed(x):
  from pyjax._src.dtypes import is_weakly_typed as f
  return f(x)
