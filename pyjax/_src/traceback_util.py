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
import os
import threading
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
