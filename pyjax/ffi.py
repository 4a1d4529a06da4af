"""``jax.ffi``: calling C functions through pyjax's own FFI call-frame ABI.  See
``pyjax._src.ffi`` and ``docs/ffi.md``."""
from pyjax._src.ffi import (  # noqa: F401
    ffi_call,
    include_dir,
    pycapsule,
    register_ffi_target,
    register_ffi_type_id,
)
