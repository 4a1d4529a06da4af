"""Module-level deprecation helper (JAX's ``jax._src.deprecations``).

A public module lists names JAX has deprecated or removed in a ``_deprecations`` dict:
``name -> (message, value)``.  ``deprecation_getattr`` makes the module's ``__getattr__``
warn (``DeprecationWarning``) and return ``value`` for a deprecated name, and raise
``AttributeError(message)`` for a removed one (``value`` is None), as JAX 0.10 does.
"""
from __future__ import annotations

import functools
import warnings


def deprecation_getattr(module, deprecations):
  """A module ``__getattr__`` serving the deprecated names in ``deprecations``."""

  @functools.cache
  def getattr(name):   # noqa: A001 (a module __getattr__)
    if name in deprecations:
      message, value = deprecations[name]
      if value is None:
        raise AttributeError(message)
      warnings.warn(message, DeprecationWarning, stacklevel=2)
      return value
    raise AttributeError(f"module {module!r} has no attribute {name!r}")

  return getattr
