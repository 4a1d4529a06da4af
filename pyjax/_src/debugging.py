"""``jax.debug``: ``print``, ``log`` and ``callback`` — host callbacks that run when the
program runs (eagerly, or each time a jitted program executes), not when it is traced.

Primitives (JAX's names, params and printing):

* ``debug_callback_p`` (params ``callback``, ``effect``, ``partitioned``) and
  ``debug_print_p`` (``fmt``, ``ordered``, ``partitioned``, ``in_tree``, ``static_args``,
  ``np_printoptions``, ``has_placeholders``, ``logging_record``).  Both have no outputs
  and the ``Debug`` (or ``OrderedDebug``) effect, so compiled programs keep them.
* Eager implementation: ``backends/cpu/eager/callbacks.py`` (by name, used by jitted
  programs) and ``impl`` here (eager calls, which keep the arguments' weak types).
* JVP: the callback sees the primal values only (once under ``grad``); transpose: no
  cotangents; batching: the callback runs once per batch element.

Arguments that are not JAX values (strings, ``None`` leaves are structure) are static:
kept in ``static_args`` and merged back when the callback runs.
"""
from __future__ import annotations

import functools
import logging
import string

import numpy as np

from pyjax._src import core
from pyjax._src import tree_util
from pyjax._src.backends.cpu.eager import callbacks as _host
from pyjax._src.interpreters import ad
from pyjax._src.runtime import dispatch

__all__ = ["debug_print", "debug_log", "debug_callback", "DebugEffect",
           "OrderedDebugEffect", "debug_effect", "ordered_debug_effect", "debug_print_p",
           "debug_callback_p"]

logger = logging.getLogger("pyjax._src.debugging")


class DebugEffect(core.Effect):
  """The effect of ``jax.debug.callback``/``print`` (printed ``Debug``)."""

  def __init__(self):
    super().__init__("Debug")


class OrderedDebugEffect(core.Effect):
  """The effect of ordered debug callbacks (printed ``OrderedDebug``)."""

  def __init__(self):
    super().__init__("OrderedDebug", ordered=True)


debug_effect = DebugEffect()
ordered_debug_effect = OrderedDebugEffect()


def _as_arrays(args):
  from pyjax._src.runtime.array import ArrayImpl
  out = []
  for x in args:
    if type(x) is not ArrayImpl:
      b, aval = dispatch._to_numpy(x)
      x = ArrayImpl(b, aval, None, False)
    out.append(x)
  return out


# --- debug_callback -----------------------------------------------------------------------
debug_callback_p = core.Primitive("debug_callback")
debug_callback_p.multiple_results = True


@debug_callback_p.def_effectful_abstract_eval
def _debug_callback_abstract(*avals, callback, effect, partitioned):
  del avals, callback, partitioned
  return [], {effect}


@debug_callback_p.def_impl
def _debug_callback_impl(*args, callback, effect, partitioned):
  return _host.run_debug_callback(_as_arrays(args), callback=callback, effect=effect,
                                  partitioned=partitioned)


def _debug_jvp(prim):
  def rule(primals, tangents, **params):
    del tangents
    return prim.bind(*primals, **params), []
  return rule


def _debug_transpose(cts, *args, **params):
  del cts, params
  return [None] * len(args)


ad.primitive_jvps[debug_callback_p] = _debug_jvp(debug_callback_p)
ad.primitive_transposes[debug_callback_p] = _debug_transpose


# --- debug_print --------------------------------------------------------------------------
debug_print_p = core.Primitive("debug_print")
debug_print_p.multiple_results = True


@debug_print_p.def_effectful_abstract_eval
def _debug_print_abstract(*avals, ordered, **params):
  del avals, params
  return [], {ordered_debug_effect if ordered else debug_effect}


@debug_print_p.def_impl
def _debug_print_impl(*args, **params):
  return _host.run_debug_print(_as_arrays(args), **params)


ad.primitive_jvps[debug_print_p] = _debug_jvp(debug_print_p)
ad.primitive_transposes[debug_print_p] = _debug_transpose


def split_callback_args(args, kwargs):
  """(in_tree, dynamic leaves, {position: static leaf}) of ``(args, kwargs)``: leaves
  that are not JAX values are static."""
  leaves, in_tree = tree_util.tree_flatten((args, kwargs))
  static, dyn = {}, []
  for i, x in enumerate(leaves):
    try:
      core.get_aval(x)
    except (TypeError, OverflowError):
      static[i] = x
    else:
      dyn.append(x)
  return in_tree, dyn, static


