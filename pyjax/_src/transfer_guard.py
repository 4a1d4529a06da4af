"""Transfer guards (``jax.transfer_guard``, ``jax_transfer_guard*`` options).

Levels as JAX: ``allow``; ``log`` (log implicit transfers); ``disallow`` (raise on implicit
transfers, allow explicit ones); ``log_explicit`` (log every transfer); ``disallow_explicit``
(raise on every transfer).  The per-direction options override ``jax_transfer_guard``.

Guarded here:

* host-to-device, implicit: a NumPy value or Python scalar given to an eager primitive or
  to a ``jit``-compiled function, and the arguments of a jax.numpy function decorated with
  ``numpy.util.library_function`` (JAX jits it, so the constants its body makes are not
  transfers);
* host-to-device, explicit: ``jax.device_put`` of host data;
* device-to-device, explicit: ``jax.device_put`` of an Array onto another device.

Device-to-host reads (``np.asarray``, ``float``, printing) are never guarded on CPU, as in
JAX, whose CPU arrays already live in host memory.  Differs from JAX: array constructors
(``jnp.array(np_value)``, ``jnp.ones``) and implicit device-to-device moves are not guarded.
The error is ``jax.errors.JaxRuntimeError`` with JAX's text; ``log`` writes JAX's text as
a warning on the ``pyjax._src.transfer_guard`` logger.
"""
from __future__ import annotations

import logging
import threading

from pyjax._src import config as _config
from pyjax._src import errors

_logger = logging.getLogger("pyjax._src.transfer_guard")
_library = threading.local()  # .depth > 0: inside a library function's body (library_body)


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



def check_library_arguments(args, kwargs, dynamic, sig):
  """The implicit transfers of an eager call of a jax.numpy function JAX jits (see
  ``numpy.util.library_function``): its NumPy-value arguments and the Python scalars
  named in ``dynamic`` (with defaults applied: a default such as ``ddof=0`` is an argument
  of JAX's jitted call too).  ``sig``: the function's ``inspect.Signature``."""
  import numpy as np
  from pyjax._src import dtypes
  for a in (*args, *kwargs.values()):
    if isinstance(a, (np.ndarray, np.generic)) and a.dtype != object:
      host_to_device(host_aval(a), None, False)
  if dynamic:
    bound = sig.bind(*args, **kwargs)
    bound.apply_defaults()
    for name in dynamic:
      if type(bound.arguments.get(name)) in dtypes.python_scalar_types:
        host_to_device(host_aval(bound.arguments[name]), None, False)


class constant_folding:
  """Context: evaluate now, on the eager interpreter, values a trace folds into constants
  (``lax.full`` of a concrete fill value while staging).  Folding inside a trace is not a
  transfer (the values are the staged program's literals), so implicit host-to-device
  transfers are not checked in the block when a trace was active."""
  __slots__ = ("prev", "tracing")

  def __enter__(self):
    from pyjax._src import core
    self.prev = core._state.interp
    core._state.interp = core.eval_interpreter
    self.tracing = self.prev is not core.eval_interpreter
    if self.tracing:
      _library.depth = getattr(_library, "depth", 0) + 1

  def __exit__(self, *exc):
    from pyjax._src import core
    core._state.interp = self.prev
    if self.tracing:
      _library.depth -= 1


class library_body:
  """Context: implicit host-to-device transfers on this thread are a library function's
  own constants (literals of JAX's compiled program), not checked."""

  def __enter__(self):
    _library.depth = getattr(_library, "depth", 0) + 1

  def __exit__(self, *exc):
    _library.depth -= 1
