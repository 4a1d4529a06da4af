"""``jax.distributed``: many processes over MPI (``mpi4py``).

Under an MPI launcher (``mpiexec -n N python prog.py``: MPICH's ``PMI_*``, Open MPI's
``OMPI_*``, PMIx's ``PMIX_*`` environment) ``initialize()`` needs no arguments: the
processes are the ranks of ``MPI.COMM_WORLD``.  Explicit ``coordinator_address`` /
``num_processes`` / ``process_id`` are checked against that world (the size, this rank,
and one coordinator address for all).  ``cluster_detection_method="mpi4py"`` uses mpi4py
without looking at the environment.  There is no coordination service: MPI is the
transport (``runtime/mpi.py``) and the launcher is the coordinator.

After ``initialize``, every process sees every device (``jax.devices()``, ordered by
process), its own in ``jax.local_devices()``; CPU device ids are numbered as JAX numbers
them (process ``p``'s ``i``-th device has id ``p * 2048 + i``).

Differs from JAX: no coordination service (``global_state.client`` stays None and
``coordinator_address`` is only checked), no preemption service, ``local_device_ids`` is
not supported with more than one process, ``initialization_timeout`` and the heartbeat
and shutdown timeouts are not used (the collective deadline, ``jax_collectives_timeout``,
bounds every wait).  Without a launcher, one process may still be "initialized"
(``num_processes=1``).
"""
from __future__ import annotations

import os

_LAUNCHER_VARS = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMI_RANK", "PMIX_RANK",
                  "MPI_LOCALNRANKS", "OMPI_MCA_orte_hnp_uri")

_HOW_TO_LAUNCH = ("launch the program with MPI, e.g. `mpiexec -n 2 python prog.py` "
                  "(pip install \"pyjax[mpi]\" provides mpi4py and MPICH), and call "
                  "jax.distributed.initialize() with no arguments")


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
    self.comm = None

  def initialize(self, coordinator_address=None, num_processes=None, process_id=None,
                 local_device_ids=None, cluster_detection_method=None):
    """Join the MPI world (or record a one-process configuration); see the module
    docstring."""
    if self.initialized:
      raise RuntimeError("distributed.initialize should only be called once.")
    _check_ints(num_processes, process_id)
    use_mpi = cluster_detection_method == "mpi4py" or (
        cluster_detection_method in (None, "auto") and launched_by_mpi())
    if cluster_detection_method not in (None, "auto", "mpi4py", "deactivate"):
      raise ValueError(f"pyjax detects MPI launches only: cluster_detection_method must "
                       f"be None, 'mpi4py' or 'deactivate', got "
                       f"{cluster_detection_method!r}")
    if not use_mpi:
      if coordinator_address is None and num_processes is None and process_id is None:
        raise ValueError("coordinator_address should be defined. No MPI launch was "
                         "detected (no OMPI_*/PMI_* environment): " + _HOW_TO_LAUNCH)
      if (num_processes or 1) != 1 or (process_id or 0) != 0:
        raise RuntimeError(f"jax.distributed.initialize(num_processes={num_processes}, "
                           f"process_id={process_id}) needs the other processes to be "
                           "started by an MPI launcher: " + _HOW_TO_LAUNCH)
      self.coordinator_address = coordinator_address
      self.initialized = True
      return
    self._join_mpi(coordinator_address, num_processes, process_id, local_device_ids)

  def _join_mpi(self, coordinator_address, num_processes, process_id, local_device_ids):
    try:
      from mpi4py import MPI
    except ImportError as e:
      raise RuntimeError("jax.distributed.initialize() under an MPI launcher needs mpi4py "
                         "(pip install \"pyjax[mpi]\")") from e
    from pyjax._src.runtime import devices as _devices
    from pyjax._src.runtime import mpi as _mpi
    if _devices._backends is not None:
      raise RuntimeError("jax.distributed.initialize() must be called before any JAX "
                         "computations are executed.")
    rank, size = MPI.COMM_WORLD.Get_rank(), MPI.COMM_WORLD.Get_size()
    if num_processes is not None and num_processes != size:
      raise ValueError(f"num_processes={num_processes} does not match the MPI world, which "
                       f"has {size} processes (mpiexec -n {size})")
    if process_id is not None and process_id != rank:
      raise ValueError(f"process_id={process_id} does not match this process's MPI rank "
                       f"{rank}")
    if local_device_ids is not None and size > 1:
      raise ValueError("local_device_ids is not supported by pyjax: each process uses its "
                       "own CPU devices (jax_num_cpu_devices)")
    comm = MPI.COMM_WORLD.Dup()
    transport = _mpi.start(comm, MPI)
    try:
      n_local = len(_devices.devices())
      info = transport.allgather_objects((n_local, coordinator_address),
                                         "jax.distributed.initialize")
      addresses = {a for _, a in info if a is not None}
      if len(addresses) > 1:
        raise ValueError(f"the processes were given different coordinator addresses: "
                         f"{sorted(addresses)}")
      _devices._set_processes(rank, [n for n, _ in info])
    except BaseException:
      _mpi.stop()
      comm.Free()
      raise
    self.comm = comm
    self.process_id = rank
    self.num_processes = size
    self.coordinator_address = coordinator_address
    self.initialized = True

  def shutdown(self):
    """Leave the MPI world (after a barrier: every process's messages are delivered)."""
    if self.comm is not None:
      from pyjax._src.runtime import mpi as _mpi
      t = _mpi.world()
      try:
        if t is not None:
          t.allgather_objects(None, "jax.distributed.shutdown")
      finally:
        _mpi.stop()
        self.comm.Free()
        self.comm = None
    self.coordinator_address = None
    self.initialized = False


