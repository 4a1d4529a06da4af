"""Transfer guards (``jax.transfer_guard``, ``jax_transfer_guard*`` options).

Levels as JAX: ``allow``; ``log`` (log implicit transfers); ``disallow`` (raise on implicit
transfers, allow explicit ones); ``log_explicit`` (log every transfer); ``disallow_explicit``
(raise on every transfer).  The per-direction options override ``jax_transfer_guard``.

Guarded here:

* host-to-device, implicit: a NumPy value or Python scalar given to an eager primitive or
  to a ``jit``-compiled function, and the arguments of a jax.numpy function decorated with
  ``library_function`` (JAX jits it, so the constants its body makes are not transfers);
* host-to-device, explicit: ``jax.device_put`` of host data;
* device-to-device, explicit: ``jax.device_put`` of an Array onto another device.

Device-to-host reads (``np.asarray``, ``float``, printing) are never guarded on CPU, as in
JAX, whose CPU arrays already live in host memory.  Differs from JAX: array constructors
(``jnp.array(np_value)``, ``jnp.ones``) and implicit device-to-device moves are not guarded.
The error is ``jax.errors.JaxRuntimeError`` with JAX's text; ``log`` writes JAX's text as
a warning on the ``pyjax._src.transfer_guard`` logger.
"""
from __future__ import annotations

import functools
import logging
import threading

from pyjax._src import config as _config
from pyjax._src import errors

_logger = logging.getLogger("pyjax._src.transfer_guard")
_library = threading.local()  # .depth > 0: inside a library_function's body on this thread


def level(kind):
  """The effective level of ``kind`` ('host_to_device', 'device_to_device',
  'device_to_host')."""
  c = _config.config
  v = c.read(f"jax_transfer_guard_{kind}")
  if v is None:
    v = c.read("jax_transfer_guard")
  return v or "allow"


def _check(kind, explicit, describe):
  lv = level(kind)
  if lv == "allow" or (not explicit and getattr(_library, "depth", 0)):
    return
  if lv == "disallow_explicit" or (lv == "disallow" and not explicit):
    raise errors.JaxRuntimeError(
        f"INVALID_ARGUMENT: Disallowed {kind.replace('_', '-')} transfer: {describe()}")
  if lv == "log_explicit" or (lv == "log" and not explicit):
    _logger.warning("%s transfer: %s", kind.replace("_", "-"), describe())


def host_aval(x):
  """The aval a host value (NumPy value or Python scalar) gets on a device."""
  import numpy as np
  from pyjax._src import dtypes
  from pyjax._src.avals import ShapedArray
  if isinstance(x, (np.ndarray, np.generic)):
    return ShapedArray(np.shape(x), dtypes.canonicalize_dtype(x.dtype), False)
  t = type(x) if type(x) in dtypes.python_scalar_types else (
      bool if isinstance(x, bool) else int if isinstance(x, int) else
      float if isinstance(x, float) else complex)
  return ShapedArray((), dtypes.python_scalar_dtype(t), t is not bool)


def host_to_device(aval, device, explicit):
  """Check a host-to-device transfer of a value of ``aval`` onto ``device`` (None: the
  default device)."""
  def describe():
    from pyjax._src.runtime import devices
    from pyjax._src.runtime.array import SingleDeviceSharding
    d = device if device is not None else devices.default_device()
    return f"aval={aval!r}, dst_sharding={SingleDeviceSharding(d)!r}"
  _check("host_to_device", explicit, describe)


def device_to_device(aval, src, dst, explicit):
  """Check a device-to-device copy of a value of ``aval`` from ``src`` to ``dst``."""
  def describe():
    from pyjax._src.runtime.array import SingleDeviceSharding
    return (f"aval={aval!r}, sharding={SingleDeviceSharding(src)!r}, "
            f"dst_sharding={SingleDeviceSharding(dst)!r}")
  _check("device_to_device", explicit, describe)


def library_function(fn=None, *, dynamic=()):
  """Decorate a jax.numpy function that JAX runs as one jitted computation: its host-array
  arguments (NumPy values) are checked as implicit transfers when it is called eagerly, as
  JAX transfers a jitted function's arguments; the constants its body makes from Python
  scalars (an element count, ``0.5``, ``inf``) are not, because under JAX they are literals
  of the compiled program.  Python scalar arguments are checked only when named in
  ``dynamic`` (JAX traces them, e.g. ``q`` of quantile; others, such as ``axis``, are
  static)."""
  if fn is None:
    return functools.partial(library_function, dynamic=dynamic)
  sig = None

  @functools.wraps(fn)
  def wrapper(*args, **kwargs):
    nonlocal sig
    if not _config.h2d_guarded:
      return fn(*args, **kwargs)
    from pyjax._src import core
    if core._state.interp is not core.eval_interpreter:
      return fn(*args, **kwargs)
    import numpy as np
    from pyjax._src import dtypes
    for a in (*args, *kwargs.values()):
      if isinstance(a, (np.ndarray, np.generic)) and a.dtype != object:
        host_to_device(host_aval(a), None, False)
    if dynamic:
      if sig is None:
        import inspect
        sig = inspect.signature(fn)
      bound = sig.bind(*args, **kwargs)
      bound.apply_defaults()  # a default (ddof=0) is an argument of the jitted call too
      for name in dynamic:
        if type(bound.arguments.get(name)) in dtypes.python_scalar_types:
          host_to_device(host_aval(bound.arguments[name]), None, False)
    _library.depth = getattr(_library, "depth", 0) + 1
    try:
      return fn(*args, **kwargs)
    finally:
      _library.depth -= 1
  return wrapper
