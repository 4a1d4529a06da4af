"""Every ``jax_*`` configuration option of JAX 0.10, with its type and what pyjax does with it
(leaf module; ``config.py`` calls ``define_all`` once at import).

Each option is one of:

* implemented: pyjax does what JAX does (the flag is defined in ``config.py`` or read by the
  module that implements it);
* ``FREE``: every valid value is accepted because it has no observable effect in pyjax on CPU
  (XLA tuning knobs, GPU-only lowering choices, logging of stages pyjax does not have);
* ``DEFAULT``: only its default value is accepted; setting any other value raises
  ``NotImplementedError`` naming the option (never silently ignored);
* a tuple of the values pyjax honours.

Values are parsed as JAX parses them (same exception classes and messages): booleans are
converted with ``bool``, enums checked against their allowed strings, enum-class options
(``jax_numpy_dtype_promotion``, ``jax_legacy_prng_key``, ...) hold ``enum.StrEnum`` members.
An option's environment variable (its name upper-cased, e.g. ``JAX_DEBUG_NANS``) gives its
initial value.
"""
from __future__ import annotations

import enum
import os

FREE = "free"
DEFAULT = "default"


class LegacyPrngKeyState(enum.StrEnum):
  ALLOW = "allow"
  WARN = "warn"
  ERROR = "error"


class NumpyDtypePromotion(enum.StrEnum):
  STANDARD = "standard"
  STRICT = "strict"


class RuntimeTracebackMode(enum.StrEnum):
  OFF = "off"
  ON = "on"
  FULL = "full"


class ExplicitX64Mode(enum.IntEnum):
  WARN = enum.auto()
  ERROR = enum.auto()
  ALLOW = enum.auto()

  @classmethod
  def _missing_(cls, value):
    if isinstance(value, str):
      return {"warn": cls.WARN, "error": cls.ERROR, "allow": cls.ALLOW}.get(value)
    return None


MATMUL_PRECISIONS = [
    "default", "high", "highest", "bfloat16", "tensorfloat32", "float32",
    "ANY_F8_ANY_F8_F32", "ANY_F8_ANY_F8_F32_FAST_ACCUM", "ANY_F8_ANY_F8_ANY",
    "ANY_F8_ANY_F8_ANY_FAST_ACCUM", "F16_F16_F16", "F16_F16_F32", "BF16_BF16_BF16",
    "BF16_BF16_F32", "BF16_BF16_F32_X3", "BF16_BF16_F32_X6", "BF16_BF16_F32_X9",
    "TF32_TF32_F32", "TF32_TF32_F32_X3", "F32_F32_F32", "F64_F64_F64"]
