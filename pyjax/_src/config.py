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
  __slots__ = ("name", "value", "default", "help", "on_update", "in_trace_state", "parser",
               "policy")

  def __init__(self, name, default, help="", on_update=None, in_trace_state=False,
               parser=None, policy=None):
    self.name, self.value, self.default, self.help = name, default, default, help
    self.on_update = on_update
    self.in_trace_state = in_trace_state
    self.parser = parser   # JAX's value check/conversion (config_names)
    self.policy = policy   # None: implemented; else config_names.FREE/DEFAULT/honoured values


class Config:
  """Holds every flag; attribute access reads the current value (``config.jax_enable_x64``)."""

  def __init__(self):
    object.__setattr__(self, "_flags", {})
    object.__setattr__(self, "_trace_state_names", [])

  def define(self, name, default, help="", on_update=None, in_trace_state=False,
             parser=None, policy=None, in_context=False):
    """``in_trace_state``: the flag is part of jit's cache key on its own; ``in_context``:
    a rarely changed debugging flag, part of the key through one combined value
    (``pyjax_trace_context``), so the jit hit path reads one value for all of them."""
    self._flags[name] = _Flag(name, default, help, on_update, in_trace_state, parser, policy)
    if in_context:
      _context_names.append(name)
    if in_trace_state:
      self._trace_state_names.append(name)
    if on_update is not None:
      on_update(default)

  def update(self, name, value):
    flag = self._flags.get(name)
    if flag is None:
      raise AttributeError(f"Unrecognized config option: {name}")
    if flag.parser is not None:
      value = flag.parser(value)
    if flag.policy is not None:
      _check_policy(flag, value)
    flag.value = value
    if flag.on_update is not None:
      flag.on_update(value)
    if name in _context_names:
      _refresh_context()

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

  @property
  def values(self):
    """Every option's current value, by name (a dict, as JAX's ``config.values``)."""
    return {n: f.value for n, f in self._flags.items()}

  @property
  def x64_enabled(self):
    return bool(self._flags["jax_enable_x64"].value)

  def parse_flags_with_absl(self):
    """Apply ``--jax_<option>=<value>`` command-line arguments (``sys.argv``) to the
    options, as JAX does through absl (pyjax parses them itself: booleans accept
    true/false/1/0, other values are converted to the option's default's type)."""
    import sys
    for arg in sys.argv[1:]:
      if not arg.startswith("--"):
        continue
      name, eq, raw = arg[2:].partition("=")
      flag = self._flags.get(name)
      if flag is None:
        if name.startswith("nojax_") and name[2:] in self._flags and not eq:
          self.update(name[2:], False)
        continue
      if not eq:
        if isinstance(flag.default, bool):
          self.update(name, True)
        continue
      d = flag.default
      if isinstance(d, bool):
        v = raw.strip().lower() in ("1", "true", "t", "yes", "y", "on")
      elif isinstance(d, int) and not isinstance(d, bool) and not hasattr(d, "name"):
        v = int(raw)
      elif isinstance(d, float):
        v = float(raw)
      else:
        v = raw
      self.update(name, v)

  config_with_absl = parse_flags_with_absl


_context_names = []   # the debugging flags combined into ``pyjax_trace_context``


def _refresh_context():
  f = config._flags.get("pyjax_trace_context")
  if f is not None:
    f.value = tuple(config._flags[n].value for n in _context_names)


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
# read by every eager primitive (runtime.dispatch): mirrored into a module global
debug_special = False


def _set_debug_special(_):
  global debug_special
  f = config._flags
  debug_special = any(bool(f[n].value) for n in
                      ("jax_debug_nans", "jax_debug_infs", "jax_no_execution") if n in f)


config.define("jax_debug_nans", _env_bool("JAX_DEBUG_NANS"),
              "Raise FloatingPointError when an operation produces a NaN.",
              on_update=_set_debug_special, in_context=True)
config.define("jax_debug_infs", _env_bool("JAX_DEBUG_INFS"),
              "Raise FloatingPointError when an operation produces an infinity.",
              on_update=_set_debug_special, in_context=True)
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


# --- every JAX option, parsed and checked as JAX does (the table: config_names) -------------
from pyjax._src import config_names as _names  # noqa: E402


def _check_policy(flag, value):
  p = flag.policy
  if p == _names.FREE:
    return
  ok = (value == flag.default) if p == _names.DEFAULT else (value in p)
  if not ok:
    raise _names.not_honoured(flag.name, value, p)


_log_handler = None


def _pyjax_logger_name(module):
  module = module.strip()
  if module == "jax" or module.startswith("jax."):
    return "py" + module
  return module


