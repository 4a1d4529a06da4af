"""``jax.extend.ifrt_programs``: IFRT program descriptions (pyjax executes none; see
``pyjax._src.ifrt_programs``)."""
from pyjax._src.ifrt_programs import ifrt_programs  # noqa: F401
