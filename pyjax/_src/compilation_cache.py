"""The persistent compilation cache's public controls, mapped onto pyjax's disk cache of
compiled native libraries (``backends/cpu/compiler/native/cache.py``: ``<dir>/pyjax/cpu-<format>``
under the configured directory)."""
from __future__ import annotations

import sys

from pyjax._src.config import config

__all__ = ["set_cache_dir", "reset_cache", "is_initialized", "initialize_cache"]


def set_cache_dir(path):
  """Set the persistent compilation cache directory (``jax_compilation_cache_dir``):
  native code built for jitted functions is saved under ``path`` and loaded from there
  before compiling.  As in JAX, the cache is trusted: do not share it with users you do not
  trust.  Differs from JAX: ``$PYJAX_CACHE_DIR``, when set, takes precedence."""
  config.update("jax_compilation_cache_dir", None if path is None else str(path))


def initialize_cache(path):
  """Deprecated alias of ``set_cache_dir`` (as in JAX)."""
  set_cache_dir(path)


def is_initialized():
  """Deprecated (as in JAX): whether a persistent cache directory is configured."""
  return config.read("jax_compilation_cache_dir") is not None


def reset_cache():
  """Return the cache to its uninitialized state: the in-memory table of loaded libraries
  is emptied, so the next compilation looks at the (possibly newly configured) directory
  again.  Files already on disk are kept, as in JAX."""
  cache = sys.modules.get("pyjax._src.backends.cpu.compiler.native.cache")
  if cache is not None:
    cache.clear_memory()
