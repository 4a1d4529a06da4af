"""``jax_debug_nans`` / ``jax_debug_infs``: raise ``FloatingPointError`` where a NaN or an
infinity first appears (and ``jax_no_execution``, checked at the same places: eager
primitives and eager ``jit`` calls raise ``RuntimeError``; the computation has run, its
results are discarded).

Eagerly, every primitive's floating-point outputs are checked as it runs (the check is in
``runtime.dispatch``), so the error names the primitive: ``invalid value (nan) encountered
in log``.  A ``jit``-compiled call checks its outputs; when one holds an invalid value it
prints JAX's notice and calls the function again without ``jit`` (op by op, with the same
arguments), which raises at the primitive; when that run produces no invalid value, JAX's
"de-optimized function did not produce invalid values" error is raised instead.

Differs from JAX: values computed inside a traced program (under ``grad``/``vmap`` of a
``jit``, in a ``scan`` body, ...) are checked only where they become concrete, as in JAX;
``device_put`` of a NaN is not an error (JAX reports it as ``stage``).
"""
from __future__ import annotations

import numpy as np

from pyjax._src import config as _config


def _inexact(dt):
  return dt.kind in "fc" or dt.name in ("bfloat16", "float8_e4m3fn", "float8_e5m2",
                                         "float8_e4m3b11fnuz", "float8_e4m3fnuz",
                                         "float8_e5m2fnuz", "float8_e3m4", "float8_e4m3",
                                         "float8_e8m0fnu", "float4_e2m1fn")


def invalid_kind(buf):
  """'nan' or 'inf' when ``buf`` holds a value the enabled flags reject, else None."""
  b = np.asarray(buf)
  if not _inexact(b.dtype):
    return None
  if b.dtype.kind not in "fc":
    b = b.astype(np.float32)
  if _config.config.jax_debug_nans and np.isnan(b).any():
    return "nan"
  if _config.config.jax_debug_infs and np.isinf(b).any():
    return "inf"
  return None


def _no_execution(name):
  return RuntimeError(f"JAX tried to execute function {name}, but the no_execution config "
                      "option is set")


def check_primitive_outputs(name, out, multiple_results):
  """Raise ``FloatingPointError`` if an eager primitive's output is invalid (and
  ``RuntimeError`` under ``jax_no_execution``: the result is discarded)."""
  if _config.config.jax_no_execution:
    raise _no_execution(f"jit({name})")
  for o in (out if multiple_results else (out,)):
    kind = invalid_kind(o)
    if kind is not None:
      raise FloatingPointError(f"invalid value ({kind}) encountered in {name}")


def _no_nan_in_deoptimized(first):
  return FloatingPointError(
      f"{first}. Because jax_config.debug_nans.value and/or config.jax_debug_infs is set, the "
      "de-optimized function (i.e., the function as if the `jit` decorator were removed) was "
      "called in an attempt to get a more precise error message. However, the de-optimized "
      "function did not produce invalid values during its execution. This behavior can "
      "result from `jit` optimizations causing the invalid value to be produced. It may also "
      "arise from having nan/inf literals as inputs or outputs, like "
      "`jax.jit(lambda ...: jax.numpy.nan)(...)`. \n\nIt may be possible to avoid the invalid "
      "value by removing the `jit` decorator, at the cost of losing optimizations. \n\nIf you "
      "see this error, consider opening a bug report at https://github.com/jax-ml/jax.")


def check_jit_outputs(name, arrays, fun, args, kwargs):
  """After an eager ``jit`` call: when an output is invalid, re-run ``fun`` op by op (which
  raises at the primitive) or raise JAX's de-optimization error.  Under
  ``jax_no_execution`` raise ``RuntimeError`` (the outputs are discarded)."""
  if _config.config.jax_no_execution:
    raise _no_execution(f"jit({name})")
  for a in arrays:
    kind = invalid_kind(a._resolve() if hasattr(a, "_resolve") else a)
    if kind is None:
      continue
    print("Invalid nan value encountered in the output of a jax.jit function. Calling the "
          "de-optimized version.")
    try:
      fun(*args, **kwargs)
    except (FloatingPointError, ZeroDivisionError) as e:
      raise e from None
    raise _no_nan_in_deoptimized(("jit(" + name + ")", kind))
