"""pyjax.typing (as jax.typing): static type annotations for arrays and dtypes.

``ArrayLike``: anything safe to convert implicitly to an Array (``pyjax.Array``,
``numpy.ndarray``, Python and NumPy scalars).  ``DTypeLike``: anything that names a dtype
(``'float32'``, ``np.float32``, ``np.dtype('float32')``, ``jnp.float32``).  Both are
``typing.Union``\\ s, usable in annotations and, on Python >= 3.10, in ``isinstance``.
"""
from pyjax._src.typing import (  # noqa: F401
    ArrayLike as ArrayLike,
    DTypeLike as DTypeLike,
)
