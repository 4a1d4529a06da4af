"""Eager dispatch: run one primitive now on the device its inputs live on.

``apply_primitive`` is what the bottom interpreter calls for every primitive.  It checks
the inputs' devices (computation follows committed data), computes the output aval with
the primitive's abstract-eval rule (so eager errors equal traced ones), and calls the
implementation in the eager table of the device's backend (``device._backend.eager_impls``,
keyed by the primitive's name; ``runtime/backend.py``): NumPy on the CPU backend.

Asynchronous dispatch: a compute-bound primitive (``_ASYNC_EAGER``: matmuls, convolutions,
FFTs) on at least ``_ASYNC_ELEMENTS`` elements is enqueued on its device's stream and
returns an Array backed by a ``PendingBuffer`` (its inputs may be pending too: the stream
waits for them).  Everything else runs synchronously (a pending input is waited for), so
the per-op fast path is unchanged.  ``jax_cpu_enable_async_dispatch=False`` turns it off.
"""
from __future__ import annotations

import warnings

import numpy as np

from pyjax._src import config as _config
from pyjax._src import dtypes
from pyjax._src.avals import ShapedArray
from pyjax._src.runtime import devices as _devices
from pyjax._src.runtime import stream as _stream
from pyjax._src.runtime.array import ArrayImpl
from pyjax._src.runtime.stream import PendingBuffer

# primitives worth a thread hand-off when large (NumPy/BLAS release the GIL for them)
_ASYNC_EAGER = frozenset({"dot_general", "conv_general_dilated", "fft"})
_ASYNC_ELEMENTS = 1 << 16

_scalar_types = dtypes.python_scalar_types
_default_device = _devices.default_device
_is_tracer = None


def register_tracer_check(fn):
  global _is_tracer
  _is_tracer = fn


def _to_numpy(x):
  """(buffer, aval) of a non-Array input: Python scalars, NumPy values, __jax_array__."""
  t = type(x)
  if t in _scalar_types:
    d = dtypes.python_scalar_dtype(t)
    try:
      b = np.array(x, d)
    except OverflowError:
      raise OverflowError(f"Python int {x} too large to convert to {d.name}") from None
    if _config.h2d_guarded:
      from pyjax._src import transfer_guard
      transfer_guard.host_to_device(ShapedArray((), d, t is not bool), None, False)
    return b, ShapedArray((), d, t is not bool)
  if isinstance(x, (np.ndarray, np.generic)):
    d = dtypes.canonicalize_dtype(x.dtype)
    b = np.asarray(x, d)
    if _config.h2d_guarded:
      from pyjax._src import transfer_guard
      transfer_guard.host_to_device(ShapedArray(b.shape, d, False), None, False)
    return b, ShapedArray(b.shape, d, False)
  if _is_tracer is not None and _is_tracer(x):
    from pyjax._src import core  # the escaped tracer error lives in core
    if x._trace.finished:
      core.raise_escaped_tracer(x)
    from pyjax._src import errors
    raise errors.ConcretizationTypeError(x, "A traced value reached eager evaluation.")
  if hasattr(x, "__jax_array__"):
    a = x.__jax_array__()
    if type(a) is ArrayImpl:
      return a._data(), a.aval
    return _to_numpy(a)
  if isinstance(x, (bool, int, float, complex)):
    return _to_numpy(complex(x) if isinstance(x, complex) else
                     float(x) if isinstance(x, float) else
                     bool(x) if isinstance(x, bool) else int(x))
  raise TypeError(f"Value {x!r} of type {type(x)} is not a valid JAX type")


def _device_error(prim, args, devs):
  names = prim.arg_names or tuple(f"args[{i}]" for i in range(len(args)))
  parts = []
  for i, (x, d) in enumerate(zip(args, devs)):
    if d is None:
      continue
    name = names[i] if i < len(names) else f"args[{i}]"
    parts.append(f"argument {name} of {prim.name} with shape {x.aval.str_short(short_dtypes=False)} and "
                 f"with device ids [{d.id}] on platform {d.platform.upper()}")
  return ValueError("Received incompatible devices for jitted computation. Got "
                    + " and ".join(parts))


