"""Colocated Python callables (``jax.experimental.colocated_python.func``)."""
from pyjax._src.colocated_python import (  # noqa: F401
    ColocatedPythonCallable, make_callable)