TRANSFER_GUARD_LEVELS = ["allow", "log", "disallow", "log_explicit", "disallow_explicit"]
LOGGING_LEVELS = ["NOTSET", "DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]
TRACEBACK_FILTERING = ["off", "tracebackhide", "remove_frames", "quiet_remove_frames", "auto"]


# --- parsers (JAX's messages) -----------------------------------------------------------------
def _bool(v):
  return bool(v)


def _int(v):
  if v is not None and not isinstance(v, int):
    raise ValueError(f"new int config value must be None or of type int, got {v} of type "
                     f"{type(v)}")
  return v


def _float(v):
  if v is not None and not isinstance(v, (float, int)):
    raise ValueError(f"new float config value must be None or of type float, got {v} of type "
                     f"{type(v)}")
  return v


def _str(v):
  if not isinstance(v, str):
    raise TypeError(f"new string config value must be of type str, got {v} of type {type(v)}.")
  return v


def _optstr(v):
  if v is not None and not isinstance(v, str):
    raise ValueError(f"new string config value must be None or of type str, got {v} of type "
                     f"{type(v)}.")
  return v


def _enum(values):
  def parse(v):
    if type(v) is not str or v not in values:
      raise ValueError(f"new enum value must be in {values}, got {v} of type {type(v)}.")
    return v
  return parse


def _optenum(values):
  def parse(v):
    if v is not None and (type(v) is not str or v not in values):
      raise ValueError(f"new enum value must be None or in {values}, got {v} of type "
                       f"{type(v)}.")
    return v
  return parse


def _enumcls(cls):
  def parse(v):
    if isinstance(v, str):
      return cls(v)
    if not isinstance(v, cls):
      raise TypeError(f"new enum value must be an instance of {cls}, got {v} of type "
                      f"{type(v)}.")
    return v
  return parse


def _any(v):
  return v


def _platform_name(v):
  return v


# name -> (default, parser, policy, help).  ``None`` policy: implemented (see config.py and
# the module that reads it).
_I = None
OPTIONS = {
    "check_vma": (False, _bool, DEFAULT, "Check varying manual axes in shard_map."),
    "eager_constant_folding": (False, _bool, DEFAULT, "Fold constants while tracing."),
    "jax2tf_associative_scan_reductions": (False, _bool, DEFAULT,
                                           "Lower cumulative reductions as associative scans."),
    "jax2tf_default_native_serialization": (True, _bool, FREE, "jax2tf serialization mode."),
    "jax_allow_f16_reductions": (True, _bool, DEFAULT, "Allow float16 reductions."),
    "jax_array_garbage_collection_guard": (None, _optenum(["allow", "log", "fatal"]),
                                           (None, "allow"),
                                           "What to do when an Array is garbage-collected "
                                           "in a reference cycle."),
    "jax_auto_pcast": (True, _bool, DEFAULT, "Insert pcasts automatically."),
    "jax_backend_target": ("", _str, DEFAULT, "XLA backend target."),
    "jax_bcoo_cusparse_lowering": (False, _bool, FREE, "GPU-only sparse lowering."),
    "jax_captured_constants_report_frames": (0, _int, DEFAULT,
                                             "Frames reported for large captured constants."),
    "jax_captured_constants_warn_bytes": (2000000000, _int, DEFAULT,
                                          "Warn above this many bytes of captured constants."),
    "jax_check_proxy_envs": (True, _bool, FREE, "Check proxy environment variables."),
    "jax_check_static_indices": (False, _bool, DEFAULT, "Check static indices."),
    "jax_check_tracer_leaks": (False, _bool, _I, "Raise when a tracer escapes its trace."),
    "jax_collectives_timeout": (None, _float, FREE,
                                "pyjax: seconds a shard_map/pmap collective waits for every "
                                "device (None: $PYJAX_COLLECTIVES_TIMEOUT, else 60)."),
    "jax_compilation_cache_check_contents": (False, _bool, DEFAULT,
                                             "Verify cache contents against a recompile."),
    "jax_compilation_cache_dir": (None, _optstr, _I, "Persistent compilation cache directory."),
    "jax_compilation_cache_expect_pgle": (False, _bool, FREE, "PGLE-optimized cache entries."),
    "jax_compilation_cache_include_metadata_in_key": (False, _bool, FREE,
                                                      "Include metadata in the cache key."),
    "jax_compilation_cache_max_size": (-1, _int, FREE,
                                       "Most bytes the disk cache holds (LRU eviction); "
                                       "-1: pyjax's bound, $PYJAX_CACHE_MAX_SIZE (1 GiB)."),
    "jax_compiler_detailed_logging_min_ops": (10, _int, FREE, "XLA logging threshold."),
    "jax_compiler_enable_remat_pass": (True, _bool, FREE, "XLA rematerialization pass."),
    "jax_cpu_collectives_implementation": ("gloo", _enum(["gloo", "mpi", "megascale"]), FREE,
                                           "Cross-process CPU collectives."),
    "jax_cpu_enable_async_dispatch": (True, _bool, _I, "Asynchronous dispatch on CPU."),
    "jax_cpu_get_global_topology_timeout_minutes": (5, _int, FREE, "Topology timeout."),
    "jax_cpu_get_local_topology_timeout_minutes": (2, _int, FREE, "Topology timeout."),
    "jax_cross_host_transfer_socket_address": ("", _str, DEFAULT, "Cross-host transfers."),
    "jax_cross_host_transfer_timeout_seconds": (None, _int, DEFAULT, "Cross-host transfers."),
    "jax_cross_host_transfer_transfer_size": (None, _int, DEFAULT, "Cross-host transfers."),
    "jax_cross_host_transport_addresses": ("", _str, DEFAULT, "Cross-host transfers."),
    "jax_cuda_visible_devices": ("all", _str, DEFAULT, "Visible CUDA devices."),
    "jax_custom_vjp3": (False, _bool, DEFAULT, "Experimental custom_vjp implementation."),
    "jax_debug_infs": (False, _bool, _I, "Raise FloatingPointError on inf results."),
    "jax_debug_key_reuse": (False, _bool, _I, "Raise KeyReuseError when a PRNG key is reused."),
    "jax_debug_leaked_clients_on_clear_backends": (False, _bool, FREE, "Debug backend leaks."),
    "jax_debug_log_modules": ("", _str, _I, "Comma-separated modules logged at DEBUG."),
    "jax_debug_nans": (False, _bool, _I, "Raise FloatingPointError on NaN results."),
    "jax_default_device": (None, _any, _I, "Default device."),
    "jax_default_matmul_precision": (None, _optenum(MATMUL_PRECISIONS), _I,
                                     "Default matmul precision."),
    "jax_default_prng_impl": ("threefry2x32", _enum(["threefry2x32", "rbg", "unsafe_rbg"]),
                              _I, "Default PRNG implementation."),
    "jax_disable_bwd_checks": (False, _bool, DEFAULT, "Disable custom_vjp bwd output checks."),
    "jax_disable_jit": (False, _bool, _I, "Run jitted functions eagerly."),
    "jax_disable_most_optimizations": (False, _bool, FREE, "Compile with fewer optimizations."),
    "jax_disable_vmap_shmap_error": (False, _bool, DEFAULT, "vmap of shard_map check."),
    "jax_disallow_mesh_context_manager": (False, _bool, DEFAULT, "Mesh context manager."),
    "jax_distributed_debug": (False, _bool, FREE, "Distributed debug logging."),
    "jax_dump_ir_modes": ("stablehlo", _str, FREE, "IR kinds to dump."),
    "jax_dump_ir_to": ("", _str, DEFAULT, "Dump IR to this directory."),
    "jax_embedded_constants_max_bytes": (32, _int, FREE, "Largest constant embedded in HLO."),
    "jax_enable_checks": (False, _bool, _I, "Type-check every traced jaxpr."),
    "jax_enable_compilation_cache": (True, _bool, DEFAULT, "Persistent compilation cache."),
    "jax_enable_custom_prng": (False, _bool, DEFAULT, "Custom PRNG upgrade."),
    "jax_enable_pgle": (False, _bool, FREE, "Profile-guided latency estimation."),
    "jax_enable_preemption_service": (True, _bool, FREE, "Preemption sync service."),
    "jax_enable_recoverability": (False, _bool, FREE, "Recover from task failures."),
    "jax_enable_x64": (False, _bool, _I, "Enable 64-bit types."),
    "jax_error_checking_behavior_divide": ("ignore", _enum(["ignore", "raise"]), DEFAULT,
                                           "error_check: division by zero."),
    "jax_error_checking_behavior_nan": ("ignore", _enum(["ignore", "raise"]), DEFAULT,
                                        "error_check: NaN."),
    "jax_error_checking_behavior_oob": ("ignore", _enum(["ignore", "raise"]), DEFAULT,
                                        "error_check: out of bounds."),
    "jax_exec_time_optimization_effort": (0.0, _float, FREE, "XLA optimization effort."),
    "jax_experimental_unsafe_xla_runtime_errors": (False, _bool, DEFAULT, "XLA runtime errors."),
    "jax_explain_cache_misses": (False, _bool, _I, "Explain jit cache misses."),
    "jax_explicit_x64_dtypes": (ExplicitX64Mode.WARN, _enumcls(ExplicitX64Mode),
                                (ExplicitX64Mode.WARN, ExplicitX64Mode.ERROR),
                                "WARN or ERROR when an explicit 64-bit dtype is requested "
                                "with x64 disabled (ALLOW is not implemented)."),
    "jax_export_calling_convention_version": (10, _int, DEFAULT, "jax.export version."),
    "jax_export_ignore_forward_compatibility": (False, _bool, DEFAULT, "jax.export check."),
    "jax_force_dcn_cross_host_transfers": (False, _bool, DEFAULT, "Cross-host transfers."),
    "jax_high_dynamic_range_gumbel": (False, _bool, DEFAULT, "Gumbel sampling algorithm."),
    "jax_hlo_source_file_canonicalization_regex": (None, _optstr, FREE, "HLO metadata."),
    "jax_include_debug_info_in_dumps": (True, _bool, FREE, "Debug info in IR dumps."),
    "jax_include_full_tracebacks_in_locations": (True, _bool, FREE, "HLO locations."),
    "jax_legacy_prng_key": (LegacyPrngKeyState.ALLOW, _enumcls(LegacyPrngKeyState), _I,
                            "Raw uint32 keys in jax.random."),
    "jax_log_checkpoint_residuals": (False, _bool, DEFAULT, "Log remat residuals."),
    "jax_log_compiles": (False, _bool, _I, "Log each compilation."),
    "jax_logging_level": ("NOTSET", _enum(LOGGING_LEVELS), _I, "Level of pyjax's loggers."),
    "jax_memory_fitting_effort": (0.0, _float, FREE, "XLA memory fitting effort."),
    "jax_memory_fitting_level": ("O2", _enum(["O0", "O1", "O2", "O3", "UNKNOWN"]), FREE,
                                 "XLA memory fitting level."),
    "jax_mock_gpu_topology": ("", _str, DEFAULT, "Mock GPU topology."),
    "jax_mosaic_allow_hlo": (False, _bool, FREE, "Mosaic HLO."),
    "jax_mutable_array_checks": (True, _bool, DEFAULT, "Ref aliasing checks."),
    "jax_no_execution": (False, _bool, _I, "Disallow execution."),
    "jax_no_tracing": (False, _bool, _I, "Disallow tracing."),
    "jax_num_cpu_devices": (-1, _int, _I, "Number of CPU devices."),
    "jax_numpy_dtype_promotion": (NumpyDtypePromotion.STANDARD, _enumcls(NumpyDtypePromotion),
                                  _I, "standard or strict dtype promotion."),
    "jax_numpy_rank_promotion": ("allow", _enum(["allow", "warn", "raise"]), _I,
                                 "allow, warn or raise on implicit rank promotion."),
    "jax_oneapi_visible_devices": ("all", _str, DEFAULT, "Visible oneAPI devices."),
    "jax_optimization_level": ("UNKNOWN", _enum(["O0", "O1", "O2", "O3", "UNKNOWN"]), FREE,
                               "XLA optimization level."),
    "jax_pallas_enable_debug_checks": (False, _bool, DEFAULT, "Pallas debug checks."),
    "jax_pallas_poison_buffers": (False, _bool, DEFAULT, "Pallas buffer poisoning."),
    "jax_pallas_use_mosaic_gpu": (True, _bool, FREE, "Pallas GPU lowering."),
    "jax_pallas_verbose_errors": (False, _bool, FREE, "Pallas error verbosity."),
    "jax_persistent_cache_enable_xla_caches": ("xla_gpu_per_fusion_autotune_cache_dir", _str,
                                               FREE, "XLA caches."),
    "jax_persistent_cache_min_compile_time_secs": (1.0, _float, FREE,
                                                   "pyjax caches every native compile."),
    "jax_persistent_cache_min_entry_size_bytes": (0, _int, FREE,
                                                  "Smaller native libraries stay off disk."),
    "jax_pgle_aggregation_percentile": (90, _int, FREE, "PGLE."),
    "jax_pgle_profiling_runs": (3, _int, FREE, "PGLE."),
    "jax_pjrt_client_create_options": (None, _optstr, DEFAULT, "PJRT client options."),
    "jax_platform_name": ("", _platform_name, ("", "cpu"), "Deprecated: use jax_platforms."),
    "jax_platforms": (None, _optstr, _I, "Platforms to initialize."),
    "jax_pprint_use_color": (True, _bool, FREE, "Colors in pretty-printed jaxprs."),
    "jax_ragged_dot_use_gpu_pallas_triton_lowering": (False, _bool, FREE, "GPU lowering."),
    "jax_ragged_dot_use_ragged_dot_instruction": (True, _bool, FREE, "GPU lowering."),
    "jax_raise_persistent_cache_errors": (False, _bool, DEFAULT, "Persistent cache errors."),
    "jax_random_seed_offset": (0, _int, _I, "Offset added to every PRNG seed."),
    "jax_refs_to_pins": (False, _bool, DEFAULT, "Refs as pinned memory."),
    "jax_remat3": (False, _bool, DEFAULT, "Experimental remat."),
    "jax_remove_custom_partitioning_ptr_from_cache_key": (False, _bool, FREE, "Cache key."),
    "jax_remove_size_one_mesh_axis_from_type": (False, _bool, DEFAULT, "Mesh axis types."),
    "jax_rocm_visible_devices": ("all", _str, DEFAULT, "Visible ROCm devices."),
    "jax_scan3": (False, _bool, DEFAULT, "Experimental scan."),
    "jax_send_traceback_to_runtime": (RuntimeTracebackMode.OFF, _enumcls(RuntimeTracebackMode),
                                      FREE, "Tracebacks for the XLA runtime."),
    "jax_serialization_version": (0, _int, DEFAULT, "jax.export serialization."),
    "jax_share_binary_between_hosts": (False, _bool, FREE, "Multi-host binaries."),
    "jax_share_binary_between_hosts_timeout_ms": (1200000, _int, FREE, "Multi-host binaries."),
    "jax_softmax_custom_jvp": (False, _bool, DEFAULT, "softmax with a custom JVP."),
    "jax_sort_devices_by_process_index": (True, _bool, FREE, "Device order (one process)."),
    "jax_source_url_schema": (None, _optstr, FREE, "Source links in HLO."),
    "jax_thread_guard": (False, _bool, DEFAULT, "Multi-thread use of devices."),
    "jax_threefry_gpu_kernel_lowering": (False, _bool, FREE, "GPU threefry kernel."),
    "jax_threefry_partitionable": (True, _bool, _I, "Threefry bit generation scheme."),
    "jax_traceback_filtering": ("auto", _enum(TRACEBACK_FILTERING), ("auto", "off"),
                                "pyjax never filters tracebacks ('off' behaviour)."),
    "jax_traceback_in_locations_limit": (100, _int, FREE, "HLO locations."),
    "jax_tracer_error_num_traceback_frames": (5, _int, DEFAULT, "Frames in tracer errors."),
    "jax_transfer_guard": (None, _optenum(TRANSFER_GUARD_LEVELS), _I, "All transfers."),
    "jax_transfer_guard_device_to_device": (None, _optenum(TRANSFER_GUARD_LEVELS), _I,
                                            "Device-to-device transfers."),
    "jax_transfer_guard_device_to_host": (None, _optenum(TRANSFER_GUARD_LEVELS), _I,
                                          "Device-to-host transfers."),
    "jax_transfer_guard_host_to_device": (None, _optenum(TRANSFER_GUARD_LEVELS), _I,
                                          "Host-to-device transfers."),
    "jax_use_direct_linearize": (True, _bool, DEFAULT, "Linearize directly."),
    "jax_use_emit_pipeline_primitive": (False, _bool, DEFAULT, "Pallas pipelines."),
    "jax_use_magma": ("auto", _enum(["off", "on", "auto"]), FREE, "GPU eigendecompositions."),
    "jax_use_shardy_partitioner": (True, _bool, FREE, "XLA partitioner."),
    "jax_use_simplified_jaxpr_constants": (False, _bool, DEFAULT, "Jaxpr constants."),
    "jax_xla_backend": ("", _str, DEFAULT, "XLA backend."),
    "jax_xla_profile_version": (0, _int, FREE, "XLA profile version."),
    "mock_num_gpu_processes": (0, _int, DEFAULT, "Mock GPU processes."),
}


def _env_default(name, default, parser):
  raw = os.environ.get(name.upper())
  if raw is None:
    return default
  if isinstance(default, bool):
    return raw.strip().lower() in ("1", "true", "yes", "on", "t", "y")
  if isinstance(default, enum.Enum):
    try:
      return type(default)(raw)
    except ValueError as e:
      raise ValueError(f'Invalid value "{raw}" for JAX flag {name}') from e
  if isinstance(default, int) or name in ("jax_cross_host_transfer_timeout_seconds",
                                          "jax_cross_host_transfer_transfer_size"):
    return int(raw)
  if isinstance(default, float):
    return float(raw)
  return parser(raw)


def not_honoured(name, value, policy):
  """The NotImplementedError for a value pyjax cannot honour."""
  if policy == DEFAULT:
    allowed = f"only its default value {OPTIONS[name][0]!r} is supported"
  else:
    allowed = "supported values: " + ", ".join(repr(v) for v in policy)
  return NotImplementedError(
      f"pyjax does not implement the config option {name}={value!r} ({allowed}).")


def honours(policy, value):
  if policy is None or policy == FREE:
    return True
  if policy == DEFAULT:
    return None   # the caller compares with the default
  return value in policy


def define_all(config):
  """Give every option of the table a parser and policy: existing flags (defined by
  ``config.py``) get JAX's parser; the others are defined here."""
  for name, (default, parser, policy, help) in OPTIONS.items():
    flag = config._flags.get(name)
    if flag is not None:
      flag.parser = parser
      flag.policy = policy
      if flag.value is not None:
        try:
          flag.value = parser(flag.value)
        except (TypeError, ValueError):
          pass
      continue
    value = _env_default(name, default, parser)
    config.define(name, default, help, parser=parser, policy=policy)
    if value != default:
      config.update(name, value)
