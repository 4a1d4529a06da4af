"""jnp.ufunc objects (NumPy's ufunc protocol on pyjax functions) and jnp.frompyfunc.

A ``ufunc`` wraps a scalar function (vectorized with ``jnp.vectorize`` when called) and
provides ``reduce``, ``accumulate``, ``at`` (with ``inplace=False``), ``reduceat`` and
``outer``.  Specialized implementations may be passed in (``call=``, ``reduce=``, ...);
the generic ones loop with ``lax.fori_loop``/``lax.scan`` over the reduced axis, so they
work for any binary function (no associativity assumed: a left fold, like NumPy).

The named ufuncs of jax.numpy (``jnp.add``, ``jnp.maximum``, ... -- exactly JAX's set) are
defined at the end.  Differs from JAX: ``jnp.maximum.at``/``jnp.minimum.at`` scatter (JAX
applies the updates one at a time), so with ties between updates and the array the
gradient is shared among all tied values at once rather than halved at each step.
"""
from __future__ import annotations

import functools
import math
import operator

import numpy as np

from pyjax._src import dtypes
from pyjax._src.lax import lax_api as lax
from pyjax._src.numpy import manipulation as _manip
from pyjax._src.numpy import reductions as _red
from pyjax._src.numpy.array_constructors import asarray as _asarray
from pyjax._src.numpy.util import canonicalize_axis, check_arraylike
from pyjax._src.numpy.vectorize import vectorize, _vmap

__all__ = ["ufunc", "frompyfunc"]
# The jnp functions that are ufunc objects in JAX (appended to __all__ below, so that
# ``from ufunc_objects import *`` in pyjax.numpy replaces the plain functions).
_UFUNC_NAMES = ("add", "bitwise_and", "bitwise_or", "bitwise_xor", "logaddexp", "logaddexp2",
                "logical_and", "logical_or", "logical_xor", "maximum", "minimum", "multiply",
                "negative", "subtract")

_AT_INPLACE_WARNING = (
    "Because JAX arrays are immutable, jnp.ufunc.at() cannot operate inplace like\n"
    "np.ufunc.at(). Instead, you can pass inplace=False and capture the result; e.g.\n"
    ">>> arr = jnp.add.at(arr, ind, val, inplace=False)\n")


def _one(x):
  x = _asarray(x)
  return lax.full((), 1, x.dtype)


def _result_dtype(f, *args):
  from pyjax._src.api import eval_shape
  return eval_shape(f, *[_one(a) for a in args]).dtype


def _fori(lo, hi, body, init):
  fl = getattr(lax, "fori_loop", None)
  if fl is not None:
    return fl(lo, hi, body, init)
  val = init
  for i in range(lo, hi):
    val = body(i, val)
  return val


def _generic_call(func, name):
  """The call of a ufunc built without ``call=``: ``func`` vectorized (built on first use),
  with JAX's checks of ``out`` and ``where``."""
  vectorized = None

  def call(*args, out=None, where=None):
    nonlocal vectorized
    check_arraylike(name, *args)
    if out is not None:
      raise NotImplementedError(f"out argument of <jnp.ufunc '{name}'>")
    if where is not None:
      raise NotImplementedError(f"where argument of <jnp.ufunc '{name}'>")
    if vectorized is None:
      vectorized = vectorize(func)
    return vectorized(*args)
  return call