# --- debug.callback -----------------------------------------------------------------------
def debug_callback(callback=None, *args, ordered=False, partitioned=False, **kwargs):
  """Call ``callback(*args, **kwargs)`` on the host when the program runs (under ``jit``
  at every execution; under ``vmap`` once per batch element; under ``grad`` with the
  primal values).  Array arguments arrive as Arrays; other leaves are passed as given.
  ``jax.debug.callback(ordered=True)`` (no callback) returns the function to call
  (JAX's two-call form).  Differs from JAX: all callbacks run in program order (the
  CPU backend executes sequentially); ``partitioned`` is accepted and ignored."""
  def _debug_callback(callback, *c_args, **c_kwargs):
    if not callable(callback):
      raise TypeError("first argument to jax.debug.callback must be callable, but got an "
                      f"object of type {type(callback)}")
    in_tree, dyn, static = split_callback_args(c_args, c_kwargs)

    def _flat_callback(*dyn_flat):
      a, k = in_tree.unflatten(_host.merge_static_args(dyn_flat, tuple(static.items())))
      callback(*a, **k)
      return ()

    debug_callback_p.bind(*dyn, callback=_flat_callback,
                          effect=ordered_debug_effect if ordered else debug_effect,
                          partitioned=partitioned)

  if callback is not None:
    _debug_callback(callback, *args, **kwargs)
    return None
  if args or kwargs:
    raise TypeError("debug_callback received unexpected arguments in the two-call form:"
                    f" {args=} {kwargs=}")
  return _debug_callback


# --- debug.print --------------------------------------------------------------------------
class _FormatChecker(string.Formatter):
  """Checks a format string against its arguments without formatting anything."""

  def format_field(self, value, format_spec):
    return ""

  def check_unused_args(self, used_args, args, kwargs):
    unused = [a for i, a in enumerate(args) if i not in used_args]
    if unused:
      raise ValueError(f"Unused positional arguments to `jax.debug.print`: {unused}")
    unused_kw = [k for k in kwargs if k not in used_args]
    if unused_kw:
      raise ValueError(
          f"Unused keyword arguments to `jax.debug.print`: {unused_kw}. You may be passing "
          "an f-string (i.e, `f\"{x}\"`) into `jax.debug.print` and instead should pass in "
          "a regular string.")


_checker = _FormatChecker()


def _has_placeholders(fmt):
  if not fmt:
    return False
  first = next(iter(string.Formatter().parse(fmt)), None)
  return first is not None and first[1] is not None


def _logging_record(level):
  src = core.user_frame()
  file_name, line_no = "(unknown file)", 0
  if src is not None:
    code, lasti = src
    file_name = code.co_filename
    line_no = code.co_firstlineno
    for i, pos in enumerate(code.co_positions()):
      if i == lasti // 2:
        line_no = pos[0] or line_no
        break
  return logger.makeRecord(logger.name, level, file_name, line_no, "", (), None)


def debug_print(fmt=None, *args, ordered=False, partitioned=False, skip_format_check=False,
                _use_logging=False, **kwargs):
  """Print ``fmt.format(*args, **kwargs)`` when the program runs (inside ``jit``, ``vmap``
  and ``grad`` too), with the NumPy print options in effect at the call.  Use
  placeholders, not f-strings: formatting is delayed.  A format without placeholders
  (with ``skip_format_check=True``) prints the arguments after it, space-separated.
  ``jax.debug.print(ordered=True)`` returns the function to call (two-call form).

  Differs from JAX: ``ordered`` and ``partitioned`` change only the jaxpr (every print
  runs in program order here)."""
  def _debug_print(fmt, *c_args, **c_kwargs):
    if not skip_format_check:
      _checker.format(fmt, *c_args, **c_kwargs)
    in_tree, dyn, static = split_callback_args(c_args, c_kwargs)
    debug_print_p.bind(
        *dyn, fmt=fmt, ordered=ordered, partitioned=partitioned, in_tree=in_tree,
        static_args=tuple(static.items()),
        np_printoptions=tuple(np.get_printoptions().items()),
        has_placeholders=_has_placeholders(fmt),
        logging_record=_logging_record(logging.INFO) if _use_logging else None)

  if fmt is not None:
    _debug_print(fmt, *args, **kwargs)
    return None
  if args or kwargs:
    raise TypeError("debug_print received unexpected arguments in the two-call form:"
                    f" {args=} {kwargs=}")
  return _debug_print


debug_log = functools.partial(debug_print, _use_logging=True)
debug_log.__doc__ = ("Like ``debug_print`` but emits an INFO record on the "
                     "``pyjax._src.debugging`` logger (JAX's ``jax.debug.log``).")


# --- batching (registered when the vmap interpreter is present) ---------------------------
def _index_in_dim(x, i, dim):
  from pyjax._src.lax import shapes
  return shapes.index_in_dim(x, i, dim, keepdims=False)


def debug_batch_rule(prim):
  """Run the callback once per batch element (in batch order), as JAX does."""
  def rule(args, dims, **params):
    size = next(core.get_aval(x).shape[d] for x, d in zip(args, dims) if d is not None)
    for i in range(size):
      prim.bind(*[x if d is None else _index_in_dim(x, i, d) for x, d in zip(args, dims)],
                **params)
    return [], []
  return rule


def _register_batching():
  try:
    from pyjax._src.interpreters import batching
  except ImportError:
    return
  batching.primitive_batchers[debug_callback_p] = debug_batch_rule(debug_callback_p)
  batching.primitive_batchers[debug_print_p] = debug_batch_rule(debug_print_p)


_register_batching()
