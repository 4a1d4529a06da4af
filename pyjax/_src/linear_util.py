"""Wrapped functions with composable transformations (JAX's ``linear_util``).

A ``WrappedFun`` is a Python callable plus a stack of transformations applied when it is
called (``call_wrapped``).  A transformation is either

* new style (``transformation2`` / ``transformation_with_aux2``): a function
  ``t(f, *static_args, *args, **kwargs)`` that calls ``f`` (the function below it) itself;
  the ``_with_aux`` flavour also receives a ``Store`` (after ``f``) to put auxiliary
  output in;
* old style (``transformation`` / ``transformation_with_aux``): a generator
  ``t(*static_args, *args, **kwargs)`` that yields ``(args, kwargs)`` for the function
  below, receives its answer and yields the transformed answer (``(answer, aux)`` for the
  ``_with_aux`` flavour).

Auxiliary outputs are read after a call through the thunk returned with the wrapped
function (``out_tree()`` after ``flatten_fun``); ``call_wrapped`` resets the stores first.
pyjax's own transformations do not use this module (they trace flat functions directly);
it exists for code written against JAX's ``jax.extend.linear_util`` and ``jax.api_util``.
"""
from __future__ import annotations

import functools
import weakref

from pyjax._src import core


class StoreException(Exception):
  """A store read before it was written, or written twice."""


class _EmptyStoreValue:
  pass


_EMPTY = _EmptyStoreValue()


class Store:
  """A one-shot box for an auxiliary output of a wrapped function."""
  __slots__ = ("_val",)

  def __init__(self):
    self._val = _EMPTY

  def store(self, val):
    if self._val is not _EMPTY:
      raise StoreException("Store occupied")
    self._val = val

  def reset(self):
    self._val = _EMPTY

  @property
  def val(self):
    if self._val is _EMPTY:
      raise StoreException("Store empty")
    return self._val

  def __nonzero__(self):
    return self._val is not _EMPTY

  __bool__ = __nonzero__


class EqualStore:
  """A store that accepts a second write of an equal value (JAX's ``EqualStore``)."""
  __slots__ = ("_store",)

  def __init__(self):
    self._store = Store()

  @property
  def val(self):
    return self._store.val

  def store(self, val):
    try:
      self._store.store(val)
    except StoreException as e:
      try:
        okay = bool(self._store._val == val)
      except Exception:
        raise e from None
      if not okay:
        raise StoreException("Store occupied with not-equal value") from None

  def reset(self):
    self._store.reset()

  def __bool__(self):
    return bool(self._store)


class WrappedFun:
  """``f`` with transformations (outermost last in ``transforms``), static ``params``
  passed as keyword arguments to ``f``, and ``debug_info``."""
  __slots__ = ("f", "f_transformed", "transforms", "stores", "params", "in_type",
               "debug_info")

  def __init__(self, f, f_transformed, transforms, stores, params, in_type, debug_info):
    self.f = f
    self.f_transformed = f_transformed
    self.transforms = transforms
    self.stores = stores
    self.params = params
    self.in_type = in_type
    self.debug_info = debug_info

  @property
  def __name__(self):
    return getattr(self.f, "__name__", "<unnamed wrapped function>")

  def wrap(self, gen, gen_static_args, out_store, new_style=True):
    """This function with the transformation ``gen`` applied on top."""
    below = self.f_transformed
    if new_style:
      if out_store is None:
        def f_transformed(*args, **kwargs):
          return gen(below, *gen_static_args, *args, **kwargs)
      else:
        def f_transformed(*args, **kwargs):
          return gen(below, out_store, *gen_static_args, *args, **kwargs)
    else:
      def f_transformed(*args, **kwargs):
        g = gen(*gen_static_args, *args, **kwargs)
        sub_args, sub_kwargs = next(g)
        ans = below(*sub_args, **sub_kwargs)
        out = g.send(ans)
        if out_store is not None:
          out, aux = out
          out_store.store(aux)
        g.close()
        return out
    return WrappedFun(self.f, f_transformed, self.transforms + ((gen, gen_static_args),),
                      self.stores + (out_store,), self.params, None, self.debug_info)

  def populate_stores(self, values):
    """Put ``values`` (one per store, as ``store_values`` returns) into the stores."""
    for store, val in zip(self.stores, values):
      if store is not None:
        store.reset()
        if val is not _EMPTY:
          store.store(val)

  def store_values(self):
    """The current value of each store (an empty marker where unset)."""
    return tuple(_EMPTY if s is None or not s else s.val for s in self.stores)

  def call_wrapped(self, *args, **kwargs):
    """Call ``f`` through every transformation (stores are emptied first)."""
    for store in self.stores:
      if store is not None:
        store.reset()
    return self.f_transformed(*args, **kwargs)

  def with_unknown_names(self):
    return self

  def __repr__(self):
    names = [getattr(g, "__name__", repr(g)) for g, _ in self.transforms]
    return f"Wrapped function:\n  {self.__name__}\n  transforms: {names}"

  def __hash__(self):
    return hash((self.f, self.transforms, tuple(sorted(self.params)), self.in_type))

  def __eq__(self, other):
    return (isinstance(other, WrappedFun) and self.f == other.f
            and self.transforms == other.transforms and self.params == other.params
            and self.in_type == other.in_type)


