"""``jax.export``: save a jitted program as data (pyjax's own versioned jaxpr format, not
StableHLO) and call it again.  See ``pyjax._src.export``."""
from pyjax._src.export._export import (  # noqa: F401
    DisabledSafetyCheck,
    Exported,
    default_export_platform,
    deserialize,
    export,
    maximum_supported_calling_convention_version,
    minimum_supported_calling_convention_version,
    register_namedtuple_serialization,
    register_pytree_node_serialization,
)
