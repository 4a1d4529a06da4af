"""Argument checking and NumPy-style promotion for jax.numpy functions."""
from __future__ import annotations

import functools
import inspect

import numpy as np

from pyjax._src import core, dtypes
from pyjax._src.avals import ShapedArray
from pyjax._src.config import config
from pyjax._src import config as _cfg
from pyjax._src.lax import elementwise as lax_e
from pyjax._src.runtime.array import ArrayImpl, Array

_scalar_types = dtypes.python_scalar_types


def is_arraylike(x):
  t = type(x)
  return (t is ArrayImpl or t in _scalar_types or isinstance(x, (Array, np.ndarray, np.generic))
          or isinstance(x, (bool, int, float, complex)) or hasattr(x, "__jax_array__"))


def check_arraylike(fun_name, *args, emit_warning=False, stacklevel=3):
  """JAX's TypeError for lists, tuples and other non-array arguments."""
  for pos, x in enumerate(args):
    t = type(x)
    if t is ArrayImpl or t in _scalar_types:
      continue
    if not is_arraylike(x):
      raise TypeError(f"{fun_name} requires ndarray or scalar arguments, got {t} at "
                      f"position {pos}.")


def _aval(x):
  return x.aval if type(x) is ArrayImpl else core.get_aval(x)


def promote_dtypes(*args):
  """Cast all arguments to their common (JAX-promoted) dtype, keeping weak types."""
  if len(args) < 2:
    return [asarray_weak(x) for x in args]
  if len(args) == 2:
    x, y = args
    if type(x) is ArrayImpl and type(y) is ArrayImpl:  # fast path: nothing to convert
      ax, ay = x.aval, y.aval
      if ((ax.dtype is ay.dtype or ax.dtype == ay.dtype) and ax.weak_type == ay.weak_type
          and not (ax.weak_type and ax.dtype == dtypes.bool_)):  # weak bools promote to bool
        return [x, y]
  avals = [_aval(x) for x in args]
  to_dtype, weak = dtypes.lattice_result_type(*[(a.dtype, a.weak_type) for a in avals])
  return [_cast(x, a, to_dtype, weak, i) for i, (x, a) in enumerate(zip(args, avals))]


def _cast(x, aval, to_dtype, weak, position=0):
  t = type(x)
  if t in _scalar_types or isinstance(x, (np.ndarray, np.generic)):
    return constant(x, to_dtype, weak, position)
  if aval.dtype == to_dtype and aval.weak_type == weak:
    return _unwrap(x)
  return lax_e._convert_element_type(x, to_dtype, weak)


def _unwrap(x):
  """An object standing for an array (``__jax_array__``: an nnx Variable) as its array;
  Arrays and tracers as they are."""
  if type(x) is ArrayImpl or isinstance(x, (core.Tracer, Array)) or not hasattr(
      x, "__jax_array__"):
    return x
  return x.__jax_array__()


_arg_names = ("x", "y")


def constant(x, to_dtype, weak=False, position=0):
  """A Python/NumPy constant as a concrete Array of ``to_dtype`` (converted now, so a
  traced program sees a literal or constant, not a conversion).  Python ints must fit the
  default integer type (JAX's OverflowError); inside that range they wrap like C casts."""
  if type(x) is int:
    lo, hi = _INT_BOUNDS[dtypes.default_int_dtype()]
    if not lo <= x <= hi:
      path = _arg_names[position] if position < 2 else f"args[{position}]"
      raise OverflowError("An overflow was encountered while parsing an argument to a jitted "
                          f"computation, whose argument path is {path}. Got <class 'int'> "
                          f"with value {x}")
  # jax_transfer_guard: the transfer is of the host value as it is (a Python int: int32),
  # after an out-of-range int's OverflowError
  if _cfg.h2d_guarded:
    _guard_h2d(_host_aval(x))
  if type(x) is int:
    x = np.int64(x)
  elif isinstance(x, (np.ndarray, np.generic)):
    canon = dtypes.canonicalize_dtype(x.dtype)
    if canon != x.dtype:  # x64 off: int64 wraps to int32 etc. first, as device_put does
      with np.errstate(all="ignore"):
        x = np.asarray(x).astype(canon)
  if to_dtype == dtypes.bool_:
    buf = np.asarray(np.asarray(x) != 0)
  elif to_dtype in _INT_BOUNDS and type(x) is np.int64:
    buf = np.asarray(x).astype(to_dtype)  # integer to integer wraps silently
  else:
    with np.errstate(all="ignore"):  # float overflow to inf, NaN to int: as XLA, silently
      buf = np.asarray(x).astype(to_dtype)
  aval = ShapedArray(buf.shape, to_dtype, weak and to_dtype != dtypes.bool_)
  return core.host_constant(ArrayImpl(buf, aval, None, False))  # a literal when traced