def apply_primitive(prim, args, params):
  """Run ``prim`` now on NumPy buffers and wrap the result as Array(s)."""
  n = len(args)
  if n <= 2:
    # fast path: one or two uncommitted Arrays with ready buffers (the common eager case)
    x = args[0] if n else None
    if type(x) is ArrayImpl and not x._committed:
      bx = x._buf
      if type(bx) is np.ndarray:
        if n == 1:
          out_aval = prim._abstract_eval(x.aval, **params)
          return _finish(prim, prim.name, out_aval, (bx,), params, None, False)
        y = args[1]
        if type(y) is ArrayImpl and not y._committed:
          by = y._buf
          if type(by) is np.ndarray:
            out_aval = prim._abstract_eval(x.aval, y.aval, **params)
            return _finish(prim, prim.name, out_aval, (bx, by), params, None, False)
  elif n == 3:
    # select_n / clamp with three such Arrays
    x, y, z = args
    if (type(x) is ArrayImpl and type(y) is ArrayImpl and type(z) is ArrayImpl
        and not (x._committed or y._committed or z._committed)):
      bx, by, bz = x._buf, y._buf, z._buf
      if type(bx) is np.ndarray and type(by) is np.ndarray and type(bz) is np.ndarray:
        out_aval = prim._abstract_eval(x.aval, y.aval, z.aval, **params)
        return _finish(prim, prim.name, out_aval, (bx, by, bz), params, None, False)
  bufs = []
  avals = []
  device = None
  mixed = False
  sharded = None
  for x in args:
    if type(x) is ArrayImpl:
      b = x._buf
      if type(b) is not np.ndarray and (type(b) is not PendingBuffer
                                        or prim.name not in _ASYNC_EAGER):
        b = x._resolve()
      bufs.append(b)
      avals.append(x.aval)
      if x._committed:
        if device is None:
          device = x._device
        elif x._device is not device:
          mixed = True
    elif isinstance(x, ArrayImpl):   # sharded (runtime/sharded_array): its global value
      if sharded is None:
        from pyjax._src.runtime import sharded_array   # elementwise: shard by shard
        res = sharded_array.per_shard(prim, params, args)
        if res is not None:
          return res
        sharded = []
      sharded.append(x)
      bufs.append(x._global_data() if hasattr(x, "_global_data") else x._data())
      avals.append(x.aval)
    else:
      b, a = _to_numpy(x)
      bufs.append(b)
      avals.append(a)
  if mixed:
    devs = [x._device if type(x) is ArrayImpl and x._committed else None for x in args]
    raise _device_error(prim, args, devs)
  out_aval = prim._abstract_eval(*avals, **params)
  if sharded is not None:   # outputs laid out again (sharded_array.reshard_outputs)
    from pyjax._src.runtime import sharded_array
    return sharded_array.reshard_outputs(
        _finish(prim, prim.name, out_aval, bufs, params, device, device is not None), sharded,
        prim, params, args)
  return _finish(prim, prim.name, out_aval, bufs, params, device, device is not None)


def apply_known(prim, out_aval, args, params):
  """``apply_primitive`` for a caller that has already checked the operands and knows the
  result's aval (``jnp.where``'s same-shape fast path): uncommitted Arrays with ready
  buffers skip the abstract evaluation; anything else takes ``apply_primitive``."""
  bufs = []
  for x in args:
    if type(x) is not ArrayImpl or x._committed or type(x._buf) is not np.ndarray:
      return apply_primitive(prim, args, params)
    bufs.append(x._buf)
  return _finish(prim, prim.name, out_aval, bufs, params, None, False)


def _finish(prim, name, out_aval, bufs, params, device, committed):
  if device is None:
    device = _default_device()
  backend = device._backend
  impl = backend.eager_impls.get(name)
  if impl is None:
    raise NotImplementedError(f"The {backend.platform} backend has no eager implementation "
                              f"of {name}")
  if warnings.filters is not _filters_seen[0]:
    keep_quiet_filters()
  if name in _ASYNC_EAGER:
    res = _maybe_async(prim, impl, out_aval, bufs, params, device, committed)
    if res is not None:
      return res
  try:
    if name in backend.large_prims and (bufs[0].size >= backend.large_min_elements
                                        or bufs[-1].size >= backend.large_min_elements):
      out = backend.run_large(name, bufs, params, out_aval)   # e.g. native kernels, threads
      if out is None:
        out = impl(*bufs, **params)
    else:
      out = impl(*bufs, **params)
  except MemoryError as e:   # as XLA: RESOURCE_EXHAUSTED
    from pyjax._src import errors
    raise errors.out_of_memory(e) from None
  except RuntimeWarning as w:   # warnings made errors by the program's filter: run quietly
    if not is_fp_warning(w):
      raise
    out = run_quietly(impl, *bufs, **params)
  if _config.debug_special:   # jax_debug_nans / jax_debug_infs
    from pyjax._src import debug_nans
    debug_nans.check_primitive_outputs(name, out, prim.multiple_results)
  if prim.multiple_results:
    return [_wrap(o, a, device, committed) for o, a in zip(out, out_aval)]
  if type(out) is np.ndarray and out.dtype is out_aval.dtype:
    return ArrayImpl(out, out_aval, device, committed)
  return _wrap(out, out_aval, device, committed)


def run_composite(name, args, params, out_avals):
  """Eager only: the outputs (Arrays of ``out_avals``) of the backend's composite ``name``
  on the single-device Arrays ``args`` with ready buffers, or None (an operand is
  something else, ``jax_debug_nans``/``infs`` is on, or the backend has no such
  composite): the caller binds the primitives one by one.  A composite gives the
  primitives' results bit for bit (``Backend.run_composite``)."""
  if _config.debug_special:   # checked primitive by primitive
    return None
  device = None
  bufs = []
  for x in args:
    if type(x) is not ArrayImpl or type(x._buf) is not np.ndarray:
      return None
    if x._committed:
      if device is not None and x._device is not device:
        return None
      device = x._device
    bufs.append(x._buf)
  committed = device is not None
  if device is None:
    device = _default_device()
  outs = device._backend.run_composite(name, bufs, params)
  if outs is None:
    return None
  return [_wrap(o.reshape(a.shape), a, device, committed) for o, a in zip(outs, out_avals)]


