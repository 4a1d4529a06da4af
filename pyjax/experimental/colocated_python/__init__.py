"""``jax.experimental.colocated_python`` (single process in pyjax; see
``pyjax._src.colocated_python``)."""
from pyjax._src.colocated_python import (  # noqa: F401
    colocated_cpu_devices, colocated_python, colocated_python_class)