def _guard_h2d(aval):
  """jax_transfer_guard: a host constant becoming an Array eagerly is an implicit transfer
  (inside a trace it becomes a literal: no transfer)."""
  if core._state.interp is core.eval_interpreter:
    from pyjax._src import transfer_guard
    transfer_guard.host_to_device(aval, None, False)


def library_function(fn=None, *, dynamic=(), jit=None):
  """Decorate a jax.numpy function that JAX runs as one jitted computation.

  ``jit=(name, static_argnames)`` (JAX's name for the inner ``jit`` equation and its static
  arguments): the function runs as a cached ``jit`` of its body, as in JAX -- eagerly one
  compiled call per argument signature (its tiers: ``compiler.library_calls``), and while
  staging one ``jit[name=...]`` equation.  Every argument outside ``static_argnames`` that
  the call passes is a traced argument (Python scalars too: ``clip(x, 0, 1)`` traces 0 and
  1, weakly typed; parameters left at their defaults are not arguments).  Calls whose
  static arguments are unhashable, or with list/tuple array arguments, run the body
  directly (its own checks raise JAX's errors), and so do eager calls on large Arrays
  (``EAGER_DIRECT_SIZE``: the eager backend's multi-threaded kernels serve them).

  Without ``jit`` (functions JAX inlines, such as ``mean``):

  * eagerly under ``jax.transfer_guard``, its NumPy-value arguments (and the Python scalars
    named in ``dynamic``, which JAX traces, e.g. ``q`` of quantile; others such as
    ``axis`` are static) are checked as implicit transfers, and the constants its body
    makes from Python scalars (an element count, ``0.5``, ``inf``) are not: under JAX they
    are literals of the compiled program;
  * while staging (``make_jaxpr``, ``jit``), the concrete Arrays among its arguments become
    constvars in argument order, as the arguments of JAX's inner ``jit`` equation do (the
    body may use them in another order)."""
  if fn is None:
    return functools.partial(library_function, dynamic=dynamic, jit=jit)
  sig = inspect.signature(fn) if dynamic or jit else None
  direct = _direct_call(fn, dynamic, sig)
  if jit is None:
    return direct
  return _jitted_call(fn, direct, jit[0], frozenset(jit[1]), sig)


def _direct_call(fn, dynamic, sig):
  """``fn`` run op by op, with the transfer-guard and staging rules of a jitted library
  function (see ``library_function``)."""

  @functools.wraps(fn)
  def wrapper(*args, **kwargs):
    interp = core._state.interp
    if interp is core.eval_interpreter:
      if not _cfg.h2d_guarded:
        return fn(*args, **kwargs)
      from pyjax._src import transfer_guard
      transfer_guard.check_library_arguments(args, kwargs, dynamic, sig)
      with transfer_guard.library_body():
        return fn(*args, **kwargs)
    if type(interp) is core.StagingInterpreter:
      for a in (*args, *kwargs.values()):
        if type(a) is ArrayImpl and a.aval.shape:
          interp.to_atom(a)
    return fn(*args, **kwargs)
  return wrapper


# Eagerly, a library function given an Array of at least this many elements runs op by op:
# its operations then run on the eager backend's prebuilt multi-threaded kernels (a jitted
# body's first calls run single-threaded NumPy until its native build arrives), and the
# dispatch cost a cached executable saves is negligible next to the work.
EAGER_DIRECT_SIZE = 65536


