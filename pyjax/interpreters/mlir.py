"""``jax.interpreters.mlir``: lowering registration (``register_lowering``,
``lower_fun``); see ``pyjax._src.interpreters.mlir`` for how pyjax honours it."""
from pyjax._src.interpreters.mlir import (  # noqa: F401
    _lowerings, _platform_specific_lowerings, lower_fun, register_lowering)
