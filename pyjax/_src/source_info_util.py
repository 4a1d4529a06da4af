"""Source locations of staged equations (JAX's ``source_info_util``) over pyjax's.

pyjax records an equation's source as the innermost frame outside pyjax (and outside any
path registered with ``register_exclusion``), and keeps the name stack of
``named_scope``.  ``SourceInfo`` pairs the two; ``current()`` is the source info an
equation bound here would get.  Differences from JAX: a source info holds one frame (not
a whole traceback); the name stack is a ``NameStack`` of strings, not attached to
equations.
"""
from __future__ import annotations

import contextlib
import os
import sys

from pyjax._src import core


class NameStack:
  """A stack of scope names (outermost first); ``str`` joins them with ``/``."""
  __slots__ = ("stack",)

  def __init__(self, stack=()):
    self.stack = tuple(stack)

  def extend(self, name):
    names = name if isinstance(name, tuple) else (name,)
    return NameStack(self.stack + names)

  def wrap_name(self, name):
    return f"{name}({self})" if self.stack else name

  def transform(self, transform_name):
    return NameStack(self.stack + (transform_name,))

  def __len__(self):
    return len(self.stack)

  def __add__(self, other):
    return NameStack(self.stack + tuple(other.stack))

  def __eq__(self, other):
    return isinstance(other, NameStack) and self.stack == other.stack

  def __hash__(self):
    return hash(self.stack)

  def __str__(self):
    return "/".join(self.stack)

  def __repr__(self):
    return f"NameStack({self.stack!r})"


def new_name_stack(name=""):
  """A name stack holding ``name`` (empty for "")."""
  return NameStack((name,) if name else ())


class SourceInfo:
  """Where an equation came from: ``frame`` (pyjax's ``(code, lasti)`` or None) and the
  name stack."""
  __slots__ = ("frame", "name_stack")

  def __init__(self, frame=None, name_stack=None):
    self.frame = frame
    self.name_stack = name_stack if name_stack is not None else NameStack()

  def replace(self, frame=None, name_stack=None):
    return SourceInfo(self.frame if frame is None else frame,
                      self.name_stack if name_stack is None else name_stack)

  @property
  def traceback(self):
    return self.frame

  def __repr__(self):
    return f"SourceInfo({summarize(self)!r})"


def _frame_outside():
  f = sys._getframe(1)
  while f is not None and f.f_code.co_filename.startswith(_exclusions()):
    f = f.f_back
  return None if f is None else (f.f_code, f.f_lasti)


def _exclusions():
  return core._source_exclusions + (os.path.dirname(os.path.abspath(__file__)) + os.sep,)


def new_source_info():
  """An empty source info."""
  return SourceInfo(None, NameStack())


def current():
  """The source info of an equation bound here: the frame being re-bound (while a jaxpr
  is evaluated) or the innermost user frame, and the current name stack."""
  frame = core._state.source_info or _frame_outside()
  return SourceInfo(frame, current_name_stack())


def current_name_stack():
  """The name stack of the enclosing ``named_scope``s."""
  from pyjax._src import api
  return NameStack(api._name_stack.names)


@contextlib.contextmanager
def extend_name_stack(name):
  """Context manager pushing ``name`` on the name stack."""
  from pyjax._src import api
  prev = api._name_stack.names
  api._name_stack.names = prev + (name,)
  try:
    yield
  finally:
    api._name_stack.names = prev


@contextlib.contextmanager
def set_name_stack(name_stack):
  """Context manager replacing the name stack."""
  from pyjax._src import api
  prev = api._name_stack.names
  api._name_stack.names = tuple(name_stack.stack)
  try:
    yield
  finally:
    api._name_stack.names = prev


def reset_name_stack():
  """Context manager emptying the name stack."""
  return set_name_stack(NameStack())


def transform_name_stack(name):
  """Context manager pushing a transformation's name on the name stack."""
  return extend_name_stack(name)


@contextlib.contextmanager
def user_context(c, *, name_stack=None):
  """Context manager making the equations bound inside take their source from ``c`` (a
  ``SourceInfo``, a pyjax frame pair, or None) and, if given, ``name_stack``."""
  frame = c.frame if isinstance(c, SourceInfo) else c
  state = core._state
  prev = state.source_info
  if frame is not None:
    state.source_info = frame
  try:
    if name_stack is not None:
      with set_name_stack(name_stack):
        yield
    else:
      yield
  finally:
    state.source_info = prev


def register_exclusion(path):
  """Frames from files under ``path`` are never an equation's source."""
  if not path.startswith(core._source_exclusions):
    core._source_exclusions = core._source_exclusions + (path,)


def summarize(source_info, num_frames=1):
  """``file:line:column (function)`` of a source info ("unknown" without a frame)."""
  del num_frames
  frame = source_info.frame if isinstance(source_info, SourceInfo) else source_info
  return core.summarize_source(frame)