def _ensure_log_handler():
  """A stderr handler on the ``pyjax`` logger (as JAX adds one to ``jax``'s when logging is
  configured through its flags)."""
  global _log_handler
  import logging
  if _log_handler is None:
    _log_handler = logging.StreamHandler()
    _log_handler.setFormatter(logging.Formatter(
        "%(levelname)s:%(asctime)s:%(name)s:%(lineno)s: %(message)s"))
    logging.getLogger("pyjax").addHandler(_log_handler)
  return _log_handler


def _set_logging_level(level):
  import logging
  if level is None or level == "NOTSET":
    logging.getLogger("pyjax").setLevel(logging.NOTSET)
    return
  _ensure_log_handler()
  logging.getLogger("pyjax").setLevel(getattr(logging, level))


_debug_loggers = []


def _set_debug_log_modules(modules):
  import logging
  for lg, prev in _debug_loggers:
    lg.setLevel(prev)
  _debug_loggers.clear()
  if not modules:
    return
  _ensure_log_handler()
  for m in modules.split(","):
    if m.strip():
      lg = logging.getLogger(_pyjax_logger_name(m))
      _debug_loggers.append((lg, lg.level))
      lg.setLevel(logging.DEBUG)


config.define("jax_logging_level", os.environ.get("JAX_LOGGING_LEVEL", "NOTSET"),
              "Level of pyjax's loggers (JAX's names: NOTSET, DEBUG, INFO, ...).",
              on_update=_set_logging_level)
config.define("jax_debug_log_modules", os.environ.get("JAX_DEBUG_LOG_MODULES", ""),
              "Comma-separated modules logged at DEBUG ('jax.' names map to 'pyjax.').",
              on_update=_set_debug_log_modules)
def _set_check_leaks(v):
  from pyjax._src import tracer_leaks   # (imports core: loaded on first use)
  tracer_leaks.set_enabled(bool(v))


config.define("jax_check_tracer_leaks", _env_bool("JAX_CHECK_TRACER_LEAKS"),
              "Raise when a tracer outlives its transformation (tracer_leaks.py).")
config._flags["jax_check_tracer_leaks"].on_update = _set_check_leaks   # (not at define)
config.define("jax_debug_key_reuse", _env_bool("JAX_DEBUG_KEY_REUSE"),
              "Raise KeyReuseError when a typed PRNG key is consumed twice.", in_context=True)
# read where host data enters eager primitives and jit: mirrored into module globals
h2d_guarded = False   # host-to-device transfers are logged or disallowed
d2d_guarded = False


def _set_transfer_guards(_):
  global h2d_guarded, d2d_guarded
  f = config._flags

  def lv(kind):
    v = f[f"jax_transfer_guard_{kind}"].value if f"jax_transfer_guard_{kind}" in f else None
    return v if v is not None else f["jax_transfer_guard"].value
  h2d_guarded = lv("host_to_device") not in (None, "allow")
  d2d_guarded = lv("device_to_device") not in (None, "allow")


for _n in ("jax_transfer_guard", "jax_transfer_guard_host_to_device",
           "jax_transfer_guard_device_to_host", "jax_transfer_guard_device_to_device"):
  config.define(_n, os.environ.get(_n.upper()) or None, "Transfer guard level.",
                on_update=_set_transfer_guards, in_context=True)
config.define("jax_explicit_x64_dtypes", _names.ExplicitX64Mode.WARN,
              "WARN or ERROR for explicitly requested 64-bit dtypes while x64 is disabled.",
              in_context=True)
# read where keys are created (random/keys.py); part of jit's cache key, as in JAX
config.define("jax_random_seed_offset", int(os.environ.get("JAX_RANDOM_SEED_OFFSET", "0")),
              "Offset added to every PRNG seed (jax.random.key / PRNGKey).", in_context=True)
config.define("jax_no_tracing", _env_bool("JAX_NO_TRACING"),
              "Raise RuntimeError when a jit-compiled function would be traced.")
config.define("jax_no_execution", _env_bool("JAX_NO_EXECUTION"),
              "Raise RuntimeError when a computation would be executed.",
              on_update=_set_debug_special, in_context=True)
_names.define_all(config)
config.define("pyjax_trace_context", (),
              "pyjax's own: the values of the debugging flags that change what a traced "
              "program does (debug_nans/infs, transfer guards, key reuse, ...), one entry of "
              "jit's cache key.", in_trace_state=True)
_refresh_context()
# pyjax's own compatibility options (not in JAX 0.10): only their defaults are honoured
config._flags["jax_dynamic_shapes"].policy = _names.DEFAULT
config._flags["jax_array"].policy = _names.DEFAULT


class _NoDefault:
  def __repr__(self):
    return "<no default>"


_no_default = _NoDefault()


