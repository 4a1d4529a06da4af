"""Traceback filtering at API boundaries (JAX's ``traceback_util``).

``api_boundary(fun)`` wraps a public entry point: when an exception escapes it, the
frames of pyjax's own files (and of paths registered with ``register_exclusion``, which
libraries built on JAX use for theirs) are removed from the exception's traceback, unless
``jax_traceback_filtering`` is ``"off"``.  Only the outermost boundary filters.
Differences from JAX: the filtered traceback replaces the exception's own (JAX attaches
it as a ``__cause__``); the modes other than "off" all filter this way.
"""
from __future__ import annotations

import functools
import logging
import os
import threading
import traceback
import types

_exclude_paths = [os.path.dirname(os.path.dirname(os.path.abspath(__file__)))]
_state = threading.local()


def register_exclusion(path):
  """Hide frames from files under ``path`` in filtered tracebacks."""
  if path not in _exclude_paths:
    _exclude_paths.append(path)


def include_frame(f):
  """True for a frame kept in a filtered traceback."""
  return not any(f.f_code.co_filename.startswith(p) for p in _exclude_paths)


def _filtering_mode():
  try:
    from pyjax._src.config import config
    mode = getattr(config, "jax_traceback_filtering", "auto")
  except Exception:  # config not importable yet or flag not defined
    mode = "auto"
  return mode


def filter_traceback(tb):
  """``tb`` without its excluded frames (a new chain of traceback objects)."""
  kept = []
  while tb is not None:
    if include_frame(tb.tb_frame):
      kept.append(tb)
    tb = tb.tb_next
  out = None
  for t in reversed(kept):
    out = types.TracebackType(out, t.tb_frame, t.tb_lasti, t.tb_lineno)
  return out


def api_boundary(fun=None, *, repro_api_name=None, repro_user_func=False):
  """Decorator: exceptions escaping ``fun`` (outside any other boundary) lose the frames
  of excluded paths from their tracebacks."""
  del repro_api_name, repro_user_func
  if fun is None:
    return api_boundary

  @functools.wraps(fun)
  def reraise_with_filtered_traceback(*args, **kwargs):
    __tracebackhide__ = True
    depth = getattr(_state, "depth", 0)
    _state.depth = depth + 1
    try:
      return fun(*args, **kwargs)
    except Exception as e:
      if depth == 0 and _filtering_mode() != "off":
        filtered = filter_traceback(e.__traceback__)
        if filtered is not None:
          raise e.with_traceback(filtered) from e.__cause__
      raise
    finally:
      _state.depth = depth

  return reraise_with_filtered_traceback


# -- tracebacks formatted off the main thread ------------------------------------------
# CPython 3.11's traceback formatting parses each frame's source segment with ast.parse to
# place its carets, and the AST constructor's recursion counter is shared by all threads:
# two threads parsing at once (a garbage-collector finalizer can switch threads in the
# middle of a parse) make one of them fail with "SystemError: AST constructor recursion
# depth mismatch" -- in the user's thread (pytest rewriting a module, printing a failure).
# pyjax formats the tracebacks of callback errors on its stream threads, so it formats them
# without column positions: the same text minus the caret lines, and no parse.

def _drop_columns(te, seen):
  while te is not None and id(te) not in seen:
    seen.add(id(te))
    for fs in te.stack:
      fs.colno = fs.end_colno = None
    for sub in getattr(te, "exceptions", None) or ():
      _drop_columns(sub, seen)
    _drop_columns(te.__context__, seen)
    te = te.__cause__


def format_exception_text(exc):
  """``traceback.format_exception(exc)`` as one string, without the caret lines (their
  placement parses source with ``ast``, which is not thread-safe in CPython 3.11)."""
  te = traceback.TracebackException(type(exc), exc, exc.__traceback__, compact=True)
  _drop_columns(te, set())
  return "".join(te.format())


def log_exception(logger, msg, exc):
  """``logger.exception(msg)`` for ``exc``, with its traceback text formatted here by
  ``format_exception_text`` (handlers reuse a record's ``exc_text``), so a handler running
  on a pyjax thread never parses source."""
  if not logger.isEnabledFor(logging.ERROR):
    return
  try:
    fn, lno, func, _ = logger.findCaller(False, 2)
  except ValueError:
    fn, lno, func = "(unknown file)", 0, "(unknown function)"
  record = logger.makeRecord(logger.name, logging.ERROR, fn, lno, msg, (),
                             (type(exc), exc, exc.__traceback__), func)
  record.exc_text = format_exception_text(exc).rstrip("\n")
  logger.handle(record)