def _jitted_call(fn, direct, name, static, sig):
  """``fn`` as JAX runs it: ``jit(body, name=name)`` per set of static arguments."""
  from pyjax._src import api, compiler
  params = [p for p in sig.parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
  positional = tuple(p.name for p in params)
  posonly = frozenset(p.name for p in params if p.kind is p.POSITIONAL_ONLY)
  posonly_order = tuple(p.name for p in params if p.kind is p.POSITIONAL_ONLY)
  jits = {}

  def make(dyn_names, statics):
    def body(*values):
      kwargs = dict(statics)
      kwargs.update(zip(dyn_names, values))
      args = []
      for n in posonly_order:
        if n not in kwargs:
          break
        args.append(kwargs.pop(n))
      return fn(*args, **kwargs)
    body.__name__ = body.__qualname__ = name
    body.__signature__ = inspect.Signature(   # (the arguments' names in jaxpr debug info)
        [inspect.Parameter(n, inspect.Parameter.POSITIONAL_ONLY) for n in dyn_names])
    return api.jit(body)

  @functools.wraps(fn)
  def wrapper(*args, **kwargs):
    if len(args) > len(positional) or (kwargs and not posonly.isdisjoint(kwargs)):
      return direct(*args, **kwargs)   # (its own TypeError)
    dyn_names, values, statics = [], [], []
    eager = core._state.interp is core.eval_interpreter
    for n, v in (*zip(positional, args), *kwargs.items()):
      if n in static or v is None:
        statics.append((n, v))
      elif type(v) in (list, tuple) or (eager and type(v) in (ArrayImpl, np.ndarray)
                                         and v.size >= EAGER_DIRECT_SIZE):
        return direct(*args, **kwargs)
      else:
        dyn_names.append(n)
        values.append(v)
    key = (tuple(dyn_names), tuple(statics))
    try:
      jitted = jits.get(key)
    except TypeError:   # an unhashable static argument (an axis list): op by op
      return direct(*args, **kwargs)
    if jitted is None:
      jitted = jits[key] = make(*key)
    with compiler.library_calls():
      return jitted(*values)
  wrapper._jits = jits
  return wrapper


def _host_aval(x):
  from pyjax._src import transfer_guard
  return transfer_guard.host_aval(x)


def asarray_weak(x):
  """Python scalars and NumPy values become arrays (scalars weakly typed)."""
  t = type(x)
  if t is ArrayImpl or isinstance(x, core.Tracer):
    return x
  if hasattr(x, "__jax_array__") and not isinstance(x, Array):
    return x.__jax_array__()
  aval = core.get_aval(x)
  return constant(x, aval.dtype, aval.weak_type)


def promote_dtypes_inexact(*args):
  """Promote, then move integer/bool results to the default float (like jnp.sin)."""
  avals = [_aval(x) for x in args]
  to_dtype, weak = dtypes.lattice_result_type(*[(a.dtype, a.weak_type) for a in avals])
  to_dtype = dtypes.canonicalize_dtype(dtypes.to_inexact_dtype(to_dtype))
  return [_cast(x, a, to_dtype, weak, i) for i, (x, a) in enumerate(zip(args, avals))]


def promote_dtypes_numeric(*args):
  """Promote, then move a bool result to int32 (JAX's ``to_numeric_dtype``: int32 even
  with x64 enabled)."""
  avals = [_aval(x) for x in args]
  to_dtype, weak = dtypes.lattice_result_type(*[(a.dtype, a.weak_type) for a in avals])
  if to_dtype == dtypes.bool_:
    to_dtype = dtypes.int32
  return [_cast(x, a, to_dtype, weak, i) for i, (x, a) in enumerate(zip(args, avals))]


def promote_dtypes_complex(*args):
  avals = [_aval(x) for x in args]
  to_dtype, weak = dtypes.lattice_result_type(*[(a.dtype, a.weak_type) for a in avals])
  to_dtype = dtypes.canonicalize_dtype(dtypes.to_complex_dtype(dtypes.to_inexact_dtype(to_dtype)))
  return [_cast(x, a, to_dtype, weak, i) for i, (x, a) in enumerate(zip(args, avals))]


def promote_shapes(fun_name, *args):
  """NumPy rank promotion: prepend size-1 dimensions so all non-scalars have equal rank."""
  if len(args) < 2:
    return list(args)
  shapes = [_aval(x).shape for x in args]
  nd = max(len(s) for s in shapes)
  if all(len(s) == nd or len(s) == 0 for s in shapes):
    # lax broadcasts rank-0 and size-1 dims itself and raises its TypeError for
    # incompatible sizes, as JAX leaves equal-rank operands to lax
    return list(args)
  mode = config.jax_numpy_rank_promotion
  if mode != "allow":
    msg = (f"Operands could not be broadcast together for {fun_name} on shapes "
           f"{' '.join(str(s) for s in shapes)} and with the config option "
           f"jax_numpy_rank_promotion='{mode}'. For more information, see "
           "https://docs.jax.dev/en/latest/rank_promotion_warning.html.")
    if mode == "raise":
      raise ValueError(msg)
    import warnings
    warnings.warn(msg)
  _check_broadcastable(fun_name, shapes)
  from pyjax._src.lax import shapes as lax_s
  out = []
  for x, s in zip(args, shapes):
    if len(s) == nd or len(s) == 0:
      out.append(x)
    else:
      out.append(lax_s.broadcast_in_dim(x, (1,) * (nd - len(s)) + tuple(s),
                                        tuple(range(nd - len(s), nd))))
  return out


def _check_broadcastable(fun_name, shapes):
  try:
    np.broadcast_shapes(*shapes)
  except ValueError:
    raise ValueError(f"Incompatible shapes for broadcasting: shapes={[tuple(s) for s in shapes]}") from None


def _scalar_like(aval, y):
  """A Python int/float ``y`` as a weak array of ``aval``'s dtype when JAX's promotion would
  give exactly that dtype (float array with int/float, int array with in-range int), else None."""
  d = aval.dtype
  t = type(y)
  if t is float:
    if d not in _FLOATS:
      return None
    if not -_FMAX[d] < y < _FMAX[d]:  # overflows to inf (or inf/NaN): silently, as XLA
      with np.errstate(all="ignore"):
        return core.host_constant(ArrayImpl(np.array(y, d), ShapedArray((), d, True), None,
                                            False))
  elif t is int:
    bounds = _INT_BOUNDS.get(d)
    if bounds is not None:
      if not bounds[0] <= y <= bounds[1]:
        return None
    elif d not in _FLOATS or not -0x80000000 <= y <= 0x7FFFFFFF:
      return None   # (an int beyond int32 next to a float: constant() checks the x64 range)
  else:
    return None
  key = (d, y)
  b = _WEAK_SCALAR_BUFS.get(key)
  if b is None:
    b = np.array(y, d)
    if y or t is int:   # (0.0 and -0.0 are equal keys: float zeros are not cached)
      b.flags.writeable = False
      if len(_WEAK_SCALAR_BUFS) < 4096:
        _WEAK_SCALAR_BUFS[key] = b
  # a fresh Array each time (autodiff tells values apart by identity); only the
  # read-only NumPy buffer is shared
  if _cfg.h2d_guarded:
    _guard_h2d(_host_aval(y))
  return core.host_constant(ArrayImpl(b, _WEAK_SCALAR_AVALS[d], None, False))


_FLOATS = frozenset(dtypes.float_dtypes)
# the (immutable, shareable) abstract value of a weak 0-d Array per dtype
_WEAK_SCALAR_AVALS = {d: ShapedArray((), d, True)
                      for d in set(dtypes.float_dtypes) | set(dtypes.int_dtypes)}
_WEAK_SCALAR_BUFS = {}   # (dtype, Python scalar) -> read-only 0-d buffer
_FMAX = {d: float(dtypes.finfo(d).max) for d in dtypes.float_dtypes}
_INT_BOUNDS = {d: (int(dtypes.iinfo(d).min), int(dtypes.iinfo(d).max)) for d in dtypes.int_dtypes}


def promote_args(fun_name, *args):
  """check_arraylike + promote_dtypes + promote_shapes, with fast paths for two concrete
  arrays and for an array with a Python scalar."""
  if len(args) == 2:
    x, y = args
    tx, ty = type(x), type(y)
    if tx is ArrayImpl:
      ax = x.aval
      if ty is ArrayImpl:
        ay = y.aval
        if ax.dtype == ay.dtype and ax.weak_type == ay.weak_type and (
            ax.shape == ay.shape or not ay.shape or not ax.shape) and not (
            ax.weak_type and ax.dtype == dtypes.bool_):  # weak bools promote to strong bool
          return args
      elif ty is float or ty is int:
        ys = _scalar_like(ax, y)
        if ys is not None:
          return x, ys
    elif ty is ArrayImpl and (tx is float or tx is int):
      xs = _scalar_like(y.aval, x)
      if xs is not None:
        return xs, y
  check_arraylike(fun_name, *args)
  return promote_shapes(fun_name, *promote_dtypes(*args))


def promote_args_inexact(fun_name, *args):
  check_arraylike(fun_name, *args)
  return promote_shapes(fun_name, *promote_dtypes_inexact(*args))


def promote_args_numeric(fun_name, *args):
  check_arraylike(fun_name, *args)
  return promote_shapes(fun_name, *promote_dtypes_numeric(*args))


def canonicalize_axis(axis, ndim):
  """Normalize a possibly negative axis; JAX's ValueError when out of range."""
  import operator
  try:
    axis = operator.index(axis)
  except TypeError:
    raise TypeError(f"axis must be an integer, got {axis!r}") from None
  if not -ndim <= axis < ndim:
    raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
  return axis + ndim if axis < 0 else axis