class State:
  """A config option usable as a context manager or decorator, as JAX's config states:
  ``with jax.debug_nans(True): ...``; ``.value`` reads the option.  Differs from JAX: the
  value set by the context manager is process-wide while the context is active (JAX's is
  thread-local)."""
  def __init__(self, name, cm_default=_no_default):
    self._name = name
    self._cm_default = cm_default
    self.__name__ = name[4:] if name.startswith("jax_") else name
    self.__doc__ = f"Context manager for `{name}` config option.\n\n{config._flags[name].help}"

  @property
  def name(self):
    return self._name

  @property
  def value(self):
    return config.read(self._name)

  def __bool__(self):
    raise TypeError("bool() not supported for instances of type 'State' "
                    "(did you mean to use 'State.value' instead?)")

  def __call__(self, new_val=_no_default):
    return _StateContext(self, new_val)

  def __repr__(self):
    return f"<State {self._name}={self.value!r}>"


class _StateContext:
  __slots__ = ("state", "new_val", "prev")

  def __init__(self, state, new_val):
    self.state = state
    if new_val is _no_default:
      if state._cm_default is _no_default:
        raise TypeError(f"Context manager for {state.__name__} config option requires an "
                        "argument representing the new value for the config option.")
      new_val = state._cm_default
    parser = config._flags[state._name].parser
    self.new_val = parser(new_val) if parser is not None else new_val

  def __enter__(self):
    self.prev = config.read(self.state._name)
    config.update(self.state._name, self.new_val)

  def __exit__(self, *exc):
    config.update(self.state._name, self.prev)

  def __call__(self, func):
    import functools

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
      with _StateContext(self.state, self.new_val):
        return func(*args, **kwargs)
    return wrapper


def _bool_state(name):
  return State(name, True)


enable_checks = _bool_state("jax_enable_checks")
enable_x64 = _bool_state("jax_enable_x64")
debug_key_reuse = _bool_state("jax_debug_key_reuse")
check_tracer_leaks = _bool_state("jax_check_tracer_leaks")
checking_leaks = check_tracer_leaks
enable_custom_prng = _bool_state("jax_enable_custom_prng")
softmax_custom_jvp = _bool_state("jax_softmax_custom_jvp")
debug_nans = _bool_state("jax_debug_nans")
debug_infs = _bool_state("jax_debug_infs")
log_compiles = _bool_state("jax_log_compiles")
no_tracing = _bool_state("jax_no_tracing")
no_execution = _bool_state("jax_no_execution")
explain_cache_misses = _bool_state("jax_explain_cache_misses")
default_matmul_precision = State("jax_default_matmul_precision")
default_prng_impl = State("jax_default_prng_impl")
numpy_dtype_promotion = State("jax_numpy_dtype_promotion")
numpy_rank_promotion = State("jax_numpy_rank_promotion")
allow_f16_reductions = _bool_state("jax_allow_f16_reductions")
jax2tf_associative_scan_reductions = _bool_state("jax2tf_associative_scan_reductions")
legacy_prng_key = State("jax_legacy_prng_key")
threefry_partitionable = _bool_state("jax_threefry_partitionable")
array_garbage_collection_guard = State("jax_array_garbage_collection_guard")
transfer_guard_host_to_device = State("jax_transfer_guard_host_to_device")
transfer_guard_device_to_device = State("jax_transfer_guard_device_to_device")
transfer_guard_device_to_host = State("jax_transfer_guard_device_to_host")
remove_size_one_mesh_axis_from_type = _bool_state("jax_remove_size_one_mesh_axis_from_type")
thread_guard = _bool_state("jax_thread_guard")
auto_pcast = _bool_state("jax_auto_pcast")
explicit_x64_dtypes = State("jax_explicit_x64_dtypes")


class transfer_guard:  # noqa: N801 (JAX's name)
  """Context manager (or decorator) setting the transfer guard level of every kind of
  transfer (host-to-device, device-to-host, device-to-device): 'allow', 'log',
  'disallow', 'log_explicit' or 'disallow_explicit'.  Process-wide while active (JAX's
  is thread-local)."""

  _names = ("jax_transfer_guard", "jax_transfer_guard_host_to_device",
            "jax_transfer_guard_device_to_device", "jax_transfer_guard_device_to_host")

  def __init__(self, new_val):
    self.new_val = config._flags["jax_transfer_guard"].parser(new_val)
    self.prev = None

  def __enter__(self):
    self.prev = [config.read(n) for n in self._names]
    for n in self._names:
      config.update(n, self.new_val)

  def __exit__(self, *exc):
    for n, v in zip(self._names, self.prev):
      config.update(n, v)

  def __call__(self, func):
    import functools

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
      with transfer_guard(self.new_val):
        return func(*args, **kwargs)
    return wrapper
