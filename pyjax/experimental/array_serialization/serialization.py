"""``jax.experimental.array_serialization.serialization`` (see
``pyjax._src.array_serialization``)."""
from pyjax._src.array_serialization import (  # noqa: F401
    AsyncManager, BarrierTimeoutError, GlobalAsyncCheckpointManager,
    GlobalAsyncCheckpointManagerBase, TS_CONTEXT, async_deserialize, async_serialize,
    get_tensorstore_spec, is_remote_storage, logger, run_deserialization,
    run_serialization, _LimitInFlightBytes, _get_metadata)