def wrap_init(f, params=None, *, debug_info=None):
  """``f`` as a ``WrappedFun`` with no transformations; ``params`` (a dict) are passed
  to it as keyword arguments on every call."""
  params = () if params is None else tuple(sorted(dict(params).items()))
  kw = dict(params)
  if kw:
    @functools.wraps(f)
    def base(*args, **kwargs):
      return f(*args, **kw, **kwargs)
  else:
    base = f
  return WrappedFun(f, base, (), (), params, None, debug_info)


def annotate(f, in_type):
  """``f`` with an input type annotation."""
  return WrappedFun(f.f, f.f_transformed, f.transforms, f.stores, f.params, in_type,
                    f.debug_info)


def _missing_debug_info(for_what):
  from pyjax._src.interpreters.staging import DebugInfo
  return DebugInfo("missing_debug_info", for_what, None, for_what)


# --- transformation decorators ----------------------------------------------------------
def transformation2(gen, fun, *gen_static_args):
  """New-style transformation: ``gen(f, *static, *args, **kw)`` calls ``f`` itself."""
  return fun.wrap(gen, gen_static_args, None)


def transformation_with_aux2(gen, fun, *gen_static_args, use_eq_store=False):
  """New-style transformation with an auxiliary output: ``gen(f, store, *static, *args,
  **kw)``; returns ``(wrapped, thunk)`` where ``thunk()`` reads the store after a call."""
  out_store = EqualStore() if use_eq_store else Store()
  return fun.wrap(gen, gen_static_args, out_store), (lambda: out_store.val)


def transformation(gen, fun, *gen_static_args):
  """Old-style (generator) transformation."""
  return fun.wrap(gen, gen_static_args, None, new_style=False)


def transformation_with_aux(gen, fun, *gen_static_args, use_eq_store=False):
  """Old-style (generator) transformation yielding ``(answer, aux)``."""
  out_store = EqualStore() if use_eq_store else Store()
  return (fun.wrap(gen, gen_static_args, out_store, new_style=False),
          (lambda: out_store.val))


def _decorator(kind):
  def decorate(gen):
    @functools.wraps(gen)
    def apply(fun, *gen_static_args, **kw):
      return kind(gen, fun, *gen_static_args, **kw)
    return apply
  return decorate


# ``@transformation2`` etc. are used as decorators in JAX code.
transformation2 = _decorator(transformation2)
transformation_with_aux2 = _decorator(transformation_with_aux2)
transformation = _decorator(transformation)
transformation_with_aux = _decorator(transformation_with_aux)


def fun_name(f):
  """The name of a function or WrappedFun (``<unnamed function>`` when it has none)."""
  if isinstance(f, WrappedFun):
    f = f.f
  try:
    return f.__name__
  except AttributeError:
    return str(f)


def merge_linear_aux(aux1, aux2):
  """The value of whichever of two aux thunks was written, with True when it was the
  first; StoreException when neither or both were."""
  try:
    out1 = aux1()
  except StoreException:
    try:
      out2 = aux2()
    except StoreException:
      raise StoreException("neither store occupied") from None
    return False, out2
  try:
    aux2()
  except StoreException:
    return True, out1
  raise StoreException("both stores occupied")


def cache(call, *, explain=None):
  """Memoize ``call(fun: WrappedFun, *args)`` on the wrapped function (its ``f`` held
  weakly), its transformations, params, the other arguments and the tracing flags."""
  del explain
  fun_caches = weakref.WeakKeyDictionary()

  @functools.wraps(call)
  def memoized(fun, *args):
    key = (fun.transforms, fun.params, fun.in_type, args, core._trace_state_key())
    try:
      per_fun = fun_caches.setdefault(fun.f, {})
    except TypeError:   # f cannot be weakly referenced: no caching
      return call(fun, *args)
    hit = per_fun.get(key, _EMPTY)
    if hit is not _EMPTY:
      ans, values = hit
      fun.populate_stores(values)
      return ans
    ans = call(fun, *args)
    per_fun[key] = (ans, fun.store_values())
    return ans

  memoized.cache_clear = fun_caches.clear
  return memoized