# A ufunc is a functools.partial of the function its calls run: calling it then costs one
# C-level forwarding (partial's vectorcall), not a Python frame, so ``jnp.add(x, y)`` is as
# fast as the plain function it wraps (within ~0.1 us).
class ufunc(functools.partial):
  """A universal function: ``ufunc(func, nin, nout, *, name, nargs, identity, call, reduce,
  accumulate, at, reduceat)``.  Calls take ``out=None`` and ``where=None`` only.

  A ufunc built with ``call=`` (as ``jnp.add``, ``jnp.multiply``, ... are) dispatches
  straight to that function (no wrapper frame); those functions take ``out=None`` and
  ``where=None`` themselves and raise JAX's NotImplementedError for other values."""

  def __new__(cls, func, /, nin, nout, *, name=None, nargs=None, identity=None, call=None,
              reduce=None, accumulate=None, at=None, reduceat=None):
    name = name or func.__name__
    return super().__new__(cls, call if call is not None else _generic_call(func, name))

  def __init__(self, func, /, nin, nout, *, name=None, nargs=None, identity=None, call=None,
               reduce=None, accumulate=None, at=None, reduceat=None):
    self.__doc__ = func.__doc__
    self.__name__ = name or func.__name__
    self._func = func
    self.nin = operator.index(nin)
    self.nout = operator.index(nout)
    self.nargs = operator.index(nargs or nin)
    self.identity = identity
    self._impls = {"reduce": reduce, "accumulate": accumulate, "at": at,
                   "reduceat": reduceat}

  @property
  def _call(self):
    """The function ``self(...)`` runs."""
    return self.func

  def __reduce__(self):
    # The named ufuncs pickle and copy as the module globals they are.
    if _NAMED.get(self.__name__) is self:
      return self.__name__
    raise TypeError(f"cannot pickle {self!r}")

  def _key(self):
    return (self._func, self.__name__, self.identity, self.nin, self.nout, self.nargs)

  def __hash__(self):
    return hash(self._key())

  def __eq__(self, other):
    return isinstance(other, ufunc) and self._key() == other._key()

  def __repr__(self):
    return f"<jnp.ufunc '{self.__name__}'>"

  def _check_binary(self, what):
    if self.nin != 2:
      raise ValueError(f"{what} only supported for binary ufuncs")
    if self.nout != 1:
      raise ValueError(f"{what} only supported for functions returning a single value")

  # --- reduce ---------------------------------------------------------------------------
  def reduce(self, a, axis=0, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """Left fold of the binary ufunc along ``axis`` (None: all axes flattened)."""
    check_arraylike(f"{self.__name__}.reduce", a)
    self._check_binary("reduce")
    if out is not None:
      raise NotImplementedError(f"out argument of {self.__name__}.reduce()")
    if initial is not None:
      check_arraylike(f"{self.__name__}.reduce", initial)
    if where is not None:
      check_arraylike(f"{self.__name__}.reduce", where)
      if self.identity is None and initial is None:
        raise ValueError(f"reduction operation {self.__name__!r} does not have an identity, so "
                         "to use a where mask one has to specify 'initial'.")
      wd = _asarray(where).dtype
      if wd != dtypes.bool_:
        raise ValueError(f"where argument must have dtype=bool; got dtype={wd}")
    impl = self._impls["reduce"] or self._reduce_via_loop
    return impl(a, axis=axis, dtype=dtype, keepdims=keepdims, initial=initial, where=where)

  def _reduce_via_loop(self, arr, axis=0, dtype=None, keepdims=False, initial=None,
                       where=None):
    arr = _asarray(arr)
    if initial is None:
      initial = self.identity
    if dtype is None:
      dtype = _result_dtype(self._func, arr, arr)
    if where is not None:
      where = _red._broadcast_to(_asarray(where), arr.shape)
    if isinstance(axis, tuple):
      raise NotImplementedError("tuple of axes")
    if axis is None:
      final_shape = (1,) * arr.ndim if keepdims else ()
      arr = _manip.ravel(arr)
      if where is not None:
        where = _manip.ravel(where)
      axis = 0
    else:
      axis = canonicalize_axis(axis, arr.ndim)
      final_shape = (arr.shape[:axis] + (1,) + arr.shape[axis + 1:] if keepdims
                     else arr.shape[:axis] + arr.shape[axis + 1:])
    if axis != 0:
      arr = _manip.moveaxis(arr, axis, 0)
      if where is not None:
        where = _manip.moveaxis(where, axis, 0)
    if arr.shape[0] == 0:
      if initial is None:
        raise ValueError(f"zero-size array to reduction operation {self.__name__} which has "
                         "no identity")
      return lax.full(final_shape, initial, dtype)

    def body(i, val):
      new = lax.convert_element_type(self(val, lax.convert_element_type(arr[i], dtype)),
                                     dtype)
      return new if where is None else _red._where(where[i], new, val)
    if initial is None:
      start, val = 1, arr[0]
    else:
      start, val = 0, initial
    val = _red._broadcast_to(lax.convert_element_type(_asarray(val), dtype), arr.shape[1:])
    result = _fori(start, arr.shape[0], body, val)
    return lax.reshape(result, final_shape) if keepdims else result

  # --- accumulate -----------------------------------------------------------------------
  def accumulate(self, a, axis=0, dtype=None, out=None):
    """Running left fold along ``axis`` (the first element unchanged)."""
    self._check_binary("accumulate")
    if out is not None:
      raise NotImplementedError(f"out argument of {self.__name__}.accumulate()")
    impl = self._impls["accumulate"] or self._accumulate_via_scan
    return impl(a, axis=axis, dtype=dtype)

  def _accumulate_via_scan(self, arr, axis=0, dtype=None):
    check_arraylike(f"{self.__name__}.accumulate", arr)
    arr = _asarray(arr)
    if dtype is None:
      dtype = _result_dtype(self._func, arr, arr)
    if axis is None or isinstance(axis, tuple):
      raise ValueError("accumulate does not allow multiple axes")
    axis = canonicalize_axis(axis, arr.ndim)
    if arr.size == 0:
      return lax.full(arr.shape, 0, dtype)
    arr = _manip.moveaxis(arr, axis, 0)
    first = lax.convert_element_type(arr[0], dtype)
    scan = getattr(lax, "scan", None)
    if scan is not None:
      def step(carry, x):
        y = lax.convert_element_type(self(carry, lax.convert_element_type(x, dtype)), dtype)
        return y, y
      _, rest = scan(step, first, arr[1:])
      result = _manip.concatenate([first[None], rest], 0)
    else:
      vals = [first]
      for i in range(1, arr.shape[0]):
        vals.append(lax.convert_element_type(
            self(vals[-1], lax.convert_element_type(arr[i], dtype)), dtype))
      result = _manip.stack(vals, 0)
    return _manip.moveaxis(result, 0, axis)

  # --- at -------------------------------------------------------------------------------
  def at(self, a, indices, b=None, /, *, inplace=True):
    """``a`` with ``self(a[indices], b)`` applied at ``indices`` one index at a time
    (repeated indices accumulate).  Requires ``inplace=False``."""
    if inplace:
      raise NotImplementedError(_AT_INPLACE_WARNING)
    impl = self._impls["at"] or self._at_via_loop
    return impl(a, indices) if b is None else impl(a, indices, b)

  def _at_via_loop(self, a, indices, *args):
    check_arraylike(f"{self.__name__}.at", a, *args)
    dtype = _result_dtype(self._func, a, *args)
    a = lax.convert_element_type(_asarray(a), dtype)
    args = tuple(lax.convert_element_type(_asarray(x), dtype) for x in args)
    if not isinstance(indices, tuple):
      indices = (indices,)
    indices = tuple(i if isinstance(i, slice) or i is None or i is Ellipsis else _asarray(i)
                    for i in indices)
    if not indices:
      return a
    shapes = [np.shape(i) for i in indices if not isinstance(i, slice)]
    shape = lax.broadcast_shapes(*shapes) if shapes else ()
    if not shape:
      return a.at[indices].set(self(a.at[indices].get(), *args))
    n = math.prod(shape)
    if args:
      x = args[0]
      x = _red._broadcast_to(x, shape + x.shape[len(shape):])
      args = (lax.reshape(x, (n,) + x.shape[len(shape):]),)
    flat = [i if isinstance(i, slice) else _manip.ravel(_red._broadcast_to(i, shape))
            for i in indices]

    def body(i, a):
      idx = tuple(ind if isinstance(ind, slice) else ind[i] for ind in flat)
      return a.at[idx].set(self(a.at[idx].get(), *(x[i] for x in args)))
    return _fori(0, n, body, a)

  # --- reduceat -------------------------------------------------------------------------
  def reduceat(self, a, indices, axis=0, dtype=None, out=None):
    """Reductions over the slices ``[indices[i], indices[i+1])`` along ``axis``."""
    self._check_binary("reduceat")
    if out is not None:
      raise NotImplementedError(f"out argument of {self.__name__}.reduceat()")
    impl = self._impls["reduceat"] or self._reduceat_via_loop
    return impl(a, indices, axis=axis, dtype=dtype)

  def _reduceat_via_loop(self, a, indices, axis=0, dtype=None):
    check_arraylike(f"{self.__name__}.reduceat", a, indices)
    a = _asarray(a)
    idx = _asarray(indices)
    if a.ndim == 0:
      raise ValueError(f"reduceat: a must have 1 or more dimension, got a.shape={a.shape}")
    if idx.ndim != 1:
      raise ValueError(f"reduceat: indices must be one-dimensional, got "
                       f"indices.shape={idx.shape}")
    if dtype is None:
      dtype = a.dtype
    if axis is None or isinstance(axis, (tuple, list)):
      raise ValueError("reduceat requires a single integer axis.")
    axis = canonicalize_axis(axis, a.ndim)
    from pyjax._src.numpy.indexing import take
    out = take(a, idx, axis=axis)
    bounds = _manip.concatenate([idx, _asarray([a.shape[axis]], dtype=idx.dtype)])
    keep = [d for d in range(out.ndim) if d != axis]
    ind = lax.expand_dims(bounds, tuple(keep))
    sl = [slice(None)] * out.ndim
    sl[axis] = slice(0, bounds.shape[0] - 1)
    start = ind[tuple(sl)]
    sl[axis] = slice(1, bounds.shape[0])
    end = ind[tuple(sl)]

    def body(i, out):
      i_arr = _asarray(i)
      inside = lax.bitwise_and(lax.gt(i_arr, start), lax.lt(i_arr, end))
      term = take(a, lax.expand_dims(i_arr, (0,)), axis=axis)
      return _red._where(inside, lax.convert_element_type(self(out, term), out.dtype), out)
    return _fori(0, a.shape[axis], body, out)

  # --- outer ----------------------------------------------------------------------------
  def outer(self, A, B, /):
    """``self(A[i...], B[j...])`` for all pairs: shape ``A.shape + B.shape``."""
    self._check_binary("outer")
    check_arraylike(f"{self.__name__}.outer", A, B)
    A, B = _asarray(A), _asarray(B)
    fa, fb = lax.reshape(A, (A.size,)), lax.reshape(B, (B.size,))
    result = _vmap(_vmap(self, (None, 0)), (0, None))(fa, fb)
    return lax.reshape(result, A.shape + B.shape)


def frompyfunc(func, /, nin, nout, *, identity=None):
  """A ``ufunc`` from a scalar function of ``nin`` arguments (vectorized with
  jnp.vectorize; it must be traceable)."""
  return ufunc(func, nin, nout, identity=identity)


# --- the named ufuncs of jax.numpy --------------------------------------------------------
# Each dispatches its call straight to the function in pyjax._src.numpy.ufuncs; reduce,
# accumulate and at use the matching reduction / cumulative / scatter where one exists (as
# JAX does, so dtypes follow jnp.sum, jnp.cumsum, ...), the generic loops otherwise.
from pyjax._src.numpy import ufuncs as _uf  # noqa: E402


def _axes(axis, ndim):
  if axis is None:
    return tuple(range(ndim))
  if isinstance(axis, (tuple, list)):
    return tuple(canonicalize_axis(a, ndim) for a in axis)
  return (canonicalize_axis(axis, ndim),)


def _with_initial(uf, result, initial):
  if initial is None:
    return result
  return lax.convert_element_type(uf(result, initial), result.dtype)


_BOOL_SCATTER = {"add": "max", "multiply": "min"}  # logical or / and


def _scatter_at(uf_name, method):
  def at(a, indices, b):
    check_arraylike(f"{uf_name}.at", a, b)
    a = _asarray(a)
    m = _BOOL_SCATTER.get(method, method) if a.dtype == dtypes.bool_ else method
    return getattr(a.at[indices], m)(b)
  return at


def _reduction_reduce(red, uf_name, takes_dtype=True, takes_initial=True):
  def reduce(a, axis=0, dtype=None, keepdims=False, initial=None, where=None):
    kw = {"axis": axis, "keepdims": keepdims, "where": where}
    if takes_dtype:
      kw["dtype"] = dtype
    if takes_initial:
      kw["initial"] = initial
    out = red(a, **kw)
    if not takes_initial:
      out = _with_initial(_NAMED[uf_name], out, initial)
    if dtype is not None and not takes_dtype:
      out = lax.convert_element_type(out, dtype)
    return out
  return reduce


def _cumulative_accumulate(cum, lax_cum=False):
  def accumulate(a, axis=0, dtype=None):
    check_arraylike("accumulate", a)
    if axis is None or isinstance(axis, tuple):
      raise ValueError("accumulate does not allow multiple axes")
    if not lax_cum:
      return cum(a, axis=axis, dtype=dtype)
    a = _asarray(a)
    if dtype is not None:
      a = lax.convert_element_type(a, dtype)
    axis = canonicalize_axis(axis, a.ndim)
    if a.dtype == dtypes.bool_:  # lax.cummax/cummin take numbers only
      return lax.convert_element_type(cum(lax.convert_element_type(a, np.uint8), axis=axis),
                                      dtypes.bool_)
    return cum(a, axis=axis)
  return accumulate


def _bitwise_reduce(lax_red, uf_name, logical):
  def reduce(a, axis=0, dtype=None, keepdims=False, initial=None, where=None):
    uf = _NAMED[uf_name]
    arr = _asarray(a)
    if logical:
      arr = lax.ne(arr, lax.full((), 0, arr.dtype)) if arr.dtype != dtypes.bool_ else arr
    elif not (arr.dtype == dtypes.bool_ or np.issubdtype(arr.dtype, np.integer)):
      raise ValueError(f"integer argument required; got dtype={arr.dtype}")
    if dtype is not None and np.dtype(dtype) != arr.dtype:
      return uf._reduce_via_loop(arr, axis=axis, dtype=dtype, keepdims=keepdims,
                                 initial=initial, where=where)
    axes = _axes(axis, arr.ndim)
    if where is not None:
      fill = lax.convert_element_type(_asarray(uf.identity), arr.dtype)
      arr = _red._where(_red._broadcast_to(_asarray(where), arr.shape), arr, fill)
    out = _with_initial(uf, lax_red(arr, axes), initial)
    if keepdims:
      out = lax.expand_dims(out, axes)
    return out
  return reduce


_NAMED = {}


def _named(name, nin, identity, **impls):
  u = ufunc(getattr(_uf, name), nin, 1, name=name, identity=identity,
            call=getattr(_uf, name), **impls)
  _NAMED[name] = u
  __all__.append(name)
  return u


add = _named("add", 2, 0, reduce=_reduction_reduce(_red.sum, "add"),
             accumulate=_cumulative_accumulate(_red.cumsum), at=_scatter_at("add", "add"))
multiply = _named("multiply", 2, 1, reduce=_reduction_reduce(_red.prod, "multiply"),
                  accumulate=_cumulative_accumulate(_red.cumprod),
                  at=_scatter_at("multiply", "multiply"))
maximum = _named("maximum", 2, None,
                 reduce=_reduction_reduce(_red.max, "maximum", takes_dtype=False),
                 accumulate=_cumulative_accumulate(lax.cummax, lax_cum=True),
                 at=_scatter_at("maximum", "max"))
minimum = _named("minimum", 2, None,
                 reduce=_reduction_reduce(_red.min, "minimum", takes_dtype=False),
                 accumulate=_cumulative_accumulate(lax.cummin, lax_cum=True),
                 at=_scatter_at("minimum", "min"))
subtract = _named("subtract", 2, None)
negative = _named("negative", 1, None)
logaddexp = _named("logaddexp", 2, -np.inf)
logaddexp2 = _named("logaddexp2", 2, -np.inf)
logical_and = _named("logical_and", 2, True,
                     reduce=_bitwise_reduce(lax.reduce_and, "logical_and", True))
logical_or = _named("logical_or", 2, False,
                    reduce=_bitwise_reduce(lax.reduce_or, "logical_or", True))
logical_xor = _named("logical_xor", 2, False,
                     reduce=_bitwise_reduce(lax.reduce_xor, "logical_xor", True))
bitwise_and = _named("bitwise_and", 2, -1,
                     reduce=_bitwise_reduce(lax.reduce_and, "bitwise_and", False))
bitwise_or = _named("bitwise_or", 2, 0,
                    reduce=_bitwise_reduce(lax.reduce_or, "bitwise_or", False))
bitwise_xor = _named("bitwise_xor", 2, 0,
                     reduce=_bitwise_reduce(lax.reduce_xor, "bitwise_xor", False))
assert tuple(sorted(_NAMED)) == _UFUNC_NAMES