def _check_ints(num_processes, process_id):
  if process_id is not None and (not isinstance(process_id, int) or process_id < 0):
    raise TypeError(f"process_id must be a nonnegative int. Got process_id={process_id} of "
                    f"type {type(process_id)}.")
  if num_processes is not None and (not isinstance(num_processes, int)
                                    or num_processes <= 0):
    raise TypeError(f"num_processes must be a positive int. Got num_processes="
                    f"{num_processes} of type {type(num_processes)}.")
  if (process_id is not None and num_processes is not None
      and process_id >= num_processes):
    raise ValueError("process_id and num_processes must be nonnegative, with process_id < "
                     f"num_processes. Got process_id={process_id}, "
                     f"num_processes={num_processes}.")


def launched_by_mpi(environ=None):
  """Whether this process was started by an MPI launcher (its environment variables)."""
  env = os.environ if environ is None else environ
  return any(v in env for v in _LAUNCHER_VARS)


global_state = State()


def initialize(coordinator_address=None, num_processes=None, process_id=None,
               local_device_ids=None, cluster_detection_method=None,
               initialization_timeout=300, heartbeat_timeout_seconds=100,
               shutdown_timeout_seconds=300, coordinator_bind_address=None,
               slice_index=None, partition_index=None):
  """Initialize the multi-process runtime over MPI.  Under ``mpiexec -n N`` no argument is
  needed; explicit ones are checked against the MPI world.  Without a launcher only a
  one-process configuration is accepted; no arguments at all is JAX's ``ValueError``,
  with how to launch.  Must run before any computation (JAX's ``RuntimeError``).
  Differs from JAX: MPI instead of a coordination service (see the module docstring)."""
  del (initialization_timeout, heartbeat_timeout_seconds, shutdown_timeout_seconds,
       coordinator_bind_address, partition_index)
  global_state.initialize(coordinator_address, num_processes, process_id,
                          local_device_ids, cluster_detection_method)
  global_state.slice_index = slice_index


def shutdown():
  """Shut the distributed runtime down (a barrier, then the MPI transport is removed)."""
  global_state.shutdown()


def is_initialized():
  """True after ``initialize`` (until ``shutdown``)."""
  return global_state.initialized
