"""``jax.profiler``: traces of pyjax's work (Chrome trace-event JSON that Perfetto opens)
and device memory profiles (pprof).  See ``pyjax._src.profiler``."""
from pyjax._src.profiler import (  # noqa: F401
    ProfileOptions,
    StepTraceAnnotation,
    TraceAnnotation,
    annotate_function,
    device_memory_profile,
    save_device_memory_profile,
    start_server,
    start_trace,
    stop_server,
    stop_trace,
    trace,
)
