"""``jax.experimental.mesh_utils`` (see ``pyjax._src.mesh_utils``)."""
from pyjax._src.mesh_utils import (  # noqa: F401
    create_device_mesh, create_hybrid_device_mesh, device_kind_handler_dict)