def _maybe_async(prim, impl, out_aval, bufs, params, device, committed):
  """Enqueue a large compute-bound primitive on the device's stream; None: run it now."""
  big = False
  for b in bufs:
    if type(b) is PendingBuffer or b.size >= _ASYNC_ELEMENTS:
      big = True
  if (not big or not _config.cpu_async_dispatch or _stream.in_worker()
      or _config.debug_special):
    if any(type(b) is PendingBuffer for b in bufs):   # (asynchronous dispatch turned off)
      bufs[:] = [b.result() if type(b) is PendingBuffer else b for b in bufs]
    return None
  multiple = prim.multiple_results
  avals = list(out_aval) if multiple else [out_aval]

  def work(*bs):
    out = impl(*bs, **params)
    outs = out if multiple else [out]
    res = []
    for o, a in zip(outs, avals):
      if type(o) is not np.ndarray or o.dtype != a.dtype:
        o = np.asarray(o, dtype=a.dtype)
      res.append(o)
    return res
  pend = device.stream.submit(work, list(bufs), len(avals))
  arrays = [ArrayImpl(p, a, device, committed) for p, a in zip(pend, avals)]
  return arrays if multiple else arrays[0]


def _wrap(out, aval, device, committed):
  if type(out) is not np.ndarray or out.dtype != aval.dtype:
    out = np.asarray(out, dtype=aval.dtype)
  return ArrayImpl(out, aval, device, committed)


def device_put_buffer(buf, aval, device, committed):
  return ArrayImpl(buf, aval, device, committed)


def commit_to(x, device, copy=False):
  """The single-device Array ``x`` committed to ``device``: its buffer moved there by the
  backends' ``transfer`` (shared between host-memory devices unless ``copy``)."""
  src = x._device
  buf = src._backend.transfer(x._data(), src, device, copy)
  return ArrayImpl(buf, x.aval, device, True)


def is_fp_warning(w):
  """Whether ``w`` (a RuntimeWarning raised as an error) is NumPy's floating-point warning
  ("divide by zero encountered in divide").  A program whose warnings filter turns
  warnings into errors (pytest's ``filterwarnings = error``, ``python -W error``) outranks
  the CPU backend's filter that silences them (``backends/cpu/eager/registry.py``); callers
  then run the computation again under ``np.errstate`` (the implementations are pure), so
  the caller never sees a warning XLA would not give."""
  return "encountered in" in str(w)


# the messages of NumPy's floating-point warnings ("invalid value encountered in divide",
# ...; is_fp_warning above tells them apart after the fact), as a filter's regex
_FP_MESSAGE = r"(overflow|invalid value|divide by zero|underflow) encountered"
_quiet = []                 # [category, module regex, the filter entry] per quiet_warnings call
_filters_seen = [None]      # the warnings.filters list last checked to hold them


def quiet_warnings(category, module):
  """Ignore ``category`` warnings issued from the modules matching ``module`` (a backend's
  NumPy implementations: NumPy warns on overflow and invalid values, XLA never does), and
  keep ignoring them: a ``warnings.catch_warnings`` block open when the backend was
  imported (pytest collects and configures inside one) drops the filter when it closes,
  and ``keep_quiet_filters`` puts it back (at the front).  Only NumPy's floating-point
  messages (``_FP_MESSAGE``): pyjax's own warnings from those modules (no C compiler, an
  unusable cache directory) still show."""
  warnings.filterwarnings("ignore", message=_FP_MESSAGE, category=category, module=module)
  _quiet.append([category, module, warnings.filters[0]])
  _filters_seen[0] = warnings.filters



def keep_quiet_filters():
  """Put the ``quiet_warnings`` filters back at the front of the current
  ``warnings.filters`` when they are missing or a filter precedes them (a
  ``catch_warnings(record=True)`` block with ``simplefilter("always")``, as pytest.warns
  opens, would record NumPy's warnings from inside pyjax, which JAX never gives; they
  match only pyjax's backend modules, so the program's own filters are otherwise
  untouched).  Eager operations and compilations call it; when that list is the one last
  checked, one identity test."""
  fl = warnings.filters
  if fl is _filters_seen[0]:
    return
  if not all(i < len(fl) and fl[i] is q[2] for i, q in enumerate(_quiet)):
    for q in reversed(_quiet):   # filterwarnings moves an equal filter to the front
      warnings.filterwarnings("ignore", message=_FP_MESSAGE, category=q[0], module=q[1])
      q[2] = warnings.filters[0]
  _filters_seen[0] = warnings.filters


def run_quietly(fn, *args, **kwargs):
  """``fn(*args, **kwargs)`` with NumPy's floating-point warnings off (see is_fp_warning)."""
  with np.errstate(all="ignore"):
    return fn(*args, **kwargs)
