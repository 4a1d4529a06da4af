"""pyjax's version, in one place (``pyjax.version``, ``pyjax.__version__``)."""
from __future__ import annotations

_version = "0.1.0"
__version__ = _version

# The JAX release whose documented API pyjax follows.
_jax_version = "0.10.2"


def _version_as_tuple(version_str: str) -> tuple[int, ...]:
  """``"0.10.2"`` -> ``(0, 10, 2)``; a suffix such as ``.dev20260101+abc`` is dropped."""
  parts = []
  for p in version_str.split("+")[0].split("."):
    if not p.isdigit():
      break
    parts.append(int(p))
  return tuple(parts)


__version_info__ = _version_as_tuple(__version__)
_jax_version_info = _version_as_tuple(_jax_version)
