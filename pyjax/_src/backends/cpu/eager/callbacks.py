"""Host callbacks of the CPU backend: ``debug_print``, ``debug_callback``,
``pure_callback`` and ``io_callback``, keyed by primitive name like every other eager
implementation (jitted programs call these at run time).

The user's function receives Arrays (as in JAX; ``pure_callback``/``io_callback`` results
are checked against the declared ``result_avals`` and returned as NumPy buffers).  Errors
raised inside ``pure_callback``/``io_callback`` surface as ``JaxRuntimeError`` whose text
starts with ``INTERNAL: CpuCallback error calling callback:`` followed by the traceback,
as XLA's CPU runtime reports them; errors inside debug callbacks propagate unchanged.
"""
from __future__ import annotations

import copy
import logging
import sys

import numpy as np

from pyjax._src import dtypes, errors, traceback_util
from pyjax._src.backends.cpu.eager.registry import register

logger = logging.getLogger("pyjax._src.debugging")
_callback_logger = logging.getLogger("pyjax._src.callback")


def _as_array(b):
  """A buffer (or an Array) as an Array for the user's callback."""
  from pyjax._src.runtime.array import ArrayImpl
  from pyjax._src.avals import ShapedArray
  if type(b) is ArrayImpl:
    return b
  b = np.asarray(b)
  return ArrayImpl(b, ShapedArray(b.shape, b.dtype, False), None, False)


def merge_static_args(dyn_args, static_args):
  """The flat argument list: ``static_args`` is a tuple of (position, value) pairs."""
  static = dict(static_args)
  out = []
  it = iter(dyn_args)
  for i in range(len(static) + len(dyn_args)):
    out.append(static[i] if i in static else next(it))
  return out


def format_debug_print(args, fmt, in_tree, static_args, np_printoptions, has_placeholders):
  """The text ``jax.debug.print`` writes for these (Array) arguments."""
  a, kw = in_tree.unflatten(merge_static_args(args, static_args))
  if has_placeholders:
    with np.printoptions(**dict(np_printoptions)):
      return fmt.format(*a, **kw)
  return " ".join((fmt, *(str(x) for x in a)))


def run_debug_print(args, *, fmt, ordered, partitioned, in_tree, static_args,
                    np_printoptions, has_placeholders, logging_record):
  """Format and emit one ``debug_print`` (to stdout, or as a log record)."""
  del ordered, partitioned
  msg = format_debug_print(args, fmt, in_tree, static_args, np_printoptions,
                           has_placeholders)
  if logging_record is not None:
    record = copy.copy(logging_record)
    record.msg = msg
    logger.handle(record)
  else:
    sys.stdout.write(msg + "\n")
  return []


def run_debug_callback(args, *, callback, effect, partitioned):
  del effect, partitioned
  try:
    callback(*args)
  except BaseException as e:
    traceback_util.log_exception(logger, "jax.debug.callback failed", e)
    raise
  return []


@register("debug_print")
def _debug_print(*bufs, **params):
  return run_debug_print([_as_array(b) for b in bufs], **params)


@register("debug_callback")
def _debug_callback(*bufs, **params):
  """In compiled code (jit plans, control-flow bodies): an exception from the callback
  surfaces as JAX's JaxRuntimeError (XLA's CPU callback runtime wraps it); an eager
  ``jax.debug.callback`` (the primitive's impl) raises the callback's own exception."""
  try:
    return run_debug_callback([_as_array(b) for b in bufs], **params)
  except Exception as e:  # noqa: BLE001
    tb = traceback_util.format_exception_text(e)
    raise errors.JaxRuntimeError(
        f"INTERNAL: CpuCallback error calling callback: {tb.rstrip()}") from e


def _check_results(outs, result_avals):
  if len(outs) != len(result_avals):
    raise RuntimeError("Mismatched number of outputs from callback. Expected: "
                       f"{len(result_avals)}, Actual: {len(outs)}")
  bufs = []
  for i, (o, a) in enumerate(zip(outs, result_avals)):
    b = np.asarray(o)
    if b.shape != tuple(a.shape):
      raise RuntimeError(f"Incorrect output shape for return value #{i}: Expected: "
                         f"{tuple(a.shape)}, Actual: {b.shape}")
    if dtypes.canonicalize_dtype(b.dtype) != a.dtype:
      raise RuntimeError(f"Incorrect output dtype for return value #{i}: Expected: "
                         f"{a.dtype}, Actual: {b.dtype}")
    bufs.append(b.astype(a.dtype, copy=False))
  return bufs


def run_host_callback(name, args, callback, result_avals):
  """Call a pure/io callback with Arrays; its checked results as NumPy buffers."""
  try:
    try:
      outs = callback(*args)
    except BaseException as e:
      traceback_util.log_exception(_callback_logger, f"jax.{name} failed", e)
      raise
    return _check_results(list(outs), result_avals)
  except Exception as e:  # noqa: BLE001 -- reported like XLA's CPU callback runtime
    tb = traceback_util.format_exception_text(e)
    raise errors.JaxRuntimeError(
        f"INTERNAL: CpuCallback error calling callback: {tb.rstrip()}") from e


@register("pure_callback")
def _pure_callback(*bufs, callback, result_avals, sharding=None, vmap_method=None):
  del sharding, vmap_method
  return run_host_callback("pure_callback", [_as_array(b) for b in bufs], callback,
                           result_avals)


@register("io_callback")
def _io_callback(*bufs, callback, result_avals, sharding=None, ordered=False):
  del sharding, ordered
  return run_host_callback("io_callback", [_as_array(b) for b in bufs], callback,
                           result_avals)
