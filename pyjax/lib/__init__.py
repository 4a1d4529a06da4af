"""pyjax.lib (as jax.lib): ``__version__`` and, as older JAX had them, ``xla_bridge``
(backend clients and device queries) and ``xla_client`` (the client, device and runtime
error types).

Differs from JAX 0.10, whose ``jax.lib`` holds only ``__version__`` (jaxlib's version):
here ``__version__`` is pyjax's (there is no jaxlib), and the two submodules are kept
because libraries written against older JAX still read them.
"""
from pyjax._src.version import __version__ as __version__  # noqa: F401
from pyjax.lib import xla_bridge, xla_client  # noqa: F401
