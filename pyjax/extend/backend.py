"""``jax.extend.backend``: the runtime's backends (clients) and default device."""
from pyjax._src.runtime.devices import default_device as get_default_device  # noqa: F401
from pyjax._src.xla_bridge import backends, get_backend  # noqa: F401
