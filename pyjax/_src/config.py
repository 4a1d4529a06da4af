"""Configuration flags (leaf module).

``pyjax.config.update(name, value)`` mirrors ``jax.config.update``.  Flags that change
the meaning of a traced program (x64, default device, ...) are part of jit's cache key;
``Config.trace_state`` returns a tuple of them.
"""
from __future__ import annotations

import os


def _env_bool(name, default=False):
  v = os.environ.get(name)
  if v is None:
    return default
  return v.strip().lower() in ("1", "true", "yes", "on")


class _Flag:
  __slots__ = ("name", "value", "default", "help", "on_update", "in_trace_state")

  def __init__(self, name, default, help="", on_update=None, in_trace_state=False):
    self.name, self.value, self.default, self.help = name, default, default, help
    self.on_update = on_update
    self.in_trace_state = in_trace_state


class Config:
  """Holds every flag; attribute access reads the current value (``config.jax_enable_x64``)."""

  def __init__(self):
    object.__setattr__(self, "_flags", {})
    object.__setattr__(self, "_trace_state_names", [])

  def define(self, name, default, help="", on_update=None, in_trace_state=False):
    self._flags[name] = _Flag(name, default, help, on_update, in_trace_state)
    if in_trace_state:
      self._trace_state_names.append(name)
    if on_update is not None:
      on_update(default)

  def update(self, name, value):
    flag = self._flags.get(name)
    if flag is None:
      raise AttributeError(f"Unrecognized config option: {name}")
    flag.value = value
    if flag.on_update is not None:
      flag.on_update(value)

  def read(self, name):
    return self._flags[name].value

  def __getattr__(self, name):
    flags = object.__getattribute__(self, "_flags")
    if name in flags:
      return flags[name].value
    raise AttributeError(f"Unrecognized config option: {name}")

  def __setattr__(self, name, value):
    raise AttributeError("Use config.update(name, value) to change a flag.")

  def trace_state(self):
    """The flags that change what a traced program means (part of jit's cache key)."""
    f = self._flags
    return tuple(f[n].value for n in self._trace_state_names)

  def values(self):
    return {n: f.value for n, f in self._flags.items()}


config = Config()

# x64 is read on the eager hot path, so it is mirrored into a module global.
x64_enabled = False


def _set_x64(v):
  global x64_enabled
  x64_enabled = bool(v)


config.define("jax_enable_x64", _env_bool("JAX_ENABLE_X64"),
              "Enable 64-bit types (int64, float64, complex128).",
              on_update=_set_x64, in_trace_state=True)
config.define("jax_platforms", os.environ.get("JAX_PLATFORMS") or os.environ.get("JAX_PLATFORM_NAME"),
              "Comma-separated list of platform names to initialize.")
config.define("jax_num_cpu_devices", int(os.environ.get("JAX_NUM_CPU_DEVICES", os.environ.get("PYJAX_NUM_CPU_DEVICES", "-1"))),
              "Number of CPU devices (must be set before the first use of devices).")
# read on the eager hot path: mirrored into a module global
default_device_flag = None


def _set_default_device(v):
  global default_device_flag
  default_device_flag = v


config.define("jax_default_device", None, "Default device for uncommitted computations.",
              on_update=_set_default_device, in_trace_state=True)
config.define("jax_numpy_rank_promotion", os.environ.get("JAX_NUMPY_RANK_PROMOTION", "allow"),
              "allow, warn or raise on implicit rank promotion.", in_trace_state=True)
config.define("jax_numpy_dtype_promotion", os.environ.get("JAX_NUMPY_DTYPE_PROMOTION", "standard"),
              "standard or strict dtype promotion.", in_trace_state=True)
config.define("jax_default_matmul_precision", None, "Default precision for matmuls.",
              in_trace_state=True)
config.define("jax_disable_jit", _env_bool("JAX_DISABLE_JIT"), "Run jitted functions eagerly.")
config.define("jax_log_compiles", _env_bool("JAX_LOG_COMPILES"), "Log each compilation.")
config.define("jax_explain_cache_misses", _env_bool("JAX_EXPLAIN_CACHE_MISSES"),
              "Explain why jit retraced.")
config.define("jax_debug_nans", _env_bool("JAX_DEBUG_NANS"), "Raise on NaN outputs.")
config.define("jax_debug_infs", _env_bool("JAX_DEBUG_INFS"), "Raise on inf outputs.")
config.define("jax_threefry_partitionable", True, "Threefry bit generation scheme.",
              in_trace_state=True)
config.define("jax_default_prng_impl", "threefry2x32", "Default PRNG implementation.",
              in_trace_state=True)
config.define("jax_compilation_cache_dir", os.environ.get("JAX_COMPILATION_CACHE_DIR"),
              "Directory of the persistent compilation cache.")
config.define("jax_dynamic_shapes", False, "Unsupported; accepted for compatibility.")
config.define("jax_array", True, "Always true; accepted for compatibility.")

# read on every asynchronous dispatch: mirrored into a module global
cpu_async_dispatch = True


def _set_cpu_async_dispatch(v):
  global cpu_async_dispatch
  cpu_async_dispatch = bool(v)


config.define("jax_cpu_enable_async_dispatch", _env_bool("JAX_CPU_ENABLE_ASYNC_DISPATCH", True),
              "Run natively compiled jitted computations on the device's stream (a worker "
              "thread) and return at once; reading a value waits.",
              on_update=_set_cpu_async_dispatch)
