"""pyjax.version (as jax.version): ``__version__``, ``_version`` and ``__version_info__``.

Differs from JAX: these are pyjax's own release numbers; ``_jax_version`` names the JAX
release whose API pyjax follows.  There is no jaxlib, hence no ``_minimum_jaxlib_version``.
"""
from pyjax._src.version import (  # noqa: F401
    __version__, __version_info__, _version, _version_as_tuple, _jax_version,
    _jax_version_info)
