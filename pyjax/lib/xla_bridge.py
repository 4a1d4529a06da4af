"""pyjax.lib.xla_bridge (as older JAX's jax.lib.xla_bridge): backend clients and device
queries (``get_backend().platform``, ``device_count()``, ``process_index()``, ...)."""
from pyjax._src.xla_bridge import (  # noqa: F401
    Client, get_backend, backends, default_backend, devices, local_devices, device_count,
    local_device_count, process_index, process_count, process_indices, host_id, host_ids,
    host_count, get_device_backend, canonicalize_platform)
