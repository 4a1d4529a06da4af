"""Serialization of colocated Python callables and specs
(``jax.experimental.colocated_python.serialization``; see
``pyjax._src.colocated_serialization``)."""
import sys as _sys

from pyjax._src import colocated_serialization as _impl

# The module *is* the implementation module, so a library that replaces a reducer here
# (``serialization._reduce_mesh = ...``) changes what ``_serialize`` uses.
_sys.modules[__name__] = _impl
