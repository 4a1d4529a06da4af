"""Instrumentation hooks (``jax.monitoring``): named events, durations, time spans, scalars.

Code marks a point with ``record_event(name)`` (or a duration, a time span, a scalar);
every listener registered for that kind is called, in registration order, with the
event name and the keyword metadata.  pyjax records JAX's compile events itself:
``/jax/core/compile/jaxpr_trace_duration`` (tracing a function for ``jit``, metadata
``fun_name=<name>``) and ``/jax/core/compile/backend_compile_duration`` (building the
executable, ``fun_name='jit(<name>)'``).  As in JAX each is recorded as a scalar (its
start time) on entry, then as a duration and a time span on exit.  The CPU compiler's
disk cache records ``/jax/compilation_cache/compile_requests_use_cache``, ``cache_hits``
(with the ``cache_retrieval_time_sec`` duration) and ``cache_misses``.  Not recorded:
``jaxpr_to_mlir_module_duration`` (there is no MLIR step) and
``compile_time_saved_sec`` (cache entries do not store their compile time).
"""
from __future__ import annotations

import time
from typing import Protocol

__all__ = [
    "record_event", "record_event_duration_secs", "record_event_time_span", "record_scalar",
    "register_event_listener", "register_event_duration_secs_listener",
    "register_event_time_span_listener", "register_scalar_listener",
    "unregister_event_listener", "unregister_event_duration_listener",
    "unregister_event_time_span_listener", "unregister_scalar_listener",
    "clear_event_listeners", "get_event_listeners", "get_event_duration_listeners",
    "get_event_time_span_listeners", "get_scalar_listeners",
    "JAXPR_TRACE_EVENT", "BACKEND_COMPILE_EVENT", "record_elapsed"]

JAXPR_TRACE_EVENT = "/jax/core/compile/jaxpr_trace_duration"
BACKEND_COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"


class EventListenerWithMetadata(Protocol):
  def __call__(self, event: str, **kwargs: str | int) -> None: ...


class EventDurationListenerWithMetadata(Protocol):
  def __call__(self, event: str, duration_secs: float, **kwargs: str | int) -> None: ...


class EventTimeSpanListenerWithMetadata(Protocol):
  def __call__(self, event: str, start_time: float, end_time: float,
               **kwargs: str | int) -> None: ...


class ScalarListenerWithMetadata(Protocol):
  def __call__(self, event: str, value: float | int, **kwargs: str | int) -> None: ...


# Lists are replaced, never mutated, so a record_* running on another thread iterates a
# stable snapshot while listeners are (un)registered.
_event_listeners: list = []
_event_duration_secs_listeners: list = []
_event_time_span_listeners: list = []
_scalar_listeners: list = []


def record_event(event: str, **kwargs: str | int) -> None:
  """Record that ``event`` happened: calls each event listener as ``cb(event, **kwargs)``.

  Pass the keyword metadata in the same order every time for one event (as JAX asks).
  """
  for callback in _event_listeners:
    callback(event, **kwargs)


def record_event_duration_secs(event: str, duration: float, **kwargs: str | int) -> None:
  """Record a duration in seconds: calls each duration listener as
  ``cb(event, duration, **kwargs)``."""
  for callback in _event_duration_secs_listeners:
    callback(event, duration, **kwargs)


def record_event_time_span(event: str, start_time: float, end_time: float,
                           **kwargs: str | int) -> None:
  """Record a start and end time (seconds since the epoch): calls each time-span listener
  as ``cb(event, start_time, end_time, **kwargs)``."""
  for callback in _event_time_span_listeners:
    callback(event, start_time, end_time, **kwargs)


def record_scalar(event: str, value: float | int, **kwargs: str | int) -> None:
  """Record a scalar value: calls each scalar listener as ``cb(event, value, **kwargs)``."""
  for callback in _scalar_listeners:
    callback(event, value, **kwargs)


def register_event_listener(callback: EventListenerWithMetadata) -> None:
  """Call ``callback(event, **kwargs)`` at every ``record_event``."""
  global _event_listeners
  _event_listeners = _event_listeners + [callback]


