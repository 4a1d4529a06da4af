"""pyjax.lib.xla_client (as older JAX's jax.lib.xla_client): the names libraries read --
``Client`` (a backend client), ``Device``, ``XlaRuntimeError`` (pyjax's
``JaxRuntimeError``) and ``_version``."""
from pyjax._src.errors import JaxRuntimeError as XlaRuntimeError  # noqa: F401
from pyjax._src.runtime.devices import Device  # noqa: F401
from pyjax._src.version import _version  # noqa: F401
from pyjax._src.xla_bridge import Client  # noqa: F401
