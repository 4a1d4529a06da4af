"""``jax.interpreters.batching``: batching rule tables and helpers."""
from pyjax._src.interpreters.batching import (  # noqa: F401
    AxisData, BatchTracer, bdim_at_front, broadcast, defbroadcasting, defvectorized,
    matchaxis, moveaxis, not_mapped, primitive_batchers)
from pyjax._src.interpreters.batching import BatchInterpreter as BatchTrace  # noqa: F401
from pyjax._src.interpreters.batching_api import (  # noqa: F401
    axis_primitive_batchers, defreducer, fancy_primitive_batchers)