def register_event_duration_secs_listener(callback: EventDurationListenerWithMetadata) -> None:
  """Call ``callback(event, duration_secs, **kwargs)`` at every
  ``record_event_duration_secs``."""
  global _event_duration_secs_listeners
  _event_duration_secs_listeners = _event_duration_secs_listeners + [callback]


def register_event_time_span_listener(callback: EventTimeSpanListenerWithMetadata) -> None:
  """Call ``callback(event, start_time, end_time, **kwargs)`` at every
  ``record_event_time_span``."""
  global _event_time_span_listeners
  _event_time_span_listeners = _event_time_span_listeners + [callback]


def register_scalar_listener(callback: ScalarListenerWithMetadata) -> None:
  """Call ``callback(event, value, **kwargs)`` at every ``record_scalar``."""
  global _scalar_listeners
  _scalar_listeners = _scalar_listeners + [callback]


def _without(listeners, callback, what):
  if callback not in listeners:
    raise AssertionError(f"{callback!r} is not a registered {what} listener")
  out = list(listeners)
  out.remove(callback)
  return out


def unregister_event_listener(callback: EventListenerWithMetadata) -> None:
  """Remove an event listener; ``AssertionError`` if it is not registered (as in JAX)."""
  global _event_listeners
  _event_listeners = _without(_event_listeners, callback, "event")


def unregister_event_duration_listener(callback: EventDurationListenerWithMetadata) -> None:
  """Remove a duration listener; ``AssertionError`` if it is not registered."""
  global _event_duration_secs_listeners
  _event_duration_secs_listeners = _without(_event_duration_secs_listeners, callback,
                                            "event duration")


def unregister_event_time_span_listener(callback: EventTimeSpanListenerWithMetadata) -> None:
  """Remove a time-span listener; ``AssertionError`` if it is not registered."""
  global _event_time_span_listeners
  _event_time_span_listeners = _without(_event_time_span_listeners, callback,
                                        "event time span")


def unregister_scalar_listener(callback: ScalarListenerWithMetadata) -> None:
  """Remove a scalar listener; ``AssertionError`` if it is not registered."""
  global _scalar_listeners
  _scalar_listeners = _without(_scalar_listeners, callback, "scalar")


def clear_event_listeners() -> None:
  """Remove every listener of every kind.

  Differs from JAX 0.10, whose version leaves scalar listeners registered (a missing
  ``global``): here they are removed too, as the name says.
  """
  global _event_listeners, _event_duration_secs_listeners, _event_time_span_listeners
  global _scalar_listeners
  _event_listeners = []
  _event_duration_secs_listeners = []
  _event_time_span_listeners = []
  _scalar_listeners = []


def get_event_listeners() -> list:
  """A copy of the registered event listeners."""
  return list(_event_listeners)


def get_event_duration_listeners() -> list:
  """A copy of the registered duration listeners."""
  return list(_event_duration_secs_listeners)


def get_event_time_span_listeners() -> list:
  """A copy of the registered time-span listeners."""
  return list(_event_time_span_listeners)


def get_scalar_listeners() -> list:
  """A copy of the registered scalar listeners."""
  return list(_scalar_listeners)


def any_listeners() -> bool:
  """Whether a duration, time-span or scalar listener is registered (cheap check)."""
  return bool(_event_duration_secs_listeners or _event_time_span_listeners
              or _scalar_listeners)


class record_elapsed:
  """Context manager recording ``event``'s start (scalar), duration and time span with
  ``fun_name`` metadata, as JAX does around tracing and compiling."""
  __slots__ = ("event", "fun_name", "start")

  def __init__(self, event: str, fun_name: str):
    self.event = event
    self.fun_name = fun_name

  def __enter__(self):
    self.start = time.time()
    if _scalar_listeners:
      record_scalar(self.event, self.start, fun_name=self.fun_name)
    return self

  def __exit__(self, exc_type, exc, tb):
    end = time.time()
    if _event_duration_secs_listeners:
      record_event_duration_secs(self.event, end - self.start, fun_name=self.fun_name)
    if _event_time_span_listeners:
      record_event_time_span(self.event, self.start, end, fun_name=self.fun_name)
    return False
