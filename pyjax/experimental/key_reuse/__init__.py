"""pyjax.experimental.key_reuse (as jax.experimental.key_reuse): key reuse checking.

Enable it with ``jax.config.update('jax_debug_key_reuse', True)`` or the
``jax.debug_key_reuse(True)`` context manager; reusing a typed PRNG key then raises
``jax.errors.KeyReuseError``.  As in JAX, this module has no public functions of its own;
the checker is ``pyjax._src.key_reuse`` (its docstring says what is checked).
"""
from pyjax._src.errors import KeyReuseError  # noqa: F401
