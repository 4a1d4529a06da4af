"""``jax.distributed`` for pyjax's single-process runtime.

pyjax runs one process (``process_index() == 0``, ``process_count() == 1``); there is no
coordination service.  ``global_state`` has JAX's attributes so libraries that read them
(orbax reads ``global_state.process_id`` and ``global_state.client``) see one process and
no distributed client.  ``initialize`` accepts a one-process configuration (and records
it); asking for more than one process raises ``RuntimeError``.

Differs from JAX: no multi-process support, no cluster auto-detection, no preemption
service (``preemption_sync_manager`` stays None).
"""
from __future__ import annotations


class State:
  """The distributed runtime's state (JAX's ``jax._src.distributed.State``)."""

  def __init__(self):
    self.process_id = 0
    self.num_processes = 1
    self.client = None
    self.service = None
    self.preemption_sync_manager = None
    self.coordinator_address = None
    self.slice_index = None
    self.initialized = False

  def initialize(self, coordinator_address=None, num_processes=None, process_id=None,
                 local_device_ids=None, **kwargs):
    """Record a one-process configuration (RuntimeError for any other)."""
    del local_device_ids, kwargs
    if self.initialized:
      raise RuntimeError("distributed.initialize should only be called once.")
    if num_processes is not None and num_processes != 1:
      raise RuntimeError(
          f"pyjax runs a single process; jax.distributed.initialize was asked for "
          f"num_processes={num_processes}")
    if process_id not in (None, 0):
      raise RuntimeError(f"pyjax runs a single process; process_id must be 0, got "
                         f"{process_id}")
    self.coordinator_address = coordinator_address
    self.initialized = True

  def shutdown(self):
    """Forget the configuration."""
    self.coordinator_address = None
    self.initialized = False


global_state = State()


def initialize(coordinator_address=None, num_processes=None, process_id=None,
               local_device_ids=None, cluster_detection_method=None,
               initialization_timeout=300, heartbeat_timeout_seconds=100,
               shutdown_timeout_seconds=300, coordinator_bind_address=None,
               slice_index=None, partition_index=None):
  """Initialize the distributed runtime: in pyjax, a one-process configuration (any
  ``num_processes`` other than None or 1 raises ``RuntimeError``)."""
  del (cluster_detection_method, initialization_timeout, heartbeat_timeout_seconds,
       shutdown_timeout_seconds, coordinator_bind_address, partition_index)
  global_state.initialize(coordinator_address, num_processes, process_id,
                          local_device_ids)
  global_state.slice_index = slice_index


def shutdown():
  """Shut the distributed runtime down (a no-op after a one-process initialize)."""
  global_state.shutdown()


def is_initialized():
  """True after ``initialize`` (until ``shutdown``)."""
  return global_state.initialized
