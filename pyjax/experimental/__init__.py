"""pyjax.experimental (as jax.experimental).  Export file: add your import lines."""
from pyjax._src.callback import io_callback  # noqa: F401
from pyjax._src.hijax import cur_qdd  # noqa: F401
