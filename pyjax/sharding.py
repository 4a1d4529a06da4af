"""``jax.sharding``: sharding descriptions and meshes (single-process; see
``pyjax._src.sharding`` for what differs from JAX)."""
from pyjax._src.sharding import (  # noqa: F401
    AbstractMesh, AxisType, Mesh, NamedSharding, PartitionSpec, Sharding,
    SingleDeviceSharding, get_abstract_mesh, get_mesh, set_mesh, use_mesh)
from pyjax._src.jit_sharding import reshard, auto_axes, explicit_axes  # noqa: F401
